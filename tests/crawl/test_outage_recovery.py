"""What a crawl does once its index answers again: the pages passed unchecked during the
outage are indexed (so their later copies are dropped), and a Redis that came back empty is
told at ERROR, with what was lost, before the crawl goes on or stops as
``SIMHASH_ON_INDEX_LOST`` says.

Every test runs against a real ``redis-server`` that it stops and starts itself: with a
dump saved first the server comes back with its data (an outage), without one it comes back
empty (what a restart without persistence does). Responses are handed to the middleware in
the test's order; copies judged together are gathered, so no assertion depends on which of
them finishes first.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from scrapy_simhash import SimhashPipeline
from scrapy_simhash.exceptions import NearDuplicate
from scrapy_simhash.reset import reset_namespace
from scrapy_simhash.settings import index_kwargs
from tests.redis_servers import RedisServer
from tests.scrapy_inprocess import HARBOUR, ORCHARD, Harness, harness, random_story
from tests.scrapy_runner import run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.redis

#: The namespace of the in-process spider.
META = b"simhash:{inprocess}:m"


def settings(server: RedisServer, **extra: Any) -> dict[str, Any]:
    """A crawl on ``server`` that reconnects at once after a failure (no retry pause, so no
    clock is needed) and gives up a refused connection without redis-py's own retries."""
    return {
        "SIMHASH_INDEX_URL": server.url,
        "SIMHASH_INDEX_RETRY_AFTER_SECS": 0,
        "SIMHASH_INDEX_TIMEOUT_SECS": 5,
        "SIMHASH_INDEX_OPTIONS": {"retries": 0},
        **extra,
    }


def outage(server: RedisServer) -> None:
    """Stop the server after saving its data, which it loads again when started."""
    client = redis.Redis(port=server.port)
    try:
        client.save()
    finally:
        client.close()
    server.stop()


def restart_empty(server: RedisServer) -> None:
    """A restart without persistence: the server comes back with nothing."""
    server.stop()
    server.start()


def together(h: Harness, pages: list[tuple[str, bytes]]) -> dict[str, Any]:
    """Hand ``pages`` to the middleware at once; what each came out as, by URL."""

    async def one(url: str, body: bytes) -> Any:
        request = Request(url)
        response = HtmlResponse(url, body=body, request=request)
        try:
            return await h.middleware.process_response(request, response)
        except Exception as exc:  # noqa: BLE001 (the test inspects what was raised)
            return exc

    async def every() -> list[Any]:
        return list(await asyncio.gather(*(one(url, body) for url, body in pages)))

    return dict(zip([url for url, _ in pages], h.loop.run_until_complete(every()), strict=True))


def recrawl_state(h: Harness, url: str) -> Any:
    recrawl = h.middleware.recrawl
    assert recrawl is not None
    return h.loop.run_until_complete(recrawl.call(lambda store: store.get(url)))


def close_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "scrapy_simhash.middleware" and r.getMessage().startswith("SimHash: ")
    ]


# -- pages passed unchecked during an outage --------------------------------------------------


