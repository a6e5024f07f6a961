"""Learning URL rules from the copies a crawl finds, to skip fetching more copies (DUST).

Pure core (no Scrapy): :mod:`.rules` (what a rule is, learning one from a pair, rewriting a
URL), :mod:`.store` (the namespace's shared rule store, every backend) and :mod:`.book`
(which rules a process trusts, checks in flight, requests to queue again). The Scrapy glue
is ``scrapy_simhash.glue.dust``.
"""

from __future__ import annotations

from collections.abc import Callable

from scrapy_simhash._runners import StoreThread
from scrapy_simhash.dust.book import Check, RuleBook
from scrapy_simhash.dust.rules import Rule, learn, rewrites, rule_netloc
from scrapy_simhash.dust.store import RuleState, RuleStore
from scrapy_simhash.storage import open_rule_store

__all__ = [
    "AsyncRuleStore",
    "Check",
    "Rule",
    "RuleBook",
    "RuleState",
    "RuleStore",
    "learn",
    "open_rule_store",
    "rewrites",
    "rule_netloc",
]


class AsyncRuleStore:
    """A blocking rule store run on one thread of its own, opened there on first use (rule
    store calls are rare: one per learned pair, a listing every refresh); on the embedded
    file, its calls then run as the index's do (:class:`~scrapy_simhash._runners.StoreThread`).
    """

    def __init__(self, opener: Callable[[], RuleStore]) -> None:
        self._thread = StoreThread(opener, "simhash-rules")
        self._call = self._thread.call

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
        return self._thread.call_now(lambda store: store.rules(), timeout_secs)

    async def aclose(self) -> None:
        await self._thread.aclose()

    async def close(self) -> None:
        """:meth:`aclose`, by the name a guard (``glue.guard.Guarded``) closes what it holds."""
        await self.aclose()
