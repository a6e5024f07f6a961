"""False matches: distinct pages that both tests accept, on every dev page pair.

Run by hand from the repository root (needs ../shared/data, or SIMHASH_BENCH_DATA)::

    python3 benchmarks/false_matches.py [--keys 3] [--crafted 20] [--jobs 2]

Every page is read as a crawl reads it (``Fingerprinter.fingerprint_page`` on its bytes) and
signed under a namespace key; a pair is accepted when the later page would be dropped:
its fingerprint is a candidate of the other's and the second test confirms it. Two
radii: the defaults (8 bits, found as the index finds them: within 3 bits always, further
when a band is shared) and a stress radius of 12 bits with every pair within it a
candidate. Three corpora:

- ``pages/``: every pair of the dev pages. The corpus's own duplicates are removed first
  by a rule fixed before any threshold was chosen, and every removed pair is printed:
  true main texts' word Jaccard >= 0.8 where both pages have one; the same bytes; or a
  hand-listed pair with its reason (:data:`SAME_PAGE`).
- ``pairs/``: the labelled pairs (negatives are the distinct pairs), with precision,
  recall and F1 as the index decides at the defaults.
- ``large/``: every pair of its pages, each host's template learned from all of its pages
  first, as a crawl knows it once it has seen the host; pairs of one cluster are copies.

For each: distinct pairs examined (n), accepted, the 95% upper bound of the rate per pair
(3/n when none is accepted), the margin (the fewest signature bits by which a distinct
pair differs, against the threshold) and the chance, from the second test's estimator,
that a distinct pair of that resemblance passes. Then the crafted-collision check: a page
built to hit a victim's fingerprint with none of its words is never accepted.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import random
import re
import string
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pages import data_dir, load_pages
from scrapy_simhash import template as tp
from scrapy_simhash.confirm import (
    CONFIRM_DISTANCE,
    NO_SIGNATURE,
    Evidence,
    Signer,
    new_key,
    pass_probability,
    resemblance,
)
from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint
from scrapy_simhash.index.defaults import default_distances
from scrapy_simhash.index.layout import choose_layout

STRESS = 12
#: Dev pages that are one page held twice, which no rule on true main texts finds.
SAME_PAGE = {
    ("wcxb/0648", "wcxb/2927"): "one IKEA sofa listing under two category URLs (97% of the "
    "page's words shared; the annotated main texts differ in what they mark)",
    ("gne_zh/tests/thepaper/2", "gne_zh/tests/thepaper/4"): "the same article (data README)",
    (
        "gne_zh/tests/thepaper/2",
        "gne_zh/visiable_test/thepaper/1",
    ): "the same article (data README)",
    (
        "gne_zh/tests/thepaper/4",
        "gne_zh/visiable_test/thepaper/1",
    ): "the same article (data README)",
}
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Read:
    """What the decision needs of one page."""

    name: str
    fingerprint: int | None
    evidence: Evidence | None


def _read(path: Path) -> PageFingerprint:
    return _FINGERPRINTER.fingerprint_page(gzip.decompress(path.read_bytes()))


_FINGERPRINTER = Fingerprinter()


def _init() -> None:
    logging.getLogger("jieba").setLevel(logging.WARNING)


def read_all(paths: list[Path], jobs: int) -> list[PageFingerprint]:
    with ProcessPoolExecutor(jobs, initializer=_init) as pool:
        return list(pool.map(_read, paths, chunksize=16))


def _words(path: Path | None) -> set[str] | None:
    if path is None:
        return None
    return set(_WORD.findall(gzip.decompress(path.read_bytes()).decode("utf-8", "replace").lower()))


def signatures(reads: list[Read], key: int) -> tuple[np.ndarray, np.ndarray]:
    """Each page's signature as two 64-bit halves (zeros where a page has none)."""
    signer = Signer(key)
    hi = np.zeros(len(reads), dtype=np.uint64)
    lo = np.zeros(len(reads), dtype=np.uint64)
    for i, read in enumerate(reads):
        if read.evidence is not None:
            value = signer.sign(read.evidence) & NO_SIGNATURE  # the sketch above is no test
            hi[i], lo[i] = value >> 64, value & ((1 << 64) - 1)
    return hi, lo


