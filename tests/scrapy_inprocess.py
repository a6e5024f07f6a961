"""Drive the downloader middleware in-process, one response at a time, in a chosen order.

Scrapy's own ``get_crawler`` builds the crawler; responses are real ``HtmlResponse`` objects
handed to ``process_response`` in the order a test names, so "which copy arrived first" is
the test's choice rather than the scheduler's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scrapy import Spider
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from scrapy_simhash import SimhashDownloaderMiddleware


class InProcessSpider(Spider):
    name = "inprocess"


def story(paragraphs: list[str], *, canonical: str | None = None, links: list[str] = ()) -> bytes:
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    anchors = "".join(f'<a href="{href}">more</a>' for href in links)
    return (
        f"<html><head><title>Story</title>{head}</head><body><article><h1>Story</h1>{body}"
        f"</article><nav>{anchors}</nav></body></html>"
    ).encode()


HARBOUR = [
    "The harbour bridge reopened on Tuesday after three years of repairs to its steel deck.",
    "Engineers replaced more than four thousand rivets and repainted the whole span in grey.",
    "Ferry operators said they expect fewer passengers now that the road link is back.",
    "The council will review traffic on the bridge again at the end of the summer season.",
]
ORCHARD = [
    "Apple growers in the valley expect the smallest harvest in a decade after a late frost.",
    "Blossom froze on two nights in April, and bees stayed in their hives through the cold.",
    "Several orchards plan to replant with varieties that flower later in the spring.",
    "Cider makers have already begun buying fruit from growers across the northern border.",
]


class Harness:
    """A middleware over a fresh crawler; :meth:`fetch` hands it one response."""

    def __init__(self, loop: asyncio.AbstractEventLoop, settings: dict[str, Any]) -> None:
        self.loop = loop
        base = {"SIMHASH_WORKERS": 0, "SIMHASH_INDEX_URL": "memory://", "LOG_LEVEL": "WARNING"}
        self.crawler = get_crawler(InProcessSpider, {**base, **settings})
        self.middleware = SimhashDownloaderMiddleware(self.crawler)
        self.middleware._spider_opened()

    def fetch(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str] | None = None,
        *,
        status: int = 200,
        meta: dict[str, Any] | None = None,
        flags: list[str] | None = None,
    ) -> Any:
        """The response passed on, or the exception raised; ``meta["simhash"]`` either way."""
        request = Request(url, meta=meta)
        response = HtmlResponse(
            url, status=status, body=body, headers=headers, request=request, flags=flags
        )
        try:
            result: Any = self.loop.run_until_complete(
                self.middleware.process_response(request, response)
            )
        except Exception as exc:  # noqa: BLE001 (the test inspects what was raised)
            result = exc
        return result, request.meta.get("simhash")

    def index(self, method: str, *args: Any) -> Any:
        return self.loop.run_until_complete(
            self.middleware.index.call(lambda index: getattr(index, method)(*args))
        )

    def stat(self, name: str) -> Any:
        return self.crawler.stats.get_value(f"simhash/{name}")

    def close(self) -> None:
        self.loop.run_until_complete(self.middleware._spider_closed())


@contextmanager
def harness(**settings: Any) -> Iterator[Harness]:
    loop = asyncio.new_event_loop()
    h = Harness(loop, settings)
    try:
        yield h
    finally:
        h.close()
        loop.close()


#: Words of generated pages: two seeds give pages far apart, one seed the same page.
WORDS = [
    "harbour",
    "council",
    "bridge",
    "tram",
    "library",
    "orchard",
    "festival",
    "museum",
    "archive",
    "river",
    "budget",
    "school",
    "station",
    "market",
    "theatre",
    "garden",
    "clinic",
    "ferry",
    "stadium",
    "canal",
    "tower",
    "valley",
    "island",
    "forest",
    "harvest",
    "winter",
    "engine",
    "signal",
    "printer",
    "bakery",
    "violin",
    "lantern",
    "meadow",
    "quarry",
]


def random_story(seed: int, words: list[str] = WORDS) -> bytes:
    """A page of its own: six sentences of words drawn with ``seed``."""
    import random

    rng = random.Random(seed)
    return story([" ".join(rng.choice(words) for _ in range(14)) + "." for _ in range(6)])
