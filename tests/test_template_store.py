"""The template stores' cost and contract: what a host costs in each store, one write per
page, expiry and a bound on hosts in Redis, and the errors a store turns into the
memory's own.

Every store is real (memory, an SQLite file, a Redis server started for the tests); time
moves by an injected clock, so nothing sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.glue.templates import TemplateMemory
from scrapy_simhash.reset import reset_namespace
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
    glob_escape,
    small_record,
    small_slots,
)
from tests.conftest import Clock
from tests.redis_servers import RedisServer

_namespaces = itertools.count()


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, **options: Any) -> TemplateStore:
    """An empty store of ``kind`` (a namespace of its own on the session's Redis)."""
    if kind == "memory":
        return MemoryTemplateStore(**options)
    if kind == "sqlite":
        return SqliteTemplateStore(str(tmp_path / f"t{next(_namespaces)}.sqlite3"), "ns", **options)
    url = request.getfixturevalue("redis_url")
    return RedisTemplateStore(url, f"ns{next(_namespaces)}", **options)


def _exact(counts: list[Count]) -> dict[str, HostMemory]:
    """What the counts make of each host, counted one by one in the pure core."""
    hosts: dict[str, HostMemory] = {}
    for count in counts:
        hosts[count.host] = count.apply(hosts.get(count.host, EMPTY))
    return hosts


#: Pages of at most 20 lines: their small record holds every line (see the next test).
_pages = st.lists(
    st.tuples(st.sampled_from(["a.example", "b.example", "c.example:8080"]),
              st.lists(st.integers(0, SLOTS - 1), min_size=1, max_size=20), st.booleans()),
    max_size=12,
)


@pytest.mark.parametrize("kind", [
    "memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis),
])
def test_a_batch_counts_what_each_page_alone_counts(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Pages recorded in batches of any size read as the pure core counts them one by one,
    in every store (in Redis: hosts of one page in small records, then their own)."""

    @settings(max_examples=25, suppress_health_check=list(HealthCheck))
    @given(pages=_pages, split=st.integers(1, 4))
    def check(pages: list[tuple[str, list[int], bool]], split: int) -> None:
        counts = [Count(host, tuple(slots), kept) for host, slots, kept in pages]
        store = _store(kind, tmp_path, request)
        try:
            for at in range(0, len(counts), split):
                store.record(counts[at : at + split])
            for host, memory in _exact(counts).items():
                assert store.read(host) == memory, host
            assert store.hosts() == len({count.host for count in counts})
        finally:
            store.close()

    check()


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
        exact = _exact([Count("h.example", first), Count("h.example", first, kept=True),
                        Count("h.example", second)])["h.example"]
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
        store.record([Count("h.example", (1, 2)), Count("h.example", (1, 2), kept=True),
                      Count("h.example", (2, 3))])
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
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
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


# -- expiry and the bound in Redis -------------------------------------------------------


@pytest.mark.redis
def test_redis_hosts_expire_by_the_clock_and_stay_bounded(redis_url: str, clock: Clock) -> None:
    ttl = 1000
    store = RedisTemplateStore(redis_url, "bound", ttl_secs=ttl, max_hosts=3, clock=clock)
    try:
        for n in range(5):  # two pages each: counters of its own, for the first three only
            store.record([Count(f"big{n}.example", (n,)), Count(f"big{n}.example", (n, 99))])
        store.record([Count("small.example", (7,))])
        assert [store.read(f"big{n}.example").seen_pages for n in range(5)] == [2, 2, 2, 1, 1]
        assert store.hosts() == 3 + 2 + 1  # three with counters, three small records
        clock.now += ttl + 1  # the counters' hosts have expired; small records live on
        assert store.read("small.example").seen_pages == 1
        store.record([Count("big3.example", (3,))])  # room again: its own counters
        assert store.read("big3.example").seen_pages == 2
        clock.now += 2 * ttl
        assert store.read("small.example") == EMPTY
        assert store.hosts() == 0  # big3's last page is 2 x ttl old too (Redis expires
        # its key by its own clock, ttl after that page: client.ttl, tested above)
    finally:
        store.close()


@pytest.mark.redis
def test_a_host_memory_without_ttl_expires_after_the_default(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = open_template_store(redis_url, "forever")
    try:
        store.see("h.example", [1])
        store.see("h.example", [2])
        assert DEFAULT_TTL_SECS - 60 < client.ttl("simhash:{forever}:tp:h.example") <= (
            DEFAULT_TTL_SECS)
    finally:
        client.close()
        store.close()


@pytest.mark.redis
def test_reset_of_a_glob_namespace_leaves_the_others_hosts(redis_url: str) -> None:
    """Hosts of one page (small records) and of two (counters) of namespaces a glob of
    the reset one matches are left; the reset one's are all gone."""
    names = ["sh?p", "shop", "sh*", "sh[o]p", "s"]
    for name in names:
        store = open_template_store(redis_url, name)
        store.see("one.example", [1])
        store.see("two.example", [1])
        store.see("two.example", [2])
        store.close()
    reset_namespace(redis_url, "sh?p")
    for name in names:
        store = open_template_store(redis_url, name)
        assert store.hosts() == (0 if name == "sh?p" else 2), name
        store.close()
    keys = redis.Redis.from_url(redis_url).keys(glob_escape("simhash:{sh?p}:") + "*")
    assert [k for k in keys if b":tp" in k] == []
    assert redis.Redis.from_url(redis_url).exists("simhash:{shop}:tph")


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
            lambda: open_template_store(redis_url, "writes"), fingerprinter,
            count=errors.append, timeout_secs=5.0,
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
            lambda: open_template_store(url, "ns"), fingerprinter,
            count=errors.append, timeout_secs=5.0,
        )
        page = fingerprinter.fingerprint_page(_page(1).encode())
        same = await memory.apply("http://news.example/1", page) is page
        await memory.see("http://news.example/1", page)
        await memory.learn("http://news.example/1", page)
        await memory.aclose()
        return same

    assert asyncio.run(crawl())
    assert set(errors) == {"template/error"}
