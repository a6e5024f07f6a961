"""What lexbor's parse costs beside libxml2's, which the product parsed with before 0.3.0:
the parses and the freeing of their trees, and the parse of deeply nested pages.

    python3 benchmarks/lexbor_trees.py [--pages 300]
    python3 benchmarks/lexbor_trees.py --nesting

The first times, CPU ms a dev page (the fastest of three passes): libxml2's parse and the
freeing of its tree (with the options the product used), a copy of that tree and its
freeing (the building of a libxml2 tree without the reading of any HTML), lexbor's parse
and freeing, and lexbor's parse with one compiled pass over its nodes where they lie (the
product's count of the page's text, ``_compiled.subtree_chars``), the floor of a walk that
reads lexbor's tree without a copy.
``--nesting`` times one parse of a page of nested start tags, by depth: lexbor alone, the
product's parse, and libxml2.

Until 0.3.0's move to lexbor this script also measured every quality figure on lexbor's
trees read back by the product's libxml2 parse (commit 573c251, "Speed, round 11" in
``benchmarks/README.md``).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pages import load_pages
from lxml import etree
from selectolax.lexbor import LexborHTMLParser

#: libxml2's parser as the product set it up before 0.3.0.
_LIBXML2 = etree.HTMLParser(
    encoding="utf-8",
    remove_comments=True,
    remove_pis=True,
    no_network=True,
    recover=True,
    collect_ids=False,
    huge_tree=True,
)


def _compiled_pass() -> Callable[[int], int]:
    """One compiled pass over every node under an address, reading lexbor's nodes in place:
    the product's count of a subtree's text (``_compiled.subtree_chars``)."""
    from scrapy_simhash.text import compiled

    extension = compiled.extension
    if extension is None:
        raise SystemExit(f"the compiled walk is not available: {compiled.MISSING}")
    return lambda root: int(extension.subtree_chars(root, extension.Counts()))


def costs(count: int) -> None:
    from scrapy_simhash.text.decode import decode_html

    utf8 = []
    for page in load_pages()[:count]:
        decoded = decode_html(page.body(), None)
        utf8.append(decoded.utf8 or decoded.text.encode("utf-8", "replace"))
    trees = [etree.fromstring(data, _LIBXML2) for data in utf8]

    def libxml2() -> None:
        for data in utf8:
            etree.fromstring(data, _LIBXML2)  # each tree freed before the next is made

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
    """CPU ms to parse one page of nested elements, lexbor alone against the product's
    parse (lexbor behind a bound on nesting: past 2,048 levels, the page without its
    wrapper tags) and libxml2 (which stops at 2,048 levels), by depth."""
    from scrapy_simhash.text.parse import _parse

    print("CPU ms to parse <body> + <tag> x depth + text (no end tags), one parse each")
    print(f"  {'tag':<6}{'depth':>8}{'lexbor':>10}{'ours':>10}{'libxml2':>10}")
    for tag in ("div", "span"):
        for depth in (2_000, 5_000, 10_000, 20_000, 40_000):
            html = b"<html><body>" + f"<{tag}>".encode() * depth + b"deep text " * 5
            started = time.process_time()
            LexborHTMLParser(html)
            lexbor = time.process_time() - started
            started = time.process_time()
            _parse(html, [])
            ours = time.process_time() - started
            started = time.process_time()
            etree.fromstring(html, _LIBXML2)
            libxml2 = time.process_time() - started
            print(
                f"  {tag:<6}{depth:>8,}{lexbor * 1000:>10.1f}{ours * 1000:>10.1f}"
                f"{libxml2 * 1000:>10.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300, help="dev pages timed")
    parser.add_argument(
        "--nesting", action="store_true", help="time the parse of deeply nested pages instead"
    )
    args = parser.parse_args()
    if args.nesting:
        nesting()
    else:
        costs(args.pages)


if __name__ == "__main__":
    main()
