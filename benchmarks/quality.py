"""Near-duplicate quality of scrapy-simhash against reference SimHash recipes, and
main-text extraction quality against the corpus's true main text.

Run by hand (needs ../shared/data/pages, or SIMHASH_BENCH_DATA):

    python3 benchmarks/quality.py                    # full run, a few minutes
    python3 benchmarks/quality.py --limit 40         # quick run: 40 anchor pages per language
    python3 benchmarks/quality.py -s SIMHASH_SHINGLE_SIZE=2 -s SIMHASH_TOKENIZER=rjieba

Pairs (see _pairs.py) are labelled positive (re-publications of one page) or negative
(different pages, including same-template pages); a pair is predicted duplicate when the
Hamming distance of its fingerprints is <= k. Figures are printed per language, for
k = 0..10, with the false-positive rate on same-template negatives, for ours and the
baselines side by side, with ratios ours/baseline at k=3.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baselines import jieba_md5, simhash_lib
from _pages import Page, load_pages, overlap
from _pairs import Corpus, Pair, build

from scrapy_simhash import extract_main_text
from scrapy_simhash.cli import common_parser
from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.index.defaults import DEFAULT_MAX_DISTANCE
from scrapy_simhash.settings import fingerprint_config

KS = range(11)


def fingerprint_all(
    name: str, fn: Callable[[bytes], int | None], corpus: Corpus
) -> tuple[dict[str, int | None], float]:
    started = time.perf_counter()
    result = {doc: fn(body) for doc, body in corpus.docs.items()}
    elapsed = time.perf_counter() - started
    print(f"  {name:12s} {len(result)} documents in {elapsed:6.1f} s", file=sys.stderr)
    return result, elapsed


def distance(fps: dict[str, int | None], pair: Pair) -> int | None:
    a, b = fps[pair.a], fps[pair.b]
    return None if a is None or b is None else (a ^ b).bit_count()


def scores(fps: dict[str, int | None], pairs: list[Pair], k: int) -> dict[str, float]:
    tp = fp = fn = same_fp = same_n = 0
    for pair in pairs:
        d = distance(fps, pair)
        hit = d is not None and d <= k
        if pair.positive:
            tp += hit
            fn += not hit
        else:
            fp += hit
        if pair.same_template:
            same_n += 1
            same_fp += hit
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"P": precision, "R": recall, "F1": f1, "FPR_tpl": same_fp / same_n if same_n else 0}


def report_pairs(corpus: Corpus, methods: dict[str, dict[str, int | None]], target_k: int) -> None:
    for lang in ("zh", "en"):
        pairs = [p for p in corpus.pairs if p.lang == lang]
        if not pairs:
            continue
        positives = sum(p.positive for p in pairs)
        same = sum(p.same_template for p in pairs)
        print(
            f"\n## {lang}: {len(pairs)} pairs ({positives} positive, {len(pairs) - positives} "
            f"negative of which {same} same-template)\n"
        )
        header = " k | " + " | ".join(f"{name[:10]:>10s} P    R    F1  FPRtpl" for name in methods)
        print(header)
        for k in KS:
            cells = []
            for fps in methods.values():
                s = scores(fps, pairs, k)
                cells.append(f"{s['P']:.3f} {s['R']:.3f} {s['F1']:.3f} {s['FPR_tpl'] * 100:5.1f}%")
            print(f"{k:2d} | " + " | ".join(f"{cell:>28s}" for cell in cells))
        ours = scores(methods["ours"], pairs, target_k)
        for name, fps in methods.items():
            if name == "ours":
                continue
            other = scores(fps, pairs, target_k)
            ratio = ours["F1"] / other["F1"] if other["F1"] else float("inf")
            print(f"k={target_k}: F1 ours/{name} = {ratio:.2f}x", end="; ")
        print()
        print(f"\nrecall at k={target_k} by positive kind / hit rate by negative kind:")
        kinds: dict[str, list[Pair]] = defaultdict(list)
        for pair in pairs:
            kinds[pair.kind].append(pair)
        for kind, group in sorted(kinds.items()):
            cells = []
            for name, fps in methods.items():
                hits = sum((d := distance(fps, p)) is not None and d <= target_k for p in group)
                none = sum(distance(fps, p) is None for p in group)
                cells.append(f"{name} {hits / len(group):.3f} (no fp {none})")
            label = "pos" if group[0].positive else "neg"
            print(f"  {label} {kind:24s} n={len(group):4d}  " + "  ".join(cells))


def report_extraction(pages: list[Page], per_source: int | None) -> None:
    """Token P/R/F1 against the true main text, per source (macro), beside trafilatura."""
    try:
        import trafilatura
    except ImportError:
        trafilatura = None
    reference = (
        f"trafilatura {trafilatura.__version__}" if trafilatura else "trafilatura: not installed"
    )
    print(
        f"\n## Main-text extraction vs true main text (token P/R/F1, mean per page; {reference})\n"
    )
    ours: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    theirs: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    times: list[float] = []
    for page in pages:
        truth = page.main_text()
        if truth is None or (per_source and len(ours[page.source]) >= per_source):
            continue
        body = page.body()
        started = time.perf_counter()
        main = extract_main_text(body)
        times.append(time.perf_counter() - started)
        ours[page.source].append(overlap(main.text, truth))
        if trafilatura is not None:
            text = trafilatura.extract(body, include_tables=True) or ""
            theirs[page.source].append(overlap(text, truth))
    rows = sorted(ours)
    for source in [*rows, "all"]:
        mine = [x for s in rows for x in ours[s]] if source == "all" else ours[source]
        other = [x for s in rows for x in theirs[s]] if source == "all" else theirs[source]
        p, r, f = (statistics.mean(v[i] for v in mine) for i in range(3))
        line = f"  {source:18s} n={len(mine):4d}  ours P={p:.3f} R={r:.3f} F1={f:.3f}"
        if other:
            tf = statistics.mean(v[2] for v in other)
            line += f"   trafilatura F1={tf:.3f}  ours/trafilatura {f / tf if tf else 0:.2f}x"
        print(line)
    times.sort()
    print(
        f"  extraction time per page: median {statistics.median(times) * 1e3:.2f} ms, "
        f"p90 {times[int(len(times) * 0.9)] * 1e3:.2f} ms ({len(times)} pages; includes decoding)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], parents=[common_parser()]
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=120,
        help="anchor pages per language (default 120, about 5 minutes; 0 = every usable page)",
    )
    parser.add_argument("--seed", type=int, default=20240501)
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--no-extraction", action="store_true")
    parser.add_argument(
        "-k", type=int, default=DEFAULT_MAX_DISTANCE, help="k of the per-kind table and ratios"
    )
    args = parser.parse_args()
    logging.getLogger("jieba").setLevel(logging.WARNING)
    pages = load_pages()
    overrides = dict(args.settings)
    args.limit = args.limit or None
    print(
        f"# scrapy-simhash quality benchmark (seed {args.seed}, limit {args.limit}, "
        f"overrides {overrides or 'none'})"
    )
    if not args.no_extraction:
        report_extraction(pages, args.limit)
    started = time.perf_counter()
    corpus = build(pages, args.limit, args.seed)
    print(
        f"\nbuilt {len(corpus.docs)} documents, {len(corpus.pairs)} pairs "
        f"in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    fingerprinter = Fingerprinter(fingerprint_config(overrides))
    methods: dict[str, dict[str, int | None]] = {}
    timings: dict[str, float] = {}
    methods["ours"], timings["ours"] = fingerprint_all(
        "ours", lambda body: fingerprinter.fingerprint_page(body).fingerprint, corpus
    )
    if not args.no_baselines:
        methods["simhash-lib"], timings["simhash-lib"] = fingerprint_all(
            "simhash-lib", simhash_lib, corpus
        )
        methods["jieba-md5"], timings["jieba-md5"] = fingerprint_all("jieba-md5", jieba_md5, corpus)
    report_pairs(corpus, methods, args.k)
    print(
        "\nfingerprinting time per document: "
        + ", ".join(f"{name} {t / len(corpus.docs) * 1e3:.1f} ms" for name, t in timings.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
