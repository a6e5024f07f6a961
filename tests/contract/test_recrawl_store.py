"""The recrawl store contract, identical on every backend, through the blocking and the
asyncio facade."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
from scrapy_simhash.recrawl import (
    PageState,
    RecrawlConfig,
    RecrawlStore,
    open_async_recrawl_store,
    open_recrawl_store,
)
from scrapy_simhash.recrawl.packing import quantize_interval
from scrapy_simhash.recrawl.redisstore import AsyncShardedRedisBackend, stored_shards
from tests.conftest import MODES, Clock, backend_params, backend_url
from tests.index_helpers import Blocking
from tests.redis_servers import RedisServer

HOUR = 3600.0
DAY = 86400.0
A = 0x0123_4567_89AB_CDEF
B = A ^ 0xFFFF_0000_0000_0000  # 16 bits away from A
A_TRIVIAL = A ^ 0b101  # 2 bits away: a timestamp changed


@pytest.fixture(params=backend_params())
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    url = backend_url(kind, request, tmp_path)
    if kind == "sharded":
        # The namespaces these tests use, spread over the six masters (as a crawl with
        # SIMHASH_INDEX_SHARDS=6 creates them); every open then finds them sharded.
        for namespace in ("t", "b", "n1", "n2", "keep", "exp", "default"):
            assert stored_shards(url, namespace, 6) == 6
    return url


@pytest.fixture(params=MODES)
def open_store(request: pytest.FixtureRequest, store_url: str) -> Callable[..., RecrawlStore]:
    """Open a store at ``store_url`` through the blocking facade or the asyncio one (driven
    from a private event loop): the same test body checks both."""

    def open_(**kwargs: Any) -> RecrawlStore:
        if request.param == "async":
            return cast(
                RecrawlStore, Blocking(lambda: open_async_recrawl_store(store_url, **kwargs))
            )
        return open_recrawl_store(store_url, **kwargs)

    return open_


@pytest.fixture
def store(open_store: Callable[..., RecrawlStore], clock: Clock) -> Iterator[RecrawlStore]:
    with open_store(namespace="t", config=RecrawlConfig(), clock=clock) as s:
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
    for ago, url in ((60, "a"), (50, "b"), (40, "c")):
        assert store.add([url], due=clock.now - ago) == 1
    assert store.add(["a", "d"], due=clock.now + DAY) == 1  # "a" keeps its place
    first = store.claim_due(2, lease_secs=600)
    assert [d.url for d in first] == ["a", "b"]
    assert [d.url for d in store.claim_due(10, lease_secs=600)] == ["c"]
    assert store.claim_due(10) == []  # everything due is leased
    clock.now += 601
    assert sorted(d.url for d in store.claim_due(10, lease_secs=600)) == ["a", "b", "c"]


def test_urls_due_at_one_time_are_each_handed_out_once(store: RecrawlStore, clock: Clock) -> None:
    """Seeds added together share their due time: claims hand each out exactly once,
    in the store's fixed order of ties, and the earliest before any of them."""
    urls = [f"https://seed.test/{n}" for n in range(300)]
    assert store.add(urls) == 300
    store.add(["https://seed.test/early"], due=clock.now - 1)
    looked = [d.url for d in store.due(limit=7)]
    claimed = [d.url for d in store.claim_due(7, lease_secs=600)]
    assert claimed == looked
    assert claimed[0] == "https://seed.test/early"
    while batch := store.claim_due(50, lease_secs=600):
        claimed += [d.url for d in batch]
    assert sorted(claimed) == sorted([*urls, "https://seed.test/early"])
    assert store.due(limit=1000) == []  # every one leased
    clock.now += 601
    assert sorted(d.url for d in store.claim_due(1000)) == sorted(claimed)


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


def test_budget_policy_spends_the_budget(
    open_store: Callable[..., RecrawlStore], clock: Clock
) -> None:
    config = RecrawlConfig(budget_per_day=40, rebalance_secs=0, max_interval_secs=365 * DAY)
    with open_store(namespace="b", config=config, clock=clock) as store:
        store.clear()
        visits = {f"p{i}": store.observe(f"p{i}", A) for i in range(10)}
        visits = {url: store.observe(url, A) for url in visits}
        per_day = sum(DAY / v.interval_secs for v in visits.values())
    # Ten pages at the prior rate share 40 fetches a day: about 4 each.
    assert per_day == pytest.approx(40, rel=0.1)


