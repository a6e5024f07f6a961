"""One rule store contract, every backend: memory, SQLite, Redis and Redis Cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.dust import AsyncRuleStore, RuleState, open_rule_store
from scrapy_simhash.dust import store as store_module
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.reset import reset_namespace
from tests.conftest import backend_params, backend_url

#: Rules are two hashes under the namespace's hash tag: index sharding does not spread them.
KINDS = ("memory", "sqlite", "redis", "cluster")
H = "example.com"


@pytest.fixture(params=backend_params(KINDS))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    url = backend_url(request.param, request, tmp_path)
    opened: list[Any] = []

    def make_store(namespace: str = "ns") -> Any:
        store = open_rule_store(url, namespace)
        opened.append(store)
        return store

    make_store.backend = request.param  # type: ignore[attr-defined]
    make_store.url = url  # type: ignore[attr-defined]
    yield make_store
    for store in opened:
        store.clear()
        store.close()


def test_support_counts_distinct_pairs_once(make: Callable[..., Any]) -> None:
    store = make()
    assert store.support(H, "param:sid", "http://example.com/a?sid=1", "http://example.com/a") == 1
    # The same pair again, either way round, is no new support.
    assert store.support(H, "param:sid", "http://example.com/a?sid=1", "http://example.com/a") == 1
    assert store.support(H, "param:sid", "http://example.com/a", "http://example.com/a?sid=1") == 1
    assert store.support(H, "param:sid", "http://example.com/b?sid=2", "http://example.com/b") == 2
    assert store.rules() == [RuleState(H, "param:sid", 2, 0, "")]


def test_rules_are_per_host_and_per_namespace(make: Callable[..., Any]) -> None:
    store, other = make(), make("other")
    store.support(H, "param:sid", "a", "b")
    store.support("m.example.com", "param:sid", "a", "b")
    assert [(s.host, s.rule) for s in store.rules()] == [
        (H, "param:sid"),
        ("m.example.com", "param:sid"),
    ]
    assert other.rules() == []


def test_a_counterexample_kills_the_rule_and_is_kept(make: Callable[..., Any]) -> None:
    store = make()
    for n in range(3):
        store.support(H, "param:lang", f"http://example.com/{n}?lang=de", f"http://example.com/{n}")
    store.kill(H, "param:lang", "/x?lang=de and /x differ by 30 bits")
    store.kill(H, "param:lang", "a second one")
    (state,) = store.rules()
    assert state == RuleState(H, "param:lang", 3, 2, "/x?lang=de and /x differ by 30 bits")
    assert not state.learned(1)
    assert not state.trusted(1, 0)
    # A rule can die before any support (a check of a rule learned elsewhere).
    store.kill(H, "param:page", "page 2 is not page 1")
    assert store.rules()[1] == RuleState(H, "param:page", 0, 1, "page 2 is not page 1")


def test_checks_passed_are_counted_once_each_and_make_a_learned_rule_trusted(
    make: Callable[..., Any],
) -> None:
    store, other_process = make(), make()
    for n in range(3):
        store.support(H, "param:ref", f"http://example.com/{n}?ref=x", f"http://example.com/{n}")
    (state,) = store.rules()
    assert state.checks == 0
    assert state.learned(3)
    assert not state.trusted(3, 1)  # support alone: checked, never trusted
    assert state.trusted(3, 0)
    check = ("http://example.com/7?ref=x", "http://example.com/7")
    assert store.passed(H, "param:ref", *check) == 1
    assert store.passed(H, "param:ref", *check) == 1  # the same check again counts nothing
    assert store.passed(H, "param:ref", *reversed(check)) == 1
    # A check is no supporting pair, nor is a supporting pair a check.
    assert store.support(H, "param:ref", *check) == 4
    assert store.passed(H, "param:ref", "http://example.com/8?ref=x", "http://example.com/8") == 2
    assert store.rules() == [RuleState(H, "param:ref", 4, 0, "", 2)]
    assert store.rules()[0].trusted(3, 2)
    # Per host and per rule: a rule the store does not hold gains no checks.
    assert store.passed("m.example.com", "param:ref", *check) == 0
    assert store.passed(H, "param:sid", *check) == 0
    assert [s.rule for s in store.rules()] == ["param:ref"]
    if make.backend != "memory":  # type: ignore[attr-defined]
        assert other_process.rules()[0].checks == 2
    # A counterexample kills the rule whatever its checks.
    store.kill(H, "param:ref", "/9?ref=x and /9 differ by 30 bits")
    assert not store.rules()[0].trusted(3, 2)
    # Cleared with the rule: learned again, it is checked again.
    store.clear()
    store.support(H, "param:ref", *check)
    assert store.rules()[0].checks == 0


def test_a_rule_store_written_before_checks_were_counted_trusts_none_of_its_rules(
    tmp_path: Path,
) -> None:
    """Rules that an earlier version trusted on support alone are checked again."""
    import sqlite3

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE simhash_dust_rules (ns TEXT NOT NULL, host TEXT NOT NULL, rule TEXT NOT "
        "NULL, support INTEGER NOT NULL DEFAULT 0, counterexamples INTEGER NOT NULL DEFAULT 0, "
        "example TEXT NOT NULL DEFAULT '', PRIMARY KEY (ns, host, rule)) WITHOUT ROWID;"
        "CREATE TABLE simhash_dust_pairs (ns TEXT NOT NULL, pair INTEGER NOT NULL, "
        "PRIMARY KEY (ns, pair)) WITHOUT ROWID;"
        "INSERT INTO simhash_dust_rules VALUES ('ns', 'example.com', 'param:ref', 3, 0, '');"
    )
    db.commit()
    db.close()
    with open_rule_store(f"sqlite:///{path}", "ns") as store:
        (state,) = store.rules()
        assert (state.support, state.checks) == (3, 0)
        assert not state.trusted(3, 1)
        assert (
            store.passed(H, "param:ref", "http://example.com/1?ref=x", "http://example.com/1") == 1
        )


def test_growth_is_bounded(make: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_PAIRS", 4)
    monkeypatch.setattr(store_module, "MAX_RULES", 3)
    store = make()
    supports = [store.support(H, "param:sid", f"c{n}", f"k{n}") for n in range(10)]
    assert supports == [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]
    checks = [store.passed(H, "param:sid", f"u{n}", f"k{n}") for n in range(6)]
    assert checks == [1, 2, 3, 4, 4, 4]
    assert store.support(H, "param:a", "c", "k") == 1
    assert store.support(H, "param:b", "c", "k") == 1
    assert store.support(H, "param:c", "c", "k") == 0  # a fourth rule is not recorded
    assert len(store.rules()) == 3


def test_all_processes_share_the_rules(make: Callable[..., Any]) -> None:
    one, two = make(), make()
    one.support(H, "param:sid", "c1", "k1")
    if make.backend == "memory":  # type: ignore[attr-defined]
        # memory:// rules live in one store object: a second one starts empty.
        assert two.support(H, "param:sid", "c2", "k2") == 1
        return
    assert two.support(H, "param:sid", "c2", "k2") == 2
    two.kill(H, "param:sid", "no")
    assert one.rules()[0].counterexamples == 1


def test_clear_and_namespace_reset(make: Callable[..., Any]) -> None:
    store = make()
    store.support(H, "param:sid", "c", "k")
    store.support(H, "param:ref", "c", "k")
    if make.backend != "memory":  # type: ignore[attr-defined]
        cleared = reset_namespace(make.url, "ns", {})  # type: ignore[attr-defined]
        assert str(cleared[0]) == "2 URL rules"
    else:
        assert store.clear() == 2
    assert store.rules() == []
    store.support(H, "param:sid", "c", "k")
    assert store.clear() == 1
    assert store.rules() == []


def test_async_store_runs_off_the_loop(make: Callable[..., Any]) -> None:
    url = make.url  # type: ignore[attr-defined]

    async def use() -> None:
        store = AsyncRuleStore(lambda: open_rule_store(url, "async"))
        try:
            assert await store.support(H, "param:sid", "c", "k") == 1
            await store.kill(H, "param:sid", "x")
            assert (await store.rules())[0].counterexamples == 1
        finally:
            await store.aclose()

    asyncio.run(use())
    with open_rule_store(url, "async") as cleanup:
        cleanup.clear()


def test_unknown_scheme_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigurationError, match="no URL rule store"):
        open_rule_store("mongodb://localhost/x", "ns")
