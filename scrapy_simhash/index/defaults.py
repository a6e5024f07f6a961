"""The index's default distances, with why they are what they are (``settings/`` reads the
settings that override them)."""

from __future__ import annotations

#: SIMHASH_MAX_DISTANCE: stored pages within 8 bits are candidates. A candidate is a copy
#: only when the second test confirms it (:mod:`scrapy_simhash.confirm`), so the radius is
#: chosen for recall: on the independent pair benchmark, as the index decides with its
#: four tables, F1 goes from 0.964 at 4 bits to 0.975 at 8 with no labelled distinct pair
#: accepted but one whose two main texts are read the same (benchmarks/false_matches.py);
#: beyond 8 the four bands find few more (0.976 at 12).
DEFAULT_MAX_DISTANCE = 8
#: SIMHASH_INDEX_EXACT_DISTANCE: the band layout is built for 3 bits (four tables), so every
#: candidate within 3 bits is found, and those further out (up to the radius) when one of
#: the four bands is equal: 90% of pairs 4 bits apart, about half at 6, a third at 8. More
#: tables find more (F1 0.980 at six) for 8 more bytes a table per kept page in Redis.
DEFAULT_EXACT_DISTANCE = 3
#: The same two defaults for 128-bit fingerprints (SIMHASH_BITS = 128): six tables, every
#: candidate within 5 bits and those within 16 that share a band (F1 0.981 on the pair
#: benchmark, the same second test).
DEFAULT_DISTANCES = {64: (DEFAULT_MAX_DISTANCE, DEFAULT_EXACT_DISTANCE), 128: (16, 5)}


def default_distances(bits: int) -> tuple[int, int]:
    """(``max_distance``, ``exact_distance``) defaults for ``bits``."""
    return DEFAULT_DISTANCES.get(bits, DEFAULT_DISTANCES[64])
