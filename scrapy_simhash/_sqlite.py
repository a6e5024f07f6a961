"""SQLite connection set-up shared by the index, the recrawl store, the URL rule store and
the hosts' template memory: one :class:`SharedConnection` each, under one lock per file.

They keep their tables in the same embedded file, so they must agree on how it is opened:
WAL mode lets readers run beside the single writer, the busy timeout makes concurrent
writers (other crawler processes) queue instead of failing, and every write is a
``BEGIN IMMEDIATE`` transaction so a read-then-write step is atomic across processes.

Two things done to the files under a running crawl must not pass unseen. A file deleted,
moved or replaced: SQLite goes on writing to the file it opened, which no one will find
again, so each shared connection compares the file at its path with the one it opened
(device and inode) every :data:`CHECK_EVERY_SECS` and whenever the ``-shm`` file changes,
and raises :class:`~scrapy_simhash.exceptions.StorageLost`. And a ``-shm`` file made
immutable or append-only (``chattr +i``): SQLite maps it into memory and writes it on
every transaction, even a read, and writing a page of a file the kernel no longer lets
anyone change kills the process with SIGBUS, with no line in any log. So before every call
of a shared connection (:meth:`SharedConnection.run`, ``reading``, ``writing``) the
``-shm`` file's flags are read (``statx``, about a microsecond, no file opened), and a file that cannot be
written raises :class:`UnwritableFile` naming it; a connection whose ``-shm`` file cannot
be written is never closed (closing writes it too): it is left open until the process
exits, which releases it.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from scrapy_simhash.exceptions import ConfigurationError, StorageLost

logger = logging.getLogger(__name__)

T = TypeVar("T")

# SQLITE_BUSY and SQLITE_LOCKED: what a call that must not wait gets instead of waiting.
_WAIT_CODES = (5, 6)


#: The values of ``PRAGMA synchronous`` (SQLite quietly ignores any other).
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA", "0", "1", "2", "3")

#: How long a connection waits for another process's write lock when its ``timeout``
#: option does not say (a crawl says: just under its calls' timeout, ``glue.wiring.
#: storage_options``). One value for every store of the file.
BUSY_TIMEOUT_SECS = 30.0


def busy_timeout(options: Mapping[str, Any] | None) -> float:
    """The busy timeout ``options`` (a storage's client options) give a connection."""
    return float((options or {}).get("timeout", BUSY_TIMEOUT_SECS))


def check_options(timeout_secs: object, synchronous: object) -> None:
    """Refuse a ``timeout`` that is not a number of seconds or a ``synchronous`` SQLite does
    not know, naming the option: sqlite3 would fail with a bare TypeError, and SQLite keeps
    its default for an unknown ``synchronous`` without a word."""
    if (
        isinstance(timeout_secs, bool)
        or not isinstance(timeout_secs, int | float)
        or not (timeout_secs >= 0)
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


# -- the files under a connection ------------------------------------------------------------

#: Seconds between two comparisons of the file at a shared connection's path with the file
#: it opened (a change of its ``-shm`` file compares them at once).
CHECK_EVERY_SECS = 1.0


class UnwritableFile(PermissionError):
    """A file of the database (its ``-shm`` or ``-wal`` file, or the file itself) is
    immutable or append-only: SQLite must not touch it (see the module docstring). A
    PermissionError: at start-up the crawl refuses the file, mid-crawl it is an outage."""


_STATX_ATTR_IMMUTABLE = 0x10
_STATX_ATTR_APPEND = 0x20
_STATX_INO = 0x100
_AT_FDCWD = -100
_STATX_SIZE = 256  # struct statx, padded
_BSD_LOCKED = sum(
    getattr(stat, name, 0) for name in ("UF_IMMUTABLE", "SF_IMMUTABLE", "UF_APPEND", "SF_APPEND")
)


def _load_statx() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):  # a libc without statx (glibc < 2.28)
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_void_p,
    ]
    function.restype = ctypes.c_int
    return function


_STATX = _load_statx()


class _StatxBuffer(threading.local):
    """A ``struct statx`` per thread, with views of the two fields read: a new buffer and
    slices of it at each call cost more than the system call."""

    def __init__(self) -> None:
        self.buffer = ctypes.create_string_buffer(_STATX_SIZE)
        self.attributes = ctypes.c_uint64.from_buffer(self.buffer, 8)
        self.inode = ctypes.c_uint64.from_buffer(self.buffer, 32)


_STATX_BUFFERS = _StatxBuffer()
_LOCKED = _STATX_ATTR_IMMUTABLE | _STATX_ATTR_APPEND


