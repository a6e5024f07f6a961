"""A namespace sharded over a real 6-master Redis Cluster: same verdicts as one shard,
memory spread over the masters, dead lock holders and failing shards never cost a page."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import signal
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, IndexMismatchError
from scrapy_simhash.index import open_index
from scrapy_simhash.index.facade import IndexFacade
from scrapy_simhash.index.grow import grow
from scrapy_simhash.index.redis.codec import key_id
from scrapy_simhash.index.sharded import ShardedRedisIndex
from scrapy_simhash.recrawl import open_recrawl_store
from tests.conftest import Clock
from tests.index_helpers import at_distance, flip
from tests.redis_servers import RedisServer

pytestmark = pytest.mark.redis

SHARDS = 6
_namespaces = itertools.count()


def _sharded(url: str, **kwargs: Any) -> IndexFacade:
    """A sharded index as a crawl opens it; its backend's insides are ``.backend``."""
    index = open_index(url, shards=SHARDS, max_distance=5, exact_distance=3, **kwargs)
    assert isinstance(index.backend, ShardedRedisIndex)
    return index


def _inside(index: IndexFacade | ShardedRedisIndex) -> ShardedRedisIndex:
    inside = index.backend if isinstance(index, IndexFacade) else index
    assert isinstance(inside, ShardedRedisIndex)
    return inside


pages = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 6), st.integers(0, 2**32)), min_size=1, max_size=40
)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pages)
def test_verdicts_equal_one_shard_and_brute_force(
    redis_cluster6_url: str, steps: list[Any]
) -> None:
    """Pages near a few centres (0 to 6 bits away), observed in turn by a sharded namespace
    and by one memory index: the same verdict every time, and every stored page within
    the exact distance (3) is found, as brute force says."""
    rng = random.Random(steps[0][2])
    centres = [rng.getrandbits(64) for _ in range(8)]
    namespace = f"prop{next(_namespaces)}"
    one = open_index("memory://", max_distance=5, exact_distance=3)
    stored: dict[str, int] = {}
    with _sharded(redis_cluster6_url, namespace=namespace) as index:
        for i, (centre, distance, seed) in enumerate(steps):
            fp = at_distance(random.Random(seed), centres[centre], distance)
            key = f"https://site.example/{i % 30}"
            expected = one.observe(key, fp)
            got = index.observe(key, fp)
            assert got == expected
            within = [k for k, f in stored.items() if k != key and (f ^ fp).bit_count() <= 3]
            if within:
                assert got.match is not None
            if got.stored:
                stored[key] = fp
        assert len(index) == len(one) == len(stored)
        for key, fp in stored.items():
            assert index.get(key) == fp


def test_memory_spreads_evenly_over_six_masters(
    redis_cluster6_url: str, redis_cluster6_servers: list[RedisServer]
) -> None:
    rng = random.Random(6)
    with _sharded(redis_cluster6_url, namespace="spread", expected_size=3000) as index:
        for i in range(3000):
            index.observe(f"https://site.example/page/{i}", rng.getrandbits(64))
    usage = [server.simhash_bytes() for server in redis_cluster6_servers]
    mean = sum(usage) / len(usage)
    assert min(usage) > 0
    assert max(usage) / mean <= 1.15, usage


def _hold_locks(url: str, fingerprint: int, ready: Any) -> None:
    """Take a page's locks (round 1) and never come back, as a process killed mid-page."""
    index = _sharded(url, namespace="lease", lock_lease_secs=0.5)
    ident = key_id("https://dead.example/")
    _inside(index)._lock(fingerprint, ident, _inside(index)._plan(fingerprint, ident))
    ready.put(True)
    signal.pause()


def _lock_names(index: IndexFacade | ShardedRedisIndex) -> list[bytes]:
    """Lock fields of every shard's record hash (a band's or a key's)."""
    client = _inside(index)._client
    return [
        name
        for codec in _inside(index)._codecs
        for name in client.hkeys(codec.meta)
        if name[:1] in (b"l", b"k")
    ]


