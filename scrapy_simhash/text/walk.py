"""The scoring walk: one pass over the body that drops boilerplate, measures every element
(text, link text) and credits each paragraph to its parent and grandparent; and the final
score of a container from those measurements and its semantic hints.

The walk runs for every element of every page, so its records are plain lists (frames)
indexed by the constants defined here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain
from typing import Any

from lxml import etree

from scrapy_simhash.text import compiled
from scrapy_simhash.text.rules import (
    _BOILERPLATE_TAGS,
    _HIDING_ATTRIBUTES,
    _INLINE_TAGS,
    _JUDGED_ATTRIBUTES,
    _LARGE_SHARE,
    _MARK_ATTRIBUTES,
    _MARK_TAGS,
    _MIN_PARAGRAPH_BYTES,
    _TAG_BONUS,
    _is_hidden,
    _names_role,
)

# A frame holds the measurements of one element during the walk, as a list because the
# walk creates one per element and list literals are the cheapest record Python has:
_CHARS = 0  # text characters in the subtree (stripped text pieces)
_LINK = 1  # of which inside links
_SCORE = 2  # paragraph credit from children (full) and grandchildren (half)
_MASS = 3  # paragraph scores of the whole subtree
_OWN = 4  # block elements: the text pieces directly inside (through inline elements)
_BLOCK = 5  # where this element's text pieces go: its own _OWN, or its block's
_GUARDED = 6  # inside an element kept despite looking like boilerplate
_ELEMENT = 7  # the element measured (compiled: its key, see _Walk.extension)
_TAG = 8  # its tag
_Frame = list[Any]  # [chars, link, score, mass, own, block's own, guarded, element, tag]


class _Walk:
    """One pass over the body: drop boilerplate, measure elements, score containers."""

    def __init__(self, body: etree._Element) -> None:
        self.body = body
        #: Every kept element's frame, by element; by node address when compiled (no
        #: element object is made for most elements then): ask :meth:`frame`.
        self.stats: dict[Any, _Frame] = {}
        self.candidates: list[etree._Element] = []
        self.dropped: list[etree._Element] = []
        # Kept elements that may mark the page's article (see _marked_article).
        self.marks: list[etree._Element] = []
        #: The extension that ran the walk (its read-out reads what it keyed), or None.
        self.extension: compiled.Extension | None = None
        self._body_text: str | None = None
        # Text lengths of elements by node address, made by the extension that runs the
        # walk (see subtree_chars).
        self._counted: Any = None

    def measured(self, el: etree._Element) -> _Frame | None:
        """The frame of ``el``; None when it was dropped, is inside a dropped element, is
        outside the body or is no element."""
        if self.extension is None:
            return self.stats.get(el)
        return self.stats.get(self.extension.address(el))

    def frame(self, el: etree._Element) -> _Frame:
        """The frame of ``el``, which the walk kept."""
        found = self.measured(el)
        if found is None:
            raise KeyError(el)
        return found

    def body_text(self) -> str:
        """Every character of text in the body (the walk drops nothing from the tree)."""
        if self._body_text is None:
            self._body_text = _text_content(self.body)
        return self._body_text

    def body_chars(self) -> int:
        return self.chars(self.body)

    def chars(self, el: etree._Element) -> int:
        """``len(_text_content(el))``; compiled, counted without making the text, each
        subtree once."""
        extension = self.extension
        if extension is None:
            if el is self.body:
                return len(self.body_text())
            return len(_text_content(el))
        return extension.subtree_chars(el, self._counted)

    def is_boilerplate(
        self, el: etree._Element, tag: str, attributes: Sequence[str | bytes], guarded: bool
    ) -> bool | None:
        """True to drop ``el``; None when it looks like boilerplate but is kept for its size
        (its descendants are then not judged by class names); False otherwise."""
        if tag in _BOILERPLATE_TAGS or _is_hidden(el, attributes):
            return self._small(self.chars(el)) or None
        if guarded or _names_role(el) >= 0:
            return False
        return self.named_boilerplate(el)

    def named_boilerplate(self, el: etree._Element) -> bool | None:
        """is_boilerplate for an element that is neither hidden nor of a boilerplate tag,
        unguarded, whose class/id names are boilerplate."""
        if el.get("itemprop") == "articleBody":
            return False
        chars = self.chars(el)
        if not self._small(chars):
            return None
        # Shorter than one article paragraph, it cannot hold several: no XPath needed.
        return (chars < _ARTICLE_PARAGRAPH_CHARS or not _holds_article(el)) or None

    def _small(self, chars: int) -> bool:
        """Whether an element of ``chars`` characters of text holds a small enough share
        of the page's text to be dropped."""
        return chars < self.body_chars() * _LARGE_SHARE

    def run(self) -> None:
        """Measure every element bottom-up in one walk: compiled when the package was
        built with its C extension (:mod:`~scrapy_simhash.text.compiled`), interpreted
        otherwise; both give the same frames."""
        extension = compiled.extension
        if extension is not None:
            self.extension = extension
            self._counted = extension.Counts()
            extension.run(self)
        else:
            self.run_interpreted()

    def run_interpreted(self) -> None:
        """The walk in Python.

        This loop runs for every element of every page, so it is written for speed:
        frames are lists indexed by literal numbers (the meanings are _CHARS to
        _TAG), elements without class, id or hiding attributes are never judged, and
        no frame refers to itself, so frames are freed without the cycle collector.

        The elements come from lxml's plain iterator, in document order, which costs a
        fifth of the start and end events of ``iterwalk``: an element's end is when the
        next element's parent is no longer it, and a dropped element's subtree is passed
        over up to the element that follows it. The ends are taken in the order
        ``iterwalk`` would give them, so every sum is made in the same order.
        """
        body = self.body
        stats = self.stats
        candidates = self.candidates
        is_boilerplate = self.is_boilerplate
        named_boilerplate = self.named_boilerplate
        names_role = _names_role
        inline_tags = _INLINE_TAGS
        boilerplate_tags = _BOILERPLATE_TAGS
        judged = _JUDGED_ATTRIBUTES
        hiding = _HIDING_ATTRIBUTES
        marks = self.marks
        mark_tags = _MARK_TAGS
        mark_attributes = _MARK_ATTRIBUTES
        min_paragraph = _MIN_PARAGRAPH_BYTES
        own: list[str] = []
        block: list[str]
        raw = body.text
        root: _Frame = [0, 0, 0.0, 0.0, own, own, False, body, body.tag]
        stack: list[_Frame] = [root]
        top = root
        text = (raw or "").strip()
        if text:
            root[0] += len(text)
            own.append(text)
        # Passing over a dropped subtree up to this node (_PASSED: up to the body's end).
        resume: object = None
        elements = body.iter()
        next(elements)  # the body itself is never judged
        # None after the last element: every element still open ends, as the body's
        # children do.
        for el in chain(elements, (None,)):
            if resume is not None:
                if el is not resume and el is not None:
                    continue
                resume = None
            parent_el = body if el is None else el.getparent()
            while top[7] is not parent_el:
                # The end of the top element: its subtree is over.
                frame = stack.pop()
                top = stack[-1]
                own = frame[4]
                # _score_paragraph's cheap bound first (4 bytes a character at most): most
                # blocks are too short to be a paragraph, and are not scored.
                if own and 4 * frame[0] + len(own) >= min_paragraph:
                    _score_paragraph(own, frame, stack)
                ended = frame[7]
                if frame[2]:
                    candidates.append(ended)
                chars = frame[0]
                top[0] += chars
                top[1] += chars if frame[8] == "a" else frame[1]
                top[3] += frame[3]
                raw = ended.tail
                if raw:
                    tail = raw.strip()
                    if tail:
                        top[0] += len(tail)
                        top[5].append(tail)
            if el is None:
                break
            tag = el.tag
            guarded = top[6]
            attributes = el.keys()  # empty for most elements: no set test then
            verdict: bool | None = False
            if tag.__class__ is not str:
                verdict = True  # an entity or other non-element node: passed over
            elif tag in boilerplate_tags or (attributes and not judged.isdisjoint(attributes)):
                # is_boilerplate, with its usual case (only class/id names) inline.
                if tag in boilerplate_tags or not hiding.isdisjoint(attributes):
                    verdict = is_boilerplate(el, tag, attributes, guarded)
                elif not guarded and names_role(el) < 0:
                    verdict = named_boilerplate(el)
                if verdict:
                    self.dropped.append(el)
                elif verdict is None:
                    guarded = True
            if verdict:
                # Its subtree is passed over; it ends at once, and its tail counts.
                raw = el.tail
                if raw:
                    tail = raw.strip()
                    if tail:
                        top[0] += len(tail)
                        top[5].append(tail)
                resume = _following(el, body)
                continue
            # The frame starts with the element's own text counted (no addition).
            raw = el.text
            chars = 0
            if raw:
                text = raw.strip()
                if text:
                    chars = len(text)
            if tag in inline_tags:
                block = top[5]
                frame = [chars, 0, 0.0, 0.0, None, block, guarded, el, tag]
            else:
                block = []
                frame = [chars, 0, 0.0, 0.0, block, block, guarded, el, tag]
            if chars:
                block.append(text)
            stack.append(frame)
            top = frame
            stats[el] = frame
            if tag in mark_tags or (attributes and not mark_attributes.isdisjoint(attributes)):
                marks.append(el)
        # The body's end: its tail is not part of it.
        stats[body] = root
        if root[2]:
            candidates.append(body)


