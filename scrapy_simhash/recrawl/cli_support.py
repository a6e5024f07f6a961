"""Options shared by the recrawl sub-commands (``due``, ``schedule``): which store to open.

The commands must find the data a crawl wrote, so they read the same settings as the
crawl (``SIMHASH_INDEX_URL``, ``SIMHASH_NAMESPACE``) and accept the same ``-s`` overrides.
"""

from __future__ import annotations

import argparse
import datetime
import time
from collections.abc import Mapping
from typing import Any

from scrapy_simhash._settings import get_str
from scrapy_simhash.recrawl.config import RecrawlConfig
from scrapy_simhash.recrawl.store import RecrawlStore, open_recrawl_store


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--index-url`` and ``--namespace``."""
    parser.add_argument(
        "--index-url",
        metavar="URL",
        help="store URL (default SIMHASH_INDEX_URL, else the embedded SQLite file "
        ".scrapy/simhash/index.sqlite3)",
    )
    parser.add_argument(
        "--namespace",
        metavar="NAME",
        help="namespace (default SIMHASH_NAMESPACE; a crawl without it uses the spider name)",
    )


def open_store(args: argparse.Namespace, settings: Mapping[str, Any]) -> RecrawlStore:
    """Open the store the options and settings name."""
    url = args.index_url or get_str(settings, "SIMHASH_INDEX_URL", None)
    namespace = args.namespace or get_str(settings, "SIMHASH_NAMESPACE", None) or "default"
    return open_recrawl_store(
        url, namespace=namespace, config=RecrawlConfig.from_settings(settings), clock=time.time
    )


def when(timestamp: float | None) -> str:
    """Format a timestamp for people (UTC, seconds)."""
    if timestamp is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def duration(seconds: float) -> str:
    """Format a duration in the largest sensible unit."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if abs(seconds) >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"
