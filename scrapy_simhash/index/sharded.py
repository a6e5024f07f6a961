"""A Redis namespace spread over several shards (the ``shards`` option), still exact.

Why: one namespace under one hash tag lives on one cluster master, whose memory and single
script thread then bound the crawl whatever the number of masters.

Layout (sharded layout 3, recorded as ``sharded_format`` in the namespace's and each
shard's record, with the namespace's key of the second test; a namespace of another
sharded layout is refused). Shard ``i`` lives under
its own hash tag ``{namespace:s<i>of<shards>.<n>}``, ``n`` picked so its slot falls in the
``i``-th of ``shards`` equal slot ranges: one shard per master of a cluster created with
equal ranges (redis-cli's default), instead of shards colliding on a master by chance.
Table ``t``'s band record of a page with fingerprint ``f`` lives in ``shard(t, band_t(f))``
(a hash of the table and band value) and names the page's key id and last-seen time; the
page's entry (with its signature) and URL live only in the home shard of its key
(``get``/``remove`` and its previous fingerprint are found there). ``D(f)`` is the set of shards holding the page's
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
with the entry's. The candidates are judged by the same second test (index/base.py's
``judge``), with the signatures their entries hold.

Atomic across processes (two rounds, three for a page that meets candidates; each one
pipeline of one function call per shard, sent to all shards at once):

1. ``lock`` on every shard of ``D(f)`` and the home shard: all or none of that shard's locks
   (one per (table, band value) the shard answers for, plus the key's lock at home: fields of
   the shard's record hash holding a random token and a deadline in server time) and the
   live candidates there (fingerprint, distance, key id), and at home the key's entry.
2. ``read``, only when there are candidates: their URLs and signatures at their keys'
   homes, the locks still held; the client judges them.
3. ``store`` (no candidate confirmed, no twin): release, and store the band records and
   (home) the entry, signature and URL in the same call; shards holding only the key's
   previous fingerprint drop its records. Or ``unlock`` (a copy, a claim's conflict, a
   twin): release.

If any shard is busy in round 1 the page releases what it took and retries after a random
backoff (no lock is held while waiting, so there is no deadlock, whatever order pages meet
in). Two pages a shard would match share a band value in some table, hence the lock on it:
whichever locks it second has all its locks only after the first released it in its last
round, i.e. after the first stored its band record there (or stored nothing), and its own
round 1 then reads that shard. Two pages under one key share the key's lock. A candidate's
entry cannot change under the page's judgement either: rewriting it at that fingerprint
takes one of the page's band locks.

A writer's last round stores its band records and its entry on different shards in
parallel, so a page may meet a band record whose key's entry (URL and signature) has not
landed yet: it reads it again, its locks held, for at most one lease (storing takes no
lock, so the writer is never kept waiting). A band record whose key has no entry after that
(its writer's home failed, or the key was removed meanwhile) makes the page "not checked"
(:class:`IndexBackendError`), never a copy of a page the index cannot name.

Leases: a process that dies (SIGKILL) mid-page leaves lock fields whose deadline passes
after ``lock_lease_secs``; pages waiting on them then proceed and read whatever it stored,
so the namespace is blocked for at most one lease and stored pages stay found. The first
page to meet an expired lock on a shard sweeps that shard's expired locks. A live process
whose lease ran out (stalled longer than the lease) and whose lock another page took learns
it when it stores: the page is stored but :class:`IndexBackendError` says it was not checked, as
does a shard failing mid-page. The crawl then lets the page through ("not checked"): a
failure never drops a page.

Drop records (rare, bounded by count) stay under the root tag, so their bound and order are
exact. Recrawl state is spread by URL hash over the same shard tags (recrawl/redisstore.py).

Costs: two round trips per page, three when it meets candidates (a copy, or a page stored
beside candidates the second test rejected; the candidates' homes answer the extra one);
each shard touched (``|D(f) ∪ {home}|``: 4 tables: ~2.7 of 3 shards, ~4.0 of 6) takes one
call per lock and store round; a page's band records are stored once in the cluster (20
bytes each with 64-bit fingerprints), its entry (36 bytes, 16 of them the signature) and
URL once, at home; benchmarks/README.md has the figures.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from importlib import resources
from typing import Any, TypeVar

import xxhash

from scrapy_simhash._redis import MAX_SHARDS, is_cluster_url, mask_url, shard_namespace, sync_client
from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, PageNotChecked
from scrapy_simhash.index.base import (
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
    bucket_stats,
    check_fingerprint,
    check_signature,
    judge,
    key_of,
    ordered,
)
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.codec import (
    _DATA_KINDS,
    SIGNATURE_BYTES,
    _Codec,
    group_mask,
    key_id,
)
from scrapy_simhash.index.redis.connection import (
    _SCAN_BATCH,
    _no_record,
    _redis_errors,
    client_options,
)
from scrapy_simhash.index.redis.drop_record import RedisDropRecord

logger = logging.getLogger(__name__)
T = TypeVar("T")

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
        if grow_from is None and not self._client.hexists(root.meta, "config"):
            root.key = self._surviving_key()
        written = bool(self._client.hsetnx(root.meta, "config", root.record()))
        if grow_from is not None:
            root.shards = grow_from
        root.adopt(self._client.hget(root.meta, "config"))
        root.shards = self.shards
        for shard in range(self.shards):
            written = self._restore(shard) or written
        self.created = written
        self.confirm_key = root.key or 0

    def _surviving_key(self) -> int | None:
        """The namespace's key in a shard record still in place when the root's is gone
        (the root's master restarted without persistence, other masters did not): the pages
        kept there were signed under it, so the root record written anew keeps it."""
        for codec in self._codecs:
            stored = self._client.hget(codec.meta, "config")
            if stored:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    return key_of(json.loads(stored))
        return None

    def _restore(self, shard: int) -> bool:
        """Write shard ``shard``'s record (the root's layout and key), or adopt the one in
        place; True when it was written (there was none). One under another key means the
        namespace was created anew (reset by another process): the root's record is then
        adopted again, and must hold that key too."""
        codec, root = self._codecs[shard], self._root
        codec.set_layout(root.layout, root.ebits, root.gbits)
        codec.key = root.key
        written = bool(self._client.hsetnx(codec.meta, "config", codec.record()))
        codec.adopt(self._client.hget(codec.meta, "config"))
        if codec.key != root.key:
            root.adopt(self._client.hget(root.meta, "config"))
            self.confirm_key = root.key or 0
        if (
            codec.layout.name != root.layout.name
            or (codec.ebits, codec.gbits) != (root.ebits, root.gbits)
            or codec.key != root.key
        ):
            other = "" if codec.key == root.key else ", and another key of the second test"
            raise IndexBackendError(
                f"Redis index {mask_url(self.url)}: shard {shard} of namespace "
                f"{self.config.namespace!r} has layout {codec.layout.name}, the namespace "
                f"{root.layout.name}{other}; reset the namespace"
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

    def _lock(self, fp: int, ident: bytes, plan: dict[int, bytes]) -> tuple[bytes, dict[int, Any]]:
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
                    [
                        b"lock",
                        self._codecs[shard].record_id,
                        self._conf[shard],
                        now,
                        fpb,
                        ident,
                        b"1" if shard == home else b"",
                        tables,
                        token,
                        self._lease_ms,
                    ],
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

    def _unlock(self, fp: int, ident: bytes, token: bytes, plan: dict[int, bytes]) -> None:
        """Release locks (best effort: a lock left behind expires with its lease)."""
        home, fpb = self.home(ident), self._fp(fp)
        self._round(
            [
                (
                    shard,
                    [
                        b"unlock",
                        self._codecs[shard].record_id,
                        self._conf[shard],
                        fpb,
                        ident,
                        b"1" if shard == home else b"",
                        tables,
                        token,
                    ],
                )
                for shard, tables in plan.items()
            ]
        )

    def _read(self, candidates: list[tuple[int, int, bytes]]) -> list[Match] | None:
        """The round of a page that met candidates (its locks held), or of a query: each
        candidate's (fingerprint, distance, key id) key text and signature, read at its
        key's home; None while one's entry has not landed (see :meth:`_waiting`). A
        candidate whose key's entry holds other content is a band record left behind by a
        failed writer: never a candidate, left out."""
        wanted: dict[int, list[bytes]] = {}
        for fp, _, other in candidates:
            wanted.setdefault(self.home(other), []).append(other + self._fp(fp))
        calls = [
            (shard, [b"read", self._codecs[shard].record_id, self._conf[shard], *ids])
            for shard, ids in wanted.items()
        ]
        read: dict[bytes, Match] = {}
        for (_, args), reply in zip(calls, self._round(calls), strict=True):
            if isinstance(reply, Exception):
                raise reply
            for asked, found in zip(args[3:], reply, strict=True):
                if found is None:  # not landed yet
                    return None
                if found != 0:  # 0: the key's entry holds other content, a stale record
                    text, signature = found
                    read[asked[:8]] = Match(
                        text.decode("utf-8", "surrogatepass"),
                        int.from_bytes(asked[8:], "big"),
                        0,
                        int.from_bytes(signature, "big"),
                    )
        return [
            read[other]._replace(distance=distance)
            for _, distance, other in candidates
            if other in read
        ]

    def _waiting(self, attempt: Callable[[], T | None]) -> T:
        """``attempt`` again until it answers. A writer's last round stores its band records
        and its entry on different shards in parallel, so a page may meet a band record
        before its key's entry lands: it tries again, holding no lock meanwhile, for at
        most a lease (then that writer failed or the key was removed meanwhile, and the
        page is not checked)."""
        deadline = time.monotonic() + min(self._lease_secs, TEXT_WAIT_SECS)
        delay = 0.001
        while True:
            answer = attempt()
            if answer is not None:
                return answer
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
                found[reply[i + 2]] = (
                    int.from_bytes(reply[i], "big"),
                    int(reply[i + 1]),
                    reply[i + 2],
                )
        return found

    def _judge(
        self,
        key: str,
        ident: bytes,
        found: dict[bytes, tuple[int, int, bytes]],
        own: tuple[int, int] | None,
        signature: int,
    ) -> tuple[Match | None, int, bool] | None:
        """The second test over the candidates of round 1 (:func:`judge`), their signatures
        read at their homes (the key's own, a claim's candidate, came with round 1); None
        while one's entry has not landed."""
        others = [c for c in found.values() if c[2] != ident]
        candidates = self._read(others) if others else []
        if candidates is None:
            return None
        mine = found.get(ident)
        if mine is not None and own is not None and mine[0] == own[0]:
            candidates.append(Match(key, mine[0], mine[1], own[1]))
        if found and not candidates:
            # Every page within reach is a band record its key's home no longer holds.
            raise PageNotChecked(
                f"Redis index {mask_url(self.url)}: the stored pages within reach are band "
                "records their keys no longer hold (a writer failed half-way); the page "
                "was not checked"
            )
        return judge(candidates, signature, self.config.confirm_distance)

    def _check(self, key: str, fp: int, signature: int, claim: bool) -> Observation:
        check_key(key)
        check_fingerprint(fp, self.config.bits)
        check_signature(signature)
        ident = key_id(key)
        plan = self._plan(fp, ident)
        return self._waiting(lambda: self._attempt(key, ident, fp, signature, claim, plan))

    def _attempt(
        self,
        key: str,
        ident: bytes,
        fp: int,
        signature: int,
        claim: bool,
        plan: dict[int, bytes],
    ) -> Observation | None:
        """One pass of a page through its rounds; None (its locks released) when a
        candidate's entry has not landed yet."""
        token, replies = self._lock(fp, ident, plan)
        home = replies[self.home(ident)]
        held = int.from_bytes(home[1], "big") if home[1] else None  # live or expired
        own = None  # the key's live entry: fingerprint, signature
        if held is not None and int(home[2]) == 1:
            own = (held, int.from_bytes(home[3], "big"))
        found = self._candidates(replies.values(), 4)
        stale = [c for c in found.values() if c[1] < 0 and c[2] != ident]
        found = {i: c for i, c in found.items() if c[1] >= 0}
        if not claim:
            found.pop(ident, None)
        try:
            judged = self._judge(key, ident, found, own, signature)
        except BaseException:
            self._unlock(fp, ident, token, plan)
            raise
        if judged is None:
            self._unlock(fp, ident, token, plan)
            return None
        match, rejected, twin = judged
        previous, previous_signature = own if own is not None else (None, None)
        if match is not None or twin or (claim and own is not None):
            self._unlock(fp, ident, token, plan)
            if match is not None:
                return Observation(match, None, False, rejected=rejected)
            if claim and own is not None:  # a live entry the test rejected holds the key
                return Observation(None, previous, False, previous_signature, rejected)
            return Observation(None, previous, False, None, rejected)  # a twin: not filed
        old = self._tables(held) if held is not None and held != fp else {}
        now, fpb, text = self._now(), self._fp(fp), key.encode("utf-8", "surrogatepass")
        oldfp = home[1] if old else b""
        sig = signature.to_bytes(SIGNATURE_BYTES, "big")
        known = b"".join(found)  # the candidates judged: the store meets them in its bands
        calls = [
            (
                shard,
                [
                    b"store",
                    self._codecs[shard].record_id,
                    self._conf[shard],
                    now,
                    fpb,
                    ident,
                    b"1" if shard == self.home(ident) else b"",
                    plan.get(shard, b""),
                    token if shard in plan else b"",
                    text if shard == self.home(ident) else b"",
                    oldfp if shard in old else b"",
                    old.get(shard, b""),
                    sig if shard == self.home(ident) else b"",
                    known,
                ],
            )
            for shard in sorted(plan.keys() | old.keys())
        ]
        # Expired entries met on the way go too (as one shard drops them when met), best
        # effort: a failure there leaves them to purge_expired.
        storing = len(calls)
        for f, _, other in stale:
            where = self._tables(f)
            calls += [
                (
                    shard,
                    [
                        b"expire",
                        self._codecs[shard].record_id,
                        self._conf[shard],
                        now,
                        self._fp(f),
                        other,
                        b"1" if shard == self.home(other) else b"",
                        where.get(shard, b""),
                    ],
                )
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
        return Observation(None, previous, True, previous_signature, rejected)

    # -- the contract ----------------------------------------------------------------------

    def observe(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._check(key, fingerprint, signature, claim=False)

    def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._check(key, fingerprint, signature, claim=True)

    def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        tables = self._tables(fingerprint)
        now, fp = self._now(), self._fp(fingerprint)
        replies = self._round(
            [
                (s, [b"query", self._codecs[s].record_id, self._conf[s], now, fp, t])
                for s, t in tables.items()
            ]
        )
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        found = list(self._candidates(replies, 0).values())
        return ordered(self._waiting(lambda: self._read(found))) if found else []

    def get(self, key: str) -> int | None:
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> tuple[int, int] | None:
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
                (
                    s,
                    [
                        b"remove",
                        self._codecs[s].record_id,
                        self._conf[s],
                        fp,
                        ident,
                        b"1" if s == home else b"",
                        tables.get(s, b""),
                        token,
                    ],
                )
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
        for kind in (b"d", b"q", b"f"):
            self._delete(self._root, kind)
        for codec in self._codecs:
            for kind in _DATA_KINDS:
                self._delete(codec, kind)
            self._client.hset(codec.meta, "n", 0)

    def keys(self) -> Iterator[str]:
        now = self.config.clock()
        for codec in self._codecs:
            for key, _, seen, _ in _entries(self._client, codec):
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
                    for reply in self._round(
                        [
                            (shard, [b"purge", codec.record_id, self._conf[shard], now, name])
                            for name in names[start : start + _SCAN_BATCH]
                        ]
                    ):
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


def _entries(client: Any, codec: _Codec) -> Iterable[tuple[str, int, int, int]]:
    """(key, fingerprint, last seen, signature) of each entry one codec's keys hold (an entry is
    stored at its key's home shard only; entry records and key texts are stored in the same
    order, and read in one transaction so a writer cannot shift one against the other)."""
    prefix = codec.prefix
    for name in list(client.scan_iter(match=codec.pattern(b"e"), count=_SCAN_BATCH)):
        pipe = client.pipeline(transaction=True)
        pipe.get(name)
        pipe.lrange(prefix + b"u" + name[len(prefix) + 1 :], 0, -1)
        bucket, texts = pipe.execute()
        for (_, fp, seen, signature), text in zip(codec.entries(bucket), texts, strict=False):
            yield text.decode("utf-8", "surrogatepass"), fp, seen, signature