# What _following gives for a subtree that reaches the body's end: no node is it.
_PASSED = object()


def _following(el: etree._Element, body: etree._Element) -> object:
    """The node that comes after ``el``'s subtree in document order, within ``body``
    (_PASSED: the subtree reaches the body's end)."""
    while el is not body:
        after = el.getnext()
        if after is not None:
            return after
        parent = el.getparent()
        if parent is None:
            break
        el = parent
    return _PASSED


# An element named like a widget ("socialicons-sticky", "share-wrap") that holds several
# long paragraphs is a wrapper of the article that a theme named after something it also
# shows. Comment sections hold long paragraphs too, and so do related posts (teasers with
# excerpts as long as a paragraph): those are never the article, and stay boilerplate.
_ARTICLE_PARAGRAPHS = etree.XPath(
    "count(.//p[string-length(normalize-space()) >= $chars])", smart_strings=False
)
_MIN_ARTICLE_PARAGRAPHS = 3
_ARTICLE_PARAGRAPH_CHARS = 150
_NEVER_ARTICLE_NAMES = re.compile(
    r"comment|disqus|repl(?:y|ies)|respond|discussion|related", re.IGNORECASE
)


def _holds_article(el: etree._Element) -> bool:
    names = f"{el.get('class') or ''} {el.get('id') or ''}"
    if _NEVER_ARTICLE_NAMES.search(names):
        return False
    count = _ARTICLE_PARAGRAPHS(el, chars=_ARTICLE_PARAGRAPH_CHARS)
    return isinstance(count, float) and count >= _MIN_ARTICLE_PARAGRAPHS


