"""Where the calls of a blocking store run when the crawl awaits them.

A store that never blocks (memory) is called inline; one that may wait on the disk or the
network runs in a worker thread; the embedded SQLite file runs inline until it would wait
(:meth:`scrapy_simhash._sqlite.SharedConnection.run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")


class Runner(Protocol):
    """``await run(func, *args)`` returns ``func(*args)``, run where the runner decides."""

    def __call__(self, func: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


async def inline(func: Callable[..., T], *args: Any) -> T:
    return func(*args)


in_thread: Runner = asyncio.to_thread


class ThreadFace:
    """What the asyncio face of a blocking store does, once for the index and the recrawl
    store: each call of one page runs where ``run`` says, by default on one worker thread
    of the face's own (the loop never waits on the disk or the network, and a store that is
    not thread-safe is only ever called from that thread); calls over a whole namespace
    (counts, claims, purges) where ``scan`` says, by default where ``run`` does; closing
    runs in a thread whatever the runner, as it may checkpoint a file and sync the disk."""

    def __init__(self, *, run: Runner | None = None, scan: Runner | None = None) -> None:
        self._executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="simhash-store")
            if run is None
            else None
        )
        self._run: Runner = run or self._in_own_thread
        self._scan: Runner = scan or self._run

    async def _in_own_thread(self, func: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, func, *args)  # None: default pool

    async def _close(self, close: Callable[[], None]) -> None:
        try:
            await self._in_own_thread(close)
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=False)


S = TypeVar("S", bound="Closable")


class Closable(Protocol):
    def close(self) -> None: ...


class StoreThread(Generic[S]):
    """A blocking store used from asyncio, on one thread of its own, opened there on first
    use: for stores called rarely (the URL rules, the hosts' template memory), a thread
    serves every backend alike without a second, asyncio, implementation of each, and the
    one thread keeps their connections to the thread that made them.

    A store whose ``runner`` is set says where its calls run instead once it is open: one
    on the embedded SQLite file runs them as the index does, inline until they would wait
    (a hop to a thread and back costs more than the call, and a call in this thread held
    the file's lock, so that the index's calls met it and queued behind in theirs)."""

    def __init__(self, opener: Callable[[], S], name: str) -> None:
        self._opener = opener
        self._store: S | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)

    def _with_store(self, func: Callable[[S], T]) -> T:
        if self._store is None:
            self._store = self._opener()
        return func(self._store)

    async def call(self, func: Callable[[S], T]) -> T:
        """``func(store)`` where the open store's ``runner`` says, else in its thread."""
        runner: Runner | None = getattr(self._store, "runner", None)
        if runner is not None:
            return await runner(func, self._store)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._with_store, func)

    def call_now(self, func: Callable[[S], T], timeout_secs: float) -> T:
        """``func(store)``, blocking the caller at most ``timeout_secs`` (TimeoutError), for
        a caller that cannot await."""
        return self._pool.submit(self._with_store, func).result(timeout_secs)

    async def aclose(self) -> None:
        def close(_: Any = None) -> None:
            if self._store is not None:
                self._store.close()
                self._store = None

        await asyncio.get_running_loop().run_in_executor(self._pool, close)
        self._pool.shutdown(wait=False)

    async def close(self) -> None:
        """:meth:`aclose`, by the name a guard (``glue.guard.Guarded``) closes what it holds."""
        await self.aclose()
