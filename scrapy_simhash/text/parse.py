"""From UTF-8 bytes to a tree ready for the walk: parsing by the HTML5 rules (lexbor, through
selectolax), its cost bounded first; streamed segments put in place; junk tags removed.

Everything here repairs what a browser would have repaired or run, so that the walk sees
the page a reader sees.
"""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from scrapy_simhash.text import compiled
from scrapy_simhash.text.rules import _FORMATTING, _JUNK_TAGS, _NOT_NESTING
from scrapy_simhash.text.tree import PureTree, Tree

# React streaming server rendering sends late parts of a page as <div hidden id="S:n">
# at the end of the body and a script moves each into the place of its <template
# id="B:n"> (a Suspense boundary) or <template id="P:n"> (a placeholder).
_STREAMED_TARGET = re.compile(r"[BP]:(\d+)")
_TEMPLATE = frozenset(["template"])

# An HTML5 parse has no limits of its own, and lexbor's time and memory grow faster than
# the page in three ways. A page past any of these limits, counted along its bytes from
# above, is read without its wrapper tags (pages like that are nearly always unclosed
# wrappers: their text is all there), and is not read at all when that does not bring it
# under them. The real pages measured stay below a tenth of each.
#: Open elements the page's tags look through: each start or end tag of a block looks
#: down the stack of open elements (40,000 nested <div>s take lexbor 1.3 s; 50,000 <li>s
#: inside 2,000 <div>s 0.16 s). Real pages reach 1.5 million at most.
MAX_SCANNED = 20_000_000
#: Formatting elements opened again: each block that closes them has the parse open them
#: again in the next, so 1,500 unclosed <b>s of distinct ids, each before a <p>, make 1.1
#: million elements (420 MB). Real pages reach 115,000 at most (half of them 45).
MAX_REOPENED = 200_000
#: Options of one menu that each new option is compared with (20,000 options in one
#: <select> take lexbor 1 s). Real pages reach 150,000 at most (a menu of 549).
MAX_COMPARED = 2_000_000
# Wrapper tags, and menus with their options (whose content is never main text).
_WRAPPERS_AND_MENUS = re.compile(
    rb"</?(?:div|span|font|section|article|center|small|big|b|i|u|em|strong|blockquote"
    rb"|table|tbody|tr|td|ul|ol|dl|dd|a)(?:\s[^>]*)?/?>"
    rb"|<select\b.*?(?:</select\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
#: What _too_costly finds: nothing, or which limit the page passes.
_CHEAP, _SCANNED, _REOPENED, _COMPARED = 0, 1, 2, 3
_PASSED = {
    _SCANNED: f"its tags would look through more than {MAX_SCANNED} open elements",
    _REOPENED: f"it would have formatting elements opened again more than {MAX_REOPENED} times",
    _COMPARED: f"its menus would compare options more than {MAX_COMPARED} times",
}
#: The longest tag name the scan compares (longer ones are nesting elements).
_NAME_BYTES = 16


def _parse(data: bytes, notes: list[str] | None = None) -> Any:
    """Parse UTF-8 bytes (selectolax's parser, holding lexbor's tree); None when there is
    nothing to parse, or when a page would cost its parse more than any page may even
    without its wrapper tags and menus (said in ``notes``)."""
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
    if data.isspace() or not data:
        return None
    costly = _too_costly(data)
    if costly != _CHEAP:
        data = _WRAPPERS_AND_MENUS.sub(b" ", data)
        if _too_costly(data) != _CHEAP:
            if notes is not None:
                notes.append(f"{_PASSED[costly]}: the page is not read, not fingerprinted")
            return None
        if notes is not None:
            notes.append(f"{_PASSED[costly]}; read without its wrapper tags and menus")
    return LexborHTMLParser(data)


def _too_costly(data: bytes) -> int:
    """_CHEAP, or the first of the limits above the page passes (see _PASSED), counted
    along its bytes: an element holds what follows it from its start tag to its end tag
    (an estimate from above: an end tag that closes several elements counts as one)."""
    extension = compiled.extension
    if extension is not None:
        return int(extension.too_costly(data, MAX_SCANNED, MAX_REOPENED, MAX_COMPARED))
    return _too_costly_interpreted(data, MAX_SCANNED, MAX_REOPENED, MAX_COMPARED)


def _too_costly_interpreted(
    data: bytes, max_scanned: int, max_reopened: int, max_compared: int
) -> int:
    """_too_costly in Python (and the reference of the compiled scan)."""
    depth = 0  # elements open
    scanned = 0
    formatting = 0  # formatting elements open
    reopened = 0
    options = -1  # options of the open menu (-1: none open)
    compared = 0
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
            scanned += depth
            if scanned > max_scanned:
                return _SCANNED
            if closing:
                if name not in _NOT_NESTING and depth > 0:
                    depth -= 1
                if name in _FORMATTING and formatting > 0:
                    formatting -= 1
                if name == b"select":
                    options = -1
            else:
                close = data.find(b">", end)
                if close < 0:
                    return _CHEAP
                if data[close - 1] != 0x2F:  # not <.../>
                    if name in _FORMATTING:
                        formatting += 1
                    else:
                        reopened += formatting
                        if reopened > max_reopened:
                            return _REOPENED
                    if name not in _NOT_NESTING:
                        depth += 1
                if name == b"select":
                    options = 0
                elif name == b"option" and options >= 0:
                    compared += options
                    options += 1
                    if compared > max_compared:
                        return _COMPARED
                at = close
        at = data.find(b"<", at + 1)
    return _CHEAP


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


def _place_streamed_segments(tree: Tree, found: list[int]) -> None:
    """Do what the page's script does with streamed segments: show each one in the place
    of its template. The boundary's fallback (a spinner or skeleton, marked only by
    comments) stays.

    Left hidden at the end of the body, the bulk of a streamed article would be dropped
    as hidden, and the page would be reduced to the part rendered before the stream.
    ``found``: the page's <template> elements, among others (one search serves the title
    and this); none, and there is nothing to do.
    """
    if not any(tree.tag(el) in _TEMPLATE for el in found):
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
        extension.strip_junk(tree)
    else:
        tree.parser.strip_tags(list(_JUNK_TAGS), recursive=True)
