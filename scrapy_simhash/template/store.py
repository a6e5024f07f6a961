"""Where each host's template memory lives: the namespace's own store, shared by every
crawl process.

A host costs :data:`~scrapy_simhash.template.HOST_BYTES` (8 KiB: its kept and seen counters)
in every store, whatever its size. Growth in total is bounded by :data:`MAX_HOSTS` hosts per namespace in memory and
SQLite (a host beyond that is not learned: its pages are judged as without the memory), and
in Redis by the namespace's expiry: a host's key expires ``ttl_secs`` after its last page
(the index's ``ttl_secs``; 0 keeps it until ``reset``). 100,000 hosts cost 820 MB.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

from scrapy_simhash._redis import mask_url, sync_client
from scrapy_simhash._sqlite import connect_with_schema, immediate
from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.template import EMPTY, HALVE_AT, HOST_BYTES, SLOTS, HostMemory

__all__ = ["HOST_BYTES", "MAX_HOSTS", "TemplateStore"]
#: Hosts per namespace at most, in memory and SQLite.
MAX_HOSTS = 100_000


class TemplateStore(ABC):
    """The blocking contract; the crawl runs it off its event loop."""

    @abstractmethod
    def read(self, host: str) -> HostMemory:
        """The host's counters (empty for a host never learned)."""

    @abstractmethod
    def learn(self, host: str, slots: Sequence[int]) -> None:
        """Count one more kept page of ``host`` with the lines of ``slots``."""

    @abstractmethod
    def see(self, host: str, slots: Sequence[int]) -> None:
        """Count one more fetched page of ``host`` (before it is judged)."""

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

    def learn(self, host: str, slots: Sequence[int]) -> None:
        self._update(host, lambda memory: memory.learned(slots, self.halve_at))

    def see(self, host: str, slots: Sequence[int]) -> None:
        self._update(host, lambda memory: memory.saw(slots, self.halve_at))

    def _update(self, host: str, change: Callable[[HostMemory], HostMemory]) -> None:
        with self._lock:
            memory = self._hosts.get(host)
            if memory is None and len(self._hosts) >= self.max_hosts:
                return
            self._hosts[host] = change(memory or EMPTY)

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
    """One row per host next to the index's tables in the same file."""

    def __init__(
        self, path: str, namespace: str, *, timeout_secs: float = 30.0,
        max_hosts: int = MAX_HOSTS, halve_at: int = HALVE_AT,
    ) -> None:
        self.namespace = namespace
        self.max_hosts = max_hosts
        self.halve_at = halve_at
        self._lock = threading.RLock()
        self._where = path
        try:
            self._db = connect_with_schema(path, _SCHEMA, self._lock, timeout_secs=timeout_secs)
        except sqlite3.Error as exc:
            raise self._error("open", exc) from exc

    def _error(self, action: str, exc: BaseException) -> IndexBackendError:
        return IndexBackendError(f"SQLite template store {self._where}: {action} failed: {exc}")

    def read(self, host: str) -> HostMemory:
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT memory FROM simhash_templates WHERE ns=? AND host=?",
                    (self.namespace, host),
                ).fetchone()
        except sqlite3.Error as exc:
            raise self._error("read", exc) from exc
        return HostMemory.from_bytes(row[0]) if row else EMPTY

    def learn(self, host: str, slots: Sequence[int]) -> None:
        self._update(host, lambda memory: memory.learned(slots, self.halve_at))

    def see(self, host: str, slots: Sequence[int]) -> None:
        self._update(host, lambda memory: memory.saw(slots, self.halve_at))

    def _update(self, host: str, change: Callable[[HostMemory], HostMemory]) -> None:
        ns = self.namespace
        try:
            with immediate(self._db, self._lock) as db:
                row = db.execute(
                    "SELECT memory FROM simhash_templates WHERE ns=? AND host=?", (ns, host)
                ).fetchone()
                if row is None:  # a new host: within the bound, counted in the same write
                    if self._count(db) >= self.max_hosts:
                        return
                    db.execute(
                        "INSERT INTO simhash_template_hosts VALUES (?, 1) ON CONFLICT (ns) "
                        "DO UPDATE SET hosts = hosts + 1", (ns,),
                    )
                memory = HostMemory.from_bytes(row[0]) if row else EMPTY
                db.execute(
                    "INSERT OR REPLACE INTO simhash_templates VALUES (?, ?, ?)",
                    (ns, host, change(memory).to_bytes()),
                )
        except sqlite3.Error as exc:
            raise self._error("update", exc) from exc

    def _count(self, db: sqlite3.Connection) -> int:
        row = db.execute(
            "SELECT hosts FROM simhash_template_hosts WHERE ns=?", (self.namespace,)
        ).fetchone()
        return int(row[0]) if row else 0

    def hosts(self) -> int:
        try:
            with self._lock:
                return self._count(self._db)
        except sqlite3.Error as exc:
            raise self._error("count", exc) from exc

    def clear(self) -> int:
        try:
            with immediate(self._db, self._lock) as db:
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
            self._db.close()


