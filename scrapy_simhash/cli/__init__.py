"""The ``scrapy-simhash`` command line, which ``scrapy simhash`` runs too.

There is one implementation and one set of defaults: ``scrapy simhash COMMAND ...`` is
``scrapy-simhash COMMAND ...`` started with the project's settings (Scrapy's ``-s`` options
included), and the commands that act on a crawl's state add the spider's settings the way
a crawl does. Each sub-command lives in its own module in this package and registers itself through a
module-level ``add_parser(subparsers, common)`` function; the dispatcher finds them with
``pkgutil`` so adding a command touches no shared file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from scrapy_simhash import __version__
from scrapy_simhash.exceptions import IndexBackendError, SimhashError
from scrapy_simhash.settings.names import in_setting_names


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


def settings_from_args(args: argparse.Namespace) -> Mapping[str, Any]:
    """The settings of a command: ``-s`` overrides over the project's (``scrapy simhash``)."""
    overrides = dict(args.settings)
    base = getattr(args, "project_settings", None)
    if base is None:
        return overrides
    settings = base.copy()
    settings.setdict(overrides, priority="cmdline")
    return settings  # type: ignore[no-any-return]


def warn_unknown_settings(args: argparse.Namespace, prog: str) -> None:
    """Name misspelt ``SIMHASH_*`` settings (``-s`` and the project's), as a crawl does:
    an unknown name is ignored, and the command would run with the default unseen."""
    from scrapy_simhash.settings import unknown_settings

    names = [name for name, _ in args.settings]
    base = getattr(args, "project_settings", None)
    if base is not None:
        names.extend(name for name in base if isinstance(name, str))
    for message in unknown_settings(names):
        print(f"{prog}: warning: {message}", file=sys.stderr)


def store_advice(message: str) -> str:
    """What to check when a command's store failed (nothing was changed by the command)."""
    if "sqlite" in message.lower():
        return (
            "the store could not be used: check that the SQLite file is the one the crawl "
            "wrote (--index-url, SIMHASH_INDEX_URL), that you may read and write it and its "
            "folder, and that no other process holds it locked"
        )
    return (
        "the store did not answer: check that its server is running and reachable from "
        "here, and that the URL is right (--index-url or SIMHASH_INDEX_URL: host, port, "
        "database number, password)"
    )


def command_names() -> list[str]:
    """The sub-commands, in the order ``--help`` lists them."""
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def build_parser(prog: str = "scrapy-simhash") -> argparse.ArgumentParser:
    """Build the top-level parser with every sub-command module found in this package
    (``prog`` before the sub-commands are added: their usage lines start with it)."""
    parser = argparse.ArgumentParser(
        prog=prog,
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


def main(
    argv: Sequence[str] | None = None, *, project_settings: Any = None, prog: str | None = None
) -> int:
    """Run the command line; return the process exit status.

    ``project_settings`` (Scrapy ``Settings``): those of the project ``scrapy simhash``
    runs in, under ``-s`` and the spider's settings.
    """
    parser = build_parser(prog or "scrapy-simhash")
    args = parser.parse_args(argv)
    args.project_settings = project_settings
    warn_unknown_settings(args, parser.prog)
    try:
        return int(args.func(args) or 0)
    except IndexBackendError as exc:
        # A command makes one attempt: say what to check rather than wait for a next call.
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        print(f"{parser.prog}: {store_advice(str(exc))}", file=sys.stderr)
        return 1
    except SimhashError as exc:
        print(f"{parser.prog}: error: {in_setting_names(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
