"""``scrapy-simhash dedup PATH...``: group near-duplicate pages.

Grouping follows a crawl: pages are taken in input order, and a page joins the group of
the first kept page within distance k (found through the same index a crawl uses), or
starts a new group. Groups are therefore not transitive chains: a page is never more
than k bits from its group's first page.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._documents import (
    Document,
    add_distance_option,
    add_text_option,
    expand,
    fingerprinter_from_settings,
    load,
    max_distance,
)
from scrapy_simhash.cli._progress import track
from scrapy_simhash.fingerprint import Fingerprinter, to_hex


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "dedup",
        parents=[common],
        help="group near-duplicate pages",
        description=(
            "Fingerprint pages (files, directories walked recursively, or '-') and group "
            "those within Hamming distance k of a group's first page."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    add_distance_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--all", action="store_true", help="list pages without near-duplicates too"
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="draw a progress bar on stderr even when it is not a terminal",
    )
    add_text_option(parser)
    parser.set_defaults(func=run)


@dataclass
class Group:
    """Pages within k of the first one (its leader), with their distances to it."""

    fingerprint: int
    members: list[tuple[Document, int]] = field(default_factory=list)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    fingerprinter = fingerprinter_from_settings(settings)
    k = max_distance(args, settings)
    paths = list(expand(args.paths))
    documents = [
        load(fingerprinter, path, text=args.text)
        for path in track(paths, len(paths), "files", force=args.progress)
    ]
    groups = group(fingerprinter, documents, k)
    report = summarise(fingerprinter, documents, groups, k, show_all=args.all)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    return 1 if any(doc.error for doc in documents) else 0


def group(fingerprinter: Fingerprinter, documents: list[Document], k: int) -> list[Group]:
    """Leader clustering in input order through an in-memory near-duplicate index."""
    from scrapy_simhash.index import open_index

    groups: dict[str, Group] = {}
    leader_of: dict[str, str] = {}
    with open_index(
        "memory://", max_distance=k, bits=fingerprinter.bits, scheme=fingerprinter.scheme
    ) as index:
        for number, doc in enumerate(documents):
            fingerprint = doc.page.fingerprint if doc.page else None
            if fingerprint is None:
                continue
            key = str(number)  # paths may repeat
            match = index.check_and_add(key, fingerprint)
            if match is None:
                leader_of[key] = key
                groups[key] = Group(fingerprint, [(doc, 0)])
            else:
                leader = leader_of[match.key]
                leader_of[key] = leader
                distance = (groups[leader].fingerprint ^ fingerprint).bit_count()
                groups[leader].members.append((doc, distance))
    return list(groups.values())


def summarise(
    fingerprinter: Fingerprinter,
    documents: list[Document],
    groups: list[Group],
    k: int,
    *,
    show_all: bool,
) -> dict[str, Any]:
    bits = fingerprinter.bits
    shown = [g for g in groups if show_all or len(g.members) > 1]
    return {
        "k": k,
        "files": len(documents),
        "groups": [
            {
                "fingerprint": to_hex(g.fingerprint, bits),
                "members": [
                    {"path": doc.path, "distance": distance, "title": _title(doc)}
                    for doc, distance in g.members
                ],
            }
            for g in shown
        ],
        "duplicates": sum(len(g.members) - 1 for g in groups),
        "unique": sum(1 for g in groups if len(g.members) == 1),
        "skipped": [
            {"path": doc.path, "reason": doc.page.reason}
            for doc in documents
            if doc.page is not None and doc.page.fingerprint is None
        ],
        "errors": [{"path": doc.path, "error": doc.error} for doc in documents if doc.error],
    }


def _title(doc: Document) -> str:
    return doc.page.title if doc.page else ""


def render(report: dict[str, Any]) -> str:
    lines = []
    for number, g in enumerate(report["groups"], 1):
        lines.append(f"group {number}: {len(g['members'])} files, fingerprint {g['fingerprint']}")
        for member in g["members"]:
            title = f"  {member['title']}" if member["title"] else ""
            lines.append(f"  d={member['distance']:<3} {member['path']}{title}")
    lines.extend(f"no fingerprint: {i['path']}: {i['reason']}" for i in report["skipped"])
    lines.extend(f"unreadable: {i['path']}: {i['error']}" for i in report["errors"])
    lines.append(
        f"{report['files']} files: {report['duplicates']} near-duplicates (k={report['k']}), "
        f"{report['unique']} unique, {len(report['skipped'])} without fingerprint, "
        f"{len(report['errors'])} unreadable"
    )
    return "\n".join(lines)
