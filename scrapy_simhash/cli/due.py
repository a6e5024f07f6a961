"""``scrapy-simhash due``: the URLs due for a recrawl, listed, claimed or pushed to Redis."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import TYPE_CHECKING, Any

from scrapy_simhash._redis import mask_url, sync_client
from scrapy_simhash.cli._target import add_store_options, duration, open_store, store_place, when
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError

if TYPE_CHECKING:
    from scrapy_simhash.recrawl.store import RecrawlStore

#: How far ahead "when is the next URL due" looks: every scheduled URL.
_FOREVER = 100 * 365 * 86400.0


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "due",
        parents=[common],
        help="URLs due for a recrawl (list, claim, or push to a scrapy-redis start key)",
        description=(
            "List the URLs whose next visit is due now (or within --within seconds), "
            "earliest first. --claim leases them so other crawler processes skip them "
            "until they are fetched or the lease expires; --push-redis-key claims them and "
            "pushes them into a scrapy-redis spider's start-URL key. --add queues new URLs."
        ),
    )
    add_store_options(parser)
    parser.add_argument("--within", type=float, default=0.0, metavar="SECS",
                        help="also list URLs due in the next SECS seconds (listing only)")
    parser.add_argument("--limit", type=int, default=1000, help="at most this many URLs")
    parser.add_argument("--claim", action="store_true",
                        help="lease the listed URLs (SIMHASH_RECRAWL_LEASE_SECS)")
    parser.add_argument("--lease-secs", type=float, default=None, metavar="SECS",
                        help="lease length for --claim / --push-redis-key")
    parser.add_argument("--push-redis-key", metavar="KEY",
                        help="claim due URLs and push them to this Redis list (or set)")
    parser.add_argument("--redis", metavar="URL",
                        help="Redis of the scrapy-redis spider (default: the store URL)")
    parser.add_argument("--as-set", action="store_true",
                        help="SADD instead of RPUSH (scrapy-redis REDIS_START_URLS_AS_SET)")
    parser.add_argument("--add", metavar="FILE",
                        help="queue the URLs in FILE ('-' = stdin), one per line, due now")
    parser.add_argument("--json", action="store_true", help="print one JSON object per URL")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise ConfigurationError("--limit must be at least 1")
    if args.push_redis_key:
        _push_target(args)  # a bad target is an error before anything is claimed
    with open_store(args, create=bool(args.add)) as store:
        if args.add:
            added = store.add(_read_urls(args.add))
            print(f"queued {added} new URL(s)", file=sys.stderr)
            return 0
        if args.push_redis_key:
            return _push(args, store.claim_due(args.limit, lease_secs=args.lease_secs))
        due = (
            store.claim_due(args.limit, lease_secs=args.lease_secs)
            if args.claim
            else store.due(within=args.within, limit=args.limit)
        )
        if not due and not store.count():
            print(f"no recrawl state in {store_place(store)} (another spider's? pass --spider "
                  "NAME or --namespace NAME)", file=sys.stderr)
            return 1
        if not due:
            print(_nothing_due(store, args), file=sys.stderr)
    for item in due:
        if args.json:
            print(json.dumps({"url": item.url, "due": item.due, "visits": item.visits,
                              "etag": item.etag, "last_modified": item.last_modified}))
        else:
            print(f"{when(item.due)}\t{item.visits}\t{item.url}")
    return 0


def _nothing_due(store: RecrawlStore, args: argparse.Namespace) -> str:
    """Why nothing was listed: when the next URLs come due, or that none is scheduled."""
    window = "now" if args.claim or not args.within else f"within {duration(args.within)}"
    upcoming = store.due(within=_FOREVER, limit=args.limit)
    if not upcoming:
        return (
            f"nothing due {window}, and none of the {store.count()} URL(s) of "
            f"{store_place(store)} is scheduled again (retired after \"not found\" answers in "
            "a row: 'schedule URL' says so for one URL)"
        )
    first = upcoming[0].due
    ahead = max(0.0, first - time.time())
    count = f"{len(upcoming)}{'+' if len(upcoming) == args.limit else ''}"
    urls = "URL" if len(upcoming) == 1 else "URLs"
    return (
        f"nothing due {window}; next {count} {urls} due from {when(first)} (in "
        f"{duration(ahead)}; --within {math.ceil(ahead)} lists them)"
    )


def _read_urls(path: str) -> list[str]:
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    with stream:
        return [line.strip() for line in stream if line.strip() and not line.startswith("#")]


def _push_target(args: argparse.Namespace) -> str:
    target = args.redis or args.index_url
    if not target or target.split(":", 1)[0] not in ("redis", "rediss", "unix"):
        raise ConfigurationError(
            "--push-redis-key needs --redis redis://host:port/db (the scrapy-redis server)"
        )
    return str(target)


def _push(args: argparse.Namespace, due: list[Any]) -> int:
    target = _push_target(args)
    urls = [item.url for item in due]
    if urls:
        client = sync_client(target)
        try:
            if args.as_set:
                client.sadd(args.push_redis_key, *urls)
            else:
                client.rpush(args.push_redis_key, *urls)
        except Exception as exc:  # redis errors and socket errors alike
            raise IndexBackendError(f"could not push to {mask_url(target)}: {exc}") from exc
        finally:
            client.close()
    print(f"pushed {len(urls)} URL(s) to {args.push_redis_key}", file=sys.stderr)
    return 0
