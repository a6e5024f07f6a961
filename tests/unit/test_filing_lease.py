"""A page filed but not yet delivered: held in flight, renewed, settled, taken over.

Two crawl processes on one index, each a verdict step with its own filings: process A files
a page and is killed (nothing it would do afterwards happens) after each call it makes to
storage in turn; process B then fetches a copy, and the page must reach B's callback (A's
never ran). With A alive, B waits and then drops its copy, so the page is delivered once.
Time is an injected clock; B's waits move it (nothing sleeps).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.filings import Filings
from scrapy_simhash.glue.guard import Guarded
from scrapy_simhash.index import open_async_index
from scrapy_simhash.index.drops import FILED
from scrapy_simhash.recrawl import RecrawlConfig, open_async_recrawl_store
from scrapy_simhash.verdict import DUPLICATE, UNIQUE, Answer, VerdictStep
from tests.conftest import Clock, backend_params, backend_url

FP = 0x0123_4567_89AB_CDEF
COPY = FP ^ 0b101
LEASE = 1.0
ARTICLE = "https://news.example/article-12"
AMP = "https://news.example/amp/article-12"
PRINT = "https://news.example/print/article-12"


class Killed(BaseException):
    """The process died (SIGKILL): nothing after it runs, not even a ``finally`` that
    reaches storage."""


class Death:
    """Kills a process right after its ``after``-th storage call landed (0: never)."""

    def __init__(self, after: int = 0) -> None:
        self.after = after
        self.calls = 0

    def dead(self) -> bool:
        return bool(self.after) and self.calls >= self.after


class Mortal:
    """A guarded store as one process sees it: every call counted by its :class:`Death`."""

    def __init__(self, store: Any, death: Death) -> None:
        self.store = store
        self.death = death

    async def call(self, operation: Callable[[Any], Awaitable[Any]]) -> Any:
        if self.death.dead():
            raise Killed
        result = await self.store.call(operation)
        self.death.calls += 1
        if self.death.dead():
            raise Killed
        return result


def guard(opener: Callable[[], Awaitable[Any]]) -> Guarded[Any]:
    return Guarded(
        "test store", "test://", opener, timeout=5.0, retry_after=60.0, log_interval=60.0
    )


class Shared:
    """The index and recrawl store every process of the crawl shares."""

    def __init__(self, url: str, clock: Clock) -> None:
        self.clock = clock
        self.index = guard(
            lambda: open_async_index(
                url, namespace="lease", max_distance=3, scheme="lease-test", clock=clock
            )
        )
        self.recrawl = guard(lambda: self._recrawl(url))

    @staticmethod
    async def _recrawl(url: str) -> Any:
        return await open_async_recrawl_store(url, namespace="lease", config=RecrawlConfig())

    def process(
        self, death: Death | None = None, *, sleep: Callable[[float], Awaitable[None]] | None = None
    ) -> tuple[VerdictStep, Filings]:
        """One crawl process: its verdict step and the filings it holds."""
        death = death or Death()
        index, recrawl = Mortal(self.index, death), Mortal(self.recrawl, death)
        counts: dict[str, int] = {}

        def count(name: str) -> None:
            counts[name] = counts.get(name, 0) + 1

        filings = Filings(index, LEASE, count=count, sleep=sleep or self.wait)
        step = VerdictStep(index, recrawl, bits=64, change_distance=3, filings=filings, count=count)
        step.counts = counts  # type: ignore[attr-defined]
        return step, filings

    async def wait(self, secs: float) -> None:
        self.clock.now += secs

    async def close(self) -> None:
        await self.index.aclose()
        await self.recrawl.aclose()


async def judge(step: VerdictStep, filings: Filings, key: str, own: str, fp: int) -> Any:
    owner = filings.owner()
    verdict = await step.page(key, own, fp, Answer(200), owner=owner)
    return verdict, owner


@pytest.fixture(params=backend_params(("memory", "sqlite", "redis")))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def calls_of_one_page(url: str, key: str, own: str) -> int:
    """How many storage calls process A makes for one page before its callback runs."""

    async def go() -> int:
        shared = Shared(url, Clock())
        death = Death()
        step, filings = shared.process(death)
        _, owner = await judge(step, filings, key, own, FP)
        calls = death.calls
        await filings.delivered(owner)
        await shared.index.call(lambda index: index.clear())
        await shared.close()
        return calls

    return int(run(go()))


@pytest.mark.parametrize(
    ("key", "own", "copy"),
    [
        (ARTICLE, ARTICLE, AMP),  # a page under its own URL, a copy under another
        (ARTICLE, PRINT, ARTICLE),  # a page naming its canonical URL, then that URL itself
        (ARTICLE, PRINT, AMP),  # a page naming its canonical URL, then another copy
    ],
)
def test_a_page_filed_by_a_process_killed_at_any_step_reaches_a_callback(
    url: str, key: str, own: str, copy: str
) -> None:
    steps = calls_of_one_page(url, key, own)
    assert steps >= 2  # hold, file at least

    async def scene(after: int) -> None:
        clock = Clock()
        shared = Shared(url, clock)
        await shared.index.call(lambda index: index.clear())
        a, a_filings = shared.process(Death(after))

        async def a_lives() -> None:
            await judge(a, a_filings, key, own, FP)
            await a_filings.renew()  # its callback runs: the next call is its last

        with pytest.raises(Killed):
            await a_lives()
        b, b_filings = shared.process()
        verdict, b_owner = await judge(b, b_filings, copy, copy, COPY)
        assert verdict.outcome == UNIQUE, (after, verdict)
        await b_filings.delivered(b_owner)
        assert await shared.index.call(lambda index: index.in_flight(verdict.key)) is None
        # Once delivered, the page has its copies dropped again, by any process.
        c, c_filings = shared.process()
        again, _ = await judge(c, c_filings, AMP + "?utm=x", AMP + "?utm=x", COPY ^ 1 << 40)
        assert again.outcome == DUPLICATE, (after, again)
        await shared.close()

    # Killed after each call of the verdict; the last: while its callback holds the page.
    for after in range(1, steps + 1):
        run(scene(after))


def test_a_copy_waits_for_a_live_holder_and_is_dropped_once_it_delivers(url: str) -> None:
    async def scene() -> None:
        clock = Clock()
        shared = Shared(url, clock)
        a, a_filings = shared.process()
        first, a_owner = await judge(a, a_filings, ARTICLE, ARTICLE, FP)
        assert first.outcome == UNIQUE
        assert await shared.index.call(lambda index: index.in_flight(ARTICLE)) is not None
        waits: list[float] = []

        async def a_delivers_meanwhile(secs: float) -> None:  # B's wait
            waits.append(secs)
            clock.now += secs
            await a_filings.delivered(a_owner)

        b, b_filings = shared.process(sleep=a_delivers_meanwhile)
        verdict, _ = await judge(b, b_filings, AMP, AMP, COPY)
        assert verdict.outcome == DUPLICATE
        assert verdict.duplicate_of == ARTICLE
        assert len(waits) == 1
        assert b.counts == {"filing/deferred": 1}  # type: ignore[attr-defined]
        assert await shared.index.call(lambda index: index.in_flight(AMP)) is None
        await shared.close()

    run(scene())


def test_a_holder_that_renews_its_mark_is_never_taken_over(url: str) -> None:
    async def scene() -> None:
        clock = Clock()
        shared = Shared(url, clock)
        a, a_filings = shared.process()
        await judge(a, a_filings, ARTICLE, ARTICLE, FP)

        async def a_renews_meanwhile(secs: float) -> None:  # A's callback runs on
            clock.now += secs
            await a_filings.renew()

        b, b_filings = shared.process(sleep=a_renews_meanwhile)
        verdict, _ = await judge(b, b_filings, AMP, AMP, COPY)
        # Waited out (the holder is alive, so it delivers): dropped as before, not twice.
        assert verdict.outcome == DUPLICATE
        assert b.counts["filing/waited_out"] == 1  # type: ignore[attr-defined]
        assert "filing/taken_over" not in b.counts  # type: ignore[attr-defined]
        assert b_filings.held == {}
        await shared.close()

    run(scene())


def test_a_taken_page_is_filed_under_its_name_and_delivered_by_the_copy(url: str) -> None:
    async def scene() -> None:
        clock = Clock()
        shared = Shared(url, clock)
        a, a_filings = shared.process()
        await judge(a, a_filings, ARTICLE, PRINT, FP)  # A never delivers
        clock.now += 2 * LEASE
        b, b_filings = shared.process()
        verdict, b_owner = await judge(b, b_filings, AMP, AMP, COPY)
        assert verdict.outcome == UNIQUE
        assert verdict.key == ARTICLE
        assert b.counts == {"filing/taken_over": 1}  # type: ignore[attr-defined]
        drop_of = lambda url: shared.index.call(lambda index: index.drop_of(url))
        assert (await drop_of(AMP)).distance == FILED  # AMP reached the spider
        assert await drop_of(PRINT) is None  # PRINT never did
        assert (await shared.index.call(lambda index: index.in_flight(ARTICLE)))[0] == b_owner
        await b_filings.delivered(b_owner)
        assert await shared.index.call(lambda index: index.in_flight(ARTICLE)) is None
        await shared.close()

    run(scene())


def test_without_an_owner_a_page_is_filed_for_good(url: str) -> None:
    async def scene() -> None:
        shared = Shared(url, Clock())
        a, _ = shared.process()
        assert (await a.page(ARTICLE, ARTICLE, FP, Answer(200))).outcome == UNIQUE
        assert await shared.index.call(lambda index: index.in_flight(ARTICLE)) is None
        b, b_filings = shared.process()
        verdict, _ = await judge(b, b_filings, AMP, AMP, COPY)
        assert verdict.outcome == DUPLICATE
        await shared.close()

    run(scene())
