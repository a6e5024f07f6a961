"""The two entry points that open an index from a URL (the storage registry picks the class)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy_simhash._runners import in_thread
from scrapy_simhash.confirm import CONFIRM_DISTANCE
from scrapy_simhash.confirm import new_key as fresh_key
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.base import (
    IndexConfig,
    NearDuplicateIndex,
)
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS
from scrapy_simhash.index.facade import AsyncIndexFacade, IndexFacade
from scrapy_simhash.index.sqlite import DEFAULT_URL
from scrapy_simhash.index.threaded import AsyncIndexAdapter
from scrapy_simhash.storage import Storage, extend_storage, storage_for

SyncFactory = Callable[..., NearDuplicateIndex]


def register_backend(scheme: str, factory: SyncFactory) -> None:
    """Serve ``scheme://`` URLs with ``factory(url, config, **options)``; the crawl runs it
    in a worker thread (see :mod:`scrapy_simhash.storage` to declare an asyncio one)."""
    extend_storage(scheme, index=factory, async_index=None)


def _storage(url: str, options: dict[str, Any]) -> Storage:
    """The storage of ``url``; ``shards`` only on Redis, else it refuses."""
    storage = storage_for(url, "index")
    shards = options.get("shards", 1)
    if shards == 1:
        options.pop("shards", None)
    elif not storage.shardable:
        raise ConfigurationError(
            f"`shards`={shards} needs a Redis index URL (redis://, "
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
    confirm_distance: int = CONFIRM_DISTANCE,
    new_key: Callable[[], int] = fresh_key,
    options: dict[str, Any] | None = None,
    **backend_options: Any,
) -> IndexFacade:
    """Open (creating if needed) the index at ``url``; ``None`` is the embedded SQLite file.

    ``max_distance`` is the largest distance of a match; every match within
    ``exact_distance`` (default: ``max_distance``) is found, matches further out only when
    they share a band with the page (see ``IndexConfig.band_distance``).
    ``scheme`` is the fingerprinter's scheme id: reopening with another one raises
    :class:`~scrapy_simhash.exceptions.IndexMismatchError`, as do other ``bits`` or an
    explicit other ``tables``. ``reset=True`` wipes the namespace first. ``drop_ttl_secs``
    and ``drop_max_entries`` bound the record of dropped near-duplicates.
    ``confirm_distance`` is the second test's threshold (:mod:`scrapy_simhash.confirm`);
    ``new_key`` makes the key of a namespace created now. ``options`` and
    extra keywords go to the backend (Redis: redis-py client options plus ``retries``;
    SQLite: ``timeout``, ``synchronous``).
    """
    url, config, merged = _prepare(
        url,
        options,
        backend_options,
        bits=bits,
        max_distance=max_distance,
        exact_distance=exact_distance,
        scheme=scheme,
        namespace=namespace,
        tables=tables,
        expected_size=expected_size,
        ttl_secs=ttl_secs,
        reset=reset,
        clock=clock,
        drop_ttl_secs=drop_ttl_secs,
        drop_max_entries=drop_max_entries,
        confirm_distance=confirm_distance,
        new_key=new_key,
    )
    opener = _storage(url, merged).index
    assert opener is not None  # storage_for checked it
    return IndexFacade(opener(url, config, **merged))


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
    confirm_distance: int = CONFIRM_DISTANCE,
    new_key: Callable[[], int] = fresh_key,
    options: dict[str, Any] | None = None,
    **backend_options: Any,
) -> AsyncIndexFacade:
    """Async twin of :func:`open_index`; await it inside the loop that will use the index.

    Storages declare an asyncio opener where they have one (Redis: a native redis.asyncio
    client; memory: called directly, it never blocks; SQLite: inline while the file is
    free); others run in a worker thread so the event loop never waits on the disk.
    """
    url, config, merged = _prepare(
        url,
        options,
        backend_options,
        bits=bits,
        max_distance=max_distance,
        exact_distance=exact_distance,
        scheme=scheme,
        namespace=namespace,
        tables=tables,
        expected_size=expected_size,
        ttl_secs=ttl_secs,
        reset=reset,
        clock=clock,
        drop_ttl_secs=drop_ttl_secs,
        drop_max_entries=drop_max_entries,
        confirm_distance=confirm_distance,
        new_key=new_key,
    )
    storage = _storage(url, merged)
    if storage.async_index is not None:
        return AsyncIndexFacade(await storage.async_index(url, config, **merged))
    assert storage.index is not None  # storage_for checked it
    index = await asyncio.to_thread(storage.index, url, config, **merged)
    return AsyncIndexFacade(AsyncIndexAdapter(index, run=in_thread))