def _held_locks(index: IndexFacade | ShardedRedisIndex) -> list[bytes]:
    """Lock fields still within their lease (value: token, ":", deadline in the server's
    milliseconds)."""
    client = _inside(index)._client
    held = []
    for codec in _inside(index)._codecs:
        node = client.get_node_from_key(codec.meta)
        seconds, micros = client.time(target_nodes=node)
        now = seconds * 1000 + micros // 1000
        for name, value in client.hgetall(codec.meta).items():
            if name[:1] in (b"l", b"k") and int(value.split(b":")[1]) > now:
                held.append(name)
    return held


def test_a_process_killed_holding_locks_blocks_no_longer_than_its_lease(
    redis_cluster6_url: str,
) -> None:
    fp = 0x0123_4567_89AB_CDEF
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    holder = context.Process(target=_hold_locks, args=(redis_cluster6_url, fp, ready))
    holder.start()
    try:
        assert ready.get(timeout=60)
    finally:
        os.kill(holder.pid or 0, signal.SIGKILL)
        holder.join(timeout=30)
    with _sharded(redis_cluster6_url, namespace="lease", lock_lease_secs=0.5) as index:
        assert _lock_names(index)  # the dead process's locks are still there
        # A near-duplicate of the dead process's page waits out the lease, then is stored.
        assert index.observe("https://live.example/a", flip(fp, 1)).stored
        assert not _held_locks(index)
        # And stays found: recall is intact after the lease.
        match = index.observe("https://live.example/b", flip(fp, 1, 40)).match
        assert match is not None
        assert match.key == "https://live.example/a"


def test_a_lock_met_past_its_lease_sweeps_every_expired_lock_of_its_shard(
    redis_cluster6_url: str,
) -> None:
    """Locks left by dead processes that no later page meets again must not pile up: the
    first page to meet one expired lock on a shard removes all of that shard's."""
    fp = 0x0FED_CBA9_8765_4321
    with _sharded(redis_cluster6_url, namespace="sweep") as index:
        ident = key_id("https://dead.example/page")
        _inside(index)._lock(fp, ident, _inside(index)._plan(fp, ident))
        client = _inside(index)._client
        bands = {
            codec.meta: [n for n in client.hkeys(codec.meta) if n[:1] == b"l"]
            for codec in _inside(index)._codecs
        }
        # The dead page's band locks and, beside them, a lock of a page nobody will meet
        # again, all long past their deadline (server milliseconds).
        for meta, names in bands.items():
            for name in names:
                client.hset(meta, name, b"dead:1")
            if names:
                client.hset(meta, b"lforgotten", b"gone:1")
        assert sum(map(len, bands.values())) > 1
        # A page of the same bands meets the dead page's locks on every shard they are on.
        assert index.observe("https://live.example/page", fp).stored
        assert [name for name in _lock_names(index) if name[:1] == b"l"] == []


def test_a_failing_shard_leaves_the_page_unchecked_never_dropped(redis_cluster6_url: str) -> None:
    fp = 0x0F0F_F0F0_1234_5678
    key = "https://site.example/failing"
    with _sharded(redis_cluster6_url, namespace="fail", lock_lease_secs=0.5) as index:
        home = _inside(index)._codecs[_inside(index).home(key_id(key))]
        # Round 1 fails on one shard: the key's entry bucket holds a list.
        bucket = home.entry_key(key_id(key))
        _inside(index)._client.rpush(bucket, b"x")
        with pytest.raises(IndexBackendError):
            index.observe(key, fp)
        assert not _lock_names(index)  # the other shards' locks were released
        _inside(index)._client.delete(bucket)
        # Round 2 fails on one shard: the home's entry counter is not a number, so its
        # store refuses after round 1 went through everywhere (the other shards store).
        _inside(index)._client.hset(home.meta, "n", "x")
        with pytest.raises(IndexBackendError):
            index.observe(key, fp)
        _inside(index)._client.hset(home.meta, "n", 0)
        # A near-duplicate meets band records naming a key without an entry: not checked
        # either, never a copy of a page the index cannot name.
        with pytest.raises(IndexBackendError):
            index.observe("https://site.example/other", flip(fp, 2))
        # Nothing was ever reported as a copy; the page is stored on the next visit.
        assert index.observe(key, fp).match is None
        assert index.get(key) == fp


