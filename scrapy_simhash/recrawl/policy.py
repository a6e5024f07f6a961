"""Turning a page's change rate into its next revisit interval.

Freshness F(λ, f) = (f/λ)(1 - e^{-λ/f}) is the expected fraction of time a copy refreshed
``f`` times per unit time is up to date (Cho & Garcia-Molina, 2003). The ``target`` policy
picks the interval reaching a freshness goal per page; the ``budget`` policy spreads a fixed
number of fetches over all pages to maximise their mean freshness, which famously gives up
on pages that change much faster than they can be fetched.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

NUTCH_CHANGED_FACTOR = 0.8
NUTCH_UNCHANGED_FACTOR = 1.4
_ITERATIONS = 64


def freshness(rate: float, interval: float) -> float:
    """Return the expected freshness of a page changing at ``rate`` fetched every ``interval``."""
    r = rate * interval
    if r <= 1e-12:
        return 1.0
    if math.isinf(r):
        return 0.0
    return -math.expm1(-r) / r


def expected_age(rate: float, interval: float) -> float:
    """Return the time-averaged age (time since the first unseen change) of a copy."""
    if rate <= 0 or interval <= 0:
        return 0.0
    r = rate * interval
    return interval / 2.0 - 1.0 / rate + (-math.expm1(-r)) / (rate * r)


def interval_for_freshness(rate: float, target: float) -> float:
    """Return the interval whose expected freshness equals ``target`` (∞ for a static page).

    Solves ``(1 - e^{-r})/r = target`` for ``r = λI``; the left side falls from 1 to 0.
    """
    if rate <= 0:
        return math.inf
    lo, hi = 0.0, 1.0
    while freshness(1.0, hi) > target:
        hi *= 2.0
    for _ in range(_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if freshness(1.0, mid) > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi) / rate


def _inverse_marginal(z: float) -> float:
    """Return ``x > 0`` with ``(1 + x) e^{-x} = z`` for ``0 < z < 1`` (safeguarded Newton).

    ``1 - (1 + x) e^{-x}`` is ``λ ∂F/∂f`` as a function of ``x = λ/f``; solving on
    ``ln(1 + x) - x = ln z`` keeps full precision near the cut-off, where ``z`` is tiny.
    """
    target = math.log(z)
    lo, hi = 0.0, 1.0
    while math.log1p(hi) - hi > target:
        hi *= 2.0
    x = min(math.sqrt(2.0 * (1.0 - z)) if z > 0.5 else -target, hi)
    for _ in range(_ITERATIONS):
        residual = math.log1p(x) - x - target
        if abs(residual) <= 1e-15 * max(1.0, -target):
            return x
        if residual > 0:
            lo = x
        else:
            hi = x
        slope = -x / (1.0 + x)
        step = x - residual / slope if slope < 0 else -1.0
        x = step if lo < step < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            break
    return x


def _frequency(rate: float, log_multiplier: float) -> float:
    if rate <= 0:
        return 0.0
    log_y = log_multiplier + math.log(rate)
    if log_y >= 0.0:
        return 0.0
    return rate / _inverse_marginal(-math.expm1(log_y))


def budget_frequency(rate: float, multiplier: float) -> float:
    """Return the optimal fetch frequency of one page for Lagrange multiplier ``μ``.

    Solves ``∂F/∂f = μ``; zero when ``μλ >= 1``: such a page changes too fast for the
    budget to keep it fresh, and its fetches buy more freshness elsewhere.
    """
    if multiplier <= 0:
        return math.inf if rate > 0 else 0.0
    return _frequency(rate, math.log(multiplier))


def solve_multiplier(rates: Iterable[tuple[float, float]], budget: float) -> float:
    """Return ``μ`` such that the optimal frequencies of all pages sum to ``budget``.

    ``rates`` holds ``(rate, page count)`` pairs (a histogram is enough); frequency and
    budget share one time unit. Bisection on ``log μ``: the total falls as ``μ`` grows.
    """
    pairs = [(rate, count) for rate, count in rates if rate > 0 and count > 0]
    if not pairs or budget <= 0:
        return math.inf

    def total(log_mu: float) -> float:
        return sum(count * _frequency(rate, log_mu) for rate, count in pairs)

    hi = -math.log(min(rate for rate, _ in pairs))  # every frequency is 0 here
    lo = hi - 1.0
    while total(lo) < budget:
        lo -= 2.0 * (hi - lo)
    for _ in range(_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if total(mid) > budget:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def nutch_interval(previous: float, changed: bool | None) -> float:
    """Return Apache Nutch's AdaptiveFetchSchedule step: x0.8 on change, x1.4 otherwise."""
    if changed is None:
        return previous
    return previous * (NUTCH_CHANGED_FACTOR if changed else NUTCH_UNCHANGED_FACTOR)
