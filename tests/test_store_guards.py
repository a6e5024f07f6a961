"""Every store a crawl writes to sits behind the same guard: one outage, one account.

The index, the hosts' template memory and the URL rules of a crawl live in one Redis. When
it stops, each store's calls fail through its guard (counted in its own stat), and the
storage's one outage log says once what the crawl does without each; when it is back, it
says so once for them all.
"""

from __future__ import annotations

import logging
import time

import pytest

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
        SIMHASH_INDEX_URL=own_redis.url, SIMHASH_DUST_ENABLED=True,
        SIMHASH_INDEX_RETRY_AFTER_SECS=0.2, SIMHASH_INDEX_TIMEOUT_SECS=3.0,
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
            "SimHash template store", "SimHash index", "SimHash URL rule store",
        ]
        assert "pages are judged without their host's template until it answers" in lines[0]
        assert "SIMHASH_ON_INDEX_ERROR decides what happens to pages until it answers" in lines[1]
        assert "fetched as without SIMHASH_DUST_ENABLED until it answers" in lines[2]

        own_redis.start()
        time.sleep(0.3)  # the retry pause
        crawl.fetch("http://a.example/3", random_story(3))
        crawl.loop.run_until_complete(dust.refresh(force=True))
        assert len(_lines(caplog, BACK)) == 1
