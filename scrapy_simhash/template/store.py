"""Where each host's template memory lives: the namespace's own store, shared by every
crawl process.

**One write per page.** A page is counted by one :meth:`TemplateStore.record` call that
carries its seen part and the kept part of the pages this process kept since its last
write (the glue's write-behind, :mod:`scrapy_simhash.glue.templates`): one transaction in
SQLite, one script call in Redis, one lock in memory. The seen part is never delayed: a
page judged at the same time in another process must find this page counted.

**Bytes per host.** Memory and SQLite: every host :data:`~scrapy_simhash.template.HOST_BYTES`
(8 KiB of counters; about 8.4 KB of Python objects in memory, 8.3 KB of SQLite file),
at most :data:`MAX_HOSTS` hosts per namespace (a host beyond that is not learned: its
pages are judged as without the memory). Redis: a host of one page (the most common host
of a large crawl, one link's target) keeps no key of its own but a *small record* of at
most :data:`SMALL_BYTES` bytes in a hash shared with other hosts (:data:`SMALL_BUCKETS`
of them, each a compact listpack): about 60 B a host, all overheads included. At its
second page a host gets its own 8 KiB string (10.4 KB with the key and its entry in the
namespace's host index), at most :data:`MAX_HOSTS` of them, each expiring ``ttl_secs``
after the host's last page (the index's TTL, else :data:`DEFAULT_TTL_SECS`). Small records
expire between one and two ``ttl_secs`` after they were written (a bucket is made per
period of ``ttl_secs`` and expires at the end of the next one).

**The trade of the small record (Redis only).** A small record holds the sorted buckets of
the page's lines as gaps, as many as fit :data:`SMALL_BYTES` (about 30 lines; the lowest
buckets, a hash-random sample, on a longer page), folded into the host's counters at its
second page. A longer first page is therefore counted with part of its lines: its other
lines look, to the host's later pages, as never shown. That errs towards keeping: a later
page of the host is never made a copy by it (nothing is counted that the page did not
have), but a copy of a long first page fetched as its host's second page can be kept as
distinct. Memory and SQLite count every line.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import xxhash

from scrapy_simhash._redis import mask_url, sync_client
from scrapy_simhash._runners import Runner
from scrapy_simhash._sqlite import BUSY_TIMEOUT_SECS, open_with_schema
from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.template import EMPTY, HALVE_AT, HOST_BYTES, SLOTS, HostMemory

__all__ = ["HOST_BYTES", "MAX_HOSTS", "Count", "TemplateStore"]
#: Hosts per namespace at most with counters of their own, in every store (in Redis, hosts
#: of one page are not counted: they have a small record, :data:`SMALL_BUCKETS`).
MAX_HOSTS = 100_000
#: How long a host's memory outlives its last page in Redis when the index keeps its
#: entries for ever (``SIMHASH_INDEX_TTL_SECS = 0``): a crawl that returns to a host within
#: a month finds its template; one that never returns frees its bytes.
DEFAULT_TTL_SECS = 30 * 86_400


@dataclass(frozen=True)
class Count:
    """One page counted in its host's memory: in the kept part (``kept``) or the seen one."""

    host: str
    slots: tuple[int, ...]
    kept: bool = False

    def apply(self, memory: HostMemory, halve_at: int = HALVE_AT) -> HostMemory:
        """``memory`` with this page counted."""
        if self.kept:
            return memory.learned(self.slots, halve_at)
        return memory.saw(self.slots, halve_at)


