"""A Redis namespace spread over several shards (the ``shards`` option), still exact.

Why: one namespace under one hash tag lives on one cluster master, whose memory and single
script thread then bound the crawl whatever the number of masters.

Layout (sharded layout 2, recorded as ``sharded_format`` in the namespace's and each
shard's record; a namespace of another sharded layout is refused). Shard ``i`` lives under
its own hash tag ``{namespace:s<i>of<shards>.<n>}``, ``n`` picked so its slot falls in the
``i``-th of ``shards`` equal slot ranges: one shard per master of a cluster created with
equal ranges (redis-cli's default), instead of shards colliding on a master by chance.
Table ``t``'s band record of a page with fingerprint ``f`` lives in ``shard(t, band_t(f))``
(a hash of the table and band value) and names the page's key id and last-seen time; the
page's entry and URL live only in the home shard of its key (``get``/``remove`` and its
previous fingerprint are found there). ``D(f)`` is the set of shards holding the page's
band records. The root record at ``{namespace}`` says how many shards there are; a
namespace opened with another count refuses. The shards' operations are one Redis Functions
library (``resources/simhash_sharded.lua``), loaded on every master.

Same verdicts as one shard. One shard reports a stored page as a match when it shares a
band with the probe in some table and is within ``max_distance``. If they share table
``t``'s band, both band records are in ``shard(t, band)``, which the probe queries for table
``t``; every match a shard reports is such a pair. So the union over ``D(f)`` is exactly the
single-shard answer, including the matches beyond ``exact_distance`` (band layout built for
it, matches accepted up to ``max_distance``): those are found iff they share a band, here
as there. Expiry is read from the band record's last-seen time, which every store writes
with the entry's.

Atomic across processes (two rounds, each one pipeline of one function call per shard, sent
to all shards at once):

1. ``lock`` on every shard of ``D(f)`` and the home shard: all or none of that shard's locks
   (one per (table, band value) the shard answers for, plus the key's lock at home: fields of
   the shard's record hash holding a random token and a deadline in server time) and the
   live matches there (fingerprint, distance, key id), and at home the key's entry.
2. ``store`` (unique page): release, and store the band records and (home) the entry and URL
   in the same call; shards holding only the key's previous fingerprint drop its records.
   Or ``unlock`` (near-duplicate): release, and read the closest matches' URLs at their
   homes in the same pipeline.

If any shard is busy in round 1 the page releases what it took and retries after a random
backoff (no lock is held while waiting, so there is no deadlock, whatever order pages meet
in). Two pages a shard would match share a band value in some table, hence the lock on it:
whichever locks it second has all its locks only after the first released it in round 2,
i.e. after the first stored its band record there (or found a copy and stored nothing), and
its own round 1 then reads that shard. Two pages under one key share the key's lock.

A writer's round 2 stores its band records and its entry on different shards in parallel,
so a page may meet a band record whose key's entry (and URL) has not landed yet: it reads the
URL again, for at most one lease. A band record whose key has no entry after that (its
writer's home failed in round 2, or the key was removed meanwhile) makes the page "not
checked" (:class:`IndexBackendError`), never a copy of a page the index cannot name.

Leases: a process that dies (SIGKILL) mid-page leaves lock fields whose deadline passes
after ``lock_lease_secs``; pages waiting on them then proceed and read whatever it stored,
so the namespace is blocked for at most one lease and stored pages stay found. The first
page to meet an expired lock on a shard sweeps that shard's expired locks. A live process
whose lease ran out (stalled longer than the lease) and whose lock another page took learns
it in round 2: the page is stored but :class:`IndexBackendError` says it was not checked, as
does a shard failing mid-page. The crawl then lets the page through ("not checked"): a
failure never drops a page.

Drop records (rare, bounded by count) stay under the root tag, so their bound and order are
exact. Recrawl state is spread by URL hash over the same shard tags (recrawl/redisstore.py).

Costs: two round trips per page (a near-duplicate: two as well); each shard touched
(``|D(f) ∪ {home}|``: 4 tables: ~2.7 of 3 shards, ~4.0 of 6) takes one call per round; a
page's band records are stored once in the cluster (20 bytes each with 64-bit
fingerprints), its entry and URL once, at home; benchmarks/README.md has the figures.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from importlib import resources
from typing import Any

import xxhash

from scrapy_simhash._redis import MAX_SHARDS, is_cluster_url, mask_url, shard_namespace, sync_client
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, PageNotChecked
from scrapy_simhash.index.base import (
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
    bucket_stats,
    check_fingerprint,
    closest,
    ordered,
)
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.codec import _DATA_KINDS, _Codec, group_mask, key_id
from scrapy_simhash.index.redis.connection import (
    _SCAN_BATCH,
    _no_record,
    _redis_errors,
    client_options,
)
from scrapy_simhash.index.redis.drop_record import RedisDropRecord

logger = logging.getLogger(__name__)

#: Lease of a page's locks: far above a healthy page's two round trips (~1 ms), so only a
#: process stalled this long loses them (and then reports the page as not checked).
LOCK_LEASE_SECS = 10.0
#: Most a page waits for busy locks (a dead holder's lease, then others') before it passes
#: "not checked".
LOCK_WAIT_SECS = 5.0
#: Most a copy waits for its match's entry to land at the match's home (the writer's second
#: round sends it in the same pipeline as the band records: milliseconds).
TEXT_WAIT_SECS = 1.0
_LIBRARY_TEXT = (
    resources.files("scrapy_simhash.resources").joinpath("simhash_sharded.lua").read_text()
)
#: The shard library and its function, named after its text so clients of different
#: versions sharing a cluster each call their own.
SHARD_FUNCTION = "simhash_shard_" + xxhash.xxh3_64_hexdigest(_LIBRARY_TEXT.encode())[:12]
SHARD_LIBRARY = _LIBRARY_TEXT.replace("__LIBRARY__", SHARD_FUNCTION)


def check_shards(shards: int) -> int:
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise ConfigurationError(
            f"`shards` must be a whole number from 1 to {MAX_SHARDS}, got {shards!r}"
        )
    return shards


class ShardedRedisIndex(RedisDropRecord, NearDuplicateIndex):
    """Blocking client of a sharded namespace (the crawl runs it in a worker thread)."""

    def __init__(
        self,
        url: str,
        config: IndexConfig,
        *,
        shards: int,
        lock_lease_secs: float = LOCK_LEASE_SECS,
        _grow_from: int | None = None,
        **options: Any,
    ) -> None:
        self.url = url
        self.config = config
        self.shards = check_shards(shards)
        if lock_lease_secs <= 0:
            raise ConfigurationError(f"lock_lease_secs must be positive, got {lock_lease_secs}")
        self._lease_ms = b"%d" % max(1, round(lock_lease_secs * 1000))
        #: A page waits at most this long for locks, then passes "not checked": less than
        #: the crawl's call timeout (SIMHASH_INDEX_TIMEOUT_SECS, 10 s by default), which
        #: would take the wait for an outage.
        self._wait_secs = min(2 * lock_lease_secs + 1, LOCK_WAIT_SECS)
        self._lease_secs = lock_lease_secs
        self.errors = _redis_errors()
        self._root = _Codec(url, config)
        self._root.shards = shards
        # A new namespace: each shard holds ~1/shards of the records and entries, so fewer
        # keys keep ~RECORDS_PER_KEY records each (an existing one keeps its record's).
        fewer = shards.bit_length() - 1
        self._root.ebits = max(0, self._root.ebits - fewer)
        self._root.gbits = max(0, self._root.gbits - fewer)
        self._codecs = [
            _Codec(
                url,
                replace(config, namespace=shard_namespace(config.namespace, i, shards)),
            )
            for i in range(shards)
        ]
        for codec in self._codecs:
            codec.shard = True
        self._cluster = is_cluster_url(url)
        #: Per shard: the cluster node serving its tag (forgotten on any error).
        self._nodes: dict[int, Any] = {}
        #: Per shard: the layout argument of its calls (see the library).
        self._conf: list[bytes] = [b""] * shards
        try:
            client: Any = sync_client(url, **client_options(options))
            self._client = client
            self._load()
            if config.reset:
                for codec in (self._root, *self._codecs):
                    self._delete(codec, b"")
            self._open(_grow_from)
        except self.errors as exc:
            raise self._root.error("open", exc) from exc
        self.layout = self._root.layout

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        return self._root.error(action, exc)

    # -- records ------------------------------------------------------------------------

    def _open(self, grow_from: int | None) -> None:
        """Adopt the root record (while growing: the one of ``grow_from`` shards, rewritten
        by :func:`grow` once every entry is copied), then each shard's."""
        root = self._root
        written = bool(self._client.hsetnx(root.meta, "config", root.record()))
        if grow_from is not None:
            root.shards = grow_from
        root.adopt(self._client.hget(root.meta, "config"))
        root.shards = self.shards
        for shard in range(self.shards):
            written = self._restore(shard) or written
        self.created = written

    def _restore(self, shard: int) -> bool:
        """Write shard ``shard``'s record (the root's layout), or adopt the one in place;
        True when it was written (there was none)."""
        codec, root = self._codecs[shard], self._root
        codec.set_layout(root.layout, root.ebits, root.gbits)
        written = bool(self._client.hsetnx(codec.meta, "config", codec.record()))
        codec.adopt(self._client.hget(codec.meta, "config"))
        if codec.layout.name != root.layout.name or (codec.ebits, codec.gbits) != (
            root.ebits,
            root.gbits,
        ):
            raise IndexBackendError(
                f"Redis index {mask_url(self.url)}: shard {shard} of namespace "
                f"{self.config.namespace!r} has layout {codec.layout.name}, the namespace "
                f"{root.layout.name}; reset the namespace"
            )
        self._client.hset(codec.meta, "cid", codec.record_id)
        fields = (
            codec.prefix,
            b"%d" % codec.width,
            b"".join(mask.to_bytes(codec.width, "big") for mask in codec.layout.masks),
            b"".join(
                group_mask(mask, codec.gbits).to_bytes(codec.width, "big")
                for mask in codec.layout.masks
            ),
            b"%d" % codec.ebits,
            b"%d" % self.config.max_distance,
            b"%d" % (self.config.ttl_secs or 0),
        )
        self._conf[shard] = b"".join(len(f).to_bytes(2, "big") + f for f in fields)
        return written

    @property
    def creation(self) -> str | None:
        """The digests of the root's and every shard's record: a shard that lost its data
        (a cluster node restarted empty) and was written back changes it."""
        ids = [self._root.record_id, *(codec.record_id for codec in self._codecs)]
        return b"/".join(ids).decode() if all(ids) else None

    # -- placement -------------------------------------------------------------------------

    def home(self, ident: bytes) -> int:
        """Shard holding the entry of key id ``ident`` (its low bits: entry buckets use the
        high ones)."""
        return int.from_bytes(ident[4:], "big") % self.shards

    def _shard_of(self, band: bytes) -> int:
        return xxhash.xxh3_64_intdigest(band) % self.shards

    def _tables(self, fingerprint: int) -> dict[int, bytes]:
        """Per shard, the tables whose band of ``fingerprint`` it holds (one byte each, in
        table order): the band value names its shard and its lock."""
        width = self._root.width
        tables: dict[int, bytes] = {}
        for t, mask in enumerate(self.layout.masks, 1):
            table = bytes([t])
            shard = self._shard_of(table + (fingerprint & mask).to_bytes(width, "big"))
            tables[shard] = tables.get(shard, b"") + table
        return tables

    def _plan(self, fingerprint: int, ident: bytes) -> dict[int, bytes]:
        """The tables of each shard a page touches: ``D(f)`` and the key's home."""
        plan = self._tables(fingerprint)
        plan.setdefault(self.home(ident), b"")
        return dict(sorted(plan.items()))

    # -- rounds ----------------------------------------------------------------------------

    def _node(self, shard: int) -> Any:
        node = self._nodes.get(shard)
        if node is None:
            node = self._nodes[shard] = self._client.get_node_from_key(self._codecs[shard].meta)
        return node

    def _send(self, calls: list[tuple[int, list[bytes]]]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for shard, args in calls:
            meta = self._codecs[shard].meta
            if self._cluster:
                # The node is named here: redis-py would ask the server for FCALL's keys.
                pipe.execute_command(
                    "FCALL", SHARD_FUNCTION, 1, meta, *args, target_nodes=self._node(shard)
                )
            else:
                pipe.execute_command("FCALL", SHARD_FUNCTION, 1, meta, *args)
        try:
            replies = list(pipe.execute(raise_on_error=False))
        except self.errors as exc:
            replies = [exc] * len(calls)
        if any(isinstance(reply, Exception) for reply in replies):
            self._nodes.clear()  # the cluster may have moved a slot
        return replies

    def _load(self) -> None:
        """Load the shard library on every master (once per server start)."""
        from redis.exceptions import ResponseError

        try:
            self._client.function_load(SHARD_LIBRARY, replace=True)
        except ResponseError as exc:
            if "unknown command" in str(exc).lower():
                raise ConfigurationError(
                    f"a sharded namespace needs Redis 7.0 or later (Redis Functions) on every "
                    f"master of {mask_url(self.url)}: {exc}; upgrade Redis, or use "
                    "`shards` = 1"
                ) from None
            raise

    def _round(self, calls: list[tuple[int, list[bytes]]]) -> list[Any]:
        """One function call per shard, all in one pipeline; a shard that lost its library
        (restart) or record is repaired and asked again. Failures come back as values.
        Every call's arguments start with its mode, the shard's record digest and layout."""
        from redis.exceptions import ResponseError

        replies = self._send(calls)
        again = [
            i
            for i, reply in enumerate(replies)
            if isinstance(reply, ResponseError)
            and (_no_record(reply) or "function not found" in str(reply).lower())
        ]
        if again:
            try:
                self._load()
                for shard in {calls[i][0] for i in again}:
                    self._restore(shard)
            except self.errors as exc:
                for i in again:
                    replies[i] = exc
                return replies
            # Asked again naming the record in place (a record written anew has a new
            # digest) and the shard's layout argument.
            resend = [
                (shard, [args[0], self._codecs[shard].record_id, self._conf[shard], *args[3:]])
                for shard, args in (calls[i] for i in again)
            ]
            for i, reply in zip(again, self._send(resend), strict=True):
                replies[i] = reply
        return replies

    def _now(self) -> bytes:
        return repr(float(self.config.clock())).encode()

    def _fp(self, fingerprint: int) -> bytes:
        return fingerprint.to_bytes(self._root.width, "big")

    def _lock(
        self, fp: int, ident: bytes, plan: dict[int, bytes]
    ) -> tuple[bytes, dict[int, Any]]:
        """Round 1: every lock of the page and each shard's reply, retried (after a random
        backoff, holding nothing) while another page holds one."""
        home = self.home(ident)
        fpb = self._fp(fp)
        deadline = time.monotonic() + self._wait_secs
        delay = 0.002
        while True:
            token = os.urandom(8).hex().encode()
            now = self._now()
            calls = [
                (
                    shard,
                    [b"lock", self._codecs[shard].record_id, self._conf[shard], now, fpb, ident,
                     b"1" if shard == home else b"", tables, token, self._lease_ms],
                )
                for shard, tables in plan.items()
            ]
            replies = self._round(calls)
            held = {
                shard: reply
                for (shard, _), reply in zip(calls, replies, strict=True)
                if not isinstance(reply, Exception) and int(reply[0]) == 1
            }
            if len(held) == len(plan):
                return token, held
            # Every shard of the plan: one whose reply was lost may hold a lock all the same
            # (the release checks the token).
            self._unlock(fp, ident, token, plan)
            failed = [reply for reply in replies if isinstance(reply, Exception)]
            if failed:
                raise failed[0]
            if time.monotonic() > deadline:
                raise PageNotChecked(
                    f"Redis index {mask_url(self.url)}: locks of a page stayed busy for "
                    f"{self._wait_secs:g}s; the page was not checked"
                )
            time.sleep(random.uniform(0, delay))
            delay = min(delay * 2, 0.05)

    def _unlock_call(
        self, shard: int, fp: int, ident: bytes, token: bytes, tables: bytes, ids: list[bytes]
    ) -> tuple[int, list[bytes]]:
        home = b"1" if token and shard == self.home(ident) else b""
        return shard, [b"unlock", self._codecs[shard].record_id, self._conf[shard], self._fp(fp), ident,
                       home, tables, token, *ids]

    def _unlock(self, fp: int, ident: bytes, token: bytes, plan: dict[int, bytes]) -> None:
        """Release locks (best effort: a lock left behind expires with its lease)."""
        if plan:
            self._round(
                [self._unlock_call(s, fp, ident, token, t, []) for s, t in plan.items()]
            )

    def _texts(
        self,
        candidates: list[tuple[int, int, bytes]],
        locks: list[tuple[int, bytes, int]],
        token: bytes = b"",
        ident: bytes = b"",
    ) -> list[Match]:
        """Round 2 of a page reported as a copy (or of a query): the key texts of
        ``candidates`` (fingerprint, distance, key id) read at their homes, in the same
        pipeline as the release of ``locks`` (shard, tables, fingerprint; none for a
        query). A candidate whose key's entry holds other content is a band record left
        behind by a failed writer: never a match, left out.

        A writer's second round stores its band records and its entry on different shards
        in parallel, so a band record may be read before its key's entry lands: a missing
        text is read again until it does, for at most a lease (then its writer failed
        or the key was removed meanwhile, and the page is not checked)."""
        texts: dict[bytes, bytes] = {}
        stale: set[bytes] = set()
        deadline = time.monotonic() + min(self._lease_secs, TEXT_WAIT_SECS)
        delay = 0.001
        while True:
            wanted: dict[int, list[bytes]] = {}
            for fp_other, _, other in candidates:
                if other not in texts and other not in stale:
                    wanted.setdefault(self.home(other), []).append(other + self._fp(fp_other))
            calls = [
                self._unlock_call(shard, fp, ident, token, tables, wanted.pop(shard, []))
                for shard, tables, fp in locks
            ]
            calls += [
                self._unlock_call(shard, 0, b"", b"", b"", ids) for shard, ids in wanted.items()
            ]
            locks = []
            replies = self._round(calls)
            for (_, args), reply in zip(calls, replies, strict=True):
                if isinstance(reply, Exception):
                    raise reply
                for asked, text in zip(args[8:], reply, strict=True):
                    if text == 0:  # the key's entry holds other content: a stale band record
                        stale.add(asked[:8])
                    elif text:
                        texts[asked[:8]] = text
            live = [c for c in candidates if c[2] not in stale]
            if all(other in texts for _, _, other in live):
                return [
                    Match(texts[other].decode("utf-8", "surrogatepass"), fp, distance)
                    for fp, distance, other in live
                ]
            if time.monotonic() > deadline:
                raise PageNotChecked(
                    f"Redis index {mask_url(self.url)}: a stored page within reach names a "
                    "key without an entry (its writer failed, or it was removed meanwhile); "
                    "the page was not checked"
                )
            time.sleep(random.uniform(0, delay))
            delay = min(delay * 2, 0.05)

    @staticmethod
    def _candidates(replies: Iterable[Any], skip: int) -> dict[bytes, tuple[int, int, bytes]]:
        """(fingerprint, distance, key id) per key id of the shards' replies."""
        found: dict[bytes, tuple[int, int, bytes]] = {}
        for reply in replies:
            for i in range(skip, len(reply), 3):
                found[reply[i + 2]] = (int.from_bytes(reply[i], "big"), int(reply[i + 1]),
                                       reply[i + 2])
        return found

    def _check(self, key: str, fp: int, claim: bool) -> Observation:
        check_key(key)
        check_fingerprint(fp, self.config.bits)
        ident = key_id(key)
        plan = self._plan(fp, ident)
        token, replies = self._lock(fp, ident, plan)
        home = replies[self.home(ident)]
        own = int.from_bytes(home[1], "big") if home[1] else None
        live = own is not None and int(home[2]) == 1
        found = self._candidates(replies.values(), 3)
        stale = [c for c in found.values() if c[1] < 0 and c[2] != ident]
        found = {i: c for i, c in found.items() if c[1] >= 0}
        if not claim:
            found.pop(ident, None)
        locks = [(shard, tables, fp) for shard, tables in plan.items()]
        if found:
            best = min(distance for _, distance, _ in found.values())
            tied = [c for c in found.values() if c[1] == best]
            mine = [Match(key, f, d) for f, d, i in tied if i == ident]
            others = [c for c in tied if c[2] != ident]
            matches = self._texts(others, locks, token, ident) + mine
            if not matches:
                # Every page within reach is a band record its key's home no longer holds.
                raise PageNotChecked(
                    f"Redis index {mask_url(self.url)}: the stored pages within reach are band "
                    "records their keys no longer hold (a writer failed half-way); the page "
                    "was not checked"
                )
            return Observation(closest(matches), None, False)
        if claim and live:
            self._unlock(fp, ident, token, plan)
            return Observation(None, own, False)
        old = self._tables(own) if own is not None and own != fp else {}
        now, fpb, text = self._now(), self._fp(fp), key.encode("utf-8", "surrogatepass")
        oldfp = self._fp(own) if old and own is not None else b""
        calls = [
            (
                shard,
                [b"store", self._codecs[shard].record_id, self._conf[shard], now, fpb, ident,
                 b"1" if shard == self.home(ident) else b"", plan.get(shard, b""),
                 token if shard in plan else b"", text if shard == self.home(ident) else b"",
                 oldfp if shard in old else b"", old.get(shard, b"")],
            )
            for shard in sorted(plan.keys() | old.keys())
        ]
        # Expired entries met on the way go too (as one shard drops them when met), best
        # effort: a failure there leaves them to purge_expired.
        storing = len(calls)
        for f, _, other in stale:
            where = self._tables(f)
            calls += [
                (shard, [b"expire", self._codecs[shard].record_id, self._conf[shard], now,
                         self._fp(f), other, b"1" if shard == self.home(other) else b"",
                         where.get(shard, b"")])
                for shard in sorted(where.keys() | {self.home(other)})
            ]
        stored = self._round(calls)[:storing]
        failed = [reply for reply in stored if isinstance(reply, Exception)]
        if failed:
            raise failed[0]
        if any(int(reply[0]) for reply in stored):
            raise PageNotChecked(
                f"Redis index {mask_url(self.url)}: the locks of a page expired before it "
                "was stored (a process stalled longer than lock_lease_secs); the page was "
                "stored but not checked"
            )
        if any(int(reply[1]) for reply in stored):
            raise PageNotChecked(
                f"Redis index {mask_url(self.url)}: a near-duplicate was stored by a writer "
                f"not taking the namespace's locks (is every process set to "
                f"`shards`={self.shards}?); the page was not checked"
            )
        return Observation(None, own if live else None, True)

    # -- the contract ----------------------------------------------------------------------

    def observe(self, key: str, fingerprint: int) -> Observation:
        return self._check(key, fingerprint, claim=False)

    def claim(self, key: str, fingerprint: int) -> Observation:
        return self._check(key, fingerprint, claim=True)

    def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        tables = self._tables(fingerprint)
        now, fp = self._now(), self._fp(fingerprint)
        replies = self._round(
            [(s, [b"query", self._codecs[s].record_id, self._conf[s], now, fp, t]) for s, t in tables.items()]
        )
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        found = self._candidates(replies, 0)
        if not found:
            return []
        return ordered(self._texts(list(found.values()), []))

    def get(self, key: str) -> int | None:
        ident = key_id(key)
        codec = self._codecs[self.home(ident)]
        bucket = self._client.get(codec.entry_key(ident))
        return codec.entry(bucket, ident)

    def _remove(self, ident: bytes, fingerprint: int, token: bytes) -> bool:
        """Drop a key's entry and its band records (releasing its lock held by ``token``)."""
        home = self.home(ident)
        tables = self._tables(fingerprint)
        fp = self._fp(fingerprint)
        shards = sorted(tables.keys() | {home})
        replies = self._round(
            [
                (s, [b"remove", self._codecs[s].record_id, self._conf[s], fp, ident,
                     b"1" if s == home else b"", tables.get(s, b""), token])
                for s in shards
            ]
        )
        for result in replies:
            if isinstance(result, Exception):
                raise result
        return bool(replies[shards.index(home)])

    def remove(self, key: str) -> bool:
        ident = key_id(key)
        home = self.home(ident)
        token, replies = self._lock(0, ident, {home: b""})
        if not replies[home][1]:
            self._unlock(0, ident, token, {home: b""})
            return False
        return self._remove(ident, int.from_bytes(replies[home][1], "big"), token)

    def _drop_codec(self) -> _Codec:
        return self._root

    def _names(self, codec: _Codec, kind: bytes) -> list[bytes]:
        return list(self._client.scan_iter(match=codec.pattern(kind), count=_SCAN_BATCH))

    def _delete(self, codec: _Codec, kind: bytes) -> None:
        for name in self._names(codec, kind):
            if name != codec.meta or not kind:
                self._client.delete(name)

    def clear(self) -> None:
        for kind in (b"d", b"q"):
            self._delete(self._root, kind)
        for codec in self._codecs:
            for kind in _DATA_KINDS:
                self._delete(codec, kind)
            self._client.hset(codec.meta, "n", 0)

    def keys(self) -> Iterator[str]:
        now = self.config.clock()
        for codec in self._codecs:
            for key, _, seen in _entries(self._client, codec):
                if not self.config.expired(seen, now):
                    yield key

    def count(self) -> int:
        """Entries, including expired ones not yet purged (each shard counts the keys whose
        home it is)."""
        return sum(int(self._client.hget(codec.meta, "n") or 0) for codec in self._codecs)

    def purge_expired(self) -> int:
        if self.config.ttl_secs is None:
            return 0
        removed = 0
        now = self._now()
        for shard, codec in enumerate(self._codecs):
            for kind in (b"e", b"b"):
                names = self._names(codec, kind)
                for start in range(0, len(names), _SCAN_BATCH):
                    # Each name purged atomically by its own call, a batch per round.
                    for reply in self._round([
                        (shard, [b"purge", codec.record_id, self._conf[shard], now, name])
                        for name in names[start : start + _SCAN_BATCH]
                    ]):
                        if isinstance(reply, Exception):
                            raise reply
                        removed += int(reply)
        return removed

    def stats(self) -> IndexStats:
        """Records per band group, summed over the shards (each band record is stored in
        one shard only)."""
        groups: dict[bytes, int] = {}
        size = self._root.width + 12
        for codec in self._codecs:
            start = len(codec.prefix) + 1
            names = self._names(codec, b"b")
            for first in range(0, len(names), _SCAN_BATCH):
                batch = names[first : first + _SCAN_BATCH]
                pipe = self._client.pipeline(transaction=False)
                for name in batch:
                    pipe.strlen(name)
                for name, length in zip(batch, pipe.execute(), strict=True):
                    group = name[start:]
                    groups[group] = groups.get(group, 0) + int(length) // size
        return bucket_stats("redis", self.count(), self.layout, groups.values())

    def close(self) -> None:
        try:
            self._client.close()
        except self.errors as exc:
            logger.warning("closing the Redis index %s failed: %s", mask_url(self.url), exc)


def _entries(client: Any, codec: _Codec) -> Iterable[tuple[str, int, int]]:
    """(key, fingerprint, last seen) of each entry one codec's keys hold (an entry is
    stored at its key's home shard only; entry records and key texts are stored in the same
    order, and read in one transaction so a writer cannot shift one against the other)."""
    prefix = codec.prefix
    for name in list(client.scan_iter(match=codec.pattern(b"e"), count=_SCAN_BATCH)):
        pipe = client.pipeline(transaction=True)
        pipe.get(name)
        pipe.lrange(prefix + b"u" + name[len(prefix) + 1 :], 0, -1)
        bucket, texts = pipe.execute()
        for (_, fp, seen), text in zip(codec.entries(bucket), texts, strict=False):
            yield text.decode("utf-8", "surrogatepass"), fp, seen
