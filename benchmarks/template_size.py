"""What the template memory calls template on a host of up to ten million pages.

Run by hand from the repository root (reads ../shared/data/pages for article lines when it
is there, or SIMHASH_BENCH_DATA; synthetic lines otherwise)::

    python3 benchmarks/template_size.py [--pages 10000000] [--seed 1]

The memory of one host (:class:`scrapy_simhash.template.HostMemory`) is fed directly, page
after page, as a crawl feeds it (every page seen, every page kept: the harder case for the
shares), with lines of three kinds:

- template lines: 8 on every page, 8 on half of them, 8 on a fifth (a host of several
  templates);
- article lines: 30 a page, drawn from the dev pages' main texts (each line once, in
  order, then again from the start with a number, so every page's lines are its own);
- recurring lines: 20 lines each on 0.1%, 0.5%, 1% or 5% of the pages (a byline, a
  series' teaser, a promotion).

At each checkpoint: whether every template line's bucket is template, whether any bucket
holding only lines of under 5% of the pages is (a line sharing a bucket with a template
line is counted apart: the memory cannot tell them apart by design), and the page counts.
Then the second look at that size: the 20 articles of ``tests/crawl/test_templates.py`` (a shared
bio read as every one's main text) are each matched with the one before, and a print copy
of each with its original, on the memory as it stands: how many articles are told distinct
by the host's counters alone and with the matched page's sketch, and how many copies are
(wrongly) told distinct.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.template import SLOTS, HostMemory, learnable, line_slot, second_look
from tests.crawl.test_templates import article as bio_article

CHECKPOINTS = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def article_lines(limit: int = 200_000) -> list[str]:
    """Lines of real main texts (the dev pages'), or numbered synthetic ones."""
    from benchmarks._pages import data_dir

    root = data_dir() / "pages"
    lines: list[str] = []
    for path in sorted(root.rglob("*.main.txt.gz")):
        for line in gzip.decompress(path.read_bytes()).decode("utf-8", "replace").split("\n"):
            if len(line.strip()) > 20:
                lines.append(line)
        if len(lines) >= limit:
            break
    return lines or [f"article line {n}" for n in range(limit)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    import random

    rng = random.Random(args.seed)
    template = {
        share: [line_slot(f"template line {share} {n}") for n in range(8)]
        for share in (1.0, 0.5, 0.2)
    }
    recurring = {
        share: [line_slot(f"recurring line {share} {n}") for n in range(20)]
        for share in (0.001, 0.005, 0.01, 0.05)
    }
    template_slots = {s for slots in template.values() for s in slots}
    rare_slots = {s for slots in recurring.values() for s in slots} - template_slots
    articles = [line_slot(line) for line in article_lines()]
    print(
        f"{len(articles):,} article lines; {len(template_slots)} template buckets, "
        f"{len(rare_slots)} buckets of recurring lines apart from them, {SLOTS} buckets"
    )
    fingerprinter = Fingerprinter()
    articles_read = [fingerprinter.fingerprint_page(bio_article(n)) for n in range(20)]
    copies = [fingerprinter.fingerprint_page(bio_article(n, stamp="08:05")) for n in range(20)]

    def looks(memory: HostMemory) -> tuple[int, int, int]:
        """(articles distinct by the counters, with the sketch, copies called distinct)."""
        counters = sketched = copied = 0
        for n in range(1, 20):
            page, matched = articles_read[n], articles_read[n - 1]
            seen = memory.saw(learnable(matched)).saw(learnable(page))
            look = second_look(fingerprinter, page, seen)
            counters += bool(look and look.distinct)
            look = second_look(fingerprinter, page, seen, matched.evidence.sketch)
            sketched += bool(look and look.distinct)
            seen = seen.saw(learnable(copies[n]))
            look = second_look(fingerprinter, copies[n], seen, page.evidence.sketch)
            copied += bool(look and look.distinct)
        return counters, sketched, copied

    memory = HostMemory()
    at = 0
    started = time.process_time()
    print(
        f"{'pages':>12} {'kept count':>10} {'template lines found':>21} "
        f"{'rare buckets called template':>29} {'article buckets called template':>32} "
        f"{'distinct: counters':>18} {'with sketch':>11} {'copies distinct':>15}"
    )
    for page in range(1, args.pages + 1):
        slots = [*template[1.0]]
        if page % 2 == 0:
            slots += template[0.5]
        if page % 5 == 0:
            slots += template[0.2]
        for share, lines in recurring.items():
            if rng.random() < share:
                slots += lines
        for _ in range(30):
            slots.append(
                articles[at % len(articles)] if at < len(articles) else rng.randrange(SLOTS)
            )
            at += 1
        memory = memory.saw(slots).learned(slots)
        if page in CHECKPOINTS or page == args.pages:
            called = memory.template()
            found = len(template_slots & called)
            rare = len(rare_slots & called)
            article = len(called - template_slots - rare_slots)
            counters, sketched, copied = looks(memory)
            print(
                f"{page:>12,} {memory.pages:>10} {found:>10} of {len(template_slots):<9} "
                f"{rare:>29} {article:>32} {counters:>12} of 19 {sketched:>5} of 19 "
                f"{copied:>9} of 19"
            )
    print(f"{time.process_time() - started:.0f} s CPU")


if __name__ == "__main__":
    main()
