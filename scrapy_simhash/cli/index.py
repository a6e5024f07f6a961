"""``stats``, ``lookup``, ``similar`` and ``reset``: the near-duplicate index of a crawl.

They open the index a crawl of the chosen spider uses (see :mod:`._target`), through the
blocking index, so what they print is what the crawl sees.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scrapy_simhash._redis import mask_url
from scrapy_simhash.cli._target import (
    Target,
    add_store_options,
    index_options,
    open_index,
    require_existing,
    resolve,
    when,
    where,
)
from scrapy_simhash.exceptions import SimhashError
from scrapy_simhash.fingerprint import from_hex, to_hex
from scrapy_simhash.index.base import IndexStats
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.settings import (
    backend_options,
    canonicalize_keys,
    fingerprint_config,
    preferred_hosts,
    recrawl_config,
)


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    stats = subparsers.add_parser(
        "stats",
        parents=[common],
        help="pages kept, near-duplicates dropped, URLs scheduled for recrawl and due now "
        "(the namespace, over all crawls)",
        description="What a crawl's namespace holds, over all the crawls that wrote it: "
        "the pages kept (one fingerprint each), the URLs dropped as near-duplicates when "
        "last fetched (their drop records), the URLs that reached the spider filed under "
        "another URL, the URLs the recrawl schedule holds and how many are due now. One "
        "crawl's own counts are the closing 'SimHash:' line of its log. --verbose adds the "
        "index's internals.",
    )
    add_store_options(stats, items=True)
    stats.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also the index's internals: band tables, layout and bucket sizes",
    )
    stats.set_defaults(func=run_stats)
    lookup = subparsers.add_parser(
        "lookup",
        parents=[common],
        help="the fingerprint stored for URL, or the page it was dropped as a copy of",
        description="What the namespace knows of URL: its fingerprint, the page it was "
        "dropped as a copy of, or the URL its page is filed under (it reached the spider "
        "and names a canonical URL, or a preferred URL took its cluster's name). Exit "
        "status 1 when it knows none of these; then, whether it was fetched at all.",
    )
    lookup.add_argument("url", metavar="URL")
    add_store_options(lookup, items=True)
    lookup.set_defaults(func=run_lookup)
    similar = subparsers.add_parser(
        "similar",
        parents=[common],
        help="stored pages within SIMHASH_MAX_DISTANCE bits of a URL, a file or a fingerprint",
        description="TARGET is a stored URL, a local HTML file (fingerprinted as the crawl "
        "would) or a hexadecimal fingerprint.",
    )
    similar.add_argument("target", metavar="URL|FILE|HEX")
    add_store_options(similar, items=True)
    similar.set_defaults(func=run_similar)
    reset = subparsers.add_parser(
        "reset",
        parents=[common],
        help="clear everything a namespace holds (index, drop records, URL rules, recrawl "
        "schedule)",
        description="Clear the index (rebuilt with the current settings), its drop records, "
        "its URL rules and the recrawl schedule of the namespace a crawl of the spider uses.",
    )
    add_store_options(reset, items=True)
    reset.add_argument(
        "--yes",
        action="store_true",
        help="reset a Redis namespace without asking (every crawler process sharing it "
        "loses its state); needed when standard input is not a terminal",
    )
    reset.set_defaults(func=run_reset)


#: URLs read at most to count the scheduled and the due ones (beyond: "N+").
_COUNT_CAP = 100_000
#: How far ahead "scheduled" looks: every URL with a next visit.
_FOREVER = 100 * 365 * 86400.0


def run_stats(args: argparse.Namespace) -> int:
    """What a user asks first; the index's internals only with --verbose.

    The records are read once (they are bounded by SIMHASH_DROP_RECORD_MAX_ENTRIES), so
    that "dropped" counts the URLs dropped, as a crawl's log and ``report`` do, not the
    filing and holder records kept beside them."""
    from scrapy_simhash.cli._progress import bar, counting
    from scrapy_simhash.cli._records import tally

    index, _, target = open_index(args)
    things = "items" if getattr(args, "items", False) else "pages"
    with index:
        kept = len(index)
        with bar(index.drop_count(), "records", desc="reading the drop records") as progress:
            records = tally(counting(index.drops(), progress))
        internals = index.stats() if args.verbose else None
    rows = [
        (f"{things} kept", str(kept), "one fingerprint each in the index"),
        (
            "near-duplicates dropped",
            str(len(records.dropped)),
            "URLs dropped when last fetched: 'lookup URL' says of what",
        ),
    ]
    if records.marked:
        rows.append(
            (
                "near-duplicates marked",
                str(len(records.marked)),
                "reached the spider marked as copies, not dropped (SIMHASH_DROP_DUPLICATES off)",
            )
        )
    if records.filed:
        rows.append(
            (
                "kept under another URL",
                str(len(records.filed)),
                "reached the spider, their page filed under the canonical or preferred URL",
            )
        )
    if things == "pages":
        rows.extend(_recrawl_rows(args, target))
    print(
        f"namespace {target.namespace!r} of {mask_url(target.index_url)}, over all crawls "
        "(one crawl's own counts: the closing 'SimHash:' line of its log)"
    )
    for label, value, note in rows:
        print(f"  {label:<26} {value:>8}" + (f"   ({note})" if note else ""))
    if internals is not None:
        print("index internals")
        for label, value, note in _internals(internals):
            print(f"  {label:<26} {value:>8}   ({note})")
    return 0


def _recrawl_rows(args: argparse.Namespace, target: Target) -> list[tuple[str, str, str]]:
    """URLs scheduled for a recrawl and due now, from the namespace's recrawl store."""
    from scrapy_simhash.recrawl.store import open_recrawl_store

    config = recrawl_config(target.settings)
    with open_recrawl_store(
        target.url,
        namespace=target.namespace,
        config=config,
        options=backend_options(target.settings),
    ) as store:
        tracked = store.count()
        if not tracked:
            why = "SIMHASH_RECRAWL_ENABLED is off" if not config.enabled else "none recorded"
            return [("URLs scheduled for recrawl", "0", why)]
        scheduled = len(store.due(within=_FOREVER, limit=_COUNT_CAP))
        due_now = len(store.due(limit=_COUNT_CAP))
    retired = tracked - scheduled if scheduled < _COUNT_CAP else 0
    return [
        (
            "URLs scheduled for recrawl",
            _capped(scheduled if retired else tracked),
            f'{retired} more retired after "not found" answers' if retired else "",
        ),
        ("due now", _capped(due_now), "'due' lists them" if due_now else ""),
    ]


