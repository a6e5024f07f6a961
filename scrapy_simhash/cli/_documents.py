"""Inputs of the fingerprint, compare and dedup commands: files, directories, stdin.

Every command reads pages the same way and fingerprints them exactly as a crawl would
(same settings, same extraction, same body-size limit), so a fingerprint printed here
can be looked up in a crawl's index.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint, to_hex
from scrapy_simhash.settings import fingerprint_config
from scrapy_simhash.template import LocalMemory

STDIN = "-"
_SUFFIXES = (".html", ".htm", ".txt")
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Document:
    """One input: its fingerprint and main text, or why it could not be read."""

    path: str
    page: PageFingerprint | None = None
    text: str = ""
    error: str | None = None
    #: The site the file stands for, whose template it shares (see :func:`expand_hosts`).
    host: str = ""

    def as_json(self, bits: int, *, show_text: bool = False) -> dict[str, Any]:
        """The JSON Lines object of the fingerprint command; ``show_text`` adds the main
        text the page was read as and the own text the fingerprint and the second test
        read (normalised), so a user sees what was compared rather than guess."""
        out: dict[str, Any] = {"path": self.path, "fingerprint": None}
        if self.page is None:
            out["error"] = self.error
            return out
        page = self.page
        if page.fingerprint is not None:
            out["fingerprint"] = to_hex(page.fingerprint, bits)
        out["title"] = page.title
        out["chars"] = page.chars
        if page.reason:
            out["reason"] = page.reason
        if page.notes:
            out["notes"] = list(page.notes)
        if page.template_lines:
            out["template_lines"] = page.template_lines
        if show_text:
            out["text"] = page.text or self.text
            out["own_text"] = page.own
        return out


def wanted(name: str) -> bool:
    """Files a directory walk picks up: .html, .htm, .txt, each optionally gzipped."""
    return name.lower().removesuffix(".gz").endswith(_SUFFIXES)


def is_text(name: str) -> bool:
    """``.txt`` files hold main text already: no HTML extraction."""
    return name.lower().removesuffix(".gz").endswith(".txt")


def expand(paths: Sequence[str]) -> Iterator[str]:
    """Input paths in order; a directory becomes its wanted files, recursively, sorted.

    Paths that do not exist are passed on so that reading them reports the error.
    """
    for path, _ in expand_hosts(paths):
        yield path


def expand_hosts(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """:func:`expand` with the host each file stands for, whose template it shares.

    Files on disk have no URL, so the folder tells: a mirror (``wget -r``, ``httrack``)
    keeps each host's pages under a folder named after it. A file found by walking a
    directory belongs to the first folder below that directory (``mirror/news.example/
    2024/a.html``: ``mirror/news.example``), or to the directory itself when it lies there;
    a file named alone belongs to the folder holding it; standard input is a host of its own.
    """
    for path in paths:
        root = Path(path)
        if path != STDIN and root.is_dir():
            found = (p for p in root.rglob("*") if p.is_file() and wanted(p.name))
            for file in sorted(found):
                parts = file.relative_to(root).parts
                yield str(file), str(root / parts[0]) if len(parts) > 1 else str(root)
        else:
            yield path, STDIN if path == STDIN else str(root.parent)


def read_body(path: str, limit: int) -> bytes:
    """The bytes of a file or of stdin, gunzipped when gzip-compressed.

    At most ``limit + 1`` bytes are kept (0 = no limit): one more than extraction will
    look at, so it can still say the page was truncated without reading a huge file.
    """
    size = limit + 1 if limit else -1
    if path == STDIN:
        handle: Any = io.BytesIO(sys.stdin.buffer.read())
    else:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    try:
        if handle.read(2) == _GZIP_MAGIC:
            handle.seek(0)
            with gzip.GzipFile(fileobj=handle) as unzipped:
                return bytes(unzipped.read(size))
        handle.seek(0)
        return bytes(handle.read(size))
    finally:
        handle.close()


def load(
    fingerprinter: Fingerprinter,
    path: str,
    *,
    text: bool = False,
    host: str = "",
    templates: LocalMemory | None = None,
) -> Document:
    """Read and fingerprint one input; read errors become a Document with ``error``.

    ``templates``: the memories of the hosts read so far; the page's host's template is
    set aside as a crawl would (the caller learns the page once it is judged)."""
    config = fingerprinter.config
    try:
        body = read_body(path, config.max_body_bytes)
    except (OSError, EOFError, zlib.error) as exc:
        return Document(path, error=_describe(exc), host=host)
    if text or (path != STDIN and is_text(path)):
        return replace(_load_text(fingerprinter, path, body), host=host)
    page = fingerprinter.fingerprint_page(body)
    main_text = page.text
    if templates is not None:
        page = templates.apply(host, page)
    return Document(path, page, main_text, host=host)


def _load_text(fingerprinter: Fingerprinter, path: str, body: bytes) -> Document:
    from scrapy_simhash.text.decode import decode_html, is_binary

    limit = fingerprinter.config.max_body_bytes
    if is_binary(body):
        page = PageFingerprint(None, "", 0, "", "binary body, not text")
        return Document(path, page)
    notes: tuple[str, ...] = ()
    if limit and len(body) > limit:
        body = body[:limit]
        notes = (f"truncated to {limit} bytes",)
    decoded = decode_html(body, "text/plain")
    page = fingerprinter.fingerprint_document(decoded.text, encoding=decoded.encoding, notes=notes)
    return Document(path, page, decoded.text)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def fingerprinter_from_settings(settings: Mapping[str, Any]) -> Fingerprinter:
    """A Fingerprinter configured like a crawl with the same ``-s`` settings."""
    return Fingerprinter(fingerprint_config(settings))


#: The key files are signed under when no namespace's key is read (compare, dedup): any
#: key is one draw of the second test, and a fixed one gives the same answer on every run.
#: A crawl signs under its namespace's own secret key.
COMMAND_LINE_KEY = 0x5CA1AB1E


def add_distance_option(parser: Any) -> None:
    parser.add_argument(
        "-k",
        type=int,
        default=None,
        help="candidate radius: the largest Hamming distance of near-duplicates, before the "
        "second test confirms them (default: SIMHASH_MAX_DISTANCE, 8 at 64 bits)",
    )


def max_distance(args: Any, settings: Mapping[str, Any]) -> int:
    """``-k`` when given, else ``SIMHASH_MAX_DISTANCE`` as a crawl would read it."""
    if args.k is not None:
        return int(args.k)
    from scrapy_simhash.settings import max_distance as setting

    return setting(settings)


def add_text_option(parser: Any) -> None:
    parser.add_argument(
        "--text",
        action="store_true",
        help="treat every input as plain main text (default: only .txt files; others are HTML)",
    )


def add_show_text_option(parser: Any) -> None:
    parser.add_argument(
        "--show-text",
        action="store_true",
        help="also print the main text each page was read as (a paragraph a line; without "
        "navigation, banners or comments) and the own text the fingerprint read (without "
        "headline lines, normalised)",
    )
