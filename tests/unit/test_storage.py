"""One storage registry serves the index, the recrawl store and the rule store by scheme."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from scrapy_simhash import storage
from scrapy_simhash._runners import StoreThread, in_thread, inline
from scrapy_simhash._sqlite import _file_lock
from scrapy_simhash.dust import open_rule_store
from scrapy_simhash.dust.store import RuleStore, SqliteRuleStore
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index import open_async_index, open_index, register_backend
from scrapy_simhash.index.memory import MemoryIndex
from scrapy_simhash.index.threaded import AsyncIndexAdapter
from scrapy_simhash.recrawl import open_async_recrawl_store, open_recrawl_store
from scrapy_simhash.recrawl.threaded import AsyncBackendAdapter
from scrapy_simhash.storage import Storage, register_storage
from scrapy_simhash.template.store import SqliteTemplateStore, TemplateStore


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations in a test stay in the test."""
    monkeypatch.setattr(storage, "_STORAGES", dict(storage._STORAGES))


def test_an_unknown_scheme_names_the_schemes_each_store_can_use() -> None:
    with pytest.raises(ConfigurationError, match=r"index URL scheme in 'ftp://x'.*memory://"):
        open_index("ftp://x")
    with pytest.raises(ConfigurationError, match=r"recrawl store URL scheme.*redis\+cluster://"):
        open_recrawl_store("ftp://x")
    with pytest.raises(ConfigurationError, match="no URL rule store for 'ftp://x'"):
        open_rule_store("ftp://x", "ns")


def test_a_storage_declared_once_opens_all_three_stores_sync_and_async() -> None:
    memory = storage.storage_for("memory://", "index")
    register_storage(
        Storage("vault", ("vault",), index=memory.index, recrawl=memory.recrawl, rules=memory.rules)
    )
    index = open_index("vault://one", namespace="n")
    assert index.observe("https://a.test/x", 7).stored
    store = open_recrawl_store("vault://one")
    assert store.observe("https://a.test/x", 7).visits == 1
    rules = open_rule_store("vault://one", "n")
    assert rules.rules() == []

    async def asynchronous() -> None:
        # No asyncio openers declared: both run their blocking backend in a worker thread.
        async_index = await open_async_index("vault://one", namespace="n")
        assert isinstance(async_index.backend, AsyncIndexAdapter)
        assert async_index.backend._run is in_thread
        assert (await async_index.observe("https://a.test/y", 2**40)).stored
        await async_index.close()
        async_store = await open_async_recrawl_store("vault://one")
        assert isinstance(async_store._backend, AsyncBackendAdapter)
        assert async_store._backend._executor is not None
        assert (await async_store.observe("https://a.test/y", 5)).visits == 1
        await async_store.close()

    asyncio.run(asynchronous())


def test_an_index_backend_alone_gets_no_recrawl_or_rule_store() -> None:
    register_backend("idx", lambda url, config, **_: MemoryIndex(url, config))
    assert open_index("idx://x").count() == 0
    with pytest.raises(ConfigurationError, match="recrawl store URL scheme"):
        open_recrawl_store("idx://x")
    with pytest.raises(ConfigurationError, match="`dust_enabled` needs an index URL"):
        open_rule_store("idx://x", "n")


def test_shards_need_a_redis_storage() -> None:
    with pytest.raises(ConfigurationError, match="`shards`=3 needs a Redis index"):
        open_index("memory://", options={"shards": 3})


def test_a_storage_with_an_asyncio_opener_is_opened_through_it() -> None:
    memory = storage.storage_for("memory://", "index")
    opened: list[str] = []

    async def async_index(url: str, config: object, **options: object) -> AsyncIndexAdapter:
        opened.append(url)
        return AsyncIndexAdapter(MemoryIndex(url, config), run=inline)  # type: ignore[arg-type]

    register_storage(Storage("inline", ("inline",), index=memory.index, async_index=async_index))

    async def scenario() -> None:
        index = await open_async_index("inline://a", namespace="n")
        assert isinstance(index.backend, AsyncIndexAdapter)
        assert (await index.observe("https://a.test/x", 9)).stored
        await index.close()

    asyncio.run(scenario())
    assert opened == ["inline://a"]


@pytest.mark.parametrize(
    "opener",
    [
        lambda path: SqliteTemplateStore(path, "ns"),
        lambda path: SqliteRuleStore(path, "ns"),
    ],
    ids=["templates", "rules"],
)
def test_sqlite_store_calls_run_in_the_loop_until_they_would_wait(
    tmp_path: Path, opener: Callable[[str], TemplateStore | RuleStore]
) -> None:
    """As the index's calls: a hop to a thread costs more than the call, and a call held in
    a thread of the store's own held the file's lock, so that the index's calls queued."""
    path = str(tmp_path / "crawl.db")

    def where(store: TemplateStore | RuleStore) -> str:
        store.clear()  # takes the file's lock
        return threading.current_thread().name

    async def scenario() -> None:
        store = StoreThread(lambda: opener(path), "simhash-own")
        loop_thread = threading.current_thread().name
        assert (await store.call(where)).startswith("simhash-own")  # opened there
        assert await store.call(where) == loop_thread
        # Another thread holds the file: the call waits in the connection's thread, not
        # in the loop, and runs once the file is free.
        lock = _file_lock(path)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with lock:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(10)
        waiting = asyncio.ensure_future(store.call(where))
        await asyncio.sleep(0)
        assert not waiting.done()
        release.set()
        assert (await waiting).startswith("simhash-sqlite")
        holder.join()
        await store.aclose()

    asyncio.run(scenario())
