"""Key sizing, key names, script arguments and reply decoding of the Redis index, shared
by the sync, async and sharded clients (see ``resources/simhash_index.lua`` for the layout)."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

import xxhash

from scrapy_simhash._redact import scrub
from scrapy_simhash._redis import mask_url
from scrapy_simhash.confirm import NO_SIGNATURE, SHORT_PAGE_DISTANCE, STORED_BITS
from scrapy_simhash.exceptions import IndexBackendError, IndexMismatchError
from scrapy_simhash.index.base import (
    IndexConfig,
    IndexStats,
    Match,
    Observation,
    bucket_stats,
    closest,
    key_of,
    reset_hint,
)
from scrapy_simhash.index.drops import TRIM_BATCH, DropRecord, pack_record, unpack_record
from scrapy_simhash.index.inflight import SCRIPT as IN_FLIGHT_SCRIPT
from scrapy_simhash.index.inflight import Hold, check_lease, check_owner
from scrapy_simhash.index.layout import BandLayout
from scrapy_simhash.index.redis.connection import logger
from scrapy_simhash.old_state import redis_index_old_state, refuse_old_redis

SCRIPT = resources.files("scrapy_simhash.resources").joinpath("simhash_index.lua").read_text()
#: Records a dropped near-duplicate (sent with EVAL: drops are rare next to pages, and the
#: server caches the compiled script anyway).
DROPS_SCRIPT = resources.files("scrapy_simhash.resources").joinpath("simhash_drops.lua").read_text()

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
#: 3: entry records end with the page's signature; 4: and the sketch of its other lines.
REDIS_FORMAT = 4
#: Version of the key layout of a sharded namespace's shards (index/sharded.py), recorded
#: with the namespace and each shard when there is more than one; other versions are
#: refused. 2: band records name their key and last-seen time, entries and key texts live
#: only at their key's home shard, locks are fields of each shard's record hash. 3: entry
#: records end with the page's signature, read at the candidates' homes; 4: a sketch of the
#: page's other lines before the signature.
SHARDED_FORMAT = 4
#: Bytes of a stored signature: the sketch, then the second test's signature.
SIGNATURE_BYTES = STORED_BITS // 8
#: Key kinds holding index data (band groups, entry records, key texts, drop records and
#: their order, filings in flight), as opposed to "m".
_DATA_KINDS = (b"b", b"e", b"u", b"d", b"q", b"f")


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


def _number(value: bytes | None) -> int | None:
    """A big-endian fingerprint or signature of a reply; None for the script's false."""
    return int.from_bytes(value, "big") if value else None


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
        # key id, fingerprint, last seen, signature
        self.entry_size = self.width + 12 + SIGNATURE_BYTES
        self.prefix = f"simhash:{{{config.namespace}}}:".encode()
        self.meta = self.prefix + b"m"
        self.drop_keys = [self.prefix + b"d", self.prefix + b"q"]
        #: Filings in flight (index/inflight.py): a hash of key -> "owner|since", holding
        #: only pages filed and not yet delivered.
        self.in_flight_key = self.prefix + b"f"
        self.layout = config.new_layout()
        self.ebits = key_bits(config.expected_size, MAX_ENTRY_BITS)
        self.gbits = key_bits(config.expected_size, self.layout.key_bits)
        self.record_id = b""
        #: The namespace's key of the second test: the adopted record's (None until one is),
        #: written into every record this client writes, back after a restart included.
        self.key: int | None = None
        #: Shards the namespace is spread over (see index/sharded.py); 1 = this layout alone.
        self.shards = 1
        #: This is one shard of a sharded namespace (every band record names its entry).
        self.shard = False

    def record(self) -> str:
        """A new record; ``instance`` differs at each creation, so a client holding the
        record of an earlier creation (whose digest every call names) learns that the
        namespace was created anew: its data lost, or reset, and the record rewritten by
        another process. The key is the one adopted (a record written back after a restart
        keeps the pages' signatures valid), else a new one."""
        extra: dict[str, int] = {"shards": self.shards} if self.shards > 1 else {}
        if self.shards > 1 or self.shard:
            extra["sharded_format"] = SHARDED_FORMAT
        return self.config.record(
            self.layout,
            self.config.new_key() if self.key is None else self.key,
            redis_format=REDIS_FORMAT,
            entry_bits=self.ebits,
            group_bits=self.gbits,
            instance=uuid.uuid4().hex,
            **extra,
        )

    def adopt(self, stored: bytes | None) -> None:
        if stored is None:
            raise IndexBackendError(
                f"Redis index {mask_url(self.url)}: the configuration record of namespace "
                f"{self.config.namespace!r} vanished while opening; retry"
            )
        where = f"namespace {self.config.namespace!r} on {mask_url(self.url)}"
        try:
            record = json.loads(stored)
        except ValueError:
            record = None
        found = redis_index_old_state(record) if isinstance(record, dict) else None
        if found is not None:
            raise refuse_old_redis(where, found, self.url, self.config.namespace)
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
                f"`shards`={self.shards}: set `shards`={stored_shards} "
                "(scrapy_simhash.index.grow.grow changes it; benchmarks/README.md, "
                f"'Sharded namespace'), or {reset_hint(self.config.namespace)}"
            )
        sharded = data.get("sharded_format", 1)
        if (self.shards > 1 or self.shard) and sharded != SHARDED_FORMAT:
            raise IndexMismatchError(
                f"{where} is a sharded namespace in sharded layout {sharded}, this version "
                f"reads sharded layout {SHARDED_FORMAT}; {reset_hint(self.config.namespace)}, "
                "or keep crawling it with the version that wrote it"
            )
        self.set_layout(layout, int(data["entry_bits"]), int(data["group_bits"]))
        self.key = key_of(data)

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
            b"%d" % ebits,
            b"%d" % self.config.max_distance,
            b"%d" % self.config.confirm_distance,
            b"%d" % SHORT_PAGE_DISTANCE,
        )
        self._ttl = repr(float(ttl)).encode()

    def pattern(self, kind: bytes) -> bytes:
        return _glob_escape(self.prefix) + kind + b"*"

    def entry_key(self, ident: bytes) -> bytes:
        bucket = int.from_bytes(ident[:4], "big") >> (32 - self.ebits) if self.ebits else 0
        return self.prefix + b"e" + bucket.to_bytes(2, "big")

    def args(
        self,
        mode: str,
        fingerprint: int = 0,
        key: str = "",
        ident: bytes = b"",
        *extra: bytes,
        signature: int = NO_SIGNATURE,
    ) -> list[bytes]:
        text = key.encode("utf-8", "surrogatepass")
        return [
            mode.encode(),
            *self._static,
            repr(float(self.config.clock())).encode(),
            self._ttl,
            fingerprint.to_bytes(self.width, "big"),
            signature.to_bytes(SIGNATURE_BYTES, "big"),
            ident or (xxhash.xxh3_64_digest(text) if text else b""),
            text,
            *extra,
            self.record_id,
        ]

    @staticmethod
    def rename_args(new: str) -> tuple[bytes, bytes, bytes]:
        """Arguments after the old key: (no id override), the new key's id and text."""
        return b"", key_id(new), new.encode("utf-8", "surrogatepass")

    def entries(self, bucket: bytes | None) -> Iterator[tuple[bytes, int, int, int]]:
        """(key id, fingerprint, last seen, signature) of each entry record of an entry
        bucket."""
        if not bucket:
            return
        seen = 8 + self.width
        size = self.entry_size
        for p in range(0, len(bucket) - size + 1, size):
            yield (
                bucket[p : p + 8],
                int.from_bytes(bucket[p + 8 : p + seen], "big"),
                int.from_bytes(bucket[p + seen : p + seen + 4], "big"),
                int.from_bytes(bucket[p + seen + 4 : p + size], "big"),
            )

    @staticmethod
    def matches(flat: list[Any]) -> Iterable[Match]:
        """The script's flat (key text, fingerprint, distance, signature) replies."""
        for i in range(0, len(flat), 4):
            yield Match(
                flat[i].decode("utf-8", "surrogatepass"),
                int.from_bytes(flat[i + 1], "big"),
                int(flat[i + 2]),
                int.from_bytes(flat[i + 3], "big"),
            )

    def drop_args(
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> list[Any] | None:
        """EVAL arguments recording a drop, or None when the record is off."""
        config = self.config
        if config.drop_max_entries <= 0:
            return None
        now = config.clock()
        value = pack_record(DropRecord(url, kept, distance, int(now), apart))
        return [
            DROPS_SCRIPT,
            2,
            *self.drop_keys,
            key_id(url),
            value,
            repr(float(now)),
            repr(float(config.drop_ttl_secs or 0)),
            config.drop_max_entries,
            TRIM_BATCH,
        ]

    def hold_args(self, key: str, owner: str, lease_secs: float, *, create: bool) -> list[Any]:
        """EVAL arguments of a hold (index/inflight.py)."""
        check_owner(owner)
        check_lease(lease_secs)
        return [
            IN_FLIGHT_SCRIPT,
            1,
            self.in_flight_key,
            b"hold",
            key.encode("utf-8", "surrogatepass"),
            owner.encode(),
            repr(float(self.config.clock())).encode(),
            repr(float(lease_secs)).encode(),
            b"1" if create else b"0",
        ]

    def settle_args(self, key: str, owner: str) -> list[Any]:
        """EVAL arguments of a settle."""
        return [
            IN_FLIGHT_SCRIPT,
            1,
            self.in_flight_key,
            b"settle",
            key.encode("utf-8", "surrogatepass"),
            owner.encode(),
        ]

    @staticmethod
    def hold_reply(reply: list[Any]) -> Hold:
        """The script's reply to a hold."""
        state, owner, age = (
            part.decode() if isinstance(part, bytes) else str(part) for part in reply
        )
        return Hold(state, owner, float(age))

    @staticmethod
    def mark(value: bytes | None) -> tuple[str, float] | None:
        """A stored mark, "owner|since"."""
        if not value:
            return None
        owner, _, since = value.decode().partition("|")
        return owner, float(since)

    def drop(self, url: str, value: bytes | None) -> DropRecord | None:
        """The live record of ``url`` from its stored value (a colliding id is no record)."""
        if not value:
            return None
        record = unpack_record(value)
        if record.url != url or self.config.drop_expired(record.at, self.config.clock()):
            return None
        return record

    def observation(self, reply: list[Any]) -> Observation:
        """The script's reply to observe or claim (see the script for its kinds)."""
        kind, rejected = int(reply[0]), int(reply[1])
        if kind == 1:
            return Observation(closest(self.matches(reply[2:])), None, False, rejected=rejected)
        previous = _number(reply[2])
        if kind == 2:  # claim: a live entry the test rejected already holds the key
            return Observation(None, previous, False, _number(reply[3]), rejected)
        if kind == 3:  # a twin: a distinct page holds this very fingerprint
            return Observation(None, previous, False, None, rejected)
        return Observation(None, previous, True, _number(reply[3]), rejected)

    def entry(self, bucket: bytes | None, ident: bytes) -> tuple[int, int] | None:
        """The live fingerprint and signature of key id ``ident`` in an entry bucket (as
        the script's find_record: a hit straddling two records is skipped)."""
        if not bucket:
            return None
        size = self.entry_size
        start = bucket.find(ident)
        while start >= 0:
            if start % size == 0:
                _, fingerprint, seen, signature = next(self.entries(bucket[start : start + size]))
                if self.config.expired(seen, self.config.clock()):
                    return None
                return fingerprint, signature
            start = bucket.find(ident, start + 1)
        return None

    def expired_ids(self, bucket: bytes | None) -> list[bytes]:
        now = self.config.clock()
        return [
            ident for ident, _, seen, _ in self.entries(bucket) if self.config.expired(seen, now)
        ]

    def error(self, action: str, exc: BaseException) -> IndexBackendError:
        detail = scrub(str(exc), self.url)
        masked = mask_url(self.url)
        # DEBUG only: the error is raised to the caller, whose logging is throttled (a crawl
        # during an outage would otherwise log one ERROR per page).
        logger.debug("Redis index %s: %s failed: %s", masked, action, detail)
        return IndexBackendError(
            f"Redis index {masked}: {action} failed: {detail} (is the server up and the URL right?)"
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
