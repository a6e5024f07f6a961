"""URL rules in the downloader middleware, driven in-process in a chosen order: learning from
drops, skipping known copies, checks, counterexamples and re-queueing."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse, Request

from scrapy_simhash.dust import open_rule_store
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.glue.errors import KnownCopy, NearDuplicate
from tests.scrapy_inprocess import Harness, random_story

SITE = "http://site.example"


text = random_story


class Dust(Harness):
    def request(self, url: str) -> Request:
        request = Request(url)
        self.loop.run_until_complete(self.middleware.process_request(request))
        return request

    def fetched(self, url: str, body: bytes, request: Request | None = None) -> Any:
        request = request or Request(url)
        response = HtmlResponse(url, body=body, request=request)
        try:
            return self.loop.run_until_complete(self.middleware.process_response(request, response))
        except Exception as exc:  # noqa: BLE001 (the test inspects what was raised)
            return exc

    def rules(self) -> list[Any]:
        dust = self.middleware.dust
        assert dust is not None
        return self.loop.run_until_complete(dust.store.rules())


@pytest.fixture
def dust() -> Iterator[Dust]:
    loop = asyncio.new_event_loop()
    # Trusted on support alone (no checks first): the tests below drive skips, checks and
    # counterexamples by hand; the checks a rule must pass first have tests of their own.
    h = Dust(
        loop,
        {
            "SIMHASH_DUST_ENABLED": True,
            "SIMHASH_DUST_MIN_SUPPORT": 2,
            "SIMHASH_DUST_CHECK_SHARE": 0.0,
            "SIMHASH_DROP_DUPLICATES": True,
            "SIMHASH_DUST_MIN_CHECKS": 0,
        },
    )
    try:
        yield h
    finally:
        h.close()
        loop.close()


def learn_sid(dust: Dust) -> None:
    """Two pages and their session-id copies: ``param:sid`` is trusted (support 2)."""
    for n in (1, 2):
        dust.fetched(f"{SITE}/a{n}", text(n))
        assert isinstance(dust.fetched(f"{SITE}/a{n}?sid={n}", text(n)), NearDuplicate)


def test_copies_teach_a_rule_that_skips_the_next_copy(dust: Dust) -> None:
    dust.fetched(f"{SITE}/a0", text(10))
    dust.fetched(f"{SITE}/a0?sid=9", text(10))
    dust.fetched(f"{SITE}/b", text(3))
    dust.request(f"{SITE}/b?sid=4")  # one pair is not enough support
    learn_sid(dust)
    assert [(s.rule, s.support, s.counterexamples) for s in dust.rules()] == [("param:sid", 3, 0)]
    with pytest.raises(KnownCopy) as raised:
        dust.request(f"{SITE}/b?sid=5")
    assert raised.value.kept_url == f"{SITE}/b"
    assert raised.value.rules == ("param:sid",)
    assert dust.stat("dust/skipped") == 1
    # A URL whose rewrite is no kept page is fetched; so is a URL of another host.
    dust.request(f"{SITE}/unknown?sid=5")
    dust.request("http://other.example/b?sid=5")
    # meta simhash_dust=False fetches whatever the rules say.
    request = Request(f"{SITE}/b?sid=6", meta={"simhash_dust": False})
    dust.loop.run_until_complete(dust.middleware.process_request(request))
    assert dust.stat("dust/skipped") == 1


def test_a_counterexample_kills_the_rule_and_queues_its_skips_again(dust: Dust) -> None:
    learn_sid(dust)
    dust.fetched(f"{SITE}/b", text(3))
    with pytest.raises(KnownCopy):
        dust.request(f"{SITE}/b?sid=1")
    # /c?sid=2 is a page of its own; /c is not known yet, so the check waits for it.
    dust.fetched(f"{SITE}/c?sid=2", text(4))
    assert dust.stat("dust/counterexamples") is None
    dust.fetched(f"{SITE}/c", text(5))
    assert dust.stat("dust/counterexamples") == 1
    assert dust.stat("dust/requeued") == 1  # /b?sid=1, skipped under the dead rule
    (state,) = dust.rules()
    assert state.counterexamples == 1
    assert f"{SITE}/c" in state.example
    dust.request(f"{SITE}/b?sid=7")  # nothing is skipped under a dead rule
    assert dust.stat("dust/skipped") == 1


def test_a_share_of_skippable_requests_is_fetched_to_check_the_rule(dust: Dust) -> None:
    learn_sid(dust)
    glue = dust.middleware.dust
    assert glue is not None
    glue.config = dataclasses.replace(glue.config, check_share=1.0)
    dust.fetched(f"{SITE}/b", text(3))
    passing = dust.request(f"{SITE}/b?sid=1")
    dust.fetched(f"{SITE}/b?sid=1", text(3), passing)
    assert dust.stat("dust/checks") == 1
    assert dust.stat("dust/check_passed") == 1
    dust.fetched(f"{SITE}/d", text(6))
    failing = dust.request(f"{SITE}/d?sid=2")
    dust.fetched(f"{SITE}/d?sid=2", text(7), failing)
    assert dust.stat("dust/check_failed") == 1
    assert dust.rules()[0].counterexamples == 1


def test_the_check_share_is_drawn_from_the_injected_generator(dust: Dust) -> None:
    learn_sid(dust)
    glue = dust.middleware.dust
    assert glue is not None
    glue.config = dataclasses.replace(glue.config, check_share=0.5)
    glue.rng = random.Random(3)
    draws = random.Random(3)
    expected = [draws.random() < 0.5 for _ in range(20)]
    checked = []
    for n in range(20):
        dust.fetched(f"{SITE}/e{n}", text(100 + n))
        try:
            request = dust.request(f"{SITE}/e{n}?sid=1")
        except KnownCopy:
            checked.append(False)
        else:
            checked.append("simhash_dust_check" in request.meta)
    assert checked == expected


def test_off_by_default() -> None:
    loop = asyncio.new_event_loop()
    h = Harness(loop, {})
    try:
        assert h.middleware.dust is None
    finally:
        h.close()
        loop.close()


def test_a_rule_killed_by_another_process_queues_the_skips_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/index.sqlite3"
    loop = asyncio.new_event_loop()
    h = Dust(
        loop,
        {
            "SIMHASH_INDEX_URL": url,
            "SIMHASH_DUST_ENABLED": True,
            "SIMHASH_DUST_MIN_SUPPORT": 2,
            "SIMHASH_DUST_CHECK_SHARE": 0.0,
            "SIMHASH_DUST_MIN_CHECKS": 0,
        },
    )
    try:
        glue = h.middleware.dust
        assert glue is not None
        learn_sid(h)
        h.fetched(f"{SITE}/b", text(3))
        with pytest.raises(KnownCopy):
            h.request(f"{SITE}/b?sid=1")
        # The spider goes idle: the shared rules are read again; nothing changed.
        glue._idle()
        assert h.stat("dust/requeued") is None
        # Another crawl process finds a counterexample...
        with open_rule_store(url, "inprocess") as other:
            other.kill("site.example", "param:sid", "elsewhere")
        # ...which this one reads when it next goes idle, and fetches what it skipped.
        with pytest.raises(KnownCopy):
            h.request(f"{SITE}/a1?sid=8")
        glue._idle()
        assert h.stat("dust/requeued") == 2
        h.request(f"{SITE}/a2?sid=8")  # nothing is skipped under the dead rule
        assert h.stat("dust/skipped") == 2
    finally:
        h.close()
        loop.close()


def test_a_store_that_cannot_hold_rules_refuses_the_crawl(monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy_simhash import storage
    from scrapy_simhash.index import register_backend
    from scrapy_simhash.index.memory import MemoryIndex

    monkeypatch.setattr(storage, "_STORAGES", dict(storage._STORAGES))
    register_backend("custom", lambda url, config, **_: MemoryIndex(url, config))
    loop = asyncio.new_event_loop()
    try:
        off = {"SIMHASH_INDEX_URL": "custom://x", "SIMHASH_RECRAWL_ENABLED": False}
        with pytest.raises(ConfigurationError, match="SIMHASH_DUST_ENABLED needs"):
            Harness(loop, {**off, "SIMHASH_DUST_ENABLED": True})
        Harness(loop, off).close()  # without rules it works
        # Nor can it hold a schedule: with the recrawl schedule on, the crawl is refused.
        with pytest.raises(
            ConfigurationError,
            match=r"unknown recrawl store URL scheme.*"
            r"SIMHASH_RECRAWL_ENABLED = False",
        ):
            Harness(loop, {"SIMHASH_INDEX_URL": "custom://x"})
    finally:
        loop.close()


def test_a_page_filed_under_the_canonical_url_it_names_teaches_nothing(dust: Dust) -> None:
    """Page 2 naming page 1 arrives first and is filed under page 1's URL: no content was
    matched, so no rule may learn that ``?page`` can be dropped."""
    from tests.scrapy_inprocess import story

    for n in range(3):
        page = f"{SITE}/story{n}"
        body_two = story(_paragraphs(100 + n), canonical=page)
        assert isinstance(dust.fetched(f"{page}?page=2", body_two), HtmlResponse)
        body_one = story(_paragraphs(200 + n), canonical=page)
        assert isinstance(dust.fetched(page, body_one), HtmlResponse)
    assert dust.rules() == []
    distinct = f"{SITE}/story9?page=2"
    dust.fetched(f"{SITE}/story9", story(_paragraphs(300), canonical=f"{SITE}/story9"))
    request = dust.request(distinct)  # not skipped: no KnownCopy raised
    assert isinstance(dust.fetched(distinct, story(_paragraphs(301)), request), HtmlResponse)


def _paragraphs(seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [
        "harbour",
        "council",
        "bridge",
        "tram",
        "library",
        "orchard",
        "festival",
        "museum",
        "archive",
        "river",
    ]
    return [" ".join(rng.choice(words) for _ in range(14)) + "." for _ in range(6)]


def on_trial(settings: dict[str, Any] | None = None) -> Dust:
    """A middleware at the default SIMHASH_DUST_MIN_CHECKS (5), no share of trusted skips
    checked: every check below is one a rule on trial asks for."""
    return Dust(
        asyncio.new_event_loop(),
        {
            "SIMHASH_DUST_ENABLED": True,
            "SIMHASH_DUST_MIN_SUPPORT": 2,
            "SIMHASH_DUST_CHECK_SHARE": 0.0,
            **(settings or {}),
        },
    )


def closed(h: Dust) -> None:
    h.close()
    h.loop.close()


def check_copy(h: Dust, path: str, seed: int, host: str = SITE) -> Request:
    """``path`` kept, then its ``?sid=`` copy asked for: the request (checked, not skipped)."""
    h.fetched(f"{host}{path}", text(seed))
    request = h.request(f"{host}{path}?sid=1")
    assert "simhash_dust_check" in request.meta
    h.fetched(request.url, text(seed), request)
    return request


def test_a_learned_rule_checks_every_skip_until_it_has_passed_enough_checks() -> None:
    h = on_trial()
    try:
        learn_sid(h)
        (state,) = h.rules()
        assert (state.support, state.checks) == (2, 0)
        for n in range(5):
            check_copy(h, f"/b{n}", 20 + n)
        assert h.stat("dust/trial_checks") == 5
        assert h.stat("dust/check_passed") == 5
        assert h.rules()[0].checks == 5
        # Trusted now: the next copy is not fetched.
        h.fetched(f"{SITE}/b9", text(29))
        with pytest.raises(KnownCopy):
            h.request(f"{SITE}/b9?sid=1")
        assert h.stat("dust/trial_checks") == 5
        # Checks of one host's rule count for that host only.
        other = "http://other.example"
        for n in (1, 2):
            h.fetched(f"{other}/a{n}", text(40 + n))
            h.fetched(f"{other}/a{n}?sid=3", text(40 + n))
        check_copy(h, "/c", 50, other)
        assert h.stat("dust/trial_checks") == 6
    finally:
        closed(h)


def test_the_first_check_of_a_wrong_rule_kills_it_and_nothing_is_skipped() -> None:
    h = on_trial()
    try:
        learn_sid(h)
        for n in range(3):
            h.fetched(f"{SITE}/d{n}", text(60 + n))
        first = h.request(f"{SITE}/d0?sid=1")
        assert "simhash_dust_check" in first.meta
        h.fetched(first.url, text(70), first)  # a page of its own
        assert h.stat("dust/check_failed") == 1
        assert h.rules()[0].counterexamples == 1
        for n in (1, 2):  # neither checked nor skipped under a dead rule
            assert "simhash_dust_check" not in h.request(f"{SITE}/d{n}?sid=1").meta
        assert h.stat("dust/skipped") is None
    finally:
        closed(h)


def test_only_a_rule_that_survived_its_checks_is_trusted_by_the_next_crawl(
    tmp_path: Path,
) -> None:
    """A crawl that learned a rule but checked it fewer times than SIMHASH_DUST_MIN_CHECKS
    leaves it untrusted for the next crawl, which goes on checking where it stopped."""
    settings = {"SIMHASH_INDEX_URL": f"sqlite:///{tmp_path}/index.sqlite3"}
    first = on_trial(settings)
    try:
        learn_sid(first)
        for n in range(3):
            check_copy(first, f"/e{n}", 80 + n)
    finally:
        closed(first)
    second = on_trial(settings)
    try:
        assert second.rules()[0].checks == 3
        for n in range(3, 5):
            check_copy(second, f"/e{n}", 80 + n)
        assert second.stat("dust/trial_checks") == 2
    finally:
        closed(second)
    third = on_trial(settings)
    try:
        third.fetched(f"{SITE}/e9", text(89))
        with pytest.raises(KnownCopy):
            third.request(f"{SITE}/e9?sid=1")
        assert third.stat("dust/checks") is None
    finally:
        closed(third)