def file_state(path: str | bytes) -> tuple[int, bool] | None:
    """The inode of ``path`` and whether it is immutable or append-only; None when there
    is no such file. Read without opening the file: closing any descriptor of a file
    SQLite has open would drop the locks SQLite holds on it. About a microsecond."""
    if _STATX is not None:
        view = _STATX_BUFFERS
        name = path if isinstance(path, bytes) else os.fsencode(path)
        if _STATX(_AT_FDCWD, name, 0, _STATX_INO, view.buffer) != 0:
            error = ctypes.get_errno()
            if error in (2, 20):  # ENOENT, ENOTDIR
                return None
            raise OSError(error, os.strerror(error), os.fsdecode(path))
        return view.inode.value, bool(view.attributes.value & _LOCKED)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info.st_ino, bool(getattr(info, "st_flags", 0) & _BSD_LOCKED)


def _unwritable(path: str, which: str) -> UnwritableFile:
    name = f"{path}{which}"
    why = (
        " (SQLite maps it into memory: writing it would kill the process)"
        if (which == "-shm")
        else ""
    )
    return UnwritableFile(
        f"the SQLite file {name} is immutable or append-only (chattr +i or +a), so SQLite "
        f"cannot write it{why}; nothing is read or written in {path} until the flag is "
        f"removed (chattr -i -a {name})"
    )


def refuse_unwritable(path: str, shm_name: bytes | None = None) -> tuple[int, bool] | None:
    """Raise :class:`UnwritableFile` when ``path``'s ``-shm`` file (``shm_name``: its name,
    encoded) cannot be written; its state otherwise (None: no such file yet)."""
    shm = file_state(shm_name or f"{path}-shm")
    if shm is not None and shm[1]:
        raise _unwritable(path, "-shm")
    return shm


def shm_unwritable(path: str) -> bool:
    """Whether ``path``'s ``-shm`` file exists and cannot be written (never raises)."""
    try:
        shm = file_state(f"{path}-shm")
    except OSError:
        return False
    return shm is not None and shm[1]


def _leave_open(db: sqlite3.Connection) -> None:
    """Never close ``db``, nor let it be collected: closing a connection writes its
    ``-shm`` file, which would kill the process when the file cannot be written. The
    process releases it when it exits; the write-ahead log keeps what was committed."""
    logger.warning(
        "the SQLite connection to %s is left open until the process exits: its -shm file "
        "cannot be written, and closing it would write it",
        getattr(db, "simhash_path", "?"),
    )
    try:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(db))
    except AttributeError:  # pragma: no cover - an interpreter without the C API
        _NEVER_CLOSED.append(db)


_NEVER_CLOSED: list[sqlite3.Connection] = []


class Connection(sqlite3.Connection):
    """sqlite3's connection, closed only while SQLite may write the ``-shm`` file."""

    simhash_path = ":memory:"
    _simhash_left = False  # left open for good (see _leave_open)

    def _must_stay_open(self) -> bool:
        if self._simhash_left:
            return True
        if self.simhash_path == ":memory:" or not shm_unwritable(self.simhash_path):
            return False
        self._simhash_left = True
        _leave_open(self)
        return True

    def close(self) -> None:
        if not self._must_stay_open():
            super().close()

    def __del__(self) -> None:  # collected without close(): sqlite3 would close it
        try:  # noqa: SIM105 - at interpreter exit, contextlib may be gone already
            self._must_stay_open()
        except Exception:  # noqa: BLE001, S110
            pass


