"""The package's exception tree: callers catch one base type at each boundary."""

from __future__ import annotations


class SimhashError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(SimhashError, ValueError):
    """A setting or option has a value that cannot work (the message says which and why)."""


class IndexBackendError(SimhashError):
    """The index storage failed (unreachable Redis, locked SQLite file, timeout, ...).

    Backend exceptions are wrapped in this type at the index boundary so that Scrapy glue
    can count and survive them without knowing which backend is in use.
    """


class PageNotChecked(IndexBackendError):
    """This one page could not be checked (a sharded namespace's locks stayed busy, or a
    page it met is half-written); the index itself is fine, so no retry pause follows."""


class BackendUnavailable(SimhashError):
    """A storage call did not happen: the backend failed or waits out its retry pause.

    Raised by the crawl's guarded backends; the caller applies its error policy.
    """


class IndexMismatchError(ConfigurationError):
    """An existing index was built with another fingerprint scheme, width or band layout."""


class OldStateError(IndexMismatchError):
    """A store holds state an earlier release wrote, which this version does not read: it
    is refused at open, unread and unchanged, naming ``scrapy simhash upgrade``
    (:mod:`scrapy_simhash.old_state`)."""


def __getattr__(name: str) -> object:
    """``NearDuplicate`` and ``KnownCopy`` subclass Scrapy's ``IgnoreRequest``: imported on
    first use only."""
    if name in ("NearDuplicate", "KnownCopy"):
        from scrapy_simhash.glue import errors

        return getattr(errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class InvalidKeyError(ConfigurationError):
    """A key no backend can store (empty, or not encodable as UTF-8: a lone surrogate).

    Bad input from one request: that call fails, the index stays in use for every other
    request, on every backend alike.
    """


class StorageLost(IndexBackendError):
    """The storage no longer holds what was opened: the SQLite file was deleted, moved or
    replaced while the crawl had it open. Not an outage (waiting brings nothing back): the
    crawl says what was lost and goes on with the file now at the path, or stops, as its
    policy for a lost namespace says."""