def test_async_store_matches_sync_contract(store_url: str, clock: Clock) -> None:
    async def scenario() -> list[object]:
        store = await open_async_recrawl_store(
            store_url, namespace="async", config=RecrawlConfig(), clock=clock
        )
        try:
            await store.clear()
            first = await store.observe("u", A, etag="e")
            clock.now += HOUR
            second = await store.observe("u", B)
            await store.add(["v"])
            claimed = await store.claim_due(5)
            return [
                first.changed,
                second.changed,
                await store.count(),
                [d.url for d in claimed],
                (await store.get("u")).etag,
            ]  # type: ignore[union-attr]
        finally:
            await store.close()

    assert asyncio.run(scenario()) == [None, True, 2, ["v"], "e"]


def test_namespaces_are_separate(
    store_url: str, open_store: Callable[..., RecrawlStore], clock: Clock
) -> None:
    with (
        open_store(namespace="n1", clock=clock) as one,
        open_store(namespace="n2", clock=clock) as two,
    ):
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


def test_not_found_backs_off_then_retires_and_a_success_revives(
    store: RecrawlStore, clock: Clock
) -> None:
    store.observe("u", A)
    outcomes = []
    for _ in range(3):
        clock.now += DAY
        outcomes.append(store.observe("u", None, status=404))
    assert [v.outcome for v in outcomes] == ["missing", "missing", "retired"]
    # Each miss waits twice as long (SIMHASH_RECRAWL_ERROR_RETRY_SECS doubling).
    assert outcomes[1].interval_secs == 2 * outcomes[0].interval_secs == 2 * HOUR
    state = store.get("u")
    assert state is not None
    assert (state.retired, state.misses, state.status, state.rate) == (True, 3, 404, 0.0)
    assert state.fingerprint == A  # the last known version is kept
    assert store.due(within=1e12) == []  # never handed out again
    clock.now += DAY
    back = store.observe("u", A)
    assert back.outcome == "fetched"
    assert back.changed is False  # compared with the version before the misses
    state = store.get("u")
    assert state is not None
    assert (state.retired, state.misses, state.failures) == (False, 0, 0)
    assert [d.url for d in store.due(within=back.interval_secs + 1)] == ["u"]


def test_server_errors_and_failed_downloads_back_off_without_touching_history(
    store: RecrawlStore, clock: Clock
) -> None:
    store.observe("u", A)
    clock.now += HOUR
    store.observe("u", B)
    before = store.get("u")
    assert before is not None
    waits = []
    for status in (503, 0, 500, 500):  # 0: the download failed (timeout, DNS, reset)
        clock.now += HOUR
        visit = store.observe("u", None, status=status)
        assert (visit.outcome, visit.changed) == ("failed", None)
        waits.append(visit.interval_secs)
    assert waits == [HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR]
    state = store.get("u")
    assert state is not None
    assert (state.history, state.rate, state.changes) == (before.history, before.rate, 1)
    assert (state.failures, state.misses, state.retired, state.status) == (4, 0, False, 500)
    assert [d.url for d in store.due(within=8 * HOUR)] == ["u"]
    clock.now += 8 * HOUR
    ok = store.observe("u", B)
    assert ok.changed is False
    state = store.get("u")
    assert state is not None
    assert state.failures == 0
    # The gap since the last comparison is one observation, errors in between or not.
    assert state.history[-1] == (quantize_interval(12 * HOUR), False)


def test_misses_never_retire_when_retirement_is_off(
    open_store: Callable[..., RecrawlStore], clock: Clock
) -> None:
    config = RecrawlConfig(retire_after_misses=0, max_interval_secs=4 * HOUR)
    with open_store(namespace="keep", config=config, clock=clock) as store:
        store.clear()
        visits = [store.observe("u", None, status=410) for _ in range(5)]
    assert {v.outcome for v in visits} == {"missing"}
    assert visits[-1].interval_secs == 4 * HOUR  # the backoff stops at the largest interval


