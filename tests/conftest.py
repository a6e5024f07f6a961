"""Shared fixtures: real Redis servers started on free loopback ports, the list of storage
backends every contract suite runs on, and the one fake clock.

``REDIS_URL`` may point at an existing server instead; a missing ``redis-server`` is a test
failure with a message saying what to install, never a silent skip.

Every test is marked by what it needs, here rather than in each file: ``redis`` (it uses a
fixture that starts a ``redis-server``), ``cluster`` (a Redis Cluster; also ``redis``) and
``crawl`` (the local HTTP site real crawls fetch). setup.cfg's ``-m "not redis and not
crawl"`` leaves those out of a plain ``pytest``; ``pytest -m ""`` runs everything. A test
that starts a server or a crawl some other way without its marker fails (:mod:`tests.marked`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import settings

from tests import marked
from tests.redis_servers import RedisServer, start_cluster

# Two shared cores under load can stretch one example past Hypothesis's 200 ms deadline;
# timing is what benchmarks measure, so property tests judge results only.
settings.register_profile("scrapy-simhash", deadline=None)
settings.load_profile("scrapy-simhash")


#: The fixtures that mark a test using them (directly or through another fixture).
MARKING_FIXTURES = {
    "redis": frozenset({"redis_server_url", "redis_url", "own_redis"}),
    "cluster": frozenset(
        {
            "redis_cluster_servers",
            "redis_cluster_url",
            "redis_cluster6_servers",
            "redis_cluster6_url",
        }
    ),
    "crawl": frozenset({"http_site", "http_site_server"}),
}


def _backend_kinds(item: pytest.Item) -> set[str]:
    """The backend kinds a parametrized test names (``kind`` = "redis", or ("redis", mode)):
    such a test reaches its server through :func:`backend_url`, not a fixture argument."""
    callspec = getattr(item, "callspec", None)
    kinds = set()
    for value in callspec.params.values() if callspec is not None else ():
        first = value[0] if isinstance(value, tuple) and value else value
        if isinstance(first, str) and first in _MARKS:
            kinds.add(first)
    return kinds


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the fixtures it uses and the backend kinds it is parametrized over
    (before ``-m`` selects); a cluster is Redis."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in MARKING_FIXTURES.items():
            if used & fixtures and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        for kind in _backend_kinds(item):
            if item.get_closest_marker(_MARKS[kind].name) is None:
                item.add_marker(_MARKS[kind])
        if item.get_closest_marker("cluster") and item.get_closest_marker("redis") is None:
            item.add_marker("redis")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tell :mod:`tests.marked` what this test is marked for (its fixtures start next)."""
    marked.MARKS = frozenset(mark.name for mark in item.iter_markers())


class Clock:
    """A settable clock: the code under test reads time only through it, the test moves
    ``now`` by hand, so nothing ever sleeps."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


#: Every storage backend, in one place: memory, SQLite, Redis, a 3-master Redis Cluster and
#: one namespace sharded over a 6-master cluster. A contract suite names the kinds it covers
#: (all of them unless the idea does not exist on a kind) and gets their URLs from
#: :func:`backend_url`.
BACKENDS = ("memory", "sqlite", "redis", "cluster", "sharded")
#: The backends whose state outlives the object holding it.
PERSISTENT = ("sqlite", "redis", "cluster", "sharded")
#: The two faces of every store: blocking and asyncio.
MODES = ("sync", "async")

_MARKS = {
    "redis": pytest.mark.redis,
    "cluster": pytest.mark.cluster,
    "sharded": pytest.mark.cluster,
}


def backend_params(
    kinds: Iterable[str] = BACKENDS, modes: Iterable[str] | None = None
) -> list[Any]:
    """``params`` for a backend fixture: each kind with its marker, crossed with ``modes``
    (``request.param`` is then a ``(kind, mode)`` pair with the id ``kind-mode``)."""
    params = []
    for kind in kinds:
        if kind not in BACKENDS:
            raise ValueError(f"unknown backend kind {kind!r}: one of {BACKENDS}")
        marks = [_MARKS[kind]] if kind in _MARKS else []
        if modes is None:
            params.append(pytest.param(kind, marks=marks, id=kind))
        else:
            params += [pytest.param((kind, m), marks=marks, id=f"{kind}-{m}") for m in modes]
    return params


def backend_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty store of ``kind`` for one test (Redis servers started on demand)."""
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'index.sqlite3'}"
    fixture = {
        "redis": "redis_url",
        "cluster": "redis_cluster_url",
        "sharded": "redis_cluster6_url",
    }[kind]
    return str(request.getfixturevalue(fixture))


def _flush(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real Redis server for the whole session (``REDIS_URL`` or one we start)."""
    external = os.environ.get("REDIS_URL")
    if external:
        yield external
        return
    try:
        server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server.url
    server.stop()


@pytest.fixture
def redis_url(redis_server_url: str) -> str:
    """URL of an empty Redis database for one test."""
    _flush(redis_server_url)
    return redis_server_url


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis server private to one test, which the test may stop and start again."""
    try:
        server = RedisServer(tmp_path / "own-redis").start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server
    server.stop()


def _session_cluster(
    tmp_path_factory: pytest.TempPathFactory, masters: int
) -> Iterator[list[RedisServer]]:
    try:
        servers = start_cluster(tmp_path_factory.mktemp(f"redis-cluster{masters}"), masters=masters)
    except (RuntimeError, OSError) as exc:
        pytest.fail(f"could not start a {masters}-master Redis Cluster: {exc}")
    yield servers
    for server in servers:
        server.stop()


def _emptied(servers: list[RedisServer]) -> str:
    """The ``redis+cluster://`` URL of a session cluster, emptied for one test."""
    for server in servers:
        _flush(server.url)
    return f"redis+cluster://127.0.0.1:{servers[0].port}/0"


@pytest.fixture(scope="session")
def redis_cluster_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RedisServer]]:
    """A real 3-master Redis Cluster on loopback for the whole session."""
    yield from _session_cluster(tmp_path_factory, 3)


@pytest.fixture
def redis_cluster_url(redis_cluster_servers: list[RedisServer]) -> str:
    return _emptied(redis_cluster_servers)


@pytest.fixture(scope="session")
def redis_cluster6_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[list[RedisServer]]:
    """A real 6-master Redis Cluster for the whole session (sharded namespaces)."""
    yield from _session_cluster(tmp_path_factory, 6)


@pytest.fixture
def redis_cluster6_url(redis_cluster6_servers: list[RedisServer]) -> str:
    return _emptied(redis_cluster6_servers)
