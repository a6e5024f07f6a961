"""Crawler processes racing on one shared index keep exactly one page per duplicate cluster."""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.index import open_index
from tests.conftest import backend_url

PROCESSES = 3
CLUSTERS = 12
MEMBERS = 4


def _clusters() -> list[list[int]]:
    """Cluster centres far apart; members within 1 bit of their centre (<= 2 of each other)."""
    rng = random.Random(2024)
    clusters = []
    for _ in range(CLUSTERS):
        centre = rng.getrandbits(64)
        clusters.append([centre ^ (1 << rng.randrange(64)) for _ in range(MEMBERS)])
    return clusters


def _worker(url: str, worker: int, barrier: Any, results: Any, options: dict[str, Any]) -> None:
    # Every worker walks the clusters in the same order (members shuffled), so workers hit
    # the same cluster at the same moment: a check-then-store race would keep two.
    rng = random.Random(worker)
    pages = []
    for c, members in enumerate(_clusters()):
        order = list(enumerate(members))
        rng.shuffle(order)
        pages += [(f"https://w{worker}.example/c{c}/m{m}", fp) for m, fp in order]
    stored = []
    with open_index(url, namespace="race", **options) as index:
        barrier.wait(timeout=60)
        for key, fp in pages:
            if index.observe(key, fp).stored:
                stored.append(key)
    results.put(stored)


def _race(url: str, processes_: int = PROCESSES, **options: Any) -> list[str]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes_)
    results = context.Queue()
    processes = [
        context.Process(target=_worker, args=(url, worker, barrier, results, options))
        for worker in range(processes_)
    ]
    for process in processes:
        process.start()
    stored = [key for _ in processes for key in results.get(timeout=120)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return stored


def _check(url: str, stored: list[str], **options: Any) -> None:
    assert len(stored) == CLUSTERS
    kept_clusters = sorted(key.split("/")[3] for key in stored)
    assert kept_clusters == [f"c{c}" for c in sorted(range(CLUSTERS), key=lambda c: f"c{c}")]
    with open_index(url, namespace="race", **options) as index:
        assert len(index) == CLUSTERS
        for members in _clusters():
            assert len(index.query(members[0])) == 1


@pytest.mark.redis
def test_processes_racing_through_redis(redis_url: str) -> None:
    _check(redis_url, _race(redis_url))


def test_processes_racing_through_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shared.sqlite3"
    open_index(url, namespace="race").close()  # create the schema before the race
    _check(url, _race(url))


@pytest.mark.redis
@pytest.mark.parametrize(("kind", "processes"), [("cluster", 4), ("sharded", 5)])
def test_processes_racing_through_a_sharded_namespace(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, processes: int
) -> None:
    """One namespace spread over every master (3, then 6): pages of one cluster land in
    different shards, yet exactly one per cluster is kept."""
    url = backend_url(kind, request, tmp_path)
    shards = 3 if kind == "cluster" else 6
    _check(url, _race(url, processes, shards=shards), shards=shards)
