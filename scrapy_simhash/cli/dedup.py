"""``scrapy-simhash dedup PATH...``: group near-duplicate pages.

Grouping follows a crawl: pages are taken in input order, and a page joins the group of
the closest kept page within distance k whose signature confirms it (both tests of a
crawl, asked by the crawl's own judge, :mod:`scrapy_simhash.judge`), or starts a new group. Groups are therefore not
transitive chains: a page is never more than k bits from the page it joined.

Each host's template is learned from its files as a crawl learns it from its pages, the
folder telling hosts apart (:func:`~scrapy_simhash.cli._documents.expand_hosts`): a page
whose main text is its host's template is read by its other text, and a match between two
files of one host is looked at again (``--no-templates`` judges every file on its own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass, field, replace
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._documents import (
    COMMAND_LINE_KEY,
    Document,
    add_distance_option,
    add_text_option,
    expand_hosts,
    fingerprinter_from_settings,
    load,
    max_distance,
)
from scrapy_simhash.cli._progress import track
from scrapy_simhash.fingerprint import Fingerprinter, to_hex
from scrapy_simhash.judge import Judge, LocalTemplates
from scrapy_simhash.settings import confirm_distance, index_options
from scrapy_simhash.simhash import from_hex
from scrapy_simhash.template import LocalMemory
from scrapy_simhash.verdict import DUPLICATE, UNIQUE, Unguarded, VerdictStep


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
    parser.add_argument("--all", action="store_true", help="list pages without near-duplicates too")
    parser.add_argument(
        "--progress",
        action="store_true",
        help="draw a progress bar on stderr even when it is not a terminal",
    )
    parser.add_argument(
        "--no-templates",
        action="store_true",
        help="judge every file on its own, without learning its host's template",
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
    paths = list(expand_hosts(args.paths))
    templates = None if args.no_templates else LocalMemory(fingerprinter)
    exact = min(int(index_options(settings)["exact_distance"]), k)
    groups = Grouping(fingerprinter, k, templates, exact, confirm_distance(settings))
    documents = []
    for path, host in track(paths, len(paths), "files", force=args.progress):
        document = load(fingerprinter, path, text=args.text, host=host)
        documents.append(groups.add(document))
    report = summarise(fingerprinter, documents, groups.close(), k, show_all=args.all)
    report["rejected_by_second_test"] = groups.rejected
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    return 1 if any(doc.error for doc in documents) else 0


class Grouping:
    """Leader clustering in input order, each file judged by the crawl's judge.

    Files are added one by one, each judged against those before it through an in-memory
    index and the host templates learned from the files kept so far: the steps and the
    rule of what teaches a template are the crawl's own (:class:`~scrapy_simhash.judge.
    Judge`), so a folder judged here and fetched by a crawl gets the same decisions.
    """

    def __init__(
        self,
        fingerprinter: Fingerprinter,
        k: int,
        templates: LocalMemory | None,
        exact_distance: int | None = None,
        limit: int | None = None,
    ) -> None:
        from scrapy_simhash.confirm import CONFIRM_DISTANCE
        from scrapy_simhash.index import open_async_index

        self.groups: dict[str, Group] = {}
        self.leader_of: dict[str, str] = {}
        self.limit = CONFIRM_DISTANCE if limit is None else limit
        # The judge is a coroutine; files are added from plain code (and tests), one
        # loop of this grouping's own runs each.
        self._loop = asyncio.new_event_loop()
        self.index = self._loop.run_until_complete(
            open_async_index(
                "memory://",
                max_distance=k,
                exact_distance=exact_distance,
                bits=fingerprinter.bits,
                scheme=fingerprinter.scheme,
                confirm_distance=self.limit,
                new_key=lambda: COMMAND_LINE_KEY,
            )
        )
        #: The host each file's key stands for (paths may repeat: keys are numbers).
        self.host_by_key: dict[str, str] = {}
        # No schedule: a file is read once, and no key is judged twice.
        step = VerdictStep(Unguarded(self.index), None, bits=fingerprinter.bits, change_distance=0)
        local = (
            None if templates is None else LocalTemplates(templates, self.host_by_key.__getitem__)
        )
        self.judge = Judge(step, local)
        #: Candidates the second test turned away, over all files (as the crawl counts them).
        self.rejected = 0

    def add(self, doc: Document) -> Document:
        """Judge ``doc`` and file it in a group; returns it as judged (its page with its
        host's template set aside), which is what a report should say of it."""
        if doc.page is None:
            return doc
        key = str(len(self.host_by_key))
        self.host_by_key[key] = doc.host
        verdict = self._loop.run_until_complete(
            self.judge.page(key, key, doc.page, None, record_drops=False)
        )
        self.rejected += verdict.rejected
        judged = replace(doc, page=verdict.page)
        if verdict.outcome == UNIQUE:
            fingerprint = from_hex(str(verdict.fingerprint))
            self.leader_of[key] = key
            self.groups[key] = Group(fingerprint, [(judged, 0)])
        elif verdict.outcome == DUPLICATE:
            leader = self.leader_of[str(verdict.duplicate_of)]
            self.leader_of[key] = leader
            distance = self.groups[leader].fingerprint ^ from_hex(str(verdict.fingerprint))
            self.groups[leader].members.append((judged, distance.bit_count()))
        return judged

    def close(self) -> list[Group]:
        self._loop.run_until_complete(self.index.close())
        self._loop.close()
        return list(self.groups.values())


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
        # kept + duplicates + skipped + errors = files, in the crawl's words.
        "kept": len(groups),
        "kept_with_duplicates": sum(1 for g in groups if len(g.members) > 1),
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
        size = len(g["members"])
        lines.append(
            f"group {number}: {size} file{'s' if size != 1 else ''}, fingerprint {g['fingerprint']}"
        )
        for member in g["members"]:
            title = f"  {member['title']}" if member["title"] else ""
            lines.append(f"  d={member['distance']:<3} {member['path']}{title}")
    lines.extend(f"no fingerprint: {i['path']}: {i['reason']}" for i in report["skipped"])
    lines.extend(f"unreadable: {i['path']}: {i['error']}" for i in report["errors"])
    lines.append(
        f"{report['files']} files: {report['kept']} kept ({report['kept_with_duplicates']} "
        f"with near-duplicates, {report['unique']} unique), {report['duplicates']} dropped as "
        f"near-duplicates (k={report['k']}), {len(report['skipped'])} kept without a "
        f"fingerprint, {len(report['errors'])} unreadable; "
        f"{report['rejected_by_second_test']} candidate(s) set apart by the second test"
    )
    return "\n".join(lines)
