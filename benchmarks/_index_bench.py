"""Shared bits of the index benchmarks: a private redis-server and synthetic pages."""

from __future__ import annotations

import random
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.redis_servers import RedisServer


@contextmanager
def private_redis() -> Iterator[RedisServer]:
    """A redis-server on a free port (never the machine's 6379), stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="simhash-bench-") as workdir:
        server = RedisServer(Path(workdir)).start()
        try:
            yield server
        finally:
            server.stop()


def pages(count: int, seed: int = 7) -> Iterator[tuple[str, int]]:
    """URL-like keys (~45 bytes) with random 64-bit fingerprints."""
    rng = random.Random(seed)
    for i in range(count):
        yield f"https://news{i % 997}.example.com/2024/article-{i:08d}.html", rng.getrandbits(64)
