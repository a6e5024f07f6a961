"""Change-rate estimators, revisit policies and the per-fetch state step."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.recrawl import RecrawlConfig
from scrapy_simhash.recrawl.estimate import (
    irregular_rate,
    naive_rate,
    regular_rate,
    rests_on_history,
)
from scrapy_simhash.recrawl.policy import (
    budget_frequency,
    expected_age,
    freshness,
    interval_for_freshness,
    solve_multiplier,
)
from scrapy_simhash.recrawl.state import Fetch, advance, next_interval
from scrapy_simhash.settings import recrawl_config

DAY = 86400.0
rates = st.floats(min_value=1e-3, max_value=1e3)


def _regular_history(rng: random.Random, rate: float, interval: float, n: int) -> int:
    """Return how many of ``n`` visits ``interval`` apart saw at least one change."""
    return sum(rng.random() < -math.expm1(-rate * interval) for _ in range(n))


def test_regular_estimator_is_nearly_unbiased_where_naive_is_not() -> None:
    rng = random.Random(7)
    rate, interval, n, trials = 1.0, 0.8, 50, 400
    cho = naive = 0.0
    for _ in range(trials):
        changes = _regular_history(rng, rate, interval, n)
        cho += regular_rate(n, changes, interval) / trials
        naive += naive_rate(n, changes, interval) / trials
    assert cho == pytest.approx(rate, rel=0.05)
    # The naive ratio counts at most one change per visit: E = (1 - e^{-λI}) / I.
    assert naive == pytest.approx(-math.expm1(-rate * interval) / interval, rel=0.05)
    assert naive < 0.75 * rate


def test_irregular_estimator_recovers_rate_from_random_intervals() -> None:
    rng = random.Random(11)
    rate, trials = 2.0, 300
    total = 0.0
    for _ in range(trials):
        history = []
        for _ in range(60):
            t = rng.uniform(0.05, 1.5)
            history.append((t, rng.random() < -math.expm1(-rate * t)))
        total += irregular_rate(history) / trials
    assert total == pytest.approx(rate, rel=0.08)


def test_irregular_estimator_edge_cases() -> None:
    assert irregular_rate([]) == 0.0
    assert irregular_rate([(1.0, False)] * 5) == 0.0
    all_changed = irregular_rate([(1.0, True)] * 5)
    assert all_changed == pytest.approx(regular_rate(5, 5, 1.0))
    # The prior keeps both extremes finite and positive, and is the answer with no data.
    assert irregular_rate([], prior_rate=0.5, prior_weight=1.0) == pytest.approx(0.5, rel=1e-5)
    never = irregular_rate([(1.0, False)] * 5, prior_rate=0.5, prior_weight=1.0)
    always = irregular_rate([(1.0, True)] * 5, prior_rate=0.5, prior_weight=1.0)
    assert 0 < never < 0.5 < always < math.inf


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.01, 10.0), st.booleans()), min_size=1, max_size=20),
    st.integers(min_value=0, max_value=19),
)
def test_more_changes_never_lower_the_estimate(
    history: list[tuple[float, bool]], flip: int
) -> None:
    flip %= len(history)
    more = list(history)
    more[flip] = (history[flip][0], True)
    before = irregular_rate(history, prior_rate=1.0, prior_weight=1.0)
    after = irregular_rate(more, prior_rate=1.0, prior_weight=1.0)
    assert after >= before * (1 - 1e-6)


def test_cho_garcia_molina_reference_example() -> None:
    """Five pages changing 1..5 times a day, 5 fetches a day (Cho & Garcia-Molina 2003)."""
    lambdas = [1.0, 2.0, 3.0, 4.0, 5.0]
    uniform = sum(freshness(r, 1.0) for r in lambdas) / 5
    proportional = sum(freshness(r, 3.0 / r) for r in lambdas) / 5
    mu = solve_multiplier([(r, 1.0) for r in lambdas], 5.0)
    frequencies = [budget_frequency(r, mu) for r in lambdas]
    optimal = (
        sum(freshness(r, 1 / f) if f else 0.0 for r, f in zip(lambdas, frequencies, strict=True))
        / 5
    )
    assert (round(uniform, 3), round(proportional, 3), round(optimal, 3)) == (0.365, 0.317, 0.374)
    assert [round(f, 2) for f in frequencies] == [1.15, 1.36, 1.35, 1.14, 0.0]


@settings(max_examples=60, deadline=None)
@given(rates, st.floats(min_value=0.05, max_value=0.99))
def test_interval_for_freshness_reaches_the_target(rate: float, target: float) -> None:
    interval = interval_for_freshness(rate, target)
    assert freshness(rate, interval) == pytest.approx(target, rel=1e-6)
    assert interval_for_freshness(rate * 2, target) < interval


@settings(max_examples=40, deadline=None)
@given(st.lists(rates, min_size=1, max_size=30), st.floats(min_value=0.1, max_value=10.0))
def test_budget_frequencies_sum_to_the_budget(page_rates: list[float], share: float) -> None:
    budget = share * sum(page_rates)  # from a tenth of a fetch per change to ten
    mu = solve_multiplier([(r, 1.0) for r in page_rates], budget)
    frequencies = [budget_frequency(r, mu) for r in page_rates]
    spent = sum(frequencies)
    # A page's frequency falls to 0 only logarithmically as μλ -> 1 (f ≈ λ / ln(1/(1-μλ))),
    # so float64 cannot express frequencies below about λ/40: a page sitting exactly at
    # the cut-off may move the total by that much.
    at_cutoff = sum(r / 30 for r in page_rates if abs(mu * r - 1) < 1e-9)
    assert abs(spent - budget) <= at_cutoff + 1e-6 * budget
    for rate, f in zip(page_rates, frequencies, strict=True):
        assert f >= 0
        if f > 0:  # the Lagrange condition ∂F/∂f = μ holds at the chosen frequency
            h = f * 1e-5
            slope = (freshness(rate, 1 / (f + h)) - freshness(rate, 1 / (f - h))) / (2 * h)
            assert slope == pytest.approx(mu, rel=1e-3)


def test_budget_gives_up_on_pages_changing_too_fast() -> None:
    mu = solve_multiplier([(1.0, 9.0), (1000.0, 1.0)], 10.0)
    assert budget_frequency(1000.0, mu) == 0.0
    assert budget_frequency(1.0, mu) == pytest.approx(10.0 / 9.0, rel=1e-6)


def test_age_is_zero_for_static_pages_and_grows_with_interval() -> None:
    assert expected_age(0.0, 10.0) == 0.0
    assert 0 < expected_age(1.0, 1.0) < expected_age(1.0, 2.0) < 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["target", "budget"]),
    st.floats(min_value=1e-9, max_value=1e-2),
    st.floats(min_value=1.1, max_value=100.0),
)
def test_policies_are_monotone_and_clamped(policy: str, rate: float, factor: float) -> None:
    config = RecrawlConfig(policy=policy, budget_per_day=100.0, min_interval_secs=600)
    mu = 1e3 if policy == "budget" else None  # μλ < 1 for every rate drawn here
    slow = next_interval(config, rate, None, None, mu)
    fast = next_interval(config, rate * factor, None, None, mu)
    for interval in (slow, fast):
        assert config.min_interval_secs <= interval <= config.max_interval_secs
    if policy == "target":
        assert fast <= slow


def test_nutch_and_fixed_policies() -> None:
    nutch = RecrawlConfig(policy="nutch", default_interval_secs=DAY)
    assert next_interval(nutch, 1.0, DAY, True, None) == pytest.approx(0.8 * DAY)
    assert next_interval(nutch, 1.0, DAY, False, None) == pytest.approx(1.4 * DAY)
    assert next_interval(nutch, 1.0, 29 * DAY, False, None) == nutch.max_interval_secs
    fixed = RecrawlConfig(policy="fixed", default_interval_secs=7200)
    assert next_interval(fixed, 123.0, DAY, True, None) == 7200


def test_advance_threshold_and_history_window() -> None:
    config = RecrawlConfig(change_distance=4, history_size=3)
    state, visit = advance(None, "u", Fetch(0), 0.0, config)
    for i in range(5):
        fp = 0b1111 if i % 2 == 0 else 0  # exactly 4 bits apart: not above the threshold
        state, visit = advance(state, "u", Fetch(fp), (i + 1) * 100.0, config)
        assert visit.changed is False
    assert len(state.history) == 3
    state, visit = advance(state, "u", Fetch(0b1_1111_0000 ^ 0b1111), 600.0, config)
    assert (visit.changed, visit.distance, state.changes) == (True, 5, 1)


def test_config_from_settings_reads_strings_and_rejects_nonsense() -> None:
    config = recrawl_config(
        {
            "SIMHASH_RECRAWL_POLICY": "NUTCH",
            "SIMHASH_RECRAWL_MIN_INTERVAL_SECS": "60",
            "SIMHASH_RECRAWL_ENABLED": "false",
        }
    )
    assert (config.policy, config.min_interval_secs, config.enabled) == ("nutch", 60.0, False)
    assert RecrawlConfig(budget_per_day=5).effective_policy == "budget"
    assert RecrawlConfig().effective_policy == "target"
    with pytest.raises(ConfigurationError, match="TARGET_FRESHNESS"):
        recrawl_config({"SIMHASH_RECRAWL_TARGET_FRESHNESS": "1.5"})
    with pytest.raises(ConfigurationError, match="BUDGET_PER_DAY"):
        recrawl_config({"SIMHASH_RECRAWL_POLICY": "budget"})
    with pytest.raises(ConfigurationError, match="`min_interval_secs` must be > 0 and <= `max"):
        RecrawlConfig(min_interval_secs=10, max_interval_secs=5)  # the core speaks of options
    with pytest.raises(ConfigurationError, match="SIMHASH_RECRAWL_MIN_INTERVAL_SECS must be"):
        recrawl_config(
            {"SIMHASH_RECRAWL_MIN_INTERVAL_SECS": "10", "SIMHASH_RECRAWL_MAX_INTERVAL_SECS": "5"}
        )  # the settings of settings


def test_an_estimate_rests_on_history_once_it_weighs_as_much_as_the_prior() -> None:
    """The prior's 2 pseudo-visits a day apart: the history must cover 2 days, or hold the
    1.26 changes they stand for, before the rate is the page's rather than the prior's."""
    prior = {"prior_rate": 1 / DAY, "prior_weight": 2.0}
    assert not rests_on_history([], **prior)
    assert not rests_on_history([(21.0, False)], **prior)  # two fetches 21 s apart
    assert not rests_on_history([(DAY, False)], **prior)
    assert not rests_on_history([(3600.0, True)], **prior)
    assert rests_on_history([(DAY, False), (DAY, False)], **prior)
    assert rests_on_history([(3600.0, True), (3600.0, True)], **prior)
    assert rests_on_history([(21.0, False)], prior_rate=1 / DAY, prior_weight=0.0)
    assert not rests_on_history([], prior_rate=1 / DAY, prior_weight=0.0)
