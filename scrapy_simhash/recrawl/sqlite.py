"""Embedded recrawl store in an SQLite file, shared with the near-duplicate index.

The file may hold the index's tables too and be opened by several crawler processes, so
the connection uses WAL (readers never block the writer) and a busy timeout, and every
read-modify-write runs in a ``BEGIN IMMEDIATE`` transaction: the write lock is taken
before the read, which makes ``update`` and ``claim`` atomic across processes.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import AbstractContextManager
from typing import Any

import xxhash

from scrapy_simhash._sqlite import BUSY_TIMEOUT_SECS, SharedConnection
from scrapy_simhash._sqlite_origins import SCHEMA as ORIGINS_SCHEMA
from scrapy_simhash._sqlite_origins import UrlOrigins
from scrapy_simhash.index.sqlite import DEFAULT_URL, sqlite_path
from scrapy_simhash.old_state import refuse_old_sqlite
from scrapy_simhash.recrawl.backend import Step, queue_ms, queue_seconds, rate_bucket
from scrapy_simhash.recrawl.state import PageState

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS simhash_recrawl_namespaces (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS simhash_recrawl_pages (
    id INTEGER PRIMARY KEY,
    ns INTEGER NOT NULL,
    origin INTEGER NOT NULL,
    rest TEXT NOT NULL,
    due_ms INTEGER NOT NULL,
    bucket INTEGER,
    state BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS simhash_recrawl_pages_due ON simhash_recrawl_pages (ns, due_ms);
"""

#: Rows a URL's id may be probed over when its hash collides with another URL's.
_PROBES = 16

WRITE = (
    "INSERT OR REPLACE INTO simhash_recrawl_pages (id, ns, origin, rest, due_ms, bucket, state) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def row(
    origins: UrlOrigins,
    row_id: int,
    ns: int,
    url: str,
    due: float,
    bucket: int | None,
    state: bytes,
) -> tuple[Any, ...]:
    """The values of :data:`WRITE` for a URL queued at ``due`` (seconds)."""
    return (row_id, ns, *origins.add(url), queue_ms(due), bucket, state)


def url_id(namespace: str, url: str) -> int:
    """Return the row id a URL hashes to (62 bits, so the probe range never overflows).

    The row id *is* the lookup key, so the URL is stored once: an index on the URL would
    store it a second time, the largest part of a row.
    """
    return int(
        xxhash.xxh3_64_intdigest(f"{namespace}\0{url}".encode("utf-8", "surrogatepass")) >> 2
    )


def path_from_url(url: str | None) -> str:
    """Return the file of ``url``, parsed as the index does (None: the index's default file)."""
    return sqlite_path(url or DEFAULT_URL)


