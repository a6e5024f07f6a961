"""The index's defaults, and the settings readers' former home (kept for imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def max_distance_from_settings(settings: Mapping[str, Any]) -> int:
    """``SIMHASH_MAX_DISTANCE`` (read in :mod:`scrapy_simhash.settings`)."""
    from scrapy_simhash.settings import max_distance

    return max_distance(settings)


def index_options_from_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``open_index`` from the settings, ``url`` included (read in
    :mod:`scrapy_simhash.settings`)."""
    from scrapy_simhash.settings import index_options

    return index_options(settings)
