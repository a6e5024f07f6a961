"""Recrawl settings, read once into a frozen object.

Every number that shapes a schedule lives here with its unit in the name, so a spider's
``settings.py``, the command line's ``-s`` options and the simulator agree on one meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.recrawl import policy
from scrapy_simhash.recrawl.policy import Policy, load_policy

DAY = 86400.0

#: The built-in policies; ``auto`` picks ``budget`` when a budget is set and ``target``
#: otherwise. SIMHASH_RECRAWL_POLICY may also name a policy class of one's own.
POLICIES = ("auto", *policy.POLICIES)


@dataclass(frozen=True)
class RecrawlConfig:
    """How change is detected and how the next visit of a page is chosen."""

    enabled: bool = True
    policy: str = "auto"
    #: Successive fingerprints further apart than this many bits count as a change.
    change_distance: int = 3
    #: Freshness the ``target`` policy aims at (fraction of time a copy is up to date).
    target_freshness: float = 0.8
    #: Fetches per day for the whole namespace under the ``budget`` policy (0 = no budget).
    budget_per_day: float = 0.0
    min_interval_secs: float = 3600.0
    max_interval_secs: float = 30 * DAY
    #: First interval of a new page and the interval of the ``fixed`` policy.
    default_interval_secs: float = DAY
    #: Change rate a page is assumed to have before it has any history.
    prior_rate_per_day: float = 1.0
    #: How many pseudo-visits the prior is worth; higher = slower to trust a page's history.
    prior_weight: float = 2.0
    #: Observations kept per page (the estimate follows the recent behaviour of the page).
    history_size: int = 32
    #: How long a claimed URL stays out of the queue before it is handed out again.
    lease_secs: float = 600.0
    #: How often the budget policy re-solves its Lagrange multiplier over all pages.
    rebalance_secs: float = 300.0
    #: "Not found" answers (404, 410) in a row that retire a URL for good (0 = never).
    retire_after_misses: int = 3
    #: Wait before retrying a URL whose fetch failed (error, timeout, 5xx, 404); doubled
    #: after each further failure in a row, up to ``max_interval_secs``.
    error_retry_secs: float = 3600.0
    #: Forget a URL not fetched for this long when it comes due (0 = keep forever).
    expire_after_secs: float = 0.0
    #: Redis shards of the namespace (SIMHASH_INDEX_SHARDS, the index's count); None =
    #: whatever the namespace recorded (1 when nothing is stored yet).
    shards: int | None = None
    #: Kept pages the schedule is sized for (SIMHASH_INDEX_EXPECTED_PAGES, as the index):
    #: sets the Redis store's bucket count when a namespace is created; None = ~1M.
    expected_pages: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.target_freshness < 1.0:
            raise ConfigurationError(
                f"`target_freshness` must be strictly between 0 and 1, got {self.target_freshness}"
            )
        if not 0.0 < self.min_interval_secs <= self.max_interval_secs:
            raise ConfigurationError(
                "`min_interval_secs` must be > 0 and <= "
                f"`max_interval_secs`, got {self.min_interval_secs} and "
                f"{self.max_interval_secs}"
            )
        if self.schedule.uses_budget and self.budget_per_day <= 0:
            raise ConfigurationError(f"`policy`={self.policy} needs `budget_per_day` > 0")
        for name, value in (
            ("change_distance", self.change_distance),
            ("budget_per_day", self.budget_per_day),
            ("history_size", self.history_size - 1),
            ("retire_after_misses", self.retire_after_misses),
            ("expire_after_secs", self.expire_after_secs),
        ):
            if value < 0:
                raise ConfigurationError(f"`{name}` is out of range: {value}")
        for name, value in (
            ("default_interval_secs", self.default_interval_secs),
            ("prior_rate_per_day", self.prior_rate_per_day),
            ("prior_weight", self.prior_weight),
            ("lease_secs", self.lease_secs),
            ("error_retry_secs", self.error_retry_secs),
        ):
            if value <= 0:
                raise ConfigurationError(f"`{name}` must be > 0, got {value}")

    @property
    def effective_policy(self) -> str:
        """Return the policy actually applied (``auto`` resolved)."""
        if self.policy == "auto":
            return "budget" if self.budget_per_day > 0 else "target"
        return self.policy

    @cached_property
    def schedule(self) -> Policy:
        """The policy object that turns a change rate into the next interval."""
        return load_policy(self.effective_policy)

    @property
    def prior_rate(self) -> float:
        """Return the prior change rate in changes per second."""
        return self.prior_rate_per_day / DAY

    def clamp(self, interval_secs: float) -> float:
        """Keep an interval within the configured bounds."""
        return min(self.max_interval_secs, max(self.min_interval_secs, interval_secs))
