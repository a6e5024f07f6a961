"""SQLite connection set-up shared by the index, the recrawl store and the URL rule store.

They keep their tables in the same embedded file, so they must agree on how it is opened:
WAL mode lets readers run beside the single writer, the busy timeout makes concurrent
writers (other crawler processes) queue instead of failing, and every write is a
``BEGIN IMMEDIATE`` transaction so a read-then-write step is atomic across processes.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from scrapy_simhash.exceptions import ConfigurationError

logger = logging.getLogger(__name__)

T = TypeVar("T")

# SQLITE_BUSY and SQLITE_LOCKED: what a call that must not wait gets instead of waiting.
_WAIT_CODES = (5, 6)


#: The values of ``PRAGMA synchronous`` (SQLite quietly ignores any other).
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA", "0", "1", "2", "3")


def check_options(timeout_secs: object, synchronous: object) -> None:
    """Refuse a ``timeout`` that is not a number of seconds or a ``synchronous`` SQLite does
    not know, naming the option: sqlite3 would fail with a bare TypeError, and SQLite keeps
    its default for an unknown ``synchronous`` without a word."""
    if isinstance(timeout_secs, bool) or not isinstance(timeout_secs, int | float) or not (
        timeout_secs >= 0
    ):
        raise ConfigurationError(
            f"the SQLite option 'timeout' must be a number of seconds of at least 0, got "
            f"{timeout_secs!r}; fix `options`"
        )
    if not isinstance(synchronous, str) or synchronous.upper() not in SYNCHRONOUS:
        raise ConfigurationError(
            f"the SQLite option 'synchronous' must be one of {', '.join(SYNCHRONOUS[:4])}, "
            f"got {synchronous!r}; fix `options`"
        )


def connect(path: str, *, timeout_secs: float, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """Open ``path`` (creating its directory) for use from any one thread at a time."""
    check_options(timeout_secs, synchronous)
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path, timeout=timeout_secs, isolation_level=None, check_same_thread=False
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA busy_timeout={int(timeout_secs * 1000)}")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db


def connect_with_schema(
    path: str, schema: str, lock: threading.Lock | threading.RLock, *, timeout_secs: float
) -> sqlite3.Connection:
    """:func:`connect`, then create the tables of ``schema`` (statements split on ``;``) in
    one transaction: what a store living next to the index's tables does when it opens."""
    db = connect(path, timeout_secs=timeout_secs)
    with immediate(db, lock):
        for statement in schema.split(";"):
            db.execute(statement)
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


