"""The recrawl store contract, identical on memory, SQLite, Redis and Redis Cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
from scrapy_simhash.recrawl import (
    RecrawlConfig,
    RecrawlStore,
    open_async_recrawl_store,
    open_recrawl_store,
)
from tests.redis_servers import RedisServer

HOUR = 3600.0
DAY = 86400.0
A = 0x0123_4567_89AB_CDEF
B = A ^ 0xFFFF_0000_0000_0000  # 16 bits away from A
A_TRIVIAL = A ^ 0b101  # 2 bits away: a timestamp changed


class Clock:
    """A settable clock: the store reads time only through it."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis),
                        pytest.param("cluster", marks=pytest.mark.cluster)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    if kind == "redis":
        return str(request.getfixturevalue("redis_url"))
    return str(request.getfixturevalue("redis_cluster_url"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(store_url: str, clock: Clock) -> Iterator[RecrawlStore]:
    with open_recrawl_store(store_url, namespace="t", config=RecrawlConfig(), clock=clock) as s:
        yield s


def test_first_visit_records_page_without_comparison(store: RecrawlStore, clock: Clock) -> None:
    visit = store.observe("http://x/a", A, etag='"v1"', last_modified="Mon, 01 Jan 2024")
    assert visit.changed is None
    assert visit.distance is None
    assert visit.visits == 1
    assert visit.next_due == pytest.approx(clock.now + visit.interval_secs)
    state = store.get("http://x/a")
    assert state is not None
    assert state.fingerprint == A
    assert state.etag == '"v1"'
    assert state.last_modified == "Mon, 01 Jan 2024"
    assert len(store) == 1


def test_change_is_a_distance_above_the_threshold(store: RecrawlStore, clock: Clock) -> None:
    store.observe("u", A)
    clock.now += HOUR
    trivial = store.observe("u", A_TRIVIAL)
    assert (trivial.changed, trivial.distance) == (False, 2)
    clock.now += HOUR
    real = store.observe("u", B)
    assert real.changed is True
    assert real.distance == (A_TRIVIAL ^ B).bit_count()
    assert real.changes == 1
    assert real.previous_fingerprint == A_TRIVIAL


def test_not_modified_counts_as_unchanged_and_keeps_validators(
    store: RecrawlStore, clock: Clock
) -> None:
    store.observe("u", A, etag='"v1"')
    clock.now += HOUR
    visit = store.observe("u", None, status=304)
    assert visit.changed is False
    state = store.get("u")
    assert state is not None
    assert (state.fingerprint, state.etag, state.status) == (A, '"v1"', 304)
    assert state.history == ((HOUR, False),)


def test_page_without_fingerprint_compares_nothing(store: RecrawlStore, clock: Clock) -> None:
    store.observe("u", A)
    clock.now += HOUR
    empty = store.observe("u", None)
    assert (empty.changed, empty.distance, empty.visits) == (None, None, 2)
    clock.now += HOUR
    later = store.observe("u", B)
    assert later.changed is True
    state = store.get("u")
    assert state is not None
    assert state.history == ((2 * HOUR, True),)  # measured from the last comparable fetch


def test_changing_page_gets_shorter_intervals_than_static_one(
    store: RecrawlStore, clock: Clock
) -> None:
    static = store.observe("static", A)
    busy = store.observe("busy", A)
    assert static.interval_secs == busy.interval_secs  # both start from the prior
    for i in range(6):
        clock.now += 6 * HOUR
        static = store.observe("static", A)
        busy = store.observe("busy", B if i % 2 == 0 else A)
    assert busy.interval_secs < static.interval_secs
    assert busy.rate_per_day > 1.0 > static.rate_per_day


def test_claim_leases_due_urls_and_lease_expiry_returns_them(
    store: RecrawlStore, clock: Clock
) -> None:
    assert store.add(["a", "b", "c"]) == 3
    assert store.add(["a", "d"], due=clock.now + DAY) == 1  # "a" keeps its place
    first = store.claim_due(2, lease_secs=600)
    assert [d.url for d in first] == ["a", "b"]
    assert [d.url for d in store.claim_due(10, lease_secs=600)] == ["c"]
    assert store.claim_due(10) == []  # everything due is leased
    clock.now += 601
    assert sorted(d.url for d in store.claim_due(10, lease_secs=600)) == ["a", "b", "c"]


def test_observe_completes_a_lease(store: RecrawlStore, clock: Clock) -> None:
    store.add(["a"])
    [due] = store.claim_due(1, lease_secs=60)
    visit = store.observe(due.url, A, etag="e1")
    clock.now += 61  # the lease would have expired, but the fetch completed
    assert store.claim_due(1) == []
    clock.now = visit.next_due
    [again] = store.claim_due(1)
    assert (again.url, again.etag, again.visits) == ("a", "e1", 1)


def test_due_lists_without_leasing(store: RecrawlStore, clock: Clock) -> None:
    store.add(["a"], due=clock.now + 50)
    store.add(["b"], due=clock.now + 5000)
    assert store.due() == []
    assert [d.url for d in store.due(within=100)] == ["a"]
    assert [d.url for d in store.due(within=10_000)] == ["a", "b"]
    assert [d.url for d in store.due(within=10_000)] == ["a", "b"]


def test_remove_and_clear(store: RecrawlStore) -> None:
    store.observe("a", A)
    store.observe("b", A)
    assert store.remove("a") is True
    assert store.remove("a") is False
    assert store.get("a") is None
    assert len(store) == 1
    store.clear()
    assert len(store) == 0
    assert store.due(within=1e9) == []


def test_budget_policy_spends_the_budget(store_url: str, clock: Clock) -> None:
    config = RecrawlConfig(budget_per_day=40, rebalance_secs=0, max_interval_secs=365 * DAY)
    with open_recrawl_store(store_url, namespace="b", config=config, clock=clock) as store:
        store.clear()
        visits = {f"p{i}": store.observe(f"p{i}", A) for i in range(10)}
        visits = {url: store.observe(url, A) for url in visits}
        per_day = sum(DAY / v.interval_secs for v in visits.values())
    # Ten pages at the prior rate share 40 fetches a day: about 4 each.
    assert per_day == pytest.approx(40, rel=0.1)


def test_async_store_matches_sync_contract(store_url: str, clock: Clock) -> None:
    async def scenario() -> list[object]:
        store = open_async_recrawl_store(
            store_url, namespace="async", config=RecrawlConfig(), clock=clock
        )
        try:
            await store.clear()
            first = await store.observe("u", A, etag="e")
            clock.now += HOUR
            second = await store.observe("u", B)
            await store.add(["v"])
            claimed = await store.claim_due(5)
            return [first.changed, second.changed, await store.count(),
                    [d.url for d in claimed], (await store.get("u")).etag]  # type: ignore[union-attr]
        finally:
            await store.close()

    assert asyncio.run(scenario()) == [None, True, 2, ["v"], "e"]


def test_namespaces_are_separate(store_url: str, clock: Clock) -> None:
    with open_recrawl_store(store_url, namespace="n1", clock=clock) as one, \
            open_recrawl_store(store_url, namespace="n2", clock=clock) as two:
        one.observe("u", A)
        assert two.get("u") is None
        if not store_url.startswith("memory"):  # memory stores are private to one object
            assert len(one) == 1


def test_sqlite_state_survives_reopening(tmp_path: Path, clock: Clock) -> None:
    url = f"sqlite:///{tmp_path / 'deep' / 'dir' / 'index.sqlite3'}"
    with open_recrawl_store(url, clock=clock) as store:
        store.observe("u", A)
    with open_recrawl_store(url, clock=clock) as store:
        state = store.get("u")
    assert state is not None
    assert state.fingerprint == A


def test_unknown_scheme_says_what_to_use() -> None:
    with pytest.raises(ConfigurationError, match="sqlite"):
        open_recrawl_store("ftp://user:secret@host/x")


def test_unreachable_redis_raises_backend_error_without_password(own_redis: RedisServer) -> None:
    url = f"redis://:hunter2@127.0.0.1:{own_redis.port}/0"
    own_redis.stop()
    store = open_recrawl_store(url)
    with pytest.raises(IndexBackendError) as info:
        store.observe("u", A)
    assert "hunter2" not in str(info.value)
    assert "***" in str(info.value)


def test_redis_outage_then_recovery(own_redis: RedisServer, clock: Clock) -> None:
    store = open_recrawl_store(own_redis.url, clock=clock)
    store.observe("u", A)
    own_redis.stop()
    with pytest.raises(IndexBackendError):
        store.claim_due(1)
    own_redis.start()  # no persistence: the server comes back empty
    assert store.observe("u", A).visits == 1
    store.close()
