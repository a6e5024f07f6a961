"""The scoring walk: one pass over the body that drops boilerplate, measures every element
(text, link text) and credits each paragraph to its parent and grandparent; and the final
score of a container from those measurements and its semantic hints.

The walk runs for every element of every page, so its records are plain lists (frames)
indexed by the constants defined here.
"""

from __future__ import annotations

import re
from typing import Any

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
    _hides,
    _names_role,
    _role_of_names,
)
from scrapy_simhash.text.tree import PureTree, Tree, attribute, normalized_length, run_after

# A frame holds the measurements of one element during the walk, as a list because the
# walk creates one per element and list literals are the cheapest record Python has:
_CHARS = 0  # text characters in the subtree (stripped text pieces)
_LINK = 1  # of which inside links
_SCORE = 2  # paragraph credit from children (full) and grandchildren (half)
_MASS = 3  # paragraph scores of the whole subtree
_OWN = 4  # block elements: the text pieces directly inside (through inline elements)
_BLOCK = 5  # where this element's text pieces go: its own _OWN, or its block's
_GUARDED = 6  # inside an element kept despite looking like boilerplate
_ELEMENT = 7  # the element measured (its node's address)
_TAG = 8  # its tag
_Frame = list[Any]  # [chars, link, score, mass, own, block's own, guarded, element, tag]


class _Walk:
    """One pass over the body: drop boilerplate, measure elements, score containers."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.body = tree.body
        #: Every kept element's frame, by element (its node's address).
        self.stats: dict[int, _Frame] = {}
        self.candidates: list[int] = []
        self.dropped: list[int] = []
        # Kept elements that may mark the page's article (see _marked_article).
        self.marks: list[int] = []
        #: The extension that ran the walk (its read-out reads the same tree), or None.
        self.extension: compiled.Extension | None = None
        self._body_text: str | None = None
        # Text lengths of elements by node address, made by the extension that runs the
        # walk (see subtree_chars).
        self._counted: Any = None

    def measured(self, el: int) -> _Frame | None:
        """The frame of ``el``; None when it was dropped, is inside a dropped element or is
        outside the body."""
        return self.stats.get(el)

    def frame(self, el: int) -> _Frame:
        """The frame of ``el``, which the walk kept."""
        return self.stats[el]

    def body_text(self) -> str:
        """Every character of text in the body (the walk drops nothing from the tree)."""
        if self._body_text is None:
            self._body_text = self.tree.text_content(self.body)
        return self._body_text

    def body_chars(self) -> int:
        return self.chars(self.body)

    def chars(self, el: int) -> int:
        """``len(tree.text_content(el))``; compiled, counted without making the text, each
        subtree once."""
        extension = self.extension
        if extension is None:
            if el == self.body:
                return len(self.body_text())
            return len(self.tree.text_content(el))
        return extension.subtree_chars(el, self._counted)

    def named_boilerplate(self, el: int, attributes: dict[str, str | None]) -> bool | None:
        """Whether to drop an element that is neither hidden nor of a boilerplate tag,
        unguarded, whose class/id names are boilerplate: True to drop it, None when it is
        kept for its size (its descendants are then not judged by class names)."""
        if attribute(attributes, "itemprop") == "articleBody":
            return False
        chars = self.chars(el)
        if not self._small(chars):
            return None
        # Shorter than one article paragraph, it cannot hold several: none are counted.
        return (chars < _ARTICLE_PARAGRAPH_CHARS or not _holds_article(self.tree, el)) or None

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
        """The walk in Python, over selectolax's nodes: the same steps, in the same order,
        as the compiled ``run`` over lexbor's (each sum made in the same order, so both give
        the same frames).

        Elements are visited in document order; an element's end is when the next element's
        parent is no longer it, and a dropped element's subtree is passed over. Text before
        an element's first child element is its own, text after its end (up to the next
        element) its parent's; comments are passed over.
        """
        tree = self.tree
        assert isinstance(tree, PureTree)
        body_id = self.body
        body = tree.node(body_id)
        stats = self.stats
        candidates = self.candidates
        inline_tags = _INLINE_TAGS
        boilerplate_tags = _BOILERPLATE_TAGS
        judged = _JUDGED_ATTRIBUTES
        marks = self.marks
        mark_tags = _MARK_TAGS
        mark_attributes = _MARK_ATTRIBUTES
        min_paragraph = _MIN_PARAGRAPH_BYTES
        own: list[str] = []
        block: list[str]
        root: _Frame = [0, 0, 0.0, 0.0, own, own, False, body_id, body.tag]
        stack: list[_Frame] = [root]
        top = root
        top_id = body_id
        text = _stripped(run_after(body.first_child)[0])
        if text:
            root[0] += len(text)
            own.append(text)
        node = _next(body, body_id)  # the body itself is never judged
        while True:
            parent_id = body_id if node is None else node.parent.mem_id
            while top_id != parent_id:
                # The end of the top element: its subtree is over.
                frame = stack.pop()
                top = stack[-1]
                top_id = top[7]
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
                _count_tail(tree.node(ended), top)
            if node is None:
                break
            el = tree.known(node)
            tag = node.tag
            guarded = top[6]
            attributes = node.attributes  # empty for most elements: no set test then
            verdict: bool | None = False
            if tag in boilerplate_tags or (attributes and not judged.isdisjoint(attributes)):
                # Boilerplate by tag, by a hiding attribute (then kept when large), or by its
                # class/id names.
                if tag in boilerplate_tags or _hides_by(attributes):
                    verdict = self._small(self.chars(el)) or None
                elif not guarded and _role_by(attributes) < 0:
                    verdict = self.named_boilerplate(el, attributes)
                if verdict:
                    self.dropped.append(el)
                elif verdict is None:
                    guarded = True
            if verdict:
                # Its subtree is passed over; it ends at once, and its tail counts.
                _count_tail(node, top)
                node = _after(node, body_id)
                continue
            text = _stripped(run_after(node.first_child)[0])
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
            top_id = el
            stats[el] = frame
            if tag in mark_tags or (attributes and not mark_attributes.isdisjoint(attributes)):
                marks.append(el)
            node = _next(node, body_id)
        # The body's end: its tail is not part of it.
        stats[body_id] = root
        if root[2]:
            candidates.append(body_id)


def _hides_by(attributes: dict[str, str | None]) -> bool:
    """rules._hides of an element with these attributes."""
    if _HIDING_ATTRIBUTES.isdisjoint(attributes):
        return False
    return _hides(
        attribute(attributes, "hidden"),
        attribute(attributes, "aria-hidden"),
        attribute(attributes, "style"),
        attribute(attributes, "role"),
    )


def _role_by(attributes: dict[str, str | None]) -> int:
    """rules._role_of_names of an element with these attributes."""
    return _role_of_names(attribute(attributes, "class"), attribute(attributes, "id"))


def _stripped(pieces: list[str]) -> str:
    """A run of text pieces joined, stripped of whitespace."""
    if not pieces:
        return ""
    return (pieces[0] if len(pieces) == 1 else "".join(pieces)).strip()


def _count_tail(node: Any, top: _Frame) -> None:
    """The text after ``node`` (its tail) is its parent's: counted and kept in ``top``."""
    tail = _stripped(run_after(node.next)[0])
    if tail:
        top[0] += len(tail)
        top[5].append(tail)


