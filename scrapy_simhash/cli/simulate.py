"""``scrapy-simhash simulate``: compare recrawl policies on the same changes and fetches."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._progress import bar
from scrapy_simhash.cli.due import bounded_lines
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.recrawl.config import DAY, RecrawlConfig
from scrapy_simhash.recrawl.simulate import (
    Population,
    Result,
    compare,
    format_results,
    population_from_rates,
    synthetic_population,
)
from scrapy_simhash.settings import recrawl_config

#: Policies :func:`compare` runs per budget (the progress bar's unit).
_POLICIES = 6

# Bounds of the inputs. The simulation holds every page, every drawn change and every
# fetch of a policy run in memory (``--pages 50000000`` once took 3.7 GB), so what it will
# hold is estimated first and a run above MAX_MEMORY_BYTES is refused, saying what to lower.
#: Simulated pages at most (--pages, lines of --rates-file).
MAX_PAGES = 100_000
#: Simulated days at most (ten years).
MAX_DAYS = 3650.0
#: Changes or fetches a day per page at most: one a minute, the simulation's shortest
#: recrawl interval (faster changes cannot be told apart).
MAX_PER_DAY = 1440.0
#: Budgets --png draws at most (one simulation each).
MAX_BUDGETS = 12
#: What a run may hold (the interpreter and its imports come on top, about 50 MB).
MAX_MEMORY_BYTES = 400 * 1024 * 1024
#: Measured (with a margin): a page's state in every policy, and one drawn change or fetch.
_BYTES_PER_PAGE = 3584
_BYTES_PER_EVENT = 52

#: Clamps wide enough not to distort the comparison, unless ``-s`` sets them.
_SIMULATION_DEFAULTS = {
    "SIMHASH_RECRAWL_MIN_INTERVAL_SECS": 60.0,
    "SIMHASH_RECRAWL_MAX_INTERVAL_SECS": 365 * DAY,
    "SIMHASH_RECRAWL_REBALANCE_SECS": DAY / 4,
}


#: What the table's columns and rows mean: in --help and under the printed table.
LEGEND = """\
columns (measured after the warm-up, over all pages):
  fetch/page/day  fetches spent per page per day: the same budget for every policy
  freshness       share of the time a page's stored copy matched the live page (0-1;
                  higher is better)
  ratio           freshness divided by the optimum's (the last row)
  age (h)         hours a stored copy had been out of date, averaged over pages and time
                  (0 while fresh; lower is better)
  wasted          share of fetches that found no substantive change since the fetch before
  missed          share of substantive changes never seen: the page changed again before
                  the next fetch
