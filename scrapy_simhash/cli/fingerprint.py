"""``scrapy-simhash fingerprint PATH...``: one JSON line per page, in input order.

Each file's host template (learned from the files of its folder read before it, see
:func:`~scrapy_simhash.cli._documents.expand_hosts`) is set aside as in a crawl; a line says
``template_lines`` when it was. This command judges no copies, so every file read teaches
its host; ``--no-templates`` reads each file on its own.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._documents import (
    STDIN,
    Document,
    add_show_text_option,
    add_text_option,
    expand_hosts,
    fingerprinter_from_settings,
    load,
    wanted,
)
from scrapy_simhash.cli._progress import track
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.template import LocalMemory

# Bounds that keep the command under 512 MB whatever it reads. A page's extraction holds
# its parsed tree: 5 MB of tiny elements takes about 450 MB, so no page is read past the
# crawl's default limit, whatever SIMHASH_MAX_BODY_BYTES says (0 = no limit, in a crawl).
#: The most of one page the command reads (the default SIMHASH_MAX_BODY_BYTES).
MAX_BODY_BYTES = FingerprintConfig().max_body_bytes
#: Files one run reads at most: their list is held (and sorted) in memory.
MAX_FILES = 200_000
#: Hosts whose template is learned at most (8 KiB each); later hosts are read without one.
MAX_HOSTS = 10_000


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "fingerprint",
        parents=[common],
        help="print the SimHash fingerprint of pages as JSON Lines",
        description=(
            "Fingerprint HTML pages (or .txt main text) exactly as a crawl would. PATH is a "
            "file, a directory (walked recursively for .html/.htm/.txt, optionally .gz) or "
            "'-' for standard input. Exit status 1 when any input could not be read. "
            f"At most {MAX_FILES:,} files a run and {MAX_BODY_BYTES:,} bytes a page are read."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument(
        "--no-templates",
        action="store_true",
        help="read every file on its own, without learning its host's template",
    )
    add_text_option(parser)
    add_show_text_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fingerprinter = _bounded(fingerprinter_from_settings(settings_from_args(args)))
    _check_count(args.paths)
    templates = None if args.no_templates else LocalMemory(fingerprinter)
    failed = False
    paths = list(expand_hosts(args.paths))
    for path, host in track(paths, len(paths), "files"):
        document = _read(fingerprinter, path, args.text, host, templates)
        if templates is not None and document.page is not None and _learns(templates, host):
            templates.learn(host, document.page)
        failed = failed or document.error is not None
        line = document.as_json(fingerprinter.bits, show_text=args.show_text)
        sys.stdout.write(json.dumps(line, ensure_ascii=False))
        sys.stdout.write("\n")
        sys.stdout.flush()
    return 1 if failed else 0


def _learns(templates: LocalMemory, host: str) -> bool:
    """Whether ``host``'s template is learned: each costs 8 KiB, so MAX_HOSTS at most."""
    return host in templates.hosts or len(templates.hosts) < MAX_HOSTS


def _bounded(fingerprinter: Fingerprinter) -> Fingerprinter:
    """``fingerprinter`` reading at most MAX_BODY_BYTES of a page, said on stderr when the
    settings allow more (such a page's fingerprint may then differ from the crawl's)."""
    limit = fingerprinter.config.max_body_bytes
    if limit and limit <= MAX_BODY_BYTES:
        return fingerprinter
    print(
        f"warning: SIMHASH_MAX_BODY_BYTES={limit}{' (no limit)' if not limit else ''} is read "
        f"as {MAX_BODY_BYTES} here: the command line keeps under 512 MB whatever a page "
        "holds; a longer page is cut (its line says so)",
        file=sys.stderr,
    )
    return Fingerprinter(replace(fingerprinter.config, max_body_bytes=MAX_BODY_BYTES))


def _check_count(paths: Sequence[str]) -> None:
    """Refuse more than MAX_FILES inputs, counted without holding their names."""
    count = 0
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            for _, _, names in os.walk(path):
                count += sum(1 for name in names if wanted(name))
        else:
            count += 1
        if count > MAX_FILES:
            raise ConfigurationError(
                f"more than {MAX_FILES:,} files to fingerprint: their list is held in memory; "
                "run the command once per part (a folder at a time)"
            )


def _read(
    fingerprinter: Fingerprinter,
    path: str,
    text: bool,
    host: str,
    templates: LocalMemory | None,
) -> Document:
    """:func:`load` with bounds: a path that is no regular file (a FIFO would block on
    opening, a device never end) is an error line; standard input is read at most as far
    as a page is."""
    if path == STDIN:
        with _stdin_holding(_stdin_bytes(fingerprinter.config.max_body_bytes)):
            return load(fingerprinter, path, text=text, host=host, templates=templates)
    error = _not_a_file(path)
    if error:
        return Document(path, error=error, host=host)
    return load(fingerprinter, path, text=text, host=host, templates=templates)


def _not_a_file(path: str) -> str | None:
    """Why ``path`` is not read (None: a regular file, or missing: load says so)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device or a socket"
    return f"not a regular file but {kind}: pipe it to '-' (standard input) instead"


def _stdin_bytes(limit: int) -> bytes:
    """Standard input as far as a page is read: ``limit + 1`` bytes, as with a file (the
    rest is never read, so ``- < /dev/zero`` ends). A gzip stream is read as far as it can
    hold ``limit + 1`` bytes: deflate's stored blocks, its largest form, add 5 bytes in
    65,535."""
    stream = sys.stdin.buffer
    head = stream.read(2)
    size = limit + 1 if head != b"\x1f\x8b" else limit + limit // 64 + 65_536
    return head + stream.read(max(0, size - len(head)))


@contextlib.contextmanager
def _stdin_holding(data: bytes) -> Iterator[None]:
    """Standard input replaced by ``data`` while :func:`load` reads it."""
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = saved
