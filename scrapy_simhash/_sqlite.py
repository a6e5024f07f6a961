"""SQLite connection set-up shared by the index and the recrawl store.

Both keep their tables in the same embedded file, so they must agree on how it is opened:
WAL mode lets readers run beside the single writer, the busy timeout makes concurrent
writers (other crawler processes) queue instead of failing, and every write is a
``BEGIN IMMEDIATE`` transaction so a read-then-write step is atomic across processes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def connect(path: str, *, timeout_secs: float, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """Open ``path`` (creating its directory) for use from any one thread at a time."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path, timeout=timeout_secs, isolation_level=None, check_same_thread=False
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA busy_timeout={int(timeout_secs * 1000)}")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db


@contextmanager
def immediate(
    db: sqlite3.Connection, lock: threading.Lock | threading.RLock
) -> Iterator[sqlite3.Connection]:
    """Run the block as one ``BEGIN IMMEDIATE`` transaction, rolled back on any error."""
    with lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
