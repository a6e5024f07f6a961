"""``scrapy-simhash schedule URL``: one page's change history, rate estimate and next visit."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from scrapy_simhash.cli._target import (
    add_store_options,
    duration,
    open_store,
    store_place,
    when,
)
from scrapy_simhash.recrawl.config import DAY
from scrapy_simhash.recrawl.estimate import irregular_rate
from scrapy_simhash.recrawl.policy import freshness
from scrapy_simhash.recrawl.state import PageState


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "schedule",
        parents=[common],
        help="one page's change history, estimated change rate and next visit",
        description=(
            "Show what the recrawl store knows about URL (the key the crawl used, by "
            "default the canonical URL): visits, detected changes, the estimated change "
            "rate, the interval chosen by the policy and when the page is next due."
        ),
    )
    parser.add_argument("url", metavar="URL")
    add_store_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        state = store.get(args.url)
        policy = store.config.effective_policy
        place = store_place(store)
    if state is None:
        named = _named_by(args)
        if named is not None:
            print(
                f"{args.url}: its page's history is under {named}, which names the page "
                f"now (`lookup {args.url}` says why): `schedule {named}`"
            )
        else:
            print(
                f"{args.url}: not in {place} (never fetched, or another spider's: pass "
                "--spider NAME)"
            )
        return 1
    report = describe(state, policy)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0


def _named_by(args: argparse.Namespace) -> str | None:
    """The URL naming the page ``args.url`` was dropped from or filed under (its history
    is there: a page has one), from the index's records; None when it has none."""
    from scrapy_simhash.cli._target import open_index
    from scrapy_simhash.index.drops import kept_name

    try:
        index, _, _ = open_index(args)
    except Exception:  # noqa: BLE001 (no index to ask: the store's answer stands)
        return None
    with index:
        return kept_name(index.drop_of, args.url, lambda url: index.get(url) is not None)


def describe(state: PageState, policy: str) -> dict[str, Any]:
    """Everything worth showing about one page, as a JSON-ready dict."""
    raw_rate = irregular_rate(state.history)
    return {
        "url": state.url,
        "visits": state.visits,
        "changes": state.changes,
        "first_fetch": state.first_fetch,
        "last_fetch": state.last_fetch,
        "last_status": state.status,
        "misses": state.misses,
        "failures": state.failures,
        "retired": state.retired,
        "fingerprint": None if state.fingerprint is None else format(state.fingerprint, "x"),
        "etag": state.etag,
        "last_modified": state.last_modified,
        "policy": policy,
        "rate_per_day": state.rate * DAY,
        "mle_rate_per_day_without_prior": raw_rate * DAY,
        "interval_secs": state.interval_secs,
        "expected_freshness": freshness(state.rate, state.interval_secs),
        "next_due": state.next_due,
        "due_in_secs": state.next_due - time.time(),
        "history": [{"after_secs": t, "changed": c} for t, c in state.history],
    }


def _next_visit(report: dict[str, Any]) -> str:
    if report["retired"]:
        return f'  retired after {report["misses"]} "not found" answers in a row: not revisited'
    failing = (
        f" ({report['failures']} failed fetch(es) in a row: retrying with backoff)"
        if report["failures"]
        else ""
    )
    return (
        f"  next visit {when(report['next_due'])} (in {duration(report['due_in_secs'])}){failing}"
    )


def render(report: dict[str, Any]) -> str:
    """Format :func:`describe` for a terminal."""
    if not report["visits"]:
        return (
            f"{report['url']}\n  not fetched yet: queued, due {when(report['next_due'])} "
            f"(in {duration(report['due_in_secs'])})"
        )
    changed = "".join("X" if h["changed"] else "." for h in report["history"])
    lines = [
        report["url"],
        (
            f"  visits {report['visits']}, changes {report['changes']} "
            f"(first {when(report['first_fetch'])}, last {when(report['last_fetch'])}, "
            f"status {report['last_status']})"
        ),
        f"  recent comparisons (oldest first, X = changed): {changed or '-'}",
        (
            f"  change rate {report['rate_per_day']:.3g}/day with prior, "
            f"{report['mle_rate_per_day_without_prior']:.3g}/day from history alone"
        ),
        (
            f"  policy {report['policy']}: every {duration(report['interval_secs'])}, "
            f"expected freshness {report['expected_freshness']:.2f}"
        ),
        _next_visit(report),
        (
            f"  validators: ETag {report['etag'] or '-'}, Last-Modified "
            f"{report['last_modified'] or '-'}"
        ),
    ]
    return "\n".join(lines)
