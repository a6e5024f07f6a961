"""``scrapy-simhash simulate``: compare recrawl policies on the same changes and fetches."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.recrawl.config import DAY, RecrawlConfig
from scrapy_simhash.recrawl.png import PALETTE, line_chart
from scrapy_simhash.recrawl.simulate import (
    Population,
    Result,
    compare,
    format_results,
    population_from_rates,
    synthetic_population,
)

#: Clamps wide enough not to distort the comparison, unless ``-s`` sets them.
_SIMULATION_DEFAULTS = {
    "SIMHASH_RECRAWL_MIN_INTERVAL_SECS": 60.0,
    "SIMHASH_RECRAWL_MAX_INTERVAL_SECS": 365 * DAY,
    "SIMHASH_RECRAWL_REBALANCE_SECS": DAY / 4,
}


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "simulate",
        parents=[common],
        help="compare recrawl policies on simulated pages at equal fetch budgets",
        description=(
            "Draw page changes once (substantive Poisson changes plus trivial ones such as "
            "timestamps) and run every policy on them with the same number of fetches: "
            "fixed interval, Nutch, StormCrawler, an exact-digest detector, this package's "
            "scheduler and the optimum computed with the true rates. -s settings "
            "(SIMHASH_RECRAWL_*) configure this package's scheduler."
        ),
    )
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--days", type=float, default=60.0, help="simulated days")
    parser.add_argument("--warmup-days", type=float, default=20.0,
                        help="days left out of the figures while estimates settle")
    parser.add_argument("--fetches-per-page-per-day", type=float, default=1.0, metavar="F",
                        help="budget: F x pages fetches a day (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rates-file", metavar="FILE",
                        help="true change rates per day, one per line (else log-uniform, "
                        "hourly to quarterly)")
    parser.add_argument("--trivial-fraction", type=float, default=0.5,
                        help="share of pages with trivial changes (default 0.5)")
    parser.add_argument("--trivial-per-day", type=float, default=24.0,
                        help="trivial changes a day on those pages (default 24)")
    parser.add_argument("--png", metavar="FILE",
                        help="also draw freshness against budget for --budgets into FILE")
    parser.add_argument("--budgets", default="0.25,0.5,1,2,4", metavar="F,F,...",
                        help="fetches per page per day drawn by --png")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = RecrawlConfig.from_settings({**_SIMULATION_DEFAULTS, **settings_from_args(args)})
    population = _population(args)
    if args.fetches_per_page_per_day <= 0 or args.days <= args.warmup_days:
        raise ConfigurationError(
            "--fetches-per-page-per-day must be > 0 and --days longer than --warmup-days"
        )
    results = _run(args, population, config, args.fetches_per_page_per_day)
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        print(f"{len(population)} pages, {args.days:g} days ({args.warmup_days:g} warm-up), "
              f"{args.fetches_per_page_per_day:g} fetches/page/day, seed {args.seed}")
        print(format_results(results))
    if args.png:
        _draw(args, population, config)
    return 0


def _run(
    args: argparse.Namespace, population: Population, config: RecrawlConfig, per_page: float
) -> list[Result]:
    return compare(
        population,
        budget_per_day=per_page * len(population),
        days=args.days,
        warmup_days=args.warmup_days,
        seed=args.seed,
        config=config,
    )


def _population(args: argparse.Namespace) -> Population:
    if args.rates_file:
        with open(args.rates_file, encoding="utf-8") as stream:
            rates = [float(line.split()[0]) for line in stream if line.strip()
                     and not line.startswith("#")]
        if not rates or min(rates) < 0:
            raise ConfigurationError(f"{args.rates_file}: expected one rate >= 0 per line")
        return population_from_rates(rates, args.trivial_per_day)
    if args.pages < 1:
        raise ConfigurationError("--pages must be at least 1")
    return synthetic_population(
        args.pages,
        seed=args.seed,
        trivial_fraction=args.trivial_fraction,
        trivial_per_day=args.trivial_per_day,
    )


def _draw(args: argparse.Namespace, population: Population, config: RecrawlConfig) -> None:
    try:
        budgets = sorted(float(part) for part in args.budgets.split(","))
    except ValueError:
        raise ConfigurationError("--budgets takes numbers separated by commas") from None
    curves: dict[str, list[tuple[float, float]]] = {}
    for budget in budgets:
        for result in _run(args, population, config, budget):
            curves.setdefault(result.policy, []).append((budget, result.freshness))
    with open(args.png, "wb") as stream:
        stream.write(line_chart(list(curves.values())))
    legend = ", ".join(f"{name} = {colour}" for (colour, _), name in zip(PALETTE, curves, strict=False))
    print(f"wrote {args.png}: freshness (0..1) against fetches/page/day "
          f"{budgets[0]:g}..{budgets[-1]:g}; {legend}", file=sys.stderr)
