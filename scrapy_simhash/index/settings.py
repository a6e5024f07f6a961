"""``SIMHASH_INDEX_*`` settings -> keyword arguments of ``open_index``/``open_async_index``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy_simhash._settings import get_bool, get_dict, get_float, get_int, get_str
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS


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
        "max_distance": get_int(settings, "SIMHASH_MAX_DISTANCE", 3, minimum=0, maximum=31),
        "namespace": get_str(settings, "SIMHASH_NAMESPACE", "default") or "default",
        "tables": tables or None,
        "expected_size": expected or None,
        "ttl_secs": ttl or None,
        "reset": get_bool(settings, "SIMHASH_INDEX_RESET", False),
        "drop_ttl_secs": drop_ttl or None,
        "drop_max_entries": get_int(
            settings, "SIMHASH_DROP_RECORD_MAX_ENTRIES", DROP_MAX_ENTRIES, minimum=0
        ),
        "options": get_dict(settings, "SIMHASH_INDEX_OPTIONS"),
    }
