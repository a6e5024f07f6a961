"""Bytes stored per learned URL rule (SIMHASH_DUST_ENABLED): Redis (used_memory) and SQLite.

    python3 benchmarks/rule_store_cost.py [--rules 1000]

A rule stores its host, its text, support and counterexample counts, and one digest per
supporting pair up to ``MAX_PAIRS`` (32): the worst case, measured here, is every rule at
full support. Hosts are ~22 bytes (``news123.example.com:80``), rules ~16 (``param:utm_source``).
The namespace holds at most ``MAX_RULES`` (10,000) rules, so its rule store is bounded by
10,000 times the figure per rule.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import redis
from _index_bench import private_redis
from drop_record_cost import used_memory

from scrapy_simhash.dust import open_rule_store
from scrapy_simhash.dust.store import MAX_PAIRS, RuleStore

NAMES = ["utm_source", "utm_medium", "sessionid", "print", "ref", "fbclid", "gclid", "sid"]


def fill(store: RuleStore, rules: int) -> None:
    for n in range(rules):
        host = f"news{n // len(NAMES)}.example.com:80"
        rule = f"param:{NAMES[n % len(NAMES)]}"
        for pair in range(MAX_PAIRS):
            store.support(host, rule, f"https://{host}/a{pair}?x=1", f"https://{host}/a{pair}")


def redis_cost(rules: int) -> float:
    with private_redis() as server:
        client = redis.Redis.from_url(server.url)
        with open_rule_store(server.url, "bench") as store:
            store.support("warm", "up", "a", "b")  # the script cache is not per rule
            store.clear()
            before = used_memory(client)
            fill(store, rules)
            delta = used_memory(client) - before
        client.close()
    return delta / rules


def sqlite_cost(rules: int) -> float:
    with tempfile.TemporaryDirectory(prefix="simhash-bench-") as workdir:
        path = Path(workdir) / "index.sqlite3"
        with open_rule_store(f"sqlite:///{path}", "bench") as store:
            store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
            before = os.path.getsize(path)
            fill(store, rules)
            store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
            delta = os.path.getsize(path) - before
    return delta / rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1000)
    args = parser.parse_args()
    print(f"| store | rules | bytes/rule at full support ({MAX_PAIRS} pairs) |")
    print("|---|---|---|")
    for name, measure in (("Redis", redis_cost), ("SQLite", sqlite_cost)):
        print(f"| {name} | {args.rules:,} | {measure(args.rules):,.0f} |")


if __name__ == "__main__":
    main()
