"""The ``scrapy-simhash`` command line.

Each sub-command lives in its own module in this package and registers itself through a
module-level ``add_parser(subparsers, common)`` function; the dispatcher finds them with
``pkgutil`` so adding a command touches no shared file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any

from scrapy_simhash import __version__
from scrapy_simhash.exceptions import SimhashError


def parse_setting(text: str) -> tuple[str, str]:
    """Split one ``-s NAME=VALUE`` argument."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


def common_parser() -> argparse.ArgumentParser:
    """Options every sub-command accepts (``-s``), as a parent parser."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "-s",
        "--set",
        dest="settings",
        metavar="NAME=VALUE",
        action="append",
        type=parse_setting,
        default=[],
        help="override a SIMHASH_* setting, as with 'scrapy crawl -s' (repeatable)",
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Collect ``-s`` overrides into a settings mapping."""
    return dict(args.settings)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every sub-command module found in this package."""
    parser = argparse.ArgumentParser(
        prog="scrapy-simhash",
        description="Near-duplicate fingerprints, index and recrawl tools for Scrapy crawls.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = common_parser()
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.add_parser(subparsers, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SimhashError as exc:
        print(f"scrapy-simhash: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
