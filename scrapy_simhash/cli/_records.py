"""What each record of a namespace says of its URL, as ``stats``, ``report`` and ``lookup``
count and tell it.

One record per URL, and not every record is a drop: a crawl also files the URL that
reached the spider under the canonical URL it names (a filing record), and a canonical
URL whose page another URL brought first keeps a holder record (:mod:`scrapy_simhash.
index.drops`). Counting records would count those as dropped pages, so every command
asks this module what a record is: the log's "N dropped", ``stats``, ``report`` and
``lookup`` then speak of the same URLs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scrapy_simhash.index.drops import (
    FILED,
    HELD,
    HELD_COPY,
    OWN_PAGE,
    DropRecord,
    holder_of,
    is_marked,
)

#: The URL was dropped as a near-duplicate when last fetched (the log counted it).
DROPPED = "dropped"
#: The URL reached the spider when last fetched; its page is filed under another URL.
FILED_ELSEWHERE = "filed"
#: A canonical URL whose entry holds the page another URL brought first, itself not
#: fetched since (no drop).
HOLDS = "holds"
#: The URL was found a near-duplicate when last fetched and reached the spider marked as
#: one (SIMHASH_DROP_DUPLICATES off): the log said "kept (mark-only mode)", no drop.
MARKED_COPY = "marked"
#: The URL was a copy (dropped, marked or filed under another URL) and has been filed as a
#: page of its own since: it counts among the pages kept.
OWN_SINCE = "own"


def kind(record: DropRecord, record_of: Callable[[str], DropRecord | None]) -> str:
    """What ``record`` says of its URL; ``record_of`` reads another URL's record (a filing
    record written before they had a mark of their own is told by the holder record of
    the URL it names, which names it back)."""
    if record.distance == HELD:
        return HOLDS
    if record.distance == FILED:
        return FILED_ELSEWHERE
    if record.distance == HELD_COPY:
        return DROPPED
    if record.distance == OWN_PAGE:
        return OWN_SINCE
    if is_marked(record):
        return MARKED_COPY
    if record.distance == 0 and holder_of(record_of(record.kept)) == record.url:
        return FILED_ELSEWHERE
    return DROPPED


@dataclass(frozen=True)
class Tally:
    """The records of a namespace by what they say: the URLs dropped (their records),
    the URLs filed under another URL, the canonical URLs holding another URL's page and
    the URLs passed to the spider marked as copies (records of URLs that are pages of
    their own since are in none)."""

    dropped: list[DropRecord]
    filed: list[DropRecord]
    holding: list[DropRecord]
    marked: list[DropRecord]


def tally(records: Iterable[DropRecord]) -> Tally:
    """Sort every record of a namespace (one pass, held in memory: the record is bounded
    by ``SIMHASH_DROP_RECORD_MAX_ENTRIES``)."""
    by_url = {record.url: record for record in records}
    sorted_: dict[str, list[DropRecord]] = {
        DROPPED: [],
        FILED_ELSEWHERE: [],
        HOLDS: [],
        MARKED_COPY: [],
        OWN_SINCE: [],
    }
    for record in by_url.values():
        sorted_[kind(record, by_url.get)].append(record)
    return Tally(sorted_[DROPPED], sorted_[FILED_ELSEWHERE], sorted_[HOLDS], sorted_[MARKED_COPY])


def took_name(url: str, record: DropRecord, record_of: Callable[[str], DropRecord | None]) -> bool:
    """Whether ``url``, dropped as a copy of ``record.kept``, took its cluster's name (a
    preferred URL, SIMHASH_PREFER_URLS): the URL it copies has a record leading to it."""
    onward = record_of(record.kept)
    return onward is not None and onward.kept == url and onward.distance == FILED
