"""A Redis that may evict the crawl's keys: refused at start-up, or allowed and counted.

With a memory limit and an ``allkeys-*`` policy (a common cache setting) Redis evicts keys
when it is full, and an evicted key is a page, a drop record or a schedule the crawl
forgets: copies stop being dropped, and nothing used to say so. Under a ``volatile-*``
policy only keys with a TTL go, which the hosts' template keys carry with
SIMHASH_INDEX_TTL_SECS. Every test runs its own ``redis-server`` (``own_redis``),
configured as a managed Redis or a cache would be; evictions are caused by writing past a
memory limit set just above what the server holds, so they happen when the test says.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from scrapy_simhash.exceptions import ConfigurationError
from tests.redis_servers import RedisServer
from tests.scrapy_inprocess import harness, random_story
from tests.scrapy_runner import ONE_AT_A_TIME, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.redis

BASE = ONE_AT_A_TIME
PAGES = ["harbour.html", "orchard.html", "harbour-copy.html"]


def client(server: RedisServer) -> Iterator[redis.Redis]:
    connection = redis.Redis(port=server.port)
    try:
        yield connection
    finally:
        connection.close()


def configure(server: RedisServer, **config: Any) -> None:
    """CONFIG SET each of ``config`` (underscores read as dashes)."""
    for connection in client(server):
        for name, value in config.items():
            connection.config_set(name.replace("_", "-"), value)


def forbid(server: RedisServer, *commands: str) -> None:
    """Forbid ``commands`` to the default user, as a managed Redis forbids CONFIG."""
    for connection in client(server):
        connection.execute_command(
            "ACL",
            "SETUSER",
            "default",
            "on",
            "nopass",
            "~*",
            "&*",
            "+@all",
            *(f"-{command}" for command in commands),
        )


def evicted(server: RedisServer) -> int:
    for connection in client(server):
        return int(connection.info("stats")["evicted_keys"])
    raise AssertionError("unreachable")


def squeeze(server: RedisServer) -> int:
    """Make the server evict: a memory limit just above what it holds, then 2 MiB of
    other keys written past it (allkeys-lru evicts old keys to make room). The limit is
    lifted again, so the crawl's next writes evict nothing more. Returns the keys evicted."""
    before = evicted(server)
    for connection in client(server):
        used = int(connection.info("memory")["used_memory"])
        connection.config_set("maxmemory", used + 256 * 1024)
        for i in range(512):
            connection.set(f"filler:{before}:{i}", b"x" * 4096)
        connection.config_set("maxmemory", 512 * 1024 * 1024)
    count = evicted(server) - before
    assert count > 0
    return count


def crawl(site: SiteServer, tmp: Path, server: RedisServer, **settings: Any) -> Any:
    requests = [{"url": site.url(p)} for p in PAGES]
    return run_crawl(
        tmp,
        {
            "requests": requests,
            "item_text": True,
            "settings": {
                **BASE,
                "SIMHASH_INDEX_URL": server.url,
                **settings,
            },
        },
    )


def refusal(exc: BaseException | str) -> str:
    message = str(exc)
    assert "may lose its keys" in message
    assert "maxmemory-policy noeviction" in message
    assert "give the crawl a Redis of its own" in message
    assert "SIMHASH_INDEX_ALLOW_EVICTION = True" in message
    return message


# -- refused at start-up -------------------------------------------------------------------


def test_an_evicting_redis_refuses_the_crawl_at_start(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path
) -> None:
    configure(own_redis, maxmemory="64mb", maxmemory_policy="allkeys-lru")
    result = crawl(http_site, tmp_path, own_redis)
    (error,) = result.errors
    assert error.startswith("ConfigurationError")
    message = refusal(error)
    assert (
        f"(maxmemory-policy allkeys-lru, maxmemory 64 MiB on 127.0.0.1:{own_redis.port})" in message
    )
    assert result.log.count("Crawl not started: ") == 1
    assert "Traceback" not in result.log
    assert sum(http_site.hits.values()) == 0


