"""Recrawl store in Redis or Redis Cluster, next to the near-duplicate index.

Layout (format 3, see ``resources/recrawl_buckets.lua``): a namespace's URLs are spread by
URL id over buckets (their number fixed when the namespace is created, for ~60 URLs each),
each one list holding its URLs' ids and records (URL and packed state, see ``packing``)
back to back and one small sorted set of their queue times; a sorted set orders the
buckets by their earliest queue time,
and a hash counts pages per rate bucket for the budget policy. One hash tag per namespace, so the script touches all of it in a cluster.

Updates are optimistic: read the record, compute the new state in Python (the estimators
are not worth porting to Lua), then the script writes it only if the stored record is
still the one read, else the step is retried. Claims are one script call, hence atomic.
"""

from __future__ import annotations

import asyncio
import logging
import math
import struct
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any, cast

import redis
import redis.exceptions
import xxhash

from scrapy_simhash._redis import (
    async_client,
    mask_url,
    redis_errors,
    shard_namespace,
    sync_client,
)
from scrapy_simhash.exceptions import ConfigurationError, InvalidKeyError
from scrapy_simhash.index.base import reset_hint
from scrapy_simhash.old_state import Found, refuse_old_redis
from scrapy_simhash.recrawl.backend import Step, queue_ms, queue_seconds, rate_bucket
from scrapy_simhash.recrawl.state import PageState

logger = logging.getLogger(__name__)

_RETRIES = 50
#: The key layout this module writes, recorded in each namespace's meta hash; a namespace
#: of another layout is refused, never misread. 3: buckets of URL records (0.3.0); the
#: URL-keyed hash and sorted set of 0.2.0 had no record.
FORMAT = 3
#: What 0.2.0's keys are, in the refusal.
_OLD_SCHEDULE = Found(
    "a recrawl schedule in 0.2.0's layout (a hash and a sorted set keyed by URL)", "0.2.0"
)
#: Buckets are sized for ~:data:`URLS_PER_BUCKET` URLs: a bucket (a key and a sorted-set
#: entry) costs ~250 bytes of Redis' own, and an update or a claim reads its slots, 16
#: bytes a URL. Without an expected size, 2^14 buckets: ~60 URLs each at a million.
URLS_PER_BUCKET = 64
DEFAULT_BUCKET_BITS = 14
MAX_BUCKET_BITS = 20

_SCRIPT = resources.files("scrapy_simhash.resources").joinpath("recrawl_buckets.lua").read_text()
_LENGTH = struct.Struct("<H")
_PLACE = struct.Struct(">H")


def bucket_bits(expected_pages: int | None) -> int:
    """Bits naming a new namespace's buckets, for ``expected_pages`` scheduled URLs."""
    if not expected_pages:
        return DEFAULT_BUCKET_BITS
    return max(4, min(MAX_BUCKET_BITS, math.ceil(math.log2(expected_pages / URLS_PER_BUCKET))))


def _prefix(namespace: str) -> str:
    return f"simhash:recrawl:{{{namespace}}}:"


def _keys(namespace: str) -> list[str]:
    """Meta hash, due set and histogram (the script's KEYS; bucket keys follow the prefix)."""
    prefix = _prefix(namespace)
    return [f"{prefix}m", f"{prefix}due", f"{prefix}hist"]


def _old_state_key(namespace: str) -> str:
    """The URL-keyed hash of 0.2.0's layout, whose presence refuses the namespace."""
    return f"{_prefix(namespace)}state"


def _staged_keys(namespace: str) -> list[str]:
    """Where ``upgrade`` sets 0.2.0's hash and sorted set aside while it carries them over
    (0.2.0's sorted set had the name this layout's has): they refuse the namespace too."""
    prefix = _prefix(namespace)
    return [f"{prefix}state020", f"{prefix}due020"]