def test_a_namespace_grows_in_place_and_keeps_its_pages(redis_cluster6_url: str) -> None:
    """1 shard -> 6 -> 3: every entry, its last-seen time and the drop record survive."""
    rng = random.Random(15)
    fps = {f"https://site.example/{i}": rng.getrandbits(64) for i in range(200)}
    clock = Clock()
    options: dict[str, Any] = {
        "max_distance": 5,
        "exact_distance": 3,
        "ttl_secs": 3600,
        "clock": clock,
    }
    with open_index(redis_cluster6_url, namespace="grow", **options) as index:
        for key, fp in fps.items():
            assert index.observe(key, fp).stored
        index.record_drop("https://copy.example/", "https://site.example/0", 1)
    with open_recrawl_store(redis_cluster6_url, namespace="grow", clock=clock) as recrawl:
        recrawl.add(list(fps)[:50], due=clock.now + 60)
    clock.now += 3000
    assert grow(redis_cluster6_url, "grow", 1, 6, **options) == 200
    with pytest.raises(IndexMismatchError, match="set `shards`=6"):
        open_index(redis_cluster6_url, namespace="grow", **options)
    assert grow(redis_cluster6_url, "grow", 6, 3, **options) == 200
    with pytest.raises(ConfigurationError, match="back to 1 it is not supported"):
        grow(redis_cluster6_url, "grow", 3, 1, **options)
    with open_index(redis_cluster6_url, namespace="grow", shards=3, **options) as index:
        assert len(index) == 200
        assert all(index.get(key) == fp for key, fp in fps.items())
        match = index.observe("https://other.example/", flip(fps["https://site.example/7"], 3))
        assert match.match is not None
        assert match.match.key == "https://site.example/7"
        drop = index.drop_of("https://copy.example/")
        assert drop is not None
        assert drop.kept == "https://site.example/0"
    # The recrawl schedule moved with it.
    with open_recrawl_store(redis_cluster6_url, namespace="grow", clock=clock) as recrawl:
        assert recrawl.count() == 50
        assert len(recrawl.due(limit=100)) == 50
    # Nothing of the old layouts is left behind.
    client = redis.RedisCluster.from_url(redis_cluster6_url.replace("redis+cluster", "redis"))
    names = {name.split(b"}")[0] for name in client.scan_iter(match=b"simhash:{grow*")}
    recrawl_names = {
        name.split(b"}")[0] for name in client.scan_iter(match=b"simhash:recrawl:{grow*")
    }
    client.close()
    assert len(names) == 4  # the root tag and three shards
    assert len(recrawl_names) == 4  # the shard count record and three shards
    # Entries kept the time they were last seen, not the time of the move.
    clock.now += 700
    with open_index(redis_cluster6_url, namespace="grow", shards=3, **options) as index:
        assert index.get("https://site.example/1") is None


def test_shards_need_a_redis_url(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="`shards`=3 needs a Redis"):
        open_index(f"sqlite:///{tmp_path}/x.sqlite3", shards=3)
    with pytest.raises(ConfigurationError, match="from 1 to 1024"):
        open_index("redis://127.0.0.1:1/0", shards=0)


