"""One store shape: every Redis store says a failing cluster the same way, the recrawl
clients are made with the index's client options, and the asyncio recrawl store offers
what its blocking twin does."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from scrapy_simhash.dust import open_rule_store
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
from scrapy_simhash.glue.wiring import check_recrawl_store
from scrapy_simhash.index.redis.connection import DEFAULT_MAX_CONNECTIONS
from scrapy_simhash.recrawl import (
    AsyncRecrawlStore,
    RecrawlConfig,
    RecrawlStore,
    open_async_recrawl_store,
    open_recrawl_store,
)
from tests.conftest import MODES, Clock, backend_params, backend_url
from tests.index_helpers import Blocking
from tests.redis_servers import free_port
from tests.scrapy_inprocess import HARBOUR, harness, story

A = 0x0123_4567_89AB_CDEF
B = A ^ 0xFFFF_0000_0000_0000  # 16 bits away: a change


def _dead_cluster() -> str:
    """A cluster URL no server answers: redis-py raises RedisClusterException, which is
    not a RedisError."""
    return f"redis+cluster://:pw-s3cret@127.0.0.1:{free_port()}/0"


# -- a cluster that cannot be reached is a backend error, for every store ---------------------


def test_an_unreachable_cluster_is_a_backend_error_of_the_rule_store() -> None:
    url = _dead_cluster()
    with pytest.raises(IndexBackendError, match="Redis rule store") as caught:
        open_rule_store(url, "n")
    assert isinstance(caught.value.__cause__, redis.exceptions.RedisClusterException)
    assert "pw-s3cret" not in str(caught.value)


def _count(mode: str, url: str, **kwargs: Any) -> int:
    """Open the recrawl store at ``url`` through the ``mode`` face and count its URLs."""
    if mode == "async":
        with cast(RecrawlStore, Blocking(lambda: open_async_recrawl_store(url, **kwargs))) as s:
            return s.count()
    with open_recrawl_store(url, **kwargs) as store:
        return store.count()


@pytest.mark.parametrize("shards", [None, 1, 2], ids=["recorded", "one", "two"])
@pytest.mark.parametrize("mode", MODES)
def test_an_unreachable_cluster_is_a_backend_error_of_the_recrawl_store(
    mode: str, shards: int | None
) -> None:
    url = _dead_cluster()
    with pytest.raises(IndexBackendError, match="recrawl store") as caught:
        _count(mode, url, config=RecrawlConfig(shards=shards))
    assert isinstance(caught.value.__cause__, redis.exceptions.RedisClusterException)
    assert "pw-s3cret" not in str(caught.value)


# -- the recrawl clients take SIMHASH_INDEX_OPTIONS, checked as the index's -------------------


def _client_names(url: str) -> list[str]:
    """The names of the connections a Redis server holds, but this one's."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        own = client.client_id()
        return [c["name"] for c in client.client_list() if int(c["id"]) != own]
    finally:
        client.close()


@pytest.mark.parametrize("shards", [1, 2], ids=["one", "two"])
@pytest.mark.parametrize("mode", MODES)
def test_the_recrawl_clients_take_the_index_client_options(
    redis_url: str, mode: str, shards: int
) -> None:
    options = {"client_name": "recrawl-of-test"}
    config = RecrawlConfig(shards=shards)
    if mode == "async":
        with cast(
            RecrawlStore,
            Blocking(lambda: open_async_recrawl_store(redis_url, config=config, options=options)),
        ) as store:
            store.add(["http://x/a", "http://x/b"])
            assert store.count() == 2
            names = _client_names(redis_url)
    else:
        with open_recrawl_store(redis_url, config=config, options=options) as store:
            store.add(["http://x/a", "http://x/b"])
            assert store.count() == 2
            names = _client_names(redis_url)
    assert names
    assert set(names) == {"recrawl-of-test"}


@pytest.mark.parametrize("mode", MODES)
def test_a_recrawl_client_option_redis_does_not_take_refuses_the_open(mode: str) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # refused before any connection

    def opener(url: str, **kwargs: Any) -> Any:
        if mode == "async":
            return asyncio.run(open_async_recrawl_store(url, **kwargs))
        return open_recrawl_store(url, **kwargs)

    with pytest.raises(ConfigurationError, match="socket_timeot"):
        opener(url, options={"socket_timeot": 5})
    with pytest.raises(ConfigurationError, match="socket_timeout"):
        opener(url, options={"socket_timeout": "soon"})


def test_the_crawl_checks_its_recrawl_store_with_the_index_client_options() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(ConfigurationError, match="socket_timeot"):
        check_recrawl_store(url, "n", RecrawlConfig(), {"socket_timeot": 5})


# -- the two faces of the recrawl store cannot drift ------------------------------------------

#: What a blocking object spells one way and an asyncio one another.
_SPELLED = {"__enter__": "__aenter__", "__exit__": "__aexit__", "__len__": None}


def _surface(cls: type) -> dict[str, Any]:
    return {
        name: inspect.getattr_static(cls, name)
        for name in dir(cls)
        if not name.startswith("_") or name in (*_SPELLED, "__aenter__", "__aexit__")
    }


