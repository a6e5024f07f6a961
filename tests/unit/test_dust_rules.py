"""URL rules: what a pair of copies teaches, how rules rewrite URLs, and what a process
trusts, checks and undoes (pure core, no Scrapy)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.dust import Rule, RuleBook, RuleState, learn, rewrites
from scrapy_simhash.dust.rules import normal, used_rules

HOST = "127.0.0.1:8000"


def url(path: str, host: str = HOST) -> str:
    return f"http://{host}{path}"


def test_a_tracking_parameter_is_learned_and_removed() -> None:
    rules = learn(url("/a.html?utm_source=x&id=7"), url("/a.html?id=7"))
    assert rules == ["param:utm_source"]
    assert rewrites(url("/b.html?id=8&utm_source=y"), rules) == [url("/b.html?id=8")]


def test_path_rules_print_amp_index() -> None:
    assert learn(url("/print/news/a.html"), url("/news/a.html")) == ["prefix:/print>"]
    amp = learn(url("/n/2021/abc/amp"), url("/n/2021/abc.html"))
    assert amp == ["suffix:.html>/amp"]
    # Both ways: each names the other.
    assert url("/n/x.html") in rewrites(url("/n/x/amp"), amp)
    assert url("/n/x/amp") in rewrites(url("/n/x.html"), amp)
    assert learn(url("/a/index.html"), url("/a/")) == ["suffix:/index.html>/"]


def test_host_alias_with_parameters() -> None:
    rules = learn(url("/a?utm_id=3", "m.example.com"), url("/a", "www.example.com"))
    assert rules == ["host:http://www.example.com", "param:utm_id"]
    assert rewrites(url("/b?utm_id=4", "m.example.com"), rules)[0] == url("/b", "www.example.com")


def test_a_session_path_parameter_is_learned_and_removed() -> None:
    rules = learn(url("/a.html;jsessionid=ABC"), url("/a.html"))
    assert rules == ["pathparam:jsessionid"]
    assert rewrites(url("/b.html;jsessionid=XYZ"), rules) == [url("/b.html")]
    assert normal(url("/b.html;jsessionid=XYZ"), rules) == url("/b.html")
    assert learn(url("/a.html;v=1"), url("/b.html")) == []


def test_pairs_no_rule_explains_teach_nothing() -> None:
    assert learn(url("/a?page=2"), url("/a?page=3")) == []  # a value changed, not removed
    assert learn(url("/x/2021/abc.html"), url("/y/2022/def.html")) == []  # two ids
    assert learn(url("/a.html"), url("/a.html")) == []
    assert learn("http://h/a.html", "https://h/a.html") == []


def test_the_kept_url_may_be_the_longer_one() -> None:
    # The copy with ?print=1 was kept first: the rule is the same, it only maps backwards.
    assert learn(url("/a.html"), url("/a.html?print=1")) == ["param:print"]


def with_query(path: str, params: list[tuple[str, str]]) -> str:
    query = "&".join(f"{n}={v}" for n, v in params)
    return url(f"{path}?{query}" if query else path)


names = st.sampled_from(["utm_source", "sid", "print", "ref", "page", "id", "lang"])
values = st.text("abcxyz0123", min_size=1, max_size=4)
queries = st.lists(st.tuples(names, values), max_size=4, unique_by=lambda p: p[0])


@given(queries, st.lists(names, min_size=1, max_size=3, unique=True), values)
def test_learned_rules_remove_only_what_the_copy_adds(
    base: list[tuple[str, str]], extra: list[str], value: str
) -> None:
    kept_params = [(n, v) for n, v in base if n not in extra]
    kept = with_query("/p.html", kept_params)
    copy = with_query("/p.html", kept_params + [(n, value) for n in extra])
    rules = learn(copy, kept)
    assert rules == sorted(f"param:{n}" for n in extra)
    assert kept in rewrites(copy, rules)
    # Applied to another URL, they never touch a parameter the pair kept.
    other = with_query("/q.html", kept_params)
    for rewritten in rewrites(other, rules):
        for n, v in kept_params:
            assert f"{n}={v}" in rewritten


@given(st.sampled_from(["page", "id", "lang"]), values, values)
def test_a_parameter_whose_value_changes_the_page_is_never_learned(
    name: str, one: str, two: str
) -> None:
    assert learn(url(f"/a?{name}={one}"), url(f"/a?{name}={two}")) == [] or one == two


def test_normal_form_relates_a_url_to_a_kept_copy_it_cannot_rewrite_into() -> None:
    rules = ["param:print", "suffix:.html>/amp"]
    assert normal(url("/a.html"), rules) == normal(url("/a.html?print=1"), rules)
    assert normal(url("/a.html"), rules) == normal(url("/a/amp"), rules)
    assert used_rules(url("/a.html?print=1"), url("/a.html"), rules) == ["param:print"]


def book(min_support: int = 3, min_checks: int = 0) -> RuleBook[str]:
    return RuleBook(min_support, min_checks=min_checks)


def test_a_rule_is_trusted_with_enough_support_on_its_host_only() -> None:
    b = book()
    b.supported(Rule(HOST, "param:sid"), 2)
    assert b.trusted(HOST) == []
    assert b.alive(HOST) == ["param:sid"]
    assert b.candidates(url("/a?sid=1")) == []
    b.supported(Rule(HOST, "param:sid"), 3)
    assert b.trusted(HOST) == ["param:sid"]
    assert b.candidates(url("/a?sid=1")) == [(url("/a"), (Rule(HOST, "param:sid"),))]
    assert b.trusted("other.example") == []
    assert b.candidates(url("/a?sid=1", "other.example")) == []


def test_a_learned_rule_is_trusted_only_after_its_checks_on_its_host() -> None:
    b = book(min_support=3, min_checks=5)
    ref = Rule(HOST, "param:ref")
    b.supported(ref, 3)
    assert b.learned(HOST) == ["param:ref"]
    assert b.trusted(HOST) == []
    # Learned rules name candidates: requests to check while the rule is not trusted.
    assert b.candidates(url("/a?ref=x")) == [(url("/a"), (ref,))]
    assert not b.is_trusted(ref)
    for passed in range(1, 5):
        b.checked(ref, passed)
        assert not b.is_trusted(ref)
    b.checked(ref, 5)
    assert b.is_trusted(ref)
    assert b.trusted(HOST) == ["param:ref"]
    b.checked(ref, 2)  # an older count read later takes nothing back
    assert b.is_trusted(ref)
    # The same rule of another host has its own support and checks.
    other = Rule("other.example", "param:ref")
    b.supported(other, 3)
    assert b.learned("other.example") == ["param:ref"]
    assert not b.is_trusted(other)
    # Checks come from the store with the support; a dead rule is never trusted.
    b.load([RuleState("other.example", "param:ref", 3, 0, "", 5)])
    assert b.is_trusted(other)
    b.died([ref])
    assert not b.is_trusted(ref)
    assert b.learned(HOST) == []


def test_a_dead_rule_returns_the_requests_skipped_under_it_once() -> None:
    b = book(1)
    sid, ref = Rule(HOST, "param:sid"), Rule(HOST, "param:ref")
    b.supported(sid, 1)
    b.supported(ref, 1)
    assert b.skipped("r1", (sid,))
    assert b.skipped("r2", (sid, ref))
    assert b.skipped("r3", (ref,))
    assert sorted(b.died([sid])) == ["r1", "r2"]
    assert b.trusted(HOST) == ["param:ref"]
    assert not b.skipped("r4", (sid,))  # nothing is skipped under a dead rule
    assert b.died([ref]) == ["r3"]  # r2 was already returned
    assert b.skipped_count == 0


def test_rules_killed_elsewhere_are_seen_at_load() -> None:
    b = book(1)
    b.load([RuleState(HOST, "param:sid", 5, 0, "")])
    assert b.skipped("r1", (Rule(HOST, "param:sid"),))
    assert b.load([RuleState(HOST, "param:sid", 5, 0, "")]) == []
    assert b.load([RuleState(HOST, "param:sid", 5, 1, "x")]) == ["r1"]
    assert b.trusted(HOST) == []


def test_skips_are_bounded() -> None:
    b: RuleBook[int] = RuleBook(1, min_checks=0, max_skipped=2)
    rule = Rule(HOST, "param:sid")
    b.supported(rule, 1)
    assert b.skipped(1, (rule,))
    assert b.skipped(2, (rule,))
    assert not b.skipped(3, (rule,))  # not remembered, so not skipped


def test_checks_test_each_live_rule_and_wait_for_unknown_pages() -> None:
    b = book()
    b.supported(Rule(HOST, "param:sid"), 1)
    b.supported(Rule(HOST, "param:ref"), 1)
    checks = b.checks(url("/a?sid=1&ref=2"), 0xABC)
    assert {(c.other, c.rules) for c in checks} == {
        (url("/a?ref=2"), (Rule(HOST, "param:sid"),)),
        (url("/a?sid=1"), (Rule(HOST, "param:ref"),)),
    }
    for check in checks:
        b.wait(check)
    assert [c.url for c in b.waiting_for(url("/a?ref=2"))] == [url("/a?sid=1&ref=2")]
    assert b.waiting_for(url("/a?ref=2")) == []


def test_pending_checks_are_bounded() -> None:
    b: RuleBook[str] = RuleBook(1, min_checks=0, max_pending=5)
    b.supported(Rule(HOST, "param:sid"), 1)
    rng = random.Random(7)
    for n in range(50):
        for check in b.checks(url(f"/p{n}?sid={rng.random()}"), n):
            b.wait(check)
    assert len(b._pending) == 5


def test_kept_urls_answer_for_copies_rules_only_map_backwards() -> None:
    b = book(1)
    b.supported(Rule(HOST, "param:print"), 1)
    b.kept(url("/a.html?print=1"))
    assert b.candidates(url("/a.html")) == [(url("/a.html?print=1"), (Rule(HOST, "param:print"),))]


def test_ids_and_page_numbers_in_paths_are_never_rules() -> None:
    from scrapy_simhash.dust.rules import learn

    assert learn("https://s.example/item/1", "https://s.example/item/2") == []
    assert learn("https://s.example/item/10", "https://s.example/item/9") == []
    assert learn("https://s.example/story/page/2", "https://s.example/story") == []
    assert learn("https://s.example/story/amp", "https://s.example/story") != []
