"""One storage registry serves the index, the recrawl store and the rule store by scheme."""

from __future__ import annotations

import asyncio

import pytest

from scrapy_simhash import storage
from scrapy_simhash._runners import in_thread, inline
from scrapy_simhash.dust import open_rule_store
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index import open_async_index, open_index, register_backend
from scrapy_simhash.index.memory import MemoryIndex
from scrapy_simhash.index.threaded import AsyncIndexAdapter
from scrapy_simhash.recrawl import open_async_recrawl_store, open_recrawl_store
from scrapy_simhash.recrawl.threaded import AsyncBackendAdapter
from scrapy_simhash.storage import Storage, register_storage


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