@dataclass
class Pairs:
    """Candidate pairs (i < j) of a corpus and their figures."""

    i: np.ndarray
    j: np.ndarray
    distance: np.ndarray
    banded: np.ndarray


def candidates(reads: list[Read], radius: int, bits: int) -> Pairs:
    """Every pair within ``radius`` bits, and whether the default layout finds it."""
    have = [n for n, r in enumerate(reads) if r.fingerprint is not None]
    fps = np.array([reads[n].fingerprint for n in have], dtype=np.uint64)
    masks = [np.uint64(m) for m in choose_layout(bits, default_distances(bits)[1]).masks]
    rows_i, rows_j, dist, banded = [], [], [], []
    for a in range(len(have) - 1):
        d = np.bitwise_count(fps[a + 1 :] ^ fps[a])
        near = np.flatnonzero(d <= radius)
        for b in near:
            other = fps[a + 1 + b]
            rows_i.append(have[a])
            rows_j.append(have[a + 1 + b])
            dist.append(int(d[b]))
            banded.append(any((fps[a] & m) == (other & m) for m in masks))
    return Pairs(
        np.array(rows_i, dtype=np.intp),
        np.array(rows_j, dtype=np.intp),
        np.array(dist),
        np.array(banded, dtype=bool),
    )


def signature_distance(
    sig: tuple[np.ndarray, np.ndarray], i: np.ndarray, j: np.ndarray
) -> np.ndarray:
    hi, lo = sig
    return np.bitwise_count(hi[i] ^ hi[j]) + np.bitwise_count(lo[i] ^ lo[j])


def exact_kind(sig: tuple[np.ndarray, np.ndarray], i: np.ndarray) -> np.ndarray:
    return (sig[1][i] & np.uint64(1)).astype(bool)


def accepted(sig: tuple[np.ndarray, np.ndarray], pairs: Pairs, limit: int) -> np.ndarray:
    """Whether the second test confirms each pair (the crawl's ``confirms``)."""
    apart = signature_distance(sig, pairs.i, pairs.j)
    exact = exact_kind(sig, pairs.i) | exact_kind(sig, pairs.j)
    return np.where(exact, apart == 0, apart <= limit)


def fewest_bits_apart(
    sig: tuple[np.ndarray, np.ndarray], reads: list[Read], distinct
) -> tuple[int, str]:
    """The fewest signature bits by which any distinct pair of near signatures differs,
    over every pair of the corpus (not only candidates), and that pair."""
    have = np.array(
        [n for n, r in enumerate(reads) if r.evidence is not None and not r.evidence.exact]
    )
    best, names = 128, ""
    for a in range(len(have) - 1):
        rest = have[a + 1 :]
        d = signature_distance(sig, np.full(len(rest), have[a]), rest)
        for b in np.argsort(d)[:8]:
            if d[b] >= best:
                break
            if distinct(int(have[a]), int(rest[b])):
                best, names = int(d[b]), f"{reads[have[a]].name}  {reads[rest[b]].name}"
                break
    return best, names


def upper_bound(accepted_count: int, n: int) -> float:
    """95% upper bound of a rate from ``accepted_count`` in ``n`` (3/n for none)."""
    if n == 0:
        return float("nan")
    if accepted_count == 0:
        return 3.0 / n
    from math import sqrt

    p = accepted_count / n  # Wilson's upper bound
    z = 1.96
    centre = p + z * z / (2 * n)
    spread = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre + spread) / (1 + z * z / n)


