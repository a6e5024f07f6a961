"""A spider mixin that starts a crawl with the URLs the recrawl schedule says are due.

The downloader middleware records every fetch in the recrawl store; this mixin closes the
loop: ``start()`` claims the due URLs (leased, so concurrent crawler processes split them)
and requests them with the stored validators, so an unchanged page may cost only a 304.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request

from scrapy_simhash import settings as simhash_settings
from scrapy_simhash._redis import mask_url
from scrapy_simhash.exceptions import SimhashError
from scrapy_simhash.glue import config
from scrapy_simhash.recrawl import DueUrl, open_async_recrawl_store
from scrapy_simhash.settings import RecrawlStartConfig, backend_options, recrawl_config

logger = logging.getLogger("scrapy_simhash.spidermixin")  # the name users filter on


class RecrawlSpiderMixin:
    """Put before ``scrapy.Spider`` in the bases: ``class News(RecrawlSpiderMixin, Spider)``.

    Settings: ``SIMHASH_RECRAWL_START_LIMIT`` (URLs claimed per start, default 10000),
    ``SIMHASH_RECRAWL_START_WITHIN_SECS`` (also claim URLs due that soon, default 0) and
    ``SIMHASH_RECRAWL_START_REQUESTS`` (then yield the spider's own start requests, default
    True; a start URL already yielded as due is not requested twice).
    """

    settings: Any
    name: str | None

    async def start(self) -> AsyncIterator[Any]:
        """Yield due URLs first, then (optionally) the spider's own start requests."""
        seen: set[str] = set()
        for due in await self.claim_due_urls():
            seen.add(due.url)
            yield self.make_recrawl_request(due)
        if not RecrawlStartConfig.from_settings(self.settings).start_requests:
            return
        async for item in super().start():  # type: ignore[misc]
            if isinstance(item, Request) and item.url in seen:
                continue
            yield item

    async def claim_due_urls(self) -> list[DueUrl]:
        """Claim due URLs from the store the middleware writes (none if it is off or down)."""
        settings = self.settings
        recrawl = recrawl_config(settings)
        if not recrawl.enabled:
            return []
        url = config.index_url(settings)
        store = await open_async_recrawl_store(
            url,
            namespace=simhash_settings.namespace(settings, self.name),
            config=recrawl,
            options=backend_options(settings),
        )
        try:
            start = RecrawlStartConfig.from_settings(settings)
            due = await store.claim_due(start.limit, within=start.within_secs)
        except SimhashError as exc:
            logger.error("no due URLs from the recrawl store %s: %s", mask_url(url), exc)
            return []
        finally:
            await store.close()
        logger.info("recrawl: %d due URL(s) claimed from %s", len(due), mask_url(url))
        return due

    def make_recrawl_request(self, due: DueUrl) -> Request:
        """Build the request for a due URL; override to set a callback, priority, etc.

        ``simhash_key`` keeps the observation on the stored key even after a redirect.
        The request goes through the dupefilter like any other: a due URL that the crawl
        also finds by its links is fetched once (its 304 never reaches a callback).
        """
        headers = {}
        if due.etag:
            headers["If-None-Match"] = due.etag
        if due.last_modified:
            headers["If-Modified-Since"] = due.last_modified
        return Request(
            due.url,
            headers=headers,
            meta={"simhash_key": due.url, "simhash_recrawl": True},
        )
