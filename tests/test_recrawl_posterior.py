"""The posterior-weighted budget frequency: gives up on pages likely too fast to keep."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.recrawl.backend import BUCKETS_PER_DECADE, rate_bucket
from scrapy_simhash.recrawl.config import DAY, RecrawlConfig
from scrapy_simhash.recrawl.estimate import irregular_rate
from scrapy_simhash.recrawl.policy import budget_frequency
from scrapy_simhash.recrawl.posterior import (
    RatePrior,
    expected_marginal,
    log_likelihood,
    posterior,
    posterior_frequency,
)
from scrapy_simhash.recrawl.state import Fetch, advance

ALL_ONES = (1 << 64) - 1


def _prior(histogram: dict[int, int] | None = None) -> RatePrior:
    return RatePrior.from_histogram(
        histogram or {}, lowest=0.001, highest=100.0, buckets_per_decade=BUCKETS_PER_DECADE
    )


def test_a_point_posterior_reproduces_the_plug_in_frequency() -> None:
    rates = np.array([2.0])
    mu = 0.1
    assert posterior_frequency(rates, np.array([1.0]), mu) == pytest.approx(
        budget_frequency(2.0, mu), rel=1e-6
    )
    # Beyond the cut-off (μλ >= 1) both give the page up.
    assert posterior_frequency(rates, np.array([1.0]), 0.6) == 0.0
    assert budget_frequency(2.0, 0.6) == 0.0


def test_likelihood_peaks_at_the_maximum_likelihood_rate() -> None:
    history = [(1.0, True), (1.0, False), (2.0, True), (0.5, False), (3.0, True)]
    prior = _prior()
    peak = prior.rates[int(np.argmax(log_likelihood(history, prior.rates)))]
    assert peak == pytest.approx(irregular_rate(history), rel=0.13)  # grid: 20 per decade


def test_always_changed_page_is_given_up_where_the_point_estimate_keeps_it() -> None:
    # A population spread from 0.01 to 100 changes per unit time; a page that changed at
    # each of 10 visits one unit apart may change 3 or 80 times per unit: its likelihood
    # is flat there. The point estimate (~3) sits below the cut-off 1/μ = 4 and buys
    # fetches; the posterior, mostly above the cut-off, gives the page up.
    histogram = dict.fromkeys(range(-2 * BUCKETS_PER_DECADE, 2 * BUCKETS_PER_DECADE), 10)
    prior = _prior(histogram)
    history = [(1.0, True)] * 10
    mu = 0.25
    point = irregular_rate(history, prior_rate=1.0, prior_weight=2.0)
    assert point < 1 / mu
    assert budget_frequency(point, mu) > 0
    assert posterior_frequency(prior.rates, posterior(history, prior), mu) == 0.0
    # The same page seen unchanged half the time is well identified and kept.
    mixed = [(1.0, i % 2 == 0) for i in range(10)]
    assert posterior_frequency(prior.rates, posterior(mixed, prior), mu) > 0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.01, 10.0), st.booleans()), max_size=12),
    st.floats(0.01, 10.0),
    st.floats(1.0, 4.0),
)
def test_expected_marginal_falls_as_fetches_grow(
    history: list[tuple[float, bool]], frequency: float, factor: float
) -> None:
    prior = _prior({0: 5, 10: 3})
    weights = posterior(history, prior)
    assert weights.sum() == pytest.approx(1.0)
    low = expected_marginal(prior.rates, weights, frequency)
    high = expected_marginal(prior.rates, weights, frequency * factor)
    assert high <= low * (1 + 1e-9)
    mu = 0.5 * low
    f = posterior_frequency(prior.rates, weights, mu)
    assert f > frequency
    assert expected_marginal(prior.rates, weights, f) == pytest.approx(mu, rel=1e-4)


def test_prior_mixes_histogram_with_a_flat_floor() -> None:
    bucket = rate_bucket(1.0)
    assert bucket is not None
    prior = _prior({bucket: 100})
    probabilities = np.exp(prior.log_prior)
    assert probabilities.sum() == pytest.approx(1.0)
    assert prior.rates[int(np.argmax(probabilities))] == pytest.approx(1.0)
    assert probabilities.min() > 0
    empty = np.exp(_prior().log_prior)
    assert np.allclose(empty, empty[0])


def test_advance_uses_the_posterior_only_under_a_budget() -> None:
    config = RecrawlConfig(
        policy="budget", budget_per_day=10, min_interval_secs=60, max_interval_secs=365 * DAY
    )
    per_day = 1 / DAY
    histogram = dict.fromkeys(range(rate_bucket(0.01 * per_day) or 0, rate_bucket(100 * per_day) or 0), 10)
    prior = RatePrior.from_histogram(
        histogram,
        lowest=1 / (10 * config.max_interval_secs),
        highest=1 / config.min_interval_secs,
        buckets_per_decade=BUCKETS_PER_DECADE,
    )
    mu = 0.25 * DAY  # cut-off: 4 changes a day
    state = None
    for i in range(11):  # changed at every daily visit
        state, visit = advance(state, "u", Fetch(fingerprint=(i % 2) * ALL_ONES), i * DAY, config,
                               mu, prior)
    assert state is not None
    assert visit.changed
    assert visit.interval_secs == config.max_interval_secs  # given up
    _, plug_in = advance(state, "u", Fetch(fingerprint=ALL_ONES), 11 * DAY, config, mu)
    assert plug_in.interval_secs < 10 * DAY
    target = RecrawlConfig(policy="target")
    _, kept = advance(state, "u", Fetch(fingerprint=ALL_ONES), 11 * DAY, target, mu, prior)
    assert math.isclose(kept.interval_secs, target.clamp(kept.interval_secs))
    assert kept.interval_secs < DAY
