"""``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``: an index shared by crawlers.

Every observe() is ONE ``EVALSHA`` of ``resources/simhash_index.lua``: the script finds the
closest live neighbour and stores the page in the same atomic step, so any number of
crawler processes can share the index without ever both keeping two near-duplicates.
redis-py's script objects reload the script on ``NOSCRIPT`` (after a server restart).

Compactness (~80 bytes per page besides the key text, at 100k and 1M pages sized with
``expected_size``): a Redis key costs ~80 bytes and a hash switches to a far larger
encoding once one value exceeds hash-max-listpack-value, so everything is packed into
strings and lists of ~64 records each. Band records (the fingerprint; in table 1 also its
entry bucket) are grouped by the top bits of their band and sorted, so the script
binary-searches the probe's band; entry records (key id, fingerprint, last seen) and key
texts live in buckets named by the key id. ``expected_size`` fixes the group and bucket
counts at creation: a corpus much larger makes every page rewrite longer strings (slower),
a much smaller one spends more on per-key overhead. See the script for the exact layout.

Cluster: all keys of a namespace share the hash tag ``{namespace}``, so a namespace lives
on one slot (one master). Spread load by using several namespaces (e.g. one per site).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

import xxhash

from scrapy_simhash._redact import scrub
from scrapy_simhash._redis import async_client, mask_url, sync_client
from scrapy_simhash.exceptions import IndexBackendError, IndexMismatchError
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
    bucket_stats,
    check_fingerprint,
    closest,
    ordered,
    reset_hint,
)
from scrapy_simhash.index.drops import TRIM_BATCH, DropRecord, pack_record, unpack_record
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.layout import BandLayout

logger = logging.getLogger(__name__)

SCRIPT = resources.files("scrapy_simhash.resources").joinpath("simhash_index.lua").read_text()
#: Records a dropped near-duplicate (sent with EVAL: drops are rare next to pages, and the
#: server caches the compiled script anyway).
DROPS_SCRIPT = (
    resources.files("scrapy_simhash.resources").joinpath("simhash_drops.lua").read_text()
)

#: Records per band group and entries per entry bucket aimed at when sizing a new index:
#: a Redis key costs ~80 bytes, so ~64 records spread it to ~1 byte each, while the strings
#: a page rewrites stay ~1 KB. 128 saves ~8 bytes per page but costs ~25% more script time.
RECORDS_PER_KEY = 64
#: Group and entry-bucket bits without an expected size: ~250 records per key at 1M pages,
#: ~25 at 100k.
DEFAULT_KEY_BITS = 12
#: Entry buckets are named by a 16-bit number.
MAX_ENTRY_BITS = 16
#: Version of the Redis key layout, recorded with the index; other versions are refused.
REDIS_FORMAT = 2
_SCAN_BATCH = 1000
#: Key kinds holding index data (band groups, entry records, key texts, drop records and
#: their order), as opposed to "m".
_DATA_KINDS = (b"b", b"e", b"u", b"d", b"q")
#: Connections per client; async callers beyond this wait for a free one instead of
#: failing with redis-py's "Too many connections".
DEFAULT_MAX_CONNECTIONS = 64
#: Pipelines of script calls one async index keeps in flight, and calls per pipeline.
MAX_PIPELINES = 4
MAX_BATCH = 256


def key_bits(expected_size: int | None, most: int) -> int:
    """Bits naming a group or entry bucket so each holds ~:data:`RECORDS_PER_KEY` records."""
    if not expected_size:
        return min(most, DEFAULT_KEY_BITS)
    return max(0, min(most, math.ceil(math.log2(max(1, expected_size / RECORDS_PER_KEY)))))


def group_mask(mask: int, bits: int) -> int:
    """The ``bits`` most significant set bits of ``mask``: a band group holds every band
    value of its table that shares them."""
    out = 0
    for _ in range(min(bits, mask.bit_count())):
        top = 1 << (mask.bit_length() - 1)
        out |= top
        mask ^= top
    return out


def key_id(key: str) -> bytes:
    """64-bit id of a key (collision odds ~ N^2 / 2^65: 3e-8 at a million pages)."""
    return xxhash.xxh3_64_digest(key.encode("utf-8", "surrogatepass"))


def client_options(options: dict[str, Any]) -> dict[str, Any]:
    """redis-py keyword arguments: a bounded retry so an outage surfaces in seconds."""
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    opts = dict(options)
    retries = int(opts.pop("retries", 3))
    opts.setdefault("max_connections", DEFAULT_MAX_CONNECTIONS)
    opts.setdefault("socket_timeout", 5.0)
    opts.setdefault("socket_connect_timeout", 5.0)
    opts.setdefault("retry", Retry(ExponentialBackoff(cap=0.5, base=0.05), retries))
    opts["decode_responses"] = False
    return opts


def _glob_escape(data: bytes) -> bytes:
    out = bytearray()
    for byte in data:
        if byte in b"*?[]\\":
            out += b"\\"
        out.append(byte)
    return bytes(out)


class _Codec:
    """Key names, script arguments and reply decoding shared by the sync and async clients."""

    def __init__(self, url: str, config: IndexConfig) -> None:
        self.url = url
        self.config = config
        self.width = config.bits // 8
        self.entry_size = self.width + 12  # key id, fingerprint, last seen
        self.prefix = f"simhash:{{{config.namespace}}}:".encode()
        self.meta = self.prefix + b"m"
        self.drop_keys = [self.prefix + b"d", self.prefix + b"q"]
        self.layout = config.new_layout()
        self.ebits = key_bits(config.expected_size, MAX_ENTRY_BITS)
        self.gbits = key_bits(config.expected_size, self.layout.key_bits)
        self.record_id = b""
        #: Shards the namespace is spread over (see index/sharded.py); 1 = this layout alone.
        self.shards = 1
        #: This is one shard of a sharded namespace (every band record names its entry).
        self.shard = False

    def record(self) -> str:
        extra = {"shards": self.shards} if self.shards > 1 else {}
        return self.config.record(
            self.layout,
            redis_format=REDIS_FORMAT,
            entry_bits=self.ebits,
            group_bits=self.gbits,
            **extra,
        )

    def adopt(self, stored: bytes | None) -> None:
        if stored is None:
            raise IndexBackendError(
                f"Redis index {mask_url(self.url)}: the configuration record of namespace "
                f"{self.config.namespace!r} vanished while opening; retry"
            )
        where = f"namespace {self.config.namespace!r} on {mask_url(self.url)}"
        layout, data = self.config.adopt(stored.decode(), where)
        # The digest of the record in place, which every script call names (see the script).
        self.record_id = xxhash.xxh3_64_hexdigest(stored).encode()
        if data.get("redis_format") != REDIS_FORMAT:
            raise IndexMismatchError(
                f"{where} holds an index in Redis layout {data.get('redis_format', 1)}, this "
                f"version reads layout {REDIS_FORMAT}; {reset_hint(self.config.namespace)}"
            )
        stored_shards = int(data.get("shards", 1))
        if stored_shards != self.shards:
            raise IndexMismatchError(
                f"{where} is spread over {stored_shards} shard(s), opened with "
                f"SIMHASH_INDEX_SHARDS={self.shards}: set SIMHASH_INDEX_SHARDS={stored_shards} "
                f"(README: growing a sharded namespace), or {reset_hint(self.config.namespace)}"
            )
        self.set_layout(layout, int(data["entry_bits"]), int(data["group_bits"]))

    def set_layout(self, layout: BandLayout, ebits: int, gbits: int) -> None:
        self.layout = layout
        self.ebits = ebits
        self.gbits = gbits

        def packed(masks: Iterable[int]) -> bytes:
            return b"".join(mask.to_bytes(self.width, "big") for mask in masks)

        ttl = self.config.ttl_secs or 0
        # Encoded once: redis-py's per-argument encoding is a large share of a call's cost.
        self._static = (
            self.prefix,
            packed(layout.masks),
            packed(group_mask(mask, gbits) for mask in layout.masks),
            b"%d%s" % (ebits, b"s" if self.shard else b""),
            b"%d" % self.config.max_distance,
        )
        self._ttl = repr(float(ttl)).encode()

    def pattern(self, kind: bytes) -> bytes:
        return _glob_escape(self.prefix) + kind + b"*"

    def entry_key(self, ident: bytes) -> bytes:
        bucket = int.from_bytes(ident[:4], "big") >> (32 - self.ebits) if self.ebits else 0
        return self.prefix + b"e" + bucket.to_bytes(2, "big")

    def args(
        self, mode: str, fingerprint: int = 0, key: str = "", ident: bytes = b"", *extra: bytes
    ) -> list[bytes]:
        text = key.encode("utf-8", "surrogatepass")
        return [
            mode.encode(),
            *self._static,
            repr(float(self.config.clock())).encode(),
            self._ttl,
            fingerprint.to_bytes(self.width, "big"),
            ident or (xxhash.xxh3_64_digest(text) if text else b""),
            text,
            *extra,
            self.record_id,
        ]

    @staticmethod
    def rename_args(new: str) -> tuple[bytes, bytes, bytes]:
        """Arguments after the old key: (no id override), the new key's id and text."""
        return b"", key_id(new), new.encode("utf-8", "surrogatepass")

    def entries(self, bucket: bytes | None) -> Iterable[tuple[bytes, int, int]]:
        """(key id, fingerprint, last seen) of each entry record of an entry bucket."""
        if not bucket:
            return
        width, size = self.width, self.entry_size
        for p in range(0, len(bucket) - size + 1, size):
            yield (
                bucket[p : p + 8],
                int.from_bytes(bucket[p + 8 : p + 8 + width], "big"),
                int.from_bytes(bucket[p + 8 + width : p + size], "big"),
            )

    @staticmethod
    def matches(flat: list[Any]) -> Iterable[Match]:
        for i in range(0, len(flat), 4):
            yield Match(
                flat[i].decode("utf-8", "surrogatepass"),
                int.from_bytes(flat[i + 1], "big"),
                int(flat[i + 2]),
            )

    def drop_args(self, url: str, kept: str, distance: int) -> list[Any] | None:
        """EVAL arguments recording a drop, or None when the record is off."""
        config = self.config
        if config.drop_max_entries <= 0:
            return None
        now = config.clock()
        value = pack_record(DropRecord(url, kept, distance, int(now)))
        return [
            DROPS_SCRIPT, 2, *self.drop_keys, key_id(url), value, repr(float(now)),
            repr(float(config.drop_ttl_secs or 0)), config.drop_max_entries, TRIM_BATCH,
        ]

    def drop(self, url: str, value: bytes | None) -> DropRecord | None:
        """The live record of ``url`` from its stored value (a colliding id is no record)."""
        if not value:
            return None
        record = unpack_record(value)
        if record.url != url or self.config.drop_expired(record.at, self.config.clock()):
            return None
        return record

    def observation(self, reply: list[Any]) -> Observation:
        if int(reply[0]) == 2:  # claim: another fingerprint already holds the key
            return Observation(None, int.from_bytes(reply[1], "big"), False)
        if int(reply[0]) == 1:
            return Observation(closest(self.matches(reply[1:])), None, False)
        previous = reply[1] if len(reply) > 1 else None
        return Observation(None, int.from_bytes(previous, "big") if previous else None, True)

    def entry(self, bucket: bytes | None, ident: bytes) -> int | None:
        """The live fingerprint of key id ``ident`` in an entry bucket (as the script's
        find_record: a hit straddling two records is skipped)."""
        if not bucket:
            return None
        size, width = self.entry_size, self.width
        start = bucket.find(ident)
        while start >= 0:
            if start % size == 0:
                seen = int.from_bytes(bucket[start + 8 + width : start + size], "big")
                if self.config.expired(seen, self.config.clock()):
                    return None
                return int.from_bytes(bucket[start + 8 : start + 8 + width], "big")
            start = bucket.find(ident, start + 1)
        return None

    def expired_ids(self, bucket: bytes | None) -> list[bytes]:
        now = self.config.clock()
        return [
            ident
            for ident, _, seen in self.entries(bucket)
            if self.config.expired(seen, now)
        ]

    def error(self, action: str, exc: BaseException) -> IndexBackendError:
        detail = scrub(str(exc), self.url)
        masked = mask_url(self.url)
        # DEBUG only: the error is raised to the caller, whose logging is throttled (a crawl
        # during an outage would otherwise log one ERROR per page).
        logger.debug("Redis index %s: %s failed: %s", masked, action, detail)
        return IndexBackendError(
            f"Redis index {masked}: {action} failed: {detail} (is the server up and the URL "
            "right? the next call reconnects)"
        )

    def stats(self, entries: int, groups: Iterable[tuple[bytes, int]]) -> IndexStats:
        """Records per band group; table 1's records also carry a 2-byte entry bucket."""
        table = len(self.prefix) + 1
        return bucket_stats(
            "redis",
            entries,
            self.layout,
            (n // (self.width + 2 * (name[table] == 1)) for name, n in groups),
        )


def _no_record(exc: BaseException) -> bool:
    """Whether the script refused because the configuration record is missing."""
    from redis.exceptions import ResponseError

    return isinstance(exc, ResponseError) and str(exc).startswith("NORECORD")


def _redis_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisClusterException, RedisError

    return (RedisError, RedisClusterException, OSError)


class RedisIndex(NearDuplicateIndex):
    """Blocking client (CLI, scripts, benchmarks)."""

    def __init__(self, url: str, config: IndexConfig, **options: Any) -> None:
        self.url = url
        self.config = config
        self._codec = _Codec(url, config)
        self._errors = _redis_errors()
        try:
            client: Any = sync_client(url, **client_options(options))
            self._client = client
            self._script = self._client.register_script(SCRIPT)
            if config.reset:
                self._delete(b"")
            self._restore_record()
        except self._errors as exc:
            raise self._codec.error("open", exc) from exc
        self.layout = self._codec.layout

    def _run(self, action: str, *args: Any) -> Any:
        try:
            try:
                return self._script(keys=[self._codec.meta], args=self._codec.args(action, *args))
            except self._errors as exc:
                if not _no_record(exc):
                    raise
                self._restore_record()
                return self._script(keys=[self._codec.meta], args=self._codec.args(action, *args))
        except self._errors as exc:
            raise self._codec.error(action, exc) from exc

    def _restore_record(self) -> None:
        """Write this index's record (at creation, or back after the server lost it), or
        adopt the one in place: IndexMismatchError if that one differs."""
        meta = self._codec.meta
        self._client.hsetnx(meta, "config", self._codec.record())
        self._codec.adopt(self._client.hget(meta, "config"))
        self._client.hset(meta, "cid", self._codec.record_id)

    def observe(self, key: str, fingerprint: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        return self._codec.observation(self._run("observe", fingerprint, key))

    def claim(self, key: str, fingerprint: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        return self._codec.observation(self._run("claim", fingerprint, key))

    def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        return ordered(self._codec.matches(self._run("query", fingerprint)))

    def rename(self, old: str, new: str) -> bool:
        check_key(new)
        return bool(self._run("rename", 0, old, *self._codec.rename_args(new)))

    def record_drop(self, url: str, kept: str, distance: int) -> None:
        check_key(url)
        args = self._codec.drop_args(url, kept, distance)
        if args is None:
            return
        try:
            self._client.execute_command("EVAL", *args)
        except self._errors as exc:
            raise self._codec.error("record drop", exc) from exc

    def drop_of(self, url: str) -> DropRecord | None:
        try:
            value = self._client.hget(self._codec.drop_keys[0], key_id(url))
        except self._errors as exc:
            raise self._codec.error("drop lookup", exc) from exc
        return self._codec.drop(url, value)

    def drop_count(self) -> int:
        try:
            return int(self._client.hlen(self._codec.drop_keys[0]))
        except self._errors as exc:
            raise self._codec.error("drop count", exc) from exc

    def keys(self) -> Iterator[str]:
        now, prefix = self.config.clock(), self._codec.prefix
        try:
            for name in list(self._keys(b"e")):
                # One transaction: a crawl writing meanwhile cannot shift texts against entries
                # (both keys carry the namespace's hash tag: one slot on a cluster).
                pipe = self._client.pipeline(transaction=True)
                pipe.get(name)
                pipe.lrange(prefix + b"u" + name[len(prefix) + 1 :], 0, -1)
                bucket, texts = pipe.execute()
                for (_, _, seen), text in zip(self._codec.entries(bucket), texts, strict=False):
                    if not self.config.expired(seen, now):
                        yield text.decode("utf-8", "surrogatepass")
        except self._errors as exc:
            raise self._codec.error("list keys", exc) from exc

    def drops(self) -> Iterator[DropRecord]:
        now = self.config.clock()
        try:
            for _, value in self._client.hscan_iter(self._codec.drop_keys[0], count=_SCAN_BATCH):
                record = unpack_record(value)
                if not self.config.drop_expired(record.at, now):
                    yield record
        except self._errors as exc:
            raise self._codec.error("list drops", exc) from exc

    def get(self, key: str) -> int | None:
        ident = key_id(key)
        try:
            bucket = self._client.get(self._codec.entry_key(ident))
        except self._errors as exc:
            raise self._codec.error("get", exc) from exc
        return self._codec.entry(bucket, ident)

    def remove(self, key: str) -> bool:
        return bool(self._run("remove", 0, key))

    def _keys(self, kind: bytes) -> Iterable[bytes]:
        return self._client.scan_iter(match=self._codec.pattern(kind), count=_SCAN_BATCH)  # type: ignore[no-any-return]

    def _delete(self, kind: bytes) -> None:
        batch: list[bytes] = []
        for name in self._keys(kind):
            if name != self._codec.meta or not kind:
                batch.append(name)
            if len(batch) >= _SCAN_BATCH:
                self._client.delete(*batch)
                batch.clear()
        if batch:
            self._client.delete(*batch)

    def clear(self) -> None:
        try:
            for kind in _DATA_KINDS:
                self._delete(kind)
            self._client.hset(self._codec.meta, "n", 0)
        except self._errors as exc:
            raise self._codec.error("clear", exc) from exc

    def count(self) -> int:
        try:
            return int(self._client.hget(self._codec.meta, "n") or 0)
        except self._errors as exc:
            raise self._codec.error("count", exc) from exc

    def purge_expired(self) -> int:
        if self.config.ttl_secs is None:
            return 0
        removed = 0
        try:
            for name in list(self._keys(b"e")):
                for ident in self._codec.expired_ids(self._client.get(name)):
                    removed += int(
                        self._script(
                            keys=[self._codec.meta],
                            args=self._codec.args("expire", ident=ident),
                        )
                    )
        except self._errors as exc:
            raise self._codec.error("purge", exc) from exc
        return removed

    def stats(self) -> IndexStats:
        try:
            names = list(self._keys(b"b"))
            lengths: list[int] = []
            for start in range(0, len(names), _SCAN_BATCH):
                pipe = self._client.pipeline(transaction=False)
                for name in names[start : start + _SCAN_BATCH]:
                    pipe.strlen(name)
                lengths.extend(pipe.execute())
        except self._errors as exc:
            raise self._codec.error("stats", exc) from exc
        return self._codec.stats(self.count(), zip(names, lengths, strict=True))

    def close(self) -> None:
        try:
            self._client.close()
        except self._errors as exc:
            logger.warning("closing the Redis index %s failed: %s", mask_url(self.url), exc)


class AsyncRedisIndex(AsyncNearDuplicateIndex):
    """redis.asyncio client; build it inside the running loop with :meth:`create`.

    Script calls made while others are in flight are written together as one pipeline
    (still one ``EVALSHA`` per operation, each atomic on its own): redis-py's per-command
    overhead (connection checkout, packing, one socket write and read-wakeup per command)
    costs about three times the script itself, and a pipeline shares it across the batch.
    """

    def __init__(self, url: str, config: IndexConfig, **options: Any) -> None:
        self.url = url
        self.config = config
        self._codec = _Codec(url, config)
        self._errors = _redis_errors()
        opts = client_options(options)
        client: Any = async_client(url, **opts)
        self._client = client
        self._sha = hashlib.sha1(SCRIPT.encode()).hexdigest()
        connections = int(opts["max_connections"])
        self._slots = asyncio.Semaphore(connections)
        self._pending: list[tuple[list[bytes], asyncio.Future[Any]]] = []
        self._senders = 0
        self._max_senders = max(1, min(MAX_PIPELINES, connections))
        self._tasks: set[asyncio.Task[None]] = set()
        self.layout = self._codec.layout

    @classmethod
    async def create(cls, url: str, config: IndexConfig, **options: Any) -> AsyncRedisIndex:
        index = cls(url, config, **options)
        codec = index._codec
        try:
            if config.reset:
                await index._delete(b"")
            await index._restore_record()
        except index._errors as exc:
            await index.close()
            raise codec.error("open", exc) from exc
        except BaseException:
            await index.close()
            raise
        index.layout = codec.layout
        return index

    async def _run(self, action: str, *args: Any, restored: bool = False) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((self._codec.args(action, *args), future))
        if self._senders < self._max_senders:
            self._senders += 1
            task = asyncio.create_task(self._send())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            return await future
        except self._errors as exc:
            if _no_record(exc) and not restored:
                try:
                    await self._restore_record()
                except self._errors as again:
                    raise self._codec.error(action, again) from again
                return await self._run(action, *args, restored=True)
            raise self._codec.error(action, exc) from exc

    async def _restore_record(self) -> None:
        """Async twin of :meth:`RedisIndex._restore_record`."""
        meta = self._codec.meta
        await self._client.hsetnx(meta, "config", self._codec.record())
        self._codec.adopt(await self._client.hget(meta, "config"))
        await self._client.hset(meta, "cid", self._codec.record_id)

    async def _send(self) -> None:
        """Drain the queue in pipelines of at most :data:`MAX_BATCH` script calls."""
        try:
            await asyncio.sleep(0)  # callers scheduled in this loop turn join the batch
            while self._pending:
                batch = self._pending[:MAX_BATCH]
                del self._pending[:MAX_BATCH]
                try:
                    async with self._slots:
                        replies = await self._pipeline([args for args, _ in batch])
                except BaseException as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for (_, future), reply in zip(batch, replies, strict=True):
                    if future.done():  # the caller was cancelled
                        continue
                    if isinstance(reply, Exception):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        finally:
            self._senders -= 1

    async def _pipeline(self, calls: list[list[bytes]]) -> list[Any]:
        from redis.exceptions import NoScriptError

        replies = await self._evalsha(calls)
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if missing:  # a restarted or flushed server: the script never ran, so rerun it
            await self._client.script_load(SCRIPT)
            again = await self._evalsha([calls[i] for i in missing])
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        return replies

    async def _evalsha(self, calls: list[list[bytes]]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        meta = self._codec.meta
        for args in calls:
            # execute_command: redis-py's cluster pipeline blocks the evalsha() method, but
            # every key of a call shares one hash tag, so the command routes like any other.
            pipe.execute_command("EVALSHA", self._sha, 1, meta, *args)
        return list(await pipe.execute(raise_on_error=False))

    async def observe(self, key: str, fingerprint: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        return self._codec.observation(await self._run("observe", fingerprint, key))

    async def claim(self, key: str, fingerprint: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        return self._codec.observation(await self._run("claim", fingerprint, key))

    async def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        return ordered(self._codec.matches(await self._run("query", fingerprint)))

    async def rename(self, old: str, new: str) -> bool:
        check_key(new)
        return bool(await self._run("rename", 0, old, *self._codec.rename_args(new)))

    async def record_drop(self, url: str, kept: str, distance: int) -> None:
        check_key(url)
        args = self._codec.drop_args(url, kept, distance)
        if args is None:
            return
        try:
            async with self._slots:
                await self._client.execute_command("EVAL", *args)
        except self._errors as exc:
            raise self._codec.error("record drop", exc) from exc

    async def drop_of(self, url: str) -> DropRecord | None:
        try:
            value = await self._client.hget(self._codec.drop_keys[0], key_id(url))
        except self._errors as exc:
            raise self._codec.error("drop lookup", exc) from exc
        return self._codec.drop(url, value)

    async def drop_count(self) -> int:
        try:
            return int(await self._client.hlen(self._codec.drop_keys[0]))
        except self._errors as exc:
            raise self._codec.error("drop count", exc) from exc

    async def get(self, key: str) -> int | None:
        ident = key_id(key)
        try:
            bucket = await self._client.get(self._codec.entry_key(ident))
        except self._errors as exc:
            raise self._codec.error("get", exc) from exc
        return self._codec.entry(bucket, ident)

    async def remove(self, key: str) -> bool:
        return bool(await self._run("remove", 0, key))

    async def _names(self, kind: bytes) -> list[bytes]:
        return [
            name
            async for name in self._client.scan_iter(
                match=self._codec.pattern(kind), count=_SCAN_BATCH
            )
        ]

    async def _delete(self, kind: bytes) -> None:
        names = await self._names(kind)
        for start in range(0, len(names), _SCAN_BATCH):
            await self._client.delete(*names[start : start + _SCAN_BATCH])

    async def clear(self) -> None:
        try:
            for kind in _DATA_KINDS:
                await self._delete(kind)
            await self._client.hset(self._codec.meta, "n", 0)
        except self._errors as exc:
            raise self._codec.error("clear", exc) from exc

    async def count(self) -> int:
        try:
            return int(await self._client.hget(self._codec.meta, "n") or 0)
        except self._errors as exc:
            raise self._codec.error("count", exc) from exc

    async def purge_expired(self) -> int:
        if self.config.ttl_secs is None:
            return 0
        removed = 0
        try:
            for name in await self._names(b"e"):
                for ident in self._codec.expired_ids(await self._client.get(name)):
                    args = self._codec.args("expire", ident=ident)
                    reply = (await self._pipeline([args]))[0]
                    if isinstance(reply, Exception):
                        raise reply
                    removed += int(reply)
        except self._errors as exc:
            raise self._codec.error("purge", exc) from exc
        return removed

    async def stats(self) -> IndexStats:
        try:
            groups = [
                (name, int(await self._client.strlen(name))) for name in await self._names(b"b")
            ]
        except self._errors as exc:
            raise self._codec.error("stats", exc) from exc
        return self._codec.stats(await self.count(), groups)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            await self._client.aclose()
        except self._errors as exc:
            logger.warning("closing the Redis index %s failed: %s", mask_url(self.url), exc)
