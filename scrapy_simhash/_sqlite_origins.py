"""URLs in SQLite rows as an origin id and the rest: the pages of a site share its origin.

The index entry and the recrawl row of a kept page each keep its URL. Its scheme and host
are ~25 of its ~60 bytes, the same for every page of a site, so a row keeps a small
integer naming them (a row of ``simhash_url_origins``) and the text after them. The id
is a hash of the origin, probed on a collision as the stores' own rows are, not a
counter: an origin then costs its one row (~40 bytes, no second index on its text), so
a crawl of one page per host loses nothing and a crawl of many pages per site saves
~20 bytes a URL in each store. Origin rows are never changed or deleted (their number is
bounded by the hosts a crawl reaches), which lets every process cache them; a rolled
back transaction empties the cache, so it never names a row that was not written.
"""

from __future__ import annotations

import re
import sqlite3

import xxhash

from scrapy_simhash._sqlite import SharedConnection

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS simhash_url_origins (id INTEGER PRIMARY KEY, origin TEXT NOT NULL)"
)

#: Scheme and authority: what the URLs of one site share.
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
#: The id of "no origin": text that is not an absolute URL is kept whole.
NONE = 0
#: Row ids an origin may be probed over when its hash collides with another's.
_PROBES = 16
#: Origins a process remembers at most (then it starts afresh: rows never change).
_CACHED = 100_000


class UrlOrigins:
    """The origins of one SQLite file, as one connection sees them.

    :meth:`add` must run inside the caller's write transaction, so the origin's row is
    written with the row naming it."""

    def __init__(self, connection: SharedConnection) -> None:
        self._db = connection.db
        self._ids: dict[str, int] = {}
        self._names: dict[int, str] = {}
        connection.on_rollback(self.forget)

    def forget(self) -> None:
        self._ids.clear()
        self._names.clear()

    def find(self, url: str) -> tuple[int, str] | None:
        """(origin id, the rest of ``url``); None when its origin is not stored: no row
        holds ``url`` then."""
        return self._split(url, add=False)

    def add(self, url: str) -> tuple[int, str]:
        """(origin id, the rest of ``url``), storing its origin if it is new."""
        split = self._split(url, add=True)
        assert split is not None  # adding always finds a row
        return split

    def _split(self, url: str, *, add: bool) -> tuple[int, str] | None:
        match = _ORIGIN.match(url)
        if match is None:
            return NONE, url
        origin = match.group()
        found = self._ids.get(origin)
        if found is None:
            found = self._find(origin, add=add)
            if found is None:
                return None
        return found, url[match.end() :]

    def join(self, origin_id: int, rest: str) -> str:
        """The URL a row holds as ``origin_id`` and ``rest``."""
        if origin_id == NONE:
            return rest
        origin = self._names.get(origin_id)
        if origin is None:
            row = self._db.execute(
                "SELECT origin FROM simhash_url_origins WHERE id = ?", (origin_id,)
            ).fetchone()
            if row is None:
                raise sqlite3.DatabaseError(f"no URL origin {origin_id} in the file")
            origin = str(row[0])
            self._remember(origin, origin_id)
        return origin + rest

    def _find(self, origin: str, *, add: bool) -> int | None:
        # 30 bits: an id probed past it is still a 4-byte integer.
        first = 1 + (xxhash.xxh3_64_intdigest(origin.encode("utf-8", "surrogatepass")) >> 34)
        rows = dict(
            self._db.execute(
                "SELECT id, origin FROM simhash_url_origins WHERE id >= ? AND id < ?",
                (first, first + _PROBES),
            ).fetchall()
        )
        for row_id in range(first, first + _PROBES):
            if rows.get(row_id) == origin:
                self._remember(origin, row_id)
                return row_id
        if not add:
            return None
        for row_id in range(first, first + _PROBES):
            if row_id not in rows:
                self._db.execute(
                    "INSERT INTO simhash_url_origins (id, origin) VALUES (?, ?)",
                    (row_id, origin),
                )
                self._remember(origin, row_id)
                return row_id
        raise sqlite3.IntegrityError(f"{_PROBES} stored URL origins share the hash of {origin}")

    def _remember(self, origin: str, row_id: int) -> None:
        if len(self._ids) >= _CACHED:
            self.forget()
        self._ids[origin] = row_id
        self._names[row_id] = origin
