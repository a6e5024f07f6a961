"""Change-rate estimators for pages visited at known times (Cho & Garcia-Molina, 2003).

A crawler never sees changes, only whether a page differs from its previous copy, so the
naive "changes seen / time" undercounts: two changes between visits look like one. These
estimators correct for that under the usual model of changes as a Poisson process.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: One observation: seconds since the previous comparable fetch, and whether it changed.
Observation = tuple[float, bool]

_LOG_LO = math.log(1e-15)  # changes per second: once in ~30 million years
_LOG_HI = math.log(1e3)  # a thousand changes per second
_TOLERANCE = 1e-7  # on log(rate): far below the noise of any estimate


def naive_rate(n: int, changes: int, interval: float) -> float:
    """Return changes seen per unit time: biased low when pages change between visits."""
    if n <= 0 or interval <= 0:
        return 0.0
    return changes / (n * interval)


def regular_rate(n: int, changes: int, interval: float) -> float:
    """Return Cho & Garcia-Molina's estimator for ``n`` visits ``interval`` apart.

    ``-ln((n - X + 0.5) / (n + 0.5)) / I`` stays finite when every visit saw a change and
    is nearly unbiased while ``λI`` is moderate, unlike the naive ratio or the raw MLE.
    """
    if n <= 0 or interval <= 0:
        return 0.0
    changes = min(max(changes, 0), n)
    return -math.log((n - changes + 0.5) / (n + 0.5)) / interval


def _changed_term(rate: float, t: float) -> float:
    """Return ``t e^{-λt} / (1 - e^{-λt})`` = ``t / (e^{λt} - 1)`` without overflow."""
    x = rate * t
    if x > 700.0:
        return 0.0
    if x < 1e-12:
        return 1.0 / rate
    return t / math.expm1(x)


def irregular_rate(
    history: Iterable[Observation],
    *,
    prior_rate: float = 0.0,
    prior_weight: float = 0.0,
) -> float:
    """Return the maximum-likelihood change rate for visits at irregular intervals.

    Solves ``Σ_changed t_i/(e^{λt_i}-1) = Σ_unchanged t_j`` (Cho & Garcia-Molina). The prior
    adds ``prior_weight`` pseudo-visits one mean change interval ``1/λ0`` apart, split into
    changed and unchanged in the proportions a page of rate ``λ0`` would show: alone they
    give exactly ``λ0``, and they keep "never changed" (λ = 0) and "always changed" (λ = ∞)
    finite without capping the estimate: unlike a Gamma prior's mode, real evidence of
    fast change can push it past ``λ0`` without limit. With no prior those two cases fall
    back to 0 and to the regular estimator on the mean interval.
    """
    changed: list[tuple[float, float]] = []  # (interval, weight)
    unchanged_time = 0.0
    for t, was_changed in history:
        if t <= 0:
            continue
        if was_changed:
            changed.append((t, 1.0))
        else:
            unchanged_time += t
    if prior_weight > 0 and prior_rate > 0:
        tau = 1.0 / prior_rate
        stays = math.exp(-1.0)  # P(no change within one mean interval)
        changed.append((tau, prior_weight * (1.0 - stays)))
        unchanged_time += prior_weight * stays * tau
    elif not changed:
        return 0.0
    elif unchanged_time == 0.0:
        n = len(changed)
        return regular_rate(n, n, sum(t for t, _ in changed) / n)

    def score(log_rate: float) -> float:
        rate = math.exp(log_rate)
        return sum(w * _changed_term(rate, t) for t, w in changed) - unchanged_time

    lo, hi = _LOG_LO, _LOG_HI
    if score(hi) >= 0:
        return math.exp(hi)
    if score(lo) <= 0:
        return math.exp(lo)
    while hi - lo > _TOLERANCE:
        mid = 0.5 * (lo + hi)
        if score(mid) > 0:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def rests_on_history(
    history: Iterable[Observation], *, prior_rate: float, prior_weight: float
) -> bool:
    """Whether a page's estimate rests on its own history rather than on the prior.

    The history must weigh at least as much as the prior's ``prior_weight`` pseudo-visits:
    cover as long a time (``prior_weight / prior_rate`` seconds), or hold as many changes as
    they stand for. Two unchanged fetches seconds apart tell almost nothing, and the
    estimate is then the prior's rate, not the page's. Without a prior, any history counts.
    """
    observed = [(t, changed) for t, changed in history if t > 0]
    if prior_weight <= 0 or prior_rate <= 0:
        return bool(observed)
    time_seen = sum(t for t, _ in observed)
    changes = sum(1 for _, changed in observed if changed)
    return time_seen >= prior_weight / prior_rate or changes >= prior_weight * (
        1.0 - math.exp(-1.0)
    )


def estimate_rate(
    history: Sequence[Observation], *, prior_rate: float, prior_weight: float
) -> float:
    """Return the rate the scheduler uses: the prior for a page with no history yet."""
    if not history:
        return prior_rate
    return irregular_rate(history, prior_rate=prior_rate, prior_weight=prior_weight)
