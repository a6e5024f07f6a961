"""Every test is marked by what it needs, so a plain ``pytest`` runs without Redis or a crawl
and ``-m redis``, ``-m cluster``, ``-m crawl`` pick one kind (markers set in conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MARKING_FIXTURES
from tests.redis_servers import RedisServer
from tests.scrapy_runner import start_crawl


def test_every_selected_test_using_a_marking_fixture_carries_its_marker(
    request: pytest.FixtureRequest,
) -> None:
    items = request.session.items
    assert request.node in items
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in MARKING_FIXTURES.items():
            if used & fixtures:
                assert item.get_closest_marker(marker) is not None, (item.nodeid, marker)
        if item.get_closest_marker("cluster") is not None:
            assert item.get_closest_marker("redis") is not None, item.nodeid


def test_the_default_run_leaves_out_redis_and_crawls(request: pytest.FixtureRequest) -> None:
    addopts = request.config.getini("addopts")
    assert addopts[addopts.index("-m") + 1] == "not redis and not crawl"
    assert request.config.getini("timeout") not in ("", None, "0")


def test_a_test_not_marked_redis_cannot_start_a_server(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    with pytest.raises(RuntimeError, match="not marked `redis`"):
        server.start()
    assert server.process is None
    node = RedisServer(tmp_path / "node", cluster=True)
    with pytest.raises(RuntimeError, match="not marked `cluster`"):
        node.start()
    assert node.process is None


def test_a_test_not_marked_crawl_cannot_run_a_crawl(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not marked `crawl`"):
        start_crawl(tmp_path / "crawl", {"spider": "pages", "requests": []})
    assert not (tmp_path / "crawl" / "crawl-spec.json").exists()


@pytest.mark.redis
def test_a_test_marked_redis_starts_its_own_server(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis").start()
    try:
        assert server.process is not None
        assert server.process.poll() is None
    finally:
        server.stop()
