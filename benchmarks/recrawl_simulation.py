"""Recrawl scheduling benchmark: freshness at equal fetches, side by side, in one run.

1. Cho & Garcia-Molina's reference example (five pages changing 1..5 times a day, five
   fetches a day): uniform 0.365, proportional 0.317, optimal 0.374.
2. Simulated pages with log-uniform change rates (hourly to quarterly) and trivial changes
   (timestamps, rotating ads) on half of them. Every policy sees the same changes and
   spends the same fetches: fixed interval, Nutch's AdaptiveFetchSchedule (x0.8 / x1.4),
   StormCrawler's adaptive rule (x1.5 unchanged, halfway to the minimum when changed),
   this scheduler over an exact digest (trivial changes count), this scheduler over
   SimHash, and the optimum computed with the true rates. Targets: ours >= 0.97 x the
   optimum's freshness and >= 5 points above Nutch.
3. With the shared page corpus present (../shared/data/pages): SimHash distances between
   versions of real articles that differ only by a timestamp/counter line or a rotating ad,
   and versions with one paragraph rewritten or a third of the text replaced, to check the
   SIMHASH_RECRAWL_CHANGE_DISTANCE default.

Run by hand: ``python3 benchmarks/recrawl_simulation.py [--pages 400 --days 90 ...]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scrapy_simhash.recrawl.config import RecrawlConfig
from scrapy_simhash.recrawl.policy import budget_frequency, freshness, solve_multiplier
from scrapy_simhash.recrawl.simulate import (
    compare,
    format_results,
    simulation_config,
    synthetic_population,
)


def reference_example() -> bool:
    rates = [1.0, 2.0, 3.0, 4.0, 5.0]
    uniform = sum(freshness(r, 1.0) for r in rates) / 5
    proportional = sum(freshness(r, 3.0 / r) for r in rates) / 5
    mu = solve_multiplier([(r, 1.0) for r in rates], 5.0)
    freqs = [budget_frequency(r, mu) for r in rates]
    optimal = sum(freshness(r, 1 / f) if f else 0.0 for r, f in zip(rates, freqs, strict=True)) / 5
    print("1. Cho & Garcia-Molina reference (5 pages, 1..5 changes/day, 5 fetches/day)")
    print(f"   {'':<13}{'ours':>7}{'paper':>7}")
    ok = True
    for name, value, paper in (
        ("uniform", uniform, 0.365),
        ("proportional", proportional, 0.317),
        ("optimal", optimal, 0.374),
    ):
        ok &= round(value, 3) == paper
        print(f"   {name:<13}{value:>7.3f}{paper:>7.3f}")
    print(f"   optimal frequencies {[round(f, 2) for f in freqs]} (paper 1.15 1.36 1.35 1.14 0)")
    return ok


def simulation(args: argparse.Namespace) -> bool:
    population = synthetic_population(
        args.pages, seed=args.seed, trivial_fraction=args.trivial_fraction
    )
    config: RecrawlConfig = simulation_config()
    print(
        f"\n2. Simulation: {args.pages} pages, rates log-uniform 24/day..1/90 days, "
        f"{args.trivial_fraction:.0%} with 24 trivial changes/day, {args.days:g} days "
        f"(first {args.warmup_days:g} not scored), seed {args.seed}"
    )
    ok = True
    for per_page in args.budgets:
        started = time.perf_counter()
        results = compare(
            population,
            budget_per_day=per_page * args.pages,
            days=args.days,
            warmup_days=args.warmup_days,
            seed=args.seed + 1,
            config=config,
        )
        by_name = {r.policy: r for r in results}
        ours, optimum = by_name["simhash (ours)"], by_name["optimum (true rates)"]
        nutch = by_name["Nutch adaptive"]
        ratio = ours.freshness / optimum.freshness
        gain = 100 * (ours.freshness - nutch.freshness)
        met = ratio >= 0.97 and gain >= 5
        ok &= met
        print(
            f"\n   budget {per_page:g} fetches/page/day "
            f"({time.perf_counter() - started:.1f}s; ratio column = freshness / optimum)"
        )
        print("   " + format_results(results).replace("\n", "\n   "))
        print(
            f"   ours/optimum {ratio:.3f} (target >= 0.97), ours - Nutch {gain:+.1f} points "
            f"(target >= +5): {'met' if met else 'NOT met'}"
        )
    return ok


def threshold_check(limit: int) -> None:
    print("\n3. SimHash distance between versions of real articles (64 bits, defaults)")
    try:
        from _pages import load_pages
    except ImportError:
        print("   benchmarks/_pages.py missing: skipped")
        return
    from _pages import data_dir

    if not (data_dir() / "pages" / "manifest.jsonl").exists():
        print(f"   page corpus not found at {data_dir()}: skipped (set SIMHASH_BENCH_DATA)")
        return
    from scrapy_simhash.fingerprint import Fingerprinter

    rng = random.Random(0)
    texts = [t for p in load_pages() if (t := p.main_text()) and len(t) > 1500]
    rng.shuffle(texts)
    texts = texts[:limit]
    fp = Fingerprinter()
    edits = {
        "timestamp+counter": lambda paras, i: [
            *paras,
            (
                f"Updated {rng.randint(1, 28)} May 2024 {rng.randint(0, 23)}:"
                f"{rng.randint(10, 59)} · {rng.randint(100, 99999):,} views"
            ),
        ],
        "rotating ad": lambda paras, i: [
            *paras,
            rng.choice(
                [
                    "Sponsored: save 20% on running shoes this week only.",
                    "Advertisement: try our new cloud backup free for a month.",
                    "Promoted: the best travel deals to Lisbon and Porto.",
                ]
            ),
        ],
        "1 paragraph rewritten": lambda paras, i: _replace(paras, texts, i, rng, 1),
        "1/3 of text replaced": lambda paras, i: _replace(
            paras, texts, i, rng, max(1, len(paras) // 3)
        ),
    }
    print(f"   {len(texts)} articles > 1500 chars; share of pairs with distance > k")
    header = "   " + f"{'edit':<24}" + "".join(f"{'k=' + str(k):>7}" for k in range(9))
    print(header + f"{'median':>8}")
    for name, edit in edits.items():
        distances = []
        for i, text in enumerate(texts):
            paras = [p for p in text.split("\n") if p.strip()]
            a = fp.fingerprint_text("\n".join(edit(paras, i)))
            b = fp.fingerprint_text("\n".join(edit(paras, i)))
            if name.startswith(("1 ", "1/")):
                a = fp.fingerprint_text("\n".join(paras))
            if a is not None and b is not None:
                distances.append((a ^ b).bit_count())
        if not distances:
            print(f"   {name:<24}no article fingerprinted")
            continue
        distances.sort()
        shares = "".join(
            f"{sum(d > k for d in distances) / len(distances):>7.0%}" for k in range(9)
        )
        print(f"   {name:<24}{shares}{distances[len(distances) // 2]:>8}")
    print("   Trivial edits (first two rows) should stay at or below k, replaced text above;")
    print("   the default k = SIMHASH_RECRAWL_CHANGE_DISTANCE = 3. A single rewritten paragraph")
    print("   of a long article is often within k: SimHash sees it as the same page.")


def _replace(
    paras: list[str], texts: list[str], i: int, rng: random.Random, count: int
) -> list[str]:
    other = [p for p in texts[(i + 1) % len(texts)].split("\n") if p.strip()]
    out = list(paras)
    for j in rng.sample(range(len(out)), min(count, len(out))):
        out[j] = rng.choice(other)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--days", type=float, default=90.0)
    parser.add_argument("--warmup-days", type=float, default=30.0)
    parser.add_argument(
        "--budgets",
        type=float,
        nargs="+",
        default=[0.5, 1.0, 2.0],
        help="fetches per page per day to compare at",
    )
    parser.add_argument("--trivial-fraction", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--articles", type=int, default=200, help="real articles for the threshold check"
    )
    args = parser.parse_args()
    reference_ok = reference_example()
    simulation_ok = simulation(args)
    threshold_check(args.articles)
    print(
        f"\nreference example {'reproduced' if reference_ok else 'NOT reproduced'}; "
        f"simulation targets {'met' if simulation_ok else 'NOT met'} at every budget"
    )
    return 0 if reference_ok and simulation_ok else 1


if __name__ == "__main__":
    sys.exit(main())