def _capped(count: int) -> str:
    return f"{count}+" if count >= _COUNT_CAP else str(count)


def _internals(stats: IndexStats) -> list[tuple[str, str, str]]:
    """The band index's figures, each with what it means."""
    return [
        ("storage", stats.backend, "where the index lives"),
        ("band tables", str(stats.tables), "each fingerprint is filed once per table"),
        ("layout", stats.layout, "blocks the bits are cut into x blocks keying a table"),
        ("buckets", str(stats.buckets), "groups of band records, over all tables"),
        (
            "largest bucket",
            str(stats.largest_bucket),
            "band records in the fullest group: what one lookup may read at most",
        ),
        ("mean bucket", f"{stats.mean_bucket:.2f}", "band records per group, on average"),
    ]


def run_lookup(args: argparse.Namespace) -> int:
    """What the index knows of a URL, told as the crawl's log told it: its fingerprint,
    the page it was dropped as a copy of, or the URL its page is filed under."""
    index, fingerprinter, target = open_index(args)
    bits, key = fingerprinter.bits, _key(args.url, target.settings)
    with index:
        fp = index.get(key)
        record = index.drop_of(key)
        lines = [f"{key}: {to_hex(fp, bits)}"] if fp is not None else []
        if record is not None:
            hosts = preferred_hosts(target.settings)
            lines.append(_story(index, key, record, fp is not None, bits, hosts))
    if not lines:
        print(f"{key}: {_not_indexed(args, target, key)}")
        return 1
    print("\n".join(lines))
    return 0


