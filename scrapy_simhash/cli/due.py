"""``scrapy-simhash due``: the URLs due for a recrawl, listed, claimed or pushed to Redis."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import stat
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from scrapy_simhash._redact import scrub
from scrapy_simhash._redis import mask_url, sync_client
from scrapy_simhash.cli._target import add_store_options, duration, open_store, store_place, when
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError

if TYPE_CHECKING:
    from scrapy_simhash.recrawl.store import RecrawlStore

#: How far ahead "when is the next URL due" looks: every scheduled URL.
_FOREVER = 100 * 365 * 86400.0

#: Bounds of what the command reads and holds, so that it stays far under 512 MB whatever
#: it is given (``--add /dev/zero`` once grew to 9 GB looking for the end of its first line).
#: A line longer than this is no URL a crawl fetches (browsers and servers stop near 8 KB).
MAX_LINE_BYTES = 8192
#: URLs one ``--add`` queues at most: they are all checked before the first is queued.
MAX_ADD_URLS = 1_000_000
#: Bytes one ``--add`` reads at most (a million URLs of 64 characters).
MAX_ADD_BYTES = 64 * 1024 * 1024
#: URLs queued per call to the store (its seeds are built per call).
_ADD_BATCH = 10_000
#: The largest ``--limit``: a batch is held in memory and printed at once.
MAX_LIMIT = 100_000
#: The longest lease: a URL leased for longer is as good as forgotten.
MAX_LEASE_SECS = 365 * 86400.0


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
    parser.add_argument(
        "--within",
        type=float,
        default=0.0,
        metavar="SECS",
        help="also list URLs due in the next SECS seconds (listing only)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=1000,
        help=f"at most this many URLs (default 1000, at most {MAX_LIMIT:,})",
    )
    parser.add_argument(
        "--claim", action="store_true", help="lease the listed URLs (SIMHASH_RECRAWL_LEASE_SECS)"
    )
    parser.add_argument(
        "--lease-secs",
        type=float,
        default=None,
        metavar="SECS",
        help="lease length for --claim / --push-redis-key",
    )
    parser.add_argument(
        "--push-redis-key",
        metavar="KEY",
        help="claim due URLs and push them to this Redis list (or set)",
    )
    parser.add_argument(
        "--redis", metavar="URL", help="Redis of the scrapy-redis spider (default: the store URL)"
    )
    parser.add_argument(
        "--as-set",
        action="store_true",
        help="SADD instead of RPUSH (scrapy-redis REDIS_START_URLS_AS_SET)",
    )
    parser.add_argument(
        "--add",
        metavar="FILE",
        help="queue the http(s) URLs in FILE ('-' = stdin), one per line, due "
        f"now (at most {MAX_ADD_URLS:,} URLs of {MAX_LINE_BYTES:,} bytes)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per URL")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    _check_numbers(args)
    if args.within and (args.claim or args.push_redis_key):
        # --within widens a listing only: a claim takes the URLs due now.
        print(
            "note: --within is ignored with --claim and --push-redis-key: only URLs due now "
            "are claimed (--within without them lists the later ones)",
            file=sys.stderr,
        )
    if args.push_redis_key:
        _push_target(args)  # a bad target is an error before anything is claimed
    # Every URL is read and checked before the store is opened: a bad line queues nothing.
    urls = _read_urls(args.add) if args.add else []
    with open_store(args, create=bool(args.add)) as store:
        if args.add:
            added = sum(
                store.add(urls[at : at + _ADD_BATCH]) for at in range(0, len(urls), _ADD_BATCH)
            )
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
            print(
                f"no recrawl state in {store_place(store)} (another spider's? pass --spider "
                "NAME or --namespace NAME)",
                file=sys.stderr,
            )
            return 1
        if not due:
            print(_nothing_due(store, args), file=sys.stderr)
    for item in due:
        if args.json:
            print(
                json.dumps(
                    {
                        "url": item.url,
                        "due": item.due,
                        "visits": item.visits,
                        "etag": item.etag,
                        "last_modified": item.last_modified,
                    }
                )
            )
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
            f'{store_place(store)} is scheduled again (retired after "not found" answers in '
            "a row: 'schedule URL' says so for one URL)"
        )
    first = upcoming[0].due
    ahead = max(0.0, first - time.time())
    count = f"{len(upcoming)}{'+' if len(upcoming) == args.limit else ''}"
    urls = "URL" if len(upcoming) == 1 else "URLs"
    # --within lists only: a claim can take them once they are due, not before.
    hint = (
        f"none can be claimed before then; 'due --within {math.ceil(ahead)}' without "
        "--claim lists them"
        if args.claim
        else f"--within {math.ceil(ahead)} lists them"
    )
    return (
        f"nothing due {window}; next {count} {urls} due from {when(first)} (in "
        f"{duration(ahead)}; {hint})"
    )


def _check_numbers(args: argparse.Namespace) -> None:
    """Refuse numbers the command cannot act on sensibly (NaN, infinite, out of range)."""
    if not 1 <= args.limit <= MAX_LIMIT:
        raise ConfigurationError(
            f"--limit must be between 1 and {MAX_LIMIT:,} (a batch is held in memory and "
            f"printed at once; run the command again for more), got {args.limit}"
        )
    if not (math.isfinite(args.within) and 0 <= args.within <= _FOREVER):
        raise ConfigurationError(
            f"--within must be a number of seconds between 0 and {_FOREVER:.0f} (100 "
            f"years), got {args.within}"
        )
    lease = args.lease_secs
    if lease is not None and not (math.isfinite(lease) and 0 < lease <= MAX_LEASE_SECS):
        raise ConfigurationError(
            f"--lease-secs must be a number of seconds above 0 and at most "
            f"{MAX_LEASE_SECS:.0f} (a year), got {lease}"
        )


def bounded_lines(
    path: str, *, what: str, max_line_bytes: int = MAX_LINE_BYTES, max_bytes: int | None = None
) -> Iterator[tuple[int, str]]:
    """``(line number, line without its end)`` of a text file or stdin (``-``), read with
    bounds: a line longer than ``max_line_bytes``, more than ``max_bytes`` in all, a line
    that is not UTF-8, or a path that is a device, a socket or a directory is a
    ConfigurationError naming ``what``, the file and the line (``max_bytes`` None:
    MAX_ADD_BYTES). A pipe is read (a shell's ``<(...)`` is one), under the same bounds.
    """
    max_bytes = MAX_ADD_BYTES if max_bytes is None else max_bytes
    name = "standard input" if path == "-" else path
    if path != "-":
        _check_readable(path, what)
    try:
        stream: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise ConfigurationError(f"{what} {name}: {exc.strerror or exc}") from None
    total = 0
    try:
        for number in itertools.count(1):
            raw = stream.readline(max_line_bytes + 2)  # the line, its "\r\n", one more byte
            if not raw:
                return
            total += len(raw)
            if len(raw.rstrip(b"\r\n")) > max_line_bytes:
                raise ConfigurationError(
                    f"{what} {name}: line {number} is longer than {max_line_bytes:,} bytes "
                    "(is it a text file with one entry a line?)"
                )
            if total > max_bytes:
                mib, rest = divmod(max_bytes, 2**20)
                size = f"{mib} MiB" if not rest else f"{max_bytes:,} bytes"
                raise ConfigurationError(
                    f"{what} {name}: more than {size}; split it and run the command once per part"
                )
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise ConfigurationError(
                    f"{what} {name}: line {number} is not UTF-8 text"
                ) from None
    finally:
        if path != "-":
            stream.close()


def _check_readable(path: str, what: str) -> None:
    """Refuse a device, a socket or a directory before opening it (``/dev/zero`` never
    ends, a socket or a device may block forever); a missing file is left to open()."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device or a socket"
        raise ConfigurationError(
            f"{what} {path} is {kind}, not a file: give a text file, or '-' for standard input"
        )


def check_url(url: str) -> str | None:
    """Why ``url`` cannot be queued (None: it can): an absolute http(s) URL with a host,
    no spaces or control characters, as a crawl would request it."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a port that is not a number raises
    except ValueError as exc:
        return f"it cannot be read ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return "it is not an absolute http:// or https:// URL"
    if not host:
        return "it names no host"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "it holds a space or a control character (percent-encode them: %20)"
    return None


def _read_urls(path: str) -> list[str]:
    """The URLs of ``path`` (``-``: stdin), one a line; blank lines and ``#`` comments
    are skipped. Every line is checked before any is queued."""
    urls: list[str] = []
    name = "standard input" if path == "-" else path
    for number, line in bounded_lines(path, what="--add"):
        url = line.strip()
        if not url or url.startswith("#"):
            continue
        problem = check_url(url)
        if problem:
            # Masked: a line with a password in it is said without it.
            shown = mask_url(url)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise ConfigurationError(
                f"--add {name}: line {number} ({shown!r}) cannot be queued: "
                f"{scrub(problem, url)}; "
                "nothing was queued"
            )
        if len(urls) == MAX_ADD_URLS:
            raise ConfigurationError(
                f"--add {name}: more than {MAX_ADD_URLS:,} URLs; split the file and add "
                "each part (nothing was queued)"
            )
        urls.append(url)
    return urls


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
            raise IndexBackendError(
                f"could not push to {mask_url(target)}: {scrub(str(exc), target)}"
            ) from exc
        finally:
            client.close()
    print(f"pushed {len(urls)} URL(s) to {args.push_redis_key}", file=sys.stderr)
    return 0
