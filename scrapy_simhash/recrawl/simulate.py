"""A recrawl simulator: every policy faces the same page changes with the same fetches.

Each page's substantive changes (Poisson, rate λ) and trivial changes (timestamps, ads:
invisible to a SimHash detector, visible to an exact digest) are drawn once from a seed.
The crawler has a fixed number of fetch slots per day and, at each slot, fetches the page
its policy wants soonest; so every policy spends exactly the same fetches and differs only
in which pages it spends them on. Freshness and age are integrated exactly between fetches.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Protocol

from scrapy_simhash.recrawl.config import DAY, RecrawlConfig
from scrapy_simhash.recrawl.policy import budget_frequency, solve_multiplier
from scrapy_simhash.recrawl.store import open_recrawl_store

_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class Population:
    """True change rates of the simulated pages, in changes per day."""

    rates_per_day: tuple[float, ...]
    trivial_per_day: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.rates_per_day) != len(self.trivial_per_day):
            raise ValueError("rates_per_day and trivial_per_day need one entry per page")

    def __len__(self) -> int:
        return len(self.rates_per_day)


def synthetic_population(
    pages: int,
    *,
    seed: int = 0,
    fastest_per_day: float = 24.0,
    slowest_per_day: float = 1 / 90,
    trivial_fraction: float = 0.5,
    trivial_per_day: float = 24.0,
) -> Population:
    """Draw log-uniform change rates (hourly to quarterly by default).

    ``trivial_fraction`` of the pages also carry a trivial change ``trivial_per_day``
    times a day, like a clock or a rotating banner.
    """
    rng = random.Random(seed)
    lo, hi = math.log(slowest_per_day), math.log(fastest_per_day)
    rates = tuple(math.exp(rng.uniform(lo, hi)) for _ in range(pages))
    trivial = tuple(trivial_per_day if rng.random() < trivial_fraction else 0.0 for _ in rates)
    return Population(rates, trivial)


def population_from_rates(
    rates_per_day: Sequence[float], trivial_per_day: float = 0.0
) -> Population:
    """Build a population from known rates (e.g. a file of measured rates)."""
    return Population(tuple(rates_per_day), tuple(trivial_per_day for _ in rates_per_day))


def _poisson_times(rng: random.Random, rate_per_sec: float, horizon: float) -> list[float]:
    times: list[float] = []
    if rate_per_sec <= 0:
        return times
    t = rng.expovariate(rate_per_sec)
    while t < horizon:
        times.append(t)
        t += rng.expovariate(rate_per_sec)
    return times


@dataclass(frozen=True)
class Changes:
    """Pre-drawn change times (seconds) of every page."""

    substantive: tuple[list[float], ...]
    trivial: tuple[list[float], ...]
    horizon: float

    @classmethod
    def draw(cls, population: Population, days: float, seed: int) -> Changes:
        rng = random.Random(seed)
        horizon = days * DAY
        sub = tuple(_poisson_times(rng, r / DAY, horizon) for r in population.rates_per_day)
        triv = tuple(_poisson_times(rng, r / DAY, horizon) for r in population.trivial_per_day)
        return cls(sub, triv, horizon)

    def version(self, page: int, now: float) -> tuple[int, int]:
        """Return how many substantive and trivial changes happened by ``now``."""
        return bisect_right(self.substantive[page], now), bisect_right(self.trivial[page], now)


def simulated_fingerprint(page: int, version: int, trivial: int) -> int:
    """Return a stand-in SimHash: a new random value per substantive version, a 2-bit
    difference per trivial change (what a timestamp does to a real fingerprint)."""
    x = (page * 0x9E3779B97F4A7C15 + version * 0xBF58476D1CE4E5B9 + 1) & _MASK64
    x = ((x ^ (x >> 31)) * 0x94D049BB133111EB) & _MASK64
    return (x ^ (x >> 29)) ^ (1 << (trivial % 64))


class SimPolicy(Protocol):
    """A scheduling rule under test: returns the time it wants each page fetched next."""

    name: str

    def fetched(self, page: int, now: float, version: int, trivial: int) -> float: ...


@dataclass
class FixedPolicy:
    """The same interval for every page (round robin under a budget)."""

    interval_secs: float
    name: str = "fixed interval"

    def fetched(self, page: int, now: float, version: int, trivial: int) -> float:
        return now + self.interval_secs


@dataclass
class MultiplicativePolicy:
    """Interval rules of Nutch and StormCrawler over a content-aware change detector.

    ``changed_halfway`` selects StormCrawler's "halfway to the minimum" on change;
    otherwise the interval is multiplied by ``changed_factor``.
    """

    name: str
    initial_secs: float
    unchanged_factor: float
    changed_factor: float = 0.8
    changed_halfway: bool = False
    min_secs: float = 60.0
    max_secs: float = 365 * DAY
    _interval: dict[int, float] = field(default_factory=dict)
    _version: dict[int, int] = field(default_factory=dict)

    def fetched(self, page: int, now: float, version: int, trivial: int) -> float:
        interval = self._interval.get(page, self.initial_secs)
        previous = self._version.get(page)
        if previous is not None:
            if version != previous:
                interval = (
                    interval - (interval - self.min_secs) / 2
                    if self.changed_halfway
                    else interval * self.changed_factor
                )
            else:
                interval *= self.unchanged_factor
        interval = min(self.max_secs, max(self.min_secs, interval))
        self._interval[page] = interval
        self._version[page] = version
        return now + interval


class StorePolicy:
    """This package's scheduler, run through a real in-memory store on the simulated clock.

    ``digest=True`` replaces the SimHash threshold with exact comparison, so every trivial
    change counts as a change (what an MD5 of the page would see).
    """

    def __init__(self, config: RecrawlConfig, *, digest: bool = False, name: str = "") -> None:
        self.name = name or ("exact digest" if digest else "simhash (ours)")
        self.now = 0.0
        if digest:
            config = replace(config, change_distance=0)
        self.store = open_recrawl_store("memory://", config=config, clock=lambda: self.now)

    def fetched(self, page: int, now: float, version: int, trivial: int) -> float:
        self.now = now
        fp = simulated_fingerprint(page, version, trivial)
        return self.store.observe(str(page), fp).next_due


class OraclePolicy:
    """The Cho & Garcia-Molina optimum computed with the true rates: the upper bound."""

    def __init__(self, population: Population, budget_per_day: float) -> None:
        self.name = "optimum (true rates)"
        rates = [r / DAY for r in population.rates_per_day]
        mu = solve_multiplier(((r, 1.0) for r in rates), budget_per_day / DAY)
        self.intervals = [
            1.0 / f if (f := budget_frequency(r, mu)) > 0 else math.inf for r in rates
        ]

    def fetched(self, page: int, now: float, version: int, trivial: int) -> float:
        return now + self.intervals[page]


@dataclass(frozen=True)
class Result:
    """What one policy achieved over the measured window."""

    policy: str
    fetches: int
    fetches_per_page_per_day: float
    freshness: float
    mean_age_hours: float
    wasted_fraction: float
    missed_fraction: float


def run(
    policy: SimPolicy,
    population: Population,
    changes: Changes,
    *,
    budget_per_day: float,
    warmup_days: float = 0.0,
) -> Result:
    """Run one policy: an initial fetch of every page at t=0, then one fetch per slot."""
    pages = len(population)
    slot = DAY / budget_per_day
    fetch_times: list[list[float]] = [[0.0] for _ in range(pages)]
    queue = [(policy.fetched(p, 0.0, *changes.version(p, 0.0)), p) for p in range(pages)]
    heapq.heapify(queue)
    now = slot
    while now < changes.horizon:
        _, page = heapq.heappop(queue)
        fetch_times[page].append(now)
        heapq.heappush(queue, (policy.fetched(page, now, *changes.version(page, now)), page))
        now += slot
    return _score(policy.name, fetch_times, changes, warmup_days * DAY, pages)


def _score(
    name: str, fetch_times: list[list[float]], changes: Changes, start: float, pages: int
) -> Result:
    """Integrate freshness and age over ``[start, horizon)``; judge each fetch in it.

    A copy fetched at ``a`` is fresh until the first substantive change after ``a``; its
    age then grows linearly until the next fetch. A fetch is wasted when nothing
    substantive changed since the previous one, and every change but the last between
    two fetches is missed (its version was never seen).
    """
    end = changes.horizon
    fresh = age = 0.0
    fetches = wasted = missed = seen_changes = 0
    for page, times in enumerate(fetch_times):
        subs = changes.substantive[page]
        bounds = [*times, end]
        for a, b in pairwise(bounds):
            first = bisect_right(subs, a)
            if b > start:
                stale_from = subs[first] if first < len(subs) and subs[first] < b else b
                lo = max(a, start)
                fresh += max(0.0, stale_from - lo)
                aged_from = max(stale_from, lo)
                age += ((b - stale_from) ** 2 - (aged_from - stale_from) ** 2) / 2
            if start <= b < end:  # b is a fetch inside the window
                seen = bisect_right(subs, b) - first
                fetches += 1
                seen_changes += seen
                missed += max(0, seen - 1)
                wasted += seen == 0
    span = (end - start) * pages
    return Result(
        policy=name,
        fetches=fetches,
        fetches_per_page_per_day=fetches / pages / ((end - start) / DAY),
        freshness=fresh / span,
        mean_age_hours=age / span / 3600.0,
        wasted_fraction=wasted / max(1, fetches),
        missed_fraction=missed / max(1, seen_changes),
    )


def standard_policies(
    population: Population, budget_per_day: float, config: RecrawlConfig
) -> list[SimPolicy]:
    """Return the policies compared by the benchmark, all started at the uniform interval.

    ``config`` is this package's configuration (its budget is set to ``budget_per_day``).
    """
    uniform = len(population) * DAY / budget_per_day
    ours = replace(config, policy="budget", budget_per_day=budget_per_day)
    return [
        FixedPolicy(uniform),
        MultiplicativePolicy("Nutch adaptive", uniform, unchanged_factor=1.4, changed_factor=0.8),
        MultiplicativePolicy("StormCrawler", uniform, unchanged_factor=1.5, changed_halfway=True),
        StorePolicy(ours, digest=True),
        StorePolicy(ours),
        OraclePolicy(population, budget_per_day),
    ]


def compare(
    population: Population,
    *,
    budget_per_day: float,
    days: float,
    warmup_days: float = 0.0,
    seed: int = 0,
    config: RecrawlConfig | None = None,
    policies: Sequence[SimPolicy] | None = None,
    on_result: Callable[[Result], object] | None = None,
) -> list[Result]:
    """Run every policy on the same drawn changes and the same number of fetches.

    ``on_result`` is called after each policy (a progress bar: a run takes seconds).
    """
    changes = Changes.draw(population, days, seed)
    chosen = policies or standard_policies(
        population, budget_per_day, config or simulation_config()
    )
    results = []
    for policy in chosen:
        result = run(
            policy, population, changes, budget_per_day=budget_per_day, warmup_days=warmup_days
        )
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def simulation_config() -> RecrawlConfig:
    """Return a configuration with clamps wide enough not to distort the comparison."""
    return RecrawlConfig(
        policy="budget",
        budget_per_day=1.0,
        min_interval_secs=60.0,
        max_interval_secs=365 * DAY,
        rebalance_secs=DAY / 4,
    )


def format_results(results: Sequence[Result]) -> str:
    """Render results as an aligned table, freshness also as a ratio to the last row's."""
    reference = results[-1].freshness or 1.0
    header = (
        f"{'policy':<22} {'fetch/page/day':>14} {'freshness':>9} {'ratio':>6} "
        f"{'age (h)':>8} {'wasted':>7} {'missed':>7}"
    )
    rows = [
        f"{r.policy:<22} {r.fetches_per_page_per_day:>14.3f} {r.freshness:>9.4f} "
        f"{r.freshness / reference:>6.3f} {r.mean_age_hours:>8.2f} "
        f"{r.wasted_fraction:>7.1%} {r.missed_fraction:>7.1%}"
        for r in results
    ]
    return "\n".join([header, "-" * len(header), *rows])
