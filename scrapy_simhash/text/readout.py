"""Reading chosen containers out as text: one line per block without link lists, credit
lines dropped, the title without its site decoration, and C1 characters and byte-order
marks cleaned.

What is read out is what gets fingerprinted, so every line kept here must tell pages
apart and every line dropped must be one that copies of a page do not share.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from scrapy_simhash.text import compiled
from scrapy_simhash.text.rules import (
    _BOILERPLATE_TAGS,
    _CREDIT_ANYWHERE,
    _CREDIT_ANYWHERE_CHARS,
    _CREDIT_ANYWHERE_SEQUENCES,
    _CREDIT_START,
    _DATE_IN_LINE,
    _INLINE_TAGS,
    _MAX_BYLINE_CHARS,
    _MAX_BYLINE_WORDS,
    _MAX_CREDIT_BYTES,
    _MAX_LINK_DENSITY,
    _TITLE_SEPARATORS,
    _WORD,
    _YEAR_DIGITS,
    _names_role,
)
from scrapy_simhash.text.tree import PureTree, Tree, run_after
from scrapy_simhash.text.walk import _Frame, _Walk

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
    containers: Iterable[int],
    walk: _Walk,
    *,
    link_density: float = _MAX_LINK_DENSITY,
    links_only: bool = False,
    dense_max_chars: int | None = None,
    skip: Iterable[int] = (),
) -> str:
    """Read containers out as text, one line per block, skipping h1 and blocks whose link
    text exceeds ``link_density`` of their text (link lists). ``links_only`` reads link
    lists too, but none that looks like navigation (kept by the walk for its size).
    ``dense_max_chars``: only blocks of at most this many characters are skipped as link
    lists; a larger one is read into (a page wrapper that its menus make link-dense).
    ``skip``: elements not read (read already). The walk's measurements say what is a
    link list; the extension that ran it, if any, reads them."""
    read = _read_interpreted if walk.extension is None else walk.extension.read
    return read(walk.tree, containers, walk.stats, link_density, links_only, dense_max_chars, skip)


def _read_interpreted(
    tree: Tree,
    containers: Iterable[int],
    stats: dict[int, _Frame],
    link_density: float,
    links_only: bool,
    dense_max_chars: int | None,
    skip: Iterable[int],
) -> str:
    """_lines in Python, over selectolax's nodes (the same steps, in the same order, as
    the compiled ``read`` over lexbor's)."""
    assert isinstance(tree, PureTree)
    lines: list[str] = []
    current: list[str] = []
    inline_tags = _INLINE_TAGS
    skipped = set(skip)
    for container_id in containers:
        container = tree.node(container_id)
        node = container
        ending = False
        while True:
            tag = node.tag
            if not ending:
                # The start of node: read into it, or pass its subtree over (its end
                # still comes).
                address = node.mem_id
                frame = stats.get(address)
                child = None
                if frame is not None and not (
                    address in skipped
                    or (
                        links_only
                        and (tag in _BOILERPLATE_TAGS or _names_role(tree, tree.known(node)) < 0)
                    )
                ):
                    enter = True
                    if tag not in inline_tags:
                        _flush(current, lines)
                        chars = frame[0]
                        if tag == "h1" or (
                            chars
                            and frame[1] > chars * link_density
                            and (dense_max_chars is None or chars <= dense_max_chars)
                        ):
                            enter = False
                    if enter:
                        pieces, child = run_after(node.first_child)
                        current.extend(pieces)
                if child is not None:
                    node = child
                    continue
            # The end of node.
            if tag not in inline_tags or tag == "br":
                _flush(current, lines)
            if node.mem_id == container_id:
                break
            pieces, child = run_after(node.next)
            current.extend(pieces)
            if child is not None:
                node = child
                ending = False
            else:
                node = node.parent
                ending = True
        _flush(current, lines)
    return "\n".join(lines)


