"""How fast pages become fingerprints, and how the SimHash step compares with `simhash`.

Run by hand (not by pytest) from the repository root:

    python3 benchmarks/speed.py [--pages N] [-s NAME=VALUE ...]

Measures, in one process (= one core), over real pages of the shared corpus:

1. whole pages, HTML bytes to fingerprint, with the jieba and rjieba tokenizers: pages/s
   and MB/s, and where the time goes (extraction, features, SimHash step);
2. the SimHash step alone against the `simhash` library (1e0ng, md5 per feature) on the
   same weighted features: features/s and the ratio;
3. how often rjieba's fingerprints differ from jieba's on the Chinese pages.

Times are CPU seconds of this process (``time.process_time``), so other work on the machine
does not inflate them; on an idle core wall time is the same.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pages import load_pages
from scrapy_simhash.cli import parse_setting
from scrapy_simhash.extract import extract_main_text
from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter, hamming


def sample(count: int, lang: str | None = None) -> list[tuple[str, bytes]]:
    """Every n-th page of the manifest (all sources, or one language), bodies in memory."""
    pages = [page for page in load_pages() if lang is None or page.lang == lang]
    step = max(len(pages) // count, 1) if count else 1
    chosen = pages[::step][: count or None]
    return [(page.lang, page.body()) for page in chosen]


def whole_pages(
    settings: dict[str, str], tokenizer: str, bodies: list[tuple[str, bytes]]
) -> dict[str, float]:
    config = FingerprintConfig.from_settings({**settings, "SIMHASH_TOKENIZER": tokenizer})
    fingerprinter = Fingerprinter(config)
    fingerprinter.fingerprint_text("预热 warm up " * 100)  # load dictionaries outside the clock
    start = time.process_time()
    for _, body in bodies:
        fingerprinter.fingerprint_page(body)
    total = time.process_time() - start
    # The same work in its three stages, timed separately.
    extract = features = simhash = 0.0
    for _, body in bodies:
        t0 = time.process_time()
        main = extract_main_text(body, max_bytes=config.max_body_bytes or None)
        t1 = time.process_time()
        weights = fingerprinter.features(main.text, main.title)
        t2 = time.process_time()
        fingerprinter.fingerprint_features(weights)
        t3 = time.process_time()
        extract, features, simhash = extract + t1 - t0, features + t2 - t1, simhash + t3 - t2
    size = sum(len(body) for _, body in bodies)
    per_page = 1000 / len(bodies)
    return {
        "pages/s": len(bodies) / total,
        "MB/s": size / total / 1e6,
        "extract ms": extract * per_page,
        "features ms": features * per_page,
        "simhash ms": simhash * per_page,
    }


def simhash_step(settings: dict[str, str], bodies: list[tuple[str, bytes]]) -> None:
    import simhash as reference

    fingerprinter = Fingerprinter(
        FingerprintConfig.from_settings({**settings, "SIMHASH_TOKENIZER": "rjieba"})
    )
    documents = []
    for _, body in bodies:
        main = extract_main_text(body)
        weights = fingerprinter.features(main.text, main.title)
        if weights:
            documents.append(weights)
    # The reference library has two paths: a batched one for integer weights <= 50 (larger
    # integers overflow its uint8 arithmetic) and a per-feature one for float weights.
    small_ints = [
        {name: min(max(round(weight), 1), 50) for name, weight in weights.items()}
        for weights in documents
    ]
    count = sum(len(weights) for weights in documents)
    timings = {
        "scrapy_simhash (xxh3, numpy)": _time(fingerprinter.fingerprint_features, documents),
        "simhash 2.x, float weights": _time(reference.Simhash, documents),
        "simhash 2.x, int weights <=50": _time(reference.Simhash, small_ints),
    }
    ours = timings["scrapy_simhash (xxh3, numpy)"]
    print(f"\nSimHash step alone: {len(documents)} pages, {count} weighted features")
    print(f"  {'':<32}{'features/s':>12}{'us/page':>10}{'ours is':>10}")
    for name, seconds in timings.items():
        per_page = seconds / len(documents) * 1e6
        print(f"  {name:<32}{count / seconds:>12,.0f}{per_page:>10.0f}{seconds / ours:>9.1f}x")


def _time(function: Callable[[Any], object], documents: list[Any]) -> float:
    """Best of three passes: the least disturbed by other work on the machine."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for weights in documents:
            function(weights)
        best = min(best, time.process_time() - start)
    return best


def tokenizer_agreement(settings: dict[str, str], bodies: list[tuple[str, bytes]]) -> None:
    chinese = [body for lang, body in bodies if lang == "zh"]
    jieba, rjieba = (
        Fingerprinter(FingerprintConfig.from_settings({**settings, "SIMHASH_TOKENIZER": name}))
        for name in ("jieba", "rjieba")
    )
    distances: Counter[str] = Counter()
    for body in chinese:
        a, b = jieba.fingerprint_page(body).fingerprint, rjieba.fingerprint_page(body).fingerprint
        if a is None or b is None:
            distances["no fingerprint"] += 1
        else:
            d = hamming(a, b)
            distances[str(d) if d <= 3 else ">3"] += 1
    print(f"\nrjieba vs jieba on {len(chinese)} Chinese pages (Hamming distance: pages)")
    order = ["0", "1", "2", "3", ">3", "no fingerprint"]
    print("  " + "  ".join(f"{key}: {distances[key]}" for key in order))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=400, help="pages sampled (0 = all)")
    parser.add_argument("--lang", help="only pages of this language guess (e.g. zh, en)")
    parser.add_argument("-s", dest="settings", action="append", type=parse_setting, default=[])
    args = parser.parse_args()
    settings = dict(args.settings)
    bodies = sample(args.pages, args.lang)
    size = sum(len(body) for _, body in bodies) / 1e6
    print(f"{len(bodies)} pages, {size:.1f} MB of HTML, one process")
    print(f"\nWhole page (HTML bytes -> fingerprint), settings {settings or 'default'}")
    print("  (stage columns: mean time per page of each stage, timed in a second pass)")
    header = ["pages/s", "MB/s", "extract ms", "features ms", "simhash ms"]
    print(f"  {'tokenizer':<10}" + "".join(f"{h:>12}" for h in header))
    results = {name: whole_pages(settings, name, bodies) for name in ("rjieba", "jieba")}
    for name, row in results.items():
        print(f"  {name:<10}" + "".join(f"{row[h]:>12.1f}" for h in header))
    ratio = results["rjieba"]["pages/s"] / results["jieba"]["pages/s"]
    print(f"  rjieba / jieba: {ratio:.1f}x")
    simhash_step(settings, bodies)
    tokenizer_agreement(settings, bodies)


if __name__ == "__main__":
    main()
