"""What the hosts' template memory costs: bytes per host in each store, writes per page.

Run by hand from the repository root (needs ``redis-server``; reads ../shared/data/pages for
the lines of real pages when it is there, else pages of 36 random lines)::

    python3 benchmarks/template_cost.py [--hosts 100000] [--pages 2000]

Printed:

- Redis ``used_memory`` growth per host over ``--hosts`` hosts of one page (each page seen
  and kept, as a crawl counts it; the lines of the dev pages, each host a real page's
  buckets shifted by a number of its own), and how many of their lines the small record
  holds; then per host of two pages (its own counters);
- SQLite file growth and Python heap growth per host (memory store);
- store writes per page through the crawl's glue (:class:`TemplateMemory`): Redis script
  calls counted by the server (``INFO commandstats``), over ``--pages`` pages of 20 hosts;
- CPU per page of the stores' writes (``time.process_time``, one process; a figure of
  this machine as loaded, not a wall-clock time).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis

from scrapy_simhash.storage import open_template_store
from scrapy_simhash.template import SLOTS, learnable
from scrapy_simhash.template.store import (
    Count,
    MemoryTemplateStore,
    RedisTemplateStore,
    SqliteTemplateStore,
    TemplateStore,
    small_record,
    small_slots,
)
from tests.redis_servers import RedisServer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def page_slots(limit: int = 300) -> list[tuple[int, ...]]:
    """The buckets of real pages (every k-th page of the dev corpus), or random ones."""
    manifest = DATA / "pages" / "manifest.jsonl"
    if not manifest.is_file():
        import random

        rng = random.Random(1)
        return [tuple(rng.sample(range(SLOTS), 36)) for _ in range(limit)]
    from scrapy_simhash.fingerprint import Fingerprinter

    fingerprinter = Fingerprinter()
    rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    pages = []
    for row in rows[:: max(1, len(rows) // limit)][:limit]:
        body = gzip.decompress((DATA / row["path"]).read_bytes())
        slots = tuple(learnable(fingerprinter.fingerprint_page(body, content_type="text/html")))
        if slots:
            pages.append(slots)
    return pages


def one_page_hosts(
    store: TemplateStore,
    pages: list[tuple[int, ...]],
    hosts: int,
    first: int = 0,
    per_host: int = 1,
) -> None:
    """``hosts`` hosts of ``per_host`` pages each, every page seen and kept."""
    counts: list[Count] = []
    for n in range(first, first + hosts):
        for p in range(per_host):
            base = pages[(n + p) % len(pages)]
            slots = tuple((slot + n) % SLOTS for slot in base)
            counts += [Count(f"host{n}.example", slots), Count(f"host{n}.example", slots, True)]
        if len(counts) >= 2000:
            store.record(counts)
            counts = []
    store.record(counts)


def redis_bytes(url: str, pages: list[tuple[int, ...]], hosts: int) -> None:
    client = redis.Redis.from_url(url)
    for per_host, count in ((1, hosts), (2, min(hosts, 2000))):
        client.flushall()
        store = RedisTemplateStore(url, f"cost{per_host}")
        store.record([Count("warm.example", (1,))])
        before = int(client.info("memory")["used_memory"])
        one_page_hosts(store, pages, count, per_host=per_host)
        grown = int(client.info("memory")["used_memory"]) - before
        print(
            f"Redis: {count:,} hosts of {per_host} page(s): {grown / count:,.1f} B a host "
            f"(used_memory growth, {store.hosts():,} hosts counted)"
        )
        store.close()
    held = [len(small_slots(small_record(slots))) / len(slots) for slots in pages]
    whole = sum(1 for share in held if share == 1.0) / len(held)
    print(
        f"  small record: every line of {whole:.0%} of the pages, "
        f"{sum(held) / len(held):.0%} of the lines on average "
        f"({len(pages)} dev pages, median {sorted(map(len, pages))[len(pages) // 2]} buckets)"
    )
    client.close()


def local_bytes(pages: list[tuple[int, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.sqlite3"
        sqlite = SqliteTemplateStore(str(path), "ns")
        one_page_hosts(sqlite, pages, 10)
        sqlite._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = path.stat().st_size
        one_page_hosts(sqlite, pages, 2000, first=10)
        sqlite._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        print(f"SQLite: {(path.stat().st_size - before) / 2000:,.0f} B a host (file growth)")
        sqlite.close()
    memory = MemoryTemplateStore()
    one_page_hosts(memory, pages, 10)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    one_page_hosts(memory, pages, 2000, first=10)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(f"memory: {grown / 2000:,.0f} B a host (Python heap growth)")


def glue_writes(url: str, pages: list[tuple[int, ...]], count: int) -> None:
    """Store writes per page through the glue, counted by the Redis server."""
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.glue.templates import TemplateMemory

    fingerprinter = Fingerprinter()
    bodies = [
        f"<html><body><p>{' '.join(f'line {s} of a page' for s in slots[:12])} {n}</p>"
        f"<p>footer of host {n % 20}</p></body></html>".encode()
        for n, slots in enumerate(pages)
    ]
    client = redis.Redis.from_url(url)
    client.flushall()
    client.config_resetstat()

    async def crawl() -> None:
        memory = TemplateMemory(
            lambda: open_template_store(url, "glue"),
            fingerprinter,
            count=lambda _: None,
            timeout_secs=10.0,
        )
        for n in range(count):
            page = fingerprinter.fingerprint_page(bodies[n % len(bodies)])
            url_n = f"http://host{n % 20}.example/{n}"
            await memory.apply(url_n, page)
            await memory.see(url_n, page)
            await memory.learn(url_n, page)
        await memory.aclose()

    asyncio.run(crawl())
    stats = client.info("commandstats")
    writes = sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("evalsha", "eval"))
    print(
        f"glue, Redis: {writes / count:.3f} store writes a page ({writes} over {count} pages "
        "seen and kept, 20 hosts)"
    )
    client.close()


def write_cpu(url: str, pages: list[tuple[int, ...]], count: int) -> None:
    """CPU per page of the stores' one write (seen part, and the last page's kept part)."""
    with tempfile.TemporaryDirectory() as tmp:
        stores: dict[str, TemplateStore] = {
            "memory": MemoryTemplateStore(),
            "sqlite": SqliteTemplateStore(f"{tmp}/t.sqlite3", "cpu"),
            "redis": RedisTemplateStore(url, "cpu"),
        }
        for name, store in stores.items():
            started = time.process_time()
            last: Count | None = None
            for n in range(count):
                slots = pages[n % len(pages)]
                host = f"host{n % 20}.example"
                store.record([*(c for c in [last] if c), Count(host, slots)])
                last = Count(host, slots, kept=True)
            cpu = (time.process_time() - started) / count * 1e6
            print(f"{name}: {cpu:,.0f} us CPU a page in this process (one write a page)")
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args()
    pages = page_slots()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            version = redis.Redis.from_url(server.url).info("server")["redis_version"]
            print(f"Redis {version}")
            redis_bytes(server.url, pages, args.hosts)
            local_bytes(pages)
            glue_writes(server.url, pages, args.pages)
            write_cpu(server.url, pages, args.pages)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