def report_corpus(
    name: str,
    reads: list[Read],
    distinct,
    sig,
    limit: int,
    bits: int,
    pairs_total: int,
    default_radius: int,
) -> dict:
    stress = candidates(reads, STRESS, bits)
    ok = accepted(sig, stress, limit)
    is_distinct = np.array(
        [distinct(int(a), int(b)) for a, b in zip(stress.i, stress.j, strict=True)], dtype=bool
    )
    at_default = (stress.distance <= default_radius) & (
        stress.banded | (stress.distance <= default_distances(bits)[1])
    )
    bad_default = ok & at_default & is_distinct
    bad_stress = ok & is_distinct
    margin, margin_pair = fewest_bits_apart(sig, reads, distinct)
    apart = signature_distance(sig, stress.i, stress.j)
    near = ~(exact_kind(sig, stress.i) | exact_kind(sig, stress.j)) & is_distinct
    candidate_margin = int(apart[near].min()) if near.any() else 128
    row = {
        "corpus": name,
        "distinct_pairs": pairs_total,
        "candidates_default": int((at_default & is_distinct).sum()),
        "candidates_stress": int(is_distinct.sum()),
        "accepted_default": int(bad_default.sum()),
        "accepted_stress": int(bad_stress.sum()),
        "upper_bound_default": upper_bound(int(bad_default.sum()), pairs_total),
        "upper_bound_stress": upper_bound(int(bad_stress.sum()), pairs_total),
        "margin_bits": margin,
        "margin_pair": margin_pair,
        "pass_at_margin": pass_probability(resemblance(margin), limit),
        "candidate_margin_bits": candidate_margin,
        "pass_at_candidate_margin": pass_probability(resemblance(candidate_margin), limit),
        "accepted_pairs": [
            (reads[int(a)].name, reads[int(b)].name, int(d))
            for a, b, d, flag in zip(stress.i, stress.j, stress.distance, bad_stress, strict=True)
            if flag
        ],
    }
    return row


def dev_pages(jobs: int) -> tuple[list[Read], callable, int]:
    pages = load_pages()
    read = read_all([p.path for p in pages], jobs)
    names = [str(p.path.relative_to(data_dir() / "pages")).removesuffix(".html.gz") for p in pages]
    words = [_words(p.main_path) for p in pages]
    bodies = {}
    for n, p in enumerate(pages):
        bodies.setdefault(p.body(), []).append(n)
    same: dict[tuple[int, int], str] = {}
    index = {name: n for n, name in enumerate(names)}
    for group in bodies.values():
        for x in range(len(group)):
            for y in range(x + 1, len(group)):
                same[(group[x], group[y])] = "the same bytes"
    for (a, b), why in SAME_PAGE.items():
        same[tuple(sorted((index[a], index[b])))] = why
    reads = [
        Read(names[n], r.fingerprint, r.evidence if r.fingerprint is not None else None)
        for n, r in enumerate(read)
    ]
    # Pairs of true main texts with word Jaccard >= 0.8 (the rule fixed before thresholds).
    with_truth = [n for n, w in enumerate(words) if w]
    for x in range(len(with_truth)):
        a = with_truth[x]
        for b in with_truth[x + 1 :]:
            wa, wb = words[a], words[b]
            small, large = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
            if len(small) < 0.8 * len(large):
                continue
            if len(wa & wb) >= 0.8 * len(wa | wb):
                same.setdefault(
                    (a, b), f"true main texts' word Jaccard {len(wa & wb) / len(wa | wb):.2f}"
                )
    print(f"pages/: {len(pages)} pages; {len(same)} pairs removed as the corpus's own duplicates:")
    for (a, b), why in sorted(same.items()):
        print(f"   {names[a]}  {names[b]}: {why}")
    total = len(pages) * (len(pages) - 1) // 2 - len(same)
    return reads, (lambda a, b: (min(a, b), max(a, b)) not in same), total


def pair_cases(jobs: int) -> tuple[list[Read], list[dict], dict[str, int]]:
    root = data_dir() / "pairs"
    rows = [json.loads(line) for line in (root / "labels.jsonl").read_text().splitlines()]
    files = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    read = read_all([root / f for f in files], jobs)
    reads = [
        Read(f, r.fingerprint, r.evidence if r.fingerprint is not None else None)
        for f, r in zip(files, read, strict=True)
    ]
    return reads, rows, {f: n for n, f in enumerate(files)}


