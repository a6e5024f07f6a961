"""The index's default distances, with why they are what they are (``settings/`` reads the
settings that override them)."""

from __future__ import annotations

#: SIMHASH_MAX_DISTANCE: pages within 4 bits are near-duplicates. On the independent pair
#: benchmark precision stays 0.999 at k=4 while recall goes from 0.902 at k=3 to 0.933 (5%
#: edits 0.68 -> 0.84). k=5 gains a little more there (0.946), but on the product's own
#: pair generator it matches 45% of Chinese pages with 40-50% of their text garbled (k=4
#: 35%, k=3 23%): a distinct page dropped is the one error a user cannot see.
DEFAULT_MAX_DISTANCE = 4
#: SIMHASH_INDEX_EXACT_DISTANCE: the band layout is built for 3 bits (four tables), so every
#: match within 3 bits is found, and those 4 bits away when one of the four bands is equal
#: (for random bit positions 90% of them) at no cost over k=3.
DEFAULT_EXACT_DISTANCE = 3
#: The same two defaults for 128-bit fingerprints (SIMHASH_BITS = 128), where twice the
#: bits average out most of a 64-bit fingerprint's noise: on the pair benchmark F1 0.979
#: (P 0.998, German 0.970, 5% edits 0.925) against 0.970 at 64 bits, for 6 band tables
#: instead of 4 and 239 instead of 147 Redis bytes per page (benchmarks/README.md).
DEFAULT_DISTANCES = {64: (DEFAULT_MAX_DISTANCE, DEFAULT_EXACT_DISTANCE), 128: (9, 5)}


def default_distances(bits: int) -> tuple[int, int]:
    """(``max_distance``, ``exact_distance``) defaults for ``bits``."""
    return DEFAULT_DISTANCES.get(bits, DEFAULT_DISTANCES[64])
