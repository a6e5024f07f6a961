"""Real crawls that meet failures: a setup that cannot work refuses to start with the reason,
an index that comes back built differently stops the crawl loudly, and a bad key or an
unreachable recrawl store costs one page's check, counted and logged, never the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.index import open_index
from tests.redis_servers import RedisServer, free_port
from tests.scrapy_runner import ONE_AT_A_TIME, CrawlResult, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

BASE = ONE_AT_A_TIME
PAGES = [
    "harbour.html",
    "orchard.html",
    "telescope.html",
    "library.html",
    "switch-v1.html",
    "school.html",
]


def crawl(
    site: SiteServer,
    tmp: Path,
    pages: list[str],
    name: str = "crawl",
    meta: dict[str, dict[str, Any]] | None = None,
    **settings: Any,
) -> CrawlResult:
    requests = [{"url": site.url(p), "meta": (meta or {}).get(p, {})} for p in pages]
    return run_crawl(tmp, {"requests": requests, "settings": {**BASE, **settings}}, name=name)


def refused_at_start(result: CrawlResult, site: SiteServer, cause: str) -> None:
    assert len(result.errors) == 1, result.errors
    assert result.errors[0].startswith(cause), result.errors
    assert result.items == []
    assert sum(site.hits.values()) == 0


@pytest.mark.redis
def test_a_wrong_password_refuses_to_start_and_misspelt_names_are_named(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(own_redis.url)
    client.config_set("requirepass", "the-right-one")
    client.close()
    url = f"redis://:not-the-right-one@127.0.0.1:{own_redis.port}/0"
    result = crawl(http_site, tmp_path, PAGES[:2], SIMHASH_INDEX_URL=url, SIMHASH_MAX_DISTANSE=5)
    refused_at_start(result, http_site, "ConfigurationError")
    assert "authentication failed" in result.errors[0]
    assert "SIMHASH_INDEX_URL" in result.errors[0]
    assert "not-the-right-one" not in result.log + result.errors[0]
    assert (
        "unknown setting SIMHASH_MAX_DISTANSE is ignored; did you mean "
        "SIMHASH_MAX_DISTANCE?" in result.log
    )


def test_without_the_asyncio_reactor_the_crawl_refuses_to_start(
    http_site: SiteServer, tmp_path: Path
) -> None:
    result = crawl(
        http_site,
        tmp_path,
        PAGES[:2],
        TWISTED_REACTOR="twisted.internet.selectreactor.SelectReactor",
    )
    refused_at_start(result, http_site, "ConfigurationError")
    assert "asyncio reactor" in result.errors[0]


def _mismatch_crawl(
    site: SiteServer, server: RedisServer, tmp: Path, **settings: Any
) -> CrawlResult:
    """Redis is down at start; it comes back holding a 128-bit index of this namespace."""
    server.stop()
    scheme = Fingerprinter(FingerprintConfig(tokenizer="rjieba", bits=128)).scheme

    def come_back() -> None:
        server.start()
        open_index(server.url, namespace="pages", bits=128, scheme=scheme).close()

    site.hooks["/telescope.html"] = come_back
    return crawl(
        site,
        tmp,
        PAGES,
        SIMHASH_INDEX_URL=server.url,
        SIMHASH_INDEX_START_UNREACHABLE=True,
        SIMHASH_INDEX_RETRY_AFTER_SECS=0,
        SIMHASH_RECRAWL_ENABLED=False,
        **settings,
    )


@pytest.mark.redis
def test_an_index_that_comes_back_built_differently_closes_the_spider(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path
) -> None:
    result = _mismatch_crawl(http_site, own_redis, tmp_path)
    assert result.errors == []
    assert result.stats["finish_reason"].startswith("simhash_index_mismatch: ")
    assert "bits 128 (now 64)" in result.stats["finish_reason"]
    assert "Error downloading" not in result.log
    # Every page that was fetched reached the spider; the crawl stopped instead of losing
    # the rest silently.
    fetched = {http_site.url(p) for p in PAGES if http_site.hits[f"/{p}"]}
    assert http_site.url("telescope.html") in fetched
    assert result.urls() == fetched
    assert result.stats["simhash/index_unusable"] >= 1


@pytest.mark.redis
def test_an_index_mismatch_may_let_pages_through_loudly(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path
) -> None:
    result = _mismatch_crawl(http_site, own_redis, tmp_path, SIMHASH_ON_INDEX_MISMATCH="pass")
    assert result.errors == []
    assert result.stats["finish_reason"] == "finished"
    assert result.urls() == {http_site.url(p) for p in PAGES}
    unchecked = result.stats["simhash/index_unusable"]
    assert unchecked == len(PAGES) - 2  # from telescope.html on
    assert result.log.count("passes UNCHECKED (SIMHASH_ON_INDEX_MISMATCH=pass)") == 1
    assert f"{unchecked} page(s) passed unchecked" in result.log


@pytest.mark.redis
def test_a_mistyped_redis_port_refuses_to_start(http_site: SiteServer, tmp_path: Path) -> None:
    url = f"redis://:pw-secret-3@127.0.0.1:{free_port()}/0"
    result = crawl(http_site, tmp_path, PAGES[:2], SIMHASH_INDEX_URL=url)
    refused_at_start(result, http_site, "ConfigurationError")
    assert "is not reachable at start-up" in result.errors[0]
    assert "SIMHASH_INDEX_START_UNREACHABLE" in result.errors[0]
    assert "pw-secret-3" not in result.log + result.errors[0]


@pytest.mark.parametrize("how", ["not a database", "truncated"])
def test_a_damaged_sqlite_index_refuses_to_start(
    http_site: SiteServer, tmp_path: Path, how: str
) -> None:
    path = tmp_path / "damaged.sqlite3"
    if how == "not a database":
        path.write_bytes(b"\x00garbage" * 1000)
    else:
        with open_index(f"sqlite:///{path}", namespace="pages") as index:
            for i in range(3000):
                index.observe(f"https://a.example/{i}", (i * 0x9E3779B97F4A7C15) & (2**64 - 1))
        with path.open("r+b") as file:
            file.truncate(path.stat().st_size // 2)
    result = crawl(
        http_site,
        tmp_path,
        PAGES[:2],
        SIMHASH_INDEX_URL=f"sqlite:///{path}",
        SIMHASH_INDEX_START_UNREACHABLE=True,
    )
    refused_at_start(result, http_site, "ConfigurationError")
    assert f"SimHash index file {path} is damaged" in result.errors[0]
    assert "SIMHASH_INDEX_URL" in result.errors[0]


@pytest.mark.redis
def test_an_outage_from_the_start_is_one_line_and_loses_recrawl_observations_counted(
    http_site: SiteServer, tmp_path: Path
) -> None:
    dead = RedisServer(tmp_path / "never-started").url
    result = crawl(
        http_site,
        tmp_path,
        PAGES[:3],
        SIMHASH_INDEX_URL=dead,
        SIMHASH_INDEX_START_UNREACHABLE=True,
        SIMHASH_INDEX_RETRY_AFTER_SECS=60,
    )
    assert result.errors == []
    assert len(result.items) == 3
    assert result.stats["simhash/recrawl_error"] == 3
    assert result.stats["simhash/recrawl_lost"] == 3
    assert "3 recrawl observation(s) lost while the recrawl store was unavailable" in result.log
    # The index, the recrawl store and the template memory share one Redis: one line for
    # the outage per thing the crawl does without (the template's aid, the index's pages),
    # no traceback.
    assert "starting anyway (SIMHASH_INDEX_START_UNREACHABLE)" in result.log
    lines = [
        line for line in result.log.splitlines() if "[scrapy_simhash.glue.guard] ERROR: " in line
    ]
    assert [line.split("ERROR: ")[1].split(" at ")[0] for line in lines] == [
        "SimHash template store",
        "SimHash index",
    ]
    assert "Traceback" not in result.log
    assert "failed: recrawl store" not in result.log


def test_a_bad_key_fails_its_own_page_only(http_site: SiteServer, tmp_path: Path) -> None:
    pages = ["library.html", "harbour.html", "harbour-copy.html", "orchard.html"]
    meta = {"library.html": {"simhash_key": "https://bad.example/\ud800"}}
    result = crawl(http_site, tmp_path, pages, meta=meta)
    assert result.errors == []
    by_url = {item["url"]: item["simhash"] for item in result.items}
    assert by_url[http_site.url("library.html")]["reason"].startswith("invalid key: ")
    # Dedup goes on for every other page: the copy is still dropped.
    assert set(by_url) == {http_site.url(p) for p in pages} - {http_site.url("harbour-copy.html")}
    stats = result.simhash_stats()
    assert stats["simhash/invalid_key"] == 1
    assert stats["simhash/dropped"] == 1
    assert "simhash/index_error" not in stats


@pytest.mark.redis
def test_a_recrawl_schedule_of_0_2_0_refuses_the_crawl_at_start_with_the_way_out(
    http_site: SiteServer, redis_url: str, tmp_path: Path
) -> None:
    """A schedule this version cannot read stops the crawl before any page, instead of
    losing every page's update; the old keys are neither read nor changed."""
    client = redis.Redis.from_url(redis_url)
    client.hset("simhash:recrawl:{pages}:state", "https://old.test/", b"\x01\x00\x00")
    result = crawl(http_site, tmp_path, PAGES[:3], SIMHASH_INDEX_URL=redis_url)
    refused_at_start(result, http_site, "ConfigurationError")
    assert "recrawl store at redis://" in result.errors[0]
    assert "0.2.0's layout" in result.errors[0]
    assert "written by scrapy-simhash 0.2.0" in result.errors[0]
    assert "`scrapy simhash upgrade`" in result.errors[0]
    assert "scrapy simhash reset --namespace pages" in result.errors[0]
    assert client.hgetall("simhash:recrawl:{pages}:state") == {
        b"https://old.test/": b"\x01\x00\x00"
    }
    assert not client.exists("simhash:recrawl:{pages}:m")
    # With the schedule off, the same crawl runs: only the schedule was refused.
    result = crawl(
        http_site, tmp_path, PAGES[:3], SIMHASH_INDEX_URL=redis_url, SIMHASH_RECRAWL_ENABLED=False
    )
    assert result.errors == []
    assert len(result.items) == 3
    client.close()


