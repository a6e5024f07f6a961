"""Items keep their URL from crawl to crawl: real crawls of one site on one index.

A story is published at ``/news/delta.html``, which names ``/stories/delta.html`` as its
canonical URL. One crawl fetches the news URL first, the next one the canonical URL first
(one request at a time, in the listed order, so nothing depends on which of two concurrent
requests finishes first). While the story does not change, the URL that reached the spider
in the first crawl is the one that reaches it in the next, whatever arrives first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.scrapy_inprocess import HARBOUR, ORCHARD, story
from tests.scrapy_runner import CrawlResult, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

NEWS, STORIES = "/news/delta.html", "/stories/delta.html"


def _crawl(site: SiteServer, tmp_path: Path, name: str, order: list[str]) -> CrawlResult:
    spec: dict[str, Any] = {
        "requests": [{"url": site.url(path)} for path in order],
        "settings": {
            "ADDONS": {"scrapy_simhash.Addon": 0},
            "CONCURRENT_REQUESTS": 1,
            "SIMHASH_WORKERS": 0,
            "SIMHASH_RECRAWL_ENABLED": True,
            # Every crawl on the same index and recrawl store, as a project's .scrapy/ is.
            "SIMHASH_INDEX_URL": f"sqlite:///{tmp_path / 'index.sqlite3'}",
        },
    }
    result = run_crawl(tmp_path / name, spec, name=name)
    assert result.errors == []
    assert "Traceback" not in result.log, result.log[-3000:]
    return result


def _items(result: CrawlResult) -> list[tuple[str, str]]:
    """(URL, key) of each item exported: the copies' items are dropped by the add-on."""
    return [(item["url"], item["simhash"]["key"]) for item in result.items]


def test_the_same_page_reaches_the_spider_under_the_same_url_in_every_crawl(
    http_site: SiteServer, tmp_path: Path
) -> None:
    html = "text/html; charset=utf-8"
    http_site.pages[NEWS] = (html, story(HARBOUR, canonical=STORIES))
    http_site.pages[STORIES] = (html, story(HARBOUR))
    news, stories = http_site.url(NEWS), http_site.url(STORIES)

    first = _crawl(http_site, tmp_path, "round1", [NEWS, STORIES])
    assert _items(first) == [(news, stories)]
    second = _crawl(http_site, tmp_path, "round2", [STORIES, NEWS])
    assert _items(second) == [(news, stories)]  # not the canonical URL fetched first
    assert second.stats["simhash/unchanged"] == 1
    third = _crawl(http_site, tmp_path, "round3", [NEWS, STORIES])
    assert _items(third) == [(news, stories)]

    # The story changes: the URL that brings the change first reaches the spider, and keeps
    # the page from then on.
    http_site.pages[NEWS] = (html, story(ORCHARD, canonical=STORIES))
    http_site.pages[STORIES] = (html, story(ORCHARD))
    changed = _crawl(http_site, tmp_path, "round4", [STORIES, NEWS])
    assert _items(changed) == [(stories, stories)]
    assert changed.stats["simhash/changed"] == 1
    after = _crawl(http_site, tmp_path, "round5", [NEWS, STORIES])
    assert _items(after) == [(stories, stories)]
