"""Recrawl store in Redis or Redis Cluster, next to the near-duplicate index.

Layout per namespace (one hash tag, so Lua scripts may touch all three keys in a cluster):
``simhash:recrawl:{ns}:state`` (hash URL -> packed state, see ``packing``), ``...:due`` (sorted set URL ->
next hand-out time) and ``...:hist`` (hash rate bucket -> pages, for the budget policy).

Updates are optimistic: read the state, compute the new one in Python (the estimators are
not worth porting to Lua), then a script writes it only if the stored state is still the
one read, else the step is retried. Claims are a single script, hence atomic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from importlib import resources
from typing import Any, cast

import redis
import redis.exceptions
import xxhash

from scrapy_simhash._redis import async_client, sync_client
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.recrawl.backend import Step, rate_bucket
from scrapy_simhash.recrawl.state import PageState

logger = logging.getLogger(__name__)

_RETRIES = 50


def _script(name: str) -> str:
    """A Lua script of ``resources/``: kept as files, like the index's, so they read as Lua."""
    return resources.files("scrapy_simhash.resources").joinpath(name).read_text()


_UPDATE = _script("recrawl_update.lua")
_ADD = _script("recrawl_add.lua")
_CLAIM = _script("recrawl_claim.lua")
_REMOVE = _script("recrawl_remove.lua")


def _keys(namespace: str) -> list[str]:
    prefix = f"simhash:recrawl:{{{namespace}}}"
    return [f"{prefix}:state", f"{prefix}:due", f"{prefix}:hist"]


def _bucket_arg(state: PageState | None) -> str:
    bucket = None if state is None else rate_bucket(state.rate)
    return "" if bucket is None else str(bucket)


def _decode(url: bytes | str, raw: bytes | None) -> PageState | None:
    if not raw:
        return None
    return PageState.from_bytes(url.decode() if isinstance(url, bytes) else url, raw)


def _update_args(url: str, raw: bytes | None, new: PageState) -> list[Any]:
    return [
        url,
        raw or b"",
        new.to_bytes(),
        repr(new.next_due),
        _bucket_arg(_decode(url, raw)),
        _bucket_arg(new),
    ]


def _add_args(states: list[PageState]) -> list[Any]:
    args: list[Any] = []
    for s in states:
        args += [s.url, s.to_bytes(), repr(s.next_due), _bucket_arg(s)]
    return args


def _triples(raw: list[Any]) -> list[tuple[PageState, float]]:
    """Decode ``url, state, score`` triples, skipping URLs whose state vanished."""
    out = []
    for url, blob, score in zip(raw[::3], raw[1::3], raw[2::3], strict=True):
        state = _decode(url, blob)
        if state is not None:
            out.append((state, float(score)))
    return out


def _due_triples(rows: list[Any], blobs: list[Any]) -> list[Any]:
    return [x for blob, (url, score) in zip(blobs, rows, strict=True) for x in (url, blob, score)]


def _histogram(raw: dict[Any, Any]) -> dict[int, int]:
    return {int(b): int(n) for b, n in raw.items() if int(n) > 0}


class _Conflict(redis.exceptions.RedisError):
    """A page was updated by another process on every retry."""


class RedisBackend:
    """Blocking Redis backend (``redis://``, ``rediss://``, ``unix://``, ``+cluster``)."""

    errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)

    def __init__(self, url: str, namespace: str, client: Any = None) -> None:
        self._client: Any = client if client is not None else cast(Any, sync_client(url))
        self._keys = _keys(namespace)
        self._update = self._client.register_script(_UPDATE)
        self._add = self._client.register_script(_ADD)
        self._claim = self._client.register_script(_CLAIM)
        self._remove = self._client.register_script(_REMOVE)

    def update(self, url: str, step: Step) -> PageState:
        for _ in range(_RETRIES):
            raw = self._client.hget(self._keys[0], url)
            new = step(_decode(url, raw))
            if self._update(keys=self._keys, args=_update_args(url, raw, new)):
                return new
        raise _Conflict(f"{url} kept changing under {_RETRIES} concurrent updates")

    def get(self, url: str) -> PageState | None:
        return _decode(url, self._client.hget(self._keys[0], url))

    def add(self, states: list[PageState]) -> int:
        return int(self._add(keys=self._keys, args=_add_args(states))) if states else 0

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        raw = self._claim(keys=self._keys, args=[repr(now), limit, repr(lease_until)])
        return _triples(raw)

    def peek(self, until: float, limit: int) -> list[Any]:
        """The earliest ``(url, score)`` rows due by ``until``, without claiming them."""
        return list(
            self._client.zrangebyscore(
                self._keys[1], "-inf", repr(until), start=0, num=limit, withscores=True
            )
        )

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        rows = self._client.zrangebyscore(
            self._keys[1], "-inf", repr(until), start=0, num=limit, withscores=True
        )
        if not rows:
            return []
        blobs = self._client.hmget(self._keys[0], [url for url, _ in rows])
        return _triples(_due_triples(rows, blobs))

    def remove(self, url: str) -> bool:
        state = self.get(url)
        return bool(self._remove(keys=self._keys, args=[url, _bucket_arg(state)]))

    def count(self) -> int:
        return int(self._client.hlen(self._keys[0]))

    def clear(self) -> None:
        for key in self._keys:  # one by one: a cluster refuses multi-key DEL across slots
            self._client.delete(key)

    def rate_histogram(self) -> dict[int, int]:
        return _histogram(self._client.hgetall(self._keys[2]))

    def close(self) -> None:
        self._client.close()


