"""``upgrade``: carry state an earlier release wrote over to this version's.

Every store refuses an earlier release's state at open, naming this command
(:mod:`scrapy_simhash.old_state` says the rule, :mod:`scrapy_simhash.upgrade` does the
work).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy_simhash._redis import REDIS_SCHEMES, mask_url
from scrapy_simhash.cli._target import add_store_options, index_options, require_existing, resolve
from scrapy_simhash.exceptions import SimhashError
from scrapy_simhash.settings import backend_options, fingerprint_config


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    upgrade = subparsers.add_parser(
        "upgrade",
        parents=[common],
        help="carry state an earlier release wrote over to this version's (the recrawl "
        "history; the near-duplicate index is emptied)",
        description="Carry the recrawl schedule an earlier release wrote (each URL's learned "
        "change rate, visits and next visit) over to this version's layout, in batches, and "
        "empty the near-duplicate index and its drop records, whose fingerprints cannot be "
        "carried over (the next crawl rebuilds it). An SQLite file is upgraded whole; on "
        "Redis, the namespace (and its item pipeline's index). Stop the crawls using the "
        "store first. Run again after an interruption: it goes on where it stopped.",
    )
    add_store_options(upgrade)
    upgrade.add_argument(
        "--batch",
        type=int,
        default=None,
        metavar="N",
        help="URLs carried over per transaction or script call (default 10000)",
    )
    upgrade.set_defaults(func=run_upgrade)


def run_upgrade(args: argparse.Namespace) -> int:
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.upgrade import BATCH, upgrade

    target = resolve(args)
    try:
        require_existing(target.url)
    except SimhashError as exc:
        print(f"nothing to upgrade: {exc}")
        return 0
    batch = args.batch or BATCH
    if batch < 1:
        print("upgrade: --batch must be at least 1", file=sys.stderr)
        return 2
    url = target.index_url
    fingerprinter = Fingerprinter(fingerprint_config(target.settings))
    redis = url.split(":", 1)[0] in REDIS_SCHEMES
    place = f"namespace {target.namespace!r} of {mask_url(url)}" if redis else mask_url(url)

    def progress(moved: int) -> None:
        print(f"  {moved:,} recrawl states carried over", flush=True)

    done = upgrade(
        url,
        target.namespace,
        batch=batch,
        index_options=index_options(target, fingerprinter),
        options=backend_options(target.settings),
        progress=progress,
    )
    if not done.recrawl_states and not done.indexes_emptied:
        print(f"{place}: nothing to upgrade (no state of an earlier release)")
        return 0
    print(f"{place} upgraded: {done}")
    return 0
