"""State an earlier release wrote: one rule on every store (``scrapy_simhash.upgrade``).

Every store refuses it at open, unread and unchanged, with one message (what was found,
which version wrote it, ``scrapy simhash upgrade``); the upgrade carries the recrawl
history over in batches, goes on where it stopped when cut short, and empties the index.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from scrapy_simhash.cli import main
from scrapy_simhash.exceptions import OldStateError
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import PageState, open_async_recrawl_store, open_recrawl_store
from scrapy_simhash.recrawl.backend import rate_bucket
from scrapy_simhash.recrawl.sqlite import url_id
from scrapy_simhash.upgrade import upgrade
from tests.conftest import Clock

HOUR = 3600.0
#: A state as 0.1 stored it.
JSON_STATE = (
    '{"u":"http://x/a","fp":"123abc","v":2,"c":1,"i":3600.0,"d":3620.0,"r":1e-05,'
    '"e":"\\"t\\"","s":200,"h":[[10.0,1]]}'
)


def _states() -> list[tuple[PageState, float]]:
    """Seven URLs with a learned history, and the time each is queued at (two leased)."""
    out = []
    for i in range(7):
        state = PageState(
            f"https://old.test/{i}",
            fingerprint=0x1234 + i,
            first_fetch=100.0,
            last_fetch=100.0 + i * HOUR,
            visits=3 + i,
            changes=i % 3,
            interval_secs=HOUR,
            next_due=1000.0 + 10 * i,
            rate=1e-5 * (i + 1),
            etag=f'"e{i}"',
            status=200,
            history=((HOUR, True), (2 * HOUR, False)),
        )
        out.append((state, 5000.0 + i if i in (2, 5) else state.next_due))
    return out


def _summary(state: PageState | None) -> Any:
    """What must survive the upgrade (of the state as its bytes read back)."""
    assert state is not None
    state = PageState.from_bytes(state.url, state.to_bytes())
    return (
        state.url,
        state.fingerprint,
        state.visits,
        state.changes,
        state.rate,
        state.etag,
        state.next_due,
        len(state.history),
    )


def _check_message(message: str, found: str, version: str, command: str) -> None:
    """The one shape: what was found, which version wrote it, what to do."""
    assert found in message
    assert f"written by scrapy-simhash {version}" in message
    assert "nothing of it was read or changed" in message
    assert "`scrapy simhash upgrade`" in message
    assert command in message
    assert "cannot be carried over" in message


# -- SQLite ------------------------------------------------------------------------------


def _sqlite_0_2_0(path: Path) -> None:
    """A file as 0.2.0 left it: its index tables with a record, and its recrawl rows (each
    URL whole, queue times in seconds) in namespace "old"."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE simhash_namespaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
        "config TEXT NOT NULL);"
        "INSERT INTO simhash_namespaces VALUES (1, 'old', '{\"format\": 1, \"bits\": 64}');"
        "CREATE TABLE simhash_entries (ns INTEGER NOT NULL, key TEXT NOT NULL, fp BLOB NOT "
        "NULL, seen INTEGER NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID;"
        "INSERT INTO simhash_entries VALUES (1, 'https://a.test/', x'0102030405060708', 1);"
        "CREATE TABLE simhash_bands (ns INTEGER NOT NULL, tbl INTEGER NOT NULL, band INTEGER "
        "NOT NULL, key TEXT NOT NULL, PRIMARY KEY (ns, tbl, band, key)) WITHOUT ROWID;"
        "CREATE TABLE simhash_drops (ns INTEGER NOT NULL, url TEXT NOT NULL, kept TEXT NOT "
        "NULL, distance INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (ns, url)) "
        "WITHOUT ROWID;"
        "CREATE TABLE simhash_recrawl_namespaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL "
        "UNIQUE); CREATE TABLE simhash_recrawl_pages (id INTEGER PRIMARY KEY, ns INTEGER NOT "
        "NULL, url TEXT NOT NULL, due REAL NOT NULL, bucket INTEGER, state BLOB NOT NULL); "
        "CREATE INDEX simhash_recrawl_pages_due ON simhash_recrawl_pages (ns, due); "
        "INSERT INTO simhash_recrawl_namespaces VALUES (1, 'old')"
    )
    for state, queue in _states():
        db.execute(
            "INSERT INTO simhash_recrawl_pages VALUES (?, 1, ?, ?, ?, ?)",
            (url_id("old", state.url), state.url, queue, rate_bucket(state.rate), state.to_bytes()),
        )
    db.commit()
    db.close()


