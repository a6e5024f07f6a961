"""``sqlite:///path``: the embedded default, a file shared by processes on one machine.

WAL mode lets readers run beside the single writer, the busy timeout makes concurrent
writers queue instead of failing, and every observe() runs in a ``BEGIN IMMEDIATE``
transaction, so two crawler processes can never both keep two near-duplicates. The
recrawl store may keep its own tables in the same file.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import xxhash

from scrapy_simhash._redact import mask_url
from scrapy_simhash._sqlite import BUSY_TIMEOUT_SECS, SharedConnection
from scrapy_simhash._sqlite_origins import SCHEMA as ORIGINS_SCHEMA
from scrapy_simhash._sqlite_origins import UrlOrigins
from scrapy_simhash.confirm import NO_SIGNATURE, STORED_BITS
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
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
from scrapy_simhash.index.drops import DropRecord, pack_distances, unpack_distances
from scrapy_simhash.index.inflight import FREE, Hold, check_lease, check_owner, decide
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.layout import BandLayout
from scrapy_simhash.old_state import refuse_old_sqlite

logger = logging.getLogger(__name__)

DEFAULT_URL = "sqlite:///.scrapy/simhash/index.sqlite3"

# An entry's row id is a hash of its namespace and key (probed linearly on a collision),
# so band records name it by that integer: with the key text in each band row, as in
# 0.2.0's tables (simhash_entries, simhash_bands), a page cost ~410 bytes instead of ~200.
# The records of one band value are one row, its entries' ids packed in a blob (6 bytes
# each): a row per record cost ~20 bytes, ~13 of them SQLite's own (key columns, cell).
# An entry's key is its origin's id and the rest (``_sqlite_origins``).
# An entry's ``fp`` holds its fingerprint and then its signature (24 bytes: the sketch of its
# other lines, then the second test's signature).
# A drop record holds the kept URL after the characters it shares with the dropped one
# (``shared``): a copy's URL is mostly its page's (a tracking parameter, an AMP or print
# path on the same host), so a record keeps ~15 bytes of it instead of ~60.
# A page filed and not yet delivered has a row in simhash_in_flight (index/inflight.py),
# deleted when it is: a settled page has none.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS simhash_namespaces (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, config TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS simhash_index_entries (
    id INTEGER PRIMARY KEY, ns INTEGER NOT NULL, origin INTEGER NOT NULL, rest TEXT NOT NULL,
    fp BLOB NOT NULL, seen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS simhash_index_buckets (
    ns INTEGER NOT NULL, tbl INTEGER NOT NULL, band INTEGER NOT NULL, ids BLOB NOT NULL,
    PRIMARY KEY (ns, tbl, band)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS simhash_drops (
    ns INTEGER NOT NULL, url TEXT NOT NULL, shared INTEGER NOT NULL, kept TEXT NOT NULL,
    distance INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (ns, url)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS simhash_in_flight (
    ns INTEGER NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL, since REAL NOT NULL,
    PRIMARY KEY (ns, key)) WITHOUT ROWID;
"""

_BUCKET = "SELECT ids FROM simhash_index_buckets WHERE ns = ? AND tbl = ? AND band = ?"
#: Bytes of an entry's row id in a bucket (ids are 47-bit hashes plus a probe offset).
_ID_BYTES = 6
#: Entries read by one statement at most.
_IDS_PER_READ = 500
#: Row ids a key may be probed over when its hash collides with another key's.
_PROBES = 16
_MASK64 = (1 << 64) - 1
_SIGNATURE_BYTES = STORED_BITS // 8
#: Drop records between two trims of the record table at most.
TRIM_EVERY = 1024
#: Rows read per query when listing keys or drop records.
PAGE_ROWS = 1000
#: Backend options (SIMHASH_INDEX_OPTIONS) this backend accepts.
OPTIONS = ("timeout", "synchronous")


