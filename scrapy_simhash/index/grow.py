"""Spreading a namespace over more Redis shards: an operation over the index and the
recrawl state together, run with the crawl stopped (``scrapy-simhash index grow``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.facade import IndexFacade
from scrapy_simhash.index.redis import RedisIndex
from scrapy_simhash.index.redis.connection import _SCAN_BATCH
from scrapy_simhash.index.registry import open_index
from scrapy_simhash.index.sharded import ShardedRedisIndex, _entries, check_shards
from scrapy_simhash.recrawl.redisstore import regroup


def grow(url: str, namespace: str, shards: int, new_shards: int, **index_options: Any) -> int:
    """Spread a namespace held in ``shards`` shards (1 = today's single layout) over
    ``new_shards``, in place; return the entries copied. Run it with the crawl stopped, with
    the crawl's index settings (``open_index`` keywords: ``scheme``, ``bits``, distances,
    ``ttl_secs``...). Entries keep their last-seen time; the drop record stays under the
    namespace's tag; the recrawl state moves to the new shards too. Entries keep their
    signatures and the namespace its key of the second test (the grown index adopts the
    namespace's record, whose key every new shard's record and the rewritten root record
    carry), so pages signed before and after compare.

    Safe to rerun after an interruption: the namespace's record still names the old shard
    count until every entry is copied, and the copy stores each entry again.
    """
    check_shards(new_shards)
    if new_shards == shards:
        raise ConfigurationError(f"namespace {namespace!r} already has {shards} shard(s)")
    if new_shards == 1:
        # A one-shard target would be written under a shard's tag, where the unsharded
        # layout (SIMHASH_INDEX_SHARDS = 1) never looks: the copy would look empty.
        raise ConfigurationError(
            f"grow() spreads a namespace over more shards; back to 1 it is not supported "
            f"(reset namespace {namespace!r} instead)"
        )
    opened = open_index(url, namespace=namespace, shards=shards, **index_options)
    source = opened.backend
    seen = [0.0]
    growing = ShardedRedisIndex(
        url,
        replace(source.config, clock=lambda: seen[0], reset=False),
        shards=new_shards,
        _grow_from=shards,
        **index_options.get("options", {}),
    )
    target = IndexFacade(growing)
    copied = 0
    try:
        if isinstance(source, RedisIndex):
            codecs = [source._codec]
        else:
            assert isinstance(source, ShardedRedisIndex)
            codecs = source._codecs
        client = growing._client
        now = source.config.clock()
        refused: list[str] = []
        for codec in codecs:
            for key, fp, at, signature in _entries(client, codec):
                if source.config.expired(at, now):
                    continue
                seen[0] = float(at)
                if target.observe(key, fp, signature).stored:
                    copied += 1
                else:
                    refused.append(key)
        if refused:
            # Entries that copy another under the distances (or confirm distance) given here
            # were stored under smaller ones: copying them would lose them, so nothing is
            # switched over or deleted.
            raise ConfigurationError(
                f"{len(refused)} entries of namespace {namespace!r} (e.g. {refused[0]!r}) are "
                f"within max_distance={source.config.max_distance} of another entry that "
                f"confirms them, so they were stored with smaller distances; the namespace "
                f"still uses its {shards} shard(s) and nothing was deleted: run grow again "
                "with the max_distance, exact_distance and confirm_distance the crawl used"
            )
        root = growing._root
        client.hset(root.meta, mapping={"config": root.record()})
        # The old records go last: an unsharded source keeps its root keys (the record,
        # now naming the new shards, and the drop record).
        kinds = (b"b", b"e", b"u") if isinstance(source, RedisIndex) else (b"",)
        for codec in codecs:
            for kind in kinds:
                for name in list(client.scan_iter(match=codec.pattern(kind), count=_SCAN_BATCH)):
                    client.delete(name)
    finally:
        target.close()
        opened.close()
    regroup(url, namespace, shards, new_shards)
    return copied
