"""Every ``SIMHASH_*`` setting: its name, default, unit and range, read into typed configs.

No Scrapy here: a Scrapy ``Settings`` object and the dict the command line builds from
``-s NAME=VALUE`` are both mappings, so the crawl and both command lines read settings
through the same functions and agree on every default. ``names`` lists every setting (the
README's tables list the same, a test keeps them in step) and warns about misspelt ones;
``values`` reads one value of a type; ``configs`` builds the configs.
"""

from __future__ import annotations

from scrapy_simhash.settings.configs import (
    DEFAULT_CONTENT_TYPES,
    ON_ERROR_CHOICES,
    ON_MISMATCH_CHOICES,
    DustConfig,
    GuardConfig,
    MiddlewareConfig,
    PipelineConfig,
    RecrawlStartConfig,
    backend_options,
    canonicalize_keys,
    confirm_distance,
    content_type_matches,
    default_workers,
    dust_enabled,
    dust_min_checks,
    dust_min_support,
    enabled,
    filing_lease_secs,
    fingerprint_config,
    follow_links_asked,
    follows_duplicate_links,
    given_namespace,
    index_kwargs,
    index_options,
    index_ttl_secs,
    index_url,
    item_fields,
    max_distance,
    namespace,
    on_mismatch,
    preferred_hosts,
    recrawl_config,
    shards,
)
from scrapy_simhash.settings.names import KNOWN_SETTINGS, unknown_settings

__all__ = [
    "DEFAULT_CONTENT_TYPES",
    "KNOWN_SETTINGS",
    "ON_ERROR_CHOICES",
    "ON_MISMATCH_CHOICES",
    "DustConfig",
    "GuardConfig",
    "MiddlewareConfig",
    "PipelineConfig",
    "RecrawlStartConfig",
    "backend_options",
    "canonicalize_keys",
    "confirm_distance",
    "content_type_matches",
    "default_workers",
    "dust_enabled",
    "dust_min_checks",
    "dust_min_support",
    "enabled",
    "filing_lease_secs",
    "fingerprint_config",
    "follow_links_asked",
    "follows_duplicate_links",
    "given_namespace",
    "index_kwargs",
    "index_options",
    "index_ttl_secs",
    "index_url",
    "item_fields",
    "max_distance",
    "namespace",
    "on_mismatch",
    "preferred_hosts",
    "recrawl_config",
    "shards",
    "unknown_settings",
]
