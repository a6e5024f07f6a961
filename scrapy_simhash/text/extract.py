"""The extraction steps in order: decode, parse, walk, choose, read out.

:func:`extract_main_text` never raises: a page that cannot be read is reported in
``MainText.notes`` rather than lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scrapy_simhash.text.choose import _choose
from scrapy_simhash.text.decode import decode_html
from scrapy_simhash.text.parse import (
    _TEMPLATE,
    _parse,
    _place_streamed_segments,
    _strip_junk,
    _tree,
)
from scrapy_simhash.text.readout import (
    _TITLE_TAGS,
    _drop_credits,
    _lines,
    _needs_cleaning,
    _title,
    _without_c1,
)
from scrapy_simhash.text.rules import _FALLBACK_BYTES
from scrapy_simhash.text.tree import Tree
from scrapy_simhash.text.walk import _Walk

logger = logging.getLogger("scrapy_simhash.extract")
#: The elements looked at before the walk, found in one pass: the title's and the templates
#: of streamed segments.
_LOOKED_AT = _TITLE_TAGS | _TEMPLATE
#: Link-dense blocks larger than this are read into for the page's lines (see _extract).
_PAGE_DENSE_CHARS = 1000  # the name log settings know

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
    #: Every non-boilerplate line of the page, main text or not, one per line: the lines a
    #: crawl compares across the pages of a host to learn its template
    #: (:mod:`scrapy_simhash.template`), and the page's own text once that template is
    #: set aside when the main text turns out to be template.
    page_text: str = ""
    #: All the text of the body, boilerplate included, when the main text is short (under
    #: :data:`VISIBLE_TEXT_BELOW` characters): a page with too little text of its own is a
    #: copy only of a page that also reads alike as a whole (:mod:`scrapy_simhash.confirm`).
    visible_text: str = ""


#: A main text shorter than this (in characters) comes with the body's whole text: it may
#: be too short for a fingerprint (which needs 200 of its own, CJK counted three times).
VISIBLE_TEXT_BELOW = 1000


def _looked_at(tree: Tree) -> list[int]:
    """The page's elements of _LOOKED_AT, in document order."""
    return tree.descendants(tree.root, _LOOKED_AT)


def _extract(data: bytes, encoding: str, notes: list[str]) -> MainText:
    parser = _parse(data, notes)
    if parser is None:
        notes.append("no HTML content")
        return MainText("", "", encoding, tuple(notes))
    tree = _tree(parser)
    found = _looked_at(tree)
    title = _title(tree, found)
    _place_streamed_segments(tree, found)
    _strip_junk(tree)
    walk = _Walk(tree)
    body = walk.body
    walk.run()
    containers, marked = _choose(walk)
    main = _drop_credits(_lines(containers, walk))
    # Every line a reader sees, for the host's template memory: the main text and the rest
    # of the page, where a wrapper that its menus make link-dense is read into rather than
    # skipped. The main containers are not read twice; credit lines stay (they are short,
    # and the memory counts lines rather than fingerprinting them).
    rest = _lines([body], walk, dense_max_chars=_PAGE_DENSE_CHARS, skip=containers)
    page_text = f"{main}\n{rest}" if main and rest else main or rest
    # A character is at least one UTF-8 byte: most texts need no encode to be judged long.
    if not marked and len(main) < _FALLBACK_BYTES and len(main.encode("utf-8")) < _FALLBACK_BYTES:
        # No container of prose (product pages, galleries, landing pages): the page's
        # own text is everything that is not boilerplate or link lists.
        whole = _drop_credits(_lines([body], walk))
        if len(whole) > len(main):
            notes.append("no prose container; using all non-boilerplate text")
            main = whole
    if not main:
        # A page of links and nothing else (a listing, an index, a catalogue) has no text
        # of its own: its link texts ("Read more", thumbnails' captions) read alike from
        # page to page of a listing, and a listing dropped as a copy of another would end
        # the discovery of the articles it alone links to.
        links = _lines([body], walk, link_density=1.0, links_only=True)
        notes.append("only link lists: no text of its own" if links else "no main text found")
    visible = walk.body_text() if len(main) < VISIBLE_TEXT_BELOW else ""
    # The page's text starts with the main text (unless the fallback above replaced it):
    # when the page's text has nothing to clean, neither has the main text.
    if not page_text.startswith(main) or _needs_cleaning(page_text):
        main, page_text = _without_c1(main), _without_c1(page_text)
    return MainText(
        _without_c1(title), main, encoding, tuple(notes), page_text, " ".join(visible.split())
    )


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
