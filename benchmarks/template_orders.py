"""How many distinct articles the template memory loses when a host's other pages come first.

Run by hand from the repository root (needs ../shared/data/pages, or SIMHASH_BENCH_DATA)::

    python3 benchmarks/template_orders.py                 # 0, 3, 10, 30, 100, 300 pages first
    python3 benchmarks/template_orders.py --first 3 25 --orders 20

The site is the one of ``tests/crawl/test_templates.py``: 20 short articles whose long shared author
bio is what the extractor reads as each page's main text, so every article matches every
other through the bio until the host's memory says which text is the page's own. Before them,
``first`` real pages of the dev corpus are fetched under the same host (the noise of a real
host: its other articles, sections, listings), then the 20 articles in a random order, then a
print copy of one of them. Judged one by one as the crawl judges them (the command line's
grouping, the same core steps). Printed per number of pages first: articles dropped (each one
a distinct page lost) over all orders, and print copies found.

What limits it: a line "the host never showed" is a 16-bit counter at one, in 2,048 buckets a
host, so the counters alone lose more articles as the host shows more distinct lines; the
sketch of the matched page's other lines (scrapy_simhash/sketch.py) does not depend on the
host. What is left: an article whose every own line shares a bucket with a template line
(the template's lines are set aside before the sketch is read), and a print copy of the
first article when it is read after the bio is learned as template (filed under the bio).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _pages import load_pages

from scrapy_simhash.cli._documents import Document
from scrapy_simhash.cli.dedup import Grouping
from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint
from scrapy_simhash.template import LocalMemory
from tests.crawl.test_templates import article

HOST = "news.example"


def judge(fingerprinter: Fingerprinter, pages: list[tuple[str, PageFingerprint]]) -> set[str]:
    """Names of the pages dropped when ``pages`` arrive in this order on one host."""
    memory = LocalMemory(fingerprinter)
    grouping = Grouping(fingerprinter, fingerprinter.config.bits // 8, memory, 3)
    for name, page in pages:
        applied = memory.apply(HOST, page)
        grouping.add(Document(name, applied, applied.text, host=HOST))
    return {doc.path for group in grouping.close() for doc, _ in group.members[1:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=int, nargs="+", default=[0, 3, 10, 30, 100, 300])
    parser.add_argument("--orders", type=int, default=10, help="random orders per count")
    parser.add_argument("--seed", type=int, default=20261128)
    args = parser.parse_args()

    fingerprinter = Fingerprinter()
    corpus = load_pages()
    rng = random.Random(args.seed)
    need = max(args.first)
    others = (
        [fingerprinter.fingerprint_page(page.body()) for page in rng.sample(corpus, need)]
        if need
        else []
    )
    articles = [fingerprinter.fingerprint_page(article(n)) for n in range(20)]
    copy_of = 3
    printed = fingerprinter.fingerprint_page(article(copy_of, stamp="08:05"))
    print(
        f"# template orders: 20 articles + 1 print copy after N real pages of the host, "
        f"{args.orders} random orders each, seed {args.seed}"
    )
    print(
        f"{'pages first':>11}  {'articles dropped':>16}  {'orders losing any':>17}  "
        f"{'print copies found':>18}"
    )
    for first in args.first:
        lost = losing = found = 0
        for _ in range(args.orders):
            chosen = rng.sample(range(need), first) if first else []
            order = list(range(20))
            rng.shuffle(order)
            pages = [(f"other{n}", others[n]) for n in chosen]
            pages += [(f"article{n}", articles[n]) for n in order]
            pages.append(("print", printed))
            dropped = judge(fingerprinter, pages)
            gone = sum(1 for name in dropped if name.startswith("article"))
            lost += gone
            losing += gone > 0
            found += "print" in dropped
        total = 20 * args.orders
        print(
            f"{first:>11}  {lost:>7} of {total:<6}  {losing:>8} of {args.orders:<6}  "
            f"{found:>9} of {args.orders:<6}"
        )


if __name__ == "__main__":
    main()