@pytest.mark.redis
def test_a_process_killed_while_its_callback_holds_a_page_loses_it_for_no_process(
    http_site: SiteServer, redis_url: str, tmp_path: Path
) -> None:
    """Process A files the article and is killed (SIGKILL) in its callback; process B's
    copy waits out A's lease (1 s) and takes the page over: it reaches B's callback, and
    once there, the article's other URL is its copy again."""
    import os
    import signal

    from tests.scrapy_runner import start_crawl

    settings = {**BASE, "SIMHASH_INDEX_URL": redis_url, "SIMHASH_FILING_LEASE_SECS": 1}
    fifo = tmp_path / "held"
    os.mkfifo(fifo)
    article, copy = http_site.url("harbour.html"), http_site.url("harbour-copy.html")
    spec = {
        "requests": [{"url": article}],
        "settings": settings,
        "hold": {"url": article, "fifo": str(fifo)},
    }
    a, _, _ = start_crawl(tmp_path, spec, name="a")
    with fifo.open() as held:  # blocks until A's callback holds the article
        assert held.read() == article
    a.send_signal(signal.SIGKILL)
    a.wait()
    b = crawl(http_site, tmp_path, ["harbour-copy.html"], name="b", **settings)
    assert [item["url"] for item in b.items] == [copy]
    assert b.items[0]["simhash"]["key"] == article  # filed under the URL A filed it
    assert b.stats["simhash/filing/taken_over"] == 1
    assert "simhash/dropped" not in b.stats
    c = crawl(http_site, tmp_path, ["harbour.html", "harbour-copy.html"], name="c", **settings)
    assert c.items == []  # delivered once: by B
    assert c.stats["simhash/dropped"] == 2
    assert not redis.Redis.from_url(redis_url).keys("simhash:*:f")  # nothing in flight
