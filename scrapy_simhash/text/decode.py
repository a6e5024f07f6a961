"""Turn an HTML body of unknown encoding into text that a person could read.

A fingerprint of mojibake is a fingerprint of the decoder's mistake, not of the page: the
same article served as GBK without a declaration and as UTF-8 must decode to the same text.
Declarations are often wrong (pages that say gb2312 but are UTF-8, pages that say utf-8
but contain stray Latin-1 bytes), so every declared charset is checked against the bytes
before it is trusted. Checks are whole-body C-level decodes, which are cheap; the slow
statistical detector only ever sees a sample and only when every cheap guess failed.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass, field

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

from scrapy_simhash.text import compiled

logger = logging.getLogger("scrapy_simhash.decode")  # the name log settings know

__all__ = ["DecodedHtml", "decode_html", "is_binary"]

# A declared charset is accepted while it needs fewer replacement characters than this
# share of the body's non-ASCII bytes (a truncated last character or a few stray bytes).
_MAX_ERROR_SHARE = 0.01
# Bytes the statistical detector sees: enough for a verdict, small enough to be fast.
_DETECT_SAMPLE = 32 * 1024
# Below this many non-ASCII bytes the statistical detector is not consulted.
_MIN_DETECT_BYTES = 16
# Bytes inspected to recognise binary bodies.
_BINARY_SAMPLE = 2048
_BINARY_MAGIC = (
    b"\x89PNG",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ",
    b"7z\xbc\xaf",
    b"Rar!",
    b"RIFF",
    b"OggS",
    b"fLaC",
    b"ID3",
    b"\x00\x00\x01\x00",
    b"wOFF",
    b"wOF2",
    b"\x7fELF",
    b"MZ",
    b"\xd0\xcf\x11\xe0",
)
# C0 controls that never occur in text (tab, LF, FF, CR and ESC are allowed: ESC starts
# ISO-2022 escape sequences).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))
_HIGH = bytes(range(128, 256))
_HIGH_BYTE = re.compile(rb"[\x80-\xff]")
_ISOLATED_HIGH = re.compile(rb"(?<![\x80-\xff])[\x80-\xff](?![\x80-\xff])")


@dataclass(frozen=True)
class DecodedHtml:
    """A decoded body.

    ``source`` says which evidence chose ``encoding``: ``http``, ``bom``, ``meta``,
    ``detected``, ``default`` (pure ASCII), ``empty`` or ``binary``. ``notes`` explains
    anything a person debugging a fingerprint would want to know (declared charset
    overruled, bytes replaced, binary body).
    """

    encoding: str
    source: str
    notes: tuple[str, ...] = ()
    # The body (after its BOM, if any) when it already is ``text`` in UTF-8 (valid UTF-8
    # or ASCII, nothing replaced or dropped): a parser that wants UTF-8 bytes can take it
    # as it is instead of encoding ``text`` again.
    utf8: bytes | None = field(default=None, repr=False, compare=False)
    # The text when it was made in deciding the encoding; None: ``utf8`` decoded when asked.
    decoded: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The body as text. A body that is UTF-8 already is decoded only when asked: the
        parser reads ``utf8``, and making the text of a page of hundreds of kilobytes
        costs more than checking it is UTF-8."""
        if self.decoded is None:
            object.__setattr__(self, "decoded", (self.utf8 or b"").decode("utf-8"))
        return self.decoded or ""


def _canonical(label: str | None) -> str | None:
    """Map a charset label to the codec that browsers really use for it, or ``None``."""
    if not label:
        return None
    resolved = resolve_encoding(label)
    if resolved is None:
        return None
    try:
        return codecs.lookup(resolved).name
    except LookupError:
        return None


def is_binary(body: bytes) -> bool:
    """Whether ``body`` is certainly not text: a known file signature or control bytes."""
    if body.startswith(_BINARY_MAGIC):
        return True
    sample = body[:_BINARY_SAMPLE]
    if not sample:
        return False
    controls = len(sample) - len(sample.translate(None, _CONTROL))
    return controls * 20 > len(sample)


