"""``scrapy simhash``: the ``scrapy-simhash`` command line inside a Scrapy project.

The commands and their defaults are those of :mod:`scrapy_simhash.cli`; this adds only
what Scrapy knows: the project's settings (``settings.py``, ``-s``), to which the commands
that read a crawl's state add the spider's ``custom_settings``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError


class SimhashCommand(ScrapyCommand):
    """Fingerprints, near-duplicate index, recrawl schedule and report of a project."""

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "COMMAND [options]"

    def short_desc(self) -> str:
        return "Near-duplicate index, recrawl schedule and report of the project's crawls"

    def long_desc(self) -> str:
        from scrapy_simhash.cli import command_names

        return (
            f"The scrapy-simhash commands ({', '.join(command_names())}) with the project's settings and, for "
            "those reading a crawl's state, the spider's (--spider NAME). "
            "'scrapy simhash COMMAND --help' describes each command's options."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Scrapy's options, with ``-h``/``--help`` taken over: Scrapy would answer it
        itself with its generic help before the command runs, so ``scrapy simhash due
        --help`` passes it on to the command, which prints its own (as ``scrapy-simhash
        due --help`` does). Scrapy's parser resolves the conflict in favour of this one; a
        parser that does not keeps its own."""
        super().add_options(parser)
        # A parser that keeps its own help (not Scrapy's) refuses a second -h: left as is.
        with contextlib.suppress(argparse.ArgumentError):
            parser.add_argument(
                "-h",
                "--help",
                action="store_true",
                dest="simhash_help",
                help="show the help of COMMAND (or the list of commands) and exit",
            )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from scrapy_simhash.cli import main

        asked = bool(getattr(opts, "simhash_help", False))
        if not args and not asked:
            raise UsageError("name a command (scrapy simhash COMMAND; see scrapy simhash -h)")
        if self.settings is None:  # set by scrapy.cmdline before run()
            raise UsageError("settings are not loaded")
        argv = [*args, "--help"] if asked else args
        try:
            self.exitcode = main(argv, project_settings=self.settings, prog="scrapy simhash")
        except SystemExit as exc:  # argparse: --help or a usage error (printed already)
            self.exitcode = exc.code if isinstance(exc.code, int) else 2
        sys.stdout.flush()