class SqliteBackend:
    """One shared connection (:class:`~scrapy_simhash._sqlite.SharedConnection`).

    Rows are keyed by a hash of the URL (probed linearly on a collision) and hold the URL
    once (its origin's id and the rest: ``_sqlite_origins``), the queue time in whole
    milliseconds (indexed per namespace), the rate bucket for the budget policy and the
    packed state.
    """

    errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)

    def __init__(
        self, path: str, namespace: str, *, busy_timeout_secs: float = BUSY_TIMEOUT_SECS
    ) -> None:
        self._namespace = namespace
        self.connection = SharedConnection(path, timeout_secs=busy_timeout_secs)
        self._db = self.connection.db
        self._lock = self.connection.lock
        self._origins = UrlOrigins(self.connection)
        try:
            with self._lock:
                # Nothing of an earlier release's is read or changed: `upgrade` moves it.
                refuse_old_sqlite(self._db, path, "recrawl")
            with self._write() as db:
                create_schema(db)
                self._ns = _namespace_id(db, namespace)
        except BaseException:
            self.connection.close()
            raise
        logger.debug("recrawl store in SQLite file %s, namespace %r", path, namespace)

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.connection.write()

    def _find(self, url: str) -> tuple[int | None, int, PageState | None]:
        return _find(self._db, self._origins, self._namespace, self._ns, url)

    def _write_row(self, row_id: int, state: PageState) -> None:
        self._db.execute(
            WRITE,
            row(
                self._origins,
                row_id,
                self._ns,
                state.url,
                state.next_due,
                rate_bucket(state.rate),
                state.to_bytes(),
            ),
        )

    def update(self, url: str, step: Step) -> PageState:
        with self._write():
            _, row_id, old = self._find(url)
            new = step(old)
            self._write_row(row_id, new)
            return new

    def get(self, url: str) -> PageState | None:
        with self._lock:
            return self._find(url)[2]

    def add(self, states: list[PageState]) -> int:
        added = 0
        with self._write():
            for state in states:
                found, row_id, _ = self._find(state.url)
                if found is None:
                    self._write_row(row_id, state)
                    added += 1
        return added

    def _due(self, until: float, limit: int) -> list[tuple[int, PageState, float]]:
        rows = self._db.execute(
            "SELECT id, origin, rest, state, due_ms FROM simhash_recrawl_pages WHERE ns = ? "
            "AND due_ms <= ? ORDER BY due_ms, origin, rest LIMIT ?",
            (self._ns, queue_ms(until), limit),
        ).fetchall()
        join = self._origins.join
        return [
            (int(row_id), PageState.from_bytes(join(origin, rest), blob), queue_seconds(due))
            for row_id, origin, rest, blob, due in rows
        ]

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        with self._write() as db:
            claimed = self._due(now, limit)
            db.executemany(
                "UPDATE simhash_recrawl_pages SET due_ms = ? WHERE id = ?",
                [(queue_ms(lease_until), row_id) for row_id, _, _ in claimed],
            )
            return [(state, due) for _, state, due in claimed]

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        with self._lock:
            return [(state, due) for _, state, due in self._due(until, limit)]

    def remove(self, url: str) -> bool:
        with self._lock:
            # Most URLs a crawl forgets (dropped copies) were never recorded: no write lock.
            if self._find(url)[0] is None:
                return False
        with self._write() as db:
            found, _, _ = self._find(url)
            if found is None:
                return False
            db.execute("DELETE FROM simhash_recrawl_pages WHERE id = ?", (found,))
            return True

    def count(self) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM simhash_recrawl_pages WHERE ns = ?", (self._ns,)
            ).fetchone()
            return int(row[0])

    def clear(self) -> None:
        with self._write() as db:
            db.execute("DELETE FROM simhash_recrawl_pages WHERE ns = ?", (self._ns,))

    def rate_histogram(self) -> dict[int, int]:
        with self._lock:
            rows = self._db.execute(
                "SELECT bucket, COUNT(*) FROM simhash_recrawl_pages "
                "WHERE ns = ? AND bucket IS NOT NULL GROUP BY bucket",
                (self._ns,),
            ).fetchall()
            return {int(bucket): int(n) for bucket, n in rows}

    def close(self) -> None:
        self.connection.close()


def _namespace_id(db: sqlite3.Connection, name: str) -> int:
    db.execute("INSERT OR IGNORE INTO simhash_recrawl_namespaces (name) VALUES (?)", (name,))
    row = db.execute("SELECT id FROM simhash_recrawl_namespaces WHERE name = ?", (name,))
    return int(row.fetchone()[0])


def _find(
    db: sqlite3.Connection, origins: UrlOrigins, namespace: str, ns: int, url: str
) -> tuple[int | None, int, PageState | None]:
    """Return the row id holding ``url`` (None if absent), the id to write it at, its state."""
    first = url_id(namespace, url)
    rows = db.execute(
        "SELECT id, ns, origin, rest, state FROM simhash_recrawl_pages WHERE id >= ? AND id < ?",
        (first, first + _PROBES),
    ).fetchall()
    split = origins.find(url)
    taken = set()
    for row_id, row_ns, origin, rest, blob in rows:
        if row_ns == ns and (origin, rest) == split:
            return int(row_id), int(row_id), PageState.from_bytes(url, blob)
        taken.add(row_id)
    for candidate in range(first, first + _PROBES):
        if candidate not in taken:
            return None, candidate, None
    raise sqlite3.IntegrityError(f"{_PROBES} stored URLs share the hash of {url}")


def create_schema(db: sqlite3.Connection) -> None:
    """This layout's tables (none of them changed where they exist)."""
    for statement in (*_SCHEMA.split(";"), ORIGINS_SCHEMA):
        if statement.strip():
            db.execute(statement)


def write_json_state(
    db: sqlite3.Connection, origins: UrlOrigins, namespace: str, url: str, due: float, text: str
) -> None:
    """Write a JSON state of 0.1 as a packed row, unless the URL has a row already."""
    ns = _namespace_id(db, namespace)
    found, row_id, _ = _find(db, origins, namespace, ns, url)
    if found is None:
        state = PageState.from_json(text)
        db.execute(
            WRITE, row(origins, row_id, ns, url, due, rate_bucket(state.rate), state.to_bytes())
        )
