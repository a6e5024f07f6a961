"""The outage guard and the small pure helpers of the Scrapy glue.

The guard is exercised against real backends: a Redis port where nothing listens (every
connection is refused), then a real server started on that port. The clock is injected.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash._redis import mask_url
from scrapy_simhash.exceptions import BackendUnavailable, ConfigurationError
from scrapy_simhash.glue.guard import Guarded, OutageLog, scrub
from scrapy_simhash.index import open_async_index
from scrapy_simhash.recrawl import open_async_recrawl_store
from scrapy_simhash.settings import MiddlewareConfig, content_type_matches
from tests.conftest import Clock
from tests.redis_servers import RedisServer


@pytest.mark.redis
def test_guard_pauses_throttles_logs_and_reconnects(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(tmp_path / "redis")  # not started yet: connections are refused
    password = "hunter2-secret"
    url = f"redis://:{password}@127.0.0.1:{server.port}/0"
    clock = Clock()
    errors: list[int] = []
    opened: list[int] = []

    async def opener() -> object:
        opened.append(1)
        return await open_async_index(url, namespace="guard", options={"retries": 0})

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index",
            url,
            opener,
            timeout=5,
            retry_after=2,
            log_interval=30,
            on_error=lambda: errors.append(1),
            clock=clock,
        )
        for _ in range(3):  # first failure opens and fails; the next two fail fast
            with pytest.raises(BackendUnavailable):
                await guard.call(lambda index: index.observe("a", 1))
        assert (len(errors), len(opened)) == (3, 1)
        clock.now += 2.5  # past the pause: it tries again (still refused), quietly
        with pytest.raises(BackendUnavailable):
            await guard.call(lambda index: index.observe("a", 1))
        assert len(opened) == 2
        clock.now += 30  # a summary line once per log interval
        with pytest.raises(BackendUnavailable):
            await guard.call(lambda index: index.observe("a", 1))
        server.start()
        try:
            clock.now += 2.5
            observation = await guard.call(lambda index: index.observe("a", 1))
            assert observation.match is None
            assert observation.stored
        finally:
            await guard.aclose()
            server.stop()
        with pytest.raises(BackendUnavailable):
            await guard.call(lambda index: index.observe("a", 1))

    with caplog.at_level(logging.WARNING, logger="scrapy_simhash.glue.guard"):
        asyncio.run(scenario())
    guard_logs = [r for r in caplog.records if r.name == "scrapy_simhash.glue.guard"]
    messages = [r.getMessage() for r in guard_logs]
    assert len(messages) == 3, messages
    assert "is unavailable: open failed: Error 111" in messages[0]
    # A refused connection is an outage, not a bug: one line, no traceback.
    assert all("\n" not in m and "Traceback" not in m for m in messages)
    assert "still failing: 4 errors in the last 32s" in messages[1]
    assert "reachable again after 5 errors" in messages[2]
    assert all(password not in m for m in messages)
    assert all(mask_url(url) in m for m in messages)


@pytest.mark.redis
def test_an_outage_of_two_stores_in_one_redis_is_one_line_and_its_end_another(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The index and the recrawl store of a crawl live in one Redis: when it goes away the
    log says so once, without tracebacks or a store named twice, and once when it is back."""
    server = RedisServer(tmp_path / "redis")  # not started yet: connections are refused
    url = f"redis://127.0.0.1:{server.port}/0"
    clock = Clock()
    outages = OutageLog(url, log_interval=60, clock=clock)

    async def open_index() -> object:
        return await open_async_index(url, namespace="outage", options={"retries": 0})

    async def open_store() -> object:
        return await open_async_recrawl_store(url, namespace="outage")

    async def scenario() -> None:
        index = Guarded(
            "SimHash index",
            url,
            open_index,
            timeout=5,
            retry_after=2,
            log_interval=60,
            clock=clock,
            outages=outages,
        )
        store = Guarded(
            "recrawl store",
            url,
            open_store,
            timeout=5,
            retry_after=2,
            log_interval=60,
            clock=clock,
            outages=outages,
        )
        try:
            for _ in range(2):  # pages while Redis is away: both stores fail
                with pytest.raises(BackendUnavailable):
                    await store.call(lambda backend: backend.observe("https://a.example/", 1))
                with pytest.raises(BackendUnavailable):
                    await index.call(lambda backend: backend.observe("a", 1))
                clock.now += 2.5
            server.start()
            await index.call(lambda backend: backend.observe("a", 1))
            assert len(guard_messages()) == 1, "the outage is not over while the store fails"
            await store.call(lambda backend: backend.observe("https://a.example/", 1))
        finally:
            await index.aclose()
            await store.aclose()
            server.stop()

    def guard_messages() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "scrapy_simhash.glue.guard"]

    with caplog.at_level(logging.DEBUG, logger="scrapy_simhash.glue.guard"):
        asyncio.run(scenario())
    messages = guard_messages()
    assert len(messages) == 2, messages
    # Named once: not "recrawl store at URL failed: recrawl store URL failed: ...".
    assert messages[0].startswith(
        f"recrawl store at {url} is unavailable: ConnectionError: Error 111 connecting"
    ), messages[0]
    assert messages[0].count(url) == 1
    assert messages[1] == f"recrawl store at {url} is reachable again after 4 errors"
    assert all("\n" not in m and "Traceback" not in m for m in messages)


