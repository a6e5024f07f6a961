"""Where the calls of a blocking store run when the crawl awaits them.

A store that never blocks (memory) is called inline; one that may wait on the disk or the
network runs in a worker thread; the embedded SQLite file runs inline until it would wait
(:meth:`scrapy_simhash._sqlite.SharedConnection.run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Runner(Protocol):
    """``await run(func, *args)`` returns ``func(*args)``, run where the runner decides."""

    def __call__(self, func: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


async def inline(func: Callable[..., T], *args: Any) -> T:
    return func(*args)


in_thread: Runner = asyncio.to_thread