def test_urls_not_fetched_for_the_expiry_are_forgotten_when_due(
    open_store: Callable[..., RecrawlStore], clock: Clock
) -> None:
    config = RecrawlConfig(expire_after_secs=10 * DAY, retire_after_misses=1)
    with open_store(namespace="exp", config=config, clock=clock) as store:
        store.clear()
        store.add(["seed"])
        store.observe("fresh", A)
        store.observe("gone", None, status=410)  # retired at once: due when it expires
        clock.now += 11 * DAY
        store.observe("fresh", A)
        claimed = store.claim_due(10, within=30 * DAY)
        assert [d.url for d in claimed] == ["fresh"]
        assert (store.get("seed"), store.get("gone")) == (None, None)
        assert len(store) == 1


@pytest.mark.cluster
def test_sharded_recrawl_state_spreads_and_refuses_another_count(
    redis_cluster6_url: str, redis_cluster6_servers: list[RedisServer], clock: Clock
) -> None:
    """URLs spread over the six masters; claims take the earliest due across shards; the
    budget histogram is the sum; a different shard count refuses to open."""
    config = RecrawlConfig(shards=6)
    urls = [f"http://x/{i}" for i in range(60)]
    with open_recrawl_store(
        redis_cluster6_url, namespace="spread", config=config, clock=clock
    ) as store:
        for i, url in enumerate(urls):
            assert store.add([url], due=clock.now - 1000 + i) == 1
        assert store.count() == 60
        claimed = store.claim_due(10, lease_secs=600)
        assert [d.url for d in claimed] == urls[:10]
        # The budget policy's histogram is the sum over shards: as one store counts it.
        one = open_recrawl_store("memory://", clock=clock)
        for step, fingerprint in enumerate((A, B, A)):
            clock.now += 3600 * (step + 1)
            for url in urls[10:30]:
                one.observe(url, fingerprint)
                store.observe(url, fingerprint)
        histogram = store.rate_histogram()
        assert histogram == one.rate_histogram()
        assert sum(histogram.values()) == 20
        one.close()
    holding = 0
    for server in redis_cluster6_servers:
        client = redis.Redis(port=server.port)
        holding += any(client.scan_iter(match=b"simhash:recrawl:{spread:*:b*"))
        client.close()
    assert holding == 6
    with pytest.raises(ConfigurationError, match="spread over 6 shard"):
        open_recrawl_store(redis_cluster6_url, namespace="spread", config=RecrawlConfig(shards=3))


def test_recrawl_state_of_another_format_is_refused_with_the_way_out(redis_url: str) -> None:
    """A later version records another format: never misread, the store refuses with the
    reset command, and a reset lets it start afresh. (0.2.0's layout: test_old_state.)"""
    client = redis.Redis.from_url(redis_url)
    client.hset("simhash:recrawl:{old}:m", "format", b"4")
    store = open_recrawl_store(redis_url, namespace="old")
    with pytest.raises(ConfigurationError, match=r"scrapy simhash reset --namespace old"):
        store.count()
    with pytest.raises(ConfigurationError, match="was written in format 4"):
        store.observe("https://a.test/", A)
    store.clear()
    assert store.count() == 0
    store.observe("https://a.test/", A)
    assert store.get("https://a.test/") is not None
    assert client.hget("simhash:recrawl:{old}:m", "format") == b"3"
    store.close()
    client.close()


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 40), st.sampled_from([0.0, 5.0, 9.0, 20.0])),
        st.tuples(st.just("remove"), st.integers(0, 40), st.just(0.0)),
        st.tuples(st.just("claim"), st.integers(1, 12), st.sampled_from([5.0, 10.0, 30.0])),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(ops=_OPS)
