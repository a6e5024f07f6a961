"""The front door's refusals and warnings as a crawl meets them: a setting that cannot work
stops the crawl at start with the reason, and a risky queue setup is said at start."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.scrapy_runner import run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]


@pytest.mark.crawl
def test_a_crawl_refuses_a_redis_url_with_an_unknown_parameter(
    http_site: SiteServer, tmp_path: Path
) -> None:
    settings = {
        "ADDONS": {"scrapy_simhash.Addon": 0},
        "SIMHASH_INDEX_URL": "redis://127.0.0.1:1/0?foo",
    }
    result = run_crawl(
        tmp_path, {"requests": [{"url": http_site.url("harbour.html")}], "settings": settings}
    )
    said = " ".join(result.errors) + result.log
    assert "unknown query parameter(s) 'foo'" in said
    assert "SIMHASH_INDEX_URL" in said
    assert result.items == []


@pytest.mark.crawl
@pytest.mark.redis
def test_a_shared_queue_that_does_not_persist_is_said_at_start(
    http_site: SiteServer, redis_url: str, tmp_path: Path
) -> None:
    """scrapy-redis's scheduler without SCHEDULER_PERSIST: several processes would each
    fetch every page (the first to finish clears the queue): a WARNING names the setting."""
    shared = {
        "ADDONS": {"scrapy_simhash.Addon": 0},
        "SIMHASH_WORKERS": 0,
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "REDIS_URL": redis_url,
    }
    spec = {"requests": [{"url": http_site.url("harbour.html")}]}
    for persist, warned in ((False, True), (True, False)):
        result = run_crawl(
            tmp_path,
            {**spec, "settings": {**shared, "SCHEDULER_PERSIST": persist}},
            name=f"persist-{persist}",
        )
        assert result.errors == []
        assert (
            "WARNING: SimHash: SCHEDULER_PERSIST is False with scrapy-redis's scheduler"
            in result.log
        ) is warned, result.log[-3000:]
        assert len(result.items) == 1


@pytest.mark.crawl
def test_a_crawl_with_a_radius_beyond_the_stated_recall_does_not_start(
    http_site: SiteServer, tmp_path: Path
) -> None:
    settings = {"ADDONS": {"scrapy_simhash.Addon": 0}, "SIMHASH_MAX_DISTANCE": 20}
    result = run_crawl(
        tmp_path, {"requests": [{"url": http_site.url("harbour.html")}], "settings": settings}
    )
    said = " ".join(result.errors) + result.log
    assert "Set SIMHASH_MAX_DISTANCE to 13 or less" in said
    assert result.items == []
