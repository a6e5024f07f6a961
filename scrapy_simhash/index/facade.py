"""The face every opened index shows: a backend's storage failures said once, here.

A backend raises what its storage raises (``sqlite3.Error``, redis-py's errors) and says
which types those are (``errors``) and how to tell the user (``failure``: what failed,
where, with the password masked, and what to check). Each call goes through this facade,
which turns them into :class:`~scrapy_simhash.exceptions.IndexBackendError`, as the
recrawl store's facade does for its backends: callers, the crawl's guard included, see
one kind of error whatever the storage. Failures while opening are said by the opener.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
)
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.inflight import Hold

T = TypeVar("T")
Backend = NearDuplicateIndex | AsyncNearDuplicateIndex


class Face:
    """An object standing for an index (a facade, an asyncio adapter): the index's
    attributes, its errors and its words for them are its own."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.config = backend.config
        self.layout = backend.layout
        self.url = backend.url
        self.created = backend.created
        self.errors = backend.errors
        self.failure = backend.failure

    @property
    def creation(self) -> str | None:
        return self.backend.creation

    @property
    def confirm_key(self) -> int:
        """The backend's: it learns another when the namespace was created anew meanwhile."""
        return self.backend.confirm_key

    @confirm_key.setter
    def confirm_key(self, key: int) -> None:
        self.backend.confirm_key = key


class IndexFacade(Face, NearDuplicateIndex):
    """A blocking index whose storage failures are :class:`IndexBackendError`."""

    backend: NearDuplicateIndex

    def _call(self, action: str, func: Callable[..., T], *args: Any) -> T:
        try:
            return func(*args)
        except self.errors as exc:
            raise self.failure(action, exc) from exc

    def _each(self, action: str, items: Callable[[], Iterator[T]]) -> Iterator[T]:
        try:
            yield from items()
        except self.errors as exc:
            raise self.failure(action, exc) from exc

    def observe(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._call("observe", self.backend.observe, key, fingerprint, signature)

    def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._call("claim", self.backend.claim, key, fingerprint, signature)

    def rename(self, old: str, new: str) -> bool:
        return self._call("rename", self.backend.rename, old, new)

    def record_drop(self, url: str, kept: str, distance: int, apart: int | None = None) -> None:
        self._call("record drop", self.backend.record_drop, url, kept, distance, apart)

    def drop_of(self, url: str) -> DropRecord | None:
        return self._call("drop lookup", self.backend.drop_of, url)

    def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        return self._call("hold", self._hold, key, owner, lease_secs, create)

    def _hold(self, key: str, owner: str, lease_secs: float, create: bool) -> Hold:
        return self.backend.hold(key, owner, lease_secs, create=create)

    def settle(self, key: str, owner: str) -> bool:
        return self._call("settle", self.backend.settle, key, owner)

    def in_flight(self, key: str) -> tuple[str, float] | None:
        return self._call("in-flight lookup", self.backend.in_flight, key)

    def forget_drop(self, url: str) -> None:
        self._call("forget drop", self.backend.forget_drop, url)

    def drop_count(self) -> int:
        return self._call("drop count", self.backend.drop_count)

    def keys(self) -> Iterator[str]:
        return self._each("list keys", self.backend.keys)

    def drops(self) -> Iterator[DropRecord]:
        return self._each("list drops", self.backend.drops)

    def query(self, fingerprint: int) -> list[Match]:
        return self._call("query", self.backend.query, fingerprint)

    def get(self, key: str) -> int | None:
        return self._call("get", self.backend.get, key)

    def entry(self, key: str) -> tuple[int, int] | None:
        return self._call("get", self.backend.entry, key)

    def remove(self, key: str) -> bool:
        return self._call("remove", self.backend.remove, key)

    def clear(self) -> None:
        self._call("clear", self.backend.clear)

    def count(self) -> int:
        return self._call("count", self.backend.count)

    def purge_expired(self) -> int:
        return self._call("purge", self.backend.purge_expired)

    def stats(self) -> IndexStats:
        return self._call("stats", self.backend.stats)

    def close(self) -> None:
        self._call("close", self.backend.close)


class AsyncIndexFacade(Face, AsyncNearDuplicateIndex):
    """The asyncio twin of :class:`IndexFacade`."""

    backend: AsyncNearDuplicateIndex

    async def _call(self, action: str, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        try:
            return await func(*args)
        except self.errors as exc:
            raise self.failure(action, exc) from exc

    async def observe(
        self, key: str, fingerprint: int, signature: int = NO_SIGNATURE
    ) -> Observation:
        return await self._call("observe", self.backend.observe, key, fingerprint, signature)

    async def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return await self._call("claim", self.backend.claim, key, fingerprint, signature)

    async def rename(self, old: str, new: str) -> bool:
        return await self._call("rename", self.backend.rename, old, new)

    async def record_drop(
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> None:
        await self._call("record drop", self.backend.record_drop, url, kept, distance, apart)

    async def drop_of(self, url: str) -> DropRecord | None:
        return await self._call("drop lookup", self.backend.drop_of, url)

    async def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        return await self._call("hold", self._hold, key, owner, lease_secs, create)

    async def _hold(self, key: str, owner: str, lease_secs: float, create: bool) -> Hold:
        return await self.backend.hold(key, owner, lease_secs, create=create)

    async def settle(self, key: str, owner: str) -> bool:
        return await self._call("settle", self.backend.settle, key, owner)

    async def in_flight(self, key: str) -> tuple[str, float] | None:
        return await self._call("in-flight lookup", self.backend.in_flight, key)

    async def forget_drop(self, url: str) -> None:
        await self._call("forget drop", self.backend.forget_drop, url)

    async def drop_count(self) -> int:
        return await self._call("drop count", self.backend.drop_count)

    async def query(self, fingerprint: int) -> list[Match]:
        return await self._call("query", self.backend.query, fingerprint)

    async def get(self, key: str) -> int | None:
        return await self._call("get", self.backend.get, key)

    async def entry(self, key: str) -> tuple[int, int] | None:
        return await self._call("get", self.backend.entry, key)

    async def remove(self, key: str) -> bool:
        return await self._call("remove", self.backend.remove, key)

    async def clear(self) -> None:
        await self._call("clear", self.backend.clear)

    async def count(self) -> int:
        return await self._call("count", self.backend.count)

    async def purge_expired(self) -> int:
        return await self._call("purge", self.backend.purge_expired)

    async def stats(self) -> IndexStats:
        return await self._call("stats", self.backend.stats)

    async def close(self) -> None:
        await self._call("close", self.backend.close)