class AsyncRedisBackend:
    """The asyncio twin of :class:`RedisBackend`; the client binds to the running loop."""

    errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)

    def __init__(self, url: str, namespace: str, client: Any = None) -> None:
        self._client: Any = client if client is not None else cast(Any, async_client(url))
        self._keys = _keys(namespace)
        self._update = self._client.register_script(_UPDATE)
        self._add = self._client.register_script(_ADD)
        self._claim = self._client.register_script(_CLAIM)
        self._remove = self._client.register_script(_REMOVE)

    async def update(self, url: str, step: Step) -> PageState:
        for _ in range(_RETRIES):
            raw = await self._client.hget(self._keys[0], url)
            new = step(_decode(url, raw))
            if await self._update(keys=self._keys, args=_update_args(url, raw, new)):
                return new
        raise _Conflict(f"{url} kept changing under {_RETRIES} concurrent updates")

    async def get(self, url: str) -> PageState | None:
        return _decode(url, await self._client.hget(self._keys[0], url))

    async def add(self, states: list[PageState]) -> int:
        return int(await self._add(keys=self._keys, args=_add_args(states))) if states else 0

    async def claim(
        self, now: float, limit: int, lease_until: float
    ) -> list[tuple[PageState, float]]:
        raw = await self._claim(keys=self._keys, args=[repr(now), limit, repr(lease_until)])
        return _triples(raw)

    async def peek(self, until: float, limit: int) -> list[Any]:
        return list(
            await self._client.zrangebyscore(
                self._keys[1], "-inf", repr(until), start=0, num=limit, withscores=True
            )
        )

    async def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        rows = await self._client.zrangebyscore(
            self._keys[1], "-inf", repr(until), start=0, num=limit, withscores=True
        )
        if not rows:
            return []
        blobs = await self._client.hmget(self._keys[0], [url for url, _ in rows])
        return _triples(_due_triples(rows, blobs))

    async def remove(self, url: str) -> bool:
        state = await self.get(url)
        return bool(await self._remove(keys=self._keys, args=[url, _bucket_arg(state)]))

    async def count(self) -> int:
        return int(await self._client.hlen(self._keys[0]))

    async def clear(self) -> None:
        for key in self._keys:
            await self._client.delete(key)

    async def rate_histogram(self) -> dict[int, int]:
        return _histogram(await self._client.hgetall(self._keys[2]))

    async def close(self) -> None:
        await self._client.aclose()


# -- sharded namespaces ------------------------------------------------------------------------
#
# With SIMHASH_INDEX_SHARDS = N the recrawl state of a namespace is spread like its index:
# shard i keeps the three keys above under the tag of the index's shard i (same master), and
# a URL's state, due entry and rate bucket live in the shard its URL hashes to. An update is
# the same two round trips as unsharded (read, then write-if-unchanged on one shard). Claims
# look at every shard: each shard's earliest due URLs are read (one call per shard, in
# parallel on the asyncio client), the earliest ``limit`` of them overall are chosen, then
# each shard hands out its chosen ones atomically. Skew: every URL handed out was due no
# later than any URL left waiting in any shard when the shards were read; a concurrent
# claimer can only take URLs before ours in that time. The rate histogram is summed.


def _shards_key(namespace: str) -> str:
    return f"simhash:recrawl:{{{namespace}}}:shards"


def _shard_of(url: str, shards: int) -> int:
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass")) % shards