def connect(path: str, *, timeout_secs: float, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """Open ``path`` (creating its directory) for use from any one thread at a time (a
    :class:`SharedConnection` checks the files before each of its calls)."""
    check_options(timeout_secs, synchronous)
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        refuse_unwritable(path)
    db = sqlite3.connect(
        path,
        timeout=timeout_secs,
        isolation_level=None,
        check_same_thread=False,
        factory=Connection,
    )
    db.simhash_path = path if path == ":memory:" else os.path.abspath(path)
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


#: Transactions of one connection between two checkpoints of the write-ahead log.
CHECKPOINT_EVERY = 256
#: Size of the log from which a checkpoint also waits for other processes' writers and
#: empties the file: a passive checkpoint cannot restart a log that is always written to.
WAL_LIMIT_BYTES = 64 * 1024 * 1024
# One lock per file in this process: the index, the recrawl store, the URL rules and the
# hosts' templates keep their tables in one file through a connection each; each takes the
# lock before it asks SQLite for the write lock (so they never meet in SQLite's busy
# handler), and a checkpoint, holding it, sees none of them write.
_FILE_LOCKS: dict[str, threading.RLock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


# The loss each file opened in this process met, by path and the (device, inode) opened:
# the first of its connections to find the file gone tells the others, which would
# otherwise find, at their next look, the new file another store opened at the path and
# call the deleted file replaced.
_LOSSES: dict[tuple[str, tuple[int, int] | None], StorageLost] = {}


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
        #: The file opened (device, inode), compared with the one at the path by check().
        self._opened = self._identity()
        # The file is at its path now: a loss recorded under the same inode was of a file
        # moved back, or of one whose inode the file system gave again once it was freed.
        _LOSSES.pop((self.path, self._opened), None)
        self._shm: int | None = None  # the -shm file's inode when last looked at
        self._next_check = time.monotonic() + CHECK_EVERY_SECS
        self._lost: StorageLost | None = None
        self._shm_name = os.fsencode(f"{self.path}-shm")
        (mode,) = self.db.execute("PRAGMA journal_mode").fetchone()
        self._logged = str(mode).lower() == "wal"
        if self._logged:
            self.db.execute("PRAGMA wal_autocheckpoint=0")
        #: Whether :meth:`run` may call inline (see the class docstring).
        self.inline = self._logged and synchronous.upper() in ("OFF", "NORMAL", "0", "1")
        self.lock = _file_lock(self.path)
        self._timeout_secs = timeout_secs
        self._executor: ThreadPoolExecutor | None = None
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

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, holding the file, once the files are checked (:meth:`check`):
        what a store beside the index's tables (the URL rules, the hosts' templates) reads
        through, whether its call runs through :meth:`run` or in a thread of its own."""
        with self.lock:
            self.check()
            yield self.db

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """:meth:`write` once the files are checked: a transaction of a store beside the
        index's tables (see :meth:`reading`)."""
        with self.lock:
            self.check()
            with self.write() as db:
                yield db

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in the loop's thread when it needs no wait, else in the worker
        thread. ``func`` may read, then write in at most one transaction, and change nothing
        before it: a call that would wait is run again, whole, in the thread. Each call is
        tried inline first, even while earlier ones wait in the thread: calls of concurrent
        pages have no order to keep (one page's calls are awaited one after another), and
        queueing behind a waiting call kept a busy crawl in the thread for good, at a thread
        hop and a handover of the GIL a call. Each call first checks the files
        (:meth:`check`)."""
        if self._closed:
            raise sqlite3.ProgrammingError(f"the SQLite file {self.path} is closed")
        if self.inline:
            self.check()
            try:
                with self._without_waiting():
                    return func(*args)
            except WouldWait:
                pass
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread(), self._checked, func, *args)

    def _checked(self, func: Callable[..., T], *args: Any) -> T:
        self.check()
        return func(*args)

    def _identity(self) -> tuple[int, int] | None:
        if self.path == ":memory:":
            return None
        info = os.stat(self.path)
        return info.st_dev, info.st_ino

    def check(self) -> None:
        """Raise before SQLite touches a file it must not: :class:`UnwritableFile` when the
        ``-shm`` file (read at each call) or, every CHECK_EVERY_SECS, the log or the file
        itself cannot be written; :class:`~scrapy_simhash.exceptions.StorageLost` once
        the file at the path is not the file this connection opened (deleted, moved,
        replaced), and at every call after that."""
        if self._lost is not None:
            raise self._lost
        if self.path == ":memory:":
            return
        lost = _LOSSES.get((self.path, self._opened))
        if lost is not None:  # another connection of this process found it gone
            self._lost = lost
            raise lost
        shm = refuse_unwritable(self.path, self._shm_name)
        inode = None if shm is None else shm[0]
        now = time.monotonic()
        if inode == self._shm and now < self._next_check:
            return
        self._shm = inode
        self._next_check = now + CHECK_EVERY_SECS
        for which in ("-wal", ""):
            state = file_state(f"{self.path}{which}")
            if state is not None and state[1]:
                raise _unwritable(self.path, which)
        try:
            now_there = self._identity()
        except (FileNotFoundError, NotADirectoryError):
            now_there = None
        if now_there != self._opened:
            self._lost = StorageLost(
                f"the SQLite file {self.path} was "
                f"{'deleted or moved' if now_there is None else 'replaced by another file'} "
                "while the crawl had it open: what this connection wrote since then went to "
                "a file no one will open again"
            )
            _LOSSES.setdefault((self.path, self._opened), self._lost)
            raise self._lost

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
                self.check()
                mode = "PASSIVE"
                if Path(f"{self.path}-wal").stat().st_size > WAL_LIMIT_BYTES:
                    mode = "TRUNCATE"
                busy, frames, copied = self.db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
                if busy or copied < frames:
                    logger.debug(
                        "checkpoint of %s: %s of %s frames copied", self.path, copied, frames
                    )
        except StorageLost:  # the next call says so
            pass
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


def open_with_schema(path: str, schema: str, *, timeout_secs: float) -> SharedConnection:
    """A :class:`SharedConnection` to ``path`` with the tables of ``schema`` (statements
    split on ``;``) created in one transaction: what a store living next to the index's
    tables does when it opens, so that it writes the file under the index's lock and
    checkpoints and the index's busy timeout."""
    connection = SharedConnection(path, timeout_secs=timeout_secs)
    try:
        with connection.writing() as db:
            for statement in schema.split(";"):
                db.execute(statement)
    except BaseException:
        connection.close()
        raise
    return connection


def _would_wait(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from) is SQLite saying a lock is taken."""
    while exc is not None:
        if isinstance(exc, sqlite3.OperationalError) and (
            getattr(exc, "sqlite_errorcode", 0) & 0xFF in _WAIT_CODES
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
