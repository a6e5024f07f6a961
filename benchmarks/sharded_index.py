"""One namespace over 1, 3 and 6 shards of a local 6-master Redis Cluster.

    python3 benchmarks/sharded_index.py [--pages 30000] [--processes 3]

Per shard count: round trips per page (pipelines a page waits for: by design, counted here
from the code path), script calls per page, Redis CPU per page on each master (script time:
INFO commandstats ``usec`` of EVALSHA and FCALL, which counts time the server was descheduled on a busy
machine; process time: INFO cpu, which also counts serving the calls), memory per page on
each master (MEMORY USAGE of the namespace's keys) and pages/s from ``--processes`` client processes (blocking
clients). On a shared 2-core machine the wall clock is capped by the clients; the per-master
CPU figures show the spread.

On 2 busy cores the masters of a cluster compete for the CPU while they serve one page's
round in parallel, and commandstats counts the time a script was descheduled. ``--one-server``
measures the script cost without that: every shard on one private redis-server, one client,
the rounds' calls then run one after another; script µs per page divided by the shard count
is what each master of an evenly spread cluster would spend.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from _index_bench import pages

from scrapy_simhash.index import open_index
from tests.redis_servers import RedisServer, start_cluster


def _client(url: str, shards: int, data: list[tuple[str, int]], barrier: Any, out: Any) -> None:
    with open_index(
        url,
        namespace="bench",
        shards=shards,
        max_distance=5,
        exact_distance=3,
        expected_size=len(data) * 3,
    ) as index:
        barrier.wait(timeout=120)
        started = time.perf_counter()
        for key, fp in data:
            index.observe(key, fp)
        out.put(time.perf_counter() - started)


def _stats(server: RedisServer) -> tuple[int, int, float]:
    """Script calls (EVALSHA: one shard; FCALL: the shards' library) and their usec (INFO
    commandstats), and the process's CPU seconds."""
    client = redis.Redis(port=server.port)
    try:
        stats = client.info("commandstats")
        calls = [stats.get(f"cmdstat_{name}", {}) for name in ("evalsha", "fcall")]
        cpu = client.info("cpu")
        return (
            sum(int(stat.get("calls", 0)) for stat in calls),
            sum(int(stat.get("usec", 0)) for stat in calls),
            float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
        )
    finally:
        client.close()


def run(servers: list[RedisServer], shards: int, count: int, processes: int) -> dict[str, Any]:
    for server in servers:
        redis.Redis(port=server.port).flushall()
        redis.Redis(port=server.port).config_resetstat()
    url = f"redis+cluster://127.0.0.1:{servers[0].port}/0"
    data = list(pages(count))
    for i in range(10, count, 10):  # every tenth page a 2-bit variant of an earlier one
        data[i] = (data[i][0], data[i - 7][1] ^ 0b101)
    open_index(
        url, namespace="bench", shards=shards, max_distance=5, exact_distance=3, expected_size=count
    ).close()
    for server in servers:
        redis.Redis(port=server.port).config_resetstat()
    before = [_stats(server)[2] for server in servers]
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(processes), context.Queue()
    procs = [
        context.Process(target=_client, args=(url, shards, data[p::processes], barrier, out))
        for p in range(processes)
    ]
    for proc in procs:
        proc.start()
    elapsed = max(out.get(timeout=3600) for _ in procs)
    for proc in procs:
        proc.join()
    stats = [_stats(server) for server in servers]
    memory = [server.simhash_bytes() for server in servers]
    used = [m for m in memory if m > max(memory) / 100]  # not the masters holding no shard
    return {
        "shards": shards,
        "pages/s": count / elapsed,
        "round trips/page": 1 if shards == 1 else 2,
        "script calls/page": sum(calls for calls, _, _ in stats) / count,
        "script us/page per master": [round(usec / count, 1) for _, usec, _ in stats],
        "script us/page busiest master": max(usec for _, usec, _ in stats) / count,
        "script us/page all masters": sum(usec for _, usec, _ in stats) / count,
        "process cpu us/page per master": [
            round((cpu - start) * 1e6 / count, 1)
            for (_, _, cpu), start in zip(stats, before, strict=True)
        ],
        "process cpu us/page busiest master": max(
            (cpu - start) * 1e6 / count for (_, _, cpu), start in zip(stats, before, strict=True)
        ),
        "bytes/page per master": [round(m / count, 1) for m in memory],
        "bytes/page all masters": sum(memory) / count,
        "memory max/mean over used masters": max(used) / (sum(used) / len(used)),
    }


def run_one_server(server: RedisServer, shards: int, count: int) -> dict[str, Any]:
    """All shards on one server, one client: script cost per page without CPU contention."""
    client = redis.Redis(port=server.port)
    client.flushall()
    data = list(pages(count))
    for i in range(10, count, 10):
        data[i] = (data[i][0], data[i - 7][1] ^ 0b101)
    options: dict[str, Any] = {"shards": shards} if shards > 1 else {}
    with open_index(
        server.url,
        namespace="bench",
        max_distance=5,
        exact_distance=3,
        expected_size=count,
        **options,
    ) as index:
        client.config_resetstat()
        started = time.perf_counter()
        for key, fp in data:
            index.observe(key, fp)
        elapsed = time.perf_counter() - started
    calls, usec, _ = _stats(server)
    inner = {
        name.removeprefix("cmdstat_"): round(stat["calls"] / count, 2)
        for name, stat in client.info("commandstats").items()
        if name not in ("cmdstat_evalsha", "cmdstat_fcall", "cmdstat_config|resetstat")
    }
    client.close()
    return {
        "shards": shards,
        "pages/s (one client)": count / elapsed,
        "script calls/page": calls / count,
        "script us/call": usec / max(calls, 1),
        "script us/page, all shards": usec / count,
        "script us/page per shard": usec / count / shards,
        "commands in scripts/page": inner,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=30000)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--shards", type=int, nargs="*", default=[1, 3, 6])
    parser.add_argument(
        "--one-server",
        action="store_true",
        help="every shard on one private redis-server (see the docstring)",
    )
    args = parser.parse_args()
    if args.one_server:
        with tempfile.TemporaryDirectory(prefix="simhash-shards-") as workdir:
            server = RedisServer(Path(workdir)).start()
            try:
                for shards in args.shards:
                    for name, value in run_one_server(server, shards, args.pages).items():
                        shown = f"{value:.2f}" if isinstance(value, float) else value
                        print(f"{name:>36}: {shown}")
                    print(flush=True)
            finally:
                server.stop()
        return
    with tempfile.TemporaryDirectory(prefix="simhash-shards-") as workdir:
        servers = start_cluster(Path(workdir), masters=6)
        try:
            for shards in args.shards:
                result = run(servers, shards, args.pages, args.processes)
                for name, value in result.items():
                    shown = f"{value:.2f}" if isinstance(value, float) else value
                    print(f"{name:>36}: {shown}")
                print(flush=True)
        finally:
            for server in servers:
                server.stop()


if __name__ == "__main__":
    main()
