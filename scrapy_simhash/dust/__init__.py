"""Learning URL rules from the copies a crawl finds, to skip fetching more copies (DUST).

Pure core (no Scrapy): :mod:`.rules` (what a rule is, learning one from a pair, rewriting a
URL), :mod:`.store` (the namespace's shared rule store, every backend) and :mod:`.book`
(which rules a process trusts, checks in flight, requests to queue again). The Scrapy glue
is ``scrapy_simhash.glue.dust``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from scrapy_simhash.dust.book import Check, RuleBook
from scrapy_simhash.dust.rules import Rule, host_of, learn, rewrites
from scrapy_simhash.dust.store import RuleState, RuleStore, open_rule_store

__all__ = [
    "AsyncRuleStore",
    "Check",
    "Rule",
    "RuleBook",
    "RuleState",
    "RuleStore",
    "host_of",
    "learn",
    "open_rule_store",
    "rewrites",
]

T = TypeVar("T")


class AsyncRuleStore:
    """A blocking rule store run on one thread of its own, opened there on first use.

    Rule store calls are rare (one per learned pair, a listing every refresh), so a thread
    serves every backend alike without a second, asyncio, implementation of each.
    """

    def __init__(self, opener: Callable[[], RuleStore]) -> None:
        self._opener = opener
        self._store: RuleStore | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="simhash-rules")

    def _with_store(self, func: Callable[[RuleStore], T]) -> T:
        if self._store is None:
            self._store = self._opener()
        return func(self._store)

    async def _call(self, func: Callable[[RuleStore], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._with_store, func)

    async def support(self, host: str, rule: str, copy: str, kept: str) -> int:
        return await self._call(lambda store: store.support(host, rule, copy, kept))

    async def passed(self, host: str, rule: str, url: str, kept: str) -> int:
        return await self._call(lambda store: store.passed(host, rule, url, kept))

    async def kill(self, host: str, rule: str, example: str) -> None:
        await self._call(lambda store: store.kill(host, rule, example))

    async def rules(self) -> list[RuleState]:
        return await self._call(lambda store: store.rules())

    def rules_now(self, timeout_secs: float) -> list[RuleState]:
        """:meth:`rules`, blocking the caller at most ``timeout_secs`` (TimeoutError), for a
        caller that cannot await: the spider_idle handler."""
        def read(store: RuleStore) -> list[RuleState]:
            return store.rules()

        future = self._pool.submit(self._with_store, read)
        states: list[RuleState] = future.result(timeout_secs)
        return states

    async def aclose(self) -> None:
        def close(_: Any = None) -> None:
            if self._store is not None:
                self._store.close()
                self._store = None

        await asyncio.get_running_loop().run_in_executor(self._pool, close)
        self._pool.shutdown(wait=False)
