"""The recrawl store: per-URL change history, next visit times and a due queue.

``open_recrawl_store`` / ``open_async_recrawl_store`` (a coroutine, which opens off the
event loop) choose a backend from the same URL as
the near-duplicate index (so one SQLite file or one Redis holds both), wrap storage errors
in :class:`IndexBackendError` with the password masked, and apply the scheduling rules of
:func:`scrapy_simhash.recrawl.state.advance` atomically per URL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy_simhash._redact import scrub
from scrapy_simhash._redis import mask_url
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
from scrapy_simhash.recrawl.backend import AsyncBackend, Backend, histogram_rates
from scrapy_simhash.recrawl.config import DAY, RecrawlConfig
from scrapy_simhash.recrawl.policy import solve_multiplier
from scrapy_simhash.recrawl.state import Fetch, PageState, Visit, advance
from scrapy_simhash.recrawl.threaded import AsyncBackendAdapter
from scrapy_simhash.storage import extend_storage, storage_for

if TYPE_CHECKING:
    from typing import Self

logger = logging.getLogger(__name__)

T = TypeVar("T")
Clock = Callable[[], float]
SyncFactory = Callable[[str | None, str], Backend]
AsyncFactory = Callable[[str | None, str], AsyncBackend]


@dataclass(frozen=True)
class DueUrl:
    """A URL handed out for fetching, with the validators for a conditional request."""

    url: str
    due: float
    etag: str | None
    last_modified: str | None
    visits: int


def register_backend(
    scheme: str, factory: SyncFactory, async_factory: AsyncFactory | None = None
) -> None:
    """Register backend factories ``(url, namespace) -> backend`` for a URL scheme.

    Without an async factory the blocking backend runs in a worker thread.
    """

    def sync(url: str | None, namespace: str, **_sizing: Any) -> Backend:
        return factory(url, namespace)

    def asyncio_(url: str | None, namespace: str, **_sizing: Any) -> AsyncBackend:
        assert async_factory is not None
        return async_factory(url, namespace)

    extend_storage(scheme, recrawl=sync, async_recrawl=asyncio_ if async_factory else None)


def _wrap(url: str | None, exc: BaseException) -> IndexBackendError:
    where = mask_url(url) if url else "the embedded SQLite store"
    # The message of a backend error may repeat the URL, password included.
    detail = scrub(str(exc), url)
    return IndexBackendError(f"recrawl store {where} failed: {type(exc).__name__}: {detail}")


def _page_due(pairs: Iterable[tuple[PageState, float]]) -> list[DueUrl]:
    return [DueUrl(s.url, due, s.etag, s.last_modified, s.visits) for s, due in pairs]


class _Scheduler:
    """Rules shared by the sync and async stores: time, leases and the budget multiplier."""

    def __init__(self, url: str | None, namespace: str, config: RecrawlConfig, clock: Clock):
        self.url = url
        self.namespace = namespace
        self.config = config
        self.clock = clock
        self._multiplier: float | None = None
        self._solved_at = float("-inf")

    def needs_multiplier(self, now: float) -> bool:
        return (
            self.config.schedule.uses_budget and now - self._solved_at >= self.config.rebalance_secs
        )

    def solve(self, histogram: dict[int, int], now: float) -> None:
        """Re-solve the budget's Lagrange multiplier over the current rate histogram."""
        budget = self.config.budget_per_day / DAY
        self._multiplier = solve_multiplier(histogram_rates(histogram), budget)
        self._solved_at = now
        logger.debug(
            "recrawl budget %.1f/day over %d pages: multiplier %.3g",
            self.config.budget_per_day,
            sum(histogram.values()),
            self._multiplier,
        )

    def step(
        self, url: str, fetch: Fetch, now: float
    ) -> tuple[Callable[[PageState | None], PageState], list[Visit]]:
        visits: list[Visit] = []

        def apply(old: PageState | None) -> PageState:
            # May run more than once (optimistic retries): keep only the last outcome.
            new, visit = advance(old, url, fetch, now, self.config, self._multiplier)
            visits[:] = [visit]
            return new

        return apply, visits

    def lease(self, lease_secs: float | None) -> tuple[float, float]:
        """Return now and the end of a lease starting now."""
        now = self.clock()
        return now, now + (self.config.lease_secs if lease_secs is None else lease_secs)

    def split_expired(
        self, claimed: list[tuple[PageState, float]], now: float
    ) -> tuple[list[tuple[PageState, float]], list[str]]:
        """Separate claimed URLs not fetched for ``expire_after_secs`` (to forget) from the rest."""
        expiry = self.config.expire_after_secs
        if not expiry:
            return claimed, []
        keep, expired = [], []
        for state, due in claimed:
            seen = state.last_fetch if state.last_fetch is not None else state.next_due
            if now - seen >= expiry:
                expired.append(state.url)
            else:
                keep.append((state, due))
        if expired:
            logger.debug("recrawl: %d URL(s) not fetched for %.0fs forgotten", len(expired), expiry)
        return keep, expired

    def seeds(self, urls: Iterable[str], due: float | None) -> list[PageState]:
        when = self.clock() if due is None else due
        return [PageState(url=u, next_due=when) for u in urls]


