"""``SIMHASH_*`` settings -> the typed configs each part of the package takes.

Each setting is read here and nowhere else, with its default, unit and range, so the crawl,
``scrapy simhash`` and ``scrapy-simhash`` agree on every value and on what a malformed one
means. The core's configs (``FingerprintConfig``, ``RecrawlConfig``, the index options) know
nothing of setting names; their ``from_settings`` methods call these readers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_simhash._redis import MAX_SHARDS
from scrapy_simhash.settings.names import setting_names
from scrapy_simhash.settings.values import (
    get_bool,
    get_choice,
    get_dict,
    get_float,
    get_int,
    get_list,
    get_str,
)

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import FingerprintConfig
    from scrapy_simhash.recrawl.config import RecrawlConfig

Settings = Mapping[str, Any]

#: Content types considered by default: pages a person reads as text.
DEFAULT_CONTENT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")

ON_ERROR_CHOICES = ("pass", "drop", "raise")
#: What happens when the index turns out to be built with another configuration mid-crawl.
ON_MISMATCH_CHOICES = ("close", "pass")
#: What happens when the storage lost the namespace mid-crawl (a Redis restarted empty).
ON_LOST_CHOICES = ("continue", "close")
#: Pages passed unchecked during an index outage that are remembered to be indexed when it
#: answers again: each costs its key, URL, fingerprint and validators, no body (~0.4 KB with
#: a 100-character URL: 40 MB at this bound).
OUTAGE_BACKLOG_PAGES = 100_000
#: Default of SIMHASH_FILING_LEASE_SECS (scrapy_simhash.filings.LEASE_SECS).
FILING_LEASE_SECS = 60.0


#: Share of skippable requests fetched anyway to keep checking the URL rules.
DUST_CHECK_SHARE = 0.1
#: Default counterexample distance per 64 fingerprint bits: on the pair benchmark's site the
#: copies URL rules relate are within 10 bits of their page but one, while distinct pages
#: are 12 or more bits apart but 26 pairs in 190,000 (benchmarks/README.md).
DUST_COUNTEREXAMPLE_BITS_PER_64 = 10
#: Seconds between reads of the shared rules (other processes' rules and counterexamples).
DUST_REFRESH_SECS = 10.0


def enabled(settings: Settings) -> bool:
    """``SIMHASH_ENABLED``: the whole package on or off."""
    return get_bool(settings, "SIMHASH_ENABLED", True)


def follows_duplicate_links(settings: Settings) -> bool:
    """Whether near-duplicates reach the callback for their links
    (``SIMHASH_FOLLOW_DUPLICATE_LINKS``, with the package on and copies dropped)."""
    return (
        enabled(settings)
        and get_bool(settings, "SIMHASH_DROP_DUPLICATES", True)
        and get_bool(settings, "SIMHASH_FOLLOW_DUPLICATE_LINKS", True)
    )


def follow_links_asked(settings: Settings) -> bool:
    """Whether SIMHASH_FOLLOW_DUPLICATE_LINKS was set by the user (not left at its default)."""
    priority = getattr(settings, "getpriority", None)  # plain dicts carry no priority
    if priority is None:
        return "SIMHASH_FOLLOW_DUPLICATE_LINKS" in settings
    return priority("SIMHASH_FOLLOW_DUPLICATE_LINKS") is not None


def index_url(settings: Settings) -> str | None:
    """``SIMHASH_INDEX_URL``; None means the embedded SQLite default, which only the crawl
    side can place (in the Scrapy project's data dir)."""
    return get_str(settings, "SIMHASH_INDEX_URL", None)


def namespace(settings: Settings, spider_name: str | None) -> str:
    """``SIMHASH_NAMESPACE``, else the spider name, so spiders of a project do not mix."""
    return get_str(settings, "SIMHASH_NAMESPACE", None) or spider_name or "default"


def given_namespace(settings: Settings) -> str | None:
    """``SIMHASH_NAMESPACE`` as given (None: decided by the spider name)."""
    return get_str(settings, "SIMHASH_NAMESPACE", None)


def on_mismatch(settings: Settings) -> str:
    """``SIMHASH_ON_INDEX_MISMATCH``: what pages meet once the index turns out unusable."""
    return get_choice(settings, "SIMHASH_ON_INDEX_MISMATCH", "close", ON_MISMATCH_CHOICES)


def canonicalize_keys(settings: Settings) -> bool:
    """``SIMHASH_CANONICALIZE_KEYS``: keys are URLs canonicalized by w3lib."""
    return get_bool(settings, "SIMHASH_CANONICALIZE_KEYS", False)


def default_workers() -> int:
    """One worker process on a multi-core machine keeps the reactor's core free for I/O."""
    return min(2, max(0, (os.cpu_count() or 1) - 1))


def shards(settings: Settings) -> int:
    """``SIMHASH_INDEX_SHARDS``: how many shards a Redis namespace is spread over."""
    return get_int(settings, "SIMHASH_INDEX_SHARDS", 1, minimum=1, maximum=MAX_SHARDS)


# -- the core's configs ------------------------------------------------------------------------


def fingerprint_config(settings: Settings) -> FingerprintConfig:
    """The fingerprint settings (``SIMHASH_BITS``, ``SIMHASH_TOKENIZER``, ...)."""
    from scrapy_simhash.features import CJK_FEATURES, TOKENIZERS, WEIGHTINGS
    from scrapy_simhash.fingerprint import FingerprintConfig

    d = FingerprintConfig()
    with setting_names():  # the config's own checks speak of its options
        return FingerprintConfig(
            bits=bits(settings),
            tokenizer=get_choice(settings, "SIMHASH_TOKENIZER", d.tokenizer, TOKENIZERS),
            jieba_hmm=get_bool(settings, "SIMHASH_JIEBA_HMM", d.jieba_hmm),
            cjk_features=get_choice(settings, "SIMHASH_CJK_FEATURES", d.cjk_features, CJK_FEATURES),
            weighting=get_choice(settings, "SIMHASH_WEIGHTING", d.weighting, WEIGHTINGS),
            title_weight=get_float(settings, "SIMHASH_TITLE_WEIGHT", d.title_weight),
            shingle_size=get_int(settings, "SIMHASH_SHINGLE_SIZE", d.shingle_size),
            builtin_stopwords=get_bool(settings, "SIMHASH_STOPWORDS", d.builtin_stopwords),
            stopwords_file=get_str(settings, "SIMHASH_STOPWORDS_FILE", d.stopwords_file),
            keep_numbers=get_bool(settings, "SIMHASH_KEEP_NUMBERS", d.keep_numbers),
            length_factor=get_bool(settings, "SIMHASH_LENGTH_FACTOR", d.length_factor),
            pos_factor=get_bool(settings, "SIMHASH_POS_FACTOR", d.pos_factor),
            seed=get_int(settings, "SIMHASH_SEED", d.seed),
            min_text_chars=get_int(settings, "SIMHASH_MIN_TEXT_CHARS", d.min_text_chars),
            max_body_bytes=get_int(settings, "SIMHASH_MAX_BODY_BYTES", d.max_body_bytes),
            extractor=get_str(settings, "SIMHASH_EXTRACTOR", d.extractor) or "",
        )


def recrawl_config(settings: Settings) -> RecrawlConfig:
    """The ``SIMHASH_RECRAWL_*`` settings (and the shard count the store shares with the
    index)."""
    from scrapy_simhash.recrawl.config import POLICIES, RecrawlConfig

    d = RecrawlConfig()
    p = "SIMHASH_RECRAWL_"
    with setting_names():  # the config's own checks speak of its options
        return RecrawlConfig(
            enabled=get_bool(settings, p + "ENABLED", d.enabled),
            policy=_policy_name(get_str(settings, p + "POLICY", d.policy) or d.policy, POLICIES),
            # Bits, so twice as many at 128 bits for the same share of the fingerprint.
            change_distance=get_int(
                settings, p + "CHANGE_DISTANCE", d.change_distance * bits(settings) // 64, minimum=0
            ),
            target_freshness=get_float(settings, p + "TARGET_FRESHNESS", d.target_freshness),
            budget_per_day=get_float(settings, p + "BUDGET_PER_DAY", d.budget_per_day, minimum=0),
            min_interval_secs=get_float(settings, p + "MIN_INTERVAL_SECS", d.min_interval_secs),
            max_interval_secs=get_float(settings, p + "MAX_INTERVAL_SECS", d.max_interval_secs),
            default_interval_secs=get_float(
                settings, p + "DEFAULT_INTERVAL_SECS", d.default_interval_secs
            ),
            prior_rate_per_day=get_float(settings, p + "PRIOR_RATE_PER_DAY", d.prior_rate_per_day),
            prior_weight=get_float(settings, p + "PRIOR_WEIGHT", d.prior_weight),
            history_size=get_int(settings, p + "HISTORY_SIZE", d.history_size, minimum=1),
            lease_secs=get_float(settings, p + "LEASE_SECS", d.lease_secs),
            rebalance_secs=get_float(settings, p + "REBALANCE_SECS", d.rebalance_secs, minimum=0),
            retire_after_misses=get_int(
                settings, p + "RETIRE_AFTER_MISSES", d.retire_after_misses, minimum=0
            ),
            error_retry_secs=get_float(settings, p + "ERROR_RETRY_SECS", d.error_retry_secs),
            expire_after_secs=get_float(
                settings, p + "EXPIRE_AFTER_SECS", d.expire_after_secs, minimum=0
            ),
            shards=shards(settings),
            expected_pages=get_int(settings, "SIMHASH_INDEX_EXPECTED_PAGES", 0, minimum=0) or None,
        )


def _policy_name(value: str, builtin: tuple[str, ...]) -> str:
    """A built-in policy in any case, or an import path as given (the config loads it)."""
    return value.lower() if value.lower() in builtin else value


def bits(settings: Settings) -> int:
    """``SIMHASH_BITS`` as the distances' defaults need it (the fingerprint config checks it)."""
    from scrapy_simhash.fingerprint import FingerprintConfig

    return get_int(settings, "SIMHASH_BITS", FingerprintConfig.bits)


def max_distance(settings: Settings) -> int:
    """``SIMHASH_MAX_DISTANCE``, read the same way by the crawl and the command line; its
    default follows ``SIMHASH_BITS`` (8 at 64 bits, 16 at 128)."""
    from scrapy_simhash.index.defaults import default_distances

    default = default_distances(bits(settings))[0]
    return get_int(settings, "SIMHASH_MAX_DISTANCE", default, minimum=0, maximum=31)


def confirm_distance(settings: Settings) -> int:
    """``SIMHASH_CONFIRM_DISTANCE``: signature bits a candidate may differ by and still be
    confirmed a copy (the second test; one value for every site and language)."""
    from scrapy_simhash.confirm import CONFIRM_DISTANCE, SIGNATURE_BITS

    return get_int(
        settings,
        "SIMHASH_CONFIRM_DISTANCE",
        CONFIRM_DISTANCE,
        minimum=0,
        maximum=SIGNATURE_BITS // 4 - 1,
    )


def index_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments of ``open_index``/``open_async_index``, with ``url`` (None = the
    embedded SQLite file). ``bits`` and ``scheme`` come from the fingerprinter."""
    from scrapy_simhash.index.defaults import default_distances
    from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS

    tables = get_int(settings, "SIMHASH_INDEX_TABLES", 0, minimum=0)
    expected = get_int(settings, "SIMHASH_INDEX_EXPECTED_PAGES", 0, minimum=0)
    ttl = get_float(settings, "SIMHASH_INDEX_TTL_SECS", 0.0, minimum=0.0)
    drop_ttl = get_float(settings, "SIMHASH_DROP_RECORD_TTL_SECS", DROP_TTL_SECS, minimum=0.0)
    k = max_distance(settings)
    exact = get_int(
        settings,
        "SIMHASH_INDEX_EXACT_DISTANCE",
        min(default_distances(bits(settings))[1], k),
        minimum=0,
        maximum=k,
    )
    k = _served(settings, k, exact, tables or None, expected or None)
    return {
        "url": index_url(settings),
        "max_distance": k,
        "exact_distance": exact,
        "namespace": namespace(settings, None),
        "tables": tables or None,
        "expected_size": expected or None,
        "ttl_secs": ttl or None,
        "reset": get_bool(settings, "SIMHASH_INDEX_RESET", False),
        "drop_ttl_secs": drop_ttl or None,
        "drop_max_entries": get_int(
            settings, "SIMHASH_DROP_RECORD_MAX_ENTRIES", DROP_MAX_ENTRIES, minimum=0
        ),
        "confirm_distance": confirm_distance(settings),
        "options": backend_options(settings, sharded=True),
    }


def _served(
    settings: Settings, k: int, exact: int, tables: int | None, expected: int | None
) -> int:
    """``k`` if the band layout these settings build serves it at its stated recall
    (:data:`~scrapy_simhash.index.layout.RECALL_FLOOR`), else: a radius set by the user is
    refused, naming the largest the layout serves; the default is lowered to it (only a
    layout for more than ~500 million expected pages needs that)."""
    from scrapy_simhash.exceptions import ConfigurationError
    from scrapy_simhash.index.layout import (
        RECALL_FLOOR,
        band_recall,
        choose_layout,
        served_distance,
    )

    layout = choose_layout(bits(settings), exact, expected_size=expected, tables=tables)
    served = served_distance(layout)
    if k <= served:
        return k
    if settings.get("SIMHASH_MAX_DISTANCE") is None:
        return served
    raise ConfigurationError(
        f"SIMHASH_MAX_DISTANCE = {k} is more than the index can serve: its band layout "
        f"{layout.name}, built for SIMHASH_INDEX_EXACT_DISTANCE = {exact}, finds every pair "
        f"within {exact} bits, and a pair {k} bits apart only when one band is equal, "
        f"{band_recall(layout, k):.1%} of the time; the largest distance it finds at least "
        f"{RECALL_FLOOR:.0%} of the time is {served}. Set SIMHASH_MAX_DISTANCE to {served} or "
        "less, or raise SIMHASH_INDEX_EXACT_DISTANCE (a layout of more tables)"
    )


def index_kwargs(settings: Settings, *, namespace: str, bits: int, scheme: str) -> dict[str, Any]:
    """Keyword arguments of ``open_index``/``open_async_index`` for one namespace, without the
    URL (the crawl and the command lines decide it): ``bits`` and ``scheme`` are the
    fingerprinter's."""
    options = index_options(settings)
    options.pop("url", None)
    options.update(namespace=namespace, bits=bits, scheme=scheme)
    return options


def templates_enabled(settings: Settings) -> bool:
    """``SIMHASH_TEMPLATES_ENABLED``: whether hosts' templates are learned (and kept)."""
    return get_bool(settings, "SIMHASH_TEMPLATES_ENABLED", True)


def index_ttl_secs(settings: Settings) -> float | None:
    """``SIMHASH_INDEX_TTL_SECS``: how long the namespace's state lives (None: until reset)."""
    return get_float(settings, "SIMHASH_INDEX_TTL_SECS", 0.0, minimum=0.0) or None


def backend_options(settings: Settings, *, sharded: bool = False) -> dict[str, Any]:
    """``SIMHASH_INDEX_OPTIONS`` (client options of the storage), plus ``shards`` when
    ``sharded`` and ``SIMHASH_INDEX_SHARDS`` spreads a Redis namespace."""
    options = get_dict(settings, "SIMHASH_INDEX_OPTIONS")
    count = shards(settings)
    if sharded and count > 1:
        options = {**options, "shards": count}
    return options


# -- the crawl's configs -----------------------------------------------------------------------


def content_type_matches(content_type: str, allowed: tuple[str, ...]) -> bool:
    """Match a Content-Type header value against prefixes such as ``text/html``."""
    media = content_type.split(";", 1)[0].strip().lower()
    return any(media == a or (a.endswith("/") and media.startswith(a)) for a in allowed)


@dataclass(frozen=True)
class GuardConfig:
    """How calls to the index (and recrawl store) are bounded and retried during outages."""

    on_error: str
    timeout: float
    retry_after: float
    log_interval: float
    #: Start a crawl whose index does not answer at start-up (SIMHASH_INDEX_START_UNREACHABLE);
    #: by default it refuses to start.
    start_unreachable: bool = False
    #: Pages passed unchecked during an outage kept to be indexed when the index answers
    #: again (SIMHASH_OUTAGE_BACKLOG_PAGES; 0: none is).
    backlog_pages: int = OUTAGE_BACKLOG_PAGES
    #: What a crawl does when the storage lost the namespace (SIMHASH_ON_INDEX_LOST).
    on_lost: str = "continue"
    #: Start a crawl on a Redis that may evict its keys (SIMHASH_INDEX_ALLOW_EVICTION); by
    #: default it refuses to start.
    allow_eviction: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> GuardConfig:
        return cls(
            on_error=get_choice(settings, "SIMHASH_ON_INDEX_ERROR", "pass", ON_ERROR_CHOICES),
            timeout=get_float(settings, "SIMHASH_INDEX_TIMEOUT_SECS", 10.0, minimum=0.001),
            retry_after=get_float(settings, "SIMHASH_INDEX_RETRY_AFTER_SECS", 1.0, minimum=0.0),
            log_interval=get_float(settings, "SIMHASH_ERROR_LOG_INTERVAL_SECS", 60.0, minimum=0.0),
            start_unreachable=get_bool(settings, "SIMHASH_INDEX_START_UNREACHABLE", False),
            backlog_pages=get_int(
                settings, "SIMHASH_OUTAGE_BACKLOG_PAGES", OUTAGE_BACKLOG_PAGES, minimum=0
            ),
            on_lost=get_choice(settings, "SIMHASH_ON_INDEX_LOST", "continue", ON_LOST_CHOICES),
            allow_eviction=get_bool(settings, "SIMHASH_INDEX_ALLOW_EVICTION", False),
        )


@dataclass(frozen=True)
class MiddlewareConfig:
    """Everything the downloader middleware reads from the settings, validated up front."""

    drop_duplicates: bool
    content_types: tuple[str, ...]
    guard: GuardConfig
    workers: int
    inline_max_bytes: int
    body_cache_size: int
    canonicalize_keys: bool
    skip_unchanged: bool
    use_canonical: bool
    prefer_urls: tuple[str, ...]
    on_mismatch: str = "close"
    #: Hosts whose URL names a page over a mirror's, best first (SIMHASH_PREFERRED_HOSTS).
    prefer_hosts: tuple[str, ...] = ()
    #: Learn each host's template from its pages (SIMHASH_TEMPLATES_ENABLED).
    templates: bool = True
    #: Lease of a page filed and not yet delivered (SIMHASH_FILING_LEASE_SECS; 0: off).
    filing_lease_secs: float = FILING_LEASE_SECS

    @classmethod
    def from_settings(cls, settings: Settings) -> MiddlewareConfig:
        from scrapy_simhash.canonical import PREFERENCE_RULES, check_rules

        return cls(
            drop_duplicates=get_bool(settings, "SIMHASH_DROP_DUPLICATES", True),
            content_types=tuple(
                t.strip().lower()
                for t in get_list(settings, "SIMHASH_CONTENT_TYPES", DEFAULT_CONTENT_TYPES)
            ),
            guard=GuardConfig.from_settings(settings),
            workers=get_int(settings, "SIMHASH_WORKERS", default_workers(), minimum=0),
            inline_max_bytes=get_int(settings, "SIMHASH_INLINE_MAX_BYTES", 8192, minimum=0),
            body_cache_size=get_int(settings, "SIMHASH_BODY_CACHE_ENTRIES", 4096, minimum=0),
            canonicalize_keys=canonicalize_keys(settings),
            skip_unchanged=get_bool(settings, "SIMHASH_SKIP_UNCHANGED", False),
            use_canonical=get_bool(settings, "SIMHASH_USE_CANONICAL", True),
            prefer_urls=check_rules(get_list(settings, "SIMHASH_PREFER_URLS", PREFERENCE_RULES)),
            on_mismatch=on_mismatch(settings),
            templates=templates_enabled(settings),
            prefer_hosts=preferred_hosts(settings),
            filing_lease_secs=filing_lease_secs(settings),
        )


def filing_lease_secs(settings: Mapping[str, Any]) -> float:
    """``SIMHASH_FILING_LEASE_SECS``: how long a page filed and not yet delivered is taken
    for in flight without word from its process (0: pages are filed for good at once)."""
    return get_float(settings, "SIMHASH_FILING_LEASE_SECS", FILING_LEASE_SECS, minimum=0.0)


def preferred_hosts(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """``SIMHASH_PREFERRED_HOSTS``: hosts whose URLs name a page over a mirror's, best
    first, checked by the core (whose message names its `prefer_hosts`)."""
    from scrapy_simhash.canonical import check_hosts

    with setting_names():
        return check_hosts(get_list(settings, "SIMHASH_PREFERRED_HOSTS", ()))


def item_fields(settings: Settings) -> tuple[str, ...]:
    """``SIMHASH_ITEM_FIELDS``: the item fields whose text the pipeline compares."""
    return tuple(get_list(settings, "SIMHASH_ITEM_FIELDS", ()))


@dataclass(frozen=True)
class PipelineConfig:
    """What the item pipeline reads from the settings."""

    text_fields: tuple[str, ...]
    title_field: str | None
    key_field: str | None
    fingerprint_field: str | None
    drop_duplicates: bool
    guard: GuardConfig
    on_mismatch: str = "close"

    @classmethod
    def from_settings(cls, settings: Settings) -> PipelineConfig:
        return cls(
            text_fields=item_fields(settings),
            title_field=get_str(settings, "SIMHASH_ITEM_TITLE_FIELD", None),
            key_field=get_str(settings, "SIMHASH_ITEM_KEY_FIELD", "url"),
            fingerprint_field=get_str(settings, "SIMHASH_ITEM_FINGERPRINT_FIELD", None),
            drop_duplicates=get_bool(settings, "SIMHASH_DROP_DUPLICATES", True),
            guard=GuardConfig.from_settings(settings),
            on_mismatch=on_mismatch(settings),
        )


@dataclass(frozen=True)
class DustConfig:
    """URL rules learned from drops (``SIMHASH_DUST_*``; on with ``SIMHASH_DUST_ENABLED``)."""

    min_support: int
    #: Checks of its skips a learned rule must pass, per host, before it skips unchecked.
    min_checks: int
    check_share: float
    #: Pages farther apart than this are different pages: one such pair a rule maps
    #: together kills it. Copies a rule finds often differ by more than the near-duplicate
    #: distance (another page chrome around the same text), distinct pages by far more.
    counterexample_distance: int
    refresh_secs: float
    store_options: dict[str, Any]

    @classmethod
    def from_settings(cls, settings: Settings, *, max_distance: int, bits: int) -> DustConfig:
        from scrapy_simhash.dust.book import MIN_CHECKS, MIN_SUPPORT
        from scrapy_simhash.dust.store import MAX_PAIRS

        return cls(
            min_support=dust_min_support(settings, maximum=MAX_PAIRS, default=MIN_SUPPORT),
            min_checks=dust_min_checks(settings, maximum=MAX_PAIRS, default=MIN_CHECKS),
            check_share=get_float(
                settings, "SIMHASH_DUST_CHECK_SHARE", DUST_CHECK_SHARE, minimum=0.0, maximum=1.0
            ),
            counterexample_distance=get_int(
                settings,
                "SIMHASH_DUST_COUNTEREXAMPLE_DISTANCE",
                max(max_distance, DUST_COUNTEREXAMPLE_BITS_PER_64 * bits // 64),
                minimum=max_distance,
            ),
            refresh_secs=get_float(
                settings, "SIMHASH_DUST_REFRESH_SECS", DUST_REFRESH_SECS, minimum=0.0
            ),
            store_options=backend_options(settings),
        )


def dust_enabled(settings: Settings) -> bool:
    return get_bool(settings, "SIMHASH_DUST_ENABLED", False)


def dust_min_support(settings: Settings, *, default: int, maximum: int | None = None) -> int:
    """``SIMHASH_DUST_MIN_SUPPORT``: distinct pairs before a URL rule is trusted."""
    return get_int(settings, "SIMHASH_DUST_MIN_SUPPORT", default, minimum=1, maximum=maximum)


def dust_min_checks(settings: Settings, *, default: int, maximum: int | None = None) -> int:
    """``SIMHASH_DUST_MIN_CHECKS``: checks of its skips a learned URL rule passes, per host,
    before it is trusted to skip unchecked (0: trusted on support alone)."""
    return get_int(settings, "SIMHASH_DUST_MIN_CHECKS", default, minimum=0, maximum=maximum)


@dataclass(frozen=True)
class RecrawlStartConfig:
    """How a spider with ``RecrawlSpiderMixin`` starts from the due queue."""

    start_requests: bool
    limit: int
    within_secs: float

    @classmethod
    def from_settings(cls, settings: Settings) -> RecrawlStartConfig:
        return cls(
            start_requests=get_bool(settings, "SIMHASH_RECRAWL_START_REQUESTS", True),
            limit=get_int(settings, "SIMHASH_RECRAWL_START_LIMIT", 10000, minimum=0),
            within_secs=get_float(settings, "SIMHASH_RECRAWL_START_WITHIN_SECS", 0.0, minimum=0),
        )
