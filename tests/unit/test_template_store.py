"""The template stores' costs and Redis's own trades: what a host costs in each store, one
write per page, a long first page in a small record, the default expiry, and the errors
a store turns into the memory's own. The contract every store keeps (counting, the bound,
expiry, reset, an outage) is tests/contract/test_template_store_contract.py.

Every store is real (memory, an SQLite file, a Redis server started for the tests); time
moves by an injected clock, so nothing sleeps.
"""

from __future__ import annotations

import asyncio
import random
import tracemalloc
from pathlib import Path

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.glue.templates import TemplateMemory
from scrapy_simhash.storage import open_template_store
from scrapy_simhash.template import EMPTY, HOST_BYTES, SLOTS, HostMemory
from scrapy_simhash.template.store import (
    DEFAULT_TTL_SECS,
    SMALL_BYTES,
    Count,
    MemoryTemplateStore,
    RedisTemplateStore,
    SqliteTemplateStore,
    TemplateStore,
    small_record,
    small_slots,
)
from tests.redis_servers import RedisServer


def _exact(counts: list[Count]) -> dict[str, HostMemory]:
    """What the counts make of each host, counted one by one in the pure core."""
    hosts: dict[str, HostMemory] = {}
    for count in counts:
        hosts[count.host] = count.apply(hosts.get(count.host, EMPTY))
    return hosts


@given(st.sets(st.integers(0, SLOTS - 1), max_size=300))
def test_a_small_record_holds_its_lines_or_a_sample_of_them(slots: set[int]) -> None:
    body = small_record(slots)
    assert len(body) < SMALL_BYTES
    kept = small_slots(body)
    assert kept == sorted(kept)
    assert set(kept) <= slots  # nothing counted that the page did not have
    if len(slots) <= 20 or len(small_record(slots, budget=10_000)) < SMALL_BYTES:
        assert set(kept) == slots
    else:  # the lowest buckets, a hash-random sample of the lines
        assert kept == sorted(slots)[: len(kept)]
        assert len(kept) >= 15


@pytest.mark.redis
def test_a_long_first_page_is_counted_in_part_never_more(redis_url: str) -> None:
    """A first page too long for its small record: the host's later page reads it with
    fewer lines (a copy of it may look new), never with lines it did not have."""
    rng = random.Random(3)
    first = tuple(rng.sample(range(SLOTS), 120))
    second = tuple(rng.sample(range(SLOTS), 40))
    store = RedisTemplateStore(redis_url, "long")
    try:
        store.record([Count("h.example", first), Count("h.example", first, kept=True)])
        store.record([Count("h.example", second)])
        memory = store.read("h.example")
        exact = _exact(
            [
                Count("h.example", first),
                Count("h.example", first, kept=True),
                Count("h.example", second),
            ]
        )["h.example"]
        assert (memory.seen_pages, memory.pages) == (2, 1)
        assert all(a <= b for a, b in zip(memory.seen, exact.seen, strict=True))
        assert all(a <= b for a, b in zip(memory.counts, exact.counts, strict=True))
        assert sum(memory.seen) >= sum(exact.seen) - len(first) + 15
        for slot in second:
            assert memory.seen[slot] >= 1
    finally:
        store.close()


# -- bytes per host, every store --------------------------------------------------------


def _one_page_hosts(store: TemplateStore, hosts: int, *, first: int = 0) -> None:
    """``hosts`` hosts of one page of 30 lines, each seen and kept, 1,000 to a write."""
    rng = random.Random(first)
    counts: list[Count] = []
    for n in range(first, first + hosts):
        slots = tuple(rng.sample(range(SLOTS), 30))
        counts += [Count(f"host{n}.example", slots), Count(f"host{n}.example", slots, kept=True)]
        if len(counts) >= 2000:
            store.record(counts)
            counts = []
    store.record(counts)


@pytest.mark.redis
def test_a_redis_host_of_one_page_costs_at_most_64_bytes(own_redis: RedisServer) -> None:
    """used_memory growth over 100,000 one-page hosts of 30 lines, the buckets' own keys
    and their expiry included (the figure of benchmarks/template_cost.py)."""
    client = redis.Redis.from_url(own_redis.url)
    store = RedisTemplateStore(own_redis.url, "small", ttl_secs=3600)
    try:
        store.record([Count("warm.example", (1,))])  # the script loaded, the client connected
        before = int(client.info("memory")["used_memory"])
        _one_page_hosts(store, 100_000)
        grown = int(client.info("memory")["used_memory"]) - before
        print(f"{grown / 100_000:.1f} B a one-page host")
        assert grown / 100_000 <= 64, grown / 100_000
        assert store.hosts() == 100_001
        keys = client.keys("simhash:{small}:*")
        assert all(0 < client.ttl(key) <= 2 * 3600 for key in keys[:50])
        assert not any(b":tp:" in key for key in keys)  # no host has a key of its own
        assert client.object("encoding", keys[0]) == b"listpack"
        memory = store.read("host7.example")
        assert (memory.pages, memory.seen_pages) == (1, 1)
        assert 25 <= sum(memory.seen) == sum(memory.counts) <= 30  # its lines, or most
    finally:
        client.close()
        store.close()


