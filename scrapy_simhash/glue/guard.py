"""Keep a crawl running while its index (or recrawl store) is away.

A Redis restart must not stop a crawl, wrongly drop pages, stall every request on a connect
timeout, or write ten thousand identical tracebacks. ``Guarded`` wraps one backend object:
every call has a timeout; after a failure the backend is closed and left alone for
``retry_after`` seconds (calls fail fast meanwhile), then reopened on the next call. An outage
is one log line when it starts (no traceback: a refused connection is not a bug), a summary
line per ``log_interval`` while it lasts and one line when the storage answers again; the
guards of one storage (the index and the recrawl store in one Redis) share those lines
through an :class:`OutageLog`. Only an error no storage should raise keeps its traceback.
A file SQLite finds damaged is no outage: the guard turns it into ``ConfigurationError``.
A storage that answers again without the namespace's configuration record lost the
namespace's data: the index writes a new record (reopened after an outage, or by itself
within a call), or another process did, and the backend then names another creation of
the namespace (``created``, ``creation``). ``on_lost`` hears of it once per loss, after the
line saying the storage is reachable again. An SQLite file deleted, moved or replaced under
the crawl (``StorageLost``) is such a loss too, with its cause, and no outage: the guard
opens the file now at the path and tries the call again there, or, when the crawl is to
stop (``reopen_lost`` False), opens nothing more, so that no new empty file takes the
place of the one to restore.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import sqlite3
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

from scrapy_simhash._failures import broken_file, broken_file_message
from scrapy_simhash._redact import mask_url, scrub
from scrapy_simhash.exceptions import (
    BackendUnavailable,
    ConfigurationError,
    IndexBackendError,
    IndexMismatchError,
    InvalidKeyError,
    PageNotChecked,
    StorageLost,
)
from scrapy_simhash.settings.names import described

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


_LOCAL_ERRORS: tuple[type[BaseException], ...] = (
    IndexBackendError,
    OSError,
    asyncio.TimeoutError,
    sqlite3.Error,
)


def backend_errors() -> tuple[type[BaseException], ...]:
    """What a store raises when it is out of reach: Redis's errors too once redis is loaded.
    A crawl on the embedded file never loads it (60 modules), and nothing can raise its
    errors then."""
    redis_exceptions = sys.modules.get("redis.exceptions")
    if redis_exceptions is None:
        return _LOCAL_ERRORS
    return (*_LOCAL_ERRORS, redis_exceptions.RedisError)


def without_own_name(message: str, url: str) -> str:
    """``message`` without the head a backend error starts with ("recrawl store URL failed:",
    "Redis index URL:"), for a line that names the store and its URL already."""
    if not url:  # a store named without its URL (one built by hand) has no head to drop
        return message
    head, found, rest = message.partition(mask_url(url))
    if not found or len(head) > 40 or "(" in head:
        return message
    return re.sub(r"^:?\s*(failed:\s*)?", "", rest) or message


class StorageWatch(Protocol):
    """Something that looks at a storage while the crawl uses it (what a Redis evicted):
    :meth:`look` after calls that answered (it decides how often it looks, and never
    raises), :meth:`aclose` once the last guard of the storage is closed."""

    async def look(self) -> None: ...

    async def aclose(self) -> None: ...


class OutageLog:
    """What the guards of one storage say about its outages.

    One line when the first guard fails (with a traceback only for an error no storage
    should raise), and one when a guard fails whose absence costs something no line of
    this outage said yet (the index's pages, after the template memory's aid); a summary
    line per ``log_interval`` while any of them keeps failing; one line when the last of
    them answers again. ``watch`` (a :class:`StorageWatch`), when
    set, looks at the storage after the guards' calls, and is closed with the last guard.
    """

    def __init__(
        self, url: str, *, log_interval: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.url = url
        self._log_interval = log_interval
        self._clock = clock
        self._failing: set[Guarded[Any]] = set()  # the guards failing now
        self._what = ""  # the store the outage was first seen by
        self._errors = 0  # errors in this outage
        self._unlogged = 0  # errors not yet reported in a log line
        self._last_log = float("-inf")
        #: Why the storage lost the namespace, while a guard tells ``on_lost`` of a loss
        #: it knows the cause of (the SQLite file was replaced); None otherwise.
        self.lost_cause: str | None = None
        self.watch: StorageWatch | None = None
        self._open: set[Guarded[Any]] = set()  # the guards not closed yet
        self._said: set[str] = set()  # what the crawl does meanwhile, said in this outage

    def failed(
        self, guard: Guarded[Any], exc: BaseException | None, detail: str, retry_after: float
    ) -> None:
        """``guard`` failed with ``exc`` (None: it is waiting out its retry pause)."""
        starts = not self._failing
        if starts:
            self._what = guard.what
            self._said.clear()
        # A store whose absence costs the crawl something not yet said in this outage
        # (the index's pages after the template memory's aid) says so in a line of its own.
        untold = guard.meanwhile not in self._said
        self._said.add(guard.meanwhile)
        first_of_guard = guard not in self._failing
        self._failing.add(guard)
        self._errors += 1
        self._unlogged += 1
        now = self._clock()
        where = f"{guard.what} at {mask_url(self.url)}"
        if exc is not None and first_of_guard and not isinstance(exc, backend_errors()):
            # Not an outage but a bug, in a backend or here: where it happened matters.
            trace = scrub("".join(traceback.format_exception(exc)), self.url)
            logger.error(
                "%s failed unexpectedly: %s (%s; retrying every %gs):\n%s",
                where,
                detail,
                guard.meanwhile,
                retry_after,
                trace.rstrip(),
            )
        elif starts or untold:
            logger.error(
                "%s is unavailable: %s (%s until it answers; retrying every %gs)",
                where,
                detail,
                guard.meanwhile,
                retry_after,
            )
        elif now - self._last_log >= self._log_interval:
            logger.error(
                "%s at %s still failing: %d errors in the last %.0fs (last: %s)",
                self._what,
                mask_url(self.url),
                self._unlogged,
                now - self._last_log,
                detail,
            )
        else:
            return
        self._unlogged = 0
        self._last_log = now

    def recovered(self, guard: Guarded[Any]) -> None:
        """``guard`` answered: the outage ends when no other guard is still failing."""
        if guard not in self._failing:
            return
        self._failing.discard(guard)
        if not self._failing:
            logger.warning(
                "%s at %s is reachable again after %d errors",
                self._what or guard.what,
                mask_url(self.url),
                self._errors,
            )
            self._errors = 0
            self._unlogged = 0

    def forget(self, guard: Guarded[Any]) -> None:
        """``guard`` is closed: it no longer keeps an outage open."""
        self._failing.discard(guard)

    def join(self, guard: Guarded[Any]) -> None:
        """``guard`` uses the storage until it leaves (:meth:`leave`)."""
        self._open.add(guard)

    async def leave(self, guard: Guarded[Any]) -> None:
        """``guard`` is closed; the watch is closed with the last guard."""
        self.forget(guard)
        self._open.discard(guard)
        if not self._open and self.watch is not None:
            watch, self.watch = self.watch, None
            await watch.aclose()


#: What a crawl does while its index is away (see :class:`Guarded`'s ``meanwhile``).
ON_INDEX_ERROR = "SIMHASH_ON_INDEX_ERROR decides what happens to pages"


class Guarded(Generic[T]):
    """A lazily opened backend with timeouts, a retry pause and throttled error logs."""

    def __init__(
        self,
        what: str,
        url: str,
        opener: Callable[[], Awaitable[T]],
        *,
        timeout: float,
        retry_after: float,
        log_interval: float,
        on_error: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        outages: OutageLog | None = None,
        on_lost: Callable[[], None] | None = None,
        opened: bool = False,
        reopen_lost: bool = True,
        meanwhile: str = ON_INDEX_ERROR,
    ) -> None:
        """``opened``: the namespace was opened before (at start-up), so a first opening
        that has to create it finds it lost, as a reopening does. ``reopen_lost``: after
        a ``StorageLost``, open what is now at the storage's place and go on (False: the
        crawl stops, and later calls fail without opening anything). ``meanwhile``: what
        the crawl does while the store is away, as the outage's first line says it (the
        index's pages follow SIMHASH_ON_INDEX_ERROR; an aid such as the template memory
        is only done without)."""
        self.what = what
        self.meanwhile = meanwhile
        self.url = url
        self._opener = opener
        self._timeout = timeout
        self._retry_after = retry_after
        self._on_error = on_error
        self._clock = clock
        #: Shared with the other guards of the same storage (see OutageLog).
        self.outages = outages or OutageLog(url, log_interval=log_interval, clock=clock)
        self.outages.join(self)
        self._backend: T | None = None
        self._lock = asyncio.Lock()
        self._paused_until = 0.0
        self.closed = False
        #: Set when opening the backend raised ConfigurationError: it cannot be used as
        #: configured (another fingerprint scheme, say), and reopening will not change that.
        self.unusable: ConfigurationError | None = None
        self._on_lost = on_lost
        self._opened = opened
        #: The creation of the namespace the backend named last; a loss not yet told.
        self._creation: str | None = None
        self._lost_pending = False
        self._reopen_lost = reopen_lost
        #: The cause of the loss not yet told, when known (StorageLost).
        self._lost_cause: str | None = None
        #: Set when the storage was lost and is not to be opened again (reopen_lost False).
        self._gone: StorageLost | None = None

    async def call(self, operation: Callable[[T], Awaitable[R]]) -> R:
        """Run ``operation(backend)``; raise ``BackendUnavailable`` instead of its errors.

        ``ConfigurationError`` (a mismatched index, say) is not an outage and propagates;
        one from opening the backend is remembered and raised again by every later call.
        ``InvalidKeyError`` fails that one call alone. ``StorageLost`` is told as a loss
        (see the module docstring).
        """
        return await self._call(operation, retried=False)

    async def _call(self, operation: Callable[[T], Awaitable[R]], *, retried: bool) -> R:
        if self.closed:
            raise BackendUnavailable(f"{self.what} is closed")
        if self.unusable is not None:
            raise self.unusable
        if self._gone is not None:
            raise BackendUnavailable(self._describe(self._gone))
        try:
            backend = await self._get()
            result = await _within(operation(backend), self._timeout)
        except BackendUnavailable:
            self._failed(None)
            raise
        except InvalidKeyError:
            raise
        except StorageLost as exc:
            await self._storage_lost(exc)
            if self._gone is not None or retried:
                raise BackendUnavailable(self._describe(exc)) from None
            return await self._call(operation, retried=True)
        except PageNotChecked as exc:  # this page alone: counted, logged, no pause
            self._failed(exc)
            raise BackendUnavailable(self._describe(exc)) from None
        except ConfigurationError as exc:
            told = described(exc)  # the core speaks of its options, the crawl of settings
            if self._backend is None or isinstance(exc, IndexMismatchError):
                self.unusable = told
            raise told from None
        except Exception as exc:  # noqa: BLE001 - logged by _failed, policy applied by caller
            broken = broken_file(exc)
            if broken is not None:  # a damaged file: waiting will not mend it
                await self._discard()
                self.outages.forget(self)
                self.unusable = described(ConfigurationError(broken_file_message(self.url, broken)))
                logger.error("%s", self.unusable)
                raise self.unusable from None
            # Outages (backend_errors()) and anything unexpected from a backend alike: the page
            # must not be lost to it.
            self._failed(exc)
            await self._discard()
            raise BackendUnavailable(self._describe(exc)) from None
        self._recovered()
        if self._on_lost is not None:
            self._check_lost(backend)
        watch = self.outages.watch
        if watch is not None:
            await watch.look()
        return result

    def _seen(self, creation: str | None) -> None:
        """The backend names ``creation``: another than before is a loss to tell."""
        if creation is not None and self._creation is not None and creation != self._creation:
            self._lost_pending = True
        self._creation = creation

    def _check_lost(self, backend: T) -> None:
        """Tell ``on_lost`` when the storage lost the namespace since the last call."""
        self._seen(getattr(backend, "creation", None))
        if self._lost_pending:
            self._tell_lost()

    def _tell_lost(self) -> None:
        """Call ``on_lost``, with the cause of the loss in the shared log while it runs."""
        self._lost_pending = False
        if self._on_lost is None:
            return
        self.outages.lost_cause, self._lost_cause = self._lost_cause, None
        try:
            self._on_lost()
        finally:
            self.outages.lost_cause = None

    async def _storage_lost(self, exc: StorageLost) -> None:
        """The file this backend opened is gone from its path: drop the backend (no retry
        pause: waiting brings nothing back) and tell the loss, now when nothing is to be
        opened again, else once the file now at the path answered."""
        await self._discard(pause=False)
        self._creation = None  # the next backend names a creation of its own
        self._lost_cause = scrub(str(exc), self.url)
        if self._on_lost is None:
            logger.info(
                "%s at %s: %s; %s",
                self.what,
                mask_url(self.url),
                self._lost_cause,
                "opening the file now at its path"
                if self._reopen_lost
                else "not opened again (SIMHASH_ON_INDEX_LOST = 'close')",
            )
        if not self._reopen_lost:
            self._gone = exc
            self._tell_lost()
        else:
            self._lost_pending = self._on_lost is not None

    async def _get(self) -> T:
        if self._backend is not None:
            return self._backend
        if self._clock() < self._paused_until:
            raise BackendUnavailable(f"{self.what} at {mask_url(self.url)} is unavailable")
        async with self._lock:
            if self._backend is None:
                backend = await asyncio.wait_for(self._opener(), self._timeout)
                if self._opened and getattr(backend, "created", False):
                    self._lost_pending = True  # told once a call succeeds
                self._opened = True
                self._seen(getattr(backend, "creation", None))
                self._backend = backend
            return self._backend

    async def _discard(self, *, pause: bool = True) -> None:
        backend, self._backend = self._backend, None
        if pause:
            self._paused_until = self._clock() + self._retry_after
        if backend is not None:
            await _close_quietly(backend, self._timeout)

    def _failed(self, exc: BaseException | None) -> None:
        if self._on_error is not None:
            self._on_error()
        detail = "retry pause" if exc is None else without_own_name(self._describe(exc), self.url)
        self.outages.failed(self, exc, detail, self._retry_after)

    def _describe(self, exc: BaseException) -> str:
        """A one-line account of a failure, never empty and free of passwords.

        A timeout has no message of its own; on SQLite it nearly always means another
        process holds the write lock, which is what the user needs to read.
        """
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not str(exc):
            text = f"no answer within {self._timeout:g}s (SIMHASH_INDEX_TIMEOUT_SECS)"
            if self.url.startswith("sqlite:"):
                text = (
                    f"database is locked: {text}; another process holds the SQLite write "
                    "lock or the disk is stalled"
                )
            return text
        message = scrub(str(exc), self.url) or type(exc).__name__
        if "database is locked" in message:
            message += (
                f" (waited {self._timeout:g}s, SIMHASH_INDEX_TIMEOUT_SECS; another process "
                "holds the SQLite write lock)"
            )
        return message

    def _recovered(self) -> None:
        self.outages.recovered(self)

    @property
    def current(self) -> T | None:
        """The backend open now, None before the first call, after a failure or once
        closed: for a caller that cannot await (and then does without the store)."""
        return None if self.closed or self.unusable is not None else self._backend

    def retry_now(self) -> None:
        """End the retry pause: the next call tries the backend (a last try at the close)."""
        self._paused_until = 0.0

    async def aclose(self) -> None:
        """Close the backend; later calls fail fast."""
        self.closed = True
        backend, self._backend = self._backend, None
        if backend is not None:
            await _close_quietly(backend, self._timeout)
        await self.outages.leave(self)


async def _close_quietly(backend: Any, timeout: float) -> None:
    try:
        result = backend.close()
        if inspect.isawaitable(result):
            await asyncio.wait_for(result, timeout)
    except Exception as exc:  # noqa: BLE001 - closing a broken connection may fail any way
        logger.debug("ignored error while closing %r: %s", type(backend).__name__, exc)


async def _within(call: Awaitable[R], timeout: float) -> R:
    """``await call``, TimeoutError after ``timeout`` seconds.

    Inside a task (every call of a crawl) without a task of its own: ``wait_for`` wraps
    each call in a new task and an extra turn of the loop, which costs three times the
    call itself for a store that answers at once (memory, SQLite inline).
    """
    if asyncio.current_task() is None:
        return await asyncio.wait_for(call, timeout)
    async with asyncio.timeout(timeout):
        return await call
