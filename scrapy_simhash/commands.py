"""``scrapy simhash``: inspect the near-duplicate index of a project from the command line.

It reads the project's settings (``settings.py``, ``-s``) and opens the same index a crawl of
that project uses, through the blocking index facade, so what it prints is what the crawl sees.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_simhash import _scrapy_project
from scrapy_simhash._redis import mask_url
from scrapy_simhash._scrapy_glue import index_kwargs
from scrapy_simhash._settings import get_bool
from scrapy_simhash.exceptions import SimhashError

if TYPE_CHECKING:
    from scrapy.settings import Settings

ACTIONS = ("stats", "lookup", "similar", "reset")


class SimhashCommand(ScrapyCommand):
    """Show index statistics, a URL's stored fingerprint, or the near-duplicates of a page."""

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "stats | lookup URL | similar URL|FILE | reset [options]"

    def short_desc(self) -> str:
        return "Inspect or reset the SimHash state (stats, lookup, similar, reset)"

    def long_desc(self) -> str:
        return (
            "stats: number of fingerprints in the index. "
            "lookup URL: the fingerprint stored for URL, or the page it was dropped as a "
            "near-duplicate of. "
            "similar URL|FILE: stored pages within SIMHASH_MAX_DISTANCE bits of a stored URL "
            "or of a local HTML file. "
            "reset: clear everything the namespace holds (index and recrawl schedule) and "
            "rebuild the index with the current settings. The store, namespace and settings "
            "are those a crawl of the spider uses (the project found from scrapy.cfg in this "
            "folder or a parent, the spider's custom_settings, -s options; SIMHASH_INDEX_URL, "
            "SIMHASH_NAMESPACE or the spider name)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--spider", metavar="NAME", help="namespace of this spider (default: the only spider)"
        )
        parser.add_argument(
            "--namespace", metavar="NAME", help="this namespace (default: the spider's)"
        )
        parser.add_argument(
            "--items", action="store_true", help="use the item pipeline's index, not the pages'"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in ACTIONS:
            raise UsageError(f"first argument must be one of {', '.join(ACTIONS)}")
        action, rest = args[0], args[1:]
        if (action in ("stats", "reset")) != (not rest) or len(rest) > 1:
            raise UsageError("stats and reset take no argument; lookup and similar take one")
        if self.settings is None:  # set by scrapy.cmdline before run()
            raise UsageError("settings are not loaded")
        try:
            self.exitcode = _run(action, rest[0] if rest else "", self.settings, opts)
        except SimhashError as exc:
            print(f"scrapy simhash: error: {exc}")
            self.exitcode = 2


def _namespace(settings: Settings, spider: str | None, opts: argparse.Namespace) -> str:
    ns = _scrapy_project.namespace(settings, spider, opts.namespace)
    return f"{ns}:items" if opts.items else ns


def _run(action: str, target: str, settings: Settings, opts: argparse.Namespace) -> int:
    from scrapy_simhash.fingerprint import (
        FingerprintConfig,
        Fingerprinter,
        from_hex,
        to_hex,
    )
    from scrapy_simhash.index import open_index

    settings, spider = _scrapy_project.crawl_settings(
        opts.spider, base=settings, namespace_given=bool(opts.namespace)
    )
    fingerprinter = Fingerprinter(FingerprintConfig.from_settings(settings))
    bits = fingerprinter.bits
    options = index_kwargs(
        settings, namespace=_namespace(settings, spider, opts), bits=bits,
        scheme=fingerprinter.scheme,
    )
    if action == "reset":
        return _reset(settings, options)
    url = _scrapy_project.existing_index_url(settings)
    with open_index(url, **options) as index:
        if action == "stats":
            print(f"index: {mask_url(url)}  namespace: {options['namespace']}")
            print(f"fingerprints: {len(index)}")
            print(f"drop records: {index.drop_count()}")
            for name, value in sorted(index.stats().as_dict().items()):
                print(f"{name}: {value}")
            return 0
        key = _key(target, settings)
        if action == "lookup":
            return _lookup(index, key, bits)
        # similar
        if os.path.isfile(target):
            page = fingerprinter.fingerprint_page(Path(target).read_bytes())
            if page.fingerprint is None:
                print(f"{target}: no fingerprint ({page.reason})")
                return 1
            fp, own = page.fingerprint, None
        elif _looks_like_hex(target):
            fp, own = from_hex(target), None
        else:
            stored = index.get(key)
            if stored is None:
                print(f"{key}: not in the index (pass a local HTML file to fingerprint it)")
                return 1
            fp, own = stored, key
        print(f"fingerprint: {to_hex(fp, bits)}")
        matches = [m for m in index.query(fp) if m.key != own]
        for match in matches:
            print(f"{match.distance:>3}  {to_hex(match.fingerprint, bits)}  {match.key}")
        if not matches:
            print("no near-duplicates")
        return 0


def _lookup(index: Any, key: str, bits: int) -> int:
    """What the index knows of a URL: its fingerprint, or the page it was dropped as a copy of."""
    import time

    from scrapy_simhash.fingerprint import to_hex
    from scrapy_simhash.index.drops import kept_name

    fp = index.get(key)
    if fp is not None:
        print(f"{key}: {to_hex(fp, bits)}")
    record = index.drop_of(key)
    if record is not None:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record.at))
        name = kept_name(index.drop_of, key) or record.kept
        kept = index.get(name)
        now = f", now named {name}" if name != record.kept else ""
        print(
            f"{key}: near-duplicate of {record.kept} (distance {record.distance}, "
            f"dropped {when}{now})" + (f"; {name}: {to_hex(kept, bits)}" if kept else "")
        )
    if fp is None and record is None:
        print(f"{key}: not in the index")
        return 1
    return 0


def _reset(settings: Settings, options: dict[str, Any]) -> int:
    from scrapy_simhash.reset import reset_namespace

    namespace = options["namespace"]
    try:
        url = _scrapy_project.existing_index_url(settings)
    except SimhashError as exc:
        print(f"nothing to reset: {exc}")
        return 0
    cleared = reset_namespace(url, namespace, options)
    print(f"namespace {namespace!r} of {mask_url(url)} reset:")
    for part in cleared:
        print(f"  cleared {part}")
    return 0


def _key(target: str, settings: Settings) -> str:
    if get_bool(settings, "SIMHASH_CANONICALIZE_KEYS", False) and "://" in target:
        from w3lib.url import canonicalize_url

        return canonicalize_url(target)
    return target


def _looks_like_hex(text: str) -> bool:
    body = text.lower().removeprefix("0x")
    return 8 <= len(body) <= 32 and all(c in "0123456789abcdef" for c in body)
