"""Helpers for the index and store tests: one blocking face over sync and async ones."""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_simhash.index import AsyncNearDuplicateIndex, open_async_index, open_index

if TYPE_CHECKING:
    from typing import Self


class Blocking:
    """Drive an asyncio store or index from a private event loop, so one test body serves
    both faces: every coroutine a method returns is run to its end."""

    def __init__(self, open_: Callable[[], Any]) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            opened = open_()
            if inspect.isawaitable(opened):
                opened = self._loop.run_until_complete(opened)
        except BaseException:
            self._loop.close()
            raise
        self.wrapped = opened

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.wrapped, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            return self._loop.run_until_complete(result) if inspect.isawaitable(result) else result

        return call

    def __len__(self) -> int:
        return int(self._loop.run_until_complete(self.wrapped.count()))

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self.wrapped.close())
            # Tasks a call left behind (a gather whose first part failed) end here, in
            # their own loop, not in a later test's after this loop is gone.
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class BlockingAsync(Blocking):
    """An async index opened at ``url`` with ``kwargs``, driven as a blocking one."""

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        super().__init__(lambda: open_async_index(url, **kwargs))
        self.index: AsyncNearDuplicateIndex = self.wrapped


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
