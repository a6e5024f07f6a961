"""Per-URL recrawl state and the one pure step that updates it after a fetch.

Every backend stores the same :class:`PageState` and calls :func:`advance` inside its own
atomic read-modify-write, so memory, SQLite and Redis schedule identically and the rules
can be tested without any store.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from scrapy_simhash.recrawl.config import RecrawlConfig
from scrapy_simhash.recrawl.estimate import Observation, estimate_rate
from scrapy_simhash.recrawl.policy import (
    budget_frequency,
    interval_for_freshness,
    nutch_interval,
)


@dataclass(frozen=True)
class PageState:
    """What the store remembers about one URL."""

    url: str
    fingerprint: int | None = None
    first_fetch: float | None = None
    last_fetch: float | None = None
    #: Time of the last fetch that yielded a comparable fingerprint (or a 304).
    last_compared: float | None = None
    visits: int = 0
    changes: int = 0
    interval_secs: float = 0.0
    next_due: float = 0.0
    #: Estimated substantive changes per second.
    rate: float = 0.0
    etag: str | None = None
    last_modified: str | None = None
    status: int | None = None
    #: Recent ``(seconds since previous comparison, changed)`` pairs, oldest first.
    history: tuple[Observation, ...] = ()

    def to_json(self) -> str:
        """Serialise compactly (fingerprints as hex so 128-bit values survive any store)."""
        data: dict[str, Any] = {
            "u": self.url,
            "fp": None if self.fingerprint is None else format(self.fingerprint, "x"),
            "ff": self.first_fetch,
            "lf": self.last_fetch,
            "lc": self.last_compared,
            "v": self.visits,
            "c": self.changes,
            "i": self.interval_secs,
            "d": self.next_due,
            "r": self.rate,
            "e": self.etag,
            "m": self.last_modified,
            "s": self.status,
            "h": [[round(t, 3), int(c)] for t, c in self.history],
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> PageState:
        """Parse what :meth:`to_json` wrote."""
        data = json.loads(text)
        fp = data.get("fp")
        return cls(
            url=data["u"],
            fingerprint=None if fp is None else int(fp, 16),
            first_fetch=data.get("ff"),
            last_fetch=data.get("lf"),
            last_compared=data.get("lc"),
            visits=int(data.get("v", 0)),
            changes=int(data.get("c", 0)),
            interval_secs=float(data.get("i", 0.0)),
            next_due=float(data.get("d", 0.0)),
            rate=float(data.get("r", 0.0)),
            etag=data.get("e"),
            last_modified=data.get("m"),
            status=data.get("s"),
            history=tuple((float(t), bool(c)) for t, c in data.get("h", ())),
        )


@dataclass(frozen=True)
class Visit:
    """The outcome of one observed fetch, as returned to the crawler."""

    url: str
    #: True/False when two fingerprints (or a 304) were compared; None when nothing was.
    changed: bool | None
    distance: int | None
    next_due: float
    interval_secs: float
    visits: int
    changes: int
    #: Estimated substantive changes per day.
    rate_per_day: float
    previous_fingerprint: int | None


@dataclass(frozen=True)
class Fetch:
    """One fetch result handed to :func:`advance`."""

    fingerprint: int | None
    status: int = 200
    etag: str | None = None
    last_modified: str | None = None


def next_interval(
    config: RecrawlConfig,
    rate: float,
    previous_interval: float | None,
    changed: bool | None,
    multiplier: float | None,
) -> float:
    """Return the clamped interval until the next visit under the configured policy.

    ``multiplier`` is the budget policy's Lagrange multiplier (per-second units); without
    one yet (an empty store) the budget policy falls back to the freshness target.
    """
    policy = config.effective_policy
    if policy == "fixed":
        return config.clamp(config.default_interval_secs)
    if policy == "nutch":
        start = previous_interval or config.default_interval_secs
        return config.clamp(nutch_interval(start, changed))
    if policy == "budget" and multiplier is not None and math.isfinite(multiplier):
        frequency = budget_frequency(rate, multiplier)
        return config.clamp(1.0 / frequency if frequency > 0 else math.inf)
    return config.clamp(interval_for_freshness(rate, config.target_freshness))


def advance(
    state: PageState | None,
    url: str,
    fetch: Fetch,
    now: float,
    config: RecrawlConfig,
    multiplier: float | None = None,
) -> tuple[PageState, Visit]:
    """Fold one fetch into a page's state; return the new state and what the crawler sees.

    A 304 counts as "unchanged"; a fetch with no fingerprint (too little text) compares
    nothing and leaves the comparison base as it was, so the next real fingerprint is
    measured against the last one known, over the whole time since.
    """
    old = state or PageState(url=url)
    changed: bool | None = None
    distance: int | None = None
    fingerprint = old.fingerprint
    history = old.history
    last_compared = old.last_compared
    if fetch.status == 304 and old.last_compared is not None:
        changed = False
    elif fetch.fingerprint is not None:
        if old.fingerprint is not None:
            distance = (old.fingerprint ^ fetch.fingerprint).bit_count()
            changed = distance > config.change_distance
        fingerprint = fetch.fingerprint
    if changed is not None and last_compared is not None:
        history = (*history, (max(0.0, now - last_compared), changed))[-config.history_size :]
    if fetch.status == 304 or fetch.fingerprint is not None:
        last_compared = now
    rate = estimate_rate(
        history, prior_rate=config.prior_rate, prior_weight=config.prior_weight
    )
    interval = next_interval(config, rate, old.interval_secs or None, changed, multiplier)
    new = replace(
        old,
        fingerprint=fingerprint,
        first_fetch=old.first_fetch if old.first_fetch is not None else now,
        last_fetch=now,
        last_compared=last_compared,
        visits=old.visits + 1,
        changes=old.changes + (1 if changed else 0),
        interval_secs=interval,
        next_due=now + interval,
        rate=rate,
        etag=fetch.etag if fetch.etag is not None else old.etag,
        last_modified=fetch.last_modified if fetch.last_modified is not None else old.last_modified,
        status=fetch.status,
        history=history,
    )
    visit = Visit(
        url=url,
        changed=changed,
        distance=distance,
        next_due=new.next_due,
        interval_secs=interval,
        visits=new.visits,
        changes=new.changes,
        rate_per_day=rate * 86400.0,
        previous_fingerprint=old.fingerprint,
    )
    return new, visit