def test_growing_never_loses_entries_stored_under_a_smaller_distance(
    redis_cluster6_url: str,
) -> None:
    """Two pages 2 bits apart were both kept at k=1; growing at k=4 must not drop one."""
    fp = 0x0123_4567_89AB_CDEF
    pages = {"https://site.example/a": fp, "https://site.example/b": flip(fp, 0, 1)}
    narrow: dict[str, Any] = {"max_distance": 1, "exact_distance": 1}
    with open_index(redis_cluster6_url, namespace="narrow", **narrow) as index:
        for key, value in pages.items():
            assert index.observe(key, value).stored
    wide: dict[str, Any] = {"max_distance": 4, "exact_distance": 1}
    with pytest.raises(ConfigurationError, match=r"1 entries .* nothing was deleted"):
        grow(redis_cluster6_url, "narrow", 1, 3, **wide)
    with open_index(redis_cluster6_url, namespace="narrow", **narrow) as index:
        assert {key: index.get(key) for key in pages} == pages
    assert grow(redis_cluster6_url, "narrow", 1, 3, **narrow) == 2
    with open_index(redis_cluster6_url, namespace="narrow", shards=3, **narrow) as index:
        assert {key: index.get(key) for key in pages} == pages


def test_a_namespace_in_an_older_sharded_layout_is_refused(redis_cluster6_url: str) -> None:
    """Sharded layout 3 (entries without the sketch of a page's other lines) is not read by
    layout 4: opening it names the layouts and the ways out instead of misreading it."""
    import json

    with _sharded(redis_cluster6_url, namespace="older") as index:
        root = _inside(index)._root
        record = json.loads(_inside(index)._client.hget(root.meta, "config"))
        assert record["sharded_format"] == 4
        record["sharded_format"] = 3  # as layout 3 wrote it
        _inside(index)._client.hset(root.meta, "config", json.dumps(record, sort_keys=True))
    with pytest.raises(
        IndexMismatchError, match="sharded layout 3, this version reads sharded layout 4"
    ):
        _sharded(redis_cluster6_url, namespace="older")
    # One shard keeps today's record, without the sharded layout.
    with open_index(redis_cluster6_url, namespace="single") as index:
        single: Any = index.backend
        assert "sharded_format" not in json.loads(single._client.hget(single._codec.meta, "config"))


def test_a_restarted_server_gets_the_library_and_records_back(own_redis: RedisServer) -> None:
    """Without persistence a restart loses the shards' function library and records: the
    next page loads and writes them again instead of failing (shards on one plain server)."""
    fp = 0x0123_4567_89AB_CDEF
    with open_index(
        own_redis.url, namespace="restart", shards=3, max_distance=5, exact_distance=3
    ) as index:
        assert index.observe("https://site.example/a", fp).stored
        own_redis.stop()
        own_redis.start()
        assert index.observe("https://site.example/b", flip(fp, 2)).stored  # the data is gone
        match = index.observe("https://site.example/c", flip(fp, 2, 9)).match
        assert match is not None
        assert match.key == "https://site.example/b"


