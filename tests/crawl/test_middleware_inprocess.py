"""The downloader middleware and the item pipeline in-process: skip rules, mark-only,
304, skip-unchanged and every index-error policy, on Scrapy's own crawler and responses."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.utils.test import get_crawler

from scrapy_simhash import SimhashPipeline
from scrapy_simhash.exceptions import BackendUnavailable, IndexBackendError, NearDuplicate
from scrapy_simhash.index import open_index
from tests.scrapy_inprocess import HARBOUR, ORCHARD, harness, story

#: The same story served under another URL (a mirror).
COPY = story(HARBOUR)


def dead_redis_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{probe.getsockname()[1]}/0"


@pytest.mark.parametrize(
    ("status", "headers", "meta", "reason"),
    [
        (200, {"Content-Type": "text/html"}, {"dont_simhash": True}, "meta"),
        (404, {"Content-Type": "text/html"}, {}, "status"),
        (200, {"Content-Type": "application/pdf"}, {}, "content_type"),
    ],
)
def test_skipped_responses_pass_untouched_and_are_counted(
    status: int, headers: dict[str, str], meta: dict[str, Any], reason: str
) -> None:
    with harness() as h:
        result, info = h.fetch(
            "https://a.test/x", story(HARBOUR), headers, status=status, meta=meta
        )
        assert info is None
        assert result.status == status
        assert h.stat(f"skipped/{reason}") == 1
        assert h.stat("pages") is None


def test_mark_only_passes_a_copy_with_what_it_copies() -> None:
    with harness(SIMHASH_DROP_DUPLICATES=False) as h:
        h.fetch("https://a.test/x", story(HARBOUR))
        result, info = h.fetch("https://b.test/x", COPY)
        assert not isinstance(result, Exception)
        assert info["duplicate_of"] == "https://a.test/x"
        assert (h.stat("duplicate"), h.stat("dropped")) == (1, None)


def test_a_copy_is_dropped_with_a_near_duplicate_exception() -> None:
    with harness() as h:
        h.fetch("https://a.test/x", story(HARBOUR))
        result, info = h.fetch("https://b.test/x", COPY)
        assert isinstance(result, NearDuplicate)
        assert isinstance(result, IgnoreRequest)
        assert (result.kept_url, info["duplicate_of"]) == ("https://a.test/x", "https://a.test/x")
        assert h.stat("dropped") == 1


def test_an_unchanged_page_is_skipped_when_asked_and_a_changed_one_passes() -> None:
    with harness(SIMHASH_SKIP_UNCHANGED=True) as h:
        h.fetch("https://a.test/x", story(HARBOUR))
        unchanged, info = h.fetch("https://a.test/x", story(HARBOUR))
        assert isinstance(unchanged, IgnoreRequest)
        assert info["changed"] is False
        changed, info = h.fetch("https://a.test/x", story(ORCHARD))
        assert not isinstance(changed, Exception)
        assert info["changed"] is True
        assert (h.stat("unchanged"), h.stat("changed"), h.stat("skipped_unchanged")) == (1, 1, 1)


def test_a_not_modified_answer_is_an_unchanged_visit_and_passes() -> None:
    with harness() as h:
        h.fetch("https://a.test/x", story(HARBOUR), {"ETag": '"v1"'})
        result, info = h.fetch("https://a.test/x", b"", status=304)
        assert result.status == 304
        assert info is None
        assert h.stat("unchanged") == 1
        assert h.stat("skipped/status") is None  # a 304 is an answer, not a skipped page


def test_a_cached_response_is_checked_but_not_a_visit() -> None:
    with harness() as h:
        h.fetch("https://a.test/x", story(HARBOUR), flags=["cached"])
        h.fetch("https://a.test/x", story(HARBOUR), flags=["cached"])
        assert h.stat("cached") == 2
        assert h.stat("unchanged") == 1  # the index's previous fingerprint still compares
        state = h.loop.run_until_complete(
            h.middleware.recrawl.call(lambda store: store.get("https://a.test/x"))
        )
        assert state is None


@pytest.mark.parametrize("policy", ["pass", "drop", "raise"])
def test_every_index_error_policy_on_a_page_the_index_cannot_check(policy: str) -> None:
    with harness(
        SIMHASH_INDEX_URL=dead_redis_url(),
        SIMHASH_ON_INDEX_ERROR=policy,
        SIMHASH_INDEX_TIMEOUT_SECS=2,
        SIMHASH_RECRAWL_ENABLED=False,
        SIMHASH_INDEX_START_UNREACHABLE=True,
    ) as h:
        result, info = h.fetch("https://a.test/x", story(HARBOUR))
        assert info["reason"].startswith("index unavailable")
        assert h.stat("index_error") == 1
        error = info["reason"].removeprefix("index unavailable: ")
        assert "index unavailable" not in error  # said once, by the message around it
        if policy == "pass":
            assert result.status == 200
            assert h.stat("dropped") is None
        elif policy == "drop":
            assert isinstance(result, IgnoreRequest)
            assert str(result) == (
                f"SimHash index unavailable ({error}); SIMHASH_ON_INDEX_ERROR=drop"
            )
            assert h.stat("dropped") == 1
        else:
            assert isinstance(result, IndexBackendError)
            assert str(result) == (
                f"SimHash index unavailable while checking https://a.test/x: {error} "
                "(set SIMHASH_ON_INDEX_ERROR=pass to let pages through)"
            )


@pytest.mark.parametrize("policy", ["close", "pass"])
def test_an_index_found_unusable_mid_crawl_follows_the_mismatch_policy(
    policy: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    with harness(
        SIMHASH_INDEX_URL=url, SIMHASH_ON_INDEX_MISMATCH=policy, SIMHASH_RECRAWL_ENABLED=False
    ) as h:
        # Another crawl rebuilds the namespace with another fingerprint scheme meanwhile.
        open_index(url, namespace="inprocess", scheme="another-scheme", reset=True).close()
        first, info = h.fetch("https://a.test/x", story(HARBOUR))
        second, _ = h.fetch("https://a.test/y", story(ORCHARD))
        assert (first.status, second.status) == (200, 200)  # both reach the spider
        assert info["reason"].startswith("index unusable")
        assert h.stat("index_unusable") == 2
    reports = [
        r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("SimHash index cannot be used as configured")
    ]
    assert len(reports) == 1  # said once, not per page
    expected = "closing the spider" if policy == "close" else "passes UNCHECKED"
    assert expected in reports[0]


class ItemSpider(Spider):
    name = "items"


def pipeline(**settings: Any) -> SimhashPipeline:
    crawler = get_crawler(
        ItemSpider,
        {
            "SIMHASH_INDEX_URL": "memory://",
            "SIMHASH_ITEM_FIELDS": ["body"],
            **settings,
        },
    )
    return SimhashPipeline(crawler)


def process(pipe: SimhashPipeline, *items: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """Run ``items`` through the pipeline in one event loop; return what came out and the
    drop records of their URLs (read through the pipeline's own index)."""

    async def run() -> tuple[list[Any], list[Any]]:
        results: list[Any] = []
        for item in items:
            try:
                results.append(await pipe.process_item(item))
            except (DropItem, IndexBackendError) as exc:
                results.append(exc)
        records: list[Any] = []
        for item in items:
            url = item.get("url")
            try:
                records.append(url and await pipe.index.call(lambda i, u=url: i.drop_of(u)))
            except BackendUnavailable:  # the tests of an index that is away
                records.append(None)
        await pipe.stores.aclose()
        return results, records

    return asyncio.run(run())


def test_the_pipeline_drops_a_copied_item_and_records_it() -> None:
    pipe = pipeline()
    body = " ".join(HARBOUR)
    (kept, dropped, anonymous), records = process(
        pipe,
        {"url": "https://a.test/1", "body": body},
        {"url": "https://b.test/1", "body": body},
        {"body": body},
    )
    assert kept["url"] == "https://a.test/1"
    assert isinstance(dropped, DropItem)
    assert str(dropped) == "near-duplicate of item https://a.test/1 (distance 0)"
    assert isinstance(anonymous, DropItem)
    stats = pipe.stats.get_stats()
    assert (stats["simhash/items_unique"], stats["simhash/items_dropped"]) == (1, 2)
    assert records[0] is None
    assert (records[1].kept, records[1].distance) == ("https://a.test/1", 0)


def test_the_pipeline_marks_only_and_never_matches_an_item_with_itself() -> None:
    pipe = pipeline(
        SIMHASH_DROP_DUPLICATES=False,
        SIMHASH_ITEM_FINGERPRINT_FIELD="fp",
        SIMHASH_ITEM_KEY_FIELD=None,
    )
    body = " ".join(ORCHARD)
    (first, second), _ = process(pipe, {"body": body}, {"body": body})
    assert first["fp"] == second["fp"]
    assert len(first["fp"]) == 16
    stats = pipe.stats.get_stats()
    assert (stats["simhash/items_unique"], stats["simhash/items_duplicate"]) == (1, 1)
    assert "simhash/items_dropped" not in stats


@pytest.mark.parametrize("policy", ["pass", "drop", "raise"])
def test_every_index_error_policy_on_an_item(policy: str) -> None:
    pipe = pipeline(
        SIMHASH_INDEX_URL=dead_redis_url(),
        SIMHASH_ON_INDEX_ERROR=policy,
        SIMHASH_INDEX_TIMEOUT_SECS=2,
        SIMHASH_INDEX_START_UNREACHABLE=True,
    )
    (result,), _ = process(pipe, {"url": "https://a.test/1", "body": " ".join(HARBOUR)})
    # The item was read and met the error: neither judged unique nor a duplicate.
    stats = pipe.stats.get_stats()
    assert stats["simhash/items_seen"] == 1
    assert stats["simhash/items_index_error"] >= 1
    assert "simhash/items_unique" not in stats
    assert "simhash/items_duplicate" not in stats
    if policy == "pass":
        assert result["url"] == "https://a.test/1"
    elif policy == "drop":
        assert isinstance(result, DropItem)
        assert stats["simhash/items_dropped"] == 1
    else:
        assert isinstance(result, IndexBackendError)
        assert "let items through" in str(result)


def test_an_item_class_without_the_fingerprint_field_is_kept_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import dataclasses

    @dataclasses.dataclass
    class Story:
        url: str
        body: str

        def get(self, name: str) -> Any:  # for process()'s drop-record lookup
            return getattr(self, name, None)

    pipe = pipeline(SIMHASH_ITEM_FINGERPRINT_FIELD="simhash")
    with caplog.at_level(logging.WARNING):
        results, _ = process(
            pipe,
            Story("https://a.test/1", " ".join(HARBOUR)),
            Story("https://a.test/2", " ".join(ORCHARD)),
        )
    assert [r.url for r in results] == ["https://a.test/1", "https://a.test/2"]
    warnings = [r for r in caplog.records if "SIMHASH_ITEM_FINGERPRINT_FIELD" in r.message]
    assert len(warnings) == 1
    assert "Story" in warnings[0].message
    assert pipe.stats.get_value("simhash/items_fingerprint_field_missing") == 2
    assert pipe.stats.get_value("simhash/items_unique") == 2


def test_item_fields_no_item_has_are_named_once(caplog: pytest.LogCaptureFixture) -> None:
    from scrapy_simhash.glue.pipeline import FIELDS_WARN_AFTER_ITEMS

    pipe = pipeline(SIMHASH_ITEM_FIELDS=["content"])
    items = [
        {"url": f"https://a.test/{n}", "body": "x"} for n in range(FIELDS_WARN_AFTER_ITEMS + 5)
    ]
    with caplog.at_level(logging.WARNING):
        process(pipe, *items)
    warnings = [r for r in caplog.records if "SIMHASH_ITEM_FIELDS" in r.message]
    assert len(warnings) == 1
    assert "['content']" in warnings[0].message
    assert "body" in warnings[0].message
    # A crawl whose items do have the field never hears of it.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        process(pipeline(), *[{"url": f"https://b.test/{n}", "body": "x"} for n in range(30)])
    assert not [r for r in caplog.records if "SIMHASH_ITEM_FIELDS" in r.message]
