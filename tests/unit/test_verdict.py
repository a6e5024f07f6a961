"""The verdict step on real backends, without a crawler: every branch of a page's answer."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.exceptions import IndexMismatchError
from scrapy_simhash.glue.guard import Guarded
from scrapy_simhash.index import open_async_index
from scrapy_simhash.index.drops import FILED, HELD_COPY, holder_of
from scrapy_simhash.recrawl import RecrawlConfig, open_async_recrawl_store
from scrapy_simhash.verdict import (
    DUPLICATE,
    INVALID_KEY,
    META_KEYS,
    UNAVAILABLE,
    UNCHECKED,
    UNIQUE,
    UNUSABLE,
    Answer,
    Verdict,
    VerdictStep,
)
from tests.conftest import backend_params, backend_url

A = 0x0123_4567_89AB_CDEF
NEAR_A = A ^ 0b101  # 2 bits from A
FAR = A ^ 0xFFFF_FFFF  # 32 bits from A
OK = Answer(200, etag='"v1"', last_modified="Tue, 01 Jul 2025 10:00:00 GMT")


def guard(opener: Callable[[], Awaitable[Any]]) -> Guarded[Any]:
    return Guarded(
        "test store", "test://", opener, timeout=5.0, retry_after=60.0, log_interval=60.0
    )


class Stores:
    """An index and a recrawl store of one URL, each behind a guard, and the step over them."""

    def __init__(
        self,
        url: str,
        *,
        recrawl: bool = True,
        scheme: str = "test-scheme",
        prefer: tuple[str, ...] = (),
    ) -> None:
        self.url = url
        self.counts: dict[str, int] = {}
        self.index = guard(
            lambda: open_async_index(url, namespace="verdict", max_distance=3, scheme=scheme)
        )
        self.recrawl = guard(self._open_recrawl) if recrawl else None
        self.step = VerdictStep(
            self.index,
            self.recrawl,
            bits=64,
            change_distance=3,
            prefer_urls=prefer,
            count=lambda name: self.counts.__setitem__(name, self.counts.get(name, 0) + 1),
        )

    def next_crawl(self) -> VerdictStep:
        """The step of another crawl on the same stores (nothing remembered in-process)."""
        return VerdictStep(
            self.index,
            self.recrawl,
            bits=64,
            change_distance=3,
            prefer_urls=self.step.prefer_urls,
        )

    async def _open_recrawl(self) -> Any:
        return await open_async_recrawl_store(self.url, namespace="verdict", config=RecrawlConfig())

    async def state(self, url: str) -> Any:
        assert self.recrawl is not None
        return await self.recrawl.call(lambda store: store.get(url))

    async def drop_of(self, url: str) -> Any:
        return await self.index.call(lambda index: index.drop_of(url))

    async def close(self) -> None:
        await self.index.aclose()
        if self.recrawl is not None:
            await self.recrawl.aclose()


@pytest.fixture(params=backend_params(("memory", "sqlite", "redis")))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_a_page_seen_again_is_a_change_observation_not_a_copy(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        first = await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        again = await stores.step.page("https://a.test/x", "https://a.test/x", NEAR_A, OK)
        changed = await stores.step.page("https://a.test/x", "https://a.test/x", FAR, OK)
        assert (first.outcome, first.changed) == (UNIQUE, None)
        assert (again.outcome, again.changed, again.change_distance) == (UNIQUE, False, 2)
        assert (changed.outcome, changed.changed, changed.change_distance) == (UNIQUE, True, 30)
        assert (await stores.state("https://a.test/x")).visits == 3
        await stores.close()

    run(scenario())


def test_a_copy_is_recorded_and_taken_off_the_schedule(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        copy = await stores.step.page("https://a.test/x?s=1", "https://a.test/x?s=1", NEAR_A, OK)
        assert (copy.outcome, copy.duplicate_of, copy.distance) == (
            DUPLICATE,
            "https://a.test/x",
            2,
        )
        assert await stores.state("https://a.test/x?s=1") is None
        record = await stores.drop_of("https://a.test/x?s=1")
        assert (record.kept, record.distance) == ("https://a.test/x", 2)
        await stores.close()

    run(scenario())


def test_a_page_naming_a_canonical_url_is_filed_under_it_with_the_canonical_validators(
    url: str,
) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        amp = await stores.step.page("https://a.test/x", "https://a.test/amp/x", A, OK)
        assert (amp.outcome, amp.key) == (UNIQUE, "https://a.test/x")
        record = await stores.drop_of("https://a.test/amp/x")  # reached the spider: filed
        assert (record.kept, record.distance) == ("https://a.test/x", FILED)
        assert holder_of(await stores.drop_of("https://a.test/x")) == "https://a.test/amp/x"
        state = await stores.state("https://a.test/x")
        assert state.visits == 1
        assert state.etag is None  # the AMP view's validators are not the canonical URL's
        # The canonical URL arriving next is a copy of what its AMP view stored; its holder
        # record says so (it counts as a dropped URL).
        canonical = await stores.step.page("https://a.test/x", "https://a.test/x", NEAR_A, OK)
        assert (canonical.outcome, canonical.duplicate_of) == (DUPLICATE, "https://a.test/x")
        record = await stores.drop_of("https://a.test/x")
        assert (record.kept, record.distance) == ("https://a.test/amp/x", HELD_COPY)
        # The AMP view fetched again reaches the spider (a visit): the record stays.
        again = await stores.step.page("https://a.test/x", "https://a.test/amp/x", A, OK)
        assert again.outcome == UNIQUE
        record = await stores.drop_of("https://a.test/x")
        assert (record.kept, record.distance) == ("https://a.test/amp/x", HELD_COPY)
        await stores.close()

    run(scenario())


def test_the_url_that_reached_the_spider_holds_its_page_in_later_crawls(url: str) -> None:
    """A copy fetched first and filed under the canonical URL it names holds that entry: in
    later crawls its fetch is a visit again and the canonical URL's fetch its copy, in either
    order, until the canonical URL brings a change and takes the entry."""
    canonical, amp = "https://a.test/x", "https://a.test/amp/x"

    async def scenario() -> None:
        stores = Stores(url)
        await stores.step.page(canonical, amp, A, OK)
        assert holder_of(await stores.drop_of(canonical)) == amp
        assert (await stores.drop_of(amp)).kept == canonical  # `lookup` of the copy's URL
        for _ in range(2):
            step = stores.next_crawl()
            again = await step.page(canonical, canonical, NEAR_A, OK)
            assert (again.outcome, again.key, again.duplicate_of, again.distance) == (
                DUPLICATE,
                canonical,
                canonical,
                2,
            )
            held = await step.page(canonical, amp, A, OK)
            assert (held.outcome, held.key, held.changed) == (UNIQUE, canonical, False)
        # The entry keeps the fingerprint of the page the spider received; every fetch of
        # either URL is a visit of the page, so a due canonical URL does not come back.
        assert await stores.index.call(lambda index: index.get(canonical)) == A
        assert (await stores.state(canonical)).visits == 5
        step = stores.next_crawl()
        news = await step.page(canonical, canonical, FAR, OK)
        assert (news.outcome, news.changed) == (UNIQUE, True)
        assert await stores.drop_of(canonical) is None
        copy = await step.page(canonical, amp, FAR, OK)
        assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, canonical)
        await stores.close()

    run(scenario())


def test_a_page_misdeclaring_its_canonical_url_is_filed_under_its_own(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        await stores.step.page("https://a.test/1", "https://a.test/1", A, OK)
        page_two = await stores.step.page("https://a.test/1", "https://a.test/2", FAR, OK)
        assert (page_two.outcome, page_two.key, page_two.duplicate_of) == (
            UNIQUE,
            "https://a.test/2",
            None,
        )
        assert (await stores.state("https://a.test/2")).visits == 1
        await stores.close()

    run(scenario())


def test_a_canonical_url_replacing_a_misdeclaring_page_forgets_its_drop_record(
    url: str,
) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        # Page 2 names page 1 as canonical and arrives first: filed under page 1's URL.
        await stores.step.page("https://a.test/1", "https://a.test/2", FAR, OK)
        assert (await stores.drop_of("https://a.test/2")).kept == "https://a.test/1"
        # Page 1 itself differs: it takes its own URL back, and page 2 copies nothing.
        first = await stores.step.page("https://a.test/1", "https://a.test/1", A, OK)
        assert (first.outcome, first.key, first.changed) == (UNIQUE, "https://a.test/1", None)
        assert await stores.drop_of("https://a.test/2") is None
        assert await stores.drop_of("https://a.test/1") is None  # nor holds page 1's entry
        await stores.close()

    run(scenario())


def test_a_preferred_url_renames_the_cluster_and_takes_over_its_schedule(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url, prefer=("no_print_amp", "fewer_params"))
        await stores.step.page("https://a.test/x?utm=1", "https://a.test/x?utm=1", A, OK)
        clean = await stores.step.page("https://a.test/x", "https://a.test/x", NEAR_A, OK)
        assert (clean.outcome, clean.renamed_from) == (DUPLICATE, "https://a.test/x?utm=1")
        assert clean["renamed_from"] == "https://a.test/x?utm=1"
        assert await stores.state("https://a.test/x?utm=1") is None
        assert (await stores.state("https://a.test/x")).visits == 1
        assert (await stores.drop_of("https://a.test/x?utm=1")).kept == "https://a.test/x"
        await stores.close()

    run(scenario())


def test_a_page_without_a_fingerprint_is_a_visit_and_a_cached_one_is_not(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        short = await stores.step.page(
            "https://a.test/s", "https://a.test/s", None, OK, reason="too little text"
        )
        assert (short.outcome, short.reason, short.fingerprint) == (
            UNCHECKED,
            "too little text",
            None,
        )
        assert (await stores.state("https://a.test/s")).visits == 1
        cached = await stores.step.page("https://a.test/c", "https://a.test/c", A, None)
        assert cached.outcome == UNIQUE
        assert await stores.state("https://a.test/c") is None
        await stores.close()

    run(scenario())


def test_without_a_schedule_the_index_alone_tells_a_change(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url, recrawl=False)
        await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        again = await stores.step.page("https://a.test/x", "https://a.test/x", FAR, OK)
        assert (again.changed, again.change_distance) == (True, 32)
        await stores.close()

    run(scenario())


def test_an_index_that_is_away_leaves_the_page_unchecked_and_the_visit_counted(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"

    async def scenario() -> None:
        stores = Stores(f"sqlite:///{tmp_path / 'state.sqlite3'}")
        stores.index = guard(lambda: open_async_index(dead, namespace="verdict"))
        stores.step.index = stores.index
        verdict = await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        assert verdict.outcome == UNAVAILABLE
        assert str(verdict.reason).startswith("index unavailable")
        assert (await stores.state("https://a.test/x")).visits == 1
        await stores.close()

    run(scenario())


def test_an_index_of_another_scheme_is_unusable_with_its_reason(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"

    async def scenario() -> None:
        first = Stores(url, scheme="scheme-one")
        await first.step.page("https://a.test/x", "https://a.test/x", A, OK)
        await first.close()
        second = Stores(url, scheme="scheme-two", recrawl=False)
        verdict = await second.step.page("https://a.test/y", "https://a.test/y", FAR, OK)
        assert verdict.outcome == UNUSABLE
        assert isinstance(verdict.error, IndexMismatchError)
        assert "scheme" in str(verdict.reason)
        await second.close()

    run(scenario())


def test_a_verdict_reads_as_the_meta_mapping_users_know() -> None:
    plain = Verdict(UNIQUE, key="https://a.test/x", fingerprint="00ff", changed=False)
    assert list(plain) == list(META_KEYS)
    assert json.loads(json.dumps(dict(plain)))["changed"] is False
    assert "renamed_from" not in plain
    assert "links_only" not in plain
    marked = plain.but(links_only=True)
    assert marked["links_only"] is True
    assert len(marked) == len(META_KEYS) + 1
    with pytest.raises(TypeError):
        plain["key"] = "other"  # type: ignore[index]
    with pytest.raises(KeyError):
        plain["outcome"]


@given(st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=6))
def test_change_follows_the_distance_to_the_previous_fingerprint(prints: list[int]) -> None:
    async def scenario() -> list[Verdict]:
        stores = Stores("memory://", recrawl=False)
        verdicts = [
            await stores.step.page("https://a.test/x", "https://a.test/x", fp, OK) for fp in prints
        ]
        await stores.close()
        return verdicts

    verdicts = run(scenario())
    assert verdicts[0].changed is None
    for previous, fp, verdict in zip(prints[:-1], prints[1:], verdicts[1:], strict=True):
        distance = (previous ^ fp).bit_count()
        assert (verdict.changed, verdict.change_distance) == (distance > 3, distance)


def test_drop_records_are_left_out_when_asked(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        copy = await stores.step.page("item:1", "item:1", A, None, record_drops=False)
        assert copy.outcome == DUPLICATE
        assert await stores.drop_of("item:1") is None
        await stores.close()

    run(scenario())


def test_an_answer_without_a_page_reaches_the_schedule_only(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        visit = await stores.step.status("https://a.test/x", Answer(304, etag='"v1"'))
        assert visit is not None
        assert (visit.outcome, visit.changed) == ("not_modified", False)
        failed = await stores.step.status("https://a.test/gone", Answer(404))
        assert failed is not None
        assert failed.outcome == "missing"
        await stores.close()

    run(scenario())


def test_a_key_the_index_refuses_fails_that_page_alone() -> None:
    async def scenario() -> None:
        stores = Stores("memory://")
        refused = await stores.step.page("https://a.test/\ud800", "https://a.test/\ud800", A, OK)
        assert refused.outcome == INVALID_KEY
        assert "invalid key" in str(refused.reason)
        fine = await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        assert fine.outcome == UNIQUE
        await stores.close()

    run(scenario())


def test_a_schedule_that_is_away_loses_the_visit_and_counts_it(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"

    async def scenario() -> None:
        stores = Stores("memory://")
        stores.recrawl = guard(
            lambda: open_async_recrawl_store(dead, namespace="verdict", config=RecrawlConfig())
        )
        stores.step.recrawl = stores.recrawl
        verdict = await stores.step.page("https://a.test/x", "https://a.test/x", A, OK)
        assert verdict.outcome == UNIQUE  # the page is checked; only its visit is lost
        assert stores.counts == {"recrawl_lost": 1}
        await stores.close()

    run(scenario())


@pytest.mark.redis
def test_a_recrawl_schedule_of_0_2_0_met_mid_crawl_is_said_once_and_each_update_counted(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Where the start-up check did not run (SIMHASH_INDEX_START_UNREACHABLE), a schedule
    this version cannot read costs each page its update, counted, and says why once; the
    pages themselves are still checked, and the old keys are left as they were."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.hset("simhash:recrawl:{verdict}:state", "https://old.test/", b"\x01")

    async def scenario() -> list[str]:
        stores = Stores(redis_url)
        outcomes = [
            (await stores.step.page(f"https://a.test/{n}", f"https://a.test/{n}", fp, OK)).outcome
            for n, fp in enumerate((A, FAR, A ^ (0xFFFF << 40)))
        ]
        counts = stores.counts
        await stores.close()
        assert counts.get("recrawl_error") == 3
        assert counts.get("recrawl_lost") == 3
        return outcomes

    with caplog.at_level("ERROR", logger="scrapy_simhash.verdict"):
        assert run(scenario()) == [UNIQUE, UNIQUE, UNIQUE]
    refusals = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(refusals) == 1
    assert "scrapy simhash reset --namespace verdict" in refusals[0]
    assert client.hgetall("simhash:recrawl:{verdict}:state") == {b"https://old.test/": b"\x01"}
    client.close()