def sqlite_path(url: str) -> str:
    """Map ``sqlite:///relative`` / ``sqlite:////absolute`` (SQLAlchemy style) to a path."""
    parts = urlsplit(url)
    if parts.netloc:
        raise ConfigurationError(
            f"an SQLite index URL has no host: use sqlite:///relative/path or "
            f"sqlite:////absolute/path, got {mask_url(url)!r}"
        )
    path = parts.path.removeprefix("/")
    if not path:
        raise ConfigurationError(f"the SQLite index URL {mask_url(url)!r} names no file")
    return path


def _kept_after_shared(url: str, kept: str) -> tuple[int, str]:
    """(characters ``kept`` shares with the start of ``url``, the rest of ``kept``)."""
    shared = len(os.path.commonprefix([url, kept]))  # noqa: RUF071 (characters, not paths)
    return shared, kept[shared:]


def _unpack_ids(packed: bytes) -> list[int]:
    return [
        int.from_bytes(packed[at : at + _ID_BYTES], "big")
        for at in range(0, len(packed), _ID_BYTES)
    ]


def _pack_ids(ids: list[int]) -> bytes:
    return b"".join(i.to_bytes(_ID_BYTES, "big") for i in ids)


def _band_int(value: int) -> int:
    """Fold a masked fingerprint into a signed 64-bit SQLite integer.

    Folding 128-bit keys may merge buckets; that only adds candidates, which are verified.
    """
    while value > _MASK64:
        value = (value >> 64) ^ (value & _MASK64)
    return value - (1 << 64) if value >= 1 << 63 else value


