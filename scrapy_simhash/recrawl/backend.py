"""What a recrawl store needs from its storage, and helpers shared by the backends.

A backend keeps one :class:`PageState` per URL plus a due queue (URL -> time it is next
handed out). Its one non-trivial duty is atomicity: ``update`` must read, transform and
write a page as one step, and ``claim`` must lease due URLs so two crawler processes never
get the same URL while its lease runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from scrapy_simhash.recrawl.state import PageState

#: Resolution of the rate histogram the budget policy solves over (buckets per decade).
BUCKETS_PER_DECADE = 20

Step = Callable[[PageState | None], PageState]


def rate_bucket(rate: float) -> int | None:
    """Return the histogram bucket of a change rate (None for a page never estimated)."""
    if rate <= 0 or not math.isfinite(rate):
        return None
    return round(math.log10(rate) * BUCKETS_PER_DECADE)


def bucket_rate(bucket: int) -> float:
    """Return the representative rate of a histogram bucket."""
    return float(10.0 ** (bucket / BUCKETS_PER_DECADE))


def histogram_rates(histogram: dict[int, int]) -> Iterable[tuple[float, float]]:
    """Turn a bucket histogram into ``(rate, count)`` pairs for the budget solver."""
    return ((bucket_rate(b), float(n)) for b, n in histogram.items() if n > 0)


def queue_ms(when: float) -> int | float:
    """A queue time as whole milliseconds; queue times and "now" round alike, so a URL is
    due when its time comes (up to half a millisecond before).

    Why: a whole number is stored smaller by both storages (a Redis listpack keeps it as
    an integer, not as text that each insertion parses again for every member; SQLite in
    6 bytes, not 8), and leases and updates stay cheap."""
    return round(when * 1000) if math.isfinite(when) else when  # retired: never


def queue_seconds(stored_ms: Any) -> float:
    return float(stored_ms) / 1000


class Backend(Protocol):
    """Blocking storage of page states and the due queue for one namespace."""

    #: Exception types that mean "the storage failed" (wrapped in IndexBackendError).
    errors: tuple[type[BaseException], ...]

    def update(self, url: str, step: Step) -> PageState:
        """Atomically replace the state of ``url`` by ``step(old)`` and requeue it."""

    def get(self, url: str) -> PageState | None:
        """Return the stored state of ``url``."""

    def add(self, states: list[PageState]) -> int:
        """Insert states whose URL is not stored yet; return how many were new."""

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        """Lease up to ``limit`` URLs due by ``now``, earliest first, until ``lease_until``."""

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        """Return up to ``limit`` URLs due by ``until`` with their queue time, no lease."""

    def remove(self, url: str) -> bool:
        """Forget ``url``; return whether it was stored."""

    def count(self) -> int:
        """Return how many URLs are stored."""

    def clear(self) -> None:
        """Forget every URL of the namespace."""

    def rate_histogram(self) -> dict[int, int]:
        """Return page counts per rate bucket."""

    def close(self) -> None:
        """Release connections and files."""


class AsyncBackend(Protocol):
    """The same contract as :class:`Backend` with coroutines."""

    errors: tuple[type[BaseException], ...]

    async def update(self, url: str, step: Step) -> PageState: ...
    async def get(self, url: str) -> PageState | None: ...
    async def add(self, states: list[PageState]) -> int: ...
    async def claim(
        self, now: float, limit: int, lease_until: float
    ) -> list[tuple[PageState, float]]: ...
    async def due(self, until: float, limit: int) -> list[tuple[PageState, float]]: ...
    async def remove(self, url: str) -> bool: ...
    async def count(self) -> int: ...
    async def clear(self) -> None: ...
    async def rate_histogram(self) -> dict[int, int]: ...
    async def close(self) -> None: ...
