"""Redis specifics: one round trip per page, script reload, outages, secrets, settings."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
import redis

from scrapy_simhash._redis import sync_client
from scrapy_simhash.exceptions import (
    ConfigurationError,
    IndexBackendError,
    IndexMismatchError,
    OldStateError,
)
from scrapy_simhash.index import Match, Observation, open_index
from scrapy_simhash.settings import index_options
from tests.conftest import backend_params, backend_url
from tests.index_helpers import BlockingAsync, at_distance
from tests.redis_servers import RedisServer

pytestmark = pytest.mark.redis


def _commandstats(url: str) -> dict[str, int]:
    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_each_page_costs_one_script_call(redis_url: str, asynchronous: bool) -> None:
    index = BlockingAsync(redis_url, {}) if asynchronous else open_index(redis_url)
    try:
        index.observe("warm-up", 1)  # loads the script (NOSCRIPT, SCRIPT LOAD) once
        admin = redis.Redis.from_url(redis_url)
        admin.config_resetstat()
        admin.close()
        rng = random.Random(1)
        base = rng.getrandbits(64)
        for i in range(40):
            index.observe(f"https://x.example/{i}", at_distance(rng, base, i % 6))
        stats = _commandstats(redis_url)
        assert stats.pop("evalsha") == 40
        # Everything else was run by the script inside Redis, or is this test's own admin
        # connection; no EVAL, SCRIPT LOAD or plain reads/writes came from the index.
        inside_script = {"get", "set", "setrange", "del", "hincrby", "rpush", "lindex", "hget"}
        admin = {"config|resetstat", "info", "hello", "client|setinfo"}
        assert set(stats) <= inside_script | admin
    finally:
        index.close()


def test_script_is_reloaded_after_a_flush(redis_url: str) -> None:
    with open_index(redis_url) as index:
        index.observe("a", 10)
        admin = redis.Redis.from_url(redis_url)
        admin.script_flush()
        admin.close()
        assert index.observe("b", 11).match == Match("a", 10, 1)


def test_an_index_in_an_older_redis_layout_is_refused(redis_url: str) -> None:
    admin = redis.Redis.from_url(redis_url)
    try:
        # What the first release wrote: band strings keyed by the whole band, entry hashes.
        admin.hset(
            "simhash:{old}:m",
            "config",
            '{"bits": 64, "entry_bits": 14, "format": 1, "layout": "4x1", "scheme": ""}',
        )
        # Written by a release (0.1: Redis layout 1): refused as old state, with the upgrade.
        with pytest.raises(
            OldStateError,
            match=r"Redis layout 1, written by scrapy-simhash "
            r"0\.1.*scrapy simhash upgrade",
        ):
            open_index(redis_url, namespace="old")
        with open_index(redis_url, namespace="old", reset=True) as index:
            assert index.observe("a", 5).stored
        # Today's record over the Redis layout before entries carried signatures (3, in
        # 0.3.0's development): a mismatch, with the reset.
        record = json.loads(admin.hget("simhash:{old}:m", "config"))
        admin.hset("simhash:{old}:m", "config", json.dumps({**record, "redis_format": 3}))
        with pytest.raises(IndexMismatchError, match=r"Redis layout 3.*reset=True"):
            open_index(redis_url, namespace="old")
    finally:
        admin.close()


def _protect(server: RedisServer, password: str) -> None:
    admin = redis.Redis(port=server.port)
    admin.config_set("requirepass", password)
    admin.close()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_outage_raises_a_masked_error_and_recovers(
    own_redis: RedisServer, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    password = "hunter2-secret"
    _protect(own_redis, password)
    url = f"redis://:{password}@127.0.0.1:{own_redis.port}/0"
    options = {"retries": 1, "socket_connect_timeout": 0.5, "socket_timeout": 2}
    index = BlockingAsync(url, options) if asynchronous else open_index(url, **options)
    try:
        assert index.observe("a", 1000).stored
        own_redis.stop()
        with (
            caplog.at_level(logging.DEBUG, logger="scrapy_simhash"),
            pytest.raises(IndexBackendError) as info,
        ):
            index.observe("b", 1001)
        message = str(info.value)
        assert password not in message
        assert f":***@127.0.0.1:{own_redis.port}" in message
        assert "observe failed" in message
        assert password not in caplog.text
        assert "observe failed" in caplog.text
        # The server comes back empty (no persistence): the next call reconnects, reloads
        # the script and works on a consistent (empty) index.
        own_redis.start()
        _protect(own_redis, password)
        assert index.observe("b", 1001) == Observation(None, None, True)
        assert index.observe("c", 1000).match == Match("b", 1001, 1)
        assert len(index) == 1
    finally:
        index.close()


def test_unreachable_server_at_open_is_a_backend_error(own_redis: RedisServer) -> None:
    own_redis.stop()
    url = f"redis://user:pa55word@127.0.0.1:{own_redis.port}/0"
    with pytest.raises(IndexBackendError, match=r"user:\*\*\*@") as info:
        open_index(url, retries=0, socket_connect_timeout=0.5)
    assert "pa55word" not in str(info.value)


def test_settings_become_open_index_arguments(tmp_path: Path) -> None:
    assert index_options({}) == {
        "url": None,
        "max_distance": 8,
        "exact_distance": 3,
        "namespace": "default",
        "tables": None,
        "expected_size": None,
        "ttl_secs": None,
        "reset": False,
        "drop_ttl_secs": 30 * 86400.0,
        "drop_max_entries": 1_000_000,
        "confirm_distance": 20,
        "options": {},
    }
    options = index_options(
        {
            "SIMHASH_INDEX_URL": f"sqlite:///{tmp_path}/settings.sqlite3",
            "SIMHASH_MAX_DISTANCE": "5",
            "SIMHASH_INDEX_EXACT_DISTANCE": "5",
            "SIMHASH_NAMESPACE": "news",
            "SIMHASH_INDEX_TABLES": "21",
            "SIMHASH_INDEX_EXPECTED_PAGES": "1000000",
            "SIMHASH_INDEX_TTL_SECS": "86400",
            "SIMHASH_INDEX_RESET": "true",
            "SIMHASH_INDEX_OPTIONS": '{"timeout": 2}',
            "SIMHASH_DROP_RECORD_TTL_SECS": "0",
            "SIMHASH_DROP_RECORD_MAX_ENTRIES": "500",
            "SIMHASH_CONFIRM_DISTANCE": "12",
        }
    )
    assert options["tables"] == 21
    assert options["options"] == {"timeout": 2}
    with open_index(**options) as index:
        assert index.layout.name == "7x2"
        assert index.config.ttl_secs == 86400
        assert index.config.namespace == "news"
        assert (index.config.drop_ttl_secs, index.config.drop_max_entries) == (None, 500)
        assert index.config.confirm_distance == 12
    with pytest.raises(ConfigurationError, match="SIMHASH_MAX_DISTANCE"):
        index_options({"SIMHASH_MAX_DISTANCE": "many"})
    with pytest.raises(ConfigurationError, match="SIMHASH_INDEX_EXACT_DISTANCE"):
        index_options({"SIMHASH_MAX_DISTANCE": "2", "SIMHASH_INDEX_EXACT_DISTANCE": "3"})
    assert index_options({"SIMHASH_MAX_DISTANCE": "0"})["exact_distance"] == 0
    with pytest.raises(ConfigurationError, match="SIMHASH_CONFIRM_DISTANCE"):
        index_options({"SIMHASH_CONFIRM_DISTANCE": "32"})
    # 128-bit fingerprints get distances of their own unless set.
    wide = index_options({"SIMHASH_BITS": "128"})
    assert (wide["max_distance"], wide["exact_distance"]) == (16, 5)
    wide = index_options({"SIMHASH_BITS": "128", "SIMHASH_MAX_DISTANCE": "7"})
    assert (wide["max_distance"], wide["exact_distance"]) == (7, 5)
    with pytest.raises(ConfigurationError, match=r"memory:// takes no options.*retries"):
        open_index("memory://", options={"retries": 2})
    with pytest.raises(ConfigurationError, match="sqlite:// does not take option"):
        open_index(f"sqlite:///{tmp_path}/x.sqlite3", options={"retries": 2})


def test_cluster_namespace_lives_on_one_slot(redis_cluster_url: str) -> None:
    with open_index(redis_cluster_url, namespace="shop") as index:
        for i in range(20):
            index.observe(f"https://shop.example/{i}", random.Random(i).getrandbits(64))
        client = redis.RedisCluster.from_url(redis_cluster_url.replace("+cluster", ""))
        try:
            names = list(client.scan_iter(match="simhash:{shop}:*"))
            assert len(names) > 20
            assert {client.keyslot(name) for name in names} == {client.keyslot("{shop}")}
        finally:
            client.close()


def test_more_callers_than_connections_wait_instead_of_failing(redis_url: str) -> None:
    import asyncio

    from scrapy_simhash.index import open_async_index

    async def run() -> int:
        index = await open_async_index(redis_url, max_connections=4)
        try:
            results = await asyncio.gather(
                *(index.observe(f"k{i}", random.Random(i).getrandbits(64)) for i in range(200))
            )
            assert all(result.stored for result in results)
            return await index.count()
        finally:
            await index.close()

    assert asyncio.run(run()) == 200


def _async_observe_all(url: str, pages: list[tuple[str, int]]) -> tuple[list[Observation], int]:
    import asyncio

    from scrapy_simhash.index import open_async_index

    async def run() -> tuple[list[Observation], int]:
        index = await open_async_index(url)
        try:
            results = await asyncio.gather(*(index.observe(k, fp) for k, fp in pages))
            return list(results), await index.count()
        finally:
            await index.close()

    return asyncio.run(run())


@pytest.mark.parametrize("kind", backend_params(["redis", "cluster"]))
def test_concurrent_calls_share_pipelines_but_stay_one_atomic_call_each(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    url = backend_url(kind, request, tmp_path)
    rng = random.Random(5)
    base = rng.getrandbits(64)
    # 150 near-duplicates of one page in flight at once, then a script flush between bursts.
    burst = [(f"https://n.example/{i}", at_distance(rng, base, i % 4)) for i in range(150)]
    results, count = _async_observe_all(url, burst)
    stored = [result for result in results if result.stored]
    assert len(stored) == 1
    assert count == 1
    assert results[0].stored  # calls run in the order they were made
    assert all(r.match is not None and r.match.key == burst[0][0] for r in results[1:])
    admin: Any = sync_client(url)
    try:
        admin.script_flush()
    finally:
        admin.close()
    fresh = [(f"https://f.example/{i}", rng.getrandbits(64)) for i in range(50)]
    results, count = _async_observe_all(url, fresh)
    assert all(result.stored for result in results)
    assert count == 51


def test_each_async_page_is_one_evalsha_even_when_batched(redis_url: str) -> None:
    pages = [(f"https://b.example/{i}", random.Random(i).getrandbits(64)) for i in range(120)]
    _async_observe_all(redis_url, pages[:1])  # loads the script
    admin = redis.Redis.from_url(redis_url)
    admin.config_resetstat()
    admin.close()
    results, count = _async_observe_all(redis_url, pages[1:])
    assert count == 120
    assert all(result.stored for result in results)
    stats = _commandstats(redis_url)
    assert stats.pop("evalsha") == 119
    assert "eval" not in stats
    assert "script|load" not in stats


def test_pages_stay_compact_in_memory(redis_url: str) -> None:
    """The layout's point: ~64 records per Redis key and no per-page keys or hash fields.
    (benchmarks/index_memory.py measures a million pages.)"""
    pages = 3000
    admin = redis.Redis.from_url(redis_url)
    try:
        with open_index(redis_url, expected_size=pages, namespace="compact") as index:
            index.observe("warm-up", 0)  # loads the script, which Redis keeps in memory
            index.remove("warm-up")
            before = int(admin.info("memory")["used_memory"])
            rng = random.Random(3)
            key_bytes = 0
            for i in range(pages):
                key = f"https://site{i % 7}.example.com/section/article-{i:06d}.html"
                key_bytes += len(key)
                assert index.observe(key, rng.getrandbits(64)).stored
            delta = int(admin.info("memory")["used_memory"]) - before
        names = list(admin.scan_iter(match="simhash:{compact}:*", count=1000))
        # 2^6 groups in each of 4 tables, 2^6 entry buckets (records + key texts), meta.
        assert len(names) <= 4 * 64 + 2 * 64 + 1
        assert {admin.type(name) for name in names} == {b"string", b"list", b"hash"}
        # ~82 bytes (16 of them the signature); the first layout (a key per band value,
        # hashes of entries) took ~400.
        assert (delta - key_bytes) / pages < 106
    finally:
        admin.close()


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_namespace_key_outlives_a_lost_record_and_follows_a_new_namespace(
    redis_url: str, asynchronous: bool, shards: int
) -> None:
    """Pages are signed under the namespace's key: a client writing its record back after
    the server lost it keeps the key, and one meeting a namespace created anew takes its."""
    options: dict[str, Any] = {"namespace": "keyed", "shards": shards}
    index = BlockingAsync(redis_url, options) if asynchronous else open_index(redis_url, **options)
    admin = redis.Redis.from_url(redis_url)
    try:
        key = index.confirm_key
        assert index.observe("a", 1).stored
        admin.flushdb()  # a restart without persistence
        assert index.observe("b", 1).stored
        assert index.confirm_key == key
        with open_index(redis_url, **options) as again:
            assert again.confirm_key == key
        with open_index(redis_url, reset=True, **options) as other:
            fresh = other.confirm_key
        assert fresh != key
        assert index.observe("c", 1 << 40).stored
        assert index.confirm_key == fresh
        if shards > 1:
            # The root record alone is lost: the shards' records still name the key.
            admin.delete("simhash:{keyed}:m")
            with open_index(redis_url, **options) as again:
                assert again.confirm_key == fresh
    finally:
        admin.close()
        index.close()