class _Adoption:
    """The step of :meth:`RecrawlStore.adopt`: ``new`` keeps a state of its own, else takes
    ``state`` (the other URL's) under its name. Atomic per URL, as every update is."""

    def __init__(self, state: PageState, new: str) -> None:
        self.state = replace(state, url=new)
        self.moved = False

    def step(self, current: PageState | None) -> PageState:
        # May run more than once (optimistic retries): keep only the last outcome.
        self.moved = current is None
        return self.state if current is None else current


class _StoreFace:
    """What the blocking and asyncio stores share: their scheduling rules and the names
    they answer to (one definition, so the two faces cannot drift)."""

    _backend: Any

    def __init__(
        self,
        backend: Any,
        *,
        url: str | None,
        namespace: str,
        config: RecrawlConfig,
        clock: Clock = time.time,
    ) -> None:
        self._backend = backend
        self._rules = _Scheduler(url, namespace, config, clock)

    @property
    def config(self) -> RecrawlConfig:
        return self._rules.config

    @property
    def url(self) -> str | None:
        """The store URL (None: the embedded SQLite default)."""
        return self._rules.url

    @property
    def namespace(self) -> str:
        return self._rules.namespace


class RecrawlStore(_StoreFace):
    """Blocking recrawl store (command line, simulator, scripts)."""

    _backend: Backend

    def _call(self, func: Callable[..., T], *args: Any) -> T:
        try:
            return func(*args)
        except self._backend.errors as exc:
            raise _wrap(self._rules.url, exc) from exc

    def observe(
        self,
        url: str,
        fingerprint: int | None,
        *,
        status: int = 200,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> Visit:
        """Record a fetch of ``url``; return whether it changed and when to come back."""
        now = self._rules.clock()
        if self._rules.needs_multiplier(now):
            self._rules.solve(self._call(self._backend.rate_histogram), now)
        step, visits = self._rules.step(url, Fetch(fingerprint, status, etag, last_modified), now)
        self._call(self._backend.update, url, step)
        return visits[-1]

    def add(self, urls: Iterable[str], *, due: float | None = None) -> int:
        """Queue URLs never seen before (due now unless ``due`` says otherwise)."""
        return self._call(self._backend.add, self._rules.seeds(urls, due))

    def claim_due(
        self, limit: int, *, lease_secs: float | None = None, within: float = 0.0
    ) -> list[DueUrl]:
        """Lease up to ``limit`` URLs due now (or within ``within`` seconds), earliest first.

        A leased URL is handed out again when the lease expires unless ``observe`` has
        recorded its fetch first. With ``expire_after_secs``, a due URL not fetched for that
        long is forgotten instead of handed out (so a batch may hold fewer than ``limit``).
        """
        now, lease_until = self._rules.lease(lease_secs)
        claimed = self._call(self._backend.claim, now + within, limit, lease_until)
        live, expired = self._rules.split_expired(claimed, now)
        for url in expired:
            self._call(self._backend.remove, url)
        return _page_due(live)

    def due(self, *, within: float = 0.0, limit: int = 1000) -> list[DueUrl]:
        """List URLs due within ``within`` seconds, earliest first, without leasing them."""
        return _page_due(self.scheduled(within=within, limit=limit))

    def scheduled(self, *, within: float = 0.0, limit: int = 1000) -> list[tuple[PageState, float]]:
        """As :meth:`due`, each URL's whole state with its due time (what reports read)."""
        return self._call(self._backend.due, self._rules.clock() + within, limit)

    def get(self, url: str) -> PageState | None:
        """Return everything known about ``url``."""
        return self._call(self._backend.get, url)

    def remove(self, url: str) -> bool:
        """Forget ``url``."""
        return self._call(self._backend.remove, url)

    def adopt(self, old: str, new: str) -> bool:
        """Give ``new`` the history of ``old`` (its page is named by ``new`` now) unless
        ``new`` has one of its own, and forget ``old``; tell whether the history moved."""
        state = self._call(self._backend.get, old) if old != new else None
        if state is None:
            return False
        moved = _Adoption(state, new)
        if self._call(self._backend.get, new) is None:  # else left as it is, not requeued
            self._call(self._backend.update, new, moved.step)
        self._call(self._backend.remove, old)
        return moved.moved

    def count(self) -> int:
        """Return how many URLs the namespace holds."""
        return self._call(self._backend.count)

    __len__ = count

    def rate_histogram(self) -> dict[int, int]:
        """Pages per change-rate bucket (:func:`~.backend.bucket_rate` gives the rate per
        second; pages never estimated are left out): what reports draw."""
        return self._call(self._backend.rate_histogram)

    def clear(self) -> None:
        """Forget every URL of the namespace."""
        self._call(self._backend.clear)

    def close(self) -> None:
        """Release the storage."""
        self._call(self._backend.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncRecrawlStore(_StoreFace):
    """The same store for asyncio code (the Scrapy middleware and spider mixin)."""

    _backend: AsyncBackend

    async def _call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        try:
            return await func(*args)
        except self._backend.errors as exc:
            raise _wrap(self._rules.url, exc) from exc

    async def observe(
        self,
        url: str,
        fingerprint: int | None,
        *,
        status: int = 200,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> Visit:
        """Record a fetch of ``url``; return whether it changed and when to come back."""
        now = self._rules.clock()
        if self._rules.needs_multiplier(now):
            self._rules.solve(await self._call(self._backend.rate_histogram), now)
        step, visits = self._rules.step(url, Fetch(fingerprint, status, etag, last_modified), now)
        await self._call(self._backend.update, url, step)
        return visits[-1]

    async def add(self, urls: Iterable[str], *, due: float | None = None) -> int:
        """Queue URLs never seen before (due now unless ``due`` says otherwise)."""
        return await self._call(self._backend.add, self._rules.seeds(urls, due))

    async def claim_due(
        self, limit: int, *, lease_secs: float | None = None, within: float = 0.0
    ) -> list[DueUrl]:
        """Lease up to ``limit`` URLs due now (or within ``within`` seconds), earliest first."""
        now, lease_until = self._rules.lease(lease_secs)
        claimed = await self._call(self._backend.claim, now + within, limit, lease_until)
        live, expired = self._rules.split_expired(claimed, now)
        for url in expired:
            await self._call(self._backend.remove, url)
        return _page_due(live)

    async def due(self, *, within: float = 0.0, limit: int = 1000) -> list[DueUrl]:
        """List URLs due within ``within`` seconds, earliest first, without leasing them."""
        return _page_due(await self.scheduled(within=within, limit=limit))

    async def scheduled(
        self, *, within: float = 0.0, limit: int = 1000
    ) -> list[tuple[PageState, float]]:
        """As :meth:`due`, each URL's whole state with its due time (what reports read)."""
        return await self._call(self._backend.due, self._rules.clock() + within, limit)

    async def get(self, url: str) -> PageState | None:
        """Return everything known about ``url``."""
        return await self._call(self._backend.get, url)

    async def remove(self, url: str) -> bool:
        """Forget ``url``."""
        return await self._call(self._backend.remove, url)

    async def adopt(self, old: str, new: str) -> bool:
        """See :meth:`RecrawlStore.adopt`."""
        state = await self._call(self._backend.get, old) if old != new else None
        if state is None:
            return False
        moved = _Adoption(state, new)
        if await self._call(self._backend.get, new) is None:  # else left as it is
            await self._call(self._backend.update, new, moved.step)
        await self._call(self._backend.remove, old)
        return moved.moved

    async def count(self) -> int:
        """Return how many URLs the namespace holds."""
        return await self._call(self._backend.count)

    async def rate_histogram(self) -> dict[int, int]:
        """Pages per change-rate bucket (:func:`~.backend.bucket_rate` gives the rate per
        second; pages never estimated are left out): what reports draw."""
        return await self._call(self._backend.rate_histogram)

    async def clear(self) -> None:
        """Forget every URL of the namespace."""
        await self._call(self._backend.clear)

    async def close(self) -> None:
        """Release the storage."""
        await self._call(self._backend.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _open_backend(
    url: str | None, namespace: str, config: RecrawlConfig, options: Mapping[str, Any] | None
) -> Backend:
    opener = storage_for(url, "recrawl").recrawl
    assert opener is not None  # storage_for checked it
    return cast(Backend, _opened(opener, url, namespace, config, options))


def _opened(
    opener: Callable[..., Any],
    url: str | None,
    namespace: str,
    config: RecrawlConfig,
    options: Mapping[str, Any] | None,
) -> Any:
    """``opener(...)``, its failures said as recrawl store errors (without a password)."""
    try:
        return opener(
            url,
            namespace,
            shards=config.shards,
            expected_pages=config.expected_pages,
            options=dict(options or {}),
        )
    except (ConfigurationError, IndexBackendError):
        raise
    except Exception as exc:
        raise _wrap(url, exc) from exc


def open_recrawl_store(
    url: str | None = None,
    *,
    namespace: str = "default",
    config: RecrawlConfig | None = None,
    clock: Clock = time.time,
    options: Mapping[str, Any] | None = None,
) -> RecrawlStore:
    """Open the blocking store at ``url`` (None: embedded SQLite, as the index).
    ``options``: the storage's client options, the index's ``options``."""
    config = config or RecrawlConfig()
    backend = _open_backend(url, namespace, config, options)
    return RecrawlStore(backend, url=url, namespace=namespace, config=config, clock=clock)


def _open_async(
    url: str | None,
    namespace: str,
    config: RecrawlConfig,
    clock: Clock,
    options: Mapping[str, Any] | None,
) -> AsyncRecrawlStore:
    opener = storage_for(url, "recrawl").async_recrawl
    backend: AsyncBackend
    if opener is None:
        backend = AsyncBackendAdapter(_open_backend(url, namespace, config, options))
    else:
        backend = _opened(opener, url, namespace, config, options)
    return AsyncRecrawlStore(backend, url=url, namespace=namespace, config=config, clock=clock)


async def open_async_recrawl_store(
    url: str | None = None,
    *,
    namespace: str = "default",
    config: RecrawlConfig | None = None,
    clock: Clock = time.time,
    options: Mapping[str, Any] | None = None,
) -> AsyncRecrawlStore:
    """Open the asyncio store at ``url``, off the event loop (in a worker thread), as the
    index opens: opening the SQLite file may wait for another process's write lock, and
    a Redis namespace's shard count is read with a blocking call, while the loop must run
    the crawl meanwhile. Redis clients bind to the loop on first use. ``options``: the
    storage's client options, the index's ``options``."""
    return await asyncio.to_thread(
        _open_async, url, namespace, config or RecrawlConfig(), clock, options
    )
