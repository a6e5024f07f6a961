"""In-process recrawl store (``memory://``): for tests, the simulator and one-off runs."""

from __future__ import annotations

import heapq
import threading
from collections import Counter

from scrapy_simhash.recrawl.backend import Step, rate_bucket
from scrapy_simhash.recrawl.state import PageState


class MemoryBackend:
    """Dictionaries behind a lock; nothing survives the process."""

    errors: tuple[type[BaseException], ...] = ()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, PageState] = {}
        self._queue: dict[str, float] = {}
        self._histogram: Counter[int] = Counter()

    def update(self, url: str, step: Step) -> PageState:
        with self._lock:
            old = self._states.get(url)
            new = step(old)
            self._count(old, -1)
            self._count(new, 1)
            self._states[url] = new
            self._queue[url] = new.next_due
            return new

    def _count(self, state: PageState | None, delta: int) -> None:
        bucket = None if state is None else rate_bucket(state.rate)
        if bucket is not None:
            self._histogram[bucket] += delta
            if self._histogram[bucket] <= 0:
                del self._histogram[bucket]

    def get(self, url: str) -> PageState | None:
        return self._states.get(url)

    def add(self, states: list[PageState]) -> int:
        added = 0
        with self._lock:
            for state in states:
                if state.url not in self._states:
                    self._states[state.url] = state
                    self._queue[state.url] = state.next_due
                    self._count(state, 1)
                    added += 1
        return added

    def _due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        ready = ((due, url) for url, due in self._queue.items() if due <= until)
        return [(self._states[url], due) for due, url in heapq.nsmallest(limit, ready)]

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        with self._lock:
            claimed = self._due(now, limit)
            for state, _ in claimed:
                self._queue[state.url] = lease_until
            return claimed

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        with self._lock:
            return self._due(until, limit)

    def remove(self, url: str) -> bool:
        with self._lock:
            state = self._states.pop(url, None)
            self._queue.pop(url, None)
            self._count(state, -1)
            return state is not None

    def count(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        with self._lock:
            self._states.clear()
            self._queue.clear()
            self._histogram.clear()

    def rate_histogram(self) -> dict[int, int]:
        with self._lock:
            return dict(self._histogram)

    def close(self) -> None:
        """Nothing to release."""
