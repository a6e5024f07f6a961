"""Posterior over a page's change rate, with the namespace's own pages as the prior.

A point estimate cannot tell a page that changed at each of its daily visits from one
that changes every hour: both likelihoods are flat above about one change per visit.
Under a fetch budget this matters, because the optimum spends nothing on pages that
change much faster than they can be fetched. Weighing the marginal freshness of a fetch
over the whole posterior (``E[∂F/∂f | history] = μ``) gives up on a page exactly when it
is likely to be one of those, which a plug-in estimate never does: its estimate falls to
about ``1/interval`` and keeps buying fetches that go stale at once.

The prior is empirical Bayes over a grid of rates: the store's histogram of the pages'
estimated rates (the one the budget multiplier is solved over), mixed with a flat floor
so that rates no page is estimated at yet (the fast pages, whose estimates are squeezed
to about ``1/interval``) stay possible. Putting draws from each page's posterior into
the histogram instead (stochastic EM) was measured and lost freshness: it gave up on
too many pages and broke the balance between the multiplier and the budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scrapy_simhash.recrawl.estimate import Observation

FloatArray = npt.NDArray[np.float64]

#: Share of the prior spread evenly over the grid, so no rate is ever ruled out a priori.
PRIOR_FLOOR = 0.05
_ITERATIONS = 48


@dataclass(frozen=True)
class RatePrior:
    """Prior probabilities of change rates (per second) on a log-spaced grid."""

    rates: FloatArray
    log_prior: FloatArray

    @classmethod
    def from_histogram(
        cls,
        histogram: Mapping[int, int],
        *,
        lowest: float,
        highest: float,
        buckets_per_decade: int,
        floor: float = PRIOR_FLOOR,
    ) -> RatePrior:
        """Build the grid ``lowest..highest`` and mix the histogram with a flat floor."""
        lo = math.floor(math.log10(lowest) * buckets_per_decade)
        hi = math.ceil(math.log10(highest) * buckets_per_decade)
        buckets = np.arange(lo, hi + 1)
        rates = np.power(10.0, buckets / buckets_per_decade)
        counts = np.array(
            [float(histogram.get(int(b), 0)) for b in buckets], dtype=np.float64
        )
        flat = np.full(len(buckets), 1.0 / len(buckets))
        total = counts.sum()
        prior = flat if total <= 0 else (1.0 - floor) * counts / total + floor * flat
        return cls(rates, np.log(prior))


def log_likelihood(history: Sequence[Observation], rates: FloatArray) -> FloatArray:
    """Return ``log P(history | λ)`` for every grid rate (Poisson changes, fixed visits)."""
    out = np.zeros_like(rates)
    unchanged = 0.0
    for t, changed in history:
        if t <= 0:
            continue
        if changed:
            out += np.log(-np.expm1(-rates * t))
        else:
            unchanged += t
    return out - rates * unchanged


def posterior(history: Sequence[Observation], prior: RatePrior) -> FloatArray:
    """Return the normalised posterior weights over ``prior.rates``."""
    log_post = prior.log_prior + log_likelihood(history, prior.rates)
    weights: FloatArray = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    return weights


def expected_marginal(rates: FloatArray, weights: FloatArray, frequency: float) -> float:
    """Return ``E[∂F/∂f]``: freshness bought by fetching a little more often."""
    x = rates / frequency
    gain = -np.expm1(-x) - x * np.exp(-x)  # 1 - (1 + x) e^{-x}, accurate for small x
    return float(np.dot(weights, gain / rates))


def posterior_frequency(rates: FloatArray, weights: FloatArray, multiplier: float) -> float:
    """Return the fetch frequency with ``E[∂F/∂f] = μ``; zero when ``E[1/λ] <= μ``.

    ``E[∂F/∂f]`` falls from ``E[1/λ]`` at ``f → 0`` to zero, so the root is unique.
    """
    if multiplier <= 0:
        return math.inf
    if float(np.dot(weights, 1.0 / rates)) <= multiplier:
        return 0.0
    lo, hi = math.log(rates[0]) - 2.0, math.log(rates[-1]) + 2.0
    while expected_marginal(rates, weights, math.exp(lo)) < multiplier:
        lo -= 4.0
    while expected_marginal(rates, weights, math.exp(hi)) > multiplier:
        hi += 4.0
    for _ in range(_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if expected_marginal(rates, weights, math.exp(mid)) > multiplier:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))