def _next(node: Any, body_id: int) -> Any:
    """The element after ``node``'s start in document order within the body (None: none)."""
    child = node.first_child
    while child is not None:
        if child.is_element_node:
            return child
        child = child.next
    return _after(node, body_id)


def _after(node: Any, body_id: int) -> Any:
    """The element after ``node``'s subtree in document order within the body (None: its
    subtree reaches the body's end)."""
    while node.mem_id != body_id:
        after = node.next
        while after is not None:
            if after.is_element_node:
                return after
            after = after.next
        node = node.parent
        if node is None:
            break
    return None


# An element named like a widget ("socialicons-sticky", "share-wrap") that holds several
# long paragraphs is a wrapper of the article that a theme named after something it also
# shows. Comment sections hold long paragraphs too, and so do related posts (teasers with
# excerpts as long as a paragraph): those are never the article, and stay boilerplate.
_MIN_ARTICLE_PARAGRAPHS = 3
_PARAGRAPH = frozenset(["p"])
_ARTICLE_PARAGRAPH_CHARS = 150
_NEVER_ARTICLE_NAMES = re.compile(
    r"comment|disqus|repl(?:y|ies)|respond|discussion|related", re.IGNORECASE
)


def _holds_article(tree: Tree, el: int) -> bool:
    """Whether ``el`` holds _MIN_ARTICLE_PARAGRAPHS paragraphs of _ARTICLE_PARAGRAPH_CHARS
    characters or more (their whitespace runs counted as one space)."""
    names = f"{tree.get(el, 'class') or ''} {tree.get(el, 'id') or ''}"
    if _NEVER_ARTICLE_NAMES.search(names):
        return False
    count = 0
    for paragraph in tree.descendants(el, _PARAGRAPH):
        if normalized_length(tree.text_content(paragraph)) >= _ARTICLE_PARAGRAPH_CHARS:
            count += 1
            if count >= _MIN_ARTICLE_PARAGRAPHS:
                return True
    return False


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


def _weight(tree: Tree, el: int) -> float:
    weight = _TAG_BONUS.get(tree.tag(el), 0.0)
    weight += 25 * _names_role(tree, el)
    if tree.get(el, "itemprop") == "articleBody" or tree.get(el, "role") == "main":
        weight += 25
    return weight


# The largest weight an element can get: article tag, content class, articleBody/main.
_MAX_WEIGHT = 10.0 + 25 + 25


def _final_score(tree: Tree, el: int, frame: _Frame) -> float:
    """Paragraph score plus the semantic hints, less the share of link text.

    A positive hint counts in full only for a container of at least _HINTED_SCORE of
    prose: an <article class="post-teaser"> beside a real article holds a paragraph or
    two, and must not win on its name alone.
    """
    chars: int = frame[_CHARS]
    density = frame[_LINK] / chars if chars else 0.0
    score: float = frame[_SCORE]
    weight = _weight(tree, el)
    if weight > 0 and score < _HINTED_SCORE:
        weight *= score / _HINTED_SCORE
    return (score + weight) * (1.0 - density)


# The paragraph score (about two paragraphs) from which semantic hints count in full.
_HINTED_SCORE = 5.0
