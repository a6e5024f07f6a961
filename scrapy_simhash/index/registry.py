"""URL scheme -> backend, and the two entry points that open an index from a URL.

Like the ``limits`` library's storage registry: the scheme picks the class, an unknown
scheme is a configuration error that lists the known ones.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from scrapy_simhash._redis import REDIS_SCHEMES, mask_url
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

T = TypeVar("T")

SyncFactory = Callable[..., NearDuplicateIndex]


def _memory(url: str, config: IndexConfig, **options: Any) -> NearDuplicateIndex:
    from scrapy_simhash.index.memory import MemoryIndex

    if options:
        raise ConfigurationError(f"memory:// takes no options, got {sorted(options)}")
    return MemoryIndex(url, config)


def _sqlite(url: str, config: IndexConfig, **options: Any) -> NearDuplicateIndex:
    from scrapy_simhash.index.sqlite import OPTIONS, SqliteIndex

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigurationError(
            f"sqlite:// does not take option(s) {unknown}; it takes {', '.join(OPTIONS)}"
        )
    return SqliteIndex(url, config, **options)


def _redis(url: str, config: IndexConfig, **options: Any) -> NearDuplicateIndex:
    from scrapy_simhash.index.redis import RedisIndex

    shards = options.pop("shards", 1)
    if shards != 1:
        from scrapy_simhash.index.sharded import ShardedRedisIndex, check_shards

        return ShardedRedisIndex(url, config, shards=check_shards(shards), **options)
    return RedisIndex(url, config, **options)


#: Backends by URL scheme; :func:`register_backend` adds more.
BACKENDS: dict[str, SyncFactory] = {
    "memory": _memory,
    "sqlite": _sqlite,
    **dict.fromkeys(REDIS_SCHEMES, _redis),
}


def _check_shards(kind: str, options: dict[str, Any]) -> bool:
    """Whether a sharded Redis namespace is asked for; shards elsewhere refuse to start."""
    shards = options.get("shards", 1)
    if shards == 1:
        options.pop("shards", None)
        return False
    if BACKENDS[kind] is not _redis:
        raise ConfigurationError(
            f"SIMHASH_INDEX_SHARDS={shards} needs a Redis index URL (redis://, "
            f"redis+cluster://, ...), not {kind}://"
        )
    return True


def register_backend(scheme: str, factory: SyncFactory) -> None:
    """Serve ``scheme://`` URLs with ``factory(url, config, **options)``."""
    BACKENDS[scheme] = factory


def _scheme(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in BACKENDS:
        raise ConfigurationError(
            f"unknown index URL scheme in {mask_url(url)!r}: use one of "
            f"{', '.join(sorted(s + '://' for s in BACKENDS))}"
        )
    return scheme


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
    kind = _scheme(url)
    _check_shards(kind, merged)
    return BACKENDS[kind](url, config, **merged)


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

    Redis gets a native redis.asyncio client. Memory is called directly (it never blocks);
    other backends run in a worker thread so the event loop never waits on the disk.
    """
    url, config, merged = _prepare(
        url, options, backend_options, bits=bits, max_distance=max_distance, exact_distance=exact_distance,
        scheme=scheme,
        namespace=namespace, tables=tables, expected_size=expected_size, ttl_secs=ttl_secs,
        reset=reset, clock=clock, drop_ttl_secs=drop_ttl_secs, drop_max_entries=drop_max_entries,
    )
    kind = _scheme(url)
    if _check_shards(kind, merged):
        # A sharded namespace takes two rounds of pipelines per page; its blocking client
        # runs them in a worker thread.
        index = await asyncio.to_thread(_redis, url, config, **merged)
        return AsyncIndexAdapter(index, threaded=True)
    if BACKENDS[kind] is _redis:
        from scrapy_simhash.index.redis import AsyncRedisIndex

        return await AsyncRedisIndex.create(url, config, **merged)
    if kind == "memory":
        return AsyncIndexAdapter(BACKENDS[kind](url, config, **merged), threaded=False)
    index = await asyncio.to_thread(BACKENDS[kind], url, config, **merged)
    return AsyncIndexAdapter(index, threaded=True)


class AsyncIndexAdapter(AsyncNearDuplicateIndex):
    """Coroutine face of a blocking index (memory inline, SQLite in a worker thread)."""

    def __init__(self, index: NearDuplicateIndex, *, threaded: bool) -> None:
        self.sync = index
        self.config = index.config
        self.layout = index.layout
        self.url = index.url
        self._threaded = threaded

    async def _call(self, func: Callable[..., T], *args: Any) -> T:
        if self._threaded:
            return await asyncio.to_thread(functools.partial(func, *args))
        return func(*args)

    async def observe(self, key: str, fingerprint: int) -> Observation:
        return await self._call(self.sync.observe, key, fingerprint)

    async def claim(self, key: str, fingerprint: int) -> Observation:
        return await self._call(self.sync.claim, key, fingerprint)

    async def query(self, fingerprint: int) -> list[Match]:
        return await self._call(self.sync.query, fingerprint)

    async def rename(self, old: str, new: str) -> bool:
        return await self._call(self.sync.rename, old, new)

    async def record_drop(self, url: str, kept: str, distance: int) -> None:
        await self._call(self.sync.record_drop, url, kept, distance)

    async def drop_of(self, url: str) -> DropRecord | None:
        return await self._call(self.sync.drop_of, url)

    async def drop_count(self) -> int:
        return await self._call(self.sync.drop_count)

    async def get(self, key: str) -> int | None:
        return await self._call(self.sync.get, key)

    async def remove(self, key: str) -> bool:
        return await self._call(self.sync.remove, key)

    async def clear(self) -> None:
        await self._call(self.sync.clear)

    async def count(self) -> int:
        return await self._call(self.sync.count)

    async def purge_expired(self) -> int:
        return await self._call(self.sync.purge_expired)

    async def stats(self) -> IndexStats:
        return await self._call(self.sync.stats)

    async def close(self) -> None:
        await self._call(self.sync.close)