class TemplateStore(ABC):
    """The blocking contract; the crawl runs it off its event loop, or where ``runner``
    says (see :class:`~scrapy_simhash._runners.StoreThread`)."""

    #: Where the crawl runs this store's calls; None: a thread of the store's own.
    runner: Runner | None = None

    @abstractmethod
    def read(self, host: str) -> HostMemory:
        """The host's counters (empty for a host never learned)."""

    @abstractmethod
    def record(self, counts: Sequence[Count]) -> None:
        """Count every page of ``counts`` in one write (one transaction, one script)."""

    def learn(self, host: str, slots: Sequence[int]) -> None:
        """Count one more kept page of ``host`` with the lines of ``slots``."""
        self.record([Count(host, tuple(slots), kept=True)])

    def see(self, host: str, slots: Sequence[int]) -> None:
        """Count one more fetched page of ``host`` (before it is judged)."""
        self.record([Count(host, tuple(slots))])

    @abstractmethod
    def hosts(self) -> int:
        """How many hosts the namespace keeps a memory of."""

    @abstractmethod
    def clear(self) -> int:
        """Forget every host of the namespace; return how many there were."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""


class MemoryTemplateStore(TemplateStore):
    """The memory of one process (``memory://``)."""

    def __init__(self, max_hosts: int = MAX_HOSTS, *, halve_at: int = HALVE_AT) -> None:
        self._lock = threading.Lock()
        self._hosts: dict[str, HostMemory] = {}
        self.max_hosts = max_hosts
        self.halve_at = halve_at

    def read(self, host: str) -> HostMemory:
        with self._lock:
            return self._hosts.get(host, EMPTY)

    def record(self, counts: Sequence[Count]) -> None:
        with self._lock:
            for count in counts:
                memory = self._hosts.get(count.host)
                if memory is None and len(self._hosts) >= self.max_hosts:
                    continue
                self._hosts[count.host] = count.apply(memory or EMPTY, self.halve_at)

    def hosts(self) -> int:
        return len(self._hosts)

    def clear(self) -> int:
        with self._lock:
            count = len(self._hosts)
            self._hosts.clear()
            return count


_SCHEMA = """
CREATE TABLE IF NOT EXISTS simhash_templates (
    ns TEXT NOT NULL, host TEXT NOT NULL, memory BLOB NOT NULL, PRIMARY KEY (ns, host)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS simhash_template_hosts (
    ns TEXT NOT NULL PRIMARY KEY, hosts INTEGER NOT NULL
) WITHOUT ROWID
"""


class SqliteTemplateStore(TemplateStore):
    """One row per host next to the index's tables in the same file, written through a
    shared connection (:class:`~scrapy_simhash._sqlite.SharedConnection`): under the
    file's one lock and checkpoints, as the index and the recrawl store write it, and
    raising ``StorageLost`` once the file was deleted or replaced."""

    def __init__(
        self,
        path: str,
        namespace: str,
        *,
        timeout_secs: float = BUSY_TIMEOUT_SECS,
        max_hosts: int = MAX_HOSTS,
        halve_at: int = HALVE_AT,
    ) -> None:
        self.namespace = namespace
        self.max_hosts = max_hosts
        self.halve_at = halve_at
        self._where = path
        try:
            self.connection = open_with_schema(path, _SCHEMA, timeout_secs=timeout_secs)
        except sqlite3.Error as exc:
            raise self._error("open", exc) from exc
        self.runner = self.connection.run

    def _error(self, action: str, exc: BaseException) -> IndexBackendError:
        return IndexBackendError(f"SQLite template store {self._where}: {action} failed: {exc}")

    def read(self, host: str) -> HostMemory:
        try:
            with self.connection.reading() as db:
                row = db.execute(
                    "SELECT memory FROM simhash_templates WHERE ns=? AND host=?",
                    (self.namespace, host),
                ).fetchone()
        except sqlite3.Error as exc:
            raise self._error("read", exc) from exc
        return HostMemory.from_bytes(row[0]) if row else EMPTY

    def record(self, counts: Sequence[Count]) -> None:
        """One transaction; each host's row read and written once, whatever it counts."""
        by_host: dict[str, list[Count]] = {}
        for count in counts:
            by_host.setdefault(count.host, []).append(count)
        if not by_host:
            return
        try:
            with self.connection.writing() as db:
                for host, changes in by_host.items():
                    self._update(db, host, changes)
        except sqlite3.Error as exc:
            raise self._error("update", exc) from exc

    def _update(self, db: sqlite3.Connection, host: str, changes: Iterable[Count]) -> None:
        ns = self.namespace
        row = db.execute(
            "SELECT memory FROM simhash_templates WHERE ns=? AND host=?", (ns, host)
        ).fetchone()
        if row is None:  # a new host: within the bound, counted in the same write
            if self._count(db) >= self.max_hosts:
                return
            db.execute(
                "INSERT INTO simhash_template_hosts VALUES (?, 1) ON CONFLICT (ns) "
                "DO UPDATE SET hosts = hosts + 1",
                (ns,),
            )
        memory = HostMemory.from_bytes(row[0]) if row else EMPTY
        for change in changes:
            memory = change.apply(memory, self.halve_at)
        db.execute(
            "INSERT OR REPLACE INTO simhash_templates VALUES (?, ?, ?)",
            (ns, host, memory.to_bytes()),
        )

    def _count(self, db: sqlite3.Connection) -> int:
        row = db.execute(
            "SELECT hosts FROM simhash_template_hosts WHERE ns=?", (self.namespace,)
        ).fetchone()
        return int(row[0]) if row else 0

    def hosts(self) -> int:
        try:
            with self.connection.reading() as db:
                return self._count(db)
        except sqlite3.Error as exc:
            raise self._error("count", exc) from exc

    def clear(self) -> int:
        try:
            with self.connection.writing() as db:
                db.execute("DELETE FROM simhash_template_hosts WHERE ns=?", (self.namespace,))
                return int(
                    db.execute(
                        "DELETE FROM simhash_templates WHERE ns=?", (self.namespace,)
                    ).rowcount
                )
        except sqlite3.Error as exc:
            raise self._error("clear", exc) from exc

    def close(self) -> None:
        with suppress(sqlite3.Error):
            self.connection.close()


def glob_escape(text: str) -> str:
    """``text`` as a Redis glob (``SCAN MATCH``) that matches only itself.

    A namespace is the user's to name, and ``?``, ``*``, ``[`` (with ``]``) are glob
    syntax in a pattern, ``\\`` its escape: each is preceded by a backslash.
    """
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


#: Bytes of a small record at most (a flag byte and the gaps between its sorted buckets):
#: with its 6-byte field and the listpack's 4 bytes of framing it stays far below Redis'
#: ``hash-max-listpack-value`` (64), so a bucket stays a compact listpack.
SMALL_BYTES = 34
#: Hashes holding the namespace's small records, per period of ``ttl_secs``.
SMALL_BUCKETS = 4096
#: Small records per hash at most: below Redis' default ``hash-max-listpack-entries`` (128),
#: beyond which a hash takes about 70 B more per field. 4,096 x 120 is about 490,000 hosts of
#: one page per period; a host that finds its bucket full gets counters of its own, within
#: :data:`MAX_HOSTS`.
SMALL_PER_BUCKET = 120
_SEEN, _KEPT = 1, 2


def small_record(slots: Iterable[int], budget: int = SMALL_BYTES - 1) -> bytes:
    """The buckets of one page as a small record's body: sorted, each the gap from the one
    before less one, in one byte below 128, else two (a bucket is below 2^14). Buckets that
    do not fit ``budget`` bytes are left out, the highest first: the record then holds a
    hash-random sample of the page's lines (see the module)."""
    out = bytearray()
    previous = -1
    for slot in sorted(set(slots)):
        gap = slot - previous - 1
        code = bytes((gap,)) if gap < 0x80 else bytes((0x80 | gap >> 7, gap & 0x7F))
        if len(out) + len(code) > budget:
            break
        out += code
        previous = slot
    return bytes(out)


def small_slots(body: bytes) -> list[int]:
    """The buckets of a small record's body (:func:`small_record`)."""
    slots: list[int] = []
    previous, at = -1, 0
    while at < len(body):
        gap = body[at]
        at += 1
        if gap & 0x80:
            gap = (gap & 0x7F) << 7 | body[at]
            at += 1
        previous += gap + 1
        slots.append(previous)
    return slots


def with_small(memory: HostMemory, record: bytes | None) -> HostMemory:
    """``memory`` with the page of a small record counted (its flag byte says in which
    parts)."""
    if not record:
        return memory
    slots = small_slots(record[1:])
    if record[0] & _SEEN:
        memory = memory.saw(slots)
    if record[0] & _KEPT:
        memory = memory.learned(slots)
    return memory


#: Counts pages in a namespace's hosts (see the module): KEYS[1] the namespace's host
#: index (a sorted set of hosts with counters of their own, by the time of their last page),
#: then per page its host's counters, small-record bucket of this period and of the last;
#: ARGV: now, ttl, max hosts, halving threshold, records per bucket, a new bucket's TTL,
#: then per page: part (1 seen, 2 kept), field, small-record body, buckets (u16 BE).
_RECORD = """
local now, ttl, max_hosts = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local halve_at, per_bucket, bucket_ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local index = KEYS[1]
local SLOTS, PAGES_AT, SEEN_AT, SEEN_PAGES_AT = @SLOTS@, @PAGES_AT@, @SEEN_AT@, @SEEN_PAGES_AT@

local function halve(key, first, pages_at)
  local pages = redis.call('BITFIELD', key, 'GET', 'u16', '#' .. pages_at)[1]
  if pages < halve_at then return end
  local blob = redis.call('GETRANGE', key, first * 2, (first + SLOTS) * 2 - 1)
  local out = {}
  for i = 0, SLOTS - 1 do
    local hi, lo = string.byte(blob, 2 * i + 1, 2 * i + 2)
    local half = math.floor(((hi or 0) * 256 + (lo or 0)) / 2)
    out[i + 1] = string.char(math.floor(half / 256), half % 256)
  end
  redis.call('SETRANGE', key, first * 2, table.concat(out))
  redis.call('BITFIELD', key, 'SET', 'u16', '#' .. pages_at, math.floor(pages / 2))
end

local function count(key, part, slots)
  local first, pages_at = SEEN_AT, SEEN_PAGES_AT
  if part == 2 then first, pages_at = 0, PAGES_AT end
  local pages = redis.call('BITFIELD', key, 'OVERFLOW', 'SAT', 'INCRBY', 'u16', '#' .. pages_at, 1)[1]
  for i = 1, #slots, 1000 do
    local args = {'OVERFLOW', 'SAT'}
    for j = i, math.min(i + 999, #slots) do
      args[#args + 1] = 'INCRBY'; args[#args + 1] = 'u16'
      args[#args + 1] = '#' .. (first + slots[j]); args[#args + 1] = 1
    end
    redis.call('BITFIELD', key, unpack(args))
  end
  if pages >= halve_at then halve(key, first, pages_at) end
end

local function u16s(blob)
  local slots = {}
  for i = 1, #blob, 2 do
    local hi, lo = string.byte(blob, i, i + 1)
    slots[#slots + 1] = hi * 256 + lo
  end
  return slots
end

local function gaps(body)
  local slots, previous, at = {}, -1, 1
  while at <= #body do
    local gap = string.byte(body, at)
    at = at + 1
    if gap >= 128 then gap = (gap - 128) * 128 + string.byte(body, at); at = at + 1 end
    previous = previous + gap + 1
    slots[#slots + 1] = previous
  end
  return slots
end

local function room()
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now - ttl)
  return redis.call('ZCARD', index) < max_hosts
end

local function touch(key)
  redis.call('ZADD', index, now, key)
  redis.call('EXPIRE', key, ttl)
end

for c = 0, (#KEYS - 1) / 3 - 1 do
  local key, this, last = KEYS[2 + 3 * c], KEYS[3 + 3 * c], KEYS[4 + 3 * c]
  local part, field = tonumber(ARGV[7 + 4 * c]), ARGV[8 + 4 * c]
  local body, slots = ARGV[9 + 4 * c], ARGV[10 + 4 * c]
  if redis.call('EXISTS', key) == 1 then
    count(key, part, u16s(slots)); touch(key)
  else
    local where, record = this, redis.call('HGET', this, field)
    if not record then where, record = last, redis.call('HGET', last, field) end
    if record then
      local flags = string.byte(record, 1)
      if flags % (2 * part) < part and string.sub(record, 2) == body then
        redis.call('HSET', where, field, string.char(flags + part) .. body)
      elseif room() then  -- the host's second page: its own counters, the first folded in
        local old = gaps(string.sub(record, 2))
        if flags % 2 == 1 then count(key, 1, old) end
        if flags >= 2 then count(key, 2, old) end
        count(key, part, u16s(slots)); touch(key)
        redis.call('HDEL', where, field)
      end
    elseif redis.call('HLEN', this) < per_bucket then
      redis.call('HSET', this, field, string.char(part) .. body)
      if redis.call('TTL', this) < 0 then redis.call('EXPIRE', this, bucket_ttl) end
    elseif room() then
      count(key, part, u16s(slots)); touch(key)
    end
  end
end
return 0
"""
for _name, _value in {
    "SLOTS": SLOTS,
    "PAGES_AT": HostMemory.PAGES_AT,
    "SEEN_AT": HostMemory.SEEN_AT,
    "SEEN_PAGES_AT": HostMemory.SEEN_PAGES_AT,
}.items():
    _RECORD = _RECORD.replace(f"@{_name}@", str(_value))


class RedisTemplateStore(TemplateStore):
    """A host's counters in one string of its own, updated in place by ``BITFIELD ...
    OVERFLOW SAT`` (every process adds to the same counters atomically, no read-modify-
    write), or, while the host has one page, a small record in a shared hash; every page
    counted by one script call (:data:`_RECORD`). Keys carry the namespace's hash tag, as
    the index's do (one Cluster slot)."""

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        ttl_secs: float | None = None,
        halve_at: int = HALVE_AT,
        max_hosts: int = MAX_HOSTS,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        from scrapy_simhash.index.redis.connection import _redis_errors

        self.halve_at = halve_at
        self.max_hosts = max_hosts
        self._url = url
        self._clock = clock
        self._errors = _redis_errors()
        tag = f"simhash:{{{namespace}}}"
        self._prefix = f"{tag}:tp:"
        self._small = f"{tag}:tps:"
        self._index = f"{tag}:tph"
        self.ttl_secs = int(ttl_secs) if ttl_secs and ttl_secs >= 1 else DEFAULT_TTL_SECS
        try:
            self._client: Any = sync_client(url, **options)
            self._script = self._client.register_script(_RECORD)
        except self._errors as exc:
            raise self._error("open", exc) from exc

    def _error(self, action: str, exc: BaseException) -> IndexBackendError:
        return IndexBackendError(
            f"Redis template store {mask_url(self._url)}: {action} failed: {type(exc).__name__}"
        )

    def _period(self) -> int:
        return int(self._clock() // self.ttl_secs)

    def _where(self, host: str, period: int) -> tuple[str, str, str, bytes]:
        """A host's counters key, its small-record buckets (this period's and the last's)
        and its field in them."""
        digest = xxhash.xxh3_64_intdigest(host.encode("utf-8", "surrogatepass"))
        bucket = digest % SMALL_BUCKETS
        field = (digest >> 16).to_bytes(6, "big")
        return (
            self._prefix + host,
            f"{self._small}{period}:{bucket}",
            f"{self._small}{period - 1}:{bucket}",
            field,
        )

    def read(self, host: str) -> HostMemory:
        key, this, last, field = self._where(host, self._period())
        try:
            pipe = self._client.pipeline(transaction=False)
            pipe.get(key)
            pipe.hget(this, field)
            pipe.hget(last, field)
            blob, record, older = pipe.execute()
        except self._errors as exc:
            raise self._error("read", exc) from exc
        memory = HostMemory.from_bytes(blob) if blob else EMPTY
        return with_small(memory, record or older)

    def record(self, counts: Sequence[Count]) -> None:
        if not counts:
            return
        now = self._clock()
        period = int(now // self.ttl_secs)
        bucket_ttl = max(1, int((period + 2) * self.ttl_secs - now))
        keys: list[Any] = [self._index]
        args: list[Any] = [
            int(now),
            self.ttl_secs,
            self.max_hosts,
            self.halve_at,
            SMALL_PER_BUCKET,
            bucket_ttl,
        ]
        for count in counts:
            key, this, last, field = self._where(count.host, period)
            keys += [key, this, last]
            slots = sorted(set(count.slots))
            args += [
                _KEPT if count.kept else _SEEN,
                field,
                small_record(slots),
                b"".join(slot.to_bytes(2, "big") for slot in slots),
            ]
        try:
            self._script(keys=keys, args=args)
        except self._errors as exc:
            raise self._error("record", exc) from exc

    def _scan(self, pattern: str) -> list[Any]:
        # The namespace is escaped: `shop?` must not match (and clear) `shopX`'s hosts.
        return list(self._client.scan_iter(match=glob_escape(pattern) + "*", count=1000))

    def _buckets(self) -> list[str]:
        period = self._period()
        return [f"{self._small}{p}:{b}" for p in (period, period - 1) for b in range(SMALL_BUCKETS)]

    def hosts(self) -> int:
        """Hosts with counters of their own (within the TTL) and with a small record."""
        try:
            self._client.zremrangebyscore(self._index, "-inf", int(self._clock()) - self.ttl_secs)
            pipe = self._client.pipeline(transaction=False)
            pipe.zcard(self._index)
            for bucket in self._buckets():
                pipe.hlen(bucket)
            return sum(int(n) for n in pipe.execute())
        except self._errors as exc:
            raise self._error("count", exc) from exc

    def clear(self) -> int:
        try:
            count = self.hosts()
            keys = [*self._scan(self._prefix), *self._scan(self._small), self._index]
            for at in range(0, len(keys), 500):
                pipe = self._client.pipeline(transaction=False)
                for key in keys[at : at + 500]:
                    pipe.delete(key)
                pipe.execute()
        except self._errors as exc:
            raise self._error("clear", exc) from exc
        return count

    def close(self) -> None:
        with suppress(*self._errors):
            self._client.close()