def test_a_copy_met_before_its_entry_landed_is_named_once_it_lands(
    redis_cluster6_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's second round stores its band records and its entry on different shards in
    parallel, so a reader may meet the records first: it reads the URL again until the entry
    lands, then reports the copy. Here the entry lands while the reader backs off (its wait
    is replaced by the writer's retry), so the reader never really sleeps."""
    from scrapy_simhash.index import sharded

    fp = 0x0F0F_F0F0_1234_5678
    key = "https://site.example/writer"
    with _sharded(redis_cluster6_url, namespace="late", lock_lease_secs=5) as index:
        home = _inside(index)._codecs[_inside(index).home(key_id(key))]
        _inside(index)._client.hset(home.meta, "n", "x")  # the writer's home fails in round 2 ...
        with pytest.raises(IndexBackendError):
            index.observe(key, fp)
        _inside(index)._client.hset(home.meta, "n", 0)
        landed = []

        def land(_: float) -> None:  # ... and its entry lands while the reader waits
            if not landed:
                landed.append(index.observe(key, fp).stored)

        monkeypatch.setattr(sharded.time, "sleep", land)
        seen = index.observe("https://site.example/reader", flip(fp, 2))
        assert landed == [True]
        assert seen.match is not None
        assert seen.match.key == key
        assert not seen.stored


@pytest.mark.cluster
def test_a_band_record_left_behind_by_a_failed_home_never_drops_a_page(
    redis_cluster6_url: str,
) -> None:
    """A key moves from fp1 to fp2, but its home fails to store fp2 while the band shards
    do: the entry still holds fp1. A page near fp2 then meets band records naming a key
    whose content is not fp2; it must not be dropped as that key's copy."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from scrapy_simhash.exceptions import PageNotChecked

    fp1, fp2 = 0x0123_4567_89AB_CDEF, 0x7654_3210_FEDC_BA98
    key = "https://site.example/moved"
    with _sharded(redis_cluster6_url, namespace="stale") as index:
        assert index.observe(key, fp1).stored
        home = _inside(index).home(key_id(key))
        send = _inside(index)._send

        def home_store_fails(calls: list[tuple[int, list[bytes]]]) -> list[Any]:
            lost = [
                i for i, (shard, args) in enumerate(calls) if shard == home and args[0] == b"store"
            ]
            replies = send([c for i, c in enumerate(calls) if i not in lost])
            for i in lost:
                replies.insert(i, RedisConnectionError("connection lost"))
            return replies

        _inside(index)._send = home_store_fails  # type: ignore[method-assign]
        with pytest.raises(IndexBackendError):
            index.observe(key, fp2)
        _inside(index)._send = send  # type: ignore[method-assign]
        with pytest.raises(PageNotChecked):
            index.observe("https://site.example/near", flip(fp2, 2))
        # The key's own content is still found.
        seen = index.observe("https://site.example/copy", flip(fp1, 1))
        assert seen.match is not None
        assert seen.match.key == key


@pytest.mark.cluster
def test_a_lock_call_retried_after_its_reply_was_lost_holds_its_own_locks(
    redis_cluster6_url: str,
) -> None:
    """redis-py retries a pipeline whose connection dropped: the second lock call of one
    page (same token) must find its locks its own, not wait a lease behind itself."""
    fp = 0x0BAD_F00D_1234_5678
    with _sharded(redis_cluster6_url, namespace="retry") as index:
        ident = key_id("https://site.example/retried")
        token, _ = _inside(index)._lock(fp, ident, _inside(index)._plan(fp, ident))
        home = _inside(index).home(ident)
        again = _inside(index)._round(
            [
                (
                    shard,
                    [
                        b"lock",
                        _inside(index)._codecs[shard].record_id,
                        _inside(index)._conf[shard],
                        _inside(index)._now(),
                        _inside(index)._fp(fp),
                        ident,
                        b"1" if shard == home else b"",
                        tables,
                        token,
                        _inside(index)._lease_ms,
                    ],
                )
                for shard, tables in _inside(index)._plan(fp, ident).items()
            ]
        )
        assert [int(reply[0]) for reply in again] == [1] * len(again)
        # Another page's token still finds them busy.
        other = _inside(index)._round(
            [
                (
                    shard,
                    [
                        b"lock",
                        _inside(index)._codecs[shard].record_id,
                        _inside(index)._conf[shard],
                        _inside(index)._now(),
                        _inside(index)._fp(fp),
                        ident,
                        b"1" if shard == home else b"",
                        tables,
                        b"someone-else",
                        _inside(index)._lease_ms,
                    ],
                )
                for shard, tables in _inside(index)._plan(fp, ident).items()
            ]
        )
        assert [int(reply[0]) for reply in other] == [0] * len(other)
        _inside(index)._unlock(fp, ident, token, _inside(index)._plan(fp, ident))