def _story(
    index: Any,
    key: str,
    record: DropRecord,
    stored: bool,
    bits: int,
    hosts: tuple[str, ...] = (),
) -> str:
    """One line on what ``record`` says of ``key`` (``stored``: it has an entry; ``hosts``:
    SIMHASH_PREFERRED_HOSTS, which say why a page is filed under another host's URL)."""
    from scrapy_simhash.canonical import host_preferred
    from scrapy_simhash.cli._records import (
        DROPPED,
        FILED_ELSEWHERE,
        MARKED_COPY,
        OWN_SINCE,
        kind,
        took_name,
    )
    from scrapy_simhash.index.drops import (
        HELD_COPY,
        HELD_MARKED,
        copy_distance,
        holder_of,
        kept_name,
    )

    moment = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record.at))
    apart = f", signatures {record.apart} bits apart" if record.apart is not None else ""
    holder = holder_of(record)
    if holder is not None:
        head = (
            f"{key}: its page reached the spider as {holder}, fetched first and filed under "
            "this canonical URL; "
        )
        if record.distance == HELD_COPY:
            return f"{head}this URL was dropped as its copy (dropped {moment}{apart})"
        if record.distance == HELD_MARKED:
            return (
                f"{head}this URL was found its copy and reached the spider marked as one, not "
                f"dropped (SIMHASH_DROP_DUPLICATES off; marked {moment}{apart})"
            )
        return (
            f"{head}this URL itself was not fetched since, and is dropped as its copy while "
            "the page does not change"
        )

    def is_stored(url: str) -> bool:
        return index.get(url) is not None

    name = kept_name(index.drop_of, key, is_stored) or record.kept
    kept = index.get(name)
    at_name = f"; {name}: {to_hex(kept, bits)}" if kept is not None else ""
    what = kind(record, index.drop_of)
    if what == OWN_SINCE:
        return (
            f"{key}: a page of its own since {moment}, filed under this URL; it was a copy of "
            f"{record.kept} before, which takes the page back if fetched alike (a page has "
            "one history)"
        )
    if what == FILED_ELSEWHERE:
        there = index.drop_of(record.kept)
        if holder_of(there) == key:
            why = f"its canonical URL {record.kept}"
        elif host_preferred(name, key, hosts):
            why = f"{name}, on a preferred host (SIMHASH_PREFERRED_HOSTS)"
        elif there is not None and there.kept == key and kind(there, index.drop_of) == DROPPED:
            why = f"{name}, preferred to name its cluster (SIMHASH_PREFER_URLS)"
        else:
            why = name
        return f"{key}: reached the spider, its page filed under {why}{at_name}"
    if what == MARKED_COPY:
        return (
            f"{key}: near-duplicate of {_copied(index, key, record)} (distance "
            f"{copy_distance(record)}{apart}), reached the spider marked as one, not dropped "
            f"(SIMHASH_DROP_DUPLICATES off; marked {moment}){at_name}"
        )
    assert what == DROPPED
    if stored and took_name(key, record, index.drop_of):
        return (
            f"{key}: dropped as a near-duplicate of {record.kept}, which had reached the "
            f"spider (distance {record.distance}{apart}, dropped {moment}); its cluster is "
            "named by this URL since (SIMHASH_PREFER_URLS)"
        )
    if stored:
        return (
            f"{key}: dropped as a near-duplicate of {record.kept} (dropped {moment}), fetched "
            "since and kept under its own URL; the record goes at its next visit"
        )
    now = f", now named {name}" if name != record.kept else ""
    return (
        f"{key}: near-duplicate of {_copied(index, key, record)} (distance "
        f"{record.distance}{apart}, dropped {moment}{now}){at_name}"
    )


