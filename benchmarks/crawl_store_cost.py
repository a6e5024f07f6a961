"""CPU a crawl process spends in its stores per response, as the middleware calls them.

    python3 benchmarks/crawl_store_cost.py [--pages 3000] [--rounds 3]

Each page is fetched under 3 URLs, as in ``crawl_throughput.py``: the first is checked and
kept (index check-and-add, recrawl observation), the other two are dropped (check, drop
record, recrawl state forgotten). The calls are awaited in an asyncio loop, one after the
other, on the in-process index, on the embedded SQLite file as a crawl opens it (a page's
calls inline while the file is free), and on the same file with every call handed to a
thread of the loop's pool: a thread hop per call, as before this release (which sent the
recrawl store's calls to a thread of its own). CPU time of the whole process (loop,
threads and SQLite) per response; fastest of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from typing import Any

from scrapy_simhash._runners import in_thread
from scrapy_simhash.index import open_async_index
from scrapy_simhash.index.facade import AsyncIndexFacade
from scrapy_simhash.index.threaded import AsyncIndexAdapter
from scrapy_simhash.recrawl import open_async_recrawl_store

VARIANTS = 3


async def crawl_calls(mode: str, pages: int) -> float:
    """CPU seconds per response of the store calls of ``pages`` pages x VARIANTS URLs."""
    with tempfile.TemporaryDirectory() as tmp:
        url = "memory://" if mode == "memory" else f"sqlite:///{tmp}/index.sqlite3"
        index: Any = await open_async_index(url, max_distance=4, exact_distance=3)
        store: Any = await open_async_recrawl_store(url)
        if mode == "sqlite, threads":
            index = AsyncIndexFacade(AsyncIndexAdapter(index.backend.backend, run=in_thread))
            store._backend._run = store._backend._scan = in_thread
        rng = random.Random(1)
        fingerprints = [rng.getrandbits(64) for _ in range(pages)]
        started = time.process_time()
        for n, fingerprint in enumerate(fingerprints):
            for variant in range(VARIANTS):
                key = f"https://site.test/p/{n}/{variant}.html"
                seen = await index.observe(key, fingerprint ^ variant)
                if seen.match is None:
                    await store.observe(key, fingerprint)
                else:
                    await index.record_drop(key, seen.match.key, seen.match.distance)
                    await store.remove(key)
        cpu = time.process_time() - started
        await index.close()
        await store.close()
    return cpu / (pages * VARIANTS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    modes = ("memory", "sqlite, inline when free", "sqlite, threads")
    best = {mode: float("inf") for mode in modes}
    for _ in range(args.rounds):
        for mode in modes:
            best[mode] = min(best[mode], asyncio.run(crawl_calls(mode, args.pages)))
    print(
        f"{args.pages} pages x {VARIANTS} URLs, store calls as a crawl makes them; "
        f"CPU per response, fastest of {args.rounds} rounds"
    )
    for mode in modes:
        print(f"  {mode:<26}{best[mode] * 1e6:8.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