def stored_shards(url: str, namespace: str, requested: int | None) -> int:
    """The shard count of a namespace's recrawl state: the one recorded, or ``requested``
    (recorded now when above 1). One blocking call at open (not made for an explicit 1, the
    default); a different count refuses."""
    client: Any = cast(Any, sync_client(url, socket_timeout=5.0, socket_connect_timeout=5.0))
    try:
        key = _shards_key(namespace)
        if requested is not None and requested > 1:
            client.set(key, requested, nx=True)
        raw = client.get(key)
    finally:
        client.close()
    stored = int(raw) if raw else 1
    if requested is not None and requested != stored:
        raise ConfigurationError(
            f"the recrawl state of namespace {namespace!r} is spread over {stored} shard(s), "
            f"opened with SIMHASH_INDEX_SHARDS={requested}; use {stored} (or reset the "
            "namespace)"
        )
    return stored


def maker(
    url: str | None, namespace: str, shards: int | None, plain: Any, sharded: Any
) -> Callable[[], Any]:
    """Opens the plain or the sharded backend (classes ``plain`` and ``sharded``), by the
    namespace's shard count."""

    def make() -> Any:
        count = 1 if shards == 1 else stored_shards(str(url), namespace, shards)
        return sharded(str(url), namespace, count) if count > 1 else plain(str(url), namespace)

    return make


def _merge(
    peeks: list[list[Any]], limit: int
) -> tuple[float, list[int]]:
    """From each shard's earliest ``(url, score)`` rows: the cutoff score of the earliest
    ``limit`` overall (ties by URL, as one sorted set orders them) and how many of them each
    shard holds."""
    rows = sorted(
        (float(score), url, shard) for shard, peek in enumerate(peeks) for url, score in peek
    )[:limit]
    counts = [0] * len(peeks)
    for _, _, shard in rows:
        counts[shard] += 1
    return (rows[-1][0] if rows else 0.0), counts


def _earliest(parts: list[list[tuple[PageState, float]]], limit: int) -> list[tuple[PageState, float]]:
    rows = (row for part in parts for row in part)
    return sorted(rows, key=lambda row: (row[1], row[0].url))[:limit]


def _group(states: list[PageState], shards: int) -> dict[int, list[PageState]]:
    groups: dict[int, list[PageState]] = {}
    for state in states:
        groups.setdefault(_shard_of(state.url, shards), []).append(state)
    return groups


def _sum_histograms(parts: list[dict[int, int]]) -> dict[int, int]:
    total: dict[int, int] = {}
    for part in parts:
        for bucket, pages in part.items():
            total[bucket] = total.get(bucket, 0) + pages
    return total


class ShardedRedisBackend:
    """Blocking recrawl backend of a sharded namespace (one client for every shard)."""

    errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)

    def __init__(self, url: str, namespace: str, shards: int) -> None:
        from scrapy_simhash.index.sharded import shard_namespace

        self._client: Any = cast(Any, sync_client(url))
        self._parts = [
            RedisBackend(url, shard_namespace(namespace, i, shards), client=self._client)
            for i in range(shards)
        ]

    def _part(self, url: str) -> RedisBackend:
        return self._parts[_shard_of(url, len(self._parts))]

    def update(self, url: str, step: Step) -> PageState:
        return self._part(url).update(url, step)

    def get(self, url: str) -> PageState | None:
        return self._part(url).get(url)

    def add(self, states: list[PageState]) -> int:
        groups = _group(states, len(self._parts))
        return sum(self._parts[shard].add(group) for shard, group in groups.items())

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        peeks = [part.peek(now, limit) for part in self._parts]
        cutoff, counts = _merge(peeks, limit)
        return _earliest(
            [
                part.claim(cutoff, count, lease_until) if count else []
                for part, count in zip(self._parts, counts, strict=True)
            ],
            limit,
        )

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        return _earliest([part.due(until, limit) for part in self._parts], limit)

    def remove(self, url: str) -> bool:
        return self._part(url).remove(url)

    def count(self) -> int:
        return sum(part.count() for part in self._parts)

    def clear(self) -> None:
        for part in self._parts:
            part.clear()

    def rate_histogram(self) -> dict[int, int]:
        return _sum_histograms([part.rate_histogram() for part in self._parts])

    def close(self) -> None:
        self._client.close()


