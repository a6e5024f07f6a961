"""``scrapy-simhash fingerprint PATH...``: one JSON line per page, in input order."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._documents import (
    add_text_option,
    expand,
    fingerprinter_from_settings,
    load,
)
from scrapy_simhash.cli._progress import track


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
    add_text_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fingerprinter = fingerprinter_from_settings(settings_from_args(args))
    failed = False
    paths = list(expand(args.paths))
    for path in track(paths, len(paths), "files"):
        document = load(fingerprinter, path, text=args.text)
        failed = failed or document.error is not None
        sys.stdout.write(json.dumps(document.as_json(fingerprinter.bits), ensure_ascii=False))
        sys.stdout.write("\n")
        sys.stdout.flush()
    return 1 if failed else 0
