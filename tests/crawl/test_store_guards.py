"""Every store a crawl writes to sits behind the same guard: one outage, one account.

The index, the hosts' template memory and the URL rules of a crawl live in one Redis. When
it stops, each store's calls fail through its guard (counted in its own stat), and the
storage's one outage log says once what the crawl does without each; when it is back, it
says so once for them all.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest

from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.glue.wiring import storage_options
from scrapy_simhash.recrawl import RecrawlConfig, open_recrawl_store
from scrapy_simhash.settings import GuardConfig
from tests.redis_servers import RedisServer
from tests.scrapy_inprocess import harness, random_story

UNAVAILABLE = "is unavailable:"
BACK = "is reachable again"


def _lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.redis
def test_a_redis_outage_is_one_outage_for_index_templates_and_url_rules(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scrapy_simhash")
    with harness(
        SIMHASH_INDEX_URL=own_redis.url,
        SIMHASH_DUST_ENABLED=True,
        SIMHASH_INDEX_RETRY_AFTER_SECS=0.2,
        SIMHASH_INDEX_TIMEOUT_SECS=3.0,
    ) as crawl:
        dust = crawl.middleware.dust
        assert dust is not None
        crawl.fetch("http://a.example/1", random_story(1))
        crawl.loop.run_until_complete(dust.refresh(force=True))
        assert _lines(caplog, UNAVAILABLE) == []

        own_redis.stop()
        crawl.fetch("http://a.example/2", random_story(2))
        crawl.loop.run_until_complete(dust.refresh(force=True))
        assert crawl.stat("template/error")
        assert crawl.stat("index_error")
        assert crawl.stat("dust/store_error")
        crawl.fetch("http://a.example/4", random_story(4))  # fails fast, says nothing new
        lines = _lines(caplog, UNAVAILABLE)
        assert [line.split(" at ")[0] for line in lines] == [
            "SimHash template store",
            "SimHash index",
            "SimHash URL rule store",
        ]
        assert "pages are judged without their host's template until it answers" in lines[0]
        assert "SIMHASH_ON_INDEX_ERROR decides what happens to pages until it answers" in lines[1]
        assert "fetched as without SIMHASH_DUST_ENABLED until it answers" in lines[2]

        own_redis.start()
        time.sleep(0.3)  # the retry pause
        crawl.fetch("http://a.example/3", random_story(3))
        crawl.loop.run_until_complete(dust.refresh(force=True))
        assert len(_lines(caplog, BACK)) == 1


def test_every_store_of_a_crawl_opens_sqlite_with_the_index_busy_timeout() -> None:
    """One connection policy per storage: the index, the schedule, the template memory and
    the URL rules give up waiting for another process's write lock just before a guarded
    call's timeout (the crawl's own ``timeout`` option wins); other storages are left be."""
    guard = GuardConfig.from_settings({"SIMHASH_INDEX_TIMEOUT_SECS": 2.0})
    assert storage_options("sqlite:///crawl.sqlite3", None, guard) == {"timeout": 1.8}
    assert storage_options("sqlite:///crawl.sqlite3", {"timeout": 5}, guard) == {"timeout": 5}
    assert storage_options("redis://127.0.0.1:6379/0", {"ssl": False}, guard) == {"ssl": False}


def test_the_sqlite_recrawl_store_waits_for_the_write_lock_as_its_options_say(
    tmp_path: Path,
) -> None:
    """It waited a fixed 30 s whatever the index's calls were bounded by."""
    url = f"sqlite:///{tmp_path / 'crawl.sqlite3'}"
    open_recrawl_store(url, namespace="locked", config=RecrawlConfig()).close()
    holder = sqlite3.connect(tmp_path / "crawl.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing
    started = time.monotonic()
    with pytest.raises(IndexBackendError, match="database is locked"):
        open_recrawl_store(
            url, namespace="locked", config=RecrawlConfig(), options={"timeout": 0.3}
        )
    assert time.monotonic() - started < 5
    holder.rollback()
    holder.close()
