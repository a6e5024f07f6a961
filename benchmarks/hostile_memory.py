"""Memory of fingerprinting on hostile pages: unique long class and id names on every page.

Run by hand (not by pytest) from the repository root:

    python3 benchmarks/hostile_memory.py [--pages 3000] [--names 60] [--name-chars 2000]

Each page is an ordinary article whose elements carry class and id names never seen before
(long random tokens, as a generated or adversarial site may serve). Extraction caches the
role of class names; this prints the resident memory (RSS) of this process before and after
fingerprinting the pages, and the characters held by the role caches. The target: RSS grows
at most 50 MB over 3,000 such pages.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def page(rng: random.Random, names: int, name_chars: int) -> bytes:
    def name() -> str:
        return "".join(rng.choices(string.ascii_lowercase + "-", k=name_chars))

    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(400)]
    parts = [
        f'<div class="{name()} {name()[:40]}" id="{name()}"><p>{" ".join(words[i::7])}.</p></div>'
        for i in range(names)
    ]
    return f"<html><body><article>{''.join(parts)}</article></body></html>".encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--names", type=int, default=60, help="elements with new names per page")
    parser.add_argument("--name-chars", type=int, default=2000)
    args = parser.parse_args()

    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
    from scrapy_simhash.text import rules

    fingerprinter = Fingerprinter(FingerprintConfig(tokenizer="jieba"))
    rng = random.Random(7)
    fingerprinter.fingerprint_page(page(rng, args.names, args.name_chars))  # warm up
    before = rss_mb()
    for _ in range(args.pages):
        fingerprinter.fingerprint_page(page(rng, args.names, args.name_chars))
    after = rss_mb()
    cached = sum(map(len, rules._ROLES)) + sum(map(len, rules._TOKEN_ROLES))
    print(
        f"{args.pages} pages, {args.names} elements with new names of {args.name_chars} chars "
        f"each: RSS {before:.0f} MB -> {after:.0f} MB (+{after - before:.1f} MB); "
        f"role caches hold {cached:,} characters"
    )


if __name__ == "__main__":
    main()
