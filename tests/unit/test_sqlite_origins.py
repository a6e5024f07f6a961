"""URL text in the SQLite file as an origin id and the rest: every URL reads back exactly,
whichever origin holds which row, and a transaction undone leaves no origin named that
was never written."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_simhash._sqlite import SharedConnection
from scrapy_simhash._sqlite_origins import NONE, SCHEMA, UrlOrigins
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store


def _origins(path: Path) -> tuple[SharedConnection, UrlOrigins]:
    connection = SharedConnection(str(path), timeout_secs=30)
    with connection.write() as db:
        db.execute(SCHEMA)
    return connection, UrlOrigins(connection)


def _stored(path: Path) -> dict[int, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT id, origin FROM simhash_url_origins"))


_TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
_URLS = st.one_of(
    _TEXT,
    st.builds(
        lambda scheme, host, rest: f"{scheme}://{host}{rest}",
        st.sampled_from(["http", "https", "ftp", "HTTPS"]),
        st.sampled_from(["a.test", "b.test:8080", "user@c.test", "", "例子.测试"]),
        st.sampled_from(["", "/", "/a/b?c=d", "?q", "#f", "/print/a.html"]) | _TEXT,
    ),
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(urls=st.lists(_URLS, max_size=10))
def test_every_url_reads_back_from_its_origin_and_rest(tmp_path: Path, urls: list[str]) -> None:
    connection, origins = _origins(tmp_path / "origins.sqlite3")
    try:
        with connection.write():
            split = [origins.add(url) for url in urls]
        # Another process: nothing cached, everything read from the file.
        other, fresh = _origins(tmp_path / "origins.sqlite3")
        try:
            for url, (origin, rest) in zip(urls, split, strict=True):
                assert url.endswith(rest)
                assert origins.join(origin, rest) == url
                assert fresh.join(origin, rest) == url
                assert fresh.find(url) == (origin, rest)
        finally:
            other.close()
    finally:
        connection.close()
        (tmp_path / "origins.sqlite3").unlink()


def test_text_that_is_not_an_absolute_url_is_kept_whole(tmp_path: Path) -> None:
    connection, origins = _origins(tmp_path / "o.sqlite3")
    with connection.write():
        assert origins.add("/relative/path") == (NONE, "/relative/path")
        assert origins.add("key:42") == (NONE, "key:42")
    assert _stored(tmp_path / "o.sqlite3") == {}
    connection.close()


def test_an_origin_whose_row_is_taken_by_another_is_probed_past_it(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite3"
    connection, origins = _origins(path)
    with connection.write():
        first, _ = origins.add("https://a.test/1")
    # Another origin already holds the row this one hashes to (and the next): the file
    # of a crawl that met a hash collision.
    with connection.write() as db:
        db.execute("DELETE FROM simhash_url_origins")
        db.execute("INSERT INTO simhash_url_origins VALUES (?, 'https://x.test')", (first,))
        db.execute("INSERT INTO simhash_url_origins VALUES (?, 'https://y.test')", (first + 1,))
    connection.close()
    connection, origins = _origins(path)
    assert origins.find("https://a.test/1") is None
    with connection.write():
        assert origins.add("https://a.test/1") == (first + 2, "/1")
    assert origins.join(first, "/p") == "https://x.test/p"
    assert origins.join(first + 2, "/p") == "https://a.test/p"
    assert _stored(path)[first + 2] == "https://a.test"
    connection.close()


def test_an_origin_added_in_an_undone_transaction_is_written_again(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite3"
    connection, origins = _origins(path)

    def fail_after_adding() -> None:
        with connection.write():
            origins.add("https://a.test/1")
            raise RuntimeError("the row naming it failed")

    with pytest.raises(RuntimeError):
        fail_after_adding()
    assert _stored(path) == {}
    with connection.write():
        origin, _ = origins.add("https://a.test/2")
    assert _stored(path) == {origin: "https://a.test"}
    connection.close()


def test_a_row_naming_an_origin_the_file_lacks_is_an_error(tmp_path: Path) -> None:
    connection, origins = _origins(tmp_path / "o.sqlite3")
    with pytest.raises(sqlite3.DatabaseError, match="no URL origin 7"):
        origins.join(7, "/a")
    connection.close()


def test_the_index_and_the_recrawl_store_keep_one_origin_row_per_site(tmp_path: Path) -> None:
    """Both stores of one file share the origins: a site of many pages costs one row."""
    path = tmp_path / "crawl.sqlite3"
    urls = [f"https://news.test/{n}" for n in range(50)] + ["https://other.test/"]
    with open_index(f"sqlite:///{path}") as index:
        for n, url in enumerate(urls):
            assert index.observe(url, random.Random(n).getrandbits(64)).stored
        store = open_recrawl_store(f"sqlite:///{path}", clock=lambda: 1000.0)
        for n, url in enumerate(urls):
            store.add([url], due=float(n))
        assert sorted(index.keys()) == sorted(urls)
        assert [due.url for due in store.due(limit=100)] == urls
        assert store.get(urls[7]) is not None
        store.close()
    assert sorted(_stored(path).values()) == ["https://news.test", "https://other.test"]
