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

    off = _crawl(
        http_site,
        tmp_path,
        "off",
        SIMHASH_FOLLOW_DUPLICATE_LINKS=False,
        SIMHASH_FILING_LEASE_SECS=0,
    )
    assert off.stats["downloader/response_count"] == 2  # the orchard story is never found
    assert [i["url"] for i in off.items if "errback" not in i] == [mirror]
    # The errback tells the drop from a failure: what it copies, and how closely.
    [dropped] = [i for i in off.items if "errback" in i]
    assert dropped == {
        "url": original,
        "errback": "NearDuplicate",
        "kept_url": mirror,
        "distance": 0,
    }

    http_site.hits.clear()
    follow = _crawl(http_site, tmp_path, "follow")  # the default
    assert follow.stats["downloader/response_count"] == 3
    # One item per cluster still: the original's item is dropped, its link is followed.
    assert sorted(i["url"] for i in follow.items) == sorted([mirror, onward])
    assert follow.stats["simhash/dropped"] == 1
    assert follow.stats["simhash/duplicate_items_dropped"] == 1
    assert http_site.hits["/orchard.html"] == 1
    # Only a crawl that follows links of copies (or holds pages in flight, which "off"
    # turns off too) wraps the spider's output, and neither
    # says anything about the middleware that stays out.
    assert "SimhashSpiderMiddleware" not in _enabled_spider_middlewares(off.log)
    assert "SimhashSpiderMiddleware" in _enabled_spider_middlewares(follow.log)
    assert "Disabled" not in off.log


def _listing_site(site: SiteServer, pages: int = 5, per_page: int = 10) -> list[str]:
    """A blog whose paginated listing holds only generic links: every listing page reads
    alike, and each alone links to its articles."""
    import random

    html = "text/html; charset=utf-8"
    articles = []
    for page in range(1, pages + 1):
        links = []
        for n in range(per_page):
            path = f"/post/{page}-{n}.html"
            articles.append(path)
            rng = random.Random(path)  # a vocabulary of its own: distinct articles
            words = [
                "".join(rng.choice("bcdfgklmnprstv") + rng.choice("aeiou") for _ in range(3))
                for _ in range(40)
            ]
            text = [" ".join(rng.choice(words) for _ in range(30)) + "." for _ in range(4)]
            site.pages[path] = (html, story(text))
            links.append(
                f'<li><a href="{path}"><img src="/t.png" alt=""></a> '
                f'<a href="{path}">Read more</a></li>'
            )
        nav = f'<a href="/list/{page + 1}.html">Continue reading</a>' if page < pages else ""
        site.pages[f"/list/{page}.html"] = (
            html,
            (
                "<html><head><title>Blog</title></head><body><ul>"
                + "".join(links)
                + f"</ul>{nav}</body></html>"
            ).encode(),
        )
    return articles


def _listing_crawl(site: SiteServer, tmp_path: Path, name: str, **settings: Any) -> Any:
    spec = {
        "requests": [{"url": site.url("/list/1.html")}],
        "settings": {"SIMHASH_WORKERS": 0, **settings},
        "follow": True,
    }
    return run_crawl(tmp_path / name, spec, name=name)


def test_every_article_behind_generic_listing_pages_is_found(
    http_site: SiteServer, tmp_path: Path
) -> None:
    articles = _listing_site(http_site)
    result = _listing_crawl(http_site, tmp_path, "defaults", ADDONS={"scrapy_simhash.Addon": 0})
    found = {i["url"] for i in result.items if "errback" not in i}
    assert {http_site.url(p) for p in articles} <= found  # 50 of 50
    # Listing pages have no text of their own: none is dropped, none decides anything.
    listings = [i for i in result.items if "/list/" in i["url"]]
    assert len(listings) == 5
    assert all(i["simhash"]["fingerprint"] is None for i in listings)
    assert "only link lists" in listings[0]["simhash"]["reason"]


def test_hand_wired_middlewares_never_export_items_of_copies(
    http_site: SiteServer, tmp_path: Path
) -> None:
    _site(http_site)
    wired = {"DOWNLOADER_MIDDLEWARES": {"scrapy_simhash.SimhashDownloaderMiddleware": 540}}
    # Following was not asked for by name: copies are dropped outright, no item of one.
    quiet = run_crawl(
        tmp_path / "quiet",
        {
            "requests": [{"url": http_site.url("/mirror/harbour.html")}],
            "settings": {"SIMHASH_WORKERS": 0, **wired},
            "follow": True,
        },
        name="quiet",
    )
    assert [i["url"] for i in quiet.items if "errback" not in i] == [
        http_site.url("/mirror/harbour.html")
    ]
    assert "SimhashSpiderMiddleware is not in SPIDER_MIDDLEWARES" in quiet.log
    # Asked for by name without the spider middleware: the crawl refuses to start.
    refused = run_crawl(
        tmp_path / "refused",
        {
            "requests": [{"url": http_site.url("/mirror/harbour.html")}],
            "settings": {"SIMHASH_WORKERS": 0, "SIMHASH_FOLLOW_DUPLICATE_LINKS": True, **wired},
            "follow": True,
        },
        name="refused",
    )
    assert refused.items == []
    assert any(
        "SPIDER_MIDDLEWARES lacks scrapy_simhash.SimhashSpiderMiddleware" in e
        for e in refused.errors
    ), refused.errors


def _enabled_spider_middlewares(log: str) -> str:
    start = log.index("Enabled spider middlewares:")
    return log[start : log.index("]", start)]
