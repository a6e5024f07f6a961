"""Which state a command acts on: the store, namespace and settings of the crawl.

The commands must find the data a crawl wrote, so they read the same settings as the
crawl: inside a Scrapy project (``scrapy.cfg`` in this folder or a parent, or the settings
``scrapy simhash`` was started with) the project's settings and the spider's
``custom_settings`` (Scrapy is imported only then), and the same ``-s`` overrides. Both
command lines come here, so they cannot disagree. A read-only command never creates a
store: it says where it looked.
"""

from __future__ import annotations

import argparse
import datetime
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_simhash import settings as simhash_settings
from scrapy_simhash._redis import mask_url
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.sqlite import DEFAULT_URL, sqlite_path
from scrapy_simhash.settings import fingerprint_config, recrawl_config

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.index import NearDuplicateIndex
    from scrapy_simhash.recrawl.store import RecrawlStore


def add_store_options(parser: argparse.ArgumentParser, *, items: bool = False) -> None:
    """Add ``--index-url``, ``--spider`` and ``--namespace`` (and ``--items``)."""
    parser.add_argument(
        "--index-url",
        metavar="URL",
        help="store URL (default SIMHASH_INDEX_URL, else the embedded SQLite file "
        ".scrapy/simhash/index.sqlite3 of the project)",
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
    if items:
        parser.add_argument(
            "--items", action="store_true", help="the item pipeline's index, not the pages'"
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


@dataclass(frozen=True)
class Target:
    """The settings a crawl of the chosen spider runs with, its store URL and namespace."""

    settings: Mapping[str, Any]
    url: str | None  # None: the embedded SQLite file in the current folder
    namespace: str

    @property
    def index_url(self) -> str:
        """The URL to open (the embedded SQLite file when none is set)."""
        return self.url or DEFAULT_URL


def resolve(args: argparse.Namespace, *, create: bool = False) -> Target:
    """Find the crawl's settings, store and namespace from the options and the project."""
    overrides = dict(getattr(args, "settings", []))
    base = getattr(args, "project_settings", None)
    url = getattr(args, "index_url", None) or simhash_settings.index_url(overrides)
    namespace = args.namespace or simhash_settings.given_namespace(overrides)
    spider = args.spider
    settings: Mapping[str, Any] = overrides
    if base is not None or (
        (url is None or namespace is None or spider) and find_project() is not None
    ):
        from scrapy_simhash.glue import config, project

        settings, spider = project.crawl_settings(
            spider, base=base, overrides=overrides, namespace_given=namespace is not None
        )
        namespace = namespace or simhash_settings.namespace(settings, spider)
        url = url or config.index_url(settings, create=create)
    namespace = namespace or spider or "default"
    if getattr(args, "items", False):
        namespace = f"{namespace}:items"
    return Target(settings, url, namespace)


def open_store(args: argparse.Namespace, *, create: bool = False) -> RecrawlStore:
    """Open the recrawl store a crawl of the chosen spider uses; only ``create`` may make
    a new one."""
    from scrapy_simhash.recrawl.store import open_recrawl_store

    target = resolve(args, create=create)
    if not create:
        require_existing(target.url)
    return open_recrawl_store(
        target.url,
        namespace=target.namespace,
        config=recrawl_config(target.settings),
        clock=time.time,
        options=simhash_settings.backend_options(target.settings),
    )


def open_index(args: argparse.Namespace) -> tuple[NearDuplicateIndex, Fingerprinter, Target]:
    """Open the existing near-duplicate index a crawl of the chosen spider uses, with the
    fingerprinter of its settings (their bits and tokenizer must match the index's)."""
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.index import open_index as open_

    target = resolve(args)
    require_existing(target.url)
    fingerprinter = Fingerprinter(fingerprint_config(target.settings))
    index = open_(target.index_url, **index_options(target, fingerprinter))
    return index, fingerprinter, target


def index_options(target: Target, fingerprinter: Fingerprinter) -> dict[str, Any]:
    """``open_index`` keyword arguments (without the URL) of a target's index."""
    return simhash_settings.index_kwargs(
        target.settings,
        namespace=target.namespace,
        bits=fingerprinter.bits,
        scheme=fingerprinter.scheme,
    )


def where(url: str | None, namespace: str) -> str:
    """Say which store and namespace a command read, for "nothing found" messages."""
    location = mask_url(url) if url else f"sqlite:///{sqlite_path(DEFAULT_URL)}"
    return f"namespace {namespace!r} of {location}"


def store_place(store: RecrawlStore) -> str:
    """:func:`where` of an open recrawl store."""
    return where(store.url, store.namespace)


def when(timestamp: float | None) -> str:
    """Format a timestamp for people (UTC, seconds)."""
    if timestamp is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def duration(seconds: float) -> str:
    """Format a duration in the largest sensible unit."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if abs(seconds) >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"
