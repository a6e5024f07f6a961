"""One registry of storages by URL scheme, for every store a crawl keeps.

The near-duplicate index, the recrawl schedule and the learned URL rules of a crawl live in
the same storage, named by one URL (the index's ``url``), so the three must agree on which
schemes exist and what each opens. Like the ``limits`` library's storage registry, a
:class:`Storage` declares the schemes it serves and how it opens each store, blocking and
asyncio; an unknown scheme, or a storage that cannot hold a store, is a configuration error
that lists the schemes that can. A storage without an asyncio opener has its blocking one
run in a worker thread by the store's facade.

Openers import their backend on first use, so naming a storage costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_simhash._redact import scrub
from scrapy_simhash._redis import REDIS_SCHEMES, mask_url
from scrapy_simhash._runners import in_thread, inline
from scrapy_simhash._sqlite import busy_timeout
from scrapy_simhash.exceptions import ConfigurationError

if TYPE_CHECKING:
    from scrapy_simhash.dust.store import RuleStore
    from scrapy_simhash.template.store import TemplateStore

#: The stores a storage may hold, by the field of :class:`Storage` that opens them.
STORES = {
    "index": "index",
    "recrawl": "recrawl store",
    "rules": "URL rule store",
    "templates": "template store",
}

Opener = Callable[..., Any]


@dataclass(frozen=True)
class Storage:
    """How one kind of storage opens each store; None where it cannot hold one.

    ``index(url, config, **options)`` and ``async_index`` (a coroutine function) open the
    near-duplicate index; ``recrawl(url, namespace, shards=..., expected_pages=...,
    options=...)`` and ``async_recrawl`` the recrawl schedule's backend (``shards`` None: as
    the namespace recorded; ``expected_pages`` sizes a new namespace where the storage
    cares; ``options``: the storage's client options, the index's ``options``);
    ``rules(url, namespace, **options)`` the URL rule store; ``templates(url, namespace,
    ttl_secs=..., **options)`` the hosts' template memory.
    """

    name: str
    schemes: tuple[str, ...]
    index: Opener | None = None
    async_index: Opener | None = None
    recrawl: Opener | None = None
    async_recrawl: Opener | None = None
    rules: Opener | None = None
    templates: Opener | None = None
    #: Whether its index can spread a namespace over shards (SIMHASH_INDEX_SHARDS).
    shardable: bool = False


_STORAGES: dict[str, Storage] = {}


def register_storage(storage: Storage) -> None:
    """Serve ``storage.schemes`` URLs with ``storage`` (replacing what served them)."""
    for scheme in storage.schemes:
        _STORAGES[scheme] = storage


def extend_storage(scheme: str, **openers: Opener | None) -> None:
    """Give the storage of ``scheme`` (a new one if none) other openers for some stores:
    what the index's and the recrawl store's ``register_backend`` do."""
    current = _STORAGES.get(scheme) or Storage(name=scheme, schemes=(scheme,))
    changes: dict[str, Any] = {"schemes": (scheme,), **openers}
    if "index" in openers:  # an index of one's own shards nothing
        changes["shardable"] = False
    _STORAGES[scheme] = replace(current, **changes)


def scheme_of(url: str | None) -> str:
    """The scheme of a storage URL; None is the embedded SQLite file. A URL that cannot be
    read at all (``redis://[::1:6379``, a bracket missing) is a ConfigurationError."""
    if not url:
        return "sqlite"
    try:
        return urlsplit(url).scheme
    except ValueError as exc:
        hint = ""
        if "IPv6" in str(exc):
            hint = " (an IPv6 address goes in brackets: redis://[::1]:6379/0)"
        raise ConfigurationError(
            f"`url` {mask_url(url)!r} cannot be read: {scrub(str(exc), url)}{hint}"
        ) from None


def holding(store: str) -> list[str]:
    """The schemes whose storage can hold ``store``, as ``scheme://``."""
    return sorted(s + "://" for s, st in _STORAGES.items() if getattr(st, store) is not None)


def storage_for(url: str | None, store: str) -> Storage:
    """The storage of ``url`` (None: the embedded SQLite file), if it can hold ``store``."""
    storage = _STORAGES.get(scheme_of(url))
    if storage is None or getattr(storage, store) is None:
        where = mask_url(url) if url else "the default"
        raise ConfigurationError(
            f"unknown {STORES[store]} URL scheme in {where!r}: use one of "
            f"{', '.join(holding(store))}"
        )
    return storage


# -- the built-in storages ---------------------------------------------------------------------


def _memory_index(url: str, config: Any, **options: Any) -> Any:
    from scrapy_simhash.index.memory import MemoryIndex

    if options:
        raise ConfigurationError(f"memory:// takes no options, got {sorted(options)}")
    return MemoryIndex(url, config)


async def _async_memory_index(url: str, config: Any, **options: Any) -> Any:
    from scrapy_simhash.index.threaded import AsyncIndexAdapter

    # Memory never blocks: called inline, not in a thread.
    return AsyncIndexAdapter(_memory_index(url, config, **options), run=inline)


def _memory_recrawl(
    url: str | None,
    namespace: str,
    shards: int | None = None,
    expected_pages: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    from scrapy_simhash.recrawl.memory import MemoryBackend

    return MemoryBackend()


def _async_memory_recrawl(
    url: str | None,
    namespace: str,
    shards: int | None = None,
    expected_pages: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    from scrapy_simhash.recrawl.threaded import AsyncBackendAdapter

    # Memory never blocks: called inline (a fifth of a thread hop per call).
    return AsyncBackendAdapter(_memory_recrawl(url, namespace), run=inline)


def _memory_rules(url: str, namespace: str, **options: Any) -> Any:
    from scrapy_simhash.dust.store import MemoryRuleStore

    return MemoryRuleStore()


def _memory_templates(url: str, namespace: str, **options: Any) -> Any:
    from scrapy_simhash.template.store import MemoryTemplateStore

    return MemoryTemplateStore()


def _sqlite_templates(url: str, namespace: str, **options: Any) -> Any:
    from scrapy_simhash.index.sqlite import sqlite_path
    from scrapy_simhash.template.store import SqliteTemplateStore

    return SqliteTemplateStore(sqlite_path(url), namespace, timeout_secs=busy_timeout(options))


def _redis_templates(url: str, namespace: str, **options: Any) -> Any:
    from scrapy_simhash.index.redis import client_options
    from scrapy_simhash.template.store import RedisTemplateStore

    ttl = options.pop("ttl_secs", None)
    return RedisTemplateStore(url, namespace, ttl_secs=ttl, **client_options(dict(options)))


def _sqlite_index(url: str, config: Any, **options: Any) -> Any:
    from scrapy_simhash.index.sqlite import OPTIONS, SqliteIndex

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigurationError(
            f"sqlite:// does not take option(s) {unknown}; it takes {', '.join(OPTIONS)}"
        )
    return SqliteIndex(url, config, **options)


def _sqlite_recrawl(
    url: str | None,
    namespace: str,
    shards: int | None = None,
    expected_pages: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    from scrapy_simhash.recrawl.sqlite import SqliteBackend, path_from_url

    return SqliteBackend(path_from_url(url), namespace, busy_timeout_secs=busy_timeout(options))


async def _async_sqlite_index(url: str, config: Any, **options: Any) -> Any:
    import asyncio

    from scrapy_simhash.index.threaded import AsyncIndexAdapter

    # Opening may wait for another process's write lock: in a thread. Then a page's calls
    # run inline until one would wait (SharedConnection.run); scans run in a thread.
    index = await asyncio.to_thread(_sqlite_index, url, config, **options)
    return AsyncIndexAdapter(index, run=index.connection.run, scan=in_thread)


def _async_sqlite_recrawl(
    url: str | None,
    namespace: str,
    shards: int | None = None,
    expected_pages: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    from scrapy_simhash.recrawl.threaded import AsyncBackendAdapter

    backend = _sqlite_recrawl(url, namespace, options=options)
    return AsyncBackendAdapter(backend, run=backend.connection.run, scan=in_thread)


def _sqlite_rules(url: str, namespace: str, **options: Any) -> Any:
    from scrapy_simhash.dust.store import SqliteRuleStore
    from scrapy_simhash.index.sqlite import sqlite_path

    return SqliteRuleStore(sqlite_path(url), namespace, timeout_secs=busy_timeout(options))


def _redis_index(url: str, config: Any, **options: Any) -> Any:
    from scrapy_simhash.index.redis import RedisIndex

    shards = options.pop("shards", 1)
    if shards != 1:
        from scrapy_simhash.index.sharded import ShardedRedisIndex, check_shards

        return ShardedRedisIndex(url, config, shards=check_shards(shards), **options)
    return RedisIndex(url, config, **options)


async def _async_redis_index(url: str, config: Any, **options: Any) -> Any:
    import asyncio

    from scrapy_simhash.index.threaded import AsyncIndexAdapter

    if options.get("shards", 1) != 1:
        # A sharded namespace takes two rounds of pipelines per page; its blocking client
        # runs them in a worker thread.
        index = await asyncio.to_thread(_redis_index, url, config, **options)
        return AsyncIndexAdapter(index, run=in_thread)
    from scrapy_simhash.index.redis import AsyncRedisIndex

    options.pop("shards", None)
    return await AsyncRedisIndex.create(url, config, **options)


def _redis_recrawl(
    url: str | None,
    namespace: str,
    shards: int | None = None,
    expected_pages: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    from scrapy_simhash.recrawl import redisstore as r

    make = r.maker(
        url,
        namespace,
        shards,
        expected_pages,
        r.RedisBackend,
        r.ShardedRedisBackend,
        _recrawl_client_options(options),
    )
    # None: whatever the namespace recorded, read on first use.
    return r.DetectedBackend(make) if shards is None else make()


def _async_redis_recrawl(
    url: str | None,
    namespace: str,
    shards: int | None = None,
    expected_pages: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """An asyncio backend; the shard count is read with one blocking call at open."""
    from scrapy_simhash.recrawl import redisstore as r

    make = r.maker(
        url,
        namespace,
        shards,
        expected_pages,
        r.AsyncRedisBackend,
        r.AsyncShardedRedisBackend,
        _recrawl_client_options(options),
    )
    return r.AsyncDetectedBackend(make) if shards != 1 else make()


def _recrawl_client_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The index's client options for the recrawl clients: its ``options`` checked, with
    the same timeouts and retries (``shards`` is the schedule's own). The index bounds its
    connections behind a batcher; the schedule has none, so its pool keeps redis-py's bound
    unless the options set one (an asyncio pool refuses a call past it)."""
    from scrapy_simhash.index.redis import client_options

    given = {k: v for k, v in (options or {}).items() if k != "shards"}
    opts = client_options(given)
    if "max_connections" not in given:
        del opts["max_connections"]
    return opts


def _redis_rules(url: str, namespace: str, **options: Any) -> Any:
    from scrapy_simhash.dust.store import RedisRuleStore
    from scrapy_simhash.index.redis import client_options

    return RedisRuleStore(url, namespace, **client_options(dict(options)))


# -- opening the stores that have no facade of their own ----------------------------


def check_rule_store_url(url: str | None) -> str:
    """The storage URL (None: the embedded SQLite file) if it can hold rules, else the
    ConfigurationError a crawl with URL rules (`dust_enabled`) refuses to start with."""
    from scrapy_simhash.index.sqlite import DEFAULT_URL

    url = url or DEFAULT_URL
    try:
        storage_for(url, "rules")
    except ConfigurationError:
        raise ConfigurationError(
            f"no URL rule store for {mask_url(url)!r}: `dust_enabled` needs an index URL "
            f"of {', '.join(holding('rules'))} (or `dust_enabled` = False)"
        ) from None
    return url


def open_rule_store(url: str | None, namespace: str, **options: Any) -> RuleStore:
    """The rule store of ``namespace`` in the storage the index URL names (None: the
    embedded SQLite file). ``options``: Redis client options, or SQLite's ``timeout``."""
    url = check_rule_store_url(url)
    opener = storage_for(url, "rules").rules
    assert opener is not None  # checked above
    store: RuleStore = opener(url, namespace, **options)
    return store


def open_template_store(url: str | None, namespace: str, **options: Any) -> TemplateStore:
    """The template store of ``namespace`` in the storage the index URL names (None: the
    embedded SQLite file). ``options``: the storage's client options and ``ttl_secs``."""
    from scrapy_simhash.index.sqlite import DEFAULT_URL

    url = url or DEFAULT_URL
    opener = storage_for(url, "templates").templates
    assert opener is not None  # storage_for checked it
    store: TemplateStore = opener(url, namespace, **options)
    return store


register_storage(
    Storage(
        "memory",
        ("memory",),
        index=_memory_index,
        async_index=_async_memory_index,
        recrawl=_memory_recrawl,
        async_recrawl=_async_memory_recrawl,
        rules=_memory_rules,
        templates=_memory_templates,
    )
)
register_storage(
    Storage(
        "sqlite",
        ("sqlite",),
        index=_sqlite_index,
        async_index=_async_sqlite_index,
        recrawl=_sqlite_recrawl,
        async_recrawl=_async_sqlite_recrawl,
        rules=_sqlite_rules,
        templates=_sqlite_templates,
    )
)
register_storage(
    Storage(
        "redis",
        REDIS_SCHEMES,
        index=_redis_index,
        async_index=_async_redis_index,
        recrawl=_redis_recrawl,
        async_recrawl=_async_redis_recrawl,
        rules=_redis_rules,
        templates=_redis_templates,
        shardable=True,
    )
)
