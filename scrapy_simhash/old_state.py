"""State written by an earlier release: one rule for every store (pure: no Scrapy import).

This module finds such state and words the refusal; :mod:`scrapy_simhash.upgrade` carries
it over.

The rule: a store never reads, changes or migrates an earlier release's state when it
opens. It refuses, with one message (:func:`refusal`: what was found, which version wrote
it, what to do), and the crawl stops at start-up. ``scrapy simhash upgrade``
(:func:`scrapy_simhash.upgrade.upgrade`) is the way on:

- the recrawl history (each URL's learned change rate, its visits and queue time) is
  carried over faithfully, in batches of :data:`BATCH` URLs, each its own transaction or
  script call, so the store stays usable by nothing else for only a moment at a time and
  an upgrade cut short goes on where it stopped when run again;
- the near-duplicate index cannot be carried over (the fingerprints changed), so it is
  emptied, to be rebuilt by the next crawl; so are the drop records.

A migration of millions of keys when a crawl opens its store would stall the crawl's
start for minutes without a word, and a crawl of several processes would run it several
times at once: hence a command, run once, by hand.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_simhash._redact import mask_url
from scrapy_simhash.exceptions import OldStateError


@dataclass(frozen=True)
class Found:
    """Old state a store found: what it is and the release that wrote it."""

    what: str
    version: str


def upgrade_command(url: str | None, namespace: str | None) -> str:
    """The command that upgrades the state at ``url`` (``namespace`` None: a whole file)."""
    args = "" if url is None else f" --index-url {mask_url(url)}"
    if namespace is not None:
        args += f" --namespace {namespace}"
    return f"scrapy-simhash upgrade{args}"


def refusal(
    where: str, found: Found, *, url: str | None, namespace: str | None, afresh: str
) -> OldStateError:
    """The one message of every store refusing old state: ``where`` holds ``found``; the
    upgrade command; ``afresh``, the way to start again without it."""
    return OldStateError(
        f"{where} holds {found.what}, written by scrapy-simhash {found.version}, which this "
        "version does not read (nothing of it was read or changed). Run `scrapy simhash "
        f"upgrade` in the project folder (or `{upgrade_command(url, namespace)}`): it "
        "carries the recrawl history over, in batches, and empties the near-duplicate index, "
        "whose fingerprints cannot be carried over; the next crawl rebuilds it. To start "
        f"afresh instead, {afresh}"
    )


# -- SQLite: one file holds every namespace's state ----------------------------------------

#: The index tables of 0.2.0 (band rows naming URLs).
SQLITE_OLD_INDEX = "simhash_entries"
#: 0.2.0's recrawl rows kept each URL whole (a ``url`` column) in this table.
SQLITE_RECRAWL = "simhash_recrawl_pages"
#: Where an upgrade sets 0.2.0's recrawl rows aside while it moves them.
SQLITE_RECRAWL_020 = "simhash_recrawl_pages_020"
#: The JSON states of 0.1.
SQLITE_RECRAWL_JSON = "simhash_recrawl"


def tables_of(db: sqlite3.Connection) -> set[str]:
    return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def sqlite_old_state(db: sqlite3.Connection, store: str) -> Found | None:
    """Old state of ``store`` ("index" or "recrawl") in an SQLite file, or None."""
    tables = tables_of(db)
    if store == "index":
        if SQLITE_OLD_INDEX in tables:
            return Found(
                "a near-duplicate index in 0.2.0's layout (band rows naming URLs)", "0.2.0"
            )
        return None
    if SQLITE_RECRAWL_020 in tables or (
        SQLITE_RECRAWL in tables and "url" in columns(db, SQLITE_RECRAWL)
    ):
        return Found("a recrawl schedule in 0.2.0's layout (rows naming URLs whole)", "0.2.0")
    if SQLITE_RECRAWL_JSON in tables:
        return Found("a recrawl schedule of JSON states", "0.1")
    return None


def refuse_old_sqlite(db: sqlite3.Connection, path: str, store: str) -> None:
    """Raise :func:`refusal` when the file holds old state of ``store``."""
    found = sqlite_old_state(db, store)
    if found is not None:
        raise refusal(
            f"the SQLite file {path}",
            found,
            url=f"sqlite:///{path}",
            namespace=None,
            afresh="delete the file (it holds every namespace's state) or point `url` at "
            "another file",
        )


# -- Redis ---------------------------------------------------------------------------------


def redis_index_old_state(record: Mapping[str, Any]) -> Found | None:
    """Old state in a Redis index's configuration record: the layouts 0.1 and 0.2.0 wrote
    (later layouts of the 0.3.0 development are refused as a mismatch, with ``reset``)."""
    layout = record.get("redis_format", 1)
    if layout in (1, 2):
        return Found(
            f"a near-duplicate index in Redis layout {layout}", "0.1" if layout == 1 else "0.2.0"
        )
    return None


def refuse_old_redis(where: str, found: Found, url: str, namespace: str) -> OldStateError:
    """:func:`refusal` for a Redis namespace."""
    return refusal(
        where,
        found,
        url=url,
        namespace=namespace,
        afresh=f"run `scrapy simhash reset --namespace {namespace}` (it clears every part of "
        "the namespace) or use another namespace",
    )
