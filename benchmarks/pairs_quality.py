"""Near-duplicate quality on the independent pair benchmark (``shared/data/pairs``).

The pairs were built by another generator than ``quality.py``'s, from the same dev pages:
the reference figure for near-duplicate quality. Every case file is fingerprinted as the
command line would (``Fingerprinter.fingerprint_page`` on the exact bytes a server sends);
a file with no fingerprint never matches.

    python3 benchmarks/pairs_quality.py                       # defaults
    python3 benchmarks/pairs_quality.py -s SIMHASH_TOKENIZER=rjieba --jobs 2
    python3 benchmarks/pairs_quality.py --misses 20           # list missed pairs at k

Prints, for k = 0..12, precision, recall, F1 and the same-template false positives
(``same_template`` and ``same_template_swap`` pairs predicted near-duplicate); then, at the
default k, recall per kind and strength, the hit rate per negative kind, F1 per language
and fingerprint coverage.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pages import data_dir

from scrapy_simhash.cli import common_parser
from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.index.layout import choose_layout
from scrapy_simhash.settings import fingerprint_config, index_options

KS = range(13)
SAME_TEMPLATE = ("same_template", "same_template_swap")
LANGS = ("zh", "en", "de")


@dataclass(frozen=True)
class LabelledPair:
    a: str
    b: str
    positive: bool
    kind: str
    strength: str
    lang: str

    @property
    def same_template(self) -> bool:
        return self.kind in SAME_TEMPLATE


def load_pairs(root: Path) -> list[LabelledPair]:
    rows = (json.loads(line) for line in (root / "labels.jsonl").read_text().splitlines())
    return [
        LabelledPair(
            r["a"], r["b"], r["label"] == 1, r["kind"], str(r.get("strength", "")), r["lang"]
        )
        for r in rows
    ]


_FINGERPRINTER: Fingerprinter | None = None


def _init(overrides: dict[str, Any]) -> None:
    global _FINGERPRINTER
    logging.getLogger("jieba").setLevel(logging.WARNING)
    _FINGERPRINTER = Fingerprinter(fingerprint_config(overrides))


def _fingerprint(path: Path) -> tuple[str, int | None, str | None]:
    assert _FINGERPRINTER is not None
    page = _FINGERPRINTER.fingerprint_page(gzip.decompress(path.read_bytes()))
    return path.name, page.fingerprint, page.reason


def fingerprint_files(
    paths: list[Path], overrides: dict[str, Any], jobs: int
) -> dict[str, tuple[int | None, str | None]]:
    if jobs <= 1:
        _init(overrides)
        results: Iterable[tuple[str, int | None, str | None]] = map(_fingerprint, paths)
        return {name: (fp, reason) for name, fp, reason in results}
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(overrides,)) as pool:
        return {
            name: (fp, reason) for name, fp, reason in pool.map(_fingerprint, paths, chunksize=16)
        }


class Scorer:
    """Predicts near-duplicates by distance, or as the index does when ``band_masks`` are
    given: within k bits and sharing a band of the index's layout (every pair within its
    exact distance shares one; pairs further out only sometimes)."""

    def __init__(self, fps: dict[str, int | None], band_masks: tuple[int, ...] = ()) -> None:
        self.fps = fps
        self.band_masks = band_masks

    def distance(self, pair: LabelledPair) -> int | None:
        a, b = self.fps[Path(pair.a).name], self.fps[Path(pair.b).name]
        return None if a is None or b is None else (a ^ b).bit_count()

    def hit(self, pair: LabelledPair, k: int) -> bool:
        d = self.distance(pair)
        if d is None or d > k:
            return False
        if not self.band_masks:
            return True
        a, b = self.fps[Path(pair.a).name], self.fps[Path(pair.b).name]
        assert a is not None
        assert b is not None
        return any((a ^ b) & mask == 0 for mask in self.band_masks)

    def scores(self, pairs: list[LabelledPair], k: int) -> dict[str, float]:
        tp = fp = fn = same = 0
        for pair in pairs:
            hit = self.hit(pair, k)
            if pair.positive:
                tp += hit
                fn += not hit
            else:
                fp += hit
                same += hit and pair.same_template
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"P": precision, "R": recall, "F1": f1, "same": same}


def report(pairs: list[LabelledPair], scorer: Scorer, index: Scorer, k: int, misses: int) -> None:
    same_n = sum(p.same_template for p in pairs)
    print(f"\n## all languages: {len(pairs)} pairs, {sum(p.positive for p in pairs)} positive\n")
    print(" k |     P      R     F1  same-template FP   (by distance)")
    for kk in KS:
        s = scorer.scores(pairs, kk)
        mark = "  <- default" if kk == k else ""
        print(
            f"{kk:2d} | {s['P']:.3f}  {s['R']:.3f}  {s['F1']:.3f}  "
            f"{int(s['same']):3d}/{same_n}{mark}"
        )
    s = index.scores(pairs, k)
    print(
        f"\nas the index decides at k={k} (bands of its layout): P {s['P']:.3f}  "
        f"R {s['R']:.3f}  F1 {s['F1']:.3f}  same-template FP {int(s['same'])}/{same_n}"
    )
    print(f"\n## at k={k}: recall per kind and strength (positives), hit rate (negatives)\n")
    groups: dict[tuple[bool, str, str], list[LabelledPair]] = defaultdict(list)
    for pair in pairs:
        groups[(pair.positive, pair.kind, pair.strength)].append(pair)
        groups[(pair.positive, pair.kind, "*")].append(pair)
    for (positive, kind, strength), group in sorted(
        groups.items(), key=lambda x: (not x[0][0], x[0][1:])
    ):
        rate = sum(scorer.hit(p, k) for p in group) / len(group)
        none = sum(scorer.distance(p) is None for p in group)
        label = "recall" if positive else "FP"
        print(
            f"  {label:6s} {kind:20s} {strength:14s} n={len(group):4d}  {rate:.3f}  (no fp {none})"
        )
    print(f"\n## at k={k}: per language\n")
    buckets: dict[str, list[LabelledPair]] = defaultdict(list)
    for pair in pairs:
        buckets[pair.lang if pair.lang in LANGS else "other"].append(pair)
    for lang in (*LANGS, "other"):
        group = buckets[lang]
        s = scorer.scores(group, k)
        print(
            f"  {lang:6s} n={len(group):4d}  P={s['P']:.3f}  R={s['R']:.3f}  F1={s['F1']:.3f}"
            f"  same-template FP {int(s['same'])}"
        )
    if misses:
        print(f"\n## missed positives and false positives at k={k} (first {misses} of each)\n")
        shown: dict[bool, int] = defaultdict(int)
        for pair in pairs:
            if pair.positive == scorer.hit(pair, k) or shown[pair.positive] >= misses:
                continue
            shown[pair.positive] += 1
            tag = "MISS" if pair.positive else "FALSE"
            print(
                f"  {tag} d={scorer.distance(pair)} {pair.kind}/{pair.strength} {pair.lang} "
                f"{pair.a} {pair.b}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], parents=[common_parser()]
    )
    parser.add_argument(
        "-k", type=int, default=None, help="default: SIMHASH_MAX_DISTANCE as a crawl reads it"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--misses", type=int, default=0, help="list up to N errors of each kind")
    parser.add_argument("--json", type=Path, help="write fingerprints and reasons to this file")
    args = parser.parse_args()
    root = data_dir() / "pairs"
    if not (root / "labels.jsonl").exists():
        print(f"skipped: pair benchmark not found at {root} (set SIMHASH_BENCH_DATA)")
        return 0
    overrides = dict(args.settings)
    options_of_index = index_options(overrides)
    k = args.k if args.k is not None else options_of_index["max_distance"]
    exact = min(options_of_index["exact_distance"], k)
    masks = choose_layout(64, exact).masks
    pairs = load_pairs(root)
    files = sorted({root / p.a for p in pairs} | {root / p.b for p in pairs})
    print(f"# pair benchmark: {len(files)} files, overrides {overrides or 'none'}")
    started = time.process_time(), time.perf_counter()
    results = fingerprint_files(files, overrides, args.jobs)
    cpu, wall = time.process_time() - started[0], time.perf_counter() - started[1]
    fps = {name: fp for name, (fp, _) in results.items()}
    covered = sum(fp is not None for fp in fps.values())
    print(
        f"files with a fingerprint: {covered} / {len(fps)} "
        f"({100 * (1 - covered / len(fps)):.1f}% without); {wall:.1f} s wall"
        + (f", {cpu / len(fps) * 1e3:.1f} ms CPU per file" if args.jobs <= 1 else "")
    )
    reasons: dict[str, int] = defaultdict(int)
    for fp, reason in results.values():
        if fp is None:
            reasons[(reason or "?").split(" (")[0]] += 1
    for reason, count in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"  no fingerprint: {count:4d}  {reason}")
    print(f"default k={k}; the index's bands find every pair within {exact} bits")
    report(pairs, Scorer(fps), Scorer(fps, masks), k, args.misses)
    if args.json:
        args.json.write_text(
            json.dumps({n: [None if f is None else f"{f:x}", r] for n, (f, r) in results.items()})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