def test_the_asyncio_recrawl_store_has_the_blocking_store_public_surface() -> None:
    blocking, asynchronous = _surface(RecrawlStore), _surface(AsyncRecrawlStore)
    expected = {_SPELLED.get(name, name) for name in blocking} - {None}
    assert set(asynchronous) == expected
    for name, member in blocking.items():
        twin_name = _SPELLED.get(name, name)
        if twin_name is None or name.startswith("__"):
            continue
        twin = asynchronous[twin_name]
        if isinstance(member, property):
            assert isinstance(twin, property), name
            continue
        assert callable(member), name
        assert not inspect.iscoroutinefunction(member), name
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(member), name


@pytest.fixture(params=backend_params(["memory", "sqlite", "redis", "cluster"], modes=MODES))
def faces(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> Iterator[tuple[RecrawlStore, RecrawlStore]]:
    """A blocking store and one of the mode's face (asyncio driven from a private loop) on
    the same storage, each in a namespace of its own, with one clock."""
    kind, mode = request.param
    url = backend_url(kind, request, tmp_path)
    config = RecrawlConfig(min_interval_secs=60.0)
    blocking = open_recrawl_store(url, namespace="blocking", config=config, clock=clock)
    other: RecrawlStore
    if mode == "sync":
        other = open_recrawl_store(url, namespace="other", config=config, clock=clock)
    else:
        other = cast(
            RecrawlStore,
            Blocking(
                lambda: open_async_recrawl_store(url, namespace="other", config=config, clock=clock)
            ),
        )
    with blocking, other:
        yield blocking, other


def test_both_faces_answer_the_same_schedule_and_rates(
    faces: tuple[RecrawlStore, RecrawlStore], clock: Clock
) -> None:
    for step, fingerprint in enumerate((A, B, A, B)):
        for store in faces:
            store.observe("http://x/changing", fingerprint)
            store.observe("http://x/steady", A)
        clock.now += 3600.0 * (step + 1)
    for store in faces:
        store.add(["http://x/new"])
    blocking, other = faces
    assert (other.url, other.namespace) == (blocking.url, "other")
    assert blocking.namespace == "blocking"
    histogram = other.rate_histogram()
    assert histogram == blocking.rate_histogram()
    assert sum(histogram.values()) == 2  # the new page has no rate yet
    everything = other.scheduled(within=1e9)
    assert [(s.url, s.visits, due) for s, due in everything] == [
        (s.url, s.visits, due) for s, due in blocking.scheduled(within=1e9)
    ]
    assert sorted(state.url for state, _ in everything) == [
        "http://x/changing",
        "http://x/new",
        "http://x/steady",
    ]
    assert [state.url for state, _ in everything] == [d.url for d in other.due(within=1e9)]
    due_now = [state.url for state, due in everything if due <= clock.now]
    assert "http://x/new" in due_now
    assert len(due_now) < len(everything)
    assert [state.url for state, _ in other.scheduled()] == due_now
    assert other.scheduled(within=1e9, limit=1) == everything[:1]


def test_every_connection_of_a_crawl_carries_the_index_client_options(redis_url: str) -> None:
    """The middleware's index, recrawl schedule and template memory all connect with
    SIMHASH_INDEX_OPTIONS (a client name the server lists for each connection)."""
    options = {"client_name": "crawl-of-test"}
    with harness(SIMHASH_INDEX_URL=redis_url, SIMHASH_INDEX_OPTIONS=options) as crawl:
        crawl.fetch("http://x/harbour", story(HARBOUR))
        assert crawl.stat("unique") == 1
        names = _client_names(redis_url)
    assert names
    assert set(names) == {"crawl-of-test"}


def test_the_asyncio_recrawl_store_is_not_bounded_by_the_index_connection_count(
    redis_url: str,
) -> None:
    """The index bounds its connections (64) behind a batcher; the schedule has none, so its
    asyncio pool keeps redis-py's bound unless the options set one: more concurrent calls
    than the index's bound are not refused "Too many connections"."""
    calls = DEFAULT_MAX_CONNECTIONS + 16

    async def main() -> int:
        store = await open_async_recrawl_store(redis_url, namespace="many", options={})
        try:
            assert await store.count() == 0  # the namespace's layout recorded, as at a start
            await asyncio.gather(*(store.observe(f"http://x/{i}", A) for i in range(calls)))
            return await store.count()
        finally:
            await store.close()

    assert asyncio.run(main()) == calls


def test_many_first_uses_of_a_new_recrawl_namespace_at_once_all_read_its_layout(
    redis_url: str,
) -> None:
    """Every call of a fresh asyncio store reads or records the namespace's layout; one
    recording it (format and bucket bits, written together) is never seen half-written by
    another, whatever the order the server runs them in."""

    async def main() -> list[int]:
        stores = [
            await open_async_recrawl_store(redis_url, namespace="first-use") for _ in range(40)
        ]
        try:
            await asyncio.gather(*(s.observe(f"http://x/{n}", A) for n, s in enumerate(stores)))
            return [await s.count() for s in stores]
        finally:
            for store in stores:
                await store.close()

    assert asyncio.run(main()) == [40] * 40
