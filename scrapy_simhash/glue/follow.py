"""Spider middleware: near-duplicates whose links are followed yield no items.

With ``SIMHASH_FOLLOW_DUPLICATE_LINKS`` the downloader middleware lets a near-duplicate
reach the spider's callback instead of dropping it, so links found only on a copy (a
mirror that arrived first, a print view linking to the next part) are still followed. The
items such a callback yields are dropped here: requests pass, so "one page per cluster"
still holds for what the crawl produces.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from scrapy_simhash.glue.wiring import refusing_start
from scrapy_simhash.settings import follows_duplicate_links
from scrapy_simhash.verdict import LINKS_ONLY

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: Priority in SPIDER_MIDDLEWARES used by the add-on: close to the spider (runs first on
#: its output), so later middlewares never see an item of a copy.
PRIORITY = 50

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
        self.stats = crawler.stats

    @classmethod
    @refusing_start
    def from_crawler(cls, crawler: Crawler) -> SimhashSpiderMiddleware:
        if not follows_duplicate_links(crawler.settings):
            # Off: Scrapy then leaves the spider's output unwrapped.
            raise NotConfigured(
                "SIMHASH_FOLLOW_DUPLICATE_LINKS is off: no near-duplicate reaches a callback,"
                " so there are no items of copies to drop"
            )
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        info = response.meta.get("simhash") if response.request is not None else None
        links_only = bool(info and info.get(LINKS_ONLY))
        async for output in result:
            if not links_only or isinstance(output, Request):
                yield output
                continue
            self.stats.inc_value("simhash/duplicate_items_dropped")
            logger.debug(
                "Dropped an item of near-duplicate %s (copy of %s)",
                response.url, info.get("duplicate_of") if info else None,
            )