def test_buckets_hand_out_as_one_sorted_queue(redis_server_url: str, ops: list[Any]) -> None:
    """With few buckets (many URLs each, removals moving the last slot), claims are exactly
    those of one queue sorted by (queue time, URL id), and leases move URLs back in it."""
    from scrapy_simhash.recrawl.redisstore import RedisBackend, url_id

    client = redis.Redis.from_url(redis_server_url)
    for key in client.scan_iter(match="simhash:recrawl:{prop}:*"):
        client.delete(key)
    client.close()
    backend = RedisBackend(redis_server_url, "prop", bits=2)
    queue: dict[str, float] = {}
    try:
        for op, n, at in ops:
            if op == "add":  # a batch of four, as seeds come
                urls = [f"https://p.test/{m}" for m in range(n, n + 4)]
                added = backend.add(
                    [PageState(url=u, next_due=at, visits=m) for m, u in enumerate(urls, n)]
                )
                assert added == sum(u not in queue for u in urls)
                for url in urls:
                    queue.setdefault(url, at)
            elif op == "remove":
                url = f"https://p.test/{n}"
                assert backend.remove(url) == (url in queue)
                queue.pop(url, None)
            else:
                expected = sorted((q, url_id(u), u) for u, q in queue.items() if q <= at)[:n]
                claimed = backend.claim(at, n, at + 7.0)
                assert [(s.url, q) for s, q in claimed] == [(u, q) for q, _, u in expected]
                for _, _, u in expected:
                    queue[u] = at + 7.0
            assert backend.count() == len(queue)
        for url in queue:
            state = backend.get(url)
            assert state is not None
            assert state.visits == int(url.rsplit("/", 1)[1])
        assert sorted(s.url for s, _ in backend.due(1e9, 100)) == sorted(queue)
    finally:
        backend.clear()
        backend.close()


def test_a_namespace_keeps_the_bucket_count_it_was_created_with(redis_url: str) -> None:
    """Buckets are sized by SIMHASH_INDEX_EXPECTED_PAGES when a namespace is created;
    a later process with another size reads the recorded count and finds every URL."""
    small = open_recrawl_store(
        redis_url, namespace="sized", config=RecrawlConfig(expected_pages=1000)
    )
    small.add([f"https://s.test/{n}" for n in range(200)])
    client = redis.Redis.from_url(redis_url)
    assert client.hget("simhash:recrawl:{sized}:m", "bits") == b"4"
    assert client.zcard("simhash:recrawl:{sized}:due") == 16
    large = open_recrawl_store(
        redis_url, namespace="sized", config=RecrawlConfig(expected_pages=10_000_000)
    )
    assert large.count() == 200
    assert all(large.get(f"https://s.test/{n}") is not None for n in range(200))
    assert large.remove("https://s.test/7")
    assert small.count() == 199
    client.close()
    small.close()
    large.close()


def test_a_claim_across_more_buckets_than_one_call_takes_keeps_every_bucket_in_place(
    redis_url: str,
) -> None:
    """A claim that leases URLs of over 500 buckets moves them in the due set in several
    calls (Lua's argument limit); every bucket must still be found at its new time."""
    from scrapy_simhash.recrawl.redisstore import RedisBackend

    backend = RedisBackend(redis_url, "wide")
    urls = [f"https://w.test/{n}" for n in range(1500)]
    assert backend.add([PageState(url=u, next_due=0.0) for u in urls]) == 1500
    first = backend.claim(1.0, 1200, 100.0)
    rest = backend.claim(1.0, 1200, 100.0)
    assert len(first) == 1200
    assert sorted(s.url for s, _ in first + rest) == sorted(urls)
    assert backend.claim(1.0, 10, 100.0) == []
    assert len(backend.claim(100.0, 2000, 200.0)) == 1500
    backend.clear()
    backend.close()


@pytest.mark.cluster
def test_sharded_asyncio_store_reads_each_shards_layout_alone_before_asking_them_at_once(
    redis_cluster6_url: str,
) -> None:
    """A new cluster client's first commands, sent to several masters at once, lost a
    connection in redis-py now and then (``'NoneType' object has no attribute
    'writelines'``): the shards' layouts are read one after another before the shards are
    asked anything together."""
    assert stored_shards(redis_cluster6_url, "alone", 6) == 6
    backend = AsyncShardedRedisBackend(redis_cluster6_url, "alone", 6)
    events: list[tuple[str, int]] = []
    for number, part in enumerate(backend._parts):
        check = part.check_format

        async def recorded(check: Any = check, number: int = number) -> None:
            events.append(("start", number))
            await asyncio.sleep(0)  # a chance for another check to start, were they parallel
            await check()
            events.append(("end", number))

        part.check_format = recorded  # type: ignore[method-assign]

    async def scenario() -> int:
        try:
            states = [PageState(url=f"https://seed.test/{n}", next_due=1.0) for n in range(60)]
            return await backend.add(states)
        finally:
            await backend.close()

    assert asyncio.run(scenario()) == 60
    # Each check begins after the one before has ended (the parts check again, at once,
    # when asked: a layout once read is not read again).
    assert events[:12] == [(kind, n) for n in range(6) for kind in ("start", "end")]