def test_pages_passed_during_an_outage_are_indexed_once_it_is_back_and_their_copies_dropped(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with harness(**settings(own_redis)) as h:
        h.fetch("https://a.test/1", random_story(1))
        outage(own_redis)
        for url, seed in [
            ("https://a.test/2", 2),
            ("https://a.test/3", 3),
            ("https://b.test/2", 2),
        ]:  # a copy of a.test/2, also unchecked
            result, info = h.fetch(url, random_story(seed))
            assert result.status == 200, result
            assert info["reason"].startswith("index unavailable")
        own_redis.start()  # back, with its data
        results = together(
            h, [("https://c.test/2", random_story(2)), ("https://c.test/3", random_story(3))]
        )
        for url, kept in [
            ("https://c.test/2", "https://a.test/2"),
            ("https://c.test/3", "https://a.test/3"),
        ]:
            assert isinstance(results[url], NearDuplicate), (url, results[url])
            assert results[url].kept_url == kept
        assert h.index("get", "https://b.test/2") is None  # a copy: not stored
        # The visits the recrawl store missed are recorded, the copy's too (it was
        # fetched, and reached the spider): nothing is dropped afterwards.
        for url in ("https://a.test/2", "https://a.test/3", "https://b.test/2"):
            assert recrawl_state(h, url).visits == 1, url
        assert (
            h.stat("outage/passed_unchecked"),
            h.stat("outage/indexed_later"),
            h.stat("outage/copies_later"),
        ) == (3, 2, 1)
        assert h.stat("outage/backlog_overflow") is None
        assert h.stat("outage/not_indexed") is None
        assert h.stat("recrawl_error") >= 3  # the store was away too ...
        assert h.stat("recrawl_lost") is None  # ... yet no visit is lost
    (summary,) = [line for line in close_lines(caplog) if "passed unchecked" in line]
    assert summary == (
        "SimHash: 3 page(s) passed unchecked while the index was unavailable "
        "(simhash/outage/passed_unchecked): 2 indexed later, 1 found then to copy a page "
        "indexed meanwhile (kept: they had reached the spider), 0 over the backlog's bound "
        "(SIMHASH_OUTAGE_BACKLOG_PAGES) and 0 not indexed by the close"
    )


def test_the_backlog_is_bounded_and_what_it_could_not_hold_is_counted(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with harness(**settings(own_redis, SIMHASH_OUTAGE_BACKLOG_PAGES=1)) as h:
        h.fetch("https://a.test/1", random_story(1))
        outage(own_redis)
        h.fetch("https://a.test/2", random_story(2))
        h.fetch("https://a.test/3", random_story(3))  # over the bound: never indexed
        own_redis.start()
        results = together(
            h, [("https://c.test/2", random_story(2)), ("https://c.test/3", random_story(3))]
        )
        assert isinstance(results["https://c.test/2"], NearDuplicate)
        assert results["https://c.test/3"].status == 200  # what the bound costs
        assert (
            h.stat("outage/passed_unchecked"),
            h.stat("outage/indexed_later"),
            h.stat("outage/backlog_overflow"),
        ) == (2, 1, 1)
    (summary,) = [line for line in close_lines(caplog) if "passed unchecked" in line]
    assert "1 over the backlog's bound (SIMHASH_OUTAGE_BACKLOG_PAGES)" in summary
    assert summary.endswith(": their copies fetched later may have been kept")


def test_pages_the_index_never_checked_again_are_counted_at_the_close(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with harness(**settings(own_redis)) as h:
        h.fetch("https://a.test/1", random_story(1))
        outage(own_redis)
        h.fetch("https://a.test/2", random_story(2))
    assert h.stat("outage/not_indexed") == 1
    (summary,) = [line for line in close_lines(caplog) if "passed unchecked" in line]
    assert "0 indexed later" in summary
    assert "1 not indexed by the close" in summary


def test_pages_dropped_during_an_outage_are_not_indexed_afterwards(
    own_redis: RedisServer,
) -> None:
    """With SIMHASH_ON_INDEX_ERROR = "drop" no page reached the spider unchecked: indexing
    one later would drop its copies for a page nobody received."""
    with harness(**settings(own_redis, SIMHASH_ON_INDEX_ERROR="drop")) as h:
        h.fetch("https://a.test/1", random_story(1))
        outage(own_redis)
        h.fetch("https://a.test/2", random_story(2))
        own_redis.start()
        result, info = h.fetch("https://c.test/2", random_story(2))
        assert result.status == 200
        assert info["duplicate_of"] is None
        assert h.stat("outage/passed_unchecked") is None


class ItemSpider(Spider):
    name = "items"


def test_items_passed_during_an_outage_are_indexed_once_it_is_back(
    own_redis: RedisServer,
) -> None:
    """The item pipeline keeps the same backlog, in its own namespace."""
    crawler = get_crawler(ItemSpider, {**settings(own_redis), "SIMHASH_ITEM_FIELDS": ["body"]})
    pipe = SimhashPipeline(crawler)
    harbour, orchard = " ".join(HARBOUR), " ".join(ORCHARD)

    async def scenario() -> Any:
        await pipe.process_item({"url": "https://a.test/1", "body": harbour})
        outage(own_redis)
        passed = await pipe.process_item({"url": "https://a.test/2", "body": orchard})
        own_redis.start()
        try:
            await pipe.process_item({"url": "https://b.test/2", "body": orchard})
        except DropItem as exc:
            return passed, exc
        finally:
            await pipe.stores.aclose()
        return passed, None

    passed, dropped = asyncio.run(scenario())
    assert passed["url"] == "https://a.test/2"
    assert str(dropped) == "near-duplicate of item https://a.test/2 (distance 0)"
    stats = crawler.stats.get_stats()
    assert (
        stats["simhash/items_outage/passed_unchecked"],
        stats["simhash/items_outage/indexed_later"],
    ) == (1, 1)


# -- a Redis that came back empty ----------------------------------------------------------


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("seen", ["between_pages", "by_a_page", "reset_elsewhere"])
def test_a_redis_restarted_empty_is_told_with_what_was_lost_and_the_crawl_goes_on(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture, seen: str, shards: int
) -> None:
    """Whether the restart fell between two pages (the client writes the record back on
    its own) or a page met the server down (the index is reopened), the loss is one ERROR
    line; the namespace is re-created and dedup goes on in it. The same for a namespace
    sharded over several hash tags (here on one server), and for a namespace another
    process reset (``scrapy simhash reset``) under the crawl."""
    caplog.set_level(logging.WARNING)
    with harness(**settings(own_redis, SIMHASH_INDEX_SHARDS=shards)) as h:
        h.fetch("https://a.test/1", random_story(1))
        if seen == "by_a_page":
            own_redis.stop()
            result, info = h.fetch("https://a.test/2", random_story(2))
            assert info["reason"].startswith("index unavailable")
            own_redis.start()  # empty: nothing was saved
        elif seen == "reset_elsewhere":
            fingerprinter = h.middleware.runner.fingerprinter
            kwargs = index_kwargs(
                h.crawler.settings,
                namespace="inprocess",
                bits=fingerprinter.bits,
                scheme=fingerprinter.scheme,
            )
            reset_namespace(own_redis.url, "inprocess", kwargs)
            h.fetch("https://a.test/2", random_story(2))
        else:
            restart_empty(own_redis)
            h.fetch("https://a.test/2", random_story(2))
        # What the lost namespace held no longer matches; what was fetched since does.
        result, info = h.fetch("https://b.test/1", random_story(1))
        assert result.status == 200
        assert info["duplicate_of"] is None
        result, _ = h.fetch("https://b.test/2", random_story(2))
        assert isinstance(result, NearDuplicate)
        assert result.kept_url == "https://a.test/2"
        assert h.stat("index_lost") == 1
        if shards == 1:  # the namespace's record is back (a sharded one: its shards')
            client = redis.Redis(port=own_redis.port)
            try:
                assert client.hget(META, "config") is not None
            finally:
                client.close()
    errors = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.ERROR and "lost namespace" in r.getMessage()
    ]
    assert len(errors) == 1, errors
    (error,) = errors
    assert error.startswith(
        f"SimHash index at {own_redis.url} lost namespace 'inprocess' "
        "mid-crawl: its configuration record was gone"
    )
    assert (
        "Lost: the fingerprints of the pages kept (1 of them by this crawl process), the "
        "drop records, the recrawl schedule, the hosts' templates." in error
    )
    assert "Going on with the namespace re-created" in error
    assert "SIMHASH_ON_INDEX_LOST = 'close'" in error
    assert any("lost this namespace's data 1 time(s)" in line for line in close_lines(caplog))


def test_every_process_sharing_the_namespace_tells_the_loss(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The first process to answer writes the record back; the others, finding a record
    they did not adopt, learn the namespace was created anew as well."""
    caplog.set_level(logging.ERROR)
    with harness(**settings(own_redis)) as first, harness(**settings(own_redis)) as second:
        first.fetch("https://a.test/1", random_story(1))
        second.fetch("https://a.test/2", random_story(2))
        restart_empty(own_redis)
        # Each process's first call may meet its dropped connection (an outage): the
        # second one answers.
        for seed in (3, 5):
            first.fetch(f"https://a.test/{seed}", random_story(seed))
        for seed in (4, 6):
            second.fetch(f"https://a.test/{seed}", random_story(seed))
        assert (first.stat("index_lost"), second.stat("index_lost")) == (1, 1)
        result, _ = second.fetch("https://b.test/3", random_story(3))
        assert isinstance(result, NearDuplicate)  # one namespace again, shared
    errors = [r.getMessage() for r in caplog.records if "lost namespace" in r.getMessage()]
    assert len(errors) == 2, errors


@pytest.mark.crawl
@pytest.mark.parametrize("policy", ["continue", "close"])
def test_a_crawl_whose_redis_restarts_empty_goes_on_or_stops_as_set(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path, policy: str
) -> None:
    http_site.hooks["/telescope.html"] = lambda: restart_empty(own_redis)
    pages = [
        "harbour.html",
        "orchard.html",
        "telescope.html",
        "library.html",
        "harbour-copy.html",
        "school.html",
        "school-gbk.html",
    ]
    result = run_crawl(
        tmp_path,
        {
            "requests": [{"url": http_site.url(p)} for p in pages],
            "settings": {
                "ADDONS": {"scrapy_simhash.Addon": 0},
                "CONCURRENT_REQUESTS": 1,
                "SIMHASH_WORKERS": 0,
                "SIMHASH_TOKENIZER": "rjieba",
                "SIMHASH_INDEX_URL": own_redis.url,
                "SIMHASH_ON_INDEX_LOST": policy,
                "SIMHASH_INDEX_RETRY_AFTER_SECS": 0,
            },
        },
    )
    assert result.errors == []
    assert result.stats["simhash/index_lost"] == 1
    assert result.log.count("lost namespace 'pages' mid-crawl") == 1
    if policy == "close":
        assert result.stats["finish_reason"] == "simhash_index_lost"
        assert "Closing the spider (SIMHASH_ON_INDEX_LOST = 'continue'" in result.log
        assert http_site.url("school-gbk.html") not in result.urls()
    else:
        assert result.stats["finish_reason"] == "finished"
        # harbour.html went with the namespace, so its copy is kept; school.html was
        # indexed after the loss, so its copy is dropped.
        assert result.urls() == {http_site.url(p) for p in pages} - {
            http_site.url("school-gbk.html")
        }
