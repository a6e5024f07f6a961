"""The record of dropped near-duplicates: which URL copied which, how closely, and when.

A dropped page leaves nothing in the index itself (it is not stored, so it cannot match
later pages in its own name), yet people ask "why is this URL missing?" and later features
(skipping the fetch of known copies, reports) need the answer. Each backend keeps one
record per dropped URL in the namespace's own store, replaced when the URL is dropped again.

The record is bounded twice: by age (``drop_ttl_secs``; expired records stop answering and
are deleted as new ones arrive) and by count (``drop_max_entries``; the oldest records go
first). The memory backend is here; SQLite and Redis keep theirs next to their index data.
"""

from __future__ import annotations

import os
import struct
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import NamedTuple

#: Thirty days: long enough for a monthly recrawl to still know its copies.
DROP_TTL_SECS = 30 * 86400.0
#: A million records: about 200 MB of Redis or 115 MB of SQLite with ~60-byte URLs at most.
DROP_MAX_ENTRIES = 1_000_000
#: Expired or excess records deleted per new record at most, so one call never stalls.
TRIM_BATCH = 16

#: time, distance, signature bits apart, bytes the kept URL shares with the start of the
#: dropped one, length of the kept URL's rest
_HEAD = struct.Struct(">IBBHH")
#: What a record stores for "no second test figure" (a holder record, a page without one).
_NO_APART = 255


class DropRecord(NamedTuple):
    """``url`` was dropped as a near-duplicate of ``kept`` at ``at`` (Unix seconds): their
    fingerprints ``distance`` bits apart and their signatures ``apart`` bits (the second
    test's figure, :mod:`scrapy_simhash.confirm`; None when there is none)."""

    url: str
    kept: str
    distance: int
    at: int
    apart: int | None = None


#: The distance of a holder record: ``url`` is a canonical URL whose page reached the spider
#: from ``kept``, a copy that was fetched first and filed under ``url`` (which is kept in the
#: index, and whose own fetches are copies of that page while it does not change). No real
#: distance is this large; the Redis record stores distances as one byte.
HELD = 255
#: A holder record (as :data:`HELD`) whose URL was fetched since and dropped as the copy
#: of the page it holds: the one record of ``url`` says both, so counts of dropped URLs
#: find it (its second test figure in ``apart``).
HELD_COPY = 254
#: The distance of a filing record: ``url`` reached the spider, and its page is filed under
#: ``kept`` (the canonical URL it names, or the URL a preference named its cluster by). It
#: was not dropped: counts of dropped URLs leave it out.
FILED = 253
#: A holder record (as :data:`HELD`) whose URL was fetched since and found the copy of the
#: page it holds, then passed to the spider marked, not dropped (SIMHASH_DROP_DUPLICATES
#: off): counts of marked URLs find it.
HELD_MARKED = 252
#: The distance of a record whose URL was dropped as (or marked, or filed under) ``kept``'s
#: copy, and has been filed as a page of its own since: no drop, and no filing, any longer,
#: yet the page's history is ``kept``'s, so ``kept`` takes the page back when fetched alike
#: (:meth:`scrapy_simhash.verdict.VerdictStep._takes_over`). No count takes it for a drop.
OWN_PAGE = 251
#: The distances of holder records.
HOLDERS = (HELD, HELD_COPY, HELD_MARKED)
#: The distances that mark a record which is no plain drop of ``url`` by another page.
MARKERS = (*HOLDERS, FILED, OWN_PAGE)
#: Added to the distance of a marked record: ``url`` was found a near-duplicate of ``kept``
#: and passed to the spider marked as one (SIMHASH_DROP_DUPLICATES off), not dropped. No
#: radius reaches it (distances of 128 and more are marks), and counts of dropped URLs
#: leave it out, as the log does.
MARKED = 128


def holder_of(record: DropRecord | None) -> str | None:
    """The URL whose page is filed under ``record.url``, if ``record`` is a holder record."""
    return record.kept if record is not None and record.distance in HOLDERS else None


def is_marked(record: DropRecord) -> bool:
    """Whether ``record`` says its URL was passed to the spider marked as a copy."""
    return MARKED <= record.distance < OWN_PAGE or record.distance == HELD_MARKED


def copy_distance(record: DropRecord) -> int | None:
    """The fingerprint distance a drop or marked record keeps (None for the others)."""
    if record.distance < MARKED:
        return record.distance
    if MARKED <= record.distance < OWN_PAGE:
        return record.distance - MARKED
    return None


#: Records followed at most from a URL to the page now naming its cluster.
MAX_HOPS = 8