rows:
  optimum (true rates)  the freshness optimum (Cho & Garcia-Molina) computed from the true
                        change rates, which no crawler knows: the upper bound at this budget.
                        It reaches it by never fetching again the pages that change too fast
                        for the budget to keep fresh, so their copies grow old: its age is by
                        far the worst, by design
  simhash (ours)        this package's scheduler (budget policy, SIMHASH_RECRAWL_* settings),
                        changes detected by SimHash distance
  exact digest          the same scheduler, with every changed byte (a timestamp) a change
  fixed interval, Nutch adaptive, StormCrawler: other crawlers' interval rules"""


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
            "(SIMHASH_RECRAWL_*) configure this package's scheduler. The defaults answer in "
            "a few seconds; larger --pages and --days take longer (300 pages over 60 days: "
            "about a minute)."
        ),
        epilog=LEGEND,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--pages",
        type=int,
        default=200,
        help=f"simulated pages, at most {MAX_PAGES:,} (default 200)",
    )
    parser.add_argument(
        "--days",
        type=float,
        default=30.0,
        help=f"simulated days, at most {MAX_DAYS:g} (default 30)",
    )
    parser.add_argument(
        "--warmup-days",
        type=float,
        default=10.0,
        help="days left out of the figures while estimates settle (default 10)",
    )
    parser.add_argument(
        "--fetches-per-page-per-day",
        type=float,
        default=1.0,
        metavar="F",
        help="budget: F x pages fetches a day (default 1)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rates-file",
        metavar="FILE",
        help="true change rates per day, one per line (else log-uniform, hourly to quarterly)",
    )
    parser.add_argument(
        "--trivial-fraction",
        type=float,
        default=0.5,
        help="share of pages with trivial changes (default 0.5)",
    )
    parser.add_argument(
        "--trivial-per-day",
        type=float,
        default=24.0,
        help="trivial changes a day on those pages (default 24)",
    )
    parser.add_argument(
        "--png",
        metavar="FILE",
        help="also draw freshness against budget for --budgets into FILE "
        '(needs matplotlib: pip install "scrapy-simhash[plot]")',
    )
    parser.add_argument(
        "--budgets",
        default="0.25,0.5,1,2,4",
        metavar="F,F,...",
        help="fetches per page per day drawn by --png",
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = recrawl_config({**_SIMULATION_DEFAULTS, **settings_from_args(args)})
    _check_numbers(args)
    budgets = _budgets(args) if args.png else []
    population = _population(args)
    _check_memory(args, population, max([args.fetches_per_page_per_day, *budgets]))
    if args.png:
        from scrapy_simhash.cli._plot import pyplot

        pyplot()  # a missing matplotlib is said before minutes of simulation
    if not args.json:  # first, so a long run is seen to have started
        print(
            f"{len(population)} pages, {args.days:g} days ({args.warmup_days:g} warm-up), "
            f"{fetches_per_day(args.fetches_per_page_per_day)}, seed {args.seed}",
            flush=True,
        )
    with bar(_POLICIES * (1 + len(budgets)), "policy runs") as progress:
        results = _run(args, population, config, args.fetches_per_page_per_day, progress)
        curves = _curves(args, population, config, budgets, progress) if args.png else {}
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        print(format_results(results))
        print()
        print(LEGEND)
    if args.png:
        _draw(args, curves, len(population))
    return 0


def _run(
    args: argparse.Namespace,
    population: Population,
    config: RecrawlConfig,
    per_page: float,
    progress: Any,
) -> list[Result]:
    return compare(
        population,
        budget_per_day=per_page * len(population),
        days=args.days,
        warmup_days=args.warmup_days,
        seed=args.seed,
        config=config,
        on_result=lambda _: progress.update(1),
    )


def check_range(
    name: str, value: float, low: float, high: float, *, above_low: bool = False, why: str = ""
) -> None:
    """Refuse ``value`` unless finite and in ``[low, high]`` (``(low, high]`` when
    ``above_low``): NaN compares false to every bound and once ran a table of zeros."""
    inside = math.isfinite(value) and (value > low if above_low else value >= low) and value <= high
    if not inside:
        low_text = f"above {low:g}" if above_low else f"at least {low:g}"
        raise ConfigurationError(
            f"{name} must be a number {low_text} and at most {high:g}{why}, got {value}"
        )


_PER_DAY_WHY = " (a minute apart: the simulation's shortest recrawl interval)"


def _check_numbers(args: argparse.Namespace) -> None:
    """Every number of the command, before anything is drawn."""
    if not args.rates_file and not 1 <= args.pages <= MAX_PAGES:
        raise ConfigurationError(
            f"--pages must be between 1 and {MAX_PAGES:,} (every page is simulated in memory "
            f"by every policy), got {args.pages}"
        )
    check_range("--days", args.days, 0, MAX_DAYS, above_low=True, why=" (ten years)")
    check_range("--warmup-days", args.warmup_days, 0, MAX_DAYS)
    if args.days <= args.warmup_days:
        raise ConfigurationError(
            f"--days ({args.days:g}) must be longer than --warmup-days ({args.warmup_days:g}): "
            "the figures are measured after the warm-up"
        )
    check_range(
        "--fetches-per-page-per-day",
        args.fetches_per_page_per_day,
        0,
        MAX_PER_DAY,
        above_low=True,
        why=_PER_DAY_WHY,
    )
    check_range("--trivial-fraction", args.trivial_fraction, 0, 1, why=" (a share of the pages)")
    check_range("--trivial-per-day", args.trivial_per_day, 0, MAX_PER_DAY, why=_PER_DAY_WHY)


def _check_memory(args: argparse.Namespace, population: Population, most_per_day: float) -> None:
    """Refuse a run whose pages, drawn changes and fetches would not fit MAX_MEMORY_BYTES."""
    pages = len(population)
    changes = sum(population.rates_per_day) + sum(population.trivial_per_day)
    events = args.days * (changes + pages * most_per_day)
    need = pages * _BYTES_PER_PAGE + events * _BYTES_PER_EVENT
    if need > MAX_MEMORY_BYTES:
        raise ConfigurationError(
            f"this simulation would hold about {need / 2**20:,.0f} MiB ({pages:,} pages, "
            f"{events:,.0f} changes and fetches over {args.days:g} days); it is refused above "
            f"{MAX_MEMORY_BYTES // 2**20} MiB: lower --pages, --days, --trivial-per-day or "
            "the fetch budget"
        )


def _read_rates(path: str) -> list[float]:
    """One change rate a line (its first field; ``#`` comments and blank lines skipped),
    each checked, at most MAX_PAGES of them."""
    rates: list[float] = []
    for number, line in bounded_lines(
        path, what="--rates-file", max_line_bytes=1024, max_bytes=16 * 1024 * 1024
    ):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        where = f"--rates-file {path}: line {number}"
        try:
            rate = float(fields[0])
        except ValueError:
            raise ConfigurationError(
                f"{where} ({fields[0][:40]!r}) is not a number of changes per day"
            ) from None
        check_range(where, rate, 0, MAX_PER_DAY, why=" changes a day" + _PER_DAY_WHY)
        if len(rates) == MAX_PAGES:
            raise ConfigurationError(
                f"--rates-file {path}: more than {MAX_PAGES:,} rates (one page each; every "
                "page is simulated in memory by every policy)"
            )
        rates.append(rate)
    if not rates:
        raise ConfigurationError(f"--rates-file {path}: expected one rate >= 0 per line")
    return rates


def _population(args: argparse.Namespace) -> Population:
    if args.rates_file:
        return population_from_rates(_read_rates(args.rates_file), args.trivial_per_day)
    return synthetic_population(
        args.pages,
        seed=args.seed,
        trivial_fraction=args.trivial_fraction,
        trivial_per_day=args.trivial_per_day,
    )


def _budgets(args: argparse.Namespace) -> list[float]:
    try:
        budgets = sorted({float(part) for part in args.budgets.split(",")})
    except ValueError:
        raise ConfigurationError("--budgets takes numbers separated by commas") from None
    if not budgets:
        raise ConfigurationError("--budgets must be positive numbers")
    if len(budgets) > MAX_BUDGETS:
        raise ConfigurationError(
            f"--budgets takes at most {MAX_BUDGETS} budgets (each is a simulation of its own)"
        )
    for budget in budgets:
        check_range("each of --budgets", budget, 0, MAX_PER_DAY, above_low=True, why=_PER_DAY_WHY)
    return budgets


def _curves(
    args: argparse.Namespace,
    population: Population,
    config: RecrawlConfig,
    budgets: list[float],
    progress: Any,
) -> dict[str, list[tuple[float, float]]]:
    """Freshness of each policy at each budget."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for budget in budgets:
        for result in _run(args, population, config, budget, progress):
            curves.setdefault(result.policy, []).append((budget, result.freshness))
    return curves


def fetches_per_day(budget: float) -> str:
    """A fetch budget as people read it: "1 fetch/page/day", "0.5 fetches/page/day"."""
    return f"{budget:g} {'fetch' if budget == 1 else 'fetches'}/page/day"


def _draw(
    args: argparse.Namespace, curves: dict[str, list[tuple[float, float]]], pages: int
) -> None:
    from scrapy_simhash.cli._plot import pyplot, save

    plt = pyplot()
    figure, axes = plt.subplots(figsize=(8, 5))
    for (name, points), marker in zip(curves.items(), "os^vDPX*", strict=False):
        xs, ys = zip(*points, strict=True)
        axes.plot(xs, ys, marker=marker, label=name)
    axes.axvline(args.fetches_per_page_per_day, color="0.35", linestyle="--", linewidth=1)
    axes.annotate(
        f"budget of the printed table\n{fetches_per_day(args.fetches_per_page_per_day)}",
        (args.fetches_per_page_per_day, 0.02),
        xytext=(4, 0),
        textcoords="offset points",
        fontsize=8,
        color="0.3",
    )
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
    axes.set_xticks(sorted({x for points in curves.values() for x, _ in points}))
    axes.set_ylim(0, 1)
    axes.set_xlabel("fetch budget (fetches per page per day, log scale)")
    axes.set_ylabel("freshness (share of time a page's copy is up to date, 0-1)")
    axes.set_title(
        f"Recrawl policies at equal fetch budgets: {pages} pages, {args.days:g} days "
        f"({args.warmup_days:g} warm-up), seed {args.seed}",
        fontsize=10,
    )
    axes.grid(True, alpha=0.3)
    axes.legend(title="policy", fontsize=8, loc="lower right")
    figure.tight_layout()
    save(figure, args.png)
    print(
        f"wrote {args.png}: freshness against fetches/page/day "
        f"{min(x for p in curves.values() for x, _ in p):g}.."
        f"{max(x for p in curves.values() for x, _ in p):g}",
        file=sys.stderr,
    )
