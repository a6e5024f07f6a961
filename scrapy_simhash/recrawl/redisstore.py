"""Recrawl store in Redis or Redis Cluster, next to the near-duplicate index.

Layout per namespace (one hash tag, so Lua scripts may touch all three keys in a cluster):
``simhash:recrawl:{ns}:state`` (hash URL -> packed state, see ``packing``), ``...:due`` (sorted set URL ->
next hand-out time) and ``...:hist`` (hash rate bucket -> pages, for the budget policy).

Updates are optimistic: read the state, compute the new one in Python (the estimators are
not worth porting to Lua), then a script writes it only if the stored state is still the
one read, else the step is retried. Claims are a single script, hence atomic.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import redis
import redis.exceptions

from scrapy_simhash._redis import async_client, sync_client
from scrapy_simhash.recrawl.backend import Step, rate_bucket
from scrapy_simhash.recrawl.state import PageState

logger = logging.getLogger(__name__)

_RETRIES = 50

_UPDATE = """
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
if ARGV[5] ~= '' and redis.call('HINCRBY', KEYS[3], ARGV[5], -1) <= 0 then
  redis.call('HDEL', KEYS[3], ARGV[5])
end
if ARGV[6] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[6], 1) end
return 1
"""

_ADD = """
local added = 0
for i = 1, #ARGV, 4 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[i + 2], ARGV[i])
    if ARGV[i + 3] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[i + 3], 1) end
    added = added + 1
  end
end
return added
"""

_CLAIM = """
local urls = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
local out = {}
for i = 1, #urls, 2 do
  redis.call('ZADD', KEYS[2], ARGV[3], urls[i])
  out[#out + 1] = urls[i]
  out[#out + 1] = redis.call('HGET', KEYS[1], urls[i]) or ''
  out[#out + 1] = urls[i + 1]
end
return out
"""

_REMOVE = """
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] ~= '' and redis.call('HINCRBY', KEYS[3], ARGV[2], -1) <= 0 then
  redis.call('HDEL', KEYS[3], ARGV[2])
end
return 1
"""


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

    def __init__(self, url: str, namespace: str) -> None:
        self._client: Any = cast(Any, sync_client(url))
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

    def __init__(self, url: str, namespace: str) -> None:
        self._client: Any = cast(Any, async_client(url))
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