@pytest.mark.parametrize(
    ("policy", "maxmemory", "settings", "refused"),
    [
        ("allkeys-lfu", "64mb", {}, True),
        ("allkeys-random", "64mb", {}, True),
        # Only keys with a TTL go: the hosts' template keys carry one with a TTL setting.
        ("volatile-lru", "64mb", {"SIMHASH_INDEX_TTL_SECS": 86400}, True),
        ("volatile-ttl", "64mb", {}, False),
        (
            "volatile-lru",
            "64mb",
            {"SIMHASH_INDEX_TTL_SECS": 86400, "SIMHASH_TEMPLATES_ENABLED": False},
            False,
        ),
        ("allkeys-lru", "0", {}, False),  # no memory limit: nothing is evicted
        ("noeviction", "64mb", {}, False),  # full: writes fail, as an outage says
    ],
    ids=lambda value: str(value) if not isinstance(value, dict) else ",".join(value) or "-",
)
def test_what_may_evict_the_crawls_keys(
    own_redis: RedisServer,
    policy: str,
    maxmemory: str,
    settings: dict[str, Any],
    refused: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    configure(own_redis, maxmemory=maxmemory, maxmemory_policy=policy)
    options = {"SIMHASH_INDEX_URL": own_redis.url, **settings}
    if refused:
        with pytest.raises(ConfigurationError) as caught, harness(**options):
            pass
        message = refusal(caught.value)
        assert f"maxmemory-policy {policy}" in message
        if policy.startswith("volatile-"):
            assert "the hosts' template keys carry a TTL (SIMHASH_INDEX_TTL_SECS)" in message
        return
    with caplog.at_level(logging.WARNING), harness(**options) as h:
        result, info = h.fetch("https://a.test/1", random_story(1))
        assert result.status == 200
        assert info["duplicate_of"] is None
    assert "may lose its keys" not in caplog.text


def test_config_get_refused_is_read_from_info(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A managed Redis that forbids CONFIG still answers INFO, which tells the policy."""
    configure(own_redis, maxmemory="64mb", maxmemory_policy="allkeys-lru")
    forbid(own_redis, "config")
    with (
        caplog.at_level(logging.INFO, logger="scrapy_simhash"),
        pytest.raises(ConfigurationError) as caught,
        harness(SIMHASH_INDEX_URL=own_redis.url),
    ):
        pass
    assert "maxmemory-policy allkeys-lru" in refusal(caught.value)
    (said,) = [
        r.getMessage() for r in caplog.records if "CONFIG GET is not allowed" in r.getMessage()
    ]
    assert "the memory policy was read from INFO" in said


def test_neither_config_nor_info_allowed_is_said_once_and_the_crawl_goes_on(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path
) -> None:
    """The pages and the items (two namespaces, one storage): one line for the crawl."""
    configure(own_redis, maxmemory="64mb", maxmemory_policy="allkeys-lru")
    forbid(own_redis, "config", "info")
    result = crawl(http_site, tmp_path, own_redis, SIMHASH_ITEM_FIELDS=["title", "body"])
    assert result.errors == []
    assert result.stats["finish_reason"] == "finished"
    lines = [
        line
        for line in result.log.splitlines()
        if "cannot tell whether Redis may evict the crawl's keys" in line
    ]
    assert len(lines) == 1, lines
    assert "WARNING" in lines[0]
    assert "make sure its maxmemory-policy is noeviction" in lines[0]
    assert result.urls() == {http_site.url("harbour.html"), http_site.url("orchard.html")}


# -- allowed, and counted ------------------------------------------------------------------


def test_an_allowed_evicting_redis_says_what_it_means_and_every_eviction(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    configure(own_redis, maxmemory="512mb", maxmemory_policy="allkeys-lru")
    start = evicted(own_redis)
    settings = {
        "SIMHASH_INDEX_URL": own_redis.url,
        "SIMHASH_INDEX_ALLOW_EVICTION": True,
        "SIMHASH_ERROR_LOG_INTERVAL_SECS": 0,
    }
    with caplog.at_level(logging.WARNING), harness(**settings) as h:
        (announced,) = [r for r in caplog.records if "may lose its keys" in r.getMessage()]
        assert announced.levelno == logging.WARNING
        assert "SIMHASH_INDEX_ALLOW_EVICTION is set, so the crawl goes on" in announced.getMessage()
        assert "maxmemory-policy allkeys-lru, maxmemory 512 MiB" in announced.getMessage()
        h.fetch("https://a.test/1", random_story(1))
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        counts = []
        for page in (2, 3):  # each time keys go, the next call says so
            counts.append(squeeze(own_redis))
            h.fetch(f"https://a.test/{page}", random_story(page))
            said = [
                r.getMessage()
                for r in caplog.records
                if r.levelno == logging.ERROR and "Redis evicted" in r.getMessage()
            ]
            assert len(said) == page - 1, said
            assert f"Redis evicted {counts[-1]} key(s) since the last line" in said[-1]
            assert f"{sum(counts)} evicted in all during the crawl" in said[-1]
    assert h.stat("redis_evicted_keys") == sum(counts) == evicted(own_redis) - start
    (summary,) = [
        r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("SimHash: Redis evicted")
    ]
    assert f"{sum(counts)} key(s)" in summary


def test_evictions_after_the_last_call_are_said_at_the_close(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    configure(own_redis, maxmemory="512mb", maxmemory_policy="allkeys-lru")
    settings = {"SIMHASH_INDEX_URL": own_redis.url, "SIMHASH_INDEX_ALLOW_EVICTION": True}
    with caplog.at_level(logging.ERROR), harness(**settings) as h:
        h.fetch("https://a.test/1", random_story(1))
        count = squeeze(own_redis)
    assert h.stat("redis_evicted_keys") == count
    assert any(
        f"Redis evicted {count} key(s) since the last line" in r.getMessage()
        for r in caplog.records
    )


def test_a_policy_changed_mid_crawl_is_said(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {"SIMHASH_INDEX_URL": own_redis.url, "SIMHASH_ERROR_LOG_INTERVAL_SECS": 0}
    with caplog.at_level(logging.ERROR), harness(**settings) as h:
        h.fetch("https://a.test/1", random_story(1))
        configure(own_redis, maxmemory="512mb", maxmemory_policy="allkeys-lru")
        h.fetch("https://a.test/2", random_story(2))
        count = squeeze(own_redis)
        h.fetch("https://a.test/3", random_story(3))
    messages = [r.getMessage() for r in caplog.records]
    assert sum("may lose its keys from now on" in m for m in messages) == 1
    assert any(f"Redis evicted {count} key(s)" in m for m in messages)


def test_a_redis_unreachable_at_start_is_checked_when_it_answers(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """SIMHASH_INDEX_START_UNREACHABLE: the first answer is the start; an evicting server
    then closes the spider, with the same way out."""
    own_redis.stop()
    settings = {
        "SIMHASH_INDEX_URL": own_redis.url,
        "SIMHASH_INDEX_START_UNREACHABLE": True,
        "SIMHASH_INDEX_RETRY_AFTER_SECS": 0,
        "SIMHASH_INDEX_OPTIONS": {"retries": 0},
        "SIMHASH_ERROR_LOG_INTERVAL_SECS": 0,
    }
    with caplog.at_level(logging.ERROR), harness(**settings) as h:
        own_redis.start()
        configure(own_redis, maxmemory="512mb", maxmemory_policy="allkeys-lru")
        h.fetch("https://a.test/1", random_story(1))
    (said,) = [r.getMessage() for r in caplog.records if "may lose its keys" in r.getMessage()]
    assert refusal(said).endswith("; closing the spider")


@pytest.mark.cluster
def test_every_master_of_a_cluster_is_read(
    redis_cluster_servers: list[RedisServer], redis_cluster_url: str
) -> None:
    """A namespace lives on one master (or, sharded, on all): one that may evict is enough."""
    master = redis_cluster_servers[1]
    configure(master, maxmemory="64mb", maxmemory_policy="allkeys-lru")
    try:
        with (
            pytest.raises(ConfigurationError) as caught,
            harness(SIMHASH_INDEX_URL=redis_cluster_url),
        ):
            pass
        assert f"maxmemory 64 MiB on 127.0.0.1:{master.port})" in refusal(caught.value)
    finally:
        configure(master, maxmemory="0", maxmemory_policy="noeviction")
    with harness(SIMHASH_INDEX_URL=redis_cluster_url) as h:
        assert h.fetch("https://a.test/1", random_story(1))[0].status == 200
