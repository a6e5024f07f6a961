"""The asyncio face of a blocking index: the storage registry wraps an index that has no
asyncio implementation of its own in it."""

from __future__ import annotations

from scrapy_simhash._runners import Runner, ThreadFace
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
)
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.facade import Face


class AsyncIndexAdapter(Face, ThreadFace, AsyncNearDuplicateIndex):
    """Coroutine face of a blocking index (see :class:`~scrapy_simhash._runners.ThreadFace`
    for ``run`` and ``scan``)."""

    def __init__(
        self, index: NearDuplicateIndex, *, run: Runner | None = None, scan: Runner | None = None
    ) -> None:
        ThreadFace.__init__(self, run=run, scan=scan)
        Face.__init__(self, index)
        self.sync = index

    async def observe(self, key: str, fingerprint: int) -> Observation:
        return await self._run(self.sync.observe, key, fingerprint)

    async def claim(self, key: str, fingerprint: int) -> Observation:
        return await self._run(self.sync.claim, key, fingerprint)

    async def query(self, fingerprint: int) -> list[Match]:
        return await self._run(self.sync.query, fingerprint)

    async def rename(self, old: str, new: str) -> bool:
        return await self._run(self.sync.rename, old, new)

    async def record_drop(self, url: str, kept: str, distance: int) -> None:
        await self._run(self.sync.record_drop, url, kept, distance)

    async def drop_of(self, url: str) -> DropRecord | None:
        return await self._run(self.sync.drop_of, url)

    async def forget_drop(self, url: str) -> None:
        await self._run(self.sync.forget_drop, url)

    async def drop_count(self) -> int:
        return await self._scan(self.sync.drop_count)

    async def get(self, key: str) -> int | None:
        return await self._run(self.sync.get, key)

    async def remove(self, key: str) -> bool:
        return await self._run(self.sync.remove, key)

    async def clear(self) -> None:
        await self._scan(self.sync.clear)

    async def count(self) -> int:
        return await self._scan(self.sync.count)

    async def purge_expired(self) -> int:
        return await self._scan(self.sync.purge_expired)

    async def stats(self) -> IndexStats:
        return await self._scan(self.sync.stats)

    async def close(self) -> None:
        await self._close(self.sync.close)
