"""Main-text extraction: the part of a page that is the page's own content.

Near-duplicate detection lives or dies here. Pages of one site share their navigation,
footer, sidebars and banners; fingerprinting the whole page makes two different articles
of one site look alike, and the same article on two sites look different. So the page is
reduced to its main text before anything is hashed:

1. obvious non-content is dropped by tag (scripts, styles, nav, aside, footer, forms'
   controls), by visibility (``hidden``, ``aria-hidden``, ``display:none``), by ARIA role
   and by class/id names that templates use for boilerplate (comments, share bars,
   related links, cookie banners...);
2. one walk over the remaining tree measures every element (text length, link text
   length) and scores text blocks in the readability fashion: each paragraph credits its
   parent and grandparent, so the element that directly holds most of the prose wins,
   discounted by its link density and nudged by semantic hints (``<article>``,
   ``itemprop=articleBody``, content-like class names);
3. the best container and its qualifying siblings are read out line by line, skipping
   link lists and the headline (the title is returned on its own).

Everything is a single pass of cheap per-element work over lxml's C tree; no step looks at
individual characters in Python.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

from scrapy_simhash.text.choose import _choose
from scrapy_simhash.text.decode import decode_html
from scrapy_simhash.text.parse import _parse, _place_streamed_segments, _strip_junk
from scrapy_simhash.text.rules import (
    _BOILERPLATE_TAGS,
    _CREDIT_LINE,
    _DATE_IN_LINE,
    _FALLBACK_BYTES,
    _INLINE_TAGS,
    _MAX_BYLINE_CHARS,
    _MAX_BYLINE_WORDS,
    _MAX_CREDIT_BYTES,
    _MAX_LINK_DENSITY,
    _TITLE_SEPARATORS,
    _WORD,
    _names_role,
)
from scrapy_simhash.text.walk import _Frame, _text_content, _Walk

logger = logging.getLogger(__name__)

__all__ = ["MainText", "extract_main_text"]


@dataclass(frozen=True)
class MainText:
    """The main content of a page.

    ``text`` holds one paragraph per line; ``notes`` explains anything unusual about the
    input (binary body, truncation, charset problems, no recognisable content).
    """

    title: str
    text: str
    encoding: str
    notes: tuple[str, ...] = ()


# C1 control characters never occur in real text: they are windows-1252 bytes that some
# earlier step decoded as Latin-1 (a UTF-8 "’" read that way is "â\x80\x99"). HTML maps
# the references &#128;-&#159; to windows-1252 characters, so a page with raw C1
# characters and its copy re-encoded with references only read alike after this mapping.
_C1 = re.compile("[\x80-\x9f]")
_C1_AS_CP1252 = {
    code: char
    for code in range(0x80, 0xA0)
    if (char := bytes([code]).decode("cp1252", errors="ignore"))
}


def _lines(
    containers: Iterable[etree._Element],
    stats: dict[etree._Element, _Frame],
    *,
    link_density: float = _MAX_LINK_DENSITY,
    links_only: bool = False,
) -> str:
    """Read containers out as text, one line per block, skipping h1 and blocks whose link
    text exceeds ``link_density`` of their text (link lists). ``links_only`` reads link
    lists too, but none that looks like navigation (kept by the walk for its size)."""
    lines: list[str] = []
    current: list[str] = []
    inline_tags = _INLINE_TAGS

    for container in containers:
        walker = etree.iterwalk(container, events=("start", "end"))
        for event, el in walker:
            tag = el.tag
            if event == "start":
                frame = stats.get(el)
                if frame is None:
                    walker.skip_subtree()  # dropped as boilerplate, or not an element
                    continue
                if links_only and (tag in _BOILERPLATE_TAGS or _names_role(el) < 0):
                    walker.skip_subtree()
                    continue
                if tag not in inline_tags:
                    if current:
                        _flush(current, lines)
                    chars = frame[0]
                    if tag == "h1" or (chars and frame[1] > chars * link_density):
                        walker.skip_subtree()
                        continue
                text = el.text
                if text:
                    current.append(text)
                continue
            if current and (tag not in inline_tags or tag == "br"):
                _flush(current, lines)
            tail = el.tail
            if tail and el is not container:
                current.append(tail)
        if current:
            _flush(current, lines)
    return "\n".join(lines)


def _flush(current: list[str], lines: list[str]) -> None:
    """End the current line: its pieces joined with whitespace runs made single spaces."""
    line = " ".join("".join(current).split())
    if line:
        lines.append(line)
    current.clear()


def _drop_credits(text: str) -> str:
    """Remove short byline, source, editor, date, share-widget and copyright lines.

    They are not the article: every re-publication of one story carries its own ("来源：
    新华网 责任编辑：王五", "By Staff Reporter", "Updated 2025-03-01", "分享到：", "版权所有"),
    so keeping them pulls copies of one story apart and adds nothing that tells stories
    apart.
    """
    if not text:
        return text
    kept = [line for line in text.split("\n") if not _is_credit(line)]
    return "\n".join(kept)


def _is_credit(line: str) -> bool:
    # A character takes at most 4 UTF-8 bytes and at least 1: most lines need no encode.
    if len(line) > _MAX_CREDIT_BYTES:
        return False
    if len(line) * 4 > _MAX_CREDIT_BYTES and len(line.encode("utf-8")) > _MAX_CREDIT_BYTES:
        return False
    return _CREDIT_LINE.search(line) is not None or _is_dated_byline(line)


def _is_dated_byline(line: str) -> bool:
    """A few words (a name, a place) beside a date, and nothing that reads as a sentence."""
    if len(line) > _MAX_BYLINE_CHARS:
        return False
    date = _DATE_IN_LINE.search(line)
    if date is None:
        return False
    rest = line[: date.start()] + " " + line[date.end() :]
    return len(_WORD.findall(rest)) <= _MAX_BYLINE_WORDS and not re.search(r"[.!?]\s+\w", rest)


def _clean_title(title: str, headline: str) -> str:
    """Remove the " - Site name" decoration: prefer the h1 when the title contains it."""
    title = " ".join(title.split())
    headline = " ".join(headline.split())
    if headline and headline in title:
        return headline
    parts = [part for part in _TITLE_SEPARATORS.split(title) if part]
    if len(parts) < 2:
        return title
    # Site names are short; the longest segment (in UTF-8 bytes, so that a CJK character
    # counts like a short word) is the page's own title.
    return max(parts, key=lambda part: len(part.encode("utf-8")))


def _title(root: etree._Element) -> str:
    for meta in root.iter("meta"):
        key = meta.get("property") or meta.get("name") or ""
        if key.lower() in ("og:title", "twitter:title"):
            content = " ".join((meta.get("content") or "").split())
            if content:
                return _clean_title(content, "")
    title = ""
    for el in root.iter("title"):
        title = _text_content(el)
        break
    headline = ""
    for el in root.iter("h1"):
        headline = _text_content(el)
        if headline.strip():
            break
    if not title.strip():
        return " ".join(headline.split())
    return _clean_title(title, headline)


def _extract(data: bytes, encoding: str, notes: list[str]) -> MainText:
    root = _parse(data, notes)
    if root is None:
        notes.append("no HTML content")
        return MainText("", "", encoding, tuple(notes))
    title = _title(root)
    _place_streamed_segments(root)
    _strip_junk(root)
    body = root.find("body")
    if body is None:
        body = root
    walk = _Walk(body)
    walk.run()
    containers, marked = _choose(walk)
    main = _drop_credits(_lines(containers, walk.stats))
    # A character is at least one UTF-8 byte: most texts need no encode to be judged long.
    if not marked and len(main) < _FALLBACK_BYTES and len(main.encode("utf-8")) < _FALLBACK_BYTES:
        # No container of prose (product pages, galleries, landing pages): the page's
        # own text is everything that is not boilerplate or link lists.
        whole = _drop_credits(_lines([body], walk.stats))
        if len(whole) > len(main):
            notes.append("no prose container; using all non-boilerplate text")
            main = whole
        elif not main:
            # A page of links and nothing else (an index, a catalogue): its links, outside
            # the navigation and other boilerplate already dropped, are its content.
            links = _drop_credits(_lines([body], walk.stats, link_density=1.0, links_only=True))
            if links:
                notes.append("only link lists; using their text")
                main = links
    if not main:
        notes.append("no main text found")
    return MainText(_without_c1(title), _without_c1(main), encoding, tuple(notes))


# Byte-order marks, and the same bytes read in a single-byte charset, are never text: they
# come from files concatenated into a page or from stray bytes after its end.
_BYTE_ORDER_MARKS = re.compile("\ufeff|\u00ef\u00bb\u00bf|\u00ff\u00fe|\u00fe\u00ff")


def _without_c1(text: str) -> str:
    if _C1.search(text):
        text = text.translate(_C1_AS_CP1252)
    return _BYTE_ORDER_MARKS.sub("", text)


def extract_main_text(
    body: bytes | str,
    *,
    content_type: str | None = None,
    max_bytes: int | None = None,
) -> MainText:
    """Extract the title and main text of an HTML page; never raises.

    ``body`` is the raw response body (decoded with :func:`decode_html`, using the HTTP
    ``content_type`` when given) or already decoded text. ``max_bytes`` cuts huge bodies
    before any work is done; the cut is reported in ``notes``.
    """
    notes: list[str] = []
    encoding = "unicode"
    try:
        if isinstance(body, str):
            text = body
            if max_bytes is not None and len(text) > max_bytes:
                text = text[:max_bytes]
                notes.append(f"truncated to {max_bytes} characters")
        else:
            raw = bytes(body)
            if max_bytes is not None and len(raw) > max_bytes:
                raw = raw[:max_bytes]
                notes.append(f"truncated to {max_bytes} bytes")
            decoded = decode_html(raw, content_type)
            encoding = decoded.encoding
            notes.extend(decoded.notes)
            if decoded.source in ("binary", "empty"):
                return MainText("", "", encoding, tuple(notes))
            data = decoded.utf8
            if data is None:
                data = decoded.text.encode("utf-8", errors="replace")
            return _extract(data, encoding, notes)
        return _extract(text.encode("utf-8", errors="replace"), encoding, notes)
    except Exception as exc:  # the contract is "never raises": report instead
        logger.warning("main-text extraction failed: %r", exc, exc_info=True)
        notes.append(f"extraction failed: {type(exc).__name__}")
        return MainText("", "", encoding, tuple(notes))
