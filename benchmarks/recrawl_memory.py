"""Bytes per URL of the recrawl state, on each backend, beyond the URL text itself.

Every URL gets a realistic state: a page visited 33 times (so its history holds the full
32 observations, the default SIMHASH_RECRAWL_HISTORY_SIZE), with its own fingerprint, and
in a second run also an ETag and a Last-Modified date. The states are written through the
backends the crawl uses, then every URL is updated once more (as a recrawl would, moving it
in the due queue) and measured again:

* SQLite: size of the database file (WAL checkpointed) divided by the URLs;
* Redis: growth of ``INFO memory`` ``used_memory`` divided by the URLs (a private
  redis-server on a free loopback port, started and stopped here);
* memory (``memory://``, for tests and the simulator): Python heap growth (tracemalloc).

"beyond URL" subtracts the mean URL length: the URL must be stored once anyway.

Run by hand: ``python3 benchmarks/recrawl_memory.py [--urls 20000]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scrapy_simhash.recrawl import RecrawlConfig, open_recrawl_store

DAY = 86400.0


def template_state(with_validators: bool) -> Any:
    """A page observed 33 times a few hours apart, changing about every other visit."""
    now = [1_700_000_000.0]
    rng = random.Random(7)
    store = open_recrawl_store("memory://", config=RecrawlConfig(), clock=lambda: now[0])
    fp = rng.getrandbits(64)
    for visit in range(33):
        if rng.random() < 0.5:
            fp ^= (1 << 64) - 1 >> rng.randrange(40)
        extra: dict[str, Any] = {}
        if with_validators:
            extra = {
                "etag": f'"{rng.getrandbits(48):x}-{visit:x}"',
                "last_modified": "Tue, 14 May 2024 08:12:31 GMT",
            }
        store.observe("https://example.com/", fp, **extra)
        now[0] += rng.uniform(2, 30) * 3600
    state = store.get("https://example.com/")
    assert state is not None
    assert len(state.history) == 32, state
    return state


def urls(count: int) -> list[str]:
    rng = random.Random(1)
    words = ["market", "city", "report", "election", "weather", "season", "policy", "team"]
    return [
        f"https://www.example-news.com/{2015 + i % 10}/{1 + i % 12:02d}/"
        f"{'-'.join(rng.sample(words, 3))}-{i}"
        for i in range(count)
    ]


def states(template: Any, count: int) -> list[Any]:
    rng = random.Random(2)
    return [
        dataclasses.replace(
            template,
            url=u,
            fingerprint=rng.getrandbits(64),
            next_due=template.next_due + rng.uniform(0, 30 * DAY),
        )
        for u in urls(count)
    ]


def touch_all(store: Any, pages: list[Any]) -> None:
    """Update every URL once (a new due time), as a recrawl round does."""
    backend = store._backend  # the storage layer, without re-running the estimators
    rng = random.Random(3)
    for state in pages:
        new = dataclasses.replace(state, next_due=state.next_due + rng.uniform(DAY, 9 * DAY))
        backend.update(state.url, lambda old, new=new: new)


def sqlite_bytes(pages: list[Any], workdir: Path) -> tuple[float, float]:
    path = workdir / "recrawl.sqlite3"
    sizes = []
    with open_recrawl_store(f"sqlite:///{path}", namespace="bench") as store:
        for start in range(0, len(pages), 5000):
            store._backend.add(pages[start : start + 5000])
        sizes.append(_sqlite_size(path))
        touch_all(store, pages)
        sizes.append(_sqlite_size(path))
    path.unlink()
    return sizes[0] / len(pages), sizes[1] / len(pages)


def memory_bytes(pages: list[Any]) -> tuple[float, float]:
    import tracemalloc

    sizes = []
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        store = open_recrawl_store("memory://", namespace="bench")
        # Own objects per page, as observed states have (not one history shared by all).
        store._backend.add(
            [
                dataclasses.replace(p, history=tuple((t * 1.0, c) for t, c in p.history))
                for p in pages
            ]
        )
        sizes.append(tracemalloc.get_traced_memory()[0] - base)
        sizes.append(sizes[0])  # updates replace objects by objects of the same size
    finally:
        tracemalloc.stop()
    # The URL strings are shared with the caller's pages, so not traced: add them back.
    url_bytes = sum(sys.getsizeof(p.url) for p in pages)
    sizes = [size + url_bytes for size in sizes]
    return sizes[0] / len(pages), sizes[1] / len(pages)


def _sqlite_size(path: Path) -> int:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.stat().st_size


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_bytes(pages: list[Any], workdir: Path) -> tuple[float, float] | None:
    server = shutil.which("redis-server")
    if server is None:
        return None
    import redis

    port = _free_port()
    proc = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        url = f"redis://127.0.0.1:{port}/0"
        with open_recrawl_store(url, namespace="bench") as store:
            store.count()
            before = int(client.info("memory")["used_memory"])
            for start in range(0, len(pages), 2000):
                store._backend.add(pages[start : start + 2000])
            written = int(client.info("memory")["used_memory"]) - before
            touch_all(store, pages)
            touched = int(client.info("memory")["used_memory"]) - before
        client.close()
        return written / len(pages), touched / len(pages)
    finally:
        proc.terminate()
        proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=20000)
    args = parser.parse_args()
    url_len = sum(len(u) for u in urls(args.urls)) / args.urls
    print(f"{args.urls} URLs, mean URL length {url_len:.1f} B, history of 32 observations")
    print(
        f"{'state':<26}{'backend':<9}{'written':>9}{'beyond URL':>12}"
        f"{'after update':>14}{'beyond URL':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for label, validators in (("no validators", False), ("ETag + Last-Modified", True)):
            template = template_state(validators)
            pages = states(template, args.urls)
            packed = getattr(template, "to_bytes", None)
            size = len(packed()) if packed else len(template.to_json())
            print(f"{label + f' ({size} B packed)':<26}", end="")
            results = [
                ("sqlite", sqlite_bytes(pages, workdir)),
                ("redis", redis_bytes(pages, workdir)),
                ("memory", memory_bytes(pages)),
            ]
            for i, (backend, figures) in enumerate(results):
                lead = "" if i == 0 else " " * 26
                if figures is None:
                    print(f"{lead}{backend:<9}redis-server not found: skipped")
                    continue
                written, touched = figures
                print(
                    f"{lead}{backend:<9}{written:>9.1f}{written - url_len:>12.1f}"
                    f"{touched:>14.1f}{touched - url_len:>12.1f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