def _score_paragraph(own: list[str], frame: _Frame, stack: list[_Frame]) -> None:
    """Credit a block's own text, when it is a paragraph, to its parent and grandparent."""
    # Cheap bound first: a piece of n characters has at most 4n UTF-8 bytes.
    if 4 * frame[0] + len(own) < _MIN_PARAGRAPH_BYTES:
        return
    text = " ".join(own) if len(own) > 1 else own[0]
    size = len(text.encode("utf-8"))
    if size < _MIN_PARAGRAPH_BYTES:
        return
    score = 1.0 + text.count(",") + text.count("，") + text.count("。") + min(size / 100, 3)
    frame[3] += score
    stack[-1][2] += score
    if len(stack) > 1:
        stack[-2][2] += score / 2


def _text_content(el: etree._Element) -> str:
    return str(etree.tostring(el, method="text", encoding="unicode", with_tail=False))


def _weight(el: etree._Element) -> float:
    weight = _TAG_BONUS.get(str(el.tag), 0.0)
    weight += 25 * _names_role(el)
    if el.get("itemprop") == "articleBody" or el.get("role") == "main":
        weight += 25
    return weight


# The largest weight an element can get: article tag, content class, articleBody/main.
_MAX_WEIGHT = 10.0 + 25 + 25


def _final_score(el: etree._Element, frame: _Frame) -> float:
    """Paragraph score plus the semantic hints, less the share of link text.

    A positive hint counts in full only for a container of at least _HINTED_SCORE of
    prose: an <article class="post-teaser"> beside a real article holds a paragraph or
    two, and must not win on its name alone.
    """
    chars: int = frame[_CHARS]
    density = frame[_LINK] / chars if chars else 0.0
    score: float = frame[_SCORE]
    weight = _weight(el)
    if weight > 0 and score < _HINTED_SCORE:
        weight *= score / _HINTED_SCORE
    return (score + weight) * (1.0 - density)


# The paragraph score (about two paragraphs) from which semantic hints count in full.
_HINTED_SCORE = 5.0
