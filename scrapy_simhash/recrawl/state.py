"""Per-URL recrawl state and the one pure step that updates it after a fetch.

Every backend stores the same :class:`PageState` and calls :func:`advance` inside its own
atomic read-modify-write, so memory, SQLite and Redis schedule identically and the rules
can be tested without any store.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

from scrapy_simhash.recrawl.config import RecrawlConfig
from scrapy_simhash.recrawl.estimate import Observation, estimate_rate
from scrapy_simhash.recrawl.packing import FIELDS, as_float32, fields, pack, quantize_interval
from scrapy_simhash.simhash import hamming


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
    #: Status of the last response (0: no response, the download failed).
    status: int | None = None
    #: Recent ``(seconds since previous comparison, changed)`` pairs, oldest first.
    history: tuple[Observation, ...] = ()
    #: Consecutive "not found" answers (404, 410) since the last successful fetch.
    misses: int = 0
    #: Consecutive unsuccessful fetches (errors, 5xx, misses): the retry backoff exponent.
    failures: int = 0
    #: Gone for good (SIMHASH_RECRAWL_RETIRE_AFTER_MISSES): never handed out again.
    retired: bool = False

    def to_bytes(self) -> bytes:
        """Pack everything but the URL (the store's key) compactly: see ``packing``."""
        return pack(
            fingerprint=self.fingerprint,
            first_fetch=self.first_fetch,
            last_fetch=self.last_fetch,
            last_compared=self.last_compared,
            visits=self.visits,
            changes=self.changes,
            interval_secs=self.interval_secs,
            next_due=self.next_due,
            rate=self.rate,
            etag=self.etag,
            last_modified=self.last_modified,
            status=self.status,
            misses=self.misses,
            failures=self.failures,
            retired=self.retired,
            history=self.history,
        )

    @classmethod
    def from_bytes(cls, url: str, data: bytes | str) -> PageState:
        """Read what :meth:`to_bytes` wrote (or the JSON of versions before 0.2)."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if data[:1] == b"{":
            return cls.from_json(data)
        # The packed fields, set as the frozen dataclass' __init__ would, without its call
        # a field (a claim reads a hundred states at a time); every field is set.
        state = object.__new__(cls)
        state.__dict__.update(zip(_NAMES, (url, *fields(data)), strict=True))
        return state

    @classmethod
    def from_json(cls, text: str | bytes) -> PageState:
        """Parse the JSON state that versions before 0.2 stored."""
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
            interval_secs=as_float32(float(data.get("i", 0.0))),
            next_due=float(data.get("d", 0.0)),
            rate=as_float32(float(data.get("r", 0.0))),
            etag=data.get("e"),
            last_modified=data.get("m"),
            status=data.get("s"),
            history=tuple((quantize_interval(float(t)), bool(c)) for t, c in data.get("h", ())),
        )


#: A state's fields in order: its URL, then what ``packing.fields`` reads.
_NAMES = ("url", *FIELDS)


#: What one recorded response meant for the schedule (``Visit.outcome``, stats names).
FETCHED, NOT_MODIFIED, MISSING, RETIRED, FAILED = (
    "fetched",
    "not_modified",
    "missing",
    "retired",
    "failed",
)
#: Answers that say a URL is gone rather than failing for now.
GONE_STATUSES = frozenset({404, 410})


def classify(status: int) -> str:
    """Return the outcome of a final response status (0: the download failed)."""
    if status == 304:
        return NOT_MODIFIED
    if 200 <= status < 300:
        return FETCHED
    if status in GONE_STATUSES:
        return MISSING
    return FAILED


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
    #: ``fetched``, ``not_modified``, ``missing``, ``retired`` or ``failed``.
    outcome: str = FETCHED


@dataclass(frozen=True)
class Fetch:
    """One fetch result handed to :func:`advance` (status 0: no response at all)."""

    fingerprint: int | None
    status: int = 200
    etag: str | None = None
    last_modified: str | None = None


def compare(previous: int, fingerprint: int, change_distance: int) -> tuple[bool, int]:
    """Whether a page changed between two fingerprints, and by how many bits.

    The one change rule: more than ``change_distance`` bits is a substantive change, so
    timestamps, counters and rotating teasers, which move a few bits, are not.
    """
    distance = hamming(previous, fingerprint)
    return distance > change_distance, distance


def next_interval(
    config: RecrawlConfig,
    rate: float,
    previous_interval: float | None,
    changed: bool | None,
    multiplier: float | None,
) -> float:
    """Return the clamped interval until the next visit under the configured policy.

    ``multiplier`` is the budget policy's Lagrange multiplier (per-second units); without
    one yet (an empty store) the budget policy falls back to the freshness target. The
    result is a float32, as stored, so a state reads back exactly as it was computed.
    """
    interval = config.schedule.interval(config, rate, previous_interval, changed, multiplier)
    return as_float32(config.clamp(interval))


def retry_interval(config: RecrawlConfig, failures: int) -> float:
    """Return the wait after ``failures`` unsuccessful fetches in a row: doubling each time."""
    exponent = min(max(failures - 1, 0), 64)
    return as_float32(config.clamp(config.error_retry_secs * 2.0**exponent))


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
    measured against the last one known, over the whole time since. A failed fetch
    (error, 5xx, 404) tells nothing about change: it only schedules a retry, later after
    each failure in a row, and enough "not found" answers in a row retire the URL.
    """
    old = state or PageState(url=url)
    outcome = classify(fetch.status)
    if outcome in (MISSING, FAILED):
        return _failed(old, url, fetch, now, config, outcome)
    changed: bool | None = None
    distance: int | None = None
    fingerprint = old.fingerprint
    history = old.history
    last_compared = old.last_compared
    if outcome == NOT_MODIFIED and old.last_compared is not None:
        changed = False
    elif fetch.fingerprint is not None:
        if old.fingerprint is not None:
            changed, distance = compare(old.fingerprint, fetch.fingerprint, config.change_distance)
        fingerprint = fetch.fingerprint
    if changed is not None and last_compared is not None:
        elapsed = quantize_interval(max(0.0, now - last_compared))
        history = (*history, (elapsed, changed))[-config.history_size :]
    if outcome == NOT_MODIFIED or fetch.fingerprint is not None:
        last_compared = now
    rate = as_float32(
        estimate_rate(history, prior_rate=config.prior_rate, prior_weight=config.prior_weight)
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
        misses=0,
        failures=0,
        retired=False,
    )
    return new, _visit(new, old, outcome, changed, distance)


def _failed(
    old: PageState, url: str, fetch: Fetch, now: float, config: RecrawlConfig, outcome: str
) -> tuple[PageState, Visit]:
    misses = old.misses + 1 if outcome == MISSING else old.misses
    failures = old.failures + 1
    retired = 0 < config.retire_after_misses <= misses
    if retired:
        # Out of the queue for good; with an expiry, back in it once to be forgotten.
        interval = config.expire_after_secs or math.inf
        outcome = RETIRED
    else:
        interval = retry_interval(config, failures)
    new = replace(
        old,
        first_fetch=old.first_fetch if old.first_fetch is not None else now,
        last_fetch=now,
        # Keep the comparison base: the next real fetch is measured over the whole gap.
        last_compared=old.last_compared,
        visits=old.visits + 1,
        interval_secs=interval,
        next_due=now + interval,
        # A retired page no longer takes a share of the budget.
        rate=0.0 if retired else old.rate,
        status=fetch.status,
        misses=misses,
        failures=failures,
        retired=retired,
    )
    return new, _visit(new, old, outcome, None, None)


def _visit(
    new: PageState, old: PageState, outcome: str, changed: bool | None, distance: int | None
) -> Visit:
    return Visit(
        url=new.url,
        changed=changed,
        distance=distance,
        next_due=new.next_due,
        interval_secs=new.interval_secs,
        visits=new.visits,
        changes=new.changes,
        rate_per_day=new.rate * 86400.0,
        previous_fingerprint=old.fingerprint,
        outcome=outcome,
    )
