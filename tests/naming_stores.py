"""An index and a recrawl store behind guards, and verdict steps over them, for the tests of
which URL names a page (a host preference, a page's history): each step stands for one
crawl (or one process of a crawl), as the middleware holds one per crawl."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from scrapy_simhash.glue.guard import Guarded
from scrapy_simhash.index import open_async_index
from scrapy_simhash.recrawl import RecrawlConfig, open_async_recrawl_store
from scrapy_simhash.verdict import Answer, Verdict, VerdictStep

A = 0x0123_4567_89AB_CDEF
NEAR_A = A ^ 0b101  # 2 bits from A: the same page
CHANGED_A = A ^ 0xFFFF_FFFF  # 32 bits from A: the page after a real change
NEAR_CHANGED_A = CHANGED_A ^ 0b11  # 2 bits from CHANGED_A
OK = Answer(200)


class Stores:
    """One namespace's stores (``url``) and the crawls made over them."""

    def __init__(
        self,
        url: str,
        *,
        hosts: tuple[str, ...] = (),
        rules: tuple[str, ...] = (),
        namespace: str = "naming",
    ) -> None:
        self.url, self.namespace = url, namespace
        self.hosts, self.rules = hosts, rules
        self.index = Guarded(
            "test index",
            "test://",
            lambda: open_async_index(url, namespace=namespace, max_distance=3),
            timeout=5.0,
            retry_after=60.0,
            log_interval=60.0,
        )
        self.recrawl = Guarded(
            "test recrawl store",
            "test://",
            self._open_recrawl,
            timeout=5.0,
            retry_after=60.0,
            log_interval=60.0,
        )
        self.step = self.crawl()

    async def _open_recrawl(self) -> Any:
        return await open_async_recrawl_store(
            self.url, namespace=self.namespace, config=RecrawlConfig()
        )

    def crawl(self) -> VerdictStep:
        """A new crawl (or another process) over the same stores: nothing in memory."""
        self.step = VerdictStep(
            self.index,
            self.recrawl,
            bits=64,
            change_distance=3,
            prefer_urls=self.rules,
            prefer_hosts=self.hosts,
        )
        return self.step

    async def page(self, url: str, fingerprint: int, step: VerdictStep | None = None) -> Verdict:
        """A page fetched from ``url`` that names no canonical URL."""
        return await (step or self.step).page(url, url, fingerprint, OK)

    async def call(self, method: str, *args: Any) -> Any:
        return await self.index.call(lambda index: getattr(index, method)(*args))

    async def state(self, url: str) -> Any:
        return await self.recrawl.call(lambda store: store.get(url))

    async def close(self) -> None:
        await self.index.aclose()
        await self.recrawl.aclose()


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(coroutine)  # type: ignore[arg-type]
