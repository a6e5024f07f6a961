"""The asyncio face of a blocking recrawl backend: the storage registry wraps a backend
that has no asyncio implementation of its own in it."""

from __future__ import annotations

from collections.abc import Callable

from scrapy_simhash._runners import Runner, ThreadFace
from scrapy_simhash.recrawl.backend import Backend
from scrapy_simhash.recrawl.state import PageState


class AsyncBackendAdapter(ThreadFace):
    """The asyncio face of a blocking backend (see
    :class:`~scrapy_simhash._runners.ThreadFace`: memory runs inline, SQLite inline while
    the file is free; claims, seeds and counts are its scans)."""

    def __init__(
        self, backend: Backend, *, run: Runner | None = None, scan: Runner | None = None
    ) -> None:
        super().__init__(run=run, scan=scan)
        self._backend = backend
        self.errors = backend.errors

    async def update(self, url: str, step: Callable[[PageState | None], PageState]) -> PageState:
        return await self._run(self._backend.update, url, step)

    async def get(self, url: str) -> PageState | None:
        return await self._run(self._backend.get, url)

    async def add(self, states: list[PageState]) -> int:
        return await self._scan(self._backend.add, states)

    async def claim(
        self, now: float, limit: int, lease_until: float
    ) -> list[tuple[PageState, float]]:
        return await self._scan(self._backend.claim, now, limit, lease_until)

    async def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        return await self._scan(self._backend.due, until, limit)

    async def remove(self, url: str) -> bool:
        return await self._run(self._backend.remove, url)

    async def count(self) -> int:
        return await self._scan(self._backend.count)

    async def clear(self) -> None:
        await self._scan(self._backend.clear)

    async def rate_histogram(self) -> dict[int, int]:
        return await self._scan(self._backend.rate_histogram)

    async def close(self) -> None:
        await self._close(self._backend.close)
