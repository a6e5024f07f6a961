"""A page keeps its item when the URL that first brought it is no longer linked (issue 37).

Crawl 1 fetched a tracking link first: its page was filed under the canonical URL it names,
and it reached the spider (the holder). In a later crawl its campaign has changed, so that
link is never fetched again: every other URL of the page used to be its copy, and the page
had no item. The canonical URL, which the URL rules rank better (fewer parameters: no
tracking ones), now takes its page's name back when fetched before the holder in a later
crawl, as a preferred host's URL does; the holder fetched after it is its copy, and the name
stays (a print view keeps its page: tests/crawl/test_scrapy_canonical.py). Within one crawl the
page still reaches the spider once. Verdict steps over every backend.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scrapy_simhash.canonical import PREFERENCE_RULES
from scrapy_simhash.cli._records import DROPPED, kind
from scrapy_simhash.index.drops import FILED
from scrapy_simhash.verdict import DUPLICATE, UNIQUE, Verdict, VerdictStep
from tests.conftest import backend_params, backend_url
from tests.naming_stores import NEAR_A, OK, A, Stores, run

CANONICAL = "https://news.example.com/news/a.html"
TRACKED = f"{CANONICAL}?utm_source=spring"
RETRACKED = f"{CANONICAL}?utm_source=summer"


@pytest.fixture(params=backend_params(("memory", "sqlite", "redis", "sharded")))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


async def fetch(step: VerdictStep, own: str, fingerprint: int) -> Verdict:
    """A page fetched from ``own`` that names CANONICAL as its canonical URL."""
    return await step.page(CANONICAL, own, fingerprint, OK)


async def first_crawl(stores: Stores) -> None:
    """The tracking link first: it reaches the spider, the canonical URL is its copy."""
    held = await fetch(stores.step, TRACKED, A)
    assert (held.outcome, held.key) == (UNIQUE, CANONICAL)
    assert (await fetch(stores.step, CANONICAL, NEAR_A)).outcome == DUPLICATE


def test_the_canonical_url_takes_the_name_back_from_a_tracking_link_no_longer_linked(
    url: str,
) -> None:
    async def scenario() -> None:
        stores = Stores(url, rules=PREFERENCE_RULES)
        await first_crawl(stores)

        # Crawl 2: the campaign changed; the new tracking link is a copy, the canonical
        # URL reaches the spider (the page unchanged since it reached it as TRACKED).
        step = stores.crawl()
        assert (await fetch(step, RETRACKED, NEAR_A)).outcome == DUPLICATE
        page = await fetch(step, CANONICAL, A)
        assert (page.outcome, page.key, page.changed) == (UNIQUE, CANONICAL, False)
        # The old link, should it come after all, is the canonical URL's copy.
        late = await fetch(step, TRACKED, A)
        assert (late.outcome, late.duplicate_of) == (DUPLICATE, CANONICAL)
        record = await stores.call("drop_of", TRACKED)
        assert record.kept == CANONICAL
        assert kind(record, lambda _: None) == DROPPED
        assert await stores.call("drop_of", CANONICAL) is None  # it names its page

        # Crawl 3: the name stays, whichever URL comes first.
        step = stores.crawl()
        assert (await fetch(step, TRACKED, A)).outcome == DUPLICATE
        assert (await fetch(step, CANONICAL, A)).outcome == UNIQUE
        await stores.close()

    run(scenario())


def test_the_page_reaches_the_spider_once_a_crawl_when_the_holder_comes_first(
    url: str,
) -> None:
    """The holder, still linked, fetched first in a later crawl reaches the spider (a URL
    that reached it keeps the page while it comes first); the canonical URL after it, in
    this process or in another that started before that delivery, is its copy."""

    async def scenario() -> None:
        stores = Stores(url, rules=PREFERENCE_RULES)
        await first_crawl(stores)
        one, other = stores.crawl(), stores.crawl()
        await asyncio.sleep(1.1)  # the delivery below is after both processes began
        assert (await fetch(one, TRACKED, A)).outcome == UNIQUE
        for step in (one, other):
            copy = await fetch(step, CANONICAL, A)
            assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, CANONICAL)
        record = await stores.call("drop_of", TRACKED)
        assert (record.kept, record.distance) == (CANONICAL, FILED)
        await stores.close()

    run(scenario())


def test_without_url_rules_the_holder_keeps_the_page(url: str) -> None:
    """``SIMHASH_PREFER_URLS = []``: no URL ranks better, the URL that reached the spider
    keeps its page's name as before."""

    async def scenario() -> None:
        stores = Stores(url, rules=())
        await first_crawl(stores)
        step = stores.crawl()
        copy = await fetch(step, CANONICAL, A)
        assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, CANONICAL)
        await stores.close()

    run(scenario())
