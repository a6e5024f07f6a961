"""A storage failure of an index is said once, by the facade every opened index wears:
the backend raises what its storage raised, the facade an IndexBackendError naming the
storage and the call, with the storage's error as its cause."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions

from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.index import open_async_index, open_index
from scrapy_simhash.index.facade import AsyncIndexFacade, IndexFacade
from tests.redis_servers import RedisServer

KEPT, COPY = "https://a.test/kept", "https://a.test/copy"

#: Calls of the index contract, with the action the facade names for each.
CALLS: list[tuple[str, str, tuple[Any, ...]]] = [
    ("observe", "observe", (COPY, 7)),
    ("claim", "claim", (COPY, 7)),
    ("query", "query", (7,)),
    ("get", "get", (KEPT,)),
    ("rename", "rename", (KEPT, COPY)),
    ("remove", "remove", (KEPT,)),
    ("record_drop", "record drop", (COPY, KEPT, 1)),
    ("drop_of", "drop lookup", (COPY,)),
    ("forget_drop", "forget drop", (COPY,)),
    ("drop_count", "drop count", ()),
    ("count", "count", ()),
    ("stats", "stats", ()),
]


def test_an_sqlite_files_failures_are_said_by_the_facade_alone(tmp_path: Path) -> None:
    index = open_index(f"sqlite:///{tmp_path}/index.sqlite3")
    assert isinstance(index, IndexFacade)
    assert index.observe(KEPT, 5).stored
    backend: Any = index.backend
    # A damaged file: its tables gone, under an index that is still open.
    with backend.connection.write() as db:
        db.execute("DROP TABLE simhash_index_entries")
        db.execute("DROP TABLE simhash_drops")
    for method, action, args in CALLS:
        with pytest.raises(sqlite3.Error):
            getattr(backend, method)(*args)  # the backend words nothing of its own
        with pytest.raises(IndexBackendError, match=f"SQLite index .*: {action} failed") as raised:
            getattr(index, method)(*args)
        assert isinstance(raised.value.__cause__, sqlite3.Error), method
    for method, action in (("keys", "list keys"), ("drops", "list drops")):
        with pytest.raises(IndexBackendError, match=f"{action} failed"):
            list(getattr(index, method)())
    index.close()


def test_a_redis_that_went_away_is_said_by_the_facade_blocking_and_asyncio(
    own_redis: RedisServer,
) -> None:
    url = own_redis.url
    index = open_index(url, namespace="gone", options={"retries": 0})

    async def opened() -> AsyncIndexFacade:
        return await open_async_index(url, namespace="gone", options={"retries": 0})

    loop = asyncio.new_event_loop()
    async_index = loop.run_until_complete(opened())
    assert isinstance(async_index, AsyncIndexFacade)
    assert index.observe(KEPT, 5).stored
    own_redis.stop()
    try:
        with pytest.raises(redis.exceptions.ConnectionError):
            index.backend.observe(COPY, 7)
        with pytest.raises(IndexBackendError, match=r"Redis index .*: observe failed") as raised:
            index.observe(COPY, 7)
        assert isinstance(raised.value.__cause__, redis.exceptions.ConnectionError)
        with pytest.raises(IndexBackendError, match=r"Redis index .*: count failed"):
            index.count()
        with pytest.raises(IndexBackendError, match=r"Redis index .*: observe failed"):
            loop.run_until_complete(async_index.observe(COPY, 7))
        with pytest.raises(IndexBackendError, match=r"Redis index .*: drop lookup failed"):
            loop.run_until_complete(async_index.drop_of(COPY))
    finally:
        index.close()
        loop.run_until_complete(async_index.close())
        loop.close()