def _old_keys(namespace: str) -> list[str]:
    """Keys whose presence says the namespace holds 0.2.0's schedule (or its upgrade's)."""
    return [_old_state_key(namespace), _staged_keys(namespace)[0]]


def _url_bytes(url: str) -> bytes:
    data = url.encode("utf-8", "surrogatepass")
    if len(data) > 0xFFFF:
        raise InvalidKeyError(f"a URL of {len(data):,} bytes cannot be scheduled: {url:.80}")
    return data


def _identified(url: str) -> tuple[bytes, bytes]:
    """A URL's 64-bit id and its UTF-8 text."""
    data = _url_bytes(url)
    return xxhash.xxh3_64_digest(data), data


def url_id(url: str) -> bytes:
    """A URL's 64-bit id: its bucket is the id's leading bits, and URLs due at the same
    time are handed out in id order."""
    return _identified(url)[0]


def _member(ids: bytes, i: int) -> bytes:
    """The queue entry of a bucket's ``i``-th URL (from 0): its id and its record's place."""
    return ids[8 * i : 8 * i + 8] + _PLACE.pack(i + 1)


def _record(state: PageState) -> bytes:
    data = _url_bytes(state.url)
    return _LENGTH.pack(len(data)) + data + state.to_bytes()


def _decode(raw: bytes | None) -> PageState | None:
    if not raw:
        return None
    (length,) = _LENGTH.unpack_from(raw)
    url = raw[2 : 2 + length].decode("utf-8", "surrogatepass")
    return PageState.from_bytes(url, raw[2 + length :])


def _bucket_arg(state: PageState | None) -> str:
    bucket = None if state is None else rate_bucket(state.rate)
    return "" if bucket is None else str(bucket)


def _pairs(raw: list[Any]) -> list[tuple[PageState, float]]:
    """Decode the claim script's ``record, queue time`` pairs."""
    out = []
    for blob, queue in zip(raw[::2], raw[1::2], strict=True):
        state = _decode(blob)
        if state is not None:
            out.append((state, queue_seconds(queue)))
    return out


def _histogram(raw: dict[Any, Any]) -> dict[int, int]:
    return {int(b): int(n) for b, n in raw.items() if int(n) > 0}


#: Records a new namespace's layout, both fields at once: a process starting beside this
#: one must never read the format without the bucket bits.
_RECORD_LAYOUT = (
    "if redis.call('HSETNX', KEYS[1], 'format', ARGV[1]) == 1 then "
    "redis.call('HSET', KEYS[1], 'bits', ARGV[2]) end"
)


