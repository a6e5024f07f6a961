"""``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``: an index shared by crawlers.

Every observe() is ONE ``EVALSHA`` of ``resources/simhash_index.lua``: the script finds the
live candidates, confirms them by their signatures (the second test) and stores the page
in the same atomic step, so any number of crawler processes can share the index without
ever both keeping two confirmed near-duplicates.
redis-py's script objects reload the script on ``NOSCRIPT`` (after a server restart).

Compactness (~96 bytes per page besides the key text, at 100k and 1M pages sized with
``expected_size``: ~80 measured before entries carried their 16-byte signature): a Redis
key costs ~80 bytes and a hash switches to a far larger encoding once one value exceeds
hash-max-listpack-value, so everything is packed into strings and lists of ~64 records
each. Band records (the fingerprint; in table 1 also its entry bucket) are grouped by the
top bits of their band and sorted, so the script binary-searches the probe's band; entry
records (key id, fingerprint, last seen, signature) and key texts live in buckets named by
the key id. ``expected_size`` fixes the group and bucket counts at creation: a corpus much
larger makes every page rewrite longer strings (slower), a much smaller one spends more on
per-key overhead. See the script for the exact layout.

Cluster: all keys of a namespace share the hash tag ``{namespace}``, so a namespace lives
on one slot (one master). Spread load by using several namespaces (e.g. one per site).

Modules: ``codec`` (key sizing, key names, script arguments and replies), ``connection``
(client options, errors), ``sync_index`` (:class:`RedisIndex`), ``async_index``
(:class:`AsyncRedisIndex`) and ``batcher`` (its script calls sent in pipelines).
"""

from __future__ import annotations

from scrapy_simhash.index.redis.async_index import AsyncRedisIndex
from scrapy_simhash.index.redis.codec import (
    DROPS_SCRIPT,
    REDIS_FORMAT,
    SCRIPT,
    group_mask,
    key_bits,
    key_id,
)
from scrapy_simhash.index.redis.connection import client_options
from scrapy_simhash.index.redis.sync_index import RedisIndex

__all__ = [
    "DROPS_SCRIPT",
    "REDIS_FORMAT",
    "SCRIPT",
    "AsyncRedisIndex",
    "RedisIndex",
    "client_options",
    "group_mask",
    "key_bits",
    "key_id",
]
