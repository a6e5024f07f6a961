"""Spider middleware: near-duplicates whose links are followed yield no items, and a page
is said delivered once its callback returned and its items passed the pipelines.

With ``SIMHASH_FOLLOW_DUPLICATE_LINKS`` the downloader middleware lets a near-duplicate
reach the spider's callback instead of dropping it, so links found only on a copy (a
mirror that arrived first, a print view linking to the next part) are still followed. The
items such a callback yields are dropped here: requests pass, so "one page per cluster"
still holds for what the crawl produces.

With ``SIMHASH_FILING_LEASE_SECS`` a page kept by the downloader middleware is in flight
(:mod:`scrapy_simhash.filings`) until this middleware sends :data:`FILING_DELIVERED`: its
callback's output ended (or the callback raised), and every item it yielded was scraped,
dropped or failed in the pipelines (Scrapy's item signals for that response).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured

from scrapy_simhash.glue.wiring import refusing_start
from scrapy_simhash.settings import filing_lease_secs, follows_duplicate_links
from scrapy_simhash.verdict import LINKS_ONLY

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: Priority in SPIDER_MIDDLEWARES used by the add-on: close to the spider (runs first on
#: its output), so later middlewares never see an item of a copy.
PRIORITY = 50
#: ``request.meta`` key of the token of a page in flight (set by the downloader middleware
#: on each page it keeps, removed from every other response it sees).
FILING_META = "_simhash_filing"
#: Sent with ``token`` once the page of that token was delivered (internal).
FILING_DELIVERED = object()


def spider_middleware_installed(settings: Any) -> bool:
    """Whether SPIDER_MIDDLEWARES enables :class:`SimhashSpiderMiddleware` (by any path)."""
    from scrapy.utils.misc import load_object

    for entry, priority in settings.getwithbase("SPIDER_MIDDLEWARES").items():
        if priority is None:
            continue
        try:
            found = load_object(entry) if isinstance(entry, str) else entry
        except (ImportError, ValueError, NameError, AttributeError):
            continue
        if found is SimhashSpiderMiddleware:
            return True
    return False


class SimhashSpiderMiddleware:
    """Drop the items of near-duplicates that reached the callback for their links."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        #: token -> items yielded and not yet out of the pipelines.
        self._items: dict[str, int] = {}
        #: Tokens whose callback output ended.
        self._ended: set[str] = set()
        for signal in (
            scrapy_signals.item_scraped,
            scrapy_signals.item_dropped,
            scrapy_signals.item_error,
        ):
            crawler.signals.connect(self._item_done, signal=signal)

    @classmethod
    @refusing_start
    def from_crawler(cls, crawler: Crawler) -> SimhashSpiderMiddleware:
        settings = crawler.settings
        if not follows_duplicate_links(settings) and not filing_lease_secs(settings) > 0:
            # Off: Scrapy then leaves the spider's output unwrapped.
            raise NotConfigured(
                "SIMHASH_FOLLOW_DUPLICATE_LINKS is off: no near-duplicate reaches a callback,"
                " so there are no items of copies to drop; SIMHASH_FILING_LEASE_SECS is 0"
            )
        return cls(crawler)

    @staticmethod
    def _token(response: Any) -> str | None:
        request = getattr(response, "request", None)
        return None if request is None else request.meta.get(FILING_META)

    def _item_done(self, response: Any = None, **kwargs: Any) -> None:
        token = self._token(response)
        if token is not None and token in self._items:
            self._items[token] -= 1
            self._settle(token)

    def _settle(self, token: str) -> None:
        if token in self._ended and self._items.get(token, 0) <= 0:
            self._ended.discard(token)
            self._items.pop(token, None)
            self.crawler.signals.send_catch_log(signal=FILING_DELIVERED, token=token)

    def _ended_output(self, token: str | None) -> None:
        if token is not None:
            self._ended.add(token)
            self._settle(token)

    def process_spider_exception(
        self, response: Response, exception: Exception, spider: Any = None
    ) -> None:
        """A callback that raised is done with its page (Scrapy does not call it again)."""
        self._ended_output(self._token(response))

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        info = response.meta.get("simhash") if response.request is not None else None
        links_only = bool(info and info.get(LINKS_ONLY))
        token = self._token(response)
        if token is not None:
            self._items.setdefault(token, 0)
        try:
            async for output in result:
                if not links_only or isinstance(output, Request):
                    if token is not None and not isinstance(output, Request) and output is not None:
                        self._items[token] += 1
                    yield output
                    continue
                self.stats.inc_value("simhash/duplicate_items_dropped")
                logger.debug(
                    "Dropped an item of near-duplicate %s (copy of %s)",
                    response.url,
                    info.get("duplicate_of") if info else None,
                )
        finally:
            self._ended_output(token)
