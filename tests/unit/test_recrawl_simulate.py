"""The simulator's exact accounting, and the policies it compares."""

from __future__ import annotations

import pytest

from scrapy_simhash.recrawl.policy import freshness
from scrapy_simhash.recrawl.simulate import (
    Changes,
    FixedPolicy,
    Population,
    compare,
    population_from_rates,
    run,
    synthetic_population,
)

DAY = 86400.0


def test_hand_computed_single_page() -> None:
    population = Population((1.0,), (0.0,))
    changes = Changes(substantive=([1.5 * DAY],), trivial=([],), horizon=4 * DAY)
    result = run(FixedPolicy(DAY), population, changes, budget_per_day=1.0)
    # Fetches at 1, 2, 3 days; stale only between the change at 1.5 and the fetch at 2.
    assert result.fetches == 3
    assert result.freshness == pytest.approx(3.5 / 4)
    assert result.mean_age_hours == pytest.approx(0.5 * 0.5 / 2 / 4 * 24)
    assert result.wasted_fraction == pytest.approx(2 / 3)
    assert result.missed_fraction == 0.0


def test_fixed_interval_freshness_matches_theory() -> None:
    population = population_from_rates([1.0] * 200)
    changes = Changes.draw(population, days=30, seed=3)
    result = run(FixedPolicy(DAY), population, changes, budget_per_day=200.0, warmup_days=1)
    assert result.fetches_per_page_per_day == pytest.approx(1.0, rel=0.01)
    # (1 - e^{-r}) / r with r = λI = 1; about 6000 intervals give a standard error ~0.004.
    assert result.freshness == pytest.approx(freshness(1.0, 1.0), abs=0.015)


def test_every_policy_spends_the_same_fetches_and_ours_learns() -> None:
    population = synthetic_population(80, seed=5)
    results = {
        r.policy: r for r in compare(population, budget_per_day=80, days=30, warmup_days=10, seed=6)
    }
    assert len({r.fetches for r in results.values()}) == 1
    ours, optimum = results["simhash (ours)"], results["optimum (true rates)"]
    assert ours.freshness > results["fixed interval"].freshness
    assert ours.freshness > results["exact digest"].freshness
    assert ours.freshness > 0.9 * optimum.freshness
    assert optimum.freshness >= max(r.freshness for r in results.values()) - 0.02


def test_population_draw_is_seeded_and_within_bounds() -> None:
    one = synthetic_population(50, seed=1, fastest_per_day=10, slowest_per_day=0.1)
    assert one == synthetic_population(50, seed=1, fastest_per_day=10, slowest_per_day=0.1)
    assert all(0.1 <= r <= 10 for r in one.rates_per_day)
    with pytest.raises(ValueError, match="one entry per page"):
        Population((1.0,), ())
