"""Every ``SIMHASH_*`` setting this package reads, a check for names it does not, and the
core's options put in setting names.

Settings are plain names in a dict, so ``SIMHASH_MAX_DISTANSE = 5`` is silently ignored and
the crawl runs with the default. Warning about unknown names, with the closest known one,
turns that into a line the user reads. The README's settings tables list the same names (a
test keeps the two in step).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from scrapy_simhash.exceptions import ConfigurationError

KNOWN_SETTINGS = frozenset(
    [
        "SIMHASH_BITS",
        "SIMHASH_BODY_CACHE_ENTRIES",
        "SIMHASH_CANONICALIZE_KEYS",
        "SIMHASH_CJK_FEATURES",
        "SIMHASH_CONFIRM_DISTANCE",
        "SIMHASH_CONTENT_TYPES",
        "SIMHASH_DROP_DUPLICATES",
        "SIMHASH_DROP_RECORD_MAX_ENTRIES",
        "SIMHASH_DROP_RECORD_TTL_SECS",
        "SIMHASH_DUST_CHECK_SHARE",
        "SIMHASH_DUST_COUNTEREXAMPLE_DISTANCE",
        "SIMHASH_DUST_ENABLED",
        "SIMHASH_DUST_MIN_CHECKS",
        "SIMHASH_DUST_MIN_SUPPORT",
        "SIMHASH_DUST_REFRESH_SECS",
        "SIMHASH_ENABLED",
        "SIMHASH_FOLLOW_DUPLICATE_LINKS",
        "SIMHASH_ERROR_LOG_INTERVAL_SECS",
        "SIMHASH_EXTRACTOR",
        "SIMHASH_FILING_LEASE_SECS",
        "SIMHASH_INDEX_EXACT_DISTANCE",
        "SIMHASH_INDEX_ALLOW_EVICTION",
        "SIMHASH_INDEX_EXPECTED_PAGES",
        "SIMHASH_INDEX_OPTIONS",
        "SIMHASH_INDEX_RESET",
        "SIMHASH_INDEX_RETRY_AFTER_SECS",
        "SIMHASH_INDEX_SHARDS",
        "SIMHASH_INDEX_START_UNREACHABLE",
        "SIMHASH_INDEX_TABLES",
        "SIMHASH_INDEX_TIMEOUT_SECS",
        "SIMHASH_INDEX_TTL_SECS",
        "SIMHASH_INDEX_URL",
        "SIMHASH_INLINE_MAX_BYTES",
        "SIMHASH_ITEM_FIELDS",
        "SIMHASH_ITEM_FINGERPRINT_FIELD",
        "SIMHASH_ITEM_KEY_FIELD",
        "SIMHASH_ITEM_TITLE_FIELD",
        "SIMHASH_JIEBA_HMM",
        "SIMHASH_KEEP_NUMBERS",
        "SIMHASH_LENGTH_FACTOR",
        "SIMHASH_MAX_BODY_BYTES",
        "SIMHASH_MAX_DISTANCE",
        "SIMHASH_MIN_TEXT_CHARS",
        "SIMHASH_NAMESPACE",
        "SIMHASH_ON_INDEX_ERROR",
        "SIMHASH_ON_INDEX_LOST",
        "SIMHASH_ON_INDEX_MISMATCH",
        "SIMHASH_OUTAGE_BACKLOG_PAGES",
        "SIMHASH_POS_FACTOR",
        "SIMHASH_PREFER_URLS",
        "SIMHASH_PREFERRED_HOSTS",
        "SIMHASH_RECRAWL_BUDGET_PER_DAY",
        "SIMHASH_RECRAWL_CHANGE_DISTANCE",
        "SIMHASH_RECRAWL_DEFAULT_INTERVAL_SECS",
        "SIMHASH_RECRAWL_ENABLED",
        "SIMHASH_RECRAWL_ERROR_RETRY_SECS",
        "SIMHASH_RECRAWL_EXPIRE_AFTER_SECS",
        "SIMHASH_RECRAWL_HISTORY_SIZE",
        "SIMHASH_RECRAWL_LEASE_SECS",
        "SIMHASH_RECRAWL_MAX_INTERVAL_SECS",
        "SIMHASH_RECRAWL_MIN_INTERVAL_SECS",
        "SIMHASH_RECRAWL_POLICY",
        "SIMHASH_RECRAWL_PRIOR_RATE_PER_DAY",
        "SIMHASH_RECRAWL_PRIOR_WEIGHT",
        "SIMHASH_RECRAWL_REBALANCE_SECS",
        "SIMHASH_RECRAWL_RETIRE_AFTER_MISSES",
        "SIMHASH_RECRAWL_START_LIMIT",
        "SIMHASH_RECRAWL_START_REQUESTS",
        "SIMHASH_RECRAWL_START_WITHIN_SECS",
        "SIMHASH_RECRAWL_TARGET_FRESHNESS",
        "SIMHASH_SEED",
        "SIMHASH_TEMPLATES_ENABLED",
        "SIMHASH_SHINGLE_SIZE",
        "SIMHASH_SKIP_UNCHANGED",
        "SIMHASH_STOPWORDS",
        "SIMHASH_STOPWORDS_FILE",
        "SIMHASH_TITLE_WEIGHT",
        "SIMHASH_TOKENIZER",
        "SIMHASH_USE_CANONICAL",
        "SIMHASH_WEIGHTING",
        "SIMHASH_WORKERS",
    ]
)

_PREFIX = len("SIMHASH_")
_SUFFIXES = sorted(name[_PREFIX:] for name in KNOWN_SETTINGS)


def unknown_settings(names: Iterable[str]) -> list[str]:
    """One message per ``SIMHASH_*`` name that is not a setting, naming the closest one."""
    messages = []
    for name in sorted({n for n in names if n.upper().startswith("SIMHASH_")}):
        if name in KNOWN_SETTINGS:
            continue
        # Compared without the shared prefix, which would make every name look close.
        close = difflib.get_close_matches(name.upper()[_PREFIX:], _SUFFIXES, n=1, cutoff=0.6)
        hint = f"; did you mean SIMHASH_{close[0]}?" if close else ""
        messages.append(f"unknown setting {name} is ignored{hint}")
    return messages


#: The options the core's messages name (as `option`) and the setting that sets each: the
#: core knows no setting, so what it says is put in the crawl's words here.
OPTION_SETTINGS = {
    "bits": "SIMHASH_BITS",
    "tokenizer": "SIMHASH_TOKENIZER",
    "cjk_features": "SIMHASH_CJK_FEATURES",
    "weighting": "SIMHASH_WEIGHTING",
    "title_weight": "SIMHASH_TITLE_WEIGHT",
    "shingle_size": "SIMHASH_SHINGLE_SIZE",
    "seed": "SIMHASH_SEED",
    "min_text_chars": "SIMHASH_MIN_TEXT_CHARS",
    "max_body_bytes": "SIMHASH_MAX_BODY_BYTES",
    "extractor": "SIMHASH_EXTRACTOR",
    "stopwords_file": "SIMHASH_STOPWORDS_FILE",
    "url": "SIMHASH_INDEX_URL",
    "options": "SIMHASH_INDEX_OPTIONS",
    "namespace": "SIMHASH_NAMESPACE",
    "reset": "SIMHASH_INDEX_RESET",
    "shards": "SIMHASH_INDEX_SHARDS",
    "dust_enabled": "SIMHASH_DUST_ENABLED",
    "prefer_hosts": "SIMHASH_PREFERRED_HOSTS",
    **{
        option: f"SIMHASH_RECRAWL_{option.upper()}"
        for option in (
            "policy",
            "target_freshness",
            "min_interval_secs",
            "max_interval_secs",
            "budget_per_day",
            "change_distance",
            "history_size",
            "retire_after_misses",
            "expire_after_secs",
            "default_interval_secs",
            "prior_rate_per_day",
            "prior_weight",
            "lease_secs",
            "error_retry_secs",
        )
    },
}
_OPTION = re.compile(r"`([a-z_]+)`")


def in_setting_names(text: str) -> str:
    """``text`` with each `option` the core named replaced by its setting."""
    return _OPTION.sub(lambda m: OPTION_SETTINGS.get(m.group(1), m.group(0)), text)


def described(exc: ConfigurationError) -> ConfigurationError:
    """The same error, of the same class, told in setting names."""
    text = in_setting_names(str(exc))
    return exc if text == str(exc) else type(exc)(text)


@contextmanager
def setting_names() -> Iterator[None]:
    """Re-raise a ConfigurationError from the core in setting names (where the crawl or
    the command line meets the core)."""
    try:
        yield
    except ConfigurationError as exc:
        told = described(exc)
        if told is exc:
            raise
        raise told from None