class _Layout:
    """The script arguments of one namespace, once its bucket bits are read or recorded;
    shared by the blocking and asyncio backends."""

    def __init__(self, namespace: str, requested_bits: int, url: str = "") -> None:
        self.namespace = namespace
        self.url = url
        self.keys = _keys(namespace)
        self.prefix = _prefix(namespace)
        self.requested_bits = requested_bits
        self.bits: int | None = None  # known once the meta hash was read

    def read(self, recorded: list[Any], old_state: int) -> bool:
        """Take the meta hash's ``format, bits`` and whether 0.2.0's keys are there; return
        whether to record ours. A namespace of another layout refuses, with the way out."""
        written, bits = recorded
        if old_state:
            raise refuse_old_redis(
                f"namespace {self.namespace!r} on {mask_url(self.url)}",
                _OLD_SCHEDULE,
                self.url,
                self.namespace,
            )
        if written is None:
            self.bits = self.requested_bits
            return True
        if int(written) != FORMAT:
            raise ConfigurationError(
                f"the recrawl state of namespace {self.namespace!r} was written in format "
                f"{int(written)}, and this version reads format {FORMAT} only; "
                f"{reset_hint(self.namespace)}"
            )
        self.bits = int(bits)
        return False

    def lookup(self, url: str) -> list[Any]:
        """Bucket, id and text of a URL: the bucket is the id's leading bits, as hex digits
        of a fixed width, so buckets sort as their ids do."""
        assert self.bits is not None
        ident, data = _identified(url)
        number = int.from_bytes(ident[:3], "big") >> (24 - self.bits)
        return [f"{number:0{(self.bits + 3) // 4}x}", ident, data]

    def get(self, url: str) -> list[Any]:
        return ["get", self.prefix, *self.lookup(url)]

    def update(self, url: str, raw: bytes | None, new: PageState) -> list[Any]:
        return [
            "update",
            self.prefix,
            *self.lookup(url),
            raw or b"",
            _record(new),
            queue_ms(new.next_due),
            _bucket_arg(_decode(raw)),
            _bucket_arg(new),
        ]

    def add(self, states: list[tuple[PageState, float]]) -> list[Any]:
        args: list[Any] = ["add", self.prefix]
        for state, queue in states:
            args += [*self.lookup(state.url), _record(state), queue_ms(queue), _bucket_arg(state)]
        return args

    def remove(self, url: str, state: PageState | None) -> list[Any]:
        return ["remove", self.prefix, *self.lookup(url), _bucket_arg(state)]

    def claim(self, now: float, limit: int, lease_until: float | None) -> list[Any]:
        lease = "" if lease_until is None else queue_ms(lease_until)
        return ["claim", self.prefix, queue_ms(now), limit, lease]

    def bucket_keys(self, member: bytes) -> tuple[str, str]:
        """A bucket's list of ids and records, and its sorted set of queue times."""
        return f"{self.prefix}b{member.decode()}", f"{self.prefix}q{member.decode()}"

    def every_key(self, members: list[bytes]) -> list[str]:
        """What a reset deletes: the buckets, and both layouts' other keys."""
        buckets = [key for member in members for key in self.bucket_keys(member)]
        return [*buckets, *self.keys, _old_state_key(self.namespace), *_staged_keys(self.namespace)]


#: What a failing Redis or Redis Cluster client raises (the tuple every Redis store catches).
_ERRORS = redis_errors()


class _Conflict(redis.exceptions.RedisError):
    """A page was updated by another process on every retry."""