def glob_escape(text: str) -> str:
    """``text`` as a Redis glob (``SCAN MATCH``) that matches only itself.

    A namespace is the user's to name, and ``?``, ``*``, ``[`` (with ``]``) are glob
    syntax in a pattern, ``\\`` its escape: each is preceded by a backslash.
    """
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


#: Halves one part of a host's counters (its SLOTS buckets from ARGV[1], its page count at
#: ARGV[3]) when its page count is still at ARGV[4] or more: once, whichever process that
#: counted the page reaching it asks first. Counters are big-endian u16 (BITFIELD's).
_HALVE = """
local key, first, slots = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local pages_at, threshold = ARGV[3], tonumber(ARGV[4])
local pages = redis.call('BITFIELD', key, 'GET', 'u16', '#' .. pages_at)[1]
if pages < threshold then return 0 end
local blob = redis.call('GETRANGE', key, first * 2, (first + slots) * 2 - 1)
local out = {}
for i = 0, slots - 1 do
  local hi, lo = string.byte(blob, 2 * i + 1, 2 * i + 2)
  local half = math.floor(((hi or 0) * 256 + (lo or 0)) / 2)
  out[i + 1] = string.char(math.floor(half / 256), half % 256)
end
redis.call('SETRANGE', key, first * 2, table.concat(out))
redis.call('BITFIELD', key, 'SET', 'u16', '#' .. pages_at, math.floor(pages / 2))
return 1
"""


class RedisTemplateStore(TemplateStore):
    """One string per host, its counters updated in place by ``BITFIELD ... OVERFLOW SAT``:
    every process adds to the same counters atomically, with no read-modify-write (but the
    rare halving, a script). Keys carry the namespace's hash tag, as the index's do (one
    Cluster slot)."""

    def __init__(self, url: str, namespace: str, *, ttl_secs: float | None = None,
                 halve_at: int = HALVE_AT, **options: Any) -> None:
        import redis

        self.halve_at = halve_at
        self._url = url
        self._errors = (redis.RedisError,)
        self._prefix = f"simhash:{{{namespace}}}:tp:"
        self._ttl = int(ttl_secs) if ttl_secs else None
        try:
            self._client: Any = sync_client(url, **options)
        except self._errors as exc:
            raise self._error("open", exc) from exc

    def _error(self, action: str, exc: BaseException) -> IndexBackendError:
        return IndexBackendError(
            f"Redis template store {mask_url(self._url)}: {action} failed: {type(exc).__name__}"
        )

    def read(self, host: str) -> HostMemory:
        try:
            blob = self._client.get(self._prefix + host)
        except self._errors as exc:
            raise self._error("read", exc) from exc
        return HostMemory.from_bytes(blob) if blob else EMPTY

    def learn(self, host: str, slots: Sequence[int]) -> None:
        self._count(host, slots, 0, HostMemory.PAGES_AT, "learn")

    def see(self, host: str, slots: Sequence[int]) -> None:
        self._count(host, slots, HostMemory.SEEN_AT, HostMemory.SEEN_PAGES_AT, "see")

    def _count(self, host: str, slots: Sequence[int], base: int, pages: int, action: str) -> None:
        key = self._prefix + host
        args: list[Any] = ["OVERFLOW", "SAT", "INCRBY", "u16", f"#{pages}", 1]
        for slot in sorted(set(slots)):
            args += ["INCRBY", "u16", f"#{base + slot}", 1]
        try:
            pipe = self._client.pipeline(transaction=False)
            pipe.execute_command("BITFIELD", key, *args)
            if self._ttl:
                pipe.expire(key, self._ttl)
            counted = pipe.execute()[0]
            if counted[0] >= self.halve_at:
                self._client.eval(_HALVE, 1, key, base, SLOTS, pages, self.halve_at)
        except self._errors as exc:
            raise self._error(action, exc) from exc

    def _keys(self) -> list[Any]:
        # The namespace is escaped: `shop?` must not match (and clear) `shopX`'s hosts.
        pattern = glob_escape(self._prefix) + "*"
        return list(self._client.scan_iter(match=pattern, count=1000))

    def hosts(self) -> int:
        try:
            return len(self._keys())
        except self._errors as exc:
            raise self._error("count", exc) from exc

    def clear(self) -> int:
        try:
            keys = self._keys()
            for key in keys:
                self._client.delete(key)
        except self._errors as exc:
            raise self._error("clear", exc) from exc
        return len(keys)

    def close(self) -> None:
        with suppress(*self._errors):
            self._client.close()
