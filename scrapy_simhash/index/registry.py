"""The two entry points that open an index from a URL (the storage registry picks the class)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy_simhash._runners import Runner, ThreadFace, in_thread
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
)
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS, DropRecord
from scrapy_simhash.index.sqlite import DEFAULT_URL
from scrapy_simhash.storage import Storage, extend_storage, storage_for

SyncFactory = Callable[..., NearDuplicateIndex]


def register_backend(scheme: str, factory: SyncFactory) -> None:
    """Serve ``scheme://`` URLs with ``factory(url, config, **options)``; the crawl runs it
    in a worker thread (see :mod:`scrapy_simhash.storage` to declare an asyncio one)."""
    extend_storage(scheme, index=factory, async_index=None)


def _storage(url: str, options: dict[str, Any]) -> Storage:
    """The storage of ``url``; shards (SIMHASH_INDEX_SHARDS) only on Redis, else it refuses."""
    storage = storage_for(url, "index")
    shards = options.get("shards", 1)
    if shards == 1:
        options.pop("shards", None)
    elif not storage.shardable:
        raise ConfigurationError(
            f"SIMHASH_INDEX_SHARDS={shards} needs a Redis index URL (redis://, "
            f"redis+cluster://, ...), not {urlsplit(url).scheme}://"
        )
    return storage


def _prepare(
    url: str | None,
    options: dict[str, Any] | None,
    backend_options: dict[str, Any],
    **fields: Any,
) -> tuple[str, IndexConfig, dict[str, Any]]:
    """The URL (``None`` = embedded default), the index config and the backend options."""
    return url or DEFAULT_URL, IndexConfig(**fields), {**(options or {}), **backend_options}


def open_index(
    url: str | None = None,
    *,
    max_distance: int = 3,
    exact_distance: int | None = None,
    bits: int = 64,
    scheme: str = "",
    namespace: str = "default",
    tables: int | None = None,
    expected_size: int | None = None,
    ttl_secs: float | None = None,
    reset: bool = False,
    clock: Callable[[], float] = time.time,
    drop_ttl_secs: float | None = DROP_TTL_SECS,
    drop_max_entries: int = DROP_MAX_ENTRIES,
    options: dict[str, Any] | None = None,
    **backend_options: Any,
) -> NearDuplicateIndex:
    """Open (creating if needed) the index at ``url``; ``None`` is the embedded SQLite file.

    ``max_distance`` is the largest distance of a match; every match within
    ``exact_distance`` (default: ``max_distance``) is found, matches further out only when
    they share a band with the page (see ``IndexConfig.band_distance``).
    ``scheme`` is the fingerprinter's scheme id: reopening with another one raises
    :class:`~scrapy_simhash.exceptions.IndexMismatchError`, as do other ``bits`` or an
    explicit other ``tables``. ``reset=True`` wipes the namespace first. ``drop_ttl_secs``
    and ``drop_max_entries`` bound the record of dropped near-duplicates. ``options`` and
    extra keywords go to the backend (Redis: redis-py client options plus ``retries``;
    SQLite: ``timeout``, ``synchronous``).
    """
    url, config, merged = _prepare(
        url, options, backend_options, bits=bits, max_distance=max_distance, exact_distance=exact_distance,
        scheme=scheme,
        namespace=namespace, tables=tables, expected_size=expected_size, ttl_secs=ttl_secs,
        reset=reset, clock=clock, drop_ttl_secs=drop_ttl_secs, drop_max_entries=drop_max_entries,
    )
    opener = _storage(url, merged).index
    assert opener is not None  # storage_for checked it
    index: NearDuplicateIndex = opener(url, config, **merged)
    return index


async def open_async_index(
    url: str | None = None,
    *,
    max_distance: int = 3,
    exact_distance: int | None = None,
    bits: int = 64,
    scheme: str = "",
    namespace: str = "default",
    tables: int | None = None,
    expected_size: int | None = None,
    ttl_secs: float | None = None,
    reset: bool = False,
    clock: Callable[[], float] = time.time,
    drop_ttl_secs: float | None = DROP_TTL_SECS,
    drop_max_entries: int = DROP_MAX_ENTRIES,
    options: dict[str, Any] | None = None,
    **backend_options: Any,
) -> AsyncNearDuplicateIndex:
    """Async twin of :func:`open_index`; await it inside the loop that will use the index.

    Storages declare an asyncio opener where they have one (Redis: a native redis.asyncio
    client; memory: called directly, it never blocks; SQLite: inline while the file is
    free); others run in a worker thread so the event loop never waits on the disk.
    """
    url, config, merged = _prepare(
        url, options, backend_options, bits=bits, max_distance=max_distance, exact_distance=exact_distance,
        scheme=scheme,
        namespace=namespace, tables=tables, expected_size=expected_size, ttl_secs=ttl_secs,
        reset=reset, clock=clock, drop_ttl_secs=drop_ttl_secs, drop_max_entries=drop_max_entries,
    )
    storage = _storage(url, merged)
    if storage.async_index is not None:
        opened: AsyncNearDuplicateIndex = await storage.async_index(url, config, **merged)
        return opened
    assert storage.index is not None  # storage_for checked it
    index = await asyncio.to_thread(storage.index, url, config, **merged)
    return AsyncIndexAdapter(index, run=in_thread)


class AsyncIndexAdapter(ThreadFace, AsyncNearDuplicateIndex):
    """Coroutine face of a blocking index (see :class:`~scrapy_simhash._runners.ThreadFace`
    for ``run`` and ``scan``)."""

    def __init__(
        self, index: NearDuplicateIndex, *, run: Runner | None = None, scan: Runner | None = None
    ) -> None:
        super().__init__(run=run, scan=scan)
        self.sync = index
        self.created = index.created
        self.config = index.config
        self.layout = index.layout
        self.url = index.url

    @property
    def creation(self) -> str | None:
        return self.sync.creation

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
