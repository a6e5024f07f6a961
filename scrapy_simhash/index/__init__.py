"""Exact near-duplicate index: "is a stored fingerprint within k bits of this one?".

Fingerprints are cut into bands (:mod:`.layout`) so every neighbour within k shares a table
key with the probe; candidates are then verified by exact Hamming distance, so recall is
exact. Backends: embedded SQLite (default), ``memory://``, Redis and Redis Cluster.

    from scrapy_simhash.index import open_index
    with open_index("redis://127.0.0.1:6379/0", max_distance=3) as index:
        match = index.check_and_add("https://a.example/x", fingerprint)
"""

from __future__ import annotations

from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
)
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.layout import BandLayout, choose_layout, split_bands
from scrapy_simhash.index.registry import (
    open_async_index,
    open_index,
    register_backend,
)
from scrapy_simhash.index.sqlite import DEFAULT_URL

__all__ = [
    "DEFAULT_URL",
    "AsyncNearDuplicateIndex",
    "BandLayout",
    "DropRecord",
    "IndexConfig",
    "IndexStats",
    "Match",
    "NearDuplicateIndex",
    "Observation",
    "choose_layout",
    "open_async_index",
    "open_index",
    "register_backend",
    "split_bands",
]
