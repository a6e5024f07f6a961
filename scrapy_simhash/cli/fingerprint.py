"""``scrapy-simhash fingerprint PATH...``: one JSON line per page, in input order.

Each file's host template (learned from the files of its folder read before it, see
:func:`~scrapy_simhash.cli._documents.expand_hosts`) is set aside as in a crawl; a line says
``template_lines`` when it was. This command judges no copies, so every file read teaches
its host; ``--no-templates`` reads each file on its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._documents import (
    add_text_option,
    expand_hosts,
    fingerprinter_from_settings,
    load,
)
from scrapy_simhash.cli._progress import track
from scrapy_simhash.template import LocalMemory


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "fingerprint",
        parents=[common],
        help="print the SimHash fingerprint of pages as JSON Lines",
        description=(
            "Fingerprint HTML pages (or .txt main text) exactly as a crawl would. PATH is a "
            "file, a directory (walked recursively for .html/.htm/.txt, optionally .gz) or "
            "'-' for standard input. Exit status 1 when any input could not be read."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument(
        "--no-templates", action="store_true",
        help="read every file on its own, without learning its host's template",
    )
    add_text_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fingerprinter = fingerprinter_from_settings(settings_from_args(args))
    templates = None if args.no_templates else LocalMemory(fingerprinter)
    failed = False
    paths = list(expand_hosts(args.paths))
    for path, host in track(paths, len(paths), "files"):
        document = load(fingerprinter, path, text=args.text, host=host, templates=templates)
        if templates is not None and document.page is not None:
            templates.learn(host, document.page)
        failed = failed or document.error is not None
        sys.stdout.write(json.dumps(document.as_json(fingerprinter.bits), ensure_ascii=False))
        sys.stdout.write("\n")
        sys.stdout.flush()
    return 1 if failed else 0