def large_pages(jobs: int) -> tuple[list[Read], callable, int]:
    root = data_dir() / "large"
    site = json.loads((root / "site.json").read_text())
    entries = [
        (h, meta["file"], f"{h}:{meta['cluster']}")
        for h, host in site["hosts"].items()
        for meta in host["pages"].values()
    ]
    read = read_all([data_dir() / e[1] for e in entries], jobs)
    fingerprinter = Fingerprinter()
    memory = tp.LocalMemory(fingerprinter)
    for (host, _, _), page in zip(entries, read, strict=True):
        memory.learn(host, page)
    reads, clusters = [], []
    for (host, file, cluster), page in zip(entries, read, strict=True):
        page = memory.apply(host, page)
        reads.append(
            Read(file, page.fingerprint, page.evidence if page.fingerprint is not None else None)
        )
        clusters.append(cluster)
    n = len(reads)
    copies = sum(1 for a in range(n) for b in range(a + 1, n) if clusters[a] == clusters[b])
    return reads, (lambda a, b: clusters[a] != clusters[b]), n * (n - 1) // 2 - copies


def crafted_check(reads: list[Read], key: int, count: int, limit: int) -> tuple[int, int, int]:
    """(victims tried, crafted pages accepted, fewest signature bits apart)."""
    fingerprinter = Fingerprinter()
    signer = Signer(key)
    victims = [r for r in reads if r.evidence is not None and not r.evidence.exact]
    random.Random(key).shuffle(victims)
    tried = hits = 0
    closest = 128
    for victim in victims[:count]:
        assert victim.fingerprint is not None
        assert victim.evidence is not None
        text = craft(fingerprinter, victim.fingerprint, set(victim.evidence.text.lower().split()))
        if text is None:
            continue
        tried += 1
        page = fingerprinter.fingerprint_document(text)
        assert page.fingerprint == victim.fingerprint
        apart = (
            (signer.sign(page.evidence) ^ signer.sign(victim.evidence)) & NO_SIGNATURE
        ).bit_count()
        closest = min(closest, apart)
        hits += apart <= limit
    return tried, hits, closest


def craft(fingerprinter: Fingerprinter, target: int, avoid: set[str]) -> str | None:
    """Random words, none of ``avoid``'s, whose fingerprint is ``target`` (public seed)."""
    rng = random.Random(target)
    chosen: list[str] = []
    width = fingerprinter.bits
    for _ in range(400_000):
        word = "".join(rng.choices(string.ascii_lowercase, k=9))
        if word in avoid:
            continue
        hashed = fingerprinter.fingerprint_features({word: 1.0})
        if hashed is not None and width - (hashed ^ target).bit_count() >= width * 0.66:
            chosen.append(word)
            if len(chosen) % 40 == 0:
                text = "\n".join(" ".join(chosen[i : i + 12]) for i in range(0, len(chosen), 12))
                if fingerprinter.fingerprint_document(text).fingerprint == target:
                    return text
    return None


