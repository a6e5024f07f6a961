"""``SIMHASH_INDEX_*`` settings -> keyword arguments of ``open_index``/``open_async_index``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy_simhash._settings import get_bool, get_dict, get_float, get_int, get_str
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS

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
    """``SIMHASH_MAX_DISTANCE``, read the same way by the crawl and the command line."""
    return get_int(settings, "SIMHASH_MAX_DISTANCE", DEFAULT_MAX_DISTANCE, minimum=0, maximum=31)


def index_options_from_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Read the index settings from Scrapy settings or the CLI's ``-s`` dict.

    The result includes ``url`` (None = embedded SQLite); call
    ``open_index(**options)``. ``bits`` and ``scheme`` come from the fingerprinter
    (``FingerprintConfig``), not from here.
    """
    tables = get_int(settings, "SIMHASH_INDEX_TABLES", 0, minimum=0)
    expected = get_int(settings, "SIMHASH_INDEX_EXPECTED_PAGES", 0, minimum=0)
    ttl = get_float(settings, "SIMHASH_INDEX_TTL_SECS", 0.0, minimum=0.0)
    drop_ttl = get_float(settings, "SIMHASH_DROP_RECORD_TTL_SECS", DROP_TTL_SECS, minimum=0.0)
    return {
        "url": get_str(settings, "SIMHASH_INDEX_URL", None),
        "max_distance": (k := max_distance_from_settings(settings)),
        "exact_distance": get_int(
            settings,
            "SIMHASH_INDEX_EXACT_DISTANCE",
            min(DEFAULT_EXACT_DISTANCE, k),
            minimum=0,
            maximum=k,
        ),
        "namespace": get_str(settings, "SIMHASH_NAMESPACE", "default") or "default",
        "tables": tables or None,
        "expected_size": expected or None,
        "ttl_secs": ttl or None,
        "reset": get_bool(settings, "SIMHASH_INDEX_RESET", False),
        "drop_ttl_secs": drop_ttl or None,
        "drop_max_entries": get_int(
            settings, "SIMHASH_DROP_RECORD_MAX_ENTRIES", DROP_MAX_ENTRIES, minimum=0
        ),
        "options": _backend_options(settings),
    }


def _backend_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``SIMHASH_INDEX_OPTIONS`` plus ``shards`` when ``SIMHASH_INDEX_SHARDS`` spreads a
    Redis namespace (1, the default, leaves the options as they are)."""
    options = get_dict(settings, "SIMHASH_INDEX_OPTIONS")
    shards = get_int(settings, "SIMHASH_INDEX_SHARDS", 1, minimum=1, maximum=1024)
    if shards > 1:
        options = {**options, "shards": shards}
    return options
