"""Helpers for the index tests: one blocking face over sync and async indexes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from scrapy_simhash.index import AsyncNearDuplicateIndex, open_async_index, open_index


class Clock:
    """An injected clock the tests move by hand (tests never sleep)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class BlockingAsync:
    """Drive an async index from a private event loop, so one test body serves both faces."""

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self.index: AsyncNearDuplicateIndex = self._loop.run_until_complete(
                open_async_index(url, **kwargs)
            )
        except BaseException:
            self._loop.close()
            raise
        self.layout = self.index.layout

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.index, name)

        def call(*args: Any) -> Any:
            return self._loop.run_until_complete(method(*args))

        return call

    def __len__(self) -> int:
        return int(self._loop.run_until_complete(self.index.count()))

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self.index.close())
            self._loop.close()


def opener(url: str, asynchronous: bool) -> Callable[..., Any]:
    def open_(**kwargs: Any) -> Any:
        if asynchronous:
            return BlockingAsync(url, kwargs)
        return open_index(url, **kwargs)

    return open_


def flip(fingerprint: int, *positions: int) -> int:
    """``fingerprint`` with the bits at ``positions`` inverted."""
    for position in positions:
        fingerprint ^= 1 << position
    return fingerprint


def at_distance(rng: random.Random, fingerprint: int, distance: int, bits: int = 64) -> int:
    return flip(fingerprint, *rng.sample(range(bits), distance))
