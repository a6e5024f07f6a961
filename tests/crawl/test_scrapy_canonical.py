"""The canonical URL names a cluster whichever copy arrives first; drops are recorded.

The middleware runs in-process (tests/scrapy_inprocess.py), so each test chooses the order
in which copies arrive, and assertions hold for every order.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse

from scrapy_simhash.exceptions import NearDuplicate
from scrapy_simhash.glue.follow import SimhashSpiderMiddleware
from scrapy_simhash.index.drops import FILED, holder_of, kept_name
from scrapy_simhash.recrawl import open_recrawl_store
from tests.scrapy_inprocess import HARBOUR, ORCHARD, harness, story

SITE = "https://news.example.com"
ORIGINAL = f"{SITE}/news/harbour.html"
COPIES = {
    ORIGINAL: story(HARBOUR, canonical="/news/harbour.html"),
    f"{SITE}/print/news/harbour.html": story(HARBOUR, canonical="/news/harbour.html"),
    f"{SITE}/amp/news/harbour.html": story(HARBOUR[:3] + HARBOUR[3:], canonical=ORIGINAL),
    f"{SITE}/news/harbour.html?utm_source=share": story(HARBOUR, canonical="/news/harbour.html"),
}


@pytest.mark.parametrize("order", list(itertools.permutations(COPIES))[::5])
def test_the_canonical_url_names_the_cluster_whichever_copy_arrives_first(
    order: tuple[str, ...],
) -> None:
    with harness() as h:
        results = [h.fetch(url, COPIES[url]) for url in order]
        passed = [
            url for url, (r, _) in zip(order, results, strict=True) if isinstance(r, HtmlResponse)
        ]
        assert passed == [order[0]]  # exactly one page of the cluster reaches the spider
        for url, (result, info) in zip(order[1:], results[1:], strict=True):
            assert isinstance(result, NearDuplicate), url
            assert isinstance(result, IgnoreRequest)  # errbacks written for Scrapy still work
            assert (result.url, result.kept_url, result.distance) == (url, ORIGINAL, 0)
            assert info["duplicate_of"] == ORIGINAL
        assert all(info["key"] == ORIGINAL for _, info in results)
        # The index holds the story under its canonical URL only, and every other URL
        # fetched is recorded as a copy of it.
        assert h.index("count") == 1
        assert h.index("get", ORIGINAL) is not None
        for url in COPIES:
            record = h.index("drop_of", url)
            if url == ORIGINAL:  # the holder record names the copy that reached the spider
                assert holder_of(record) == (None if order[0] == ORIGINAL else order[0])
            else:
                assert (record.url, record.kept) == (url, ORIGINAL), url
        assert h.stat("unique") == 1
        assert h.stat("dropped") == len(COPIES) - 1


def test_the_drop_log_names_the_url_fetched_first_and_the_one_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The copy arrives before its canonical URL: the canonical URL is dropped, and the log
    line says which URL was fetched and kept, not the canonical URL twice."""
    printed, amp = f"{SITE}/print/news/harbour.html", f"{SITE}/amp/news/harbour.html"
    with harness() as h, caplog.at_level(logging.DEBUG, logger="scrapy_simhash.middleware"):
        for url in (printed, ORIGINAL, amp):
            h.fetch(url, COPIES[url])
    dropped = [r.getMessage() for r in caplog.records if "near-duplicate" in r.getMessage()]
    kept = f"{printed}, fetched first and kept under its canonical URL {ORIGINAL} (distance 0)"
    assert dropped == [
        f"Dropped near-duplicate {ORIGINAL} of {kept}",
        f"Dropped near-duplicate {amp} of {kept}",
    ]
    with harness() as h, caplog.at_level(logging.DEBUG, logger="scrapy_simhash.middleware"):
        caplog.clear()
        for url in (ORIGINAL, printed):  # the canonical URL first: it is what was kept
            h.fetch(url, COPIES[url])
    dropped = [r.getMessage() for r in caplog.records if "near-duplicate" in r.getMessage()]
    assert dropped == [f"Dropped near-duplicate {printed} of {ORIGINAL} (distance 0)"]


def test_a_canonical_url_on_another_site_is_not_believed() -> None:
    with harness() as h:
        hijack = story(ORCHARD, canonical="https://elsewhere.example.net/orchard.html")
        result, info = h.fetch(f"{SITE}/news/orchard.html", hijack)
        assert isinstance(result, HtmlResponse)
        assert info["key"] == f"{SITE}/news/orchard.html"
        assert h.index("get", "https://elsewhere.example.net/orchard.html") is None


