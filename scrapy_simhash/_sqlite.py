"""SQLite connection set-up shared by the index, the recrawl store and the URL rule store.

They keep their tables in the same embedded file, so they must agree on how it is opened:
WAL mode lets readers run beside the single writer, the busy timeout makes concurrent
writers (other crawler processes) queue instead of failing, and every write is a
``BEGIN IMMEDIATE`` transaction so a read-then-write step is atomic across processes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Transactions of one connection between two checkpoints of the write-ahead log.
CHECKPOINT_EVERY = 256
# SQLITE_BUSY and SQLITE_LOCKED: what a call that must not wait gets instead of waiting.
_WAIT_CODES = (5, 6)


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


class WouldWait(Exception):
    """A call tried without waiting met a lock: it did nothing, and may run elsewhere."""


class SharedConnection:
    """One connection to an SQLite file, used by one thread at a time, that the crawl calls
    from its event loop when nothing stands in the way.

    A transaction of the index or the recrawl store costs 20-70 µs of CPU; handing it to a
    worker thread and back cost more than that, and made the embedded index the largest
    part of the add-on's reactor CPU in a CPU-bound crawl. So :meth:`run` tries the call in
    the loop's thread with a busy timeout of zero, and hands it to this connection's one
    worker thread only when it would have to wait: another process holds the write lock,
    or the thread holds the connection. The write-ahead log is checkpointed in that thread
    too; SQLite would do it inside a commit, with a sync of the disk, every thousand pages,
    and the loop would wait for the disk.
    """

    def __init__(self, path: str, *, timeout_secs: float, synchronous: str = "NORMAL") -> None:
        self.path = path
        self.db = connect(path, timeout_secs=timeout_secs, synchronous=synchronous)
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        self.lock = threading.RLock()
        self._timeout_secs = timeout_secs
        self._executor: ThreadPoolExecutor | None = None
        self._queued = 0  # calls handed to the thread, not finished
        self._writes = 0  # transactions since the last checkpoint
        self._checkpointing = False
        self._checkpointer: sqlite3.Connection | None = None

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (see :func:`immediate`)."""
        with self.lock:
            with immediate(self.db, self.lock) as db:
                yield db
            self._writes += 1
            if self._writes >= CHECKPOINT_EVERY and not self._checkpointing and self.path != ":memory:":
                self._checkpointing = True
                self._writes = 0
                self._thread().submit(self._checkpoint)

    def read(self) -> threading.RLock:
        """Hold the connection for reads outside a transaction."""
        return self.lock

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in the loop's thread when it needs no wait, else in the worker
        thread. Calls queued for the thread keep their order: while any is waiting there,
        later ones queue behind it."""
        if not self._queued:
            try:
                with self._without_waiting():
                    return func(*args)
            except WouldWait:
                pass
        self._queued += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._thread(), functools.partial(func, *args))
        finally:
            self._queued -= 1

    @contextmanager
    def _without_waiting(self) -> Iterator[None]:
        if not self.lock.acquire(blocking=False):
            raise WouldWait
        try:
            self.db.execute("PRAGMA busy_timeout=0")
            try:
                yield
            except Exception as exc:
                # Raised at BEGIN (or a read): nothing was written, so it may run again.
                if _would_wait(exc):
                    raise WouldWait from exc
                raise
            finally:
                self.db.execute(f"PRAGMA busy_timeout={int(self._timeout_secs * 1000)}")
        finally:
            self.lock.release()

    def _thread(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simhash-sqlite")
        return self._executor

    def _checkpoint(self) -> None:
        """Copy the write-ahead log into the file without blocking writers (PASSIVE), on a
        connection of the worker thread's own."""
        try:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    self.path, timeout=self._timeout_secs, isolation_level=None,
                    check_same_thread=False,
                )
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:  # the next one will try again; the log only grows
            logger.debug("checkpoint of %s failed: %s", self.path, exc)
        finally:
            self._checkpointing = False

    def close(self) -> None:
        """Finish a running checkpoint, then close (the last connection to a file
        checkpoints it whole)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        with self.lock:
            self.db.close()


def _would_wait(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from) is SQLite saying a lock is taken."""
    while exc is not None:
        if isinstance(exc, sqlite3.OperationalError) and (
            getattr(exc, "sqlite_errorcode", 0) & 0xFF in _WAIT_CODES
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
