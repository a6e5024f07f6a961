"""Tell a storage failure that waiting will fix from one that it never will.

A Redis restart, a timeout or a busy file are outages: the crawl goes on and reconnects. A
wrong password, a database number the server does not have, a read-only replica or an index
file in a directory nobody may write are not: every page of the crawl would pass unchecked
while the log says "will retry". Those must stop the crawl before it starts, with the reason.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

#: SQLite result codes that no amount of waiting changes.
_SQLITE_PERMANENT = frozenset(["SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH"])

#: Redis error replies (their first word) that mean the configuration is wrong.
_REDIS_PERMANENT = {
    "NOAUTH": "the server requires a password (add it to the URL)",
    "WRONGPASS": "wrong password or user name",
    "NOPERM": "the user lacks a permission the index needs",
    "READONLY": "the server is a read-only replica (point the URL at the master)",
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def permanent_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (or an exception it was raised from) cannot go away by retrying, or None."""
    for error in _chain(exc):
        reason = _redis_reason(error) or _file_reason(error)
        if reason is not None:
            return reason
    return None


def _redis_reason(error: BaseException) -> str | None:
    try:
        from redis import exceptions
    except ImportError:  # pragma: no cover - redis is a dependency
        return None
    if isinstance(error, exceptions.AuthenticationError | exceptions.AuthorizationError):
        return f"authentication failed: {error}"
    if isinstance(error, exceptions.ReadOnlyError):
        return _REDIS_PERMANENT["READONLY"]
    if isinstance(error, exceptions.NoPermissionError):
        return _REDIS_PERMANENT["NOPERM"]
    if isinstance(error, exceptions.ResponseError):
        text = str(error)
        first = text.split(" ", 1)[0].upper()
        if first in _REDIS_PERMANENT:
            return _REDIS_PERMANENT[first]
        if "DB index is out of range" in text or "invalid DB index" in text:
            return "the database number in the URL does not exist on this server"
    return None


def _file_reason(error: BaseException) -> str | None:
    if isinstance(error, PermissionError | NotADirectoryError | IsADirectoryError):
        return f"the index file cannot be created or written: {error}"
    if isinstance(error, sqlite3.Error):
        name = getattr(error, "sqlite_errorname", "")
        if name in _SQLITE_PERMANENT or "readonly" in str(error):
            return f"the index file cannot be opened for writing ({error}): check the path " \
                "and that its directory is writable"
    return None
