"""From UTF-8 bytes to a tree ready for the walk: parsing (with the fallback for pages
nested deeper than libxml2 goes), streamed segments put in place, junk tags removed.

Everything here repairs what a browser would have repaired or run, so that the walk sees
the page a reader sees.
"""

from __future__ import annotations

import re

from lxml import etree

from scrapy_simhash.text import compiled
from scrapy_simhash.text.rules import _JUNK_TAGS

# React streaming server rendering sends late parts of a page as <div hidden id="S:n">
# at the end of the body and a script moves each into the place of its <template
# id="B:n"> (a Suspense boundary) or <template id="P:n"> (a placeholder).
_STREAMED_TARGET = re.compile(r"[BP]:(\d+)")
_CLOSING_ROOT = re.compile(rb"</(?:[bB][oO][dD][yY]|[hH][tT][mM][lL])\s*>")
# huge_tree: without it libxml2 silently drops everything nested 256 or more elements deep
# (a template that never closes its <div>s reduces every article to the shared shallow
# text, and distinct articles become copies) and text nodes over 10 MB.
_PARSER = etree.HTMLParser(
    encoding="utf-8",
    remove_comments=True,
    remove_pis=True,
    no_network=True,
    recover=True,
    collect_ids=False,
    huge_tree=True,
)
# Even with huge_tree, libxml2 stops at 2048 levels. Pages that deep are nearly always
# unclosed wrappers; parsed again without these tags, their text is all there.
_NESTING_TAGS = re.compile(
    rb"</?(?:div|span|font|section|article|center|small|big|b|i|u|em|strong|blockquote"
    rb"|table|tbody|tr|td|ul|ol|dl|dd|a)(?:\s[^>]*)?/?>",
    re.IGNORECASE,
)


def _parse(data: bytes, notes: list[str] | None = None) -> etree._Element | None:
    """Parse UTF-8 bytes; None when there is nothing to parse, or when nesting too deep
    to parse even without wrapper tags would lose text (said in ``notes``)."""
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
    if data.isspace() or not data:
        return None
    # libxml2 ignores everything after a stray </html> and puts what follows a stray
    # </body> outside the body; real pages have both (an included header fragment that
    # ends in </html>). Without them the parser closes body and html at the end anyway.
    extension = compiled.extension
    data = (
        _CLOSING_ROOT.sub(b"", data) if extension is None else extension.without_closing_roots(data)
    )
    try:
        root = etree.fromstring(data, _PARSER)
        if not _too_deep():
            return root
        root = etree.fromstring(_NESTING_TAGS.sub(b" ", data), _PARSER)
    except etree.LxmlError:
        return None
    if not _too_deep():
        if notes is not None:
            notes.append("nested deeper than 2048 elements; parsed without wrapper tags")
        return root
    if notes is not None:
        notes.append("nested deeper than 2048 elements: text would be lost, not fingerprinted")
    return None


def _too_deep() -> bool:
    """Whether the last parse stopped at libxml2's nesting limit (dropping the rest)."""
    return any(
        error.type_name == "ERR_RESOURCE_LIMIT" or "Excessive depth" in error.message
        for error in _PARSER.error_log
    )


def _place_streamed_segments(root: etree._Element) -> None:
    """Do what the page's script does with streamed segments: show each one in the place
    of its template. The boundary's fallback (a spinner or skeleton, marked only by
    comments, which the parser drops) stays.

    Left hidden at the end of the body, the bulk of a streamed article would be dropped
    as hidden, and the page would be reduced to the part rendered before the stream.
    """
    targets: dict[str, etree._Element] = {}
    for template in root.iter("template"):
        match = _STREAMED_TARGET.fullmatch(template.get("id") or "")
        if match is not None:
            targets.setdefault(match.group(1), template)
    if not targets:
        return
    for segment in list(root.iter("div")):
        segment_id = segment.get("id")
        if not segment_id or not segment_id.startswith("S:") or segment.get("hidden") is None:
            continue
        target = targets.get(segment_id[2:])
        parent = target.getparent() if target is not None else None
        if target is None or parent is None:
            continue
        del segment.attrib["hidden"]
        _detach(segment)
        segment.tail = target.tail
        parent.replace(target, segment)


def _detach(el: etree._Element) -> None:
    """Remove ``el`` from its parent, leaving its tail text where it was."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        previous = el.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _strip_junk(root: etree._Element) -> None:
    """Remove the elements whose content is never main text (_JUNK_TAGS), in C."""
    etree.strip_elements(root, *_JUNK_TAGS, with_tail=False)