def test_an_unexpected_error_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Not an outage but a bug: where it happened is what the reader needs."""

    async def opener() -> object:
        return object()

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index", "memory://", opener, timeout=1, retry_after=1, log_interval=60
        )
        with pytest.raises(BackendUnavailable):
            await guard.call(lambda backend: backend.observe("a", 1))  # type: ignore[attr-defined]

    with caplog.at_level(logging.ERROR, logger="scrapy_simhash.glue.guard"):
        asyncio.run(scenario())
    (message,) = [r.getMessage() for r in caplog.records]
    assert "failed unexpectedly: 'object' object has no attribute 'observe'" in message
    assert "Traceback" in message


def test_configuration_errors_are_not_outages() -> None:
    async def opener() -> object:
        raise ConfigurationError("index built with another scheme")

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index", "memory://", opener, timeout=1, retry_after=1, log_interval=1
        )
        with pytest.raises(ConfigurationError):
            await guard.call(lambda index: index.observe("a", 1))  # type: ignore[attr-defined]

    asyncio.run(scenario())


def test_a_page_the_index_could_not_check_is_no_outage() -> None:
    """A sharded namespace may fail one page (busy locks, a half-written neighbour): that
    page is unchecked and counted, the next one goes straight to the same backend."""
    from scrapy_simhash.exceptions import PageNotChecked
    from scrapy_simhash.index import open_index

    opened: list[object] = []
    errors: list[int] = []

    async def opener() -> object:
        opened.append(open_index("memory://"))
        return opened[-1]

    def failing(index: Any) -> Any:
        async def call() -> Any:
            raise PageNotChecked("locks of a page stayed busy; the page was not checked")

        return call()

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index",
            "memory://",
            opener,
            timeout=1,
            retry_after=3600,
            log_interval=1,
            on_error=lambda: errors.append(1),
        )
        with pytest.raises(BackendUnavailable, match="not checked"):
            await guard.call(failing)
        # No retry pause, no reopening: the next page is checked by the same backend.
        observation = await guard.call(lambda index: asyncio.sleep(0, index.observe("a", 1)))
        assert observation.stored
        assert (len(opened), len(errors)) == (1, 1)

    asyncio.run(scenario())


@pytest.mark.parametrize("in_a_task", [True, False])
def test_a_call_without_an_answer_in_time_is_an_outage_said_as_such(in_a_task: bool) -> None:
    """Inside a task (a crawl's calls) and outside one (a coroutine Twisted drives) alike;
    the call is cancelled, not left running."""
    from scrapy_simhash.index import open_index

    cancelled: list[bool] = []

    async def opener() -> object:
        return open_index("memory://")

    def silent(index: Any) -> Any:
        async def call() -> Any:
            try:
                await asyncio.Event().wait()  # a server that never answers
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        return call()

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index",
            "sqlite:///x.db",
            opener,
            timeout=0.05,
            retry_after=3600,
            log_interval=1,
        )
        with pytest.raises(
            BackendUnavailable, match=r"database is locked: no answer within 0\.05s"
        ):
            await guard.call(silent)

    if in_a_task:
        asyncio.run(scenario())
    else:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(_without_a_task(loop, scenario()))
        finally:
            loop.close()
    assert cancelled == [True]


def _without_a_task(loop: asyncio.AbstractEventLoop, coroutine: Any) -> asyncio.Future[None]:
    """Step ``coroutine`` from loop callbacks, as Twisted's Deferred.fromCoroutine does on
    the asyncio reactor: inside the running loop, but in no task."""
    done: asyncio.Future[None] = loop.create_future()

    def step(_: object = None) -> None:
        try:
            awaited = coroutine.send(None)
        except StopIteration:
            done.set_result(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            done.set_exception(exc)
        else:
            awaited.add_done_callback(lambda _: loop.call_soon(step))

    loop.call_soon(step)
    return done


@given(
    password=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=6, max_size=20),
    before=st.text(alphabet=" :;,.()[]'\"", max_size=20),
    after=st.text(alphabet=" :;,.()[]'\"", max_size=20),
)
def test_scrub_never_leaves_the_password(password: str, before: str, after: str) -> None:
    url = f"redis://user:{password}@db.example:6379/0"
    text = f"Error connecting to {before}{url}{after}; AUTH {password} failed"
    cleaned = scrub(text, url)
    assert password not in cleaned
    assert f"{before}{mask_url(url)}{after}" in cleaned


@given(
    media=st.sampled_from(["text/html", "application/xhtml+xml", "TEXT/HTML", "text/plain"]),
    params=st.sampled_from(["", "; charset=utf-8", ";charset=GBK", " ; q=1"]),
)
def test_content_type_matching(media: str, params: str) -> None:
    allowed = ("text/html", "application/xhtml+xml")
    expected = media.lower() != "text/plain"
    assert content_type_matches(media + params, allowed) is expected
    # A trailing slash makes a prefix.
    assert content_type_matches(media + params, ("text/",)) is media.lower().startswith("text/")
    assert not content_type_matches("image/png" + params, allowed)


def test_middleware_settings_are_validated() -> None:
    config = MiddlewareConfig.from_settings({"SIMHASH_CONTENT_TYPES": "text/html, Text/Plain"})
    assert config.content_types == ("text/html", "text/plain")
    with pytest.raises(ConfigurationError, match="SIMHASH_ON_INDEX_ERROR must be one of"):
        MiddlewareConfig.from_settings({"SIMHASH_ON_INDEX_ERROR": "ignore"})
    with pytest.raises(ConfigurationError, match="SIMHASH_WORKERS must be >= 0"):
        MiddlewareConfig.from_settings({"SIMHASH_WORKERS": "-1"})