class RedisBackend:
    """Blocking Redis backend (``redis://``, ``rediss://``, ``unix://``, ``+cluster``)."""

    errors: tuple[type[BaseException], ...] = _ERRORS

    def __init__(
        self,
        url: str,
        namespace: str,
        client: Any = None,
        *,
        bits: int = DEFAULT_BUCKET_BITS,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        """``options``: the client's keyword arguments, when ``client`` is None."""
        self._client: Any = (
            client if client is not None else cast(Any, sync_client(url, **dict(options or {})))
        )
        self.layout = _Layout(namespace, bits, url)
        self._script = self._client.register_script(_SCRIPT)

    def _run(self, args: Callable[[], list[Any]]) -> Any:
        self.check_format()
        return self._script(keys=self.layout.keys, args=args())

    def check_format(self) -> None:
        """Read the namespace's layout once; record ours in a new namespace."""
        if self.layout.bits is not None:
            return
        layout = self.layout
        recorded = self._client.hmget(layout.keys[0], ["format", "bits"])
        old = self._client.exists(*_old_keys(layout.namespace))
        if layout.read(recorded, old):
            self._client.eval(_RECORD_LAYOUT, 1, layout.keys[0], FORMAT, layout.requested_bits)
            layout.bits = None
            layout.read(self._client.hmget(layout.keys[0], ["format", "bits"]), 0)

    def update(self, url: str, step: Step) -> PageState:
        for _ in range(_RETRIES):
            raw = self._run(lambda: self.layout.get(url))
            new = step(_decode(raw))
            if self._run(lambda: self.layout.update(url, raw, new)):  # noqa: B023 - called now
                return new
        raise _Conflict(f"{url} kept changing under {_RETRIES} concurrent updates")

    def get(self, url: str) -> PageState | None:
        return _decode(self._run(lambda: self.layout.get(url)))

    def add(self, states: list[PageState]) -> int:
        return self.place([(s, s.next_due) for s in states])

    def place(self, states: list[tuple[PageState, float]]) -> int:
        """Add states not stored yet, each queued at the time given."""
        return int(self._run(lambda: self.layout.add(states))) if states else 0

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        return _pairs(self._run(lambda: self.layout.claim(now, limit, lease_until)))

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        return _pairs(self._run(lambda: self.layout.claim(until, limit, None)))

    def peek(self, until: float, limit: int) -> list[tuple[str, float]]:
        """The earliest ``(url, queue time)`` rows due by ``until``, without claiming them."""
        return [(state.url, queue) for state, queue in self.due(until, limit)]

    def remove(self, url: str) -> bool:
        state = self.get(url)
        return bool(self._run(lambda: self.layout.remove(url, state)))

    def count(self) -> int:
        self.check_format()
        return int(self._client.hget(self.layout.keys[0], "n") or 0)

    def clear(self) -> None:
        members = self._client.zrange(self.layout.keys[1], 0, -1)
        # One by one: a cluster refuses multi-key DEL across slots.
        for key in self.layout.every_key(members):
            self._client.delete(key)
        self.layout.bits = None

    def rate_histogram(self) -> dict[int, int]:
        self.check_format()
        return _histogram(self._client.hgetall(self.layout.keys[2]))

    def buckets(self) -> Iterator[list[tuple[PageState, float]]]:
        """Every stored URL with its queue time, a bucket at a time (for regrouping)."""
        self.check_format()
        for member in self._client.zrange(self.layout.keys[1], 0, -1):
            records, queue = self.layout.bucket_keys(member)
            ids, *blobs = self._client.lrange(records, 0, -1)
            times = dict(self._client.zrange(queue, 0, -1, withscores=True))
            yield [
                (cast(PageState, _decode(raw)), queue_seconds(times[_member(ids, i)]))
                for i, raw in enumerate(blobs)
            ]

    def close(self) -> None:
        self._client.close()


#: Sets 0.2.0's keys aside for an upgrade, at once. Its sorted set has the name of this
#: layout's (``due``) and its histogram counts what the carried states count again: both
#: only when the namespace records no layout (else they are this layout's own).
_STAGE = (
    "if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('EXISTS', KEYS[5]) == 0 then "
    "redis.call('RENAME', KEYS[1], KEYS[5]) "
    "if redis.call('HEXISTS', KEYS[4], 'format') == 0 then "
    "if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[6]) end "
    "redis.call('DEL', KEYS[3]) end end"
)


def carry_over(
    client: Any, namespace: str, batch: int, moved: int, report: Callable[[int], None]
) -> int:
    """Carry a namespace's 0.2.0 schedule over to this layout (``scrapy_simhash.upgrade``):
    each URL's state and queue time, ``batch`` URLs a script call, each batch deleted from
    the old keys once written (an upgrade cut short goes on where it stopped; a state
    written twice is added once). Returns ``moved`` plus the URLs carried over."""
    old, staged = _old_state_key(namespace), _staged_keys(namespace)
    meta, due, hist = _keys(namespace)
    client.eval(_STAGE, 6, old, due, hist, meta, *staged)
    if not client.exists(staged[0]):
        return moved
    backend = RedisBackend("", namespace, client, bits=bucket_bits(client.hlen(staged[0])))
    layout = backend.layout
    # This layout's record, written past the refusal the staged keys make to everyone else.
    client.eval(_RECORD_LAYOUT, 1, meta, FORMAT, layout.requested_bits)
    written, bits = client.hmget(meta, ["format", "bits"])
    if int(written) != FORMAT:
        raise ConfigurationError(
            f"namespace {namespace!r} records recrawl format {int(written)}, not {FORMAT}: "
            "not upgraded"
        )
    layout.bits = int(bits)
    cursor = 0
    while True:
        cursor, scanned = client.hscan(staged[0], cursor, count=batch)
        items = list(scanned.items())  # a small hash comes whole, whatever the count
        for start in range(0, len(items), batch):
            fields = dict(items[start : start + batch])
            urls = list(fields)
            pipe = client.pipeline(transaction=False)
            for url in urls:
                pipe.zscore(staged[1], url)
            scores = pipe.execute()
            placed = []
            for url, score in zip(urls, scores, strict=True):
                state = PageState.from_bytes(url.decode("utf-8", "surrogatepass"), fields[url])
                placed.append((state, state.next_due if score is None else float(score)))
            backend.place(placed)
            pipe = client.pipeline(transaction=False)
            pipe.hdel(staged[0], *urls)
            pipe.zrem(staged[1], *urls)
            pipe.execute()
            moved += len(urls)
            report(moved)
        if cursor == 0 and not client.hlen(staged[0]):
            break
    for key in staged:
        client.delete(key)
    return moved


class AsyncRedisBackend:
    """The asyncio twin of :class:`RedisBackend`; the client binds to the running loop."""

    errors: tuple[type[BaseException], ...] = _ERRORS

    def __init__(
        self,
        url: str,
        namespace: str,
        client: Any = None,
        *,
        bits: int = DEFAULT_BUCKET_BITS,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._client: Any = (
            client if client is not None else cast(Any, async_client(url, **dict(options or {})))
        )
        self.layout = _Layout(namespace, bits, url)
        self._script = self._client.register_script(_SCRIPT)

    async def _run(self, args: Callable[[], list[Any]]) -> Any:
        await self.check_format()
        return await self._script(keys=self.layout.keys, args=args())

    async def check_format(self) -> None:
        if self.layout.bits is not None:
            return
        layout = self.layout
        recorded = await self._client.hmget(layout.keys[0], ["format", "bits"])
        old = await self._client.exists(*_old_keys(layout.namespace))
        if layout.read(recorded, old):
            await self._client.eval(
                _RECORD_LAYOUT, 1, layout.keys[0], FORMAT, layout.requested_bits
            )
            layout.bits = None
            layout.read(await self._client.hmget(layout.keys[0], ["format", "bits"]), 0)

    async def update(self, url: str, step: Step) -> PageState:
        for _ in range(_RETRIES):
            raw = await self._run(lambda: self.layout.get(url))
            new = step(_decode(raw))
            if await self._run(lambda: self.layout.update(url, raw, new)):  # noqa: B023
                return new
        raise _Conflict(f"{url} kept changing under {_RETRIES} concurrent updates")

    async def get(self, url: str) -> PageState | None:
        return _decode(await self._run(lambda: self.layout.get(url)))

    async def add(self, states: list[PageState]) -> int:
        if not states:
            return 0
        placed = [(s, s.next_due) for s in states]
        return int(await self._run(lambda: self.layout.add(placed)))

    async def claim(
        self, now: float, limit: int, lease_until: float
    ) -> list[tuple[PageState, float]]:
        return _pairs(await self._run(lambda: self.layout.claim(now, limit, lease_until)))

    async def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        return _pairs(await self._run(lambda: self.layout.claim(until, limit, None)))

    async def peek(self, until: float, limit: int) -> list[tuple[str, float]]:
        return [(state.url, queue) for state, queue in await self.due(until, limit)]

    async def remove(self, url: str) -> bool:
        state = await self.get(url)
        return bool(await self._run(lambda: self.layout.remove(url, state)))

    async def count(self) -> int:
        await self.check_format()
        return int(await self._client.hget(self.layout.keys[0], "n") or 0)

    async def clear(self) -> None:
        members = await self._client.zrange(self.layout.keys[1], 0, -1)
        for key in self.layout.every_key(members):
            await self._client.delete(key)
        self.layout.bits = None

    async def rate_histogram(self) -> dict[int, int]:
        await self.check_format()
        return _histogram(await self._client.hgetall(self.layout.keys[2]))

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


def shards_key(namespace: str) -> str:
    """Holds the shard count of a sharded namespace (none: one shard)."""
    return f"simhash:recrawl:{{{namespace}}}:shards"


def _shard_of(url: str, shards: int) -> int:
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass")) % shards


def stored_shards(
    url: str, namespace: str, requested: int | None, options: Mapping[str, Any] | None = None
) -> int:
    """The shard count of a namespace's recrawl state: the one recorded, or ``requested``
    (recorded now when above 1). One blocking call at open (not made for an explicit 1, the
    default); a different count refuses. ``options``: the client's keyword arguments."""
    opts = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0, **(options or {})}
    client: Any = cast(Any, sync_client(url, **opts))
    try:
        key = shards_key(namespace)
        if requested is not None and requested > 1:
            client.set(key, requested, nx=True)
        raw = client.get(key)
    finally:
        client.close()
    stored = int(raw) if raw else 1
    if requested is not None and requested != stored:
        raise ConfigurationError(
            f"the recrawl state of namespace {namespace!r} is spread over {stored} shard(s), "
            f"opened with `shards`={requested}; use {stored} (or reset the "
            "namespace)"
        )
    return stored


def maker(
    url: str | None,
    namespace: str,
    shards: int | None,
    expected_pages: int | None,
    plain: Any,
    sharded: Any,
    options: Mapping[str, Any] | None = None,
) -> Callable[[], Any]:
    """Opens the plain or the sharded backend (classes ``plain`` and ``sharded``), by the
    namespace's shard count; a new namespace's buckets are sized for ``expected_pages``
    (spread over its shards). ``options``: the clients' keyword arguments."""

    def make() -> Any:
        count = 1 if shards == 1 else stored_shards(str(url), namespace, shards, options)
        bits = bucket_bits(expected_pages and -(-expected_pages // count))
        if count > 1:
            return sharded(str(url), namespace, count, bits=bits, options=options)
        return plain(str(url), namespace, bits=bits, options=options)

    return make


def _tie_order(url: str) -> bytes:
    """Where a URL stands among URLs due at the same time: by its id, as a bucket orders."""
    return url_id(url)


def _merge(peeks: list[list[tuple[str, float]]], limit: int) -> tuple[float, list[int]]:
    """From each shard's earliest ``(url, queue time)`` rows: the cutoff time of the
    earliest ``limit`` overall (ties in URL-id order, as within a shard) and how many of
    them each shard holds."""
    rows = sorted(
        (score, _tie_order(url), shard) for shard, peek in enumerate(peeks) for url, score in peek
    )[:limit]
    counts = [0] * len(peeks)
    for _, _, shard in rows:
        counts[shard] += 1
    return (rows[-1][0] if rows else 0.0), counts


def _earliest(
    parts: list[list[tuple[PageState, float]]], limit: int
) -> list[tuple[PageState, float]]:
    rows = (row for part in parts for row in part)
    return sorted(rows, key=lambda row: (row[1], _tie_order(row[0].url)))[:limit]


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

    errors: tuple[type[BaseException], ...] = _ERRORS

    def __init__(
        self,
        url: str,
        namespace: str,
        shards: int,
        *,
        bits: int = DEFAULT_BUCKET_BITS,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._client: Any = cast(Any, sync_client(url, **dict(options or {})))
        self._parts = [
            RedisBackend(url, name, client=self._client, bits=bits)
            for name in _namespaces(namespace, shards)
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

    errors: tuple[type[BaseException], ...] = _ERRORS

    def __init__(
        self,
        url: str,
        namespace: str,
        shards: int,
        *,
        bits: int = DEFAULT_BUCKET_BITS,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._client: Any = cast(Any, async_client(url, **dict(options or {})))
        self._parts = [
            AsyncRedisBackend(url, name, client=self._client, bits=bits)
            for name in _namespaces(namespace, shards)
        ]
        self._checking = asyncio.Lock()

    async def _checked(self) -> None:
        """Each shard's layout read once, one shard after another, before the shards are
        asked anything at once. A new cluster client's first commands, sent to several
        masters at once, lost a connection in redis-py now and then (a connection
        reconnected by one command while another sent on it: ``'NoneType' object has no
        attribute 'writelines'``)."""
        if all(part.layout.bits is not None for part in self._parts):
            return  # every layout read: no call goes to the server
        async with self._checking:
            for part in self._parts:
                await part.check_format()

    async def _part(self, url: str) -> AsyncRedisBackend:
        await self._checked()
        return self._parts[_shard_of(url, len(self._parts))]

    async def update(self, url: str, step: Step) -> PageState:
        return await (await self._part(url)).update(url, step)

    async def get(self, url: str) -> PageState | None:
        return await (await self._part(url)).get(url)

    async def add(self, states: list[PageState]) -> int:
        await self._checked()
        groups = _group(states, len(self._parts))
        added = await asyncio.gather(*(self._parts[s].add(g) for s, g in groups.items()))
        return sum(added)

    async def claim(
        self, now: float, limit: int, lease_until: float
    ) -> list[tuple[PageState, float]]:
        await self._checked()
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
        await self._checked()
        parts = await asyncio.gather(*(part.due(until, limit) for part in self._parts))
        return _earliest(list(parts), limit)

    async def remove(self, url: str) -> bool:
        return await (await self._part(url)).remove(url)

    async def count(self) -> int:
        await self._checked()
        return sum(await asyncio.gather(*(part.count() for part in self._parts)))

    async def clear(self) -> None:
        for part in self._parts:
            await part.clear()

    async def rate_histogram(self) -> dict[int, int]:
        await self._checked()
        parts = await asyncio.gather(*(part.rate_histogram() for part in self._parts))
        return _sum_histograms(list(parts))

    async def close(self) -> None:
        await self._client.aclose()


def _namespaces(namespace: str, shards: int) -> list[str]:
    if shards == 1:
        return [namespace]
    return [shard_namespace(namespace, i, shards) for i in range(shards)]


def regroup(url: str, namespace: str, shards: int, new_shards: int) -> int:
    """Move a namespace's recrawl state from ``shards`` shards to ``new_shards`` (with the
    crawl stopped); return the URLs moved. The new keys are emptied first and the old ones
    deleted last, so an interrupted run is simply run again."""
    client: Any = cast(Any, sync_client(url))
    sources = [RedisBackend(url, n, client=client) for n in _namespaces(namespace, shards)]
    try:
        held = sum(source.count() for source in sources)
        bits = bucket_bits(-(-held // new_shards))
        targets = [
            RedisBackend(url, n, client=client, bits=bits)
            for n in _namespaces(namespace, new_shards)
        ]
        moved = 0
        for target in targets:
            target.clear()
        for source in sources:
            for bucket in source.buckets():
                groups: dict[int, list[tuple[PageState, float]]] = {}
                for state, queue in bucket:
                    shard = _shard_of(state.url, len(targets)) if len(targets) > 1 else 0
                    groups.setdefault(shard, []).append((state, queue))
                for shard, group in groups.items():
                    moved += targets[shard].place(group)
        for source in sources:
            source.clear()
        if new_shards > 1:
            client.set(shards_key(namespace), new_shards)
        else:
            client.delete(shards_key(namespace))
    finally:
        client.close()
    return moved


class _Detected:
    """A backend built on first use, once the namespace's shard count is read: opening a
    store stays free of I/O (a server down at open fails the first call, as before)."""

    errors: tuple[type[BaseException], ...] = _ERRORS

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