def _dump(path: Path) -> list[Any]:
    db = sqlite3.connect(path)
    try:
        tables = sorted(
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
        return [(name, sorted(db.execute(f"SELECT * FROM {name}").fetchall())) for name in tables]
    finally:
        db.close()


def test_every_sqlite_store_refuses_a_0_2_0_file_unread_and_unchanged(tmp_path: Path) -> None:
    """The index and the recrawl store alike (the recrawl store migrated the rows at open,
    the index refused with a message of its own)."""
    path = tmp_path / "index.sqlite3"
    _sqlite_0_2_0(path)
    before = _dump(path)
    url = f"sqlite:///{path}"
    with pytest.raises(OldStateError) as index_refusal:
        open_index(url, namespace="old")
    _check_message(
        str(index_refusal.value),
        "a near-duplicate index in 0.2.0's layout",
        "0.2.0",
        f"scrapy-simhash upgrade --index-url {url}",
    )
    with pytest.raises(OldStateError) as recrawl_refusal:
        open_recrawl_store(url, namespace="old")
    _check_message(
        str(recrawl_refusal.value),
        "a recrawl schedule in 0.2.0's layout",
        "0.2.0",
        f"scrapy-simhash upgrade --index-url {url}",
    )
    assert str(path) in str(recrawl_refusal.value)
    assert "delete the file" in str(recrawl_refusal.value)

    async def open_async() -> None:
        await open_async_recrawl_store(url, namespace="old")

    with pytest.raises(OldStateError):
        asyncio.run(open_async())
    assert _dump(path) == before


def test_json_states_of_0_1_are_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _sqlite_0_1(path)
    with pytest.raises(OldStateError) as refusal:
        open_recrawl_store(f"sqlite:///{path}", namespace="old")
    _check_message(
        str(refusal.value), "a recrawl schedule of JSON states", "0.1", "scrapy-simhash upgrade"
    )
    assert "simhash_recrawl" in [name for name, _ in _dump(path)]


def _sqlite_0_1(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE simhash_recrawl (namespace TEXT NOT NULL, url TEXT NOT NULL, "
        "due REAL NOT NULL, bucket INTEGER, state TEXT NOT NULL, PRIMARY KEY (namespace, url))"
    )
    for i in range(3):
        legacy = (
            f'{{"u":"http://x/{i}","fp":"123abc","ff":10.0,"lf":20.0,"lc":20.0,"v":{i + 2},'
            '"c":1,"i":3600.0,"d":3620.0,"r":1e-05,"e":"\\"t\\"","m":null,"s":200,'
            '"h":[[10.0,1]]}'
        )
        db.execute(
            "INSERT INTO simhash_recrawl VALUES ('old', ?, ?, 1, ?)",
            (f"http://x/{i}", 3620.0 + i, legacy),
        )
    db.commit()
    db.close()


def test_the_upgrade_carries_an_sqlite_schedule_over_in_batches(
    tmp_path: Path, clock: Clock
) -> None:
    """Every state and queue time as written, a batch at a time; the index emptied (every
    namespace of the file), then opened afresh; a second run finds nothing to do."""
    path = tmp_path / "index.sqlite3"
    _sqlite_0_2_0(path)
    url = f"sqlite:///{path}"
    seen: list[int] = []
    done = upgrade(url, "ignored", batch=3, progress=seen.append)
    assert seen == [3, 6, 7]
    assert done.recrawl_states == 7
    assert done.indexes_emptied
    with open_recrawl_store(url, namespace="old", clock=clock) as store:
        for state, _ in _states():
            assert _summary(store.get(state.url)) == _summary(state)
        assert [(d.url, d.due) for d in store.due(within=1e6)] == sorted(
            ((s.url, q) for s, q in _states()), key=lambda pair: pair[1]
        )
    with open_index(url, namespace="old") as index:
        assert index.count() == 0
    tables = [name for name, _ in _dump(path)]
    assert "simhash_entries" not in tables
    assert "simhash_recrawl_pages_020" not in tables
    assert upgrade(url, "old").recrawl_states == 0


def test_an_sqlite_upgrade_cut_short_goes_on_where_it_stopped(tmp_path: Path, clock: Clock) -> None:
    """Stopped after a batch, the file is refused as an unfinished upgrade; run again, the
    upgrade carries the rest, each URL once. JSON states of 0.1 are carried the same way."""
    path = tmp_path / "index.sqlite3"
    _sqlite_0_2_0(path)
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE simhash_recrawl (namespace TEXT NOT NULL, url TEXT NOT NULL, "
        "due REAL NOT NULL, bucket INTEGER, state TEXT NOT NULL, PRIMARY KEY (namespace, url))"
    )
    db.execute(
        "INSERT INTO simhash_recrawl VALUES ('json', 'http://x/a', 3620.0, 1, ?)",
        (JSON_STATE,),
    )
    db.commit()
    db.close()
    url = f"sqlite:///{path}"

    def stop(moved: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        upgrade(url, "old", batch=2, progress=stop)
    with pytest.raises(OldStateError, match=r"0\.2\.0"):
        open_recrawl_store(url, namespace="old")
    seen: list[int] = []
    assert upgrade(url, "old", batch=2, progress=seen.append).recrawl_states == 6
    assert seen == [2, 4, 5, 6]
    with open_recrawl_store(url, namespace="old", clock=clock) as store:
        assert store.count() == 7
        assert _summary(store.get("https://old.test/3")) == _summary(_states()[3][0])
    with open_recrawl_store(url, namespace="json", clock=clock) as store:
        state = store.get("http://x/a")
        assert state is not None
        assert (state.visits, state.etag) == (2, '"t"')


def test_the_upgrade_command_names_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "index.sqlite3"
    _sqlite_0_1(path)
    assert main(["upgrade", "--index-url", f"sqlite:///{path}", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 recrawl states carried over" in out
    assert "3 recrawl states carried over" in out
    assert "upgraded" in out
    assert main(["upgrade", "--index-url", f"sqlite:///{path}"]) == 0
    assert "nothing to upgrade" in capsys.readouterr().out


# -- Redis -------------------------------------------------------------------------------

_OLD_RECORD = json.dumps({"format": 1, "bits": 64, "layout": "4x16", "redis_format": 2})


def _redis_0_2_0(client: redis.Redis, namespace: str) -> None:
    """A namespace as 0.2.0 left it: its index record (Redis layout 2) and its schedule, a
    hash and a sorted set keyed by URL and a histogram of rate buckets."""
    client.hset(f"simhash:{{{namespace}}}:m", "config", _OLD_RECORD)
    prefix = f"simhash:recrawl:{{{namespace}}}:"
    for state, queue in _states():
        client.hset(prefix + "state", state.url, state.to_bytes())
        client.zadd(prefix + "due", {state.url: queue})
        client.hincrby(prefix + "hist", str(rate_bucket(state.rate)), 1)


def _keys(client: redis.Redis, namespace: str) -> dict[bytes, Any]:
    out: dict[bytes, Any] = {}
    for key in client.scan_iter(match=f"*{{{namespace}}}*"):
        out[key] = client.dump(key)
    return out


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    opened = redis.Redis.from_url(redis_url)
    yield opened
    opened.close()


def test_every_redis_store_refuses_a_0_2_0_namespace_unread_and_unchanged(
    redis_url: str, client: redis.Redis
) -> None:
    """The recrawl store (blocking and asyncio) and the index, with one message shape (the
    index said "index format 1" and named only a reset)."""
    _redis_0_2_0(client, "old")
    before = _keys(client, "old")
    with pytest.raises(OldStateError) as index_refusal:
        open_index(redis_url, namespace="old")
    _check_message(
        str(index_refusal.value),
        "a near-duplicate index in Redis layout 2",
        "0.2.0",
        f"scrapy-simhash upgrade --index-url {redis_url} --namespace old",
    )
    store = open_recrawl_store(redis_url, namespace="old")
    with pytest.raises(OldStateError) as recrawl_refusal:
        store.count()
    store.close()
    _check_message(
        str(recrawl_refusal.value),
        "a recrawl schedule in 0.2.0's layout",
        "0.2.0",
        f"scrapy-simhash upgrade --index-url {redis_url} --namespace old",
    )
    assert "scrapy simhash reset --namespace old" in str(recrawl_refusal.value)

    async def use_async() -> None:
        async_store = await open_async_recrawl_store(redis_url, namespace="old")
        try:
            await async_store.count()
        finally:
            await async_store.close()

    with pytest.raises(OldStateError):
        asyncio.run(use_async())
    assert _keys(client, "old") == before


def test_the_upgrade_carries_a_redis_schedule_over_in_batches(
    redis_url: str, client: redis.Redis, clock: Clock
) -> None:
    """States, queue times (leases included) and the rate histogram as written, a batch
    per script call; the index emptied and recorded anew; 0.2.0's keys gone."""
    _redis_0_2_0(client, "old")
    seen: list[int] = []
    done = upgrade(redis_url, "old", batch=3, progress=seen.append)
    assert done.recrawl_states == 7
    assert done.indexes_emptied == ("old",)
    assert seen == [3, 6, 7]
    with open_recrawl_store(redis_url, namespace="old", clock=clock) as store:
        assert store.count() == 7
        for state, _ in _states():
            assert _summary(store.get(state.url)) == _summary(state)
        assert [(d.url, d.due) for d in store.due(within=1e6)] == sorted(
            ((s.url, q) for s, q in _states()), key=lambda pair: pair[1]
        )
        expected: dict[int, int] = {}
        for state, _ in _states():
            bucket = rate_bucket(state.rate)
            assert bucket is not None
            expected[bucket] = expected.get(bucket, 0) + 1
        assert store.rate_histogram() == expected
    prefix = "simhash:recrawl:{old}:"
    for name in ("state", "state020", "due020"):
        assert not client.exists(prefix + name)
    with open_index(redis_url, namespace="old") as index:
        assert index.count() == 0
    assert upgrade(redis_url, "old") == type(done)(0, ())


def test_a_redis_upgrade_cut_short_goes_on_where_it_stopped(
    redis_url: str, client: redis.Redis, clock: Clock
) -> None:
    """Stopped after a batch, the namespace is refused (by every process); run again, the
    rest is carried over, each URL once."""
    _redis_0_2_0(client, "cut")

    def stop(moved: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        upgrade(redis_url, "cut", batch=2, progress=stop)
    store = open_recrawl_store(redis_url, namespace="cut")
    with pytest.raises(OldStateError, match=r"0\.2\.0"):
        store.count()
    store.close()
    done = upgrade(redis_url, "cut", batch=2)
    assert done.recrawl_states == 5
    with open_recrawl_store(redis_url, namespace="cut", clock=clock) as store:
        assert store.count() == 7
        assert sorted(d.url for d in store.due(within=1e6)) == sorted(s.url for s, _ in _states())
