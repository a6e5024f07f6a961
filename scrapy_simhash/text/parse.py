"""From UTF-8 bytes to a tree ready for the walk: parsing by the HTML5 rules (lexbor, through
selectolax), with a bound on nesting; streamed segments put in place; junk tags removed.

Everything here repairs what a browser would have repaired or run, so that the walk sees
the page a reader sees.
"""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from scrapy_simhash.text import compiled
from scrapy_simhash.text.rules import _JUNK_TAGS, _NOT_NESTING
from scrapy_simhash.text.tree import PureTree, Tree

# React streaming server rendering sends late parts of a page as <div hidden id="S:n">
# at the end of the body and a script moves each into the place of its <template
# id="B:n"> (a Suspense boundary) or <template id="P:n"> (a placeholder).
_STREAMED_TARGET = re.compile(r"[BP]:(\d+)")

#: The nesting from which a page is read without its wrapper tags. An HTML5 parse has no
#: limit of its own, and lexbor's time grows with the square of the depth (each block
#: element's start looks down the stack of open elements): 40,000 nested <div>s take it
#: 1.3 s, 2,000 take it 3 ms. Pages that deep are nearly always unclosed wrappers; parsed
#: again without these tags, their text is all there.
MAX_NESTING = 2048
_NESTING_TAGS = re.compile(
    rb"</?(?:div|span|font|section|article|center|small|big|b|i|u|em|strong|blockquote"
    rb"|table|tbody|tr|td|ul|ol|dl|dd|a)(?:\s[^>]*)?/?>",
    re.IGNORECASE,
)
#: The longest tag name the nesting scan compares (longer ones are nesting elements).
_NAME_BYTES = 16


def _parse(data: bytes, notes: list[str] | None = None) -> Any:
    """Parse UTF-8 bytes (selectolax's parser, holding lexbor's tree); None when there is
    nothing to parse, or when nesting too deep to parse even without wrapper tags would
    take more time than a page may (said in ``notes``)."""
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
    if data.isspace() or not data:
        return None
    if _nests_deeper(data):
        data = _NESTING_TAGS.sub(b" ", data)
        if _nests_deeper(data):
            if notes is not None:
                notes.append(
                    f"nested deeper than {MAX_NESTING} elements: text would be lost, "
                    "not fingerprinted"
                )
            return None
        if notes is not None:
            notes.append(f"nested deeper than {MAX_NESTING} elements; parsed without wrapper tags")
    return LexborHTMLParser(data)


def _nests_deeper(data: bytes) -> bool:
    """Whether the page may nest more than MAX_NESTING elements: start tags of elements
    that hold what follows them, less end tags, counted along the page (an estimate from
    above: an end tag that closes several elements counts as one)."""
    extension = compiled.extension
    if extension is not None:
        return bool(extension.nests_deeper(data, MAX_NESTING))
    if data.count(b"<") <= MAX_NESTING:  # each '<' adds one level at most
        return False
    return _nests_deeper_interpreted(data, MAX_NESTING)


def _nests_deeper_interpreted(data: bytes, limit: int) -> bool:
    """_nests_deeper in Python (and the reference of the compiled scan)."""
    depth = 0
    size = len(data)
    at = data.find(b"<")
    while at >= 0:
        start = at + 1
        closing = start < size and data[start] == 0x2F  # /
        if closing:
            start += 1
        end = start
        while end < size and _is_name_byte(data[end]):
            end += 1
        if end > start and _is_letter(data[start]):
            name = data[start:end].lower() if end - start <= _NAME_BYTES else b""
            if closing:
                if name not in _NOT_NESTING and depth > 0:
                    depth -= 1
            else:
                close = data.find(b">", end)
                if close < 0:
                    return False
                if data[close - 1] != 0x2F and name not in _NOT_NESTING:
                    depth += 1
                    if depth > limit:
                        return True
                at = close
        at = data.find(b"<", at + 1)
    return False


def _is_letter(byte: int) -> bool:
    return 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


def _is_name_byte(byte: int) -> bool:
    """A byte of a tag name: not whitespace, '/' or '>' (HTML's tag name state)."""
    return byte not in (0x09, 0x0A, 0x0C, 0x0D, 0x20, 0x2F, 0x3E)


def _tree(parser: Any) -> Tree:
    """The tree the walk reads: lexbor's nodes in place when compiled, else selectolax's."""
    extension = compiled.extension
    if extension is not None:
        return extension.LexborTree(parser)
    return PureTree(parser)


def _place_streamed_segments(tree: Tree) -> None:
    """Do what the page's script does with streamed segments: show each one in the place
    of its template. The boundary's fallback (a spinner or skeleton, marked only by
    comments) stays.

    Left hidden at the end of the body, the bulk of a streamed article would be dropped
    as hidden, and the page would be reduced to the part rendered before the stream.
    """
    if not tree.descendants(tree.root, "template"):
        return
    parser = tree.parser
    targets: dict[str, Any] = {}
    for template in parser.css("template"):
        match = _STREAMED_TARGET.fullmatch(template.attributes.get("id") or "")
        if match is not None:
            targets.setdefault(match.group(1), template)
    if not targets:
        return
    for segment in parser.css("div"):
        attributes = segment.attributes
        segment_id = attributes.get("id")
        if not segment_id or not segment_id.startswith("S:") or "hidden" not in attributes:
            continue
        target = targets.get(segment_id[2:])
        if target is None or target.parent is None or _inside(target, segment):
            continue
        del targets[segment_id[2:]]  # replaced: its node is gone
        del segment.attrs["hidden"]
        target.replace_with(segment)  # a copy of the segment takes the template's place
        segment.decompose()


def _inside(node: Any, outer: Any) -> bool:
    """Whether ``node`` lies inside ``outer``."""
    address = outer.mem_id
    parent = node.parent
    while parent is not None:
        if parent.mem_id == address:
            return True
        parent = parent.parent
    return False


def _strip_junk(tree: Tree) -> None:
    """Remove the elements whose content is never main text (_JUNK_TAGS), in C."""
    extension = compiled.extension
    if extension is not None:
        extension.strip_junk(tree.parser)
    else:
        tree.parser.strip_tags(list(_JUNK_TAGS), recursive=True)