class AsyncShardedRedisBackend:
    """The asyncio twin of :class:`ShardedRedisBackend` (shards are asked in parallel)."""

    errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)

    def __init__(self, url: str, namespace: str, shards: int) -> None:
        from scrapy_simhash.index.sharded import shard_namespace

        self._client: Any = cast(Any, async_client(url))
        self._parts = [
            AsyncRedisBackend(url, shard_namespace(namespace, i, shards), client=self._client)
            for i in range(shards)
        ]

    def _part(self, url: str) -> AsyncRedisBackend:
        return self._parts[_shard_of(url, len(self._parts))]

    async def update(self, url: str, step: Step) -> PageState:
        return await self._part(url).update(url, step)

    async def get(self, url: str) -> PageState | None:
        return await self._part(url).get(url)

    async def add(self, states: list[PageState]) -> int:
        groups = _group(states, len(self._parts))
        added = await asyncio.gather(*(self._parts[s].add(g) for s, g in groups.items()))
        return sum(added)

    async def claim(
        self, now: float, limit: int, lease_until: float
    ) -> list[tuple[PageState, float]]:
        peeks = await asyncio.gather(*(part.peek(now, limit) for part in self._parts))
        cutoff, counts = _merge(list(peeks), limit)
        claimed = await asyncio.gather(
            *(
                part.claim(cutoff, count, lease_until)
                for part, count in zip(self._parts, counts, strict=True)
                if count
            )
        )
        return _earliest(list(claimed), limit)

    async def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        parts = await asyncio.gather(*(part.due(until, limit) for part in self._parts))
        return _earliest(list(parts), limit)

    async def remove(self, url: str) -> bool:
        return await self._part(url).remove(url)

    async def count(self) -> int:
        return sum(await asyncio.gather(*(part.count() for part in self._parts)))

    async def clear(self) -> None:
        for part in self._parts:
            await part.clear()

    async def rate_histogram(self) -> dict[int, int]:
        parts = await asyncio.gather(*(part.rate_histogram() for part in self._parts))
        return _sum_histograms(list(parts))

    async def close(self) -> None:
        await self._client.aclose()


def _key_sets(namespace: str, shards: int) -> list[list[str]]:
    from scrapy_simhash.index.sharded import shard_namespace

    if shards == 1:
        return [_keys(namespace)]
    return [_keys(shard_namespace(namespace, i, shards)) for i in range(shards)]


def regroup(url: str, namespace: str, shards: int, new_shards: int, batch: int = 500) -> int:
    """Move a namespace's recrawl state from ``shards`` shards to ``new_shards`` (with the
    crawl stopped); return the URLs moved. The new keys are emptied first and the old ones
    deleted last, so an interrupted run is simply run again."""
    client: Any = cast(Any, sync_client(url))
    sources, targets = _key_sets(namespace, shards), _key_sets(namespace, new_shards)
    moved = 0
    try:
        for keys in targets:
            for key in keys:
                client.delete(key)
        for state, due, _ in sources:
            rows: list[tuple[bytes, bytes]] = []
            for row in client.hscan_iter(state, count=batch):
                rows.append(row)
                if len(rows) >= batch:
                    moved += _move(client, due, rows, targets)
                    rows = []
            moved += _move(client, due, rows, targets)
        for keys in sources:
            for key in keys:
                client.delete(key)
        if new_shards > 1:
            client.set(_shards_key(namespace), new_shards)
        else:
            client.delete(_shards_key(namespace))
    finally:
        client.close()
    return moved


def _move(client: Any, due: str, rows: list[tuple[bytes, bytes]], targets: list[list[str]]) -> int:
    if not rows:
        return 0
    read = client.pipeline(transaction=False)
    for url, _ in rows:
        read.zscore(due, url)
    scores = read.execute()
    write = client.pipeline(transaction=False)
    for (url, blob), score in zip(rows, scores, strict=True):
        text = url.decode("utf-8", "surrogatepass")
        state, queue, hist = targets[_shard_of(text, len(targets)) if len(targets) > 1 else 0]
        write.hset(state, url, blob)
        if score is not None:
            write.zadd(queue, {url: score})
        bucket = _bucket_arg(_decode(text, blob))
        if bucket:
            write.hincrby(hist, bucket, 1)
    write.execute()
    return len(rows)


class _Detected:
    """A backend built on first use, once the namespace's shard count is read: opening a
    store stays free of I/O (a server down at open fails the first call, as before)."""

    errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)

    def __init__(self, make: Any) -> None:
        self._make = make
        self._backend: Any = None

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> Any:  # built when called: inside the store's error handling
            if self._backend is None:
                self._backend = self._make()
            return getattr(self._backend, name)(*args)

        return call


class DetectedBackend(_Detected):
    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


class AsyncDetectedBackend(_Detected):
    """The shard count is read in a worker thread, so the event loop never waits on it."""

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any) -> Any:
            if self._backend is None:
                self._backend = await asyncio.to_thread(self._make)
            return await getattr(self._backend, name)(*args)

        return call

    async def close(self) -> None:
        if self._backend is not None:
            await self._backend.close()
