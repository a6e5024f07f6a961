"""The Redis index under its first module name; it lives in :mod:`scrapy_simhash.index.redis`."""

from __future__ import annotations

from scrapy_simhash.index.redis.async_index import AsyncRedisIndex
from scrapy_simhash.index.redis.batcher import MAX_BATCH, MAX_PIPELINES
from scrapy_simhash.index.redis.codec import (
    _DATA_KINDS,
    DEFAULT_KEY_BITS,
    DROPS_SCRIPT,
    MAX_ENTRY_BITS,
    RECORDS_PER_KEY,
    REDIS_FORMAT,
    SCRIPT,
    _Codec,
    _glob_escape,
    group_mask,
    key_bits,
    key_id,
)
from scrapy_simhash.index.redis.connection import (
    _SCAN_BATCH,
    DEFAULT_MAX_CONNECTIONS,
    _no_record,
    _redis_errors,
    client_options,
)
from scrapy_simhash.index.redis.sync_index import RedisIndex

__all__ = [
    "DEFAULT_KEY_BITS",
    "DEFAULT_MAX_CONNECTIONS",
    "DROPS_SCRIPT",
    "MAX_BATCH",
    "MAX_ENTRY_BITS",
    "MAX_PIPELINES",
    "RECORDS_PER_KEY",
    "REDIS_FORMAT",
    "SCRIPT",
    "_DATA_KINDS",
    "_SCAN_BATCH",
    "AsyncRedisIndex",
    "RedisIndex",
    "_Codec",
    "_glob_escape",
    "_no_record",
    "_redis_errors",
    "client_options",
    "group_mask",
    "key_bits",
    "key_id",
]