def _copied(index: Any, key: str, record: DropRecord) -> str:
    """What ``key`` copies, as the log named it: the URL fetched first when a copy
    brought the page filed under the canonical URL ``record.kept``."""
    from scrapy_simhash.index.drops import holder_of

    first = holder_of(index.drop_of(record.kept))
    if first is not None and first != key:
        return f"{first}, fetched first and kept under its canonical URL {record.kept}"
    return record.kept


def _not_indexed(args: argparse.Namespace, target: Target, key: str) -> str:
    """Why a URL has neither a fingerprint nor a drop record, as far as the stores know:
    never fetched, fetched without a page to fingerprint, or fetched without a fingerprint.
    The recrawl store records every fetch (its status and fingerprint), not the reason a
    page got no fingerprint."""
    from scrapy_simhash.recrawl.store import open_recrawl_store

    place = where(target.url, target.namespace)
    if getattr(args, "items", False):
        return (
            f"not in the index of {place}: no item with this key was kept or dropped (an item "
            "without enough text in SIMHASH_ITEM_FIELDS gets no fingerprint, and items leave "
            "no record of that)"
        )
    config = recrawl_config(target.settings)
    if not config.enabled:
        return (
            f"not in the index of {place}: never fetched, or fetched without a fingerprint "
            "(with SIMHASH_RECRAWL_ENABLED off no store records fetches, which would tell which)"
        )
    with open_recrawl_store(
        target.url,
        namespace=target.namespace,
        config=config,
        options=backend_options(target.settings),
    ) as store:
        state = store.get(key)
    if state is None:
        return (
            f"not in the index: never fetched by a crawl of {place} (no fingerprint, no drop "
            "record and no recrawl history; another spider's? pass --spider NAME)"
        )
    if not state.visits:
        return f"not in the index: not fetched yet, queued for a first fetch (due {when(state.next_due)})"
    fetched = (
        f"fetched {state.visits} time(s), last {when(state.last_fetch)} with status {state.status}"
    )
    if state.status == 0 or (state.status is not None and not 200 <= state.status < 400):
        answer = "the download failed" if state.status == 0 else "no page came back"
        retired = "; retired, not fetched again" if state.retired else ""
        return f"not in the index: {fetched}: {answer}, so nothing to fingerprint{retired}"
    if state.fingerprint is not None:
        return (
            f"not in the index: {fetched} and fingerprinted, but it has no entry: expired "
            "under SIMHASH_INDEX_TTL_SECS, removed, or refused because a distinct page "
            "holds its very fingerprint (a short page whose digest another page's text and "
            "title share, its whole text not alike). The store does not record which"
        )
    return (
        f"not in the index: {fetched}, but never fingerprinted: no text of its own (a page with "
        "too little of it still gets an exact digest), a body that is not a readable page, or "
        "a fingerprint a distinct page holds. The store does not "
        "record which: the crawl puts the reason in response.meta['simhash']['reason'], and "
        "'scrapy-simhash fingerprint' on a saved copy of the page prints it"
    )