class SqliteIndex(NearDuplicateIndex):
    errors = (sqlite3.Error,)

    def __init__(
        self,
        url: str,
        config: IndexConfig,
        *,
        timeout: float = BUSY_TIMEOUT_SECS,
        synchronous: str = "NORMAL",
    ) -> None:
        self.url = url
        self.config = config
        self._bytes = config.bits // 8
        path = sqlite_path(url)
        # Drop records since the last trim: the table is trimmed to its bounds (a scan of
        # the namespace's records) every max_entries/16 records, at most every TRIM_EVERY.
        self._since_trim = 0
        self._last_buckets: tuple[int, list[tuple[int, int, int]]] = (-1, [])
        try:
            self.connection = SharedConnection(path, timeout_secs=timeout, synchronous=synchronous)
            self._db = self.connection.db
            self._lock = self.connection.lock
            self._origins = UrlOrigins(self.connection)
            self._refuse_old_layout(path)  # closes the file when it refuses
            with self._write():
                for statement in (*_SCHEMA.split(";"), ORIGINS_SCHEMA):
                    if statement.strip():
                        self._db.execute(statement)
                self._ns, self.layout = self._open_namespace()
            # A band is stored shifted down to its table's lowest bit: 2-3 bytes where the
            # masked fingerprint took 8 (SQLite integers are as long as their value).
            self._shifts = [(mask & -mask).bit_length() - 1 for mask in self.layout.masks]
            # One statement probes every table: a statement per table cost more than the
            # lookups themselves.
            self._buckets = " UNION ALL ".join([_BUCKET] * self.layout.tables)
        except sqlite3.Error as exc:
            raise self.failure("open", exc) from exc

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        logger.debug("SQLite index %s failed on %s: %s", action, self.url, exc)  # raised, not lost
        return IndexBackendError(
            f"SQLite index {self.url}: {action} failed: {exc} (check that the file is "
            "writable and not on a network file system)"
        )

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.connection.write()

    def _refuse_old_layout(self, path: str) -> None:
        """A file written by 0.2.0 is never misread: it is refused, with the way out."""
        try:
            with self._lock:
                refuse_old_sqlite(self._db, path, "index")
        except ConfigurationError:
            self.connection.close()
            raise

    def _open_namespace(self) -> tuple[int, BandLayout]:
        config = self.config
        row = self._db.execute(
            "SELECT id, config FROM simhash_namespaces WHERE name = ?", (config.namespace,)
        ).fetchone()
        if row is not None and config.reset:
            self._delete_namespace(row[0])
            self._db.execute("DELETE FROM simhash_namespaces WHERE id = ?", (row[0],))
            row = None
        if row is None:
            self.created = True
            layout = config.new_layout()
            self.confirm_key = config.new_key()
            cursor = self._db.execute(
                "INSERT INTO simhash_namespaces (name, config) VALUES (?, ?)",
                (config.namespace, config.record(layout, self.confirm_key)),
            )
            return int(cursor.lastrowid or 0), layout
        where = f"namespace {config.namespace!r} of {self.url}"
        layout, data = config.adopt(row[1], where)
        self.confirm_key = key_of(data)
        return int(row[0]), layout

    @property
    def creation(self) -> str | None:
        """The namespace's row (a reset inserts a new one)."""
        return str(self._ns)

    def _delete_namespace(self, ns: int) -> None:
        self._db.execute("DELETE FROM simhash_index_entries WHERE ns = ?", (ns,))
        self._db.execute("DELETE FROM simhash_index_buckets WHERE ns = ?", (ns,))
        self._db.execute("DELETE FROM simhash_drops WHERE ns = ?", (ns,))
        self._db.execute("DELETE FROM simhash_in_flight WHERE ns = ?", (ns,))

    def _band(self, table: int, band: int) -> int:
        return _band_int(band >> self._shifts[table])

    def _bucket_keys(self, fingerprint: int) -> list[tuple[int, int, int]]:
        """(ns, table, band) of each of ``fingerprint``'s buckets (an observe asks up to
        three times: its read, its write, its store)."""
        last, keys = self._last_buckets
        if last != fingerprint:
            keys = [
                (self._ns, table, self._band(table, band))
                for table, band in enumerate(self.layout.keys(fingerprint))
            ]
            self._last_buckets = (fingerprint, keys)
        return keys

    def _find(self, key: str) -> tuple[int | None, int, tuple[bytes, int] | None]:
        """The row id holding ``key`` (None if absent), the row id to write it at, and its
        stored fingerprint and signature (one blob) and last-seen time."""
        # 47 bits, so an id probed past it still fits a bucket's 6 bytes (7 bytes as a row
        # id, 9 at 64): probing makes collisions harmless.
        first = xxhash.xxh3_64_intdigest(f"{self._ns}\0{key}".encode()) >> 17
        rows = self._db.execute(
            "SELECT id, ns, origin, rest, fp, seen FROM simhash_index_entries "
            "WHERE id >= ? AND id < ?",
            (first, first + _PROBES),
        ).fetchall()
        split = self._origins.find(key)
        taken = set()
        for row_id, ns, origin, rest, blob, seen in rows:
            if ns == self._ns and (origin, rest) == split:
                return int(row_id), int(row_id), (blob, int(seen))
            taken.add(row_id)
        for candidate in range(first, first + _PROBES):
            if candidate not in taken:
                return None, candidate, None
        raise sqlite3.IntegrityError(f"{_PROBES} stored keys share the hash of {key}")

    def _store(self, row_id: int, key: str, blob: bytes, seen: int, *, bands: bool) -> None:
        """Write an entry (and its band rows, unless they are in place)."""
        self._db.execute(
            "INSERT OR REPLACE INTO simhash_index_entries (id, ns, origin, rest, fp, seen) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (row_id, self._ns, *self._origins.add(key), blob, seen),
        )
        if bands:
            packed = row_id.to_bytes(_ID_BYTES, "big")
            self._db.executemany(
                "INSERT INTO simhash_index_buckets (ns, tbl, band, ids) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (ns, tbl, band) DO UPDATE SET ids = CAST(ids || excluded.ids AS BLOB)",
                [(*bucket, packed) for bucket in self._bucket_keys(self._fingerprint(blob))],
            )

    def _candidates(
        self,
        fingerprint: int,
        exclude: str | None,
        now: float,
        *,
        claim: bool = False,
        purge: bool = True,
    ) -> list[Match]:
        """Live matches within k (except ``exclude``, unless claiming it); an observe in a
        write transaction (``purge``) also drops expired ones."""
        limit = self.config.max_distance
        found: dict[str, Match] = {}
        expired: set[str] = set()
        ids: set[int] = set()
        for (packed,) in self._db.execute(
            self._buckets, [value for bucket in self._bucket_keys(fingerprint) for value in bucket]
        ):
            ids.update(_unpack_ids(packed))
        for key, blob, seen in self._entries(list(ids)):
            if key == exclude and not claim:
                continue
            other = self._fingerprint(blob)
            distance = (fingerprint ^ other).bit_count()
            if distance > limit:
                continue
            if self.config.expired(seen, now):
                expired.add(key)
            else:
                found[key] = Match(key, other, distance, self._signature(blob))
        if expired and exclude is not None and purge:
            for key in expired:
                self._unlink(key)
        return list(found.values())

    def _fingerprint(self, blob: bytes) -> int:
        return int.from_bytes(blob[: self._bytes], "big")

    @staticmethod
    def _signature(blob: bytes) -> int:
        return int.from_bytes(blob[-_SIGNATURE_BYTES:], "big")

    def _entries(self, ids: list[int]) -> Iterator[tuple[str, bytes, int]]:
        """(key, fingerprint and signature, last seen) of the entries ``ids``, read in chunks that stay
        under any SQLite's limit on a statement's parameters (999 before 3.32)."""
        for start in range(0, len(ids), _IDS_PER_READ):
            chunk = ids[start : start + _IDS_PER_READ]
            for origin, rest, blob, seen in self._db.execute(
                "SELECT origin, rest, fp, seen FROM simhash_index_entries WHERE id IN "
                f"({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall():
                yield self._origins.join(origin, rest), blob, seen

    def _unlink(self, key: str) -> int | None:
        row_id, _, row = self._find(key)
        if row_id is None or row is None:
            return None
        fingerprint = self._fingerprint(row[0])
        for bucket in self._bucket_keys(fingerprint):
            found = self._db.execute(_BUCKET, bucket).fetchone()
            if found is None:
                continue
            others = [i for i in _unpack_ids(found[0]) if i != row_id]
            if others:
                self._db.execute(
                    "UPDATE simhash_index_buckets SET ids = ? WHERE ns = ? AND tbl = ? AND band = ?",
                    (_pack_ids(others), *bucket),
                )
            else:
                self._db.execute(
                    "DELETE FROM simhash_index_buckets WHERE ns = ? AND tbl = ? AND band = ?",
                    bucket,
                )
        self._db.execute("DELETE FROM simhash_index_entries WHERE id = ?", (row_id,))
        return fingerprint

    def observe(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._observe(key, fingerprint, signature, claim=False)

    def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._observe(key, fingerprint, signature, claim=True)

    def _observe(self, key: str, fingerprint: int, signature: int, *, claim: bool) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        check_signature(signature)
        now = self.config.clock()
        limit = self.config.confirm_distance
        if not claim:
            # A copy of a stored page (most observes of a crawl of copies) is answered
            # by a read: only a page that may be kept needs the write lock, under which
            # the probe runs again, so two processes still never both keep copies.
            with self._lock:
                found = self._candidates(fingerprint, key, now, purge=False)
            match, rejected, _ = judge(found, signature, limit)
            if match is not None:
                return Observation(match, None, False, rejected=rejected)
        with self._write():
            found = self._candidates(fingerprint, key, now, claim=claim)
            match, rejected, twin = judge(found, signature, limit)
            if match is not None:
                return Observation(match, None, False, rejected=rejected)
            _, row_id, stored = self._find(key)
            live = stored is not None and not self.config.expired(stored[1], now)
            row = stored if live else None
            if claim and row is not None:
                return Observation(
                    None, self._fingerprint(row[0]), False, self._signature(row[0]), rejected
                )
            if twin:  # a distinct page holds this very fingerprint: the page passes unfiled
                old = None if row is None else self._fingerprint(row[0])
                return Observation(None, old, False, None, rejected)
            previous = previous_signature = None
            if row is not None:
                previous, previous_signature = self._fingerprint(row[0]), self._signature(row[0])
            same = stored is not None and self._fingerprint(stored[0]) == fingerprint
            if stored is not None and not same:
                self._unlink(key)
            blob = fingerprint.to_bytes(self._bytes, "big") + signature.to_bytes(
                _SIGNATURE_BYTES, "big"
            )
            self._store(row_id, key, blob, int(now), bands=not same)
            return Observation(None, previous, True, previous_signature, rejected)

    def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        with self._lock:
            return ordered(self._candidates(fingerprint, None, self.config.clock()))

    def _row(self, sql: str, *params: object) -> tuple[Any, ...] | None:
        """One row of a read in this namespace (``ns`` is the first parameter)."""
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(sql, (self._ns, *params)).fetchone()
        return row

    def get(self, key: str) -> int | None:
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> tuple[int, int] | None:
        with self._lock:
            row = self._find(key)[2]
        if row is None or self.config.expired(row[1], self.config.clock()):
            return None
        return self._fingerprint(row[0]), self._signature(row[0])

    def rename(self, old: str, new: str) -> bool:
        check_key(new)
        with self._write():
            row = self._find(old)[2]
            if row is None:
                return False
            self._unlink(new)
            self._unlink(old)
            self._store(self._find(new)[1], new, row[0], row[1], bands=True)
            return True

    def record_drop(self, url: str, kept: str, distance: int, apart: int | None = None) -> None:
        check_key(url)
        limit = self.config.drop_max_entries
        if limit <= 0:
            return
        now = self.config.clock()
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO simhash_drops (ns, url, shared, kept, distance, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    self._ns,
                    url,
                    *_kept_after_shared(url, kept),
                    pack_distances(distance, apart),
                    int(now),
                ),
            )
            self._since_trim += 1
            if self._since_trim >= max(1, min(TRIM_EVERY, limit // 16)):
                self._since_trim = 0
                self._trim_drops(db, limit, now)

    def _trim_drops(self, db: sqlite3.Connection, limit: int, now: float) -> None:
        """Delete expired records, then the oldest beyond ``limit``."""
        ttl = self.config.drop_ttl_secs
        if ttl is not None:
            db.execute("DELETE FROM simhash_drops WHERE ns = ? AND at < ?", (self._ns, now - ttl))
        (count,) = db.execute(
            "SELECT COUNT(*) FROM simhash_drops WHERE ns = ?", (self._ns,)
        ).fetchone()
        if count > limit:
            db.execute(
                "DELETE FROM simhash_drops WHERE ns = ? AND url IN (SELECT url FROM "
                "simhash_drops WHERE ns = ? ORDER BY at, url LIMIT ?)",
                (self._ns, self._ns, count - limit),
            )

    def drop_of(self, url: str) -> DropRecord | None:
        row = self._row(
            "SELECT shared, kept, distance, at FROM simhash_drops WHERE ns = ? AND url = ?",
            url,
        )
        if row is None or self.config.drop_expired(row[3], self.config.clock()):
            return None
        distance, apart = unpack_distances(int(row[2]))
        return DropRecord(url, url[: row[0]] + row[1], distance, int(row[3]), apart)

    def forget_drop(self, url: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM simhash_drops WHERE ns = ? AND url = ?", (self._ns, url))

    def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        check_key(key)
        check_owner(owner)
        check_lease(lease_secs)
        now = self.config.clock()
        with self._write() as db:
            row = db.execute(
                "SELECT owner, since FROM simhash_in_flight WHERE ns = ? AND key = ?",
                (self._ns, key),
            ).fetchone()
            found, write = decide(
                None if row is None else (str(row[0]), float(row[1])), owner, now, lease_secs
            )
            if write and (create or found.state != FREE):
                db.execute(
                    "INSERT OR REPLACE INTO simhash_in_flight (ns, key, owner, since) "
                    "VALUES (?, ?, ?, ?)",
                    (self._ns, key, owner, now),
                )
            return found

    def settle(self, key: str, owner: str) -> bool:
        with self._write() as db:
            cursor = db.execute(
                "DELETE FROM simhash_in_flight WHERE ns = ? AND key = ? AND owner = ?",
                (self._ns, key, owner),
            )
            return cursor.rowcount > 0

    def in_flight(self, key: str) -> tuple[str, float] | None:
        row = self._row("SELECT owner, since FROM simhash_in_flight WHERE ns = ? AND key = ?", key)
        return None if row is None else (str(row[0]), float(row[1]))

    def drop_count(self) -> int:
        row = self._row("SELECT COUNT(*) FROM simhash_drops WHERE ns = ?")
        return int(row[0]) if row else 0

    def _pages(self, sql: str, start: object = "") -> Iterator[tuple[Any, ...]]:
        """Rows of ``sql`` (first column the order, ``?`` for ns and the last one seen) in
        pages of :data:`PAGE_ROWS`, so a large namespace is never held in memory at once."""
        after = start
        while True:
            with self._lock:
                rows = self._db.execute(sql, (self._ns, after, PAGE_ROWS)).fetchall()
            yield from rows
            if len(rows) < PAGE_ROWS:
                return
            after = rows[-1][0]

    def keys(self) -> Iterator[str]:
        now = self.config.clock()
        sql = (
            "SELECT id, origin, rest, seen FROM simhash_index_entries WHERE ns = ? "
            "AND id > ? ORDER BY id LIMIT ?"
        )
        for _, origin, rest, seen in self._pages(sql, start=-1):
            if not self.config.expired(seen, now):
                with self._lock:
                    key = self._origins.join(origin, rest)
                yield key

    def drops(self) -> Iterator[DropRecord]:
        now = self.config.clock()
        sql = (
            "SELECT url, shared, kept, distance, at FROM simhash_drops WHERE ns = ? "
            "AND url > ? ORDER BY url LIMIT ?"
        )
        for url, shared, kept, distance, at in self._pages(sql):
            if not self.config.drop_expired(at, now):
                figures = unpack_distances(int(distance))
                yield DropRecord(str(url), url[:shared] + kept, figures[0], int(at), figures[1])

    def remove(self, key: str) -> bool:
        with self._write():
            return self._unlink(key) is not None

    def clear(self) -> None:
        with self._write():
            self._delete_namespace(self._ns)

    def count(self) -> int:
        row = self._row("SELECT COUNT(*) FROM simhash_index_entries WHERE ns = ?")
        return int(row[0]) if row else 0

    def purge_expired(self) -> int:
        ttl = self.config.ttl_secs
        if ttl is None:
            return 0
        cutoff = self.config.clock() - ttl
        with self._write() as db:
            keys = [
                self._origins.join(origin, rest)
                for origin, rest in db.execute(
                    "SELECT origin, rest FROM simhash_index_entries WHERE ns = ? AND seen < ?",
                    (self._ns, cutoff),
                ).fetchall()
            ]
            for key in keys:
                self._unlink(key)
        return len(keys)

    def stats(self) -> IndexStats:
        with self._lock:
            sizes = [
                int(size)
                for (size,) in self._db.execute(
                    f"SELECT length(ids) / {_ID_BYTES} FROM simhash_index_buckets WHERE ns = ?",
                    (self._ns,),
                )
            ]
        return bucket_stats("sqlite", self.count(), self.layout, sizes)

    def close(self) -> None:
        self.connection.close()