def _utf16_without_bom(body: bytes) -> str | None:
    """Recognise BOM-less UTF-16 (ASCII markup with a NUL beside every byte)."""
    sample = body[:_BINARY_SAMPLE] if len(body) % 2 == 0 else body[: _BINARY_SAMPLE - 1]
    # Nine NULs in ten bytes of one half are about nine in twenty of the whole (a half
    # holds at least (n - 1) / 2 bytes): most bodies have none, counted without splitting.
    if len(sample) < 8 or sample.count(0) * 20 < (len(sample) - 1) * 9:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) * 10 >= len(odd) * 9 and even.count(0) == 0:
        return "utf-16-le"
    if even.count(0) * 10 >= len(even) * 9 and odd.count(0) == 0:
        return "utf-16-be"
    return None


def _decode(body: bytes, encoding: str, *, counted: bool = True) -> tuple[str | None, int, bool]:
    """Decode with replacement; count the replacement characters it needed and say
    whether the decode was exact (every byte decoded, nothing replaced or dropped).
    A body valid as UTF-8, the ``encoding`` asked, is only checked (in C when the package
    is built with it): no text (None: the caller's ``DecodedHtml.utf8``, the body, stands
    for it), no replacements, exact. ``counted=False`` is for a caller that asks only
    whether nothing needs replacing: at the first byte that does (before the very end)
    the answer is 1 and no text, not a decode of the whole body with replacement (a page
    declaring GBK is tried as UTF-8 first, and most are not UTF-8 early on).

    An incomplete character at the very end (a body cut at a byte limit) is dropped
    instead of counted. Replacement characters that UTF-8 bodies already contain (the
    bytes EF BF BD, left by some earlier broken conversion) are not errors of this decode.
    Clean bodies, the usual case, take one strict C-level decode.
    """
    extension = compiled.extension
    if encoding == "utf-8" and extension is not None and extension.valid_utf8(body):
        return None, 0, True
    try:
        return body.decode(encoding), 0, True
    except UnicodeDecodeError as error:
        # A character takes at most four bytes: the incremental decode below may keep
        # the last three undecided (dropped, not replaced), nothing before them.
        if not counted and error.start + 4 <= len(body):
            return None, 1, False
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(body, False)
    errors = text.count("\ufffd")
    if errors and encoding == "utf-8":
        errors -= body.count(b"\xef\xbf\xbd")
    return text, errors, False


def _non_ascii(body: bytes) -> int:
    return len(body) - len(body.translate(None, _HIGH))


def _acceptable(errors: int, body: bytes) -> bool:
    """Few enough replacements to be stray bytes rather than a wrong charset."""
    return errors == 0 or errors <= _non_ascii(body) * _MAX_ERROR_SHARE


def _detect(body: bytes) -> tuple[str | None, str, int, bool]:
    """Guess the encoding of a body whose declaration is missing or wrong.

    UTF-8 first (multi-byte UTF-8 rarely validates by accident). Then the shape of the
    non-ASCII bytes decides: when they come in runs, as CJK text does, GB18030 (the
    superset of GBK/GB2312 that most undeclared CJK pages use); when they are mostly
    isolated bytes, as Latin accents, curly quotes and dashes are, windows-1252, which
    browsers assume for undeclared pages. The statistical detector is asked only when
    neither fits: on a few isolated bytes in English prose it picks whichever Latin code
    page it fancies (cp1250, cp852, mac-latin2, even Big5), turning every apostrophe into
    a different letter and the fingerprint with it. windows-1252 is the last resort.
    """
    text, errors, exact = _decode(body, "utf-8")
    if _acceptable(errors, body):
        return text, "utf-8", errors, exact
    non_ascii = _non_ascii(body)
    isolated = len(_ISOLATED_HIGH.findall(body, 0, _DETECT_SAMPLE * 8))
    shaped = "gb18030" if isolated * 5 < min(non_ascii, _DETECT_SAMPLE * 8) else "cp1252"
    text, errors, exact = _decode(body, shaped)
    if _acceptable(errors, body):
        return text, shaped, errors, exact
    # Too few non-ASCII bytes for statistics to mean anything: take the browsers' default.
    guess = _statistical_guess(body) if non_ascii >= _MIN_DETECT_BYTES else None
    encoding = guess or "cp1252"
    text, errors, exact = _decode(body, encoding)
    return text, encoding, errors, exact


