"""Every final response and failed download reaches the recrawl schedule, in-process.

The middleware is built by Scrapy's own ``get_crawler`` and fed real ``Response`` objects
and exceptions, as the downloader would after its retries; what it recorded is read back
through its own recrawl store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler
from twisted.internet.error import TimeoutError as DownloadTimeout

from scrapy_simhash import SimhashDownloaderMiddleware

PAGE = (Path(__file__).parents[1] / "site" / "harbour.html").read_bytes()
URL = "http://example.test/page"


def middleware(tmp_path: Path, **settings: Any) -> SimhashDownloaderMiddleware:
    crawler = get_crawler(
        settings_dict={
            "SIMHASH_INDEX_URL": f"sqlite:///{tmp_path / 'index.sqlite3'}",
            "SIMHASH_NAMESPACE": "t",
            "SIMHASH_WORKERS": 0,
            "SIMHASH_TOKENIZER": "rjieba",
            **settings,
        }
    )
    # The constructor, as tests/scrapy_inprocess.py does: from_crawler also refuses a
    # non-asyncio reactor, and pytest-twisted installs the default one in this process.
    return SimhashDownloaderMiddleware(crawler)


def drive(mw: SimhashDownloaderMiddleware, scenario: Callable[[], Awaitable[None]]) -> None:
    """Run ``scenario`` in one event loop (the crawl's), then close the middleware's stores."""

    async def main() -> None:
        try:
            await scenario()
        finally:
            await mw.index.aclose()
            if mw.recrawl is not None:
                await mw.recrawl.aclose()

    asyncio.run(main())


async def respond(
    mw: SimhashDownloaderMiddleware, status: int, body: bytes = b"", **meta: Any
) -> None:
    request = Request(URL, meta=meta)
    response_class = HtmlResponse if status == 200 else Response
    response = response_class(
        URL,
        status=status,
        body=body,
        request=request,
        headers={"Content-Type": "text/html", "ETag": '"e"'},
    )
    await mw.process_response(request, response)


async def fail(mw: SimhashDownloaderMiddleware, exc: Exception, **meta: Any) -> None:
    assert await mw.process_exception(Request(URL, meta=meta), exc) is None


async def state(mw: SimhashDownloaderMiddleware) -> Any:
    assert mw.recrawl is not None
    return await mw.recrawl.call(lambda store: store.get(URL))


def stats(mw: SimhashDownloaderMiddleware) -> dict[str, Any]:
    assert mw.stats is not None
    return {k: v for k, v in mw.stats.get_stats().items() if k.startswith("simhash/")}


def test_repeated_not_found_retires_the_url(tmp_path: Path) -> None:
    mw = middleware(tmp_path, SIMHASH_RECRAWL_RETIRE_AFTER_MISSES=2)

    async def scenario() -> None:
        await respond(mw, 200, PAGE)
        await respond(mw, 404, b"gone")
        first = await state(mw)
        assert (first.status, first.misses, first.retired) == (404, 1, False)
        assert first.etag == '"e"'  # validators of the page, not of the error
        await respond(mw, 410, b"gone")
        last = await state(mw)
        assert (last.status, last.misses, last.retired) == (410, 2, True)

    drive(mw, scenario)
    counts = stats(mw)
    assert counts["simhash/recrawl/missing"] == 1
    assert counts["simhash/recrawl/retired"] == 1
    assert counts["simhash/skipped/status"] == 2


def test_server_errors_and_failed_downloads_back_off(tmp_path: Path) -> None:
    mw = middleware(
        tmp_path, SIMHASH_RECRAWL_ERROR_RETRY_SECS=600, SIMHASH_RECRAWL_MIN_INTERVAL_SECS=60
    )

    async def scenario() -> None:
        await respond(mw, 200, PAGE)
        await respond(mw, 503, b"busy")
        assert (await state(mw)).interval_secs == 600
        await fail(mw, DownloadTimeout())
        after = await state(mw)
        assert (after.status, after.failures, after.interval_secs) == (0, 2, 1200)
        await fail(mw, IgnoreRequest("offsite"))  # not a download failure: not recorded
        assert (await state(mw)).failures == 2

    drive(mw, scenario)
    assert stats(mw)["simhash/recrawl/failed"] == 2


def test_not_modified_is_counted_as_an_unchanged_visit(tmp_path: Path) -> None:
    mw = middleware(tmp_path)

    async def scenario() -> None:
        await respond(mw, 200, PAGE)
        await respond(mw, 304)
        assert (await state(mw)).visits == 2

    drive(mw, scenario)
    counts = stats(mw)
    assert counts["simhash/unchanged"] == 1
    assert counts["simhash/recrawl/not_modified"] == 1
    assert "simhash/skipped/status" not in counts


def test_requests_opted_out_are_not_recorded(tmp_path: Path) -> None:
    mw = middleware(tmp_path)

    async def scenario() -> None:
        await fail(mw, DownloadTimeout(), dont_simhash=True)
        await respond(mw, 404, dont_simhash=True)
        assert await state(mw) is None

    drive(mw, scenario)


def test_index_reset_clears_the_recrawl_state_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mw = middleware(tmp_path)

    async def scenario() -> None:
        await respond(mw, 200, PAGE)
        await respond(mw, 404)
        assert await state(mw) is not None

    drive(mw, scenario)
    with caplog.at_level(logging.INFO, logger="scrapy_simhash.reset"):
        again = middleware(tmp_path, SIMHASH_INDEX_RESET=True)
    assert (
        "namespace 't' cleared: 1 host templates, 1 fingerprints, 0 drop records, 1 recrawl states"
    ) in caplog.text

    async def after() -> None:
        assert await state(again) is None
        assert await again.index.call(lambda index: index.count()) == 0

    drive(again, after)
