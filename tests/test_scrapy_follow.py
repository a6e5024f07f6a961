"""Links of dropped copies: real crawls where a copy arrives first and only the original
links onward, with and without ``SIMHASH_FOLLOW_DUPLICATE_LINKS``.

The copy is the only start URL and links to the original, so the copy is always fetched
first, whatever the scheduler does: nothing here depends on which request finishes first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.scrapy_inprocess import HARBOUR, ORCHARD, story
from tests.scrapy_runner import run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl


def _site(site: SiteServer) -> None:
    html = "text/html; charset=utf-8"
    # A mirror without a canonical link, linking to the original it copies.
    site.pages["/mirror/harbour.html"] = (html, story(HARBOUR, links=["/harbour.html"]))
    # Only the original links onward.
    site.pages["/harbour.html"] = (html, story(HARBOUR, links=["/orchard.html"]))
    site.pages["/orchard.html"] = (html, story(ORCHARD))


def _crawl(site: SiteServer, tmp_path: Path, name: str, **settings: Any) -> Any:
    spec = {
        "requests": [{"url": site.url("/mirror/harbour.html")}],
        "settings": {
            "ADDONS": {"scrapy_simhash.Addon": 0},
            "SIMHASH_WORKERS": 0,
            **settings,
        },
        "follow": True,
    }
    result = run_crawl(tmp_path / name, spec, name=name)  # each crawl its own index
    assert result.errors == []
    assert "Traceback" not in result.log, result.log[-3000:]
    return result


def test_pages_discovered_with_and_without_following_links_of_copies(
    http_site: SiteServer, tmp_path: Path
) -> None:
    _site(http_site)
    mirror, original, onward = (
        http_site.url(p) for p in ("/mirror/harbour.html", "/harbour.html", "/orchard.html")
    )

    default = _crawl(http_site, tmp_path, "default")
    assert default.stats["downloader/response_count"] == 2  # the orchard story is never found
    assert [i["url"] for i in default.items if "errback" not in i] == [mirror]
    # The errback tells the drop from a failure: what it copies, and how closely.
    [dropped] = [i for i in default.items if "errback" in i]
    assert dropped == {
        "url": original, "errback": "NearDuplicate", "kept_url": mirror, "distance": 0,
    }

    http_site.hits.clear()
    follow = _crawl(http_site, tmp_path, "follow", SIMHASH_FOLLOW_DUPLICATE_LINKS=True)
    assert follow.stats["downloader/response_count"] == 3
    # One item per cluster still: the original's item is dropped, its link is followed.
    assert sorted(i["url"] for i in follow.items) == sorted([mirror, onward])
    assert follow.stats["simhash/dropped"] == 1
    assert follow.stats["simhash/duplicate_items_dropped"] == 1
    assert http_site.hits["/orchard.html"] == 1
    # Only a crawl that follows links of copies wraps the spider's output, and neither
    # says anything about the middleware that stays out.
    assert "SimhashSpiderMiddleware" not in _enabled_spider_middlewares(default.log)
    assert "SimhashSpiderMiddleware" in _enabled_spider_middlewares(follow.log)
    assert "Disabled" not in default.log


def _enabled_spider_middlewares(log: str) -> str:
    start = log.index("Enabled spider middlewares:")
    return log[start : log.index("]", start)]
