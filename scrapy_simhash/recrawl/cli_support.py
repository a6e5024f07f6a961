"""Options shared by the recrawl sub-commands (``due``, ``schedule``): which store to open.

The commands must find the data a crawl wrote, so they read the same settings as the
crawl: inside a Scrapy project (``scrapy.cfg`` in this folder or a parent) the project's
settings and the spider's ``custom_settings`` (Scrapy is imported only then), and the same
``-s`` overrides. A read-only command never creates a store: it says where it looked.
"""

from __future__ import annotations

import argparse
import datetime
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scrapy_simhash._redis import mask_url
from scrapy_simhash._settings import get_str
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.sqlite import DEFAULT_URL, sqlite_path
from scrapy_simhash.recrawl.config import RecrawlConfig
from scrapy_simhash.recrawl.store import RecrawlStore, open_recrawl_store


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--index-url``, ``--spider`` and ``--namespace``."""
    parser.add_argument(
        "--index-url",
        metavar="URL",
        help="store URL (default SIMHASH_INDEX_URL, else the embedded SQLite file "
        ".scrapy/simhash/index.sqlite3)",
    )
    parser.add_argument(
        "--spider",
        metavar="NAME",
        help="the project's spider whose state to use: its settings and namespace "
        "(default: the project's only spider)",
    )
    parser.add_argument(
        "--namespace",
        metavar="NAME",
        help="namespace (default SIMHASH_NAMESPACE, else the spider name)",
    )


def find_project(start: str | os.PathLike[str] = ".") -> Path | None:
    """Return the ``scrapy.cfg`` of the project ``start`` is in (this folder or a parent)."""
    if os.environ.get("SCRAPY_SETTINGS_MODULE"):
        return Path(start).resolve()
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        cfg = candidate / "scrapy.cfg"
        if cfg.is_file():
            return cfg
    return None


def require_existing(url: str | None) -> None:
    """Refuse to open an embedded SQLite file that does not exist (it would be created)."""
    if url is not None and not url.startswith("sqlite:"):
        return
    path = sqlite_path(url or DEFAULT_URL)
    if path != ":memory:" and not os.path.exists(path):
        raise ConfigurationError(
            f"no SimHash state at {os.path.abspath(path)}: nothing was crawled with these "
            "settings yet. Run the command in the project folder (or a subfolder), or point "
            "it at the store the crawl used (--index-url, -s SIMHASH_INDEX_URL=...)"
        )


def open_store(
    args: argparse.Namespace, settings: Mapping[str, Any], *, create: bool = False
) -> RecrawlStore:
    """Open the store a crawl of the chosen spider uses; only ``create`` may make a new one."""
    url = args.index_url or get_str(settings, "SIMHASH_INDEX_URL", None)
    namespace = args.namespace or get_str(settings, "SIMHASH_NAMESPACE", None)
    spider = getattr(args, "spider", None)
    if (url is None or namespace is None or spider) and find_project() is not None:
        from scrapy_simhash import _scrapy_config, _scrapy_project

        project, spider = _scrapy_project.crawl_settings(
            spider, overrides=settings, namespace_given=namespace is not None
        )
        settings = project
        namespace = namespace or _scrapy_config.namespace(project, spider)
        url = url or _scrapy_config.index_url(project, create=create)
    namespace = namespace or spider or "default"
    if not create:
        require_existing(url)
    return open_recrawl_store(
        url, namespace=namespace, config=RecrawlConfig.from_settings(settings), clock=time.time
    )


def where(store: RecrawlStore) -> str:
    """Say which store and namespace a command read, for "nothing found" messages."""
    location = mask_url(store.url) if store.url else f"sqlite:///{sqlite_path(DEFAULT_URL)}"
    return f"namespace {store.namespace!r} of {location}"


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