def kept_name(
    drop_of: Callable[[str], DropRecord | None],
    url: str,
    stored: Callable[[str], bool] | None = None,
) -> str | None:
    """The URL now naming the cluster ``url`` was dropped from (or, for a filing record,
    filed under), following renamed clusters (a copy dropped in favour of a URL that later
    became a copy of a preferred one). ``drop_of`` is a blocking index's method; ``None``
    when ``url`` has no record. ``stored`` (whether a URL has an index entry) ends the walk
    at the first URL that names a page. Filing records lead on to the cluster's name now;
    drop records lead on too (a copy that took its cluster's name, and then lost it to a
    URL preferred over it, names the URL it copies, whose filing record names the cluster
    now), but not the one of the URL a filing record led to, nor that of the preferred URL
    naming the cluster (the URL it copies has a filing record leading back to it)."""
    record = drop_of(url)
    if record is None:
        return None
    name, seen, filed = record.kept, {url}, record.distance == FILED
    for _ in range(MAX_HOPS):
        seen.add(name)
        if stored is not None and stored(name):
            break
        onward = drop_of(name)
        if (
            onward is None
            or holder_of(onward) is not None
            or onward.distance == OWN_PAGE
            or onward.kept in seen
        ):
            break  # no record, a holder, or a page of its own: ``name`` is kept
        if onward.distance != FILED:
            if filed:
                break  # a filing record names the cluster's name now
            back = drop_of(onward.kept)
            if back is not None and back.kept == name and back.distance == FILED:
                break  # ``name`` took the cluster's name from the URL it copies
        name, filed = onward.kept, onward.distance == FILED
    return name


def pack_record(record: DropRecord) -> bytes:
    """Compact value of a record (Redis): 10 bytes, the dropped URL, and the kept URL after
    the bytes it shares with the start of the dropped one (a copy's URL is mostly its
    page's: a tracking parameter, an AMP or print path on the same host), as SQLite keeps
    it."""
    kept = record.kept.encode("utf-8", "surrogatepass")
    url = record.url.encode("utf-8", "surrogatepass")
    shared = min(len(os.path.commonprefix([url, kept])), 0xFFFF)  # noqa: RUF071 (bytes)
    apart = _NO_APART if record.apart is None else min(record.apart, _NO_APART - 1)
    head = _HEAD.pack(record.at, min(record.distance, 255), apart, shared, len(kept) - shared)
    return head + kept[shared:] + url


def unpack_record(data: bytes) -> DropRecord:
    at, distance, apart, shared, rest = _HEAD.unpack_from(data)
    start = _HEAD.size
    url = data[start + rest :]
    kept = (url[:shared] + data[start : start + rest]).decode("utf-8", "surrogatepass")
    return DropRecord(
        url.decode("utf-8", "surrogatepass"),
        kept,
        distance,
        at,
        None if apart == _NO_APART else apart,
    )


def pack_distances(distance: int, apart: int | None) -> int:
    """A record's two figures in one small integer (SQLite's column): the distance in the
    low byte, the signature bits apart plus one above it (0: none)."""
    return distance | (0 if apart is None else apart + 1) << 8


def unpack_distances(value: int) -> tuple[int, int | None]:
    apart = value >> 8
    return value & 0xFF, apart - 1 if apart else None


class MemoryDrops:
    """Drop records of one in-process index, oldest first (a refreshed record moves last)."""

    def __init__(self, ttl_secs: float | None, max_entries: int) -> None:
        self.ttl_secs = ttl_secs
        self.max_entries = max_entries
        self._records: OrderedDict[str, DropRecord] = OrderedDict()

    def _expired(self, record: DropRecord, now: float) -> bool:
        return self.ttl_secs is not None and now - record.at > self.ttl_secs

    def record(
        self, url: str, kept: str, distance: int, now: float, apart: int | None = None
    ) -> None:
        if self.max_entries <= 0:
            return
        self._records.pop(url, None)
        self._records[url] = DropRecord(url, kept, distance, int(now), apart)
        while len(self._records) > self.max_entries:
            self._records.popitem(last=False)
        for _ in range(TRIM_BATCH):
            oldest = next(iter(self._records.values()))
            if not self._expired(oldest, now):
                break
            self._records.popitem(last=False)

    def get(self, url: str, now: float) -> DropRecord | None:
        record = self._records.get(url)
        if record is None or self._expired(record, now):
            return None
        return record

    def live(self, now: float) -> Iterator[DropRecord]:
        """The live records (a snapshot: callers may record more while iterating)."""
        return (r for r in list(self._records.values()) if not self._expired(r, now))

    def forget(self, url: str) -> None:
        self._records.pop(url, None)

    def clear(self) -> None:
        self._records.clear()

    def __len__(self) -> int:
        return len(self._records)
