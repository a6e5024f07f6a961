"""Fingerprinting off the reactor: a real worker process, and the body cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.glue.workers import FingerprintRunner

SITE = Path(__file__).parent / "site"
CONFIG = FingerprintConfig(tokenizer="rjieba")


def test_worker_process_gives_the_inline_fingerprints() -> None:
    pages = [(SITE / name).read_bytes() for name in ("harbour.html", "school-gbk.html",
                                                      "broken.html", "fake-html.bin")]
    inline = Fingerprinter(CONFIG)

    async def scenario() -> tuple[list[object], int, float]:
        runner = FingerprintRunner(CONFIG, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            pages_out = await asyncio.gather(*(runner.fingerprint(p, "text/html") for p in pages))
            return list(pages_out), runner.computed, runner.cpu_secs
        finally:
            runner.close()

    results, computed, cpu_secs = asyncio.run(scenario())
    assert results == [inline.fingerprint_page(p, content_type="text/html") for p in pages]
    # The workers report their own CPU time: what a page cost, not how long it waited.
    assert computed == len(pages)
    assert cpu_secs > 0


def test_identical_bodies_are_fingerprinted_once() -> None:
    body = (SITE / "orchard.html").read_bytes()
    other = (SITE / "library.html").read_bytes()

    async def scenario() -> tuple[int, int, set[int | None]]:
        runner = FingerprintRunner(CONFIG, workers=0, inline_max_bytes=0, cache_size=1)
        same = await asyncio.gather(*(runner.fingerprint(body, "text/html") for _ in range(3)))
        concurrent_hits = runner.cache_hits
        await runner.fingerprint(other, "text/html")  # evicts the first body (size 1)
        await runner.fingerprint(body, "text/html")
        return concurrent_hits, runner.cache_hits, {page.fingerprint for page in same}

    concurrent_hits, hits, fingerprints = asyncio.run(scenario())
    assert concurrent_hits == 2  # three copies at once: one computation
    assert hits == 2  # evicted, so computed again
    assert len(fingerprints) == 1
    assert None not in fingerprints