def _flush(current: list[str], lines: list[str]) -> None:
    """End the current line: its pieces joined with whitespace runs made single spaces
    (nothing when it holds no character)."""
    if not current:
        return
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
    lines = text.split("\n")
    extension = compiled.extension
    # The compiled read-out names the few lines that may be credits (one pass in C).
    maybe = range(len(lines)) if extension is None else extension.credit_lines(text)
    credits = {number for number in maybe if _is_credit(lines[number])}
    if not credits:
        return text
    return "\n".join(line for number, line in enumerate(lines) if number not in credits)


def _is_credit(line: str) -> bool:
    # A character takes at most 4 UTF-8 bytes and at least 1: most lines need no encode.
    if len(line) > _MAX_CREDIT_BYTES:
        return False
    if len(line) * 4 > _MAX_CREDIT_BYTES and len(line.encode("utf-8")) > _MAX_CREDIT_BYTES:
        return False
    return (
        _CREDIT_START.match(line) is not None
        or (_may_be_credit_anywhere(line) and _CREDIT_ANYWHERE.search(line) is not None)
        or _is_dated_byline(line)
    )


def _may_be_credit_anywhere(line: str) -> bool:
    """False when ``line`` certainly has no match of _CREDIT_ANYWHERE (see
    _CREDIT_ANYWHERE_SEQUENCES): a necessary condition, tested in C."""
    if _CREDIT_ANYWHERE_CHARS.search(line) is not None:
        return True
    lowered = line.lower().replace("ſ", "s")
    return any(sequence in lowered for sequence in _CREDIT_ANYWHERE_SEQUENCES)


def _is_dated_byline(line: str) -> bool:
    """A few words (a name, a place) beside a date, and nothing that reads as a sentence."""
    if len(line) > _MAX_BYLINE_CHARS or _YEAR_DIGITS.search(line) is None:
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


#: The elements the title is read from.
_TITLE_TAGS = frozenset(["meta", "title", "h1"])


def _title(tree: Tree, found: list[int]) -> str:
    """The page's title: og:title or twitter:title, else <title> without its site's name,
    else the first h1 with text. ``found``: the page's elements of _TITLE_TAGS in document
    order, among others (one search serves the title and the streamed segments)."""
    tags = [tree.tag(el) for el in found]
    for meta in (el for el, tag in zip(found, tags, strict=True) if tag == "meta"):
        key = tree.get(meta, "property") or tree.get(meta, "name") or ""
        if key.lower() in ("og:title", "twitter:title"):
            content = " ".join((tree.get(meta, "content") or "").split())
            if content:
                return _clean_title(content, "")
    title = ""
    for el in (el for el, tag in zip(found, tags, strict=True) if tag == "title"):
        title = tree.text_content(el)
        break
    headline = ""
    for el in (el for el, tag in zip(found, tags, strict=True) if tag == "h1"):
        headline = tree.text_content(el)
        if headline.strip():
            break
    if not title.strip():
        return " ".join(headline.split())
    return _clean_title(title, headline)


# Byte-order marks, and the same bytes read in a single-byte charset, are never text: they
# come from files concatenated into a page or from stray bytes after its end.
_BYTE_ORDER_MARKS = re.compile("\ufeff|\u00ef\u00bb\u00bf|\u00ff\u00fe|\u00fe\u00ff")


# Every character that a C1 character or a mark holds: most texts have none, and are
# passed by one scan (and an ASCII text by none at all).
_C1_OR_MARK = re.compile("[\x80-\x9f\ufeff\u00ef\u00ff\u00fe]")


def _needs_cleaning(text: str) -> bool:
    """Whether :func:`_without_c1` could change ``text`` (False: it returns it as is)."""
    if text.isascii():
        return False
    extension = compiled.extension
    if extension is not None:
        return extension.has_c1_or_mark(text)
    return _C1_OR_MARK.search(text) is not None


def _without_c1(text: str) -> str:
    if not _needs_cleaning(text):
        return text
    if _C1.search(text):
        text = text.translate(_C1_AS_CP1252)
    return _BYTE_ORDER_MARKS.sub("", text)