def labelled(
    rows: list[dict],
    index: dict[str, int],
    reads: list[Read],
    sig,
    limit: int,
    bits: int,
    radius: int,
) -> dict:
    masks = choose_layout(bits, default_distances(bits)[1]).masks
    exact = default_distances(bits)[1]
    tp_ = fp_ = tp_stress = fp_stress = 0
    positives = sum(r["label"] for r in rows)
    wrong: list[str] = []
    hi, lo = sig
    for r in rows:
        a, b = reads[index[r["a"]]], reads[index[r["b"]]]
        if a.fingerprint is None or b.fingerprint is None:
            continue
        ia, ib = index[r["a"]], index[r["b"]]
        d = (a.fingerprint ^ b.fingerprint).bit_count()
        sa = (int(hi[ia]) << 64) | int(lo[ia])
        sb = (int(hi[ib]) << 64) | int(lo[ib])
        from scrapy_simhash.confirm import confirms

        ok = confirms(sa, sb, limit)
        found = d <= exact or any((a.fingerprint & m) == (b.fingerprint & m) for m in masks)
        if ok and d <= radius and found:
            if r["label"]:
                tp_ += 1
            else:
                fp_ += 1
                wrong.append(f"{r['pair_id']} {r['kind']} (distance {d})")
        if ok and d <= STRESS:
            if r["label"]:
                tp_stress += 1
            else:
                fp_stress += 1
    precision = tp_ / max(tp_ + fp_, 1)
    recall = tp_ / positives
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / max(precision + recall, 1e-9),
        "negatives_accepted_default": fp_,
        "negatives_accepted_stress": fp_stress,
        "wrong": wrong,
        "negatives": len(rows) - positives,
    }


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=3, help="namespace keys drawn (default 3)")
    parser.add_argument("--crafted", type=int, default=20, help="victims of the crafted check")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(list(argv) if argv is not None else None)
    bits = 64
    radius = default_distances(bits)[0]
    limit = CONFIRM_DISTANCE
    logging.getLogger("jieba").setLevel(logging.WARNING)
    pages, page_distinct, page_total = dev_pages(args.jobs)
    cases, rows, case_index = pair_cases(args.jobs)
    large, large_distinct, large_total = large_pages(args.jobs)
    keys = [new_key() for _ in range(args.keys)]
    print(
        f"\nboth tests at the defaults ({radius} bits, found as a {bits}-bit index with its "
        f"layout finds them) and at a stress radius of {STRESS} bits (every pair within "
        f"it); signatures confirm within {limit} bits\n"
    )
    header = (
        f"{'corpus':<8} {'key':>4} {'distinct pairs':>14} {'cand.':>6} {'acc.':>5} "
        f"{'95% ub':>9} {'cand.12':>7} {'acc.12':>6} {'95% ub 12':>9} {'margin':>7} "
        f"{'P(pass)':>9}"
    )
    print(header)
    for number, key in enumerate(keys, 1):
        for name, reads, distinct, total in (
            ("pages", pages, page_distinct, page_total),
            ("large", large, large_distinct, large_total),
        ):
            sig = signatures(reads, key)
            row = report_corpus(name, reads, distinct, sig, limit, bits, total, radius)
            print(
                f"{name:<8} {number:>4} {total:>14,} {row['candidates_default']:>6} "
                f"{row['accepted_default']:>5} {row['upper_bound_default']:>9.2e} "
                f"{row['candidates_stress']:>7} {row['accepted_stress']:>6} "
                f"{row['upper_bound_stress']:>9.2e} {row['margin_bits']:>4}/{limit} "
                f"{row['pass_at_margin']:>9.1e}"
            )
            for a, b, d in row["accepted_pairs"]:
                print(f"   accepted: {a}  {b}  (distance {d})")
            print(
                f"   closest distinct pair of all: {row['margin_pair']}; closest within "
                f"{STRESS} bits: {row['candidate_margin_bits']}/{limit} signature bits, "
                f"P(pass) {row['pass_at_candidate_margin']:.1e}"
            )
        sig = signatures(cases, key)
        result = labelled(rows, case_index, cases, sig, limit, bits, radius)
        print(
            f"pairs    {number:>4} {result['negatives']:>14,} labelled distinct: accepted "
            f"{result['negatives_accepted_default']} at the defaults, "
            f"{result['negatives_accepted_stress']} at {STRESS} bits; as the index decides: "
            f"P {result['precision']:.4f} R {result['recall']:.4f} F1 {result['f1']:.4f}"
        )
        for line in result["wrong"]:
            print(f"   accepted: {line}")
    tried, hits, closest = crafted_check(pages, keys[0], args.crafted, limit)
    print(
        f"\ncrafted pages: {tried} pages built onto a victim's fingerprint with none of its "
        f"words, {hits} accepted; the closest was {closest} signature bits from its victim "
        f"({limit} confirm; P(pass) of an unrelated pair {pass_probability(0.0, limit):.1e})"
    )


if __name__ == "__main__":
    main()