def run_similar(args: argparse.Namespace) -> int:
    """The candidates within the radius, each with the second test's verdict on it as the
    crawl would give it (a hex fingerprint has no signature: candidates only)."""
    from scrapy_simhash.cli._records import FILED_ELSEWHERE, kind
    from scrapy_simhash.confirm import Signer, confirms, score
    from scrapy_simhash.index.drops import kept_name

    def is_stored(url: str) -> bool:
        return index.get(url) is not None

    index, fingerprinter, target = open_index(args)
    bits, text = fingerprinter.bits, args.target
    signature: int | None = None
    with index:
        if os.path.isfile(text):
            page = fingerprinter.fingerprint_page(Path(text).read_bytes())
            if page.fingerprint is None:
                print(f"{text}: no fingerprint ({page.reason})")
                return 1
            fp, own = page.fingerprint, None
            signature = Signer(index.confirm_key).sign(page.evidence)
        elif _looks_like_hex(text):
            fp, own = from_hex(text), None
        else:
            key = _key(text, target.settings)
            stored = index.entry(key)
            name = kept_name(index.drop_of, key, is_stored) if stored is None else None
            if stored is None and name is not None and name != key:
                record = index.drop_of(key)
                filed = record is not None and kind(record, index.drop_of) == FILED_ELSEWHERE
                how = (
                    "reached the spider, its page filed under"
                    if filed
                    else ("dropped as a copy of")
                )
                print(f"{key}: {how} {name}; its neighbours:")
                key, stored = name, index.entry(name)
            if stored is None:
                print(f"{key}: not in the index (pass a local HTML file to fingerprint it)")
                return 1
            (fp, signature), own = stored, key
        print(f"fingerprint: {to_hex(fp, bits)}")
        matches = [m for m in index.query(fp) if m.key != own]
        limit = index.config.confirm_distance
    for match in matches:
        if signature is None:
            test = "candidate (no signature to confirm it)"
        elif confirms(signature, match.signature, limit):
            test = "copy: confirmed by the second test"
        else:
            apart = score(signature, match.signature)
            test = "distinct: set apart by the second test" + (
                f" (signatures {apart} bits apart, {limit} confirm)"
                if apart is not None
                else " (exact digests differ)"
            )
        print(f"{match.distance:>3}  {to_hex(match.fingerprint, bits)}  {match.key}  {test}")
    if not matches:
        print("no near-duplicates")
    return 0


def run_reset(args: argparse.Namespace) -> int:
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.reset import reset_namespace

    target = resolve(args)
    try:
        require_existing(target.url)
    except SimhashError as exc:
        print(f"nothing to reset: {exc}")
        return 0
    url = target.index_url
    if not _reset_agreed(args, url, target.namespace):
        return 2
    fingerprinter = Fingerprinter(fingerprint_config(target.settings))
    cleared = reset_namespace(url, target.namespace, index_options(target, fingerprinter))
    print(f"namespace {target.namespace!r} of {mask_url(url)} reset:")
    for part in cleared:
        print(f"  cleared {part}")
    return 0


def _reset_agreed(args: argparse.Namespace, url: str, namespace: str) -> bool:
    """Whether to reset ``namespace``: a Redis namespace is shared by every crawler process
    pointed at that server, so a reset asks first on a terminal, and elsewhere (a script,
    a pipe) needs ``--yes``; a file of the project's own (SQLite) is reset as asked."""
    from scrapy_simhash._redis import REDIS_SCHEMES

    if args.yes or url.split(":", 1)[0] not in REDIS_SCHEMES:
        return True
    shared = (
        f"namespace {namespace!r} of {mask_url(url)} is shared by every crawler process using "
        "that Redis: a reset clears its fingerprints, drop records, URL rules, host templates "
        "and recrawl schedule for all of them"
    )
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            f"reset: not done: {shared}. Standard input is not a terminal to ask on: pass "
            "--yes to reset it",
            file=sys.stderr,
        )
        return False
    try:
        answer = input(f"{shared}. Reset it? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("reset: not done", file=sys.stderr)
    return False


def _key(target: str, settings: Mapping[str, Any]) -> str:
    """The index key of a URL as the crawl wrote it (canonical when it canonicalises keys)."""
    if canonicalize_keys(settings) and "://" in target:
        from w3lib.url import canonicalize_url

        return canonicalize_url(target)
    return target


def _looks_like_hex(text: str) -> bool:
    body = text.lower().removeprefix("0x")
    return 8 <= len(body) <= 32 and all(c in "0123456789abcdef" for c in body)
