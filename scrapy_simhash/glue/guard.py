"""Keep a crawl running while its index (or recrawl store) is away.

A Redis restart must not stop a crawl, wrongly drop pages, stall every request on a connect
timeout, or write ten thousand identical tracebacks. ``Guarded`` wraps one backend object:
every call has a timeout; after a failure the backend is closed and left alone for
``retry_after`` seconds (calls fail fast meanwhile), then reopened on the next call; errors are
logged once with a traceback and then as one summary line per ``log_interval``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from scrapy_simhash._redact import mask_url, scrub
from scrapy_simhash.exceptions import (
    BackendUnavailable,
    ConfigurationError,
    IndexBackendError,
    IndexMismatchError,
    InvalidKeyError,
    PageNotChecked,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def _backend_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [IndexBackendError, OSError, asyncio.TimeoutError]
    try:
        import redis.exceptions

        errors.append(redis.exceptions.RedisError)
    except ImportError:  # pragma: no cover - redis is a dependency
        pass
    try:
        import sqlite3

        errors.append(sqlite3.Error)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


BACKEND_ERRORS = _backend_errors()


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
    ) -> None:
        self.what = what
        self.url = url
        self._opener = opener
        self._timeout = timeout
        self._retry_after = retry_after
        self._log_interval = log_interval
        self._on_error = on_error
        self._clock = clock
        self._backend: T | None = None
        self._lock = asyncio.Lock()
        self._paused_until = 0.0
        self._errors = 0  # errors since the last success
        self._unlogged = 0  # errors not yet reported in a log line
        self._last_log = float("-inf")
        self.closed = False
        #: Set when opening the backend raised ConfigurationError: it cannot be used as
        #: configured (another fingerprint scheme, say), and reopening will not change that.
        self.unusable: ConfigurationError | None = None

    async def call(self, operation: Callable[[T], Awaitable[R]]) -> R:
        """Run ``operation(backend)``; raise ``BackendUnavailable`` instead of its errors.

        ``ConfigurationError`` (a mismatched index, say) is not an outage and propagates;
        one from opening the backend is remembered and raised again by every later call.
        ``InvalidKeyError`` fails that one call alone.
        """
        if self.closed:
            raise BackendUnavailable(f"{self.what} is closed")
        if self.unusable is not None:
            raise self.unusable
        try:
            backend = await self._get()
            result = await _within(operation(backend), self._timeout)
        except BackendUnavailable:
            self._failed(None)
            raise
        except InvalidKeyError:
            raise
        except PageNotChecked as exc:  # this page alone: counted, logged, no pause
            self._failed(exc)
            raise BackendUnavailable(self._describe(exc)) from None
        except ConfigurationError as exc:
            if self._backend is None or isinstance(exc, IndexMismatchError):
                self.unusable = exc
            raise
        except Exception as exc:  # noqa: BLE001 - logged by _failed, policy applied by caller
            # Outages (BACKEND_ERRORS) and anything unexpected from a backend alike: the page
            # must not be lost to it. The first one is logged with its traceback.
            self._failed(exc)
            await self._discard()
            raise BackendUnavailable(self._describe(exc)) from None
        self._recovered()
        return result

    async def _get(self) -> T:
        if self._backend is not None:
            return self._backend
        if self._clock() < self._paused_until:
            raise BackendUnavailable(f"{self.what} at {mask_url(self.url)} is unavailable")
        async with self._lock:
            if self._backend is None:
                self._backend = await asyncio.wait_for(self._opener(), self._timeout)
            return self._backend

    async def _discard(self) -> None:
        backend, self._backend = self._backend, None
        self._paused_until = self._clock() + self._retry_after
        if backend is not None:
            await _close_quietly(backend, self._timeout)

    def _failed(self, exc: BaseException | None) -> None:
        if self._on_error is not None:
            self._on_error()
        self._errors += 1
        self._unlogged += 1
        now = self._clock()
        if exc is not None and self._errors == 1:
            detail = scrub("".join(traceback.format_exception(exc)), self.url)
            logger.error(
                "%s at %s failed: %s (SIMHASH_ON_INDEX_ERROR decides what happens to pages; "
                "retrying every %.1fs):\n%s",
                self.what, mask_url(self.url), self._describe(exc), self._retry_after,
                detail.rstrip(),
            )
            self._unlogged = 0
            self._last_log = now
        elif now - self._last_log >= self._log_interval:
            logger.error(
                "%s at %s still failing: %d errors in the last %.0fs (last: %s)",
                self.what, mask_url(self.url), self._unlogged, now - self._last_log,
                self._describe(exc) if exc is not None else "retry pause",
            )
            self._unlogged = 0
            self._last_log = now

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
        if self._errors:
            logger.warning(
                "%s at %s is reachable again after %d errors",
                self.what, mask_url(self.url), self._errors,
            )
            self._errors = 0
            self._unlogged = 0

    async def aclose(self) -> None:
        """Close the backend; later calls fail fast."""
        self.closed = True
        backend, self._backend = self._backend, None
        if backend is not None:
            await _close_quietly(backend, self._timeout)


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