def test_a_page_naming_a_canonical_it_does_not_copy_keeps_its_own_url() -> None:
    """Paginated pages often name page 1 as canonical: page 2 is still a page of its own."""
    with harness() as h:
        first, _ = h.fetch(f"{SITE}/news/long.html", story(HARBOUR))
        page_two_url = f"{SITE}/news/long.html?page=2"
        second, info = h.fetch(page_two_url, story(ORCHARD, canonical="/news/long.html"))
        assert isinstance(first, HtmlResponse)
        assert isinstance(second, HtmlResponse)
        assert info["key"] == page_two_url
        assert h.index("get", page_two_url) is not None
        assert h.index("drop_of", page_two_url) is None


def test_a_page_filed_under_its_own_url_is_a_visit_again_in_the_next_crawl(
    tmp_path: Path,
) -> None:
    """Page 2 names page 1 but is filed under its own URL; fetched again (the next crawl on
    the same index) it matches its own entry: a revisit, never a copy of itself."""
    index_url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    page_two_url = f"{SITE}/news/long.html?page=2"
    for crawl in (1, 2):
        with harness(SIMHASH_INDEX_URL=index_url) as h:
            first, _ = h.fetch(f"{SITE}/news/long.html", story(HARBOUR))
            second, info = h.fetch(page_two_url, story(ORCHARD, canonical="/news/long.html"))
            assert isinstance(first, HtmlResponse), crawl
            assert isinstance(second, HtmlResponse), (crawl, info)
            assert info["key"] == page_two_url
            assert info["duplicate_of"] is None
            assert h.stat("duplicate") in (None, 0)
            if crawl == 2:
                assert info["changed"] is False  # the same page, seen again


def test_the_canonical_page_replaces_what_a_misdeclared_page_stored_under_its_url() -> None:
    with harness() as h:
        h.fetch(f"{SITE}/news/long.html?page=2", story(ORCHARD, canonical="/news/long.html"))
        result, info = h.fetch(f"{SITE}/news/long.html", story(HARBOUR))
        assert isinstance(result, HtmlResponse)
        assert info["key"] == f"{SITE}/news/long.html"
        assert info["changed"] is None  # its first visit, not a change of the other page
        assert h.index("query", h.index("get", f"{SITE}/news/long.html"))[0].key == (
            f"{SITE}/news/long.html"
        )


def test_a_link_header_names_the_canonical_url_too() -> None:
    with harness() as h:
        h.fetch(ORIGINAL, story(HARBOUR))
        header = {"Link": f'<{ORIGINAL}>; rel="canonical"'}
        result, info = h.fetch(f"{SITE}/files/harbour.html", story(HARBOUR), headers=header)
        assert isinstance(result, NearDuplicate)
        assert info["key"] == ORIGINAL


def test_canonical_keys_can_be_turned_off() -> None:
    with harness(SIMHASH_USE_CANONICAL=False, SIMHASH_PREFER_URLS="") as h:
        print_url = f"{SITE}/print/news/harbour.html"
        h.fetch(print_url, COPIES[print_url])
        result, info = h.fetch(ORIGINAL, COPIES[ORIGINAL])
        assert isinstance(result, NearDuplicate)
        assert (info["key"], info["duplicate_of"]) == (ORIGINAL, print_url)
        assert h.index("drop_of", ORIGINAL).kept == print_url


def test_recrawl_and_a_second_crawl_speak_of_the_canonical_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    print_url = f"{SITE}/print/news/harbour.html"
    settings = {"SIMHASH_INDEX_URL": url, "SIMHASH_RECRAWL_ENABLED": True}
    with harness(**settings) as h:  # round 1: the print view arrives first
        h.fetch(print_url, COPIES[print_url])
        assert isinstance(h.fetch(ORIGINAL, COPIES[ORIGINAL])[0], NearDuplicate)
    with harness(**settings) as h:  # round 2: the canonical URL first, then the copy
        result, info = h.fetch(ORIGINAL, COPIES[ORIGINAL])
        assert isinstance(result, NearDuplicate)  # the story reached the spider as its print view
        assert (info["key"], info["duplicate_of"]) == (ORIGINAL, ORIGINAL)
        result, info = h.fetch(print_url, COPIES[print_url])
        assert isinstance(result, HtmlResponse)
        assert (info["key"], info["changed"]) == (ORIGINAL, False)  # a re-fetch of the story
    store = open_recrawl_store(url, namespace="inprocess")
    try:
        assert [due.url for due in store.due(within=10**9)] == [ORIGINAL]
        assert store.get(ORIGINAL).visits == 4  # each URL of the story, in each round
        assert store.get(print_url) is None
    finally:
        store.close()