@pytest.mark.redis
def test_a_redis_host_of_two_pages_costs_its_counters(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = RedisTemplateStore(redis_url, "two", ttl_secs=3600)
    try:
        store.record(
            [
                Count("h.example", (1, 2)),
                Count("h.example", (1, 2), kept=True),
                Count("h.example", (2, 3)),
            ]
        )
        key = "simhash:{two}:tp:h.example"
        assert client.strlen(key) == HOST_BYTES
        # 8,196 B of counters in jemalloc's 10,240 B size class, with the key's own bytes.
        assert HOST_BYTES < client.memory_usage(key) <= 10_400
        assert 0 < client.ttl(key) <= 3600
        memory = store.read("h.example")
        assert (memory.seen_pages, memory.pages) == (2, 1)
        assert (memory.seen[1], memory.seen[2], memory.seen[3], memory.counts[2]) == (1, 2, 1, 1)
        assert store.hosts() == 1  # its small record folded in, gone
    finally:
        client.close()
        store.close()


def test_an_sqlite_host_costs_its_counters_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite3"
    store = SqliteTemplateStore(str(path), "ns")
    try:
        _one_page_hosts(store, 10)
        before = path.stat().st_size + Path(f"{path}-wal").stat().st_size
        _one_page_hosts(store, 1000, first=10)
        store.connection.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        after = path.stat().st_size
        assert HOST_BYTES <= (after - before) / 1000 <= 9_000  # 8.7 KB: overflow pages
    finally:
        store.close()


def test_a_memory_host_costs_its_counters_in_the_process() -> None:
    store = MemoryTemplateStore()
    _one_page_hosts(store, 10)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _one_page_hosts(store, 1000, first=10)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert HOST_BYTES <= grown / 1000 <= HOST_BYTES + 600


# -- expiry in Redis ------------------------------------------------------------------------


@pytest.mark.redis
def test_a_host_memory_without_ttl_expires_after_the_default(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = open_template_store(redis_url, "forever")
    try:
        store.see("h.example", [1])
        store.see("h.example", [2])
        assert (
            DEFAULT_TTL_SECS - 60
            < client.ttl("simhash:{forever}:tp:h.example")
            <= (DEFAULT_TTL_SECS)
        )
    finally:
        client.close()
        store.close()


# -- one write per page; the errors of a store --------------------------------------------


def _page(number: int) -> str:
    rng = random.Random(number)
    words = ["harbour", "ferry", "budget", "council", "street", "canal", "school", "tram"]
    lines = [" ".join(rng.choice(words) for _ in range(12)) + f" {number}." for _ in range(6)]
    return "<html><body><nav>Home</nav><p>" + "</p><p>".join(lines) + "</p></body></html>"


@pytest.mark.redis
def test_the_glue_writes_once_per_page(redis_url: str) -> None:
    """Pages seen and kept through the glue: one script call each, the kept part of each
    page written with the next (and the last at the close); this process reads its own
    kept pages at once."""
    fingerprinter = Fingerprinter()
    client = redis.Redis.from_url(redis_url)
    client.config_resetstat()
    errors: list[str] = []

    async def crawl() -> HostMemory:
        memory = TemplateMemory(
            lambda: open_template_store(redis_url, "writes"),
            fingerprinter,
            count=errors.append,
            timeout_secs=5.0,
        )
        for n in range(20):
            page = fingerprinter.fingerprint_page(_page(n).encode())
            url = f"http://news.example/{n}"
            await memory.see(url, page)
            await memory.learn(url, page)
        own = await memory._memory("news.example", fresh=True)
        await memory.aclose()
        return own

    own = asyncio.run(crawl())
    stats = client.info("commandstats")
    calls = sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("evalsha", "eval"))
    assert calls == 20 + 1  # a write per page, and the last kept page at the close
    assert errors == []
    assert (own.pages, own.seen_pages) == (20, 20)
    store = open_template_store(redis_url, "writes")
    assert store.read("news.example") == own
    store.close()
    client.close()


@pytest.mark.redis
def test_a_cluster_url_on_a_plain_server_is_a_store_error(redis_url: str) -> None:
    """redis-py says so with RedisClusterException, which is no RedisError: the store
    turns it into its own error and the glue judges pages without the memory."""
    url = redis_url.replace("redis://", "redis+cluster://")
    with pytest.raises(IndexBackendError, match="RedisClusterException"):
        RedisTemplateStore(url, "ns")
    fingerprinter = Fingerprinter()
    errors: list[str] = []

    async def crawl() -> bool:
        memory = TemplateMemory(
            lambda: open_template_store(url, "ns"),
            fingerprinter,
            count=errors.append,
            timeout_secs=5.0,
        )
        page = fingerprinter.fingerprint_page(_page(1).encode())
        same = await memory.apply("http://news.example/1", page) is page
        await memory.see("http://news.example/1", page)
        await memory.learn("http://news.example/1", page)
        await memory.aclose()
        return same

    assert asyncio.run(crawl())
    assert set(errors) == {"template/error"}