#: Transactions of one connection between two checkpoints of the write-ahead log.
CHECKPOINT_EVERY = 256
#: Size of the log from which a checkpoint also waits for other processes' writers and
#: empties the file: a passive checkpoint cannot restart a log that is always written to.
WAL_LIMIT_BYTES = 64 * 1024 * 1024
# One lock per file in this process: the index and the recrawl store keep their tables in
# one file through two connections, and a checkpoint must see neither of them write.
_FILE_LOCKS: dict[str, threading.RLock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _file_lock(path: str) -> threading.RLock:
    if path == ":memory:":
        return threading.RLock()
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(path, threading.RLock())


class SharedConnection:
    """One connection to an SQLite file, used by one thread at a time, that the crawl calls
    from its event loop when nothing stands in the way.

    A per-page transaction of the index or the recrawl store costs 20-70 µs of CPU; handing
    it to a worker thread and back cost more than that, and made the embedded index the
    largest part of the add-on's reactor CPU in a CPU-bound crawl. So :meth:`run` tries a
    call in the loop's thread with a busy timeout of zero, and hands it to this
    connection's one worker thread only when it would have to wait: another process holds
    the write lock, or the thread holds the file. The write-ahead log is checkpointed in
    that thread, holding the file: SQLite would do it inside a commit, with a sync of the
    disk, and the loop would wait for the disk. Inline calls need the log and commits that
    do not sync (``synchronous`` NORMAL or OFF); otherwise every call runs in the thread.
    """

    def __init__(self, path: str, *, timeout_secs: float, synchronous: str = "NORMAL") -> None:
        # Absolute: a checkpoint or a reopen must not follow a later chdir.
        self.path = path if path == ":memory:" else str(Path(path).resolve())
        self.db = connect(self.path, timeout_secs=timeout_secs, synchronous=synchronous)
        (mode,) = self.db.execute("PRAGMA journal_mode").fetchone()
        self._logged = str(mode).lower() == "wal"
        if self._logged:
            self.db.execute("PRAGMA wal_autocheckpoint=0")
        #: Whether :meth:`run` may call inline (see the class docstring).
        self.inline = self._logged and synchronous.upper() in ("OFF", "NORMAL", "0", "1")
        self.lock = _file_lock(self.path)
        self._timeout_secs = timeout_secs
        self._executor: ThreadPoolExecutor | None = None
        self._queued = 0  # calls handed to the thread, not finished
        self._writes = 0  # transactions since the last checkpoint
        self._checkpointing = False
        self._closed = False
        self._rolled_back: list[Callable[[], None]] = []

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when a transaction of :meth:`write` is undone (what a cache
        learned in it may name rows that were never written)."""
        self._rolled_back.append(callback)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (see :func:`immediate`)."""
        with self.lock:
            begun = False
            try:
                with immediate(self.db, self.lock) as db:
                    begun = True
                    yield db
            except BaseException:
                if begun:  # not a BEGIN that met another process's lock
                    for callback in self._rolled_back:
                        callback()
                raise
            self._writes += 1
            if self._writes >= CHECKPOINT_EVERY and self._logged and not self._checkpointing:
                self._writes = 0
                self._checkpoint_soon()

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in the loop's thread when it needs no wait, else in the worker
        thread. ``func`` may read, then write in at most one transaction, and change nothing
        before it: a call that would wait is run again, whole, in the thread. Calls queued for the
        thread keep their order: while any waits there, later ones queue behind it."""
        if self._closed:
            raise sqlite3.ProgrammingError(f"the SQLite file {self.path} is closed")
        if self.inline and not self._queued:
            try:
                with self._without_waiting():
                    return func(*args)
            except WouldWait:
                pass
        self._queued += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._thread(), func, *args)
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
                if not _would_wait(exc):
                    raise
                # In WAL mode only BEGIN or a read meets a lock, and nothing was written;
                # should a transaction be open all the same, it is undone before the retry.
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise WouldWait from exc
            finally:
                self.db.execute(f"PRAGMA busy_timeout={int(self._timeout_secs * 1000)}")
        finally:
            self.lock.release()

    def _thread(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simhash-sqlite")
        return self._executor

    def _checkpoint_soon(self) -> None:
        if self._closed:
            return
        self._checkpointing = True
        try:
            self._thread().submit(self._checkpoint)
        except RuntimeError:  # the executor is shutting down (close, interpreter exit)
            self._checkpointing = False

    def _checkpoint(self) -> None:
        """Copy the log into the file, holding the file so that the next write restarts
        the log; once the log is over WAL_LIMIT_BYTES (other processes write all the
        time), wait for their writers too and empty it."""
        try:
            with self.lock:
                if self._closed:
                    return
                mode = "PASSIVE"
                if Path(f"{self.path}-wal").stat().st_size > WAL_LIMIT_BYTES:
                    mode = "TRUNCATE"
                busy, frames, copied = self.db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
                if busy or copied < frames:
                    logger.debug("checkpoint of %s: %s of %s frames copied", self.path, copied, frames)
        except (sqlite3.Error, OSError) as exc:  # the next one will try again
            logger.warning("checkpoint of the SQLite file %s failed: %s", self.path, exc)
        finally:
            self._checkpointing = False

    def close(self) -> None:
        """Finish the calls queued for the thread and a running checkpoint, then close
        (the last connection to a file checkpoints it whole)."""
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True)
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
