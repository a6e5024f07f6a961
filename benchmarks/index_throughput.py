"""Check-and-add throughput: Redis (asyncio, many in flight), in-memory, embedded SQLite.

    python3 benchmarks/index_throughput.py [--redis 50000] [--memory 200000] [--sqlite 20000]

Side by side with the ``simhash`` library's ``SimhashIndex`` (k=3, 64 bits) on the same
fingerprints. Redis round trips are counted from INFO commandstats (EVALSHA calls).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

import redis
from _index_bench import pages, private_redis

from scrapy_simhash.index import open_async_index, open_index


def with_duplicates(count: int) -> list[tuple[str, int]]:
    """Random pages, every tenth a 2-bit variant of an earlier one."""
    data = list(pages(count))
    for i in range(10, count, 10):
        key, _ = data[i]
        data[i] = (key, data[i - 7][1] ^ 0b101)
    return data


async def redis_run(url: str, data: list[tuple[str, int]], in_flight: int) -> float:
    index = await open_async_index(url, max_distance=3)
    await index.observe("warm-up", 0)
    queue = iter(data)

    async def worker() -> None:
        for key, fp in queue:
            await index.observe(key, fp)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    elapsed = time.perf_counter() - started
    await index.close()
    return elapsed


def bench_redis(count: int, in_flight: int) -> tuple[float, int]:
    data = with_duplicates(count)
    with private_redis() as server:
        admin = redis.Redis.from_url(server.url)
        elapsed = asyncio.run(redis_run(server.url, data, in_flight))
        calls = int(admin.info("commandstats")["cmdstat_evalsha"]["calls"]) - 1
        admin.close()
    return count / elapsed, calls


def bench_sync(url: str, data: list[tuple[str, int]]) -> float:
    with open_index(url, max_distance=3) as index:
        started = time.perf_counter()
        for key, fp in data:
            index.check_and_add(key, fp)
        return len(data) / (time.perf_counter() - started)


def bench_simhash_library(data: list[tuple[str, int]]) -> float:
    from simhash import Simhash, SimhashIndex

    index = SimhashIndex([], k=3)
    started = time.perf_counter()
    for key, fp in data:
        value = Simhash(fp)
        if not index.get_near_dups(value):
            index.add(key, value)
    return len(data) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", type=int, default=50_000)
    parser.add_argument("--in-flight", type=int, default=128)
    parser.add_argument("--memory", type=int, default=200_000)
    parser.add_argument("--sqlite", type=int, default=20_000)
    args = parser.parse_args()

    rate, calls = bench_redis(args.redis, args.in_flight)
    print(
        f"redis asyncio ({args.in_flight} in flight), {args.redis:,} pages: {rate:,.0f}/s "
        f"[target >= 10,000: {'met' if rate >= 10_000 else 'missed'}]; "
        f"EVALSHA calls {calls:,} = {calls / args.redis:.2f} round trips/page"
    )

    data = with_duplicates(args.memory)
    memory = bench_sync("memory://", data)
    library = bench_simhash_library(data)
    print(
        f"memory://, {args.memory:,} pages: {memory:,.0f}/s "
        f"[target >= 100,000: {'met' if memory >= 100_000 else 'missed'}]; "
        f"simhash.SimhashIndex {library:,.0f}/s; ratio {memory / library:.1f}x"
    )

    with tempfile.TemporaryDirectory() as workdir:
        sqlite = bench_sync(f"sqlite:///{workdir}/bench.sqlite3", with_duplicates(args.sqlite))
    print(
        f"sqlite (WAL, file), {args.sqlite:,} pages: {sqlite:,.0f}/s "
        f"[target >= 5,000: {'met' if sqlite >= 5_000 else 'missed'}]; "
        f"vs memory {sqlite / memory:.2f}x, vs SimhashIndex {sqlite / library:.2f}x"
    )


if __name__ == "__main__":
    main()
