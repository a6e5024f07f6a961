"""Offline stand-in of a crawl of ``shared/data/large``: articles lost and copies dropped,
with and without the hosts' template memory, in several seeded orders.

Run by hand from the repository root (needs ../shared/data/large, or SIMHASH_BENCH_DATA)::

    python3 benchmarks/large_offline.py [--bits 64|128] [--seeds 1 2 3]

Every URL of every host is judged in a seeded random order by the crawl's own judge
(:class:`scrapy_simhash.judge.Judge`, through ``scrapy-simhash dedup``'s grouping: the
in-memory index at the default distance, both tests, each host's template memory and its
second look at a same-host match), the host named by the URL. It is not a crawl:
it measures the decision rules, one process, no concurrency. A real crawl of every host on its
own port, in 1 and 3 processes, is ``large_crawl.py``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pages import data_dir
from scrapy_simhash.cli._documents import Document
from scrapy_simhash.cli.dedup import Grouping
from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.index.defaults import default_distances
from scrapy_simhash.settings import index_options
from scrapy_simhash.template import LocalMemory


def run(
    site: dict,
    data: Path,
    fingerprinter: Fingerprinter,
    k: int,
    seed: int,
    templates: bool,
    cache: dict,
) -> dict:
    def page_of(file: str):
        if file not in cache:
            cache[file] = fingerprinter.fingerprint_page(
                gzip.decompress((data / file).read_bytes())
            )
        return cache[file]

    urls = [(h, u, p) for h, host in site["hosts"].items() for u, p in host["pages"].items()]
    random.Random(seed).shuffle(urls)
    memory = LocalMemory(fingerprinter) if templates else None
    exact = min(int(index_options({"SIMHASH_BITS": fingerprinter.bits})["exact_distance"]), k)
    grouping = Grouping(fingerprinter, k, memory, exact)
    for host, url, meta in urls:
        grouping.add(Document(host + url, page_of(meta["file"]), host=host))
    grouping.close()
    # Grouping keys files by their number in the order they were added.
    kept: dict[tuple[str, str], int] = Counter()
    wrong = unchecked = 0
    for number, (host, _, meta) in enumerate(urls):
        leader = grouping.leader_of.get(str(number))
        if leader is None:
            unchecked += 1  # no fingerprint: never dropped
            kept[(host, meta["cluster"])] += 1
        elif leader == str(number):
            kept[(host, meta["cluster"])] += 1
        else:
            wrong += urls[int(leader)][2]["cluster"] != meta["cluster"]
    clusters = {(h, p["cluster"]) for h, _, p in urls}
    copies: Counter[str] = Counter()
    extra: Counter[str] = Counter()
    for h, _, _ in urls:
        copies[h] += 1
    for h, _ in clusters:
        copies[h] -= 1
    for (h, _), n in kept.items():
        extra[h] += n - 1
    lost = sorted(c for c in clusters if not kept[c])
    articles = Counter(h for h, _ in clusters)
    worst_lost = max((sum(1 for c in lost if c[0] == h) / articles[h], h) for h in articles)
    worst_copies = min((1 - extra[h] / copies[h], h) for h in copies if copies[h])
    return {
        "lost": len(lost),
        "articles": len(clusters),
        "lost_clusters": lost,
        "copies_dropped": 1 - sum(extra.values()) / sum(copies.values()),
        "worst_host_lost": worst_lost,
        "worst_host_copies": worst_copies,
        "wrong_cluster": wrong,
        "unchecked": unchecked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bits", type=int, default=64, choices=(64, 128))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    data = data_dir()
    site = json.loads((data / "large" / "site.json").read_text())
    fingerprinter = Fingerprinter(FingerprintConfig(bits=args.bits))
    k = default_distances(args.bits)[0]
    cache: dict = {}
    print(f"{args.bits} bits, k = {k}")
    print(
        "seed  memory  lost     copies dropped  worst host (lost)  worst host (copies)  "
        "wrong cluster  kept unchecked"
    )
    for seed in args.seeds:
        for templates in (False, True):
            r = run(site, data, fingerprinter, k, seed, templates, cache)
            print(
                f"{seed:<5} {'on' if templates else 'off':<7} {r['lost']}/{r['articles']:<5} "
                f"{r['copies_dropped']:<15.4f} {r['worst_host_lost'][0]:.3f} "
                f"{r['worst_host_lost'][1]:<12} {r['worst_host_copies'][0]:.3f} "
                f"{r['worst_host_copies'][1]:<14} {r['wrong_cluster']:<14} {r['unchecked']}"
            )
            if r["lost_clusters"]:
                print("      lost:", ", ".join("/".join(c) for c in r["lost_clusters"]))


if __name__ == "__main__":
    main()
