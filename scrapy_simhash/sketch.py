"""The sketch of a page's lines, stored with the page's index entry.

Why: two pages of one host can read the same main text when the extractor took a block
their template repeats (an author bio, a product box) for the article. Whether the later
page brings text the earlier one lacks then decides copy or distinct page, and only the
two pages can say it: a host-wide memory of lines (:mod:`scrapy_simhash.template`) fills
up as a host grows, until every line looks shown before. So each kept page carries, in 64
bits beside its signature, the 16-bit hashes of its :data:`SKETCH_LINES` longest distinct
lines and the length of the next longest (the *cutoff*). Every line of that page longer
than the cutoff is among the hashes; so a later page's line longer than the cutoff whose
hash is not there is a line the kept page does not have (:func:`lines_not_in`), whatever
came before on the host. A page's own article, when a block was read instead, is long
text outside the block: the lines that tell. All the page's lines are named, its main
text's too: a copy whose extraction left part of the article outside its main text still
finds those lines in its original.

Pure core: no Scrapy, no storage.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable, Sequence

import xxhash

from scrapy_simhash import _native
from scrapy_simhash.features import normalize

#: Lines a sketch names: three 16-bit hashes and the 16-bit cutoff fill 64 bits.
SKETCH_LINES = 3
_HASH_BITS = 16
_MAX_CUTOFF = (1 << _HASH_BITS) - 2


def folded(line: str) -> str:
    """A line as a sketch compares it: case, width and whitespace folded as features are."""
    return " ".join(normalize(line).split())


def _line_hash(line: str) -> int:
    """1..65535 (0 marks an empty place in a sketch)."""
    return 1 + xxhash.xxh3_64_intdigest(line.encode("utf-8")) % ((1 << _HASH_BITS) - 1)


def line_hashes(text: str) -> array[int]:
    """The 64-bit hash of each non-blank line of ``text``, folded, in order: what a host's
    template memory counts (its bucket is the hash's remainder), made once a page."""
    # One normalisation of the whole text rather than one a line (the same lines: no
    # character folds to or from a line feed, checked by count).
    folded = normalize(text)
    hashes = _native.hashes
    if hashes is not None and folded.count("\n") == text.count("\n"):
        packed = hashes.line_hashes(text, folded)
        if isinstance(packed, bytes):  # not NotImplemented
            found = array("Q")
            found.frombytes(packed)
            return found
    lines = text.split("\n")
    folded_lines = folded.split("\n")
    if len(folded_lines) != len(lines):
        folded_lines = [normalize(line) for line in lines]
    digest = xxhash.xxh3_64_intdigest
    return array(
        "Q",
        (
            digest(" ".join(fold.split()).encode("utf-8"))
            for line, fold in zip(lines, folded_lines, strict=True)
            if line.strip()
        ),
    )


def lines_outside(
    page_text: str,
    hashes: Sequence[int],
    main_hashes: Iterable[int],
    keep: Callable[[int], bool] | None = None,
) -> list[str]:
    """The distinct folded lines of a page outside its main text, in page order, those
    whose hash ``keep`` accepts (all without it). ``hashes``: the page's
    :func:`line_hashes`; ``main_hashes``: its main text's. Lines are told apart by their
    64-bit hashes, so only the lines returned are folded (a copy's second look, on every
    byte-identical copy, passes over a host's template lines without reading them)."""
    main = set(main_hashes)
    seen: set[int] = set()
    outside = []
    lines = (line for line in page_text.split("\n") if line.strip())
    for line, hashed in zip(lines, hashes, strict=True):
        if hashed in main or hashed in seen or (keep is not None and not keep(hashed)):
            continue
        seen.add(hashed)
        fold = folded(line)
        if fold:
            outside.append(fold)
    return outside


def make_sketch(page_text: str) -> int:
    """A page's sketch (0 for a page of no line: nothing to compare)."""
    # Every page fetched gets a sketch, so only its longest lines are folded: lines in
    # order of their raw length, until no line left can be longer once folded than the
    # ones kept (folding only shortens a line, but for the rare characters NFKC or case
    # folding spell longer). Ties go by the text itself: a page's sketch is the same in
    # every process.
    raw = sorted({line.strip() for line in page_text.split("\n")}, key=len, reverse=True)
    kept: set[str] = set()
    ranked: list[str] = []
    for line in raw:
        if not line or (len(ranked) > SKETCH_LINES and len(line) < len(ranked[SKETCH_LINES])):
            break
        fold = folded(line)
        if fold and fold not in kept:
            kept.add(fold)
            ranked = heapq.nlargest(SKETCH_LINES + 1, kept, key=lambda x: (len(x), x))
    if not ranked:
        return 0
    cutoff = min(len(ranked[SKETCH_LINES]), _MAX_CUTOFF) if len(ranked) > SKETCH_LINES else 0
    value = 0
    for place in range(SKETCH_LINES):
        value = value << _HASH_BITS | (_line_hash(ranked[place]) if place < len(ranked) else 0)
    return value << _HASH_BITS | (cutoff + 1)


def lines_not_in(sketch: int, lines: Iterable[str]) -> list[str]:
    """Those of ``lines`` (folded) that the page of ``sketch`` certainly lacks: longer than
    its cutoff and not among its hashes (a 16-bit hash may hide one in 65,535). None is
    certain without a sketch."""
    if not sketch:
        return []
    cutoff = (sketch & 0xFFFF) - 1
    if cutoff >= _MAX_CUTOFF:  # a fourth line too long to name: nothing is certain
        return []
    names = {(sketch >> (_HASH_BITS * place)) & 0xFFFF for place in range(1, SKETCH_LINES + 1)}
    return [line for line in lines if len(line) > cutoff and _line_hash(line) not in names]
