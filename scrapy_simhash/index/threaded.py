"""The asyncio face of a blocking index: the storage registry wraps an index that has no
asyncio implementation of its own in it."""

from __future__ import annotations

from scrapy_simhash._runners import Runner, ThreadFace
from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
)
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.facade import Face
from scrapy_simhash.index.inflight import Hold


class AsyncIndexAdapter(Face, ThreadFace, AsyncNearDuplicateIndex):
    """Coroutine face of a blocking index, ``backend`` (see
    :class:`~scrapy_simhash._runners.ThreadFace` for ``run`` and ``scan``)."""

    backend: NearDuplicateIndex

    def __init__(
        self, index: NearDuplicateIndex, *, run: Runner | None = None, scan: Runner | None = None
    ) -> None:
        ThreadFace.__init__(self, run=run, scan=scan)
        Face.__init__(self, index)

    async def observe(
        self, key: str, fingerprint: int, signature: int = NO_SIGNATURE
    ) -> Observation:
        return await self._run(self.backend.observe, key, fingerprint, signature)

    async def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return await self._run(self.backend.claim, key, fingerprint, signature)

    async def query(self, fingerprint: int) -> list[Match]:
        return await self._run(self.backend.query, fingerprint)

    async def rename(self, old: str, new: str) -> bool:
        return await self._run(self.backend.rename, old, new)

    async def record_drop(
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> None:
        await self._run(self.backend.record_drop, url, kept, distance, apart)

    async def drop_of(self, url: str) -> DropRecord | None:
        return await self._run(self.backend.drop_of, url)

    async def forget_drop(self, url: str) -> None:
        await self._run(self.backend.forget_drop, url)

    async def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        return await self._run(self._hold, key, owner, lease_secs, create)

    def _hold(self, key: str, owner: str, lease_secs: float, create: bool) -> Hold:
        return self.backend.hold(key, owner, lease_secs, create=create)

    async def settle(self, key: str, owner: str) -> bool:
        return await self._run(self.backend.settle, key, owner)

    async def in_flight(self, key: str) -> tuple[str, float] | None:
        return await self._run(self.backend.in_flight, key)

    async def drop_count(self) -> int:
        return await self._scan(self.backend.drop_count)

    async def get(self, key: str) -> int | None:
        return await self._run(self.backend.get, key)

    async def entry(self, key: str) -> tuple[int, int] | None:
        return await self._run(self.backend.entry, key)

    async def remove(self, key: str) -> bool:
        return await self._run(self.backend.remove, key)

    async def clear(self) -> None:
        await self._scan(self.backend.clear)

    async def count(self) -> int:
        return await self._scan(self.backend.count)

    async def purge_expired(self) -> int:
        return await self._scan(self.backend.purge_expired)

    async def stats(self) -> IndexStats:
        return await self._scan(self.backend.stats)

    async def close(self) -> None:
        await self._close(self.backend.close)
