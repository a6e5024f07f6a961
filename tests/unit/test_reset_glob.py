"""A reset clears its own namespace only, whatever glob characters the namespace holds.

Redis finds a namespace's keys with ``SCAN MATCH``, whose pattern is a glob: ``shop?``
unescaped also matched ``shopX``, so resetting one shop cleared another's host templates.
Each test fills several namespaces on a real Redis server with every kind of state (index,
drop record, recrawl schedule, URL rules, host templates), resets one and counts what the
others still hold.
"""

from __future__ import annotations

import contextlib
import io

import pytest
import redis

from scrapy_simhash.cli import main as cli_main
from scrapy_simhash.dust import open_rule_store
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store
from scrapy_simhash.reset import reset_namespace
from scrapy_simhash.storage import open_template_store
from scrapy_simhash.template.store import glob_escape

pytestmark = pytest.mark.redis

#: Namespaces whose names are globs, each with namespaces the unescaped glob also matched.
CASES = [
    ("shop?", ["shopX", "shop1"]),
    ("shop*", ["shop", "shopping", "shop?"]),
    ("shop[ab]", ["shopa", "shopb"]),
    ("shop[", ["shop[x"]),
    ("a\\b", ["a\\\\b", "ab"]),
    ("*", ["anything", "?"]),
]


def _fill(url: str, namespace: str) -> None:
    """Put one of each kind of state in ``namespace``."""
    with open_index(url, namespace=namespace) as index:
        index.observe(f"https://{namespace}.example/a", 0x0123_4567_89AB_CDEF)
        index.record_drop(f"https://{namespace}.example/b", f"https://{namespace}.example/a", 1)
    with open_recrawl_store(url, namespace=namespace) as store:
        store.add([f"https://{namespace}.example/a"])
    with open_rule_store(url, namespace) as rules:
        rules.support("example.com", "drop ?utm", "https://e.com/a?utm=1", "https://e.com/a")
    templates = open_template_store(url, namespace)
    try:
        templates.learn("example.com", [1, 2, 3])
    finally:
        templates.close()


def _held(url: str, namespace: str, *, index: bool = True) -> dict[str, int]:
    """How much of each kind of state ``namespace`` holds (``index`` False: all but the
    index, which the reset command rebuilds with the project's fingerprint scheme)."""
    counts: dict[str, int] = {}
    if index:
        with open_index(url, namespace=namespace) as opened:
            counts = {"fingerprints": opened.count(), "drops": opened.drop_count()}
    with open_recrawl_store(url, namespace=namespace) as store:
        counts["recrawl"] = store.count()
    with open_rule_store(url, namespace) as rules:
        counts["rules"] = len(rules.rules())
    templates = open_template_store(url, namespace)
    try:
        counts["templates"] = templates.hosts()
    finally:
        templates.close()
    return counts


FULL = {"fingerprints": 1, "drops": 1, "recrawl": 1, "rules": 1, "templates": 1}
EMPTY = {"fingerprints": 0, "drops": 0, "recrawl": 0, "rules": 0, "templates": 0}


@pytest.mark.parametrize(("target", "others"), CASES, ids=[c[0] for c in CASES])
def test_a_reset_leaves_namespaces_its_name_matches_as_a_glob(
    redis_url: str, target: str, others: list[str]
) -> None:
    url = redis_url
    for namespace in [target, *others]:
        _fill(url, namespace)
        assert _held(url, namespace) == FULL, namespace
    reset_namespace(url, target)
    assert _held(url, target) == EMPTY
    for namespace in others:
        assert _held(url, namespace) == FULL, namespace


def test_the_reset_command_leaves_the_other_shop(redis_url: str) -> None:
    """``scrapy simhash reset --namespace 'shop?'`` as the report named it."""
    url = redis_url
    for namespace in ("shop?", "shopX"):
        _fill(url, namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["reset", "--index-url", url, "--namespace", "shop?", "--yes"])
    said = out.getvalue()
    assert code == 0, said
    for line in (
        "cleared fingerprints",
        "cleared 1 URL rules",
        "cleared 1 host templates",
        "cleared 1 recrawl states",
    ):
        assert line in said, said
    assert _held(url, "shop?", index=False) == {"recrawl": 0, "rules": 0, "templates": 0}
    assert _held(url, "shopX") == FULL


def test_the_escaped_pattern_matches_its_own_keys_only(redis_url: str) -> None:
    """What Redis itself answers to the escaped pattern, for every glob character."""
    client = redis.Redis.from_url(redis_url)
    names = ["n?", "n*", "n[x]", "n\\", "n]", "nX", "nx", "n\\\\"]
    try:
        for name in names:
            client.set(f"simhash:{{{name}}}:tp:host", 1)
        for name in names:
            pattern = glob_escape(f"simhash:{{{name}}}:tp:") + "*"
            found = {k.decode() for k in client.scan_iter(match=pattern, count=1000)}
            assert found == {f"simhash:{{{name}}}:tp:host"}, (name, found)
    finally:
        client.close()