@pytest.mark.parametrize("second", [("print", "canonical"), ("canonical", "print")])
@pytest.mark.parametrize("first", [("print", "canonical"), ("canonical", "print")])
def test_the_url_that_reached_the_spider_reaches_it_in_the_next_crawl_too(
    tmp_path: Path, first: tuple[str, str], second: tuple[str, str]
) -> None:
    """Whichever URL of a story reached the spider in one crawl reaches it in the next,
    whatever order its URLs arrive in, while the story does not change: items keep their
    URL from crawl to crawl."""
    urls = {"print": f"{SITE}/print/news/harbour.html", "canonical": ORIGINAL}
    settings = {"SIMHASH_INDEX_URL": f"sqlite:///{tmp_path / 'index.sqlite3'}"}
    reached = []
    for order in (first, second):
        with harness(**settings) as h:
            results = {name: h.fetch(urls[name], COPIES[urls[name]]) for name in order}
            reached.append(
                [name for name, (r, _) in results.items() if isinstance(r, HtmlResponse)]
            )
            assert {info["key"] for _, info in results.values()} == {ORIGINAL}
            assert h.stat("unique") == 1
            assert h.stat("dropped") == 1
    assert reached == [[first[0]], [first[0]]]


def test_lookup_says_which_url_reached_the_spider_for_a_canonical_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scrapy_simhash.cli import main

    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    print_url = f"{SITE}/print/news/harbour.html"
    with harness(SIMHASH_INDEX_URL=url) as h:
        h.fetch(print_url, COPIES[print_url])
        h.fetch(ORIGINAL, COPIES[ORIGINAL])
    base = ["--index-url", url, "--namespace", "inprocess"]
    assert main(["lookup", ORIGINAL, *base]) == 0
    fingerprint, held = capsys.readouterr().out.splitlines()
    assert fingerprint.startswith(f"{ORIGINAL}: ")
    assert held.startswith(
        f"{ORIGINAL}: its page reached the spider as {print_url}, fetched first and filed "
        "under this canonical URL; this URL was dropped as its copy (dropped "
    )
    assert main(["lookup", print_url, *base]) == 0
    assert capsys.readouterr().out.startswith(
        f"{print_url}: reached the spider, its page filed under its canonical URL {ORIGINAL}; "
    )


def test_a_canonical_url_whose_page_changed_reaches_the_spider_and_keeps_it(
    tmp_path: Path,
) -> None:
    """Only while the story is unchanged does its copy fetched first keep the URL: the
    canonical URL bringing a change reaches the spider, and names the story from then on."""
    print_url = f"{SITE}/print/news/harbour.html"
    settings = {"SIMHASH_INDEX_URL": f"sqlite:///{tmp_path / 'index.sqlite3'}"}
    updated = story(ORCHARD, canonical="/news/harbour.html")
    with harness(**settings) as h:
        h.fetch(print_url, COPIES[print_url])
    for crawl in (2, 3):
        with harness(**settings) as h:
            result, info = h.fetch(ORIGINAL, updated)
            assert isinstance(result, HtmlResponse), crawl
            assert info["changed"] is (crawl == 2)
            result, info = h.fetch(print_url, updated)
            assert isinstance(result, NearDuplicate), crawl
            assert info["duplicate_of"] == ORIGINAL


def test_follow_mode_passes_copies_to_the_callback_and_drops_their_items() -> None:
    # The harness runs no callback, so the spider middleware never says the first page was
    # delivered: with filings held in flight, its copy would wait for it (four leases).
    with harness(
        SIMHASH_FOLLOW_DUPLICATE_LINKS=True,
        SPIDER_MIDDLEWARES={"scrapy_simhash.SimhashSpiderMiddleware": 50},
        SIMHASH_FILING_LEASE_SECS=0,
    ) as h:
        h.fetch(f"{SITE}/mirror/harbour.html", story(HARBOUR))
        response, info = h.fetch(ORIGINAL, story(HARBOUR, links=["/news/next.html"]))
        assert isinstance(response, HtmlResponse)  # reaches the callback ...
        assert info["duplicate_of"] == f"{SITE}/mirror/harbour.html"
        assert info["links_only"] is True  # ... for its links only
        assert h.stat("dropped") == 1
        spider_mw = SimhashSpiderMiddleware(h.crawler)
        response.request.meta["simhash"] = info

        async def callback_output() -> Any:
            yield {"url": response.url}
            yield Request(f"{SITE}/news/next.html")

        async def run() -> list[Any]:
            out = spider_mw.process_spider_output(response, callback_output())
            return [x async for x in out]

        passed = asyncio.new_event_loop().run_until_complete(run())
        assert [type(x).__name__ for x in passed] == ["Request"]
        assert h.crawler.stats.get_value("simhash/duplicate_items_dropped") == 1


