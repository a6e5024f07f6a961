"""Tell a storage failure that waiting will fix from one that it never will.

A Redis restart, a timeout or a busy file are outages: the crawl goes on and reconnects. A
wrong password, a database number the server does not have, a read-only replica or an index
file in a directory nobody may write are not, and neither is an SQLite file that is damaged
(truncated, overwritten) or no database at all: every page of the crawl would pass unchecked
while the log says "will retry". Those must stop the crawl before it starts, with the reason.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

#: SQLite result codes that no amount of waiting changes.
_SQLITE_PERMANENT = frozenset(["SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH"])

#: SQLite primary result codes of a damaged file (SQLITE_CORRUPT) and of one that is not a
#: database at all (SQLITE_NOTADB), and their messages (for errors that lost the code).
_SQLITE_BROKEN = frozenset([11, 26])
_SQLITE_BROKEN_WORDS = ("database disk image is malformed", "file is not a database")

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
    broken = broken_file(exc)
    if broken is not None:
        return f"the SQLite file is damaged or not an SQLite database ({broken})"
    for error in _chain(exc):
        reason = _redis_reason(error) or _file_reason(error)
        if reason is not None:
            return reason
    return None


def broken_file(exc: BaseException) -> str | None:
    """SQLite's own words when ``exc`` (or what it was raised from) says the file is damaged
    or not an SQLite database at all ("database disk image is malformed", "file is not a
    database"), else None.

    Every later call would fail the same way or, worse, read what is left of it: the file
    needs a person, not a retry.
    """
    for error in _chain(exc):
        if not isinstance(error, sqlite3.DatabaseError):
            continue
        code = getattr(error, "sqlite_errorcode", 0) & 0xFF
        text = str(error)
        if code in _SQLITE_BROKEN or any(words in text for words in _SQLITE_BROKEN_WORDS):
            return text
    return None


def broken_file_message(url: str, detail: str) -> str:
    """What to tell about a damaged index file: which file, what SQLite said, the ways out."""
    path = _sqlite_file(url)
    return (
        f"SimHash index file {path} is damaged or is not an SQLite database ({detail}), "
        "so the crawl cannot use it. Move it away with its -wal and -shm files (or delete "
        "them) to start with an empty index there, or point `url` at another "
        "file; `sqlite3 FILE .recover` may save what it held (fingerprints, recrawl schedule)"
    )


def _sqlite_file(url: str) -> str:
    from scrapy_simhash._redact import mask_url

    if not url.startswith("sqlite:"):
        return mask_url(url)
    from scrapy_simhash.index.sqlite import sqlite_path

    try:
        return os.path.abspath(sqlite_path(url))
    except ValueError:
        return url


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
            return (
                f"the index file cannot be opened for writing ({error}): check the path "
                "and that its directory is writable"
            )
    return None