def _statistical_guess(body: bytes) -> str | None:
    first = _HIGH_BYTE.search(body)
    start = max(0, first.start() - 256) if first else 0
    try:
        from charset_normalizer import from_bytes

        match = from_bytes(body[start : start + _DETECT_SAMPLE]).best()
    except Exception:  # the detector is a heuristic: its failure only loses a guess
        logger.debug("charset detection failed", exc_info=True)
        return None
    guess = _canonical(match.encoding) if match is not None else None
    # The bytes decoded as ASCII-compatible markup, so a UTF-16/32 verdict is noise.
    return None if guess is None or guess.startswith(("utf-16", "utf-32")) else guess


def decode_html(body: bytes, content_type: str | None = None) -> DecodedHtml:
    """Decode an HTML body: HTTP charset, BOM, ``<meta>`` declaration, then detection.

    A byte-order mark is conclusive and wins over everything. A declared charset (HTTP
    header first, then ``<meta charset>``/``http-equiv`` in the first 4 KB) is used when it
    decodes the body cleanly; a declaration is overruled when the body is valid UTF-8 with
    non-ASCII bytes (almost never an accident) or when the declared charset needs many
    replacement characters. Never raises for any bytes.
    """
    if not body:
        return DecodedHtml("utf-8", "empty", ("empty body",), decoded="")
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None and bom is not None:
        encoding = codecs.lookup(bom_encoding).name
        rest = body[len(bom) :]
        text, errors, _ = _decode(rest, encoding)
        replaced = (f"{errors} undecodable bytes replaced",) if errors else ()
        return DecodedHtml(encoding, "bom", replaced, rest if text is None else None, text)
    utf16 = _utf16_without_bom(body)
    if utf16 is not None:
        text, _, _ = _decode(body, utf16)
        return DecodedHtml(utf16, "detected", ("UTF-16 without byte-order mark",), decoded=text)
    if is_binary(body):
        return DecodedHtml("", "binary", ("binary body",), decoded="")

    if body.isascii():
        # Every ASCII-compatible charset decodes pure ASCII identically.
        return DecodedHtml("ascii", "default", utf8=body)

    declared: list[tuple[str, str]] = []
    http = _canonical(http_content_type_encoding(content_type)) if content_type else None
    if http is not None:
        declared.append((http, "http"))
    meta = _canonical(html_body_declared_encoding(body))
    if meta is not None and meta != http:
        declared.append((meta, "meta"))

    notes: list[str] = []
    for encoding, source in declared:
        if encoding.startswith(("utf-16", "utf-32")):
            # A UTF-16 declaration inside bytes we could read as ASCII is impossible.
            continue
        if encoding != "utf-8":
            text, errors, exact = _decode(body, "utf-8", counted=False)
            if errors == 0:
                notes.append(f"charset declared {encoding} but decoded as utf-8")
                return DecodedHtml("utf-8", "detected", tuple(notes), body if exact else None, text)
        text, errors, exact = _decode(body, encoding)
        if _acceptable(errors, body):
            if errors:
                notes.append(f"{errors} undecodable bytes replaced")
            utf8 = body if exact and encoding == "utf-8" else None
            return DecodedHtml(encoding, source, tuple(notes), utf8, text)
        notes.append(f"charset declared {encoding} does not fit the body ({errors} bad bytes)")

    text, encoding, errors, exact = _detect(body)
    if declared and declared[0][0] != encoding:
        notes.append(f"charset declared {declared[0][0]} but decoded as {encoding}")
    if errors:
        notes.append(f"{errors} undecodable bytes replaced")
    if notes:
        logger.debug("decoded as %s: %s", encoding, "; ".join(notes))
    utf8 = body if exact and encoding == "utf-8" else None
    return DecodedHtml(encoding, "detected", tuple(notes), utf8, text)
