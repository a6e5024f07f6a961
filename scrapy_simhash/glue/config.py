"""Settings of the Scrapy components, read once into typed objects.

The middleware, the pipeline, the add-on and the ``scrapy simhash`` command must agree on the
index location and the namespace, or the command would inspect a different index than the
crawl fills; so the defaults are decided here, in one place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_simhash._settings import (
    get_bool,
    get_choice,
    get_float,
    get_int,
    get_list,
    get_str,
)
from scrapy_simhash.canonical import PREFERENCE_RULES, check_rules

#: Content types considered by default: pages a person reads as text.
DEFAULT_CONTENT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")

#: File name of the embedded index inside the project data dir (``.scrapy/``).
DEFAULT_INDEX_FILE = "simhash/index.sqlite3"

ON_ERROR_CHOICES = ("pass", "drop", "raise")
#: What happens when the index turns out to be built with another configuration mid-crawl.
ON_MISMATCH_CHOICES = ("close", "pass")


def default_workers() -> int:
    """One worker process on a multi-core machine keeps the reactor's core free for I/O."""
    return min(2, max(0, (os.cpu_count() or 1) - 1))


def default_index_url(*, create: bool = True) -> str:
    """Embedded SQLite index in the project data dir (found from ``scrapy.cfg`` in this
    folder or a parent), its directory created on demand: never by a read-only command."""
    if create:
        from scrapy.utils.project import data_path

        path = os.path.abspath(data_path(DEFAULT_INDEX_FILE))
        os.makedirs(os.path.dirname(path), exist_ok=True)
    else:
        path = os.path.abspath(os.path.join(_data_dir(), DEFAULT_INDEX_FILE))
    return f"sqlite:///{path}"


def _data_dir() -> str:
    """Scrapy's project data dir (``project_data_dir``) without creating it."""
    from scrapy.utils.conf import closest_scrapy_cfg, get_config
    from scrapy.utils.project import inside_project

    if not inside_project():
        return ".scrapy"
    cfg = get_config()
    if cfg.has_option("datadir", "default"):
        return str(cfg.get("datadir", "default"))
    found = closest_scrapy_cfg()
    return os.path.join(os.path.dirname(found), ".scrapy") if found else ".scrapy"


def index_url(settings: Mapping[str, Any], *, create: bool = True) -> str:
    """The index URL a crawl in this project uses (``SIMHASH_INDEX_URL`` or the default)."""
    return get_str(settings, "SIMHASH_INDEX_URL", None) or default_index_url(create=create)


def namespace(settings: Mapping[str, Any], spider_name: str | None) -> str:
    """``SIMHASH_NAMESPACE``, else the spider name, so spiders of a project do not mix."""
    return get_str(settings, "SIMHASH_NAMESPACE", None) or spider_name or "default"


def on_mismatch(settings: Mapping[str, Any]) -> str:
    """``SIMHASH_ON_INDEX_MISMATCH``: what pages meet once the index turns out unusable."""
    return get_choice(settings, "SIMHASH_ON_INDEX_MISMATCH", "close", ON_MISMATCH_CHOICES)


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

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> GuardConfig:
        return cls(
            on_error=get_choice(settings, "SIMHASH_ON_INDEX_ERROR", "pass", ON_ERROR_CHOICES),
            timeout=get_float(settings, "SIMHASH_INDEX_TIMEOUT_SECS", 10.0, minimum=0.001),
            retry_after=get_float(settings, "SIMHASH_INDEX_RETRY_AFTER_SECS", 1.0, minimum=0.0),
            log_interval=get_float(settings, "SIMHASH_ERROR_LOG_INTERVAL_SECS", 60.0, minimum=0.0),
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
    follow_duplicate_links: bool
    prefer_urls: tuple[str, ...]
    on_mismatch: str = "close"

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> MiddlewareConfig:
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
            canonicalize_keys=get_bool(settings, "SIMHASH_CANONICALIZE_KEYS", False),
            skip_unchanged=get_bool(settings, "SIMHASH_SKIP_UNCHANGED", False),
            use_canonical=get_bool(settings, "SIMHASH_USE_CANONICAL", True),
            follow_duplicate_links=get_bool(settings, "SIMHASH_FOLLOW_DUPLICATE_LINKS", False),
            prefer_urls=check_rules(get_list(settings, "SIMHASH_PREFER_URLS", PREFERENCE_RULES)),
            on_mismatch=on_mismatch(settings),
        )


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
    def from_settings(cls, settings: Mapping[str, Any]) -> PipelineConfig:
        return cls(
            text_fields=tuple(get_list(settings, "SIMHASH_ITEM_FIELDS", ())),
            title_field=get_str(settings, "SIMHASH_ITEM_TITLE_FIELD", None),
            key_field=get_str(settings, "SIMHASH_ITEM_KEY_FIELD", "url"),
            fingerprint_field=get_str(settings, "SIMHASH_ITEM_FINGERPRINT_FIELD", None),
            drop_duplicates=get_bool(settings, "SIMHASH_DROP_DUPLICATES", True),
            guard=GuardConfig.from_settings(settings),
            on_mismatch=on_mismatch(settings),
        )
