"""Embedded recrawl store in an SQLite file, shared with the near-duplicate index.

The file may hold the index's tables too and be opened by several crawler processes, so
the connection uses WAL (readers never block the writer) and a busy timeout, and every
read-modify-write runs in a ``BEGIN IMMEDIATE`` transaction: the write lock is taken
before the read, which makes ``update`` and ``claim`` atomic across processes.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from contextlib import AbstractContextManager

from scrapy_simhash._sqlite import connect, immediate
from scrapy_simhash.index.sqlite import DEFAULT_URL, sqlite_path
from scrapy_simhash.recrawl.backend import Step, rate_bucket
from scrapy_simhash.recrawl.state import PageState

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS simhash_recrawl (
    namespace TEXT NOT NULL,
    url TEXT NOT NULL,
    due REAL NOT NULL,
    bucket INTEGER,
    state TEXT NOT NULL,
    PRIMARY KEY (namespace, url)
);
CREATE INDEX IF NOT EXISTS simhash_recrawl_due ON simhash_recrawl (namespace, due);
"""


def path_from_url(url: str | None) -> str:
    """Return the file of ``url``, parsed as the index does (None: the index's default file)."""
    return sqlite_path(url or DEFAULT_URL)


class SqliteBackend:
    """One connection, serialised by a lock so an async wrapper may call it from a thread."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)

    def __init__(self, path: str, namespace: str, *, busy_timeout_secs: float = 30.0) -> None:
        self._namespace = namespace
        self._lock = threading.Lock()
        self._db = connect(path, timeout_secs=busy_timeout_secs)
        self._db.executescript(_SCHEMA)
        logger.debug("recrawl store in SQLite file %s, namespace %r", path, namespace)

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate(self._db, self._lock)

    def _load(self, url: str) -> PageState | None:
        row = self._db.execute(
            "SELECT state FROM simhash_recrawl WHERE namespace = ? AND url = ?",
            (self._namespace, url),
        ).fetchone()
        return None if row is None else PageState.from_json(row[0])

    def update(self, url: str, step: Step) -> PageState:
        with self._write() as db:
            new = step(self._load(url))
            db.execute(
                "INSERT OR REPLACE INTO simhash_recrawl (namespace, url, due, bucket, state) "
                "VALUES (?, ?, ?, ?, ?)",
                (self._namespace, url, new.next_due, rate_bucket(new.rate), new.to_json()),
            )
            return new

    def get(self, url: str) -> PageState | None:
        with self._lock:
            return self._load(url)

    def add(self, states: list[PageState]) -> int:
        with self._write() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO simhash_recrawl (namespace, url, due, bucket, state) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (self._namespace, s.url, s.next_due, rate_bucket(s.rate), s.to_json())
                    for s in states
                ],
            )
            return db.total_changes - before

    def _due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        rows = self._db.execute(
            "SELECT state, due FROM simhash_recrawl WHERE namespace = ? AND due <= ? "
            "ORDER BY due LIMIT ?",
            (self._namespace, until, limit),
        ).fetchall()
        return [(PageState.from_json(state), due) for state, due in rows]

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        with self._write() as db:
            claimed = self._due(now, limit)
            db.executemany(
                "UPDATE simhash_recrawl SET due = ? WHERE namespace = ? AND url = ?",
                [(lease_until, self._namespace, state.url) for state, _ in claimed],
            )
            return claimed

    def due(self, until: float, limit: int) -> list[tuple[PageState, float]]:
        with self._lock:
            return self._due(until, limit)

    def remove(self, url: str) -> bool:
        with self._write() as db:
            cursor = db.execute(
                "DELETE FROM simhash_recrawl WHERE namespace = ? AND url = ?",
                (self._namespace, url),
            )
            return cursor.rowcount > 0

    def count(self) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM simhash_recrawl WHERE namespace = ?", (self._namespace,)
            ).fetchone()
            return int(row[0])

    def clear(self) -> None:
        with self._write() as db:
            db.execute("DELETE FROM simhash_recrawl WHERE namespace = ?", (self._namespace,))

    def rate_histogram(self) -> dict[int, int]:
        with self._lock:
            rows = self._db.execute(
                "SELECT bucket, COUNT(*) FROM simhash_recrawl "
                "WHERE namespace = ? AND bucket IS NOT NULL GROUP BY bucket",
                (self._namespace,),
            ).fetchall()
            return {int(bucket): int(n) for bucket, n in rows}

    def close(self) -> None:
        with self._lock:
            self._db.close()