def test_without_declarations_the_preferred_url_names_the_cluster() -> None:
    """No canonical link: the print view or the tracking link arriving first is still
    filed under the clean URL once that arrives, and only one page reaches the spider."""
    clean = f"{SITE}/news/orchard.html"
    urls = [f"{SITE}/print/news/orchard.html", f"{SITE}/news/orchard.html?utm_source=x", clean]
    for order in itertools.permutations(urls):
        with harness() as h:
            results = [h.fetch(url, story(ORCHARD)) for url in order]
            assert sum(isinstance(r, HtmlResponse) for r, _ in results) == 1, order
            # The clean URL's own arrival names the cluster (reports see it in the signal's
            # info), unless it arrived first and was kept under its own name anyway.
            clean_info = next(
                info for url, (_, info) in zip(order, results, strict=True) if url == clean
            )
            assert clean_info["key"] == clean
            if order[0] != clean:
                assert clean_info["renamed_from"] == clean_info["duplicate_of"] != clean
            assert h.index("count") == 1
            assert h.index("get", clean) is not None, order
            # Each other URL leads to the clean one (a record may name an intermediate
            # name that was itself renamed later: lookups follow the chain).
            for url in urls:
                if url != clean:
                    found = kept_name(lambda u: h.index("drop_of", u), url)
                    assert found == clean, (order, url)
            # The clean URL arriving later was dropped (its cluster had reached the spider):
            # its record says of what, as the log does; the URL that reached the spider
            # has a filing record, not a drop.
            record = h.index("drop_of", clean)
            if order[0] == clean:
                assert record is None
            else:
                assert (record.kept, record.distance) == (clean_info["duplicate_of"], 0)
            first = h.index("drop_of", order[0])
            assert first is None if order[0] == clean else first.distance == FILED


def test_a_declared_canonical_url_is_never_renamed_by_preference() -> None:
    with harness() as h:
        declared = f"{SITE}/news/orchard.html?id=7"
        h.fetch(declared, story(ORCHARD, canonical=declared))
        result, info = h.fetch(f"{SITE}/orchard", story(ORCHARD))
        assert isinstance(result, NearDuplicate)
        assert result.kept_url == declared
        assert "renamed_from" not in info
        assert h.index("get", declared) is not None


def test_url_preference_can_be_turned_off() -> None:
    with harness(SIMHASH_PREFER_URLS=[]) as h:
        h.fetch(f"{SITE}/print/news/orchard.html", story(ORCHARD))
        h.fetch(f"{SITE}/news/orchard.html", story(ORCHARD))
        assert h.index("get", f"{SITE}/print/news/orchard.html") is not None
        assert h.index("drop_of", f"{SITE}/news/orchard.html").kept == (
            f"{SITE}/print/news/orchard.html"
        )


@pytest.mark.parametrize("charset", ["utf-8", "gbk", "big5", "shift_jis", "utf-16"])
def test_the_declaration_is_read_from_the_head_in_the_pages_charset(charset: str) -> None:
    from scrapy_simhash.glue.keys import CanonicalKeys

    page = (
        f'<html><head><meta charset="{charset}"><title>港口新聞</title>'
        '<link rel="canonical" href="/news/港口.html"></head>'
        '<body><link rel="canonical" href="/not/this.html"><p>正文</p></body></html>'
    )
    response = HtmlResponse(
        f"{SITE}/print/x.html",
        body=page.encode(charset),
        headers={"Content-Type": f"text/html; charset={charset}"},
    )
    assert CanonicalKeys._declaration(response) == f"{SITE}/news/港口.html"


@pytest.mark.parametrize("canonical", ["/", "/news/other.html#top"])
def test_a_page_filed_under_a_canonical_it_does_not_copy_keeps_its_entry(canonical: str) -> None:
    """Every page of a CMS names the home page: an article fetched before the home page
    keeps an entry, a recrawl state and the drop of its own copies once the home page comes."""
    home = f"{SITE}/" if canonical == "/" else f"{SITE}/news/other.html"
    article = f"{SITE}/news/harbour.html"
    with harness(SIMHASH_RECRAWL_ENABLED=True) as h:
        h.fetch(article, story(HARBOUR, canonical=canonical))
        h.fetch(home, story(ORCHARD, canonical=canonical))
        assert h.index("get", article) is not None
        assert h.index("drop_of", article) is None
        result, info = h.fetch(f"{article}?utm_source=q", story(HARBOUR, canonical=canonical))
        assert isinstance(result, NearDuplicate)
        assert info["duplicate_of"] == article
        state = h.loop.run_until_complete(
            h.middleware.recrawl.call(lambda store: store.get(article))
        )
        assert state is not None


def test_an_http_page_naming_its_https_url_is_filed_under_what_was_fetched() -> None:
    http_url = "http://news.example.com/news/harbour.html"
    with harness(SIMHASH_RECRAWL_ENABLED=True) as h:
        result, info = h.fetch(http_url, story(HARBOUR, canonical=ORIGINAL))
        assert isinstance(result, HtmlResponse)
        assert info["key"] == http_url
        assert h.index("get", http_url) is not None
        assert h.index("drop_of", http_url) is None
        assert h.index("get", ORIGINAL) is None
