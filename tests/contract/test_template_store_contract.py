"""One template store contract, every backend: memory, SQLite, Redis and Redis Cluster.

The judge reads a host's memory through :class:`~scrapy_simhash.template.store.
TemplateStore` whatever the storage, so every store must count pages the same way, bound
its hosts per namespace, forget only its own namespace and fail with the declared error.
Where a store differs by design (a Redis host of one page lives in a small record and
expires; memory and SQLite keep hosts for good) the test says so. Time moves by the
injected clock; nothing sleeps. What a host costs in each store is measured in
``tests/unit/test_template_store.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_simhash.exceptions import IndexBackendError, StorageLost
from scrapy_simhash.index.sqlite import sqlite_path
from scrapy_simhash.reset import reset_namespace
from scrapy_simhash.template import EMPTY, SLOTS, HostMemory
from scrapy_simhash.template.store import (
    MAX_HOSTS,
    Count,
    MemoryTemplateStore,
    RedisTemplateStore,
    SqliteTemplateStore,
    TemplateStore,
)
from tests.conftest import Clock, backend_params, backend_url

#: A namespace's template keys share its hash tag: index sharding does not spread them.
KINDS = ("memory", "sqlite", "redis", "cluster")
#: The stores whose hosts expire, and whose hosts of one page live in small records.
REDIS_KINDS = ("redis", "cluster")

Make = Callable[..., TemplateStore]
_namespaces = itertools.count()


def _opener(kind: str, url: str, opened: list[TemplateStore]) -> Make:
    """Open a store of ``kind`` at ``url``; a second one of a namespace is another process
    (memory: another, empty, store)."""

    def make(
        namespace: str = "ns",
        *,
        max_hosts: int = MAX_HOSTS,
        clock: Clock | None = None,
        ttl_secs: float | None = None,
    ) -> TemplateStore:
        store: TemplateStore
        if kind == "memory":  # one process, no expiry: the clock has nothing to move
            store = MemoryTemplateStore(max_hosts)
        elif kind == "sqlite":
            store = SqliteTemplateStore(sqlite_path(url), namespace, max_hosts=max_hosts)
        else:
            extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
            store = RedisTemplateStore(
                url, namespace, max_hosts=max_hosts, ttl_secs=ttl_secs, **extra
            )
        opened.append(store)
        return store

    make.kind = kind  # type: ignore[attr-defined]
    make.url = url  # type: ignore[attr-defined]
    return make


def _opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    opened: list[TemplateStore] = []
    yield _opener(request.param, backend_url(request.param, request, tmp_path), opened)
    for store in opened:
        store.close()


@pytest.fixture(params=backend_params(KINDS))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    yield from _opened(request, tmp_path)


@pytest.fixture(params=backend_params(REDIS_KINDS))
def make_expiring(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    yield from _opened(request, tmp_path)


def _exact(counts: list[Count]) -> dict[str, HostMemory]:
    """What the counts make of each host, counted one by one in the pure core."""
    hosts: dict[str, HostMemory] = {}
    for count in counts:
        hosts[count.host] = count.apply(hosts.get(count.host, EMPTY))
    return hosts


def _redis(make: Make) -> bool:
    return make.kind in REDIS_KINDS  # type: ignore[attr-defined]


#: Pages of at most 20 lines: a Redis small record holds every line of such a page.
_pages = st.lists(
    st.tuples(
        st.sampled_from(["a.example", "b.example", "c.example:8080"]),
        st.lists(st.integers(0, SLOTS - 1), min_size=1, max_size=20),
        st.booleans(),
    ),
    max_size=12,
)


def test_a_batch_counts_what_each_page_alone_counts(make: Make) -> None:
    """Pages recorded in batches of any size read as the pure core counts them one by one
    (in Redis: hosts of one page in small records, then their own counters)."""

    @settings(max_examples=25, suppress_health_check=list(HealthCheck))
    @given(pages=_pages, split=st.integers(1, 4))
    def check(pages: list[tuple[str, list[int], bool]], split: int) -> None:
        counts = [Count(host, tuple(slots), kept) for host, slots, kept in pages]
        store = make(f"batch{next(_namespaces)}")
        for at in range(0, len(counts), split):
            store.record(counts[at : at + split])
        for host, memory in _exact(counts).items():
            assert store.read(host) == memory, host
        assert store.hosts() == len({count.host for count in counts})

    check()


def test_a_host_of_one_page_and_a_host_of_many_read_back_alike(make: Make) -> None:
    """see() and learn() count the seen and the kept part; a host of one page reads as
    fully as a host of many (its page short enough for a small record in Redis), another
    process of the namespace reads the same, and a host never recorded reads empty."""
    store = make()
    counts = [Count("one.example", (1, 2, 3)), Count("one.example", (1, 2, 3), kept=True)]
    store.see("one.example", [1, 2, 3])
    store.learn("one.example", [3, 2, 1])
    for n in range(4):
        counts += [Count("many.example", (5, 10 + n)), Count("many.example", (5, 10 + n), True)]
        store.see("many.example", [5, 10 + n])
        store.learn("many.example", [5, 10 + n])
    exact = _exact(counts)
    for host in ("one.example", "many.example"):
        assert store.read(host) == exact[host], host
    assert (store.read("one.example").seen_pages, store.read("many.example").pages) == (1, 4)
    assert 5 in store.read("many.example").template()
    assert store.read("never.example") == EMPTY
    assert store.hosts() == 2
    if make.kind != "memory":  # type: ignore[attr-defined]
        other_process = make()
        assert other_process.read("one.example") == exact["one.example"]
        assert other_process.read("many.example") == exact["many.example"]
        other_process.see("one.example", [4])  # its second page, written elsewhere
        assert store.read("one.example").seen_pages == 2
        assert store.hosts() == 2


def test_hosts_with_counters_of_their_own_are_bounded_per_namespace(make: Make) -> None:
    """Beyond ``max_hosts`` a new host's pages are not counted (Redis: only its first, in a
    small record), while a host within the bound goes on being counted; another namespace
    has a bound of its own."""
    store, other = make(max_hosts=3), make("other", max_hosts=3)
    for namespace in (store, other):
        for n in range(5):  # two pages each
            namespace.record([Count(f"big{n}.example", (n,)), Count(f"big{n}.example", (n, 99))])
    beyond = 1 if _redis(make) else 0
    for namespace in (store, other):
        pages = [namespace.read(f"big{n}.example").seen_pages for n in range(5)]
        assert pages == [2, 2, 2, beyond, beyond]
        assert namespace.hosts() == 3 + 2 * beyond
    store.see("big0.example", [7])
    assert store.read("big0.example").seen_pages == 3
    assert store.read("big0.example").seen[7] == 1
    store.learn("late.example", [1])
    assert store.read("late.example").pages == beyond


def test_hosts_expire_by_the_clock_and_the_bound_frees(make_expiring: Make, clock: Clock) -> None:
    """Redis: a host's counters expire ``ttl_secs`` after its last page, freeing room in
    the bound; a small record lives one to two ``ttl_secs``. (Memory and SQLite keep hosts
    for good: they take no clock.)"""
    ttl = 1000
    store = make_expiring(max_hosts=3, clock=clock, ttl_secs=ttl)
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
    # its key by its own clock, ttl after that page: test_template_store.py reads its TTL)


#: Namespaces a glob of the first one matches, or that share its prefix.
_NAMES = ("sh?p", "shop", "sh*", "sh[o]p", "s", "sh?p2")


def test_clear_and_reset_touch_only_their_namespace(make: Make) -> None:
    """clear() and ``scrapy simhash reset`` forget one namespace's hosts, of one page and
    of more, and none of another's, whatever the name's glob or prefix matches."""
    stores = {name: make(name) for name in _NAMES}
    for store in stores.values():
        store.see("one.example", [1])
        store.see("two.example", [1])
        store.see("two.example", [2])
    assert stores["shop"].clear() == 2
    assert stores["shop"].read("two.example") == EMPTY
    if make.kind == "memory":  # type: ignore[attr-defined]
        # memory:// lives in one store object: a reset opens another, empty, one.
        assert stores["sh?p"].clear() == 2
    else:
        cleared = reset_namespace(make.url, "sh?p")  # type: ignore[attr-defined]
        assert [str(item) for item in cleared if item.what == "host templates"] == [
            "2 host templates"
        ]
    for name, store in stores.items():
        gone = name in ("shop", "sh?p")
        assert store.hosts() == (0 if gone else 2), name
        assert store.read("two.example").seen_pages == (0 if gone else 2), name
        assert store.read("one.example").seen_pages == (0 if gone else 1), name
    stores["shop"].see("one.example", [1])  # a cleared namespace learns again
    assert stores["shop"].hosts() == 1


@pytest.mark.parametrize("kind", backend_params(["sqlite", "redis"]))
def test_a_store_whose_backend_is_gone_raises_its_declared_error(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Every call of a store whose storage went away raises IndexBackendError (what the
    guard counts), never the backend's own error. SQLite: the file deleted under the
    crawl is StorageLost (SQLite would go on writing to a file no one opens again), for
    good; Redis: an outage, and once the server is back the same store works again. (A
    cluster's servers are the session's and stay up; a Redis Cluster URL on a plain server
    is tested in test_template_store.py.)"""
    store: TemplateStore
    if kind == "sqlite":
        path = tmp_path / "gone.sqlite3"
        store = SqliteTemplateStore(str(path), "gone")
    else:
        server = request.getfixturevalue("own_redis")
        store = RedisTemplateStore(server.url, "gone")
    try:
        store.see("h.example", [1])
        if kind == "sqlite":
            for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                name.unlink(missing_ok=True)
        else:
            server.stop()
        calls: list[Callable[[], object]] = [
            lambda: store.read("h.example"),
            lambda: store.see("h.example", [2]),
            lambda: store.learn("h.example", [2]),
            lambda: store.record([Count("h.example", (3,))]),
            store.hosts,
            store.clear,
        ]
        for call in calls:
            with pytest.raises(IndexBackendError) as raised:
                call()
            if kind == "sqlite":
                assert isinstance(raised.value, StorageLost)
                assert "deleted or moved" in str(raised.value)
            else:
                assert "Redis template store" in str(raised.value)
        if kind == "redis":
            server.start()
            store.see("h.example", [2])  # the server came back empty (it saves nothing)
            assert store.read("h.example").seen_pages == 1
    finally:
        store.close()
