"""Bytes stored per recorded near-duplicate drop: Redis (INFO used_memory) and SQLite (file).

    python3 benchmarks/drop_record_cost.py [--sizes 10000,100000]

Each drop record holds the dropped URL, the kept URL, the distance and the time. URLs are
synthetic, ~54-byte like the index benchmarks' keys (a print-view URL dropped as a copy of
its article). Redis: a fresh private redis-server per size, the records written through the
index's own ``record_drop`` (one script call each), memory measured as used_memory minus
client buffers. SQLite: a fresh file per size, the file size after a checkpoint, minus the
size of an empty index file. "without URLs" subtracts the bytes of the two URL strings.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import redis
from _index_bench import private_redis

from scrapy_simhash.index import open_index


def drops(count: int) -> list[tuple[str, str]]:
    return [
        (
            f"https://news{i % 997}.example.com/print/2024/article-{i:08d}.html",
            f"https://news{i % 997}.example.com/2024/article-{i:08d}.html",
        )
        for i in range(count)
    ]


def used_memory(client: redis.Redis) -> int:
    info = client.info("memory")
    return int(info["used_memory"]) - int(info.get("mem_clients_normal", 0))


def redis_cost(size: int) -> dict[str, float]:
    records = drops(size)
    with private_redis() as server:
        client = redis.Redis.from_url(server.url)
        with open_index(server.url, drop_max_entries=size) as index:
            index.record_drop("warm-up", "warm-up", 0)  # the script cache is not per drop
            client.delete(*index.backend._codec.drop_keys)
            before = used_memory(client)
            for url, kept in records:
                index.record_drop(url, kept, 1)
            stored = index.drop_count()
            delta = used_memory(client) - before
        client.close()
    return _figures(size, stored, delta, records)


def sqlite_cost(size: int) -> dict[str, float]:
    records = drops(size)
    with tempfile.TemporaryDirectory(prefix="simhash-bench-") as workdir:
        path = Path(workdir) / "index.sqlite3"
        url = f"sqlite:///{path}"
        with open_index(url, drop_max_entries=size) as index:
            index.backend._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            before = os.path.getsize(path)
            for url_, kept in records:
                index.record_drop(url_, kept, 1)
            stored = index.drop_count()
            index.backend._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            delta = os.path.getsize(path) - before
    return _figures(size, stored, delta, records)


def _figures(
    size: int, stored: int, delta: int, records: list[tuple[str, str]]
) -> dict[str, float]:
    url_bytes = sum(len(a) + len(b) for a, b in records)
    return {
        "drops": size,
        "stored": stored,
        "bytes_per_drop": delta / stored,
        "bytes_per_drop_without_urls": (delta - url_bytes) / stored,
        "url_bytes_per_drop": url_bytes / stored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    print("| store | drops | bytes/drop | without the two URLs | URL bytes/drop |")
    print("|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        for name, measure in (("Redis", redis_cost), ("SQLite", sqlite_cost)):
            f = measure(size)
            print(
                f"| {name} | {f['stored']:,} | {f['bytes_per_drop']:.0f} | "
                f"{f['bytes_per_drop_without_urls']:.0f} | {f['url_bytes_per_drop']:.0f} |"
            )


if __name__ == "__main__":
    main()
