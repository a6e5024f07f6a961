"""Our extraction on the trees an HTML5 parser builds: the quality figures when lexbor
(through selectolax) parses each page instead of libxml2, before anything is built on it.

The way to resiliparse's speed goes through lexbor's parse (0.57 ms a dev page against
libxml2's 1.2, ``speed.py``); it builds the tree by the HTML5 rules, which differ from
libxml2's where markup is broken (misnested tags, tables, stray end tags). This measures
whether the walk, the read-out, the template memory and both tests still decide as well on
such trees. Here lexbor parses, its tree is serialised and read back by the product's own
parse: libxml2 keeps a tree that HTML5 rules built as it is, so everything after the parse
is the product's code, unchanged.

    python3 benchmarks/lexbor_trees.py [--seeds 1]
    python3 benchmarks/lexbor_trees.py --costs [--pages 300]
    python3 benchmarks/lexbor_trees.py --nesting

``--costs`` times instead what each route would keep or save, CPU ms a dev page (the fastest
of three passes): libxml2's parse and the freeing of its tree, a copy of that tree and its
freeing (the building of a libxml2 tree without the reading of the HTML: what a tree made
from lexbor's would still cost), lexbor's parse and freeing, and lexbor's parse with one
compiled pass over its nodes where they lie (``_lexbor_pass.pyx``, built by Cython's
pyximport: each element, its class and id, each text's characters), the floor of a walk that
reads lexbor's tree without a copy.

Printed, libxml2's trees beside lexbor's: the dev pages' fingerprints (equal, or how many
bits apart) and their main text against the true main text (token F1); the pair benchmark
as the index decides; ``large/`` with the template memory on (articles lost, copies dropped).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pages import data_dir, load_pages, overlap
from large_offline import run as run_large
from lxml import etree
from pairs_quality import Scorer, fingerprint_files, load_pairs
from selectolax.lexbor import LexborHTMLParser

from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.index.defaults import default_distances
from scrapy_simhash.index.layout import choose_layout
from scrapy_simhash.settings import index_options
from scrapy_simhash.text import extract, extract_main_text

_LIBXML2_PARSE = extract._parse


def _lexbor_parse(data: bytes, notes: list[str] | None = None) -> etree._Element | None:
    """lexbor's tree of ``data``, serialised and read back by the product's parse."""
    data = data.replace(b"\x00", b"")
    if data.isspace() or not data:
        return None
    html = LexborHTMLParser(data.decode("utf-8", "replace")).html or ""
    return _LIBXML2_PARSE(html.encode("utf-8"), notes)


PARSERS: dict[str, Callable[..., etree._Element | None]] = {
    "libxml2": _LIBXML2_PARSE,
    "lexbor": _lexbor_parse,
}


@contextmanager
def parsed_by(name: str) -> Iterator[None]:
    extract._parse = PARSERS[name]
    try:
        yield
    finally:
        extract._parse = _LIBXML2_PARSE


def dev_pages() -> None:
    pages = load_pages()
    fingerprinter = Fingerprinter(FingerprintConfig())
    fingerprints: dict[str, dict[str, int | None]] = {}
    print(f"dev pages ({len(pages)}): main text against the true main text, token F1")
    for name in PARSERS:
        with parsed_by(name):
            fingerprints[name] = {}
            scores = []
            for page in pages:
                body = page.body()
                fingerprints[name][page.id] = fingerprinter.fingerprint_page(body).fingerprint
                truth = page.main_text()
                if truth is not None:
                    scores.append(overlap(extract_main_text(body).text, truth)[2])
        print(
            f"  {name:<8} {len(scores)} pages with a truth: mean {statistics.fmean(scores):.4f}, "
            f"median {statistics.median(scores):.4f}"
        )
    ours, theirs = fingerprints["libxml2"], fingerprints["lexbor"]
    apart: Counter[int | str] = Counter()
    for page_id, mine in ours.items():
        other = theirs[page_id]
        if mine is None or other is None:
            apart["none on both" if mine is other else "none on one"] += 1
        else:
            apart[(mine ^ other).bit_count()] += 1
    both, one = apart.pop("none on both", 0), apart.pop("none on one", 0)
    print(
        f"  fingerprints: {apart.pop(0, 0)} equal; bits apart where not: "
        + ", ".join(f"{bits}: {n}" for bits, n in sorted(apart.items()))  # type: ignore[type-var]
        + f"; no fingerprint on either tree {both}, on one tree only {one}"
    )


def pairs() -> None:
    root = data_dir() / "pairs"
    labelled = load_pairs(root)
    files = sorted({root / p.a for p in labelled} | {root / p.b for p in labelled})
    options = index_options({})
    k = options["max_distance"]
    masks = choose_layout(64, min(options["exact_distance"], k)).masks
    print(f"pairs/ ({len(labelled)} labelled pairs), as the index decides at k={k}")
    for name in PARSERS:
        with parsed_by(name):
            results = fingerprint_files(files, {}, jobs=1)
        scores = Scorer({n: fp for n, (fp, _) in results.items()}, masks).scores(labelled, k)
        print(
            f"  {name:<8} P {scores['P']:.3f}  R {scores['R']:.3f}  F1 {scores['F1']:.3f}  "
            f"same-template FP {scores['same']}"
        )


def large(seeds: list[int]) -> None:
    data = data_dir()
    site = json.loads((data / "large" / "site.json").read_text())
    fingerprinter = Fingerprinter(FingerprintConfig())
    k = default_distances(64)[0]
    print("large/, template memory on: articles lost, copies dropped")
    for name in PARSERS:
        with parsed_by(name):
            cache: dict = {}
            for seed in seeds:
                r = run_large(site, data, fingerprinter, k, seed, True, cache)
                print(
                    f"  {name:<8} seed {seed}: {r['lost']} of {r['articles']} lost, "
                    f"copies dropped {r['copies_dropped']:.4f}, wrong cluster {r['wrong_cluster']}"
                )


def _compiled_pass() -> Callable[[int], tuple[int, int, int]]:
    """``_lexbor_pass.walk``, built here by Cython, once checked against selectolax's own
    reading of the same trees (a layout that does not match lexbor's is refused)."""
    import pyximport

    pyximport.install(language_level=3, build_dir=str(Path(__file__).parent / ".pyxbld"))
    from _lexbor_pass import walk

    samples = [
        b'<p class="a b" id=x>h\xc3\xa9llo<my-widget>z</my-widget></p><!-- c -->text',
        *(page.body() for page in load_pages()[:50]),
    ]
    for html in samples:
        tree = LexborHTMLParser(html)
        root = tree.root
        elements = named = 0
        for node in root.traverse():
            if node.tag and node.tag[0] not in "-_!":
                elements += 1
                names = node.attributes
                for key in ("class", "id"):
                    named += len((names.get(key) or "").encode("utf-8", "surrogateescape"))
        if walk(root.mem_id)[:2] != (elements, named):
            raise SystemExit("lexbor's node layout is not the one _lexbor_pass.pyx reads")
    return walk


def costs(count: int) -> None:
    from scrapy_simhash.text.decode import decode_html
    from scrapy_simhash.text.parse import _PARSER

    utf8 = []
    for page in load_pages()[:count]:
        decoded = decode_html(page.body(), None)
        utf8.append(decoded.utf8 or decoded.text.encode("utf-8", "replace"))
    trees = [etree.fromstring(data, _PARSER) for data in utf8]

    def libxml2() -> None:
        for data in utf8:
            etree.fromstring(data, _PARSER)  # each tree freed before the next is made

    def tree_copy() -> None:
        for tree in trees:
            copy.deepcopy(tree)

    def lexbor() -> None:
        for data in utf8:
            LexborHTMLParser(data)

    walk = _compiled_pass()

    def lexbor_read() -> None:
        for data in utf8:
            tree = LexborHTMLParser(data)  # held: the pass reads its memory
            walk(tree.root.mem_id)

    steps = {
        "libxml2 parse and free": libxml2,
        "a copy of its tree and free": tree_copy,
        "lexbor parse and free": lexbor,
        "lexbor parse, a pass in place, free": lexbor_read,
    }
    print(f"CPU ms a dev page, fastest of 3 passes over {len(utf8)} pages")
    for label, step in steps.items():
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            step()
            best = min(best, time.process_time() - started)
        print(f"  {label:<40}{best / len(utf8) * 1000:8.3f}")


def nesting() -> None:
    """CPU ms to parse one page of nested elements, lexbor against the product's parse
    (libxml2, which stops at 2,048 levels, and the product's reading without wrapper tags
    then), by depth: a hazard for a parse with no limit of its own."""
    from scrapy_simhash.text.parse import _parse

    print("CPU ms to parse <body> + <tag> x depth + text (no end tags), one parse each")
    print(f"  {'tag':<6}{'depth':>8}{'lexbor':>10}{'ours (libxml2)':>16}")
    for tag in ("div", "span"):
        for depth in (2_000, 5_000, 10_000, 20_000, 40_000):
            html = b"<html><body>" + f"<{tag}>".encode() * depth + b"deep text " * 5
            started = time.process_time()
            LexborHTMLParser(html)
            lexbor = time.process_time() - started
            started = time.process_time()
            _parse(html, [])
            ours = time.process_time() - started
            print(f"  {tag:<6}{depth:>8,}{lexbor * 1000:>10.1f}{ours * 1000:>16.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="large/ orders")
    parser.add_argument("--costs", action="store_true", help="time the routes' parts instead")
    parser.add_argument("--pages", type=int, default=300, help="dev pages timed (--costs)")
    parser.add_argument(
        "--nesting", action="store_true", help="time the parse of deeply nested pages instead"
    )
    args = parser.parse_args()
    if args.nesting:
        nesting()
        return
    if args.costs:
        costs(args.pages)
        return
    dev_pages()
    pairs()
    large(args.seeds)


if __name__ == "__main__":
    main()
