"""Extraction's walk and read-out against a reference written the plain way, kept here.

The walk visits elements in one loop (ends found from each element's parent, dropped
subtrees passed over) on both paths; the reference below takes start and end events of a
recursive descent over selectolax's nodes, and reads an element's text and the text after
it as the runs of text nodes they are (comments passed over). The walk must give exactly
what the reference gives: the same frames (every sum made in the same order, so the same
floats), the same candidates, dropped elements and marks, in the same order, and the same
lines. Random trees of nested blocks, inline elements, boilerplate tags, hiding attributes
and role names reach the cases a fixture corpus may miss (a dropped element last in its
parent, at the end of the body, inside inline elements, with tails).

The credit-line and cleaning shortcuts are checked as the necessary conditions they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from scrapy_simhash.text import compiled
from scrapy_simhash.text.choose import _choose
from scrapy_simhash.text.parse import _parse, _place_streamed_segments, _strip_junk, _tree
from scrapy_simhash.text.readout import (
    _BYTE_ORDER_MARKS,
    _C1,
    _C1_AS_CP1252,
    _drop_credits,
    _flush,
    _is_credit,
    _lines,
    _may_be_credit_anywhere,
    _needs_cleaning,
)
from scrapy_simhash.text.rules import (
    _BOILERPLATE_TAGS,
    _CREDIT_ANYWHERE,
    _DATE_IN_LINE,
    _INLINE_TAGS,
    _JUDGED_ATTRIBUTES,
    _MARK_ATTRIBUTES,
    _MARK_TAGS,
    _MAX_LINK_DENSITY,
    _YEAR_DIGITS,
    _hides,
    _names_role,
)
from scrapy_simhash.text.tree import PureTree
from scrapy_simhash.text.walk import _score_paragraph, _Walk


def _text_run(node: Any) -> str:
    """The text nodes from ``node`` on among its siblings, up to the first element."""
    text = ""
    while node is not None and not node.is_element_node:
        if node.is_text_node:
            text += node.text_content or ""
        node = node.next
    return text


class _Events:
    """("start", element) and ("end", element) for ``top`` and every element under it, as
    lxml's ``iterwalk`` gives them: ``skip()`` after a start passes over that element's
    subtree (its end still comes)."""

    def __init__(self, top: Any) -> None:
        self._top = top
        self._skipped = False

    def skip(self) -> None:
        self._skipped = True

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self._events(self._top)

    def _events(self, node: Any) -> Iterator[tuple[str, Any]]:
        self._skipped = False
        yield "start", node
        if not self._skipped:
            child = node.first_child
            while child is not None:
                if child.is_element_node:
                    yield from self._events(child)
                child = child.next
        yield "end", node


def _boilerplate(walk: _Walk, el: int, tag: str, guarded: bool) -> bool | None:
    """Whether the walk drops an element it judges: by its tag or a hiding attribute
    unless it is large (None: kept for its size), else by its class and id names."""
    tree = walk.tree
    hidden = _hides(
        tree.get(el, "hidden"), tree.get(el, "aria-hidden"), tree.get(el, "style"),
        tree.get(el, "role"),
    )  # fmt: skip
    if tag in _BOILERPLATE_TAGS or hidden:
        return walk._small(walk.chars(el)) or None
    if guarded or _names_role(tree, el) >= 0:
        return False
    assert isinstance(tree, PureTree)
    return walk.named_boilerplate(el, tree.node(el).attributes)


def reference_run(walk: _Walk) -> None:
    """The walk by start and end events, filling ``walk``'s records (by node address)."""
    tree = walk.tree
    assert isinstance(tree, PureTree)
    stats, candidates, marks = walk.stats, walk.candidates, walk.marks
    body = tree.node(walk.body)
    own: list[str] = []
    root: list[Any] = [0, 0, 0.0, 0.0, own, own, False, walk.body, body.tag]
    stack = [root]
    text = _text_run(body.first_child).strip()
    if text:
        root[0] += len(text)
        own.append(text)
    events = _Events(body)
    walker = iter(events)
    next(walker)  # the body's start: its frame is the root's
    for event, node in walker:
        el = tree.known(node)
        if event == "start":
            tag = node.tag
            parent = stack[-1]
            guarded = parent[6]
            attributes = node.attributes
            if tag in _BOILERPLATE_TAGS or not _JUDGED_ATTRIBUTES.isdisjoint(attributes):
                verdict = _boilerplate(walk, el, tag, guarded)
                if verdict:
                    walk.dropped.append(el)
                    events.skip()  # its end gives its tail
                    stack.append(["dropped", el])
                    continue
                if verdict is None:
                    guarded = True
            if tag in _INLINE_TAGS:
                frame = [0, 0, 0.0, 0.0, None, parent[5], guarded, el, tag]
            else:
                own = []
                frame = [0, 0, 0.0, 0.0, own, own, guarded, el, tag]
            stack.append(frame)
            stats[el] = frame
            if tag in _MARK_TAGS or (attributes and not _MARK_ATTRIBUTES.isdisjoint(attributes)):
                marks.append(el)
            text = _text_run(node.first_child).strip()
            if text:
                frame[0] += len(text)
                frame[5].append(text)
            continue
        frame = stack.pop()
        if frame is root:
            break
        if frame[0] != "dropped":
            parent = stack[-1]
            own = frame[4]
            if own:
                _score_paragraph(own, frame, stack)
            if frame[2]:
                candidates.append(el)
            chars = frame[0]
            parent[0] += chars
            parent[1] += chars if frame[8] == "a" else frame[1]
            parent[3] += frame[3]
        tail = _text_run(node.next).strip()
        if tail:
            top = stack[-1]
            top[0] += len(tail)
            top[5].append(tail)
    stats[walk.body] = root
    if root[2]:
        candidates.append(walk.body)


def reference_lines(
    tree: PureTree,
    containers: Iterable[int],
    stats: dict[int, list[Any]],
    *,
    link_density: float = _MAX_LINK_DENSITY,
    links_only: bool = False,
    dense_max_chars: int | None = None,
    skip: Iterable[int] = (),
) -> str:
    """The read-out by start and end events."""
    lines: list[str] = []
    current: list[str] = []
    skipped = set(skip)
    for container in containers:
        events = _Events(tree.node(container))
        for event, node in events:
            tag = node.tag
            el = tree.known(node)
            if event == "start":
                frame = stats.get(el)
                if frame is None or el in skipped:
                    events.skip()
                    continue
                if links_only and (tag in _BOILERPLATE_TAGS or _names_role(tree, el) < 0):
                    events.skip()
                    continue
                if tag not in _INLINE_TAGS:
                    if current:
                        _flush(current, lines)
                    chars = frame[0]
                    if tag == "h1" or (
                        chars
                        and frame[1] > chars * link_density
                        and (dense_max_chars is None or chars <= dense_max_chars)
                    ):
                        events.skip()
                        continue
                text = _text_run(node.first_child)
                if text:
                    current.append(text)
                continue
            if current and (tag not in _INLINE_TAGS or tag == "br"):
                _flush(current, lines)
            if el != container:
                tail = _text_run(node.next)
                if tail:
                    current.append(tail)
        if current:
            _flush(current, lines)
    return "\n".join(lines)


_TAGS = [
    "div",
    "p",
    "span",
    "a",
    "b",
    "li",
    "ul",
    "section",
    "article",
    "main",
    "h1",
    "h2",
    "br",
    "nav",
    "aside",
    "footer",
    "header",
    "noscript",
    "td",
    "blockquote",
    "em",
]
_ATTRIBUTES = [
    "",
    "",
    "",
    ' class="content"',
    ' class="comment-list"',
    ' class="sidebar"',
    ' class="share-bar"',
    ' id="post-12"',
    ' class="entry-content" id="main"',
    " hidden",
    ' aria-hidden="true"',
    ' style="display: none"',
    ' role="navigation"',
    ' role="main"',
    ' itemprop="articleBody"',
    ' class="related"',
    ' class="js-share article-body"',
]
_WORDS = [
    "alpha",
    "beta, gamma",
    "delta.",
    "编辑",
    "新闻内容，",
    "  ",
    "\n",
    "word " * 12,
    "long sentence with commas, and more, and more words here " * 3,
    "x",
    "one <!-- a note --> two",
    "<!-- c -->",
]


@st.composite
def html_trees(draw: st.DrawFn, depth: int = 0) -> str:
    """A fragment of nested elements with text and tails (no more than 5 levels)."""
    parts = []
    for _ in range(draw(st.integers(0, 4 if depth < 4 else 0))):
        tag = draw(st.sampled_from(_TAGS))
        attributes = draw(st.sampled_from(_ATTRIBUTES))
        text = draw(st.sampled_from(_WORDS))
        inner = "" if tag == "br" else draw(html_trees(depth + 1))
        tail = draw(st.sampled_from(_WORDS))
        close = "" if tag == "br" else f"</{tag}>"
        parts.append(f"<{tag}{attributes}>{text}{inner}{close}{tail}")
    return "".join(parts)


def _prepared(fragment: str) -> Any:
    """The page's parser, its streamed segments placed and its junk removed."""
    html = f"<html><head><title>t</title></head><body>{fragment}</body></html>"
    parser = _parse(html.encode())
    assert parser is not None
    with compiled.interpreted():
        tree = PureTree(parser)
        _place_streamed_segments(tree, tree.descendants(tree.root, frozenset(["template"])))
        _strip_junk(tree)
    return parser


@settings(max_examples=250, deadline=None)
@given(html_trees())
def test_the_walk_and_read_out_give_what_the_reference_gives(fragment: str) -> None:
    _against_the_reference(fragment, interpreted=False)


@settings(max_examples=250, deadline=None)
@given(html_trees())
def test_the_interpreted_walk_and_read_out_give_what_the_reference_gives(fragment: str) -> None:
    _against_the_reference(fragment, interpreted=True)


def _against_the_reference(fragment: str, *, interpreted: bool) -> None:
    parser = _prepared(fragment)  # one tree: both walks name its elements by address
    with compiled.interpreted() if interpreted else nullcontext():
        walk = _Walk(_tree(parser))
        walk.run()
    reference = _Walk(PureTree(parser))
    with compiled.interpreted():
        reference_run(reference)
    assert list(walk.stats) == list(reference.stats)
    assert walk.stats == reference.stats
    assert walk.candidates == reference.candidates
    assert walk.dropped == reference.dropped
    assert walk.marks == reference.marks
    containers, _ = _choose(walk)
    body = walk.body
    tree = reference.tree
    assert isinstance(tree, PureTree)
    for options in (
        {},
        {"dense_max_chars": 1000, "skip": containers},
        {"link_density": 1.0, "links_only": True},
    ):
        for chosen in (containers, [body], [*containers, body]):
            expected = reference_lines(tree, chosen, reference.stats, **options)  # type: ignore[arg-type]
            assert _lines(chosen, walk, **options) == expected  # type: ignore[arg-type]


_LINE_PIECES = [
    "copyright",
    "COPYRIGHT 2024",
    "Co\u0131pyright",
    "all rights reserved",
    "all rigHtſ reſerved",
    "ALL RIGHTS RESERVED",
    "all rigHts reſerved",
    "ICP备",
    "icp证",
    "\u0130CP备",
    "©",
    "© 2024",
    "(c)",
    "责任编辑：",
    "阅读 123",
    "浏览：(5)",
    "点击数 7",
    "版权所有",
    " ",
    "a",
    "p",
    "y",
    "g",
    "h",
    "Ｐy",
    "2024-03-01",
    "March 4, 2025",
    "x",
    # The forms of a date, whole and in pieces, in other scripts' digits too.
    "1er février 2024",
    "12 de marzo de 2024",
    "3. Februar 2022",
    "4 Mar 2025",
    "03/04/2024",
    "3.1.24",
    "\u0662\u0660\u0662\u0664-\u0660\u0663-\u0660\u0661",
    "\uff12\uff10\uff12\uff14/\uff13/\uff11",
    "7",
    "12",
    "202",
    "-",
    "/",
    ".",
    "mar",
]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_LINE_PIECES), max_size=8).map("".join))
def test_credit_shortcuts_never_pass_a_line_the_patterns_match(line: str) -> None:
    if _CREDIT_ANYWHERE.search(line):
        assert _may_be_credit_anywhere(line)
    if _DATE_IN_LINE.search(line):
        assert _YEAR_DIGITS.search(line)


# Pieces of credit lines and of lines that are not: every form _CREDIT_START, _CREDIT_ANYWHERE
# and the dated bylines take, their starts, their letters in other cases, characters beyond
# ASCII that match ASCII letters in any case, digits of other scripts, and line breaks.
_CREDIT_PIECES = [
    *_LINE_PIECES,
    *[
        "来源",
        "作者",
        "责任编辑",
        "原标题",
        "发布时间",
        "本文来源",
        "记者",
        "分享到",
        "扫一扫",
        "地址",
        "电话",
        "备案号",
    ],
    *[
        "by",
        "posted",
        "Published",
        "UPDATED",
        "last",
        "updated",
        "written",
        "by",
        "share",
        "print",
        "email",
        "tweet",
    ],
    *["comments", "Tue", "Sunday", "march", "MAY", "4th", "3", "31", "2025", "＿", "_"],
    "ſhare",
    "poſted",
    "\u212aelvin",
    "\u0130",
    "ſ",
    "\n",
    "\n",
    ":",
    "：",
    "!",
    ". ",
    ", ",
    "本报讯",
    "The council met on Tuesday",
    "x" * 90,
    "-" * 85,  # a date after as many non-word characters is still a date alone
    "中" * 70,
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_CREDIT_PIECES), max_size=12).map("".join))
@example("-" * 85 + "March 4, 2025")  # a date alone past the dated bylines' length
@example("x\npoſted by staff\n" + "y" * 300 + "\n版权所有")  # "ſ" inside a first word
@example("prİnt\nprınt")  # "İ" and "ı" are "i" in any case
@example("\u4dc0来源：新华网\n\U0002ffff来源：新华网\n\ufa6e作者：王五")  # not word characters
@example("Share:\nThe council met\n2025-03-04 记者 张三\nall rightS reserved")
def test_the_compiled_scan_names_every_line_that_may_be_a_credit(text: str) -> None:
    """The compiled read-out tests only the lines its scan names: it names every line
    that the credit patterns take, and the text that is left is the interpreted one's."""
    extension = compiled.extension
    assert extension is not None
    named = set(extension.credit_lines(text))
    for number, line in enumerate(text.split("\n")):
        if _is_credit(line):
            assert number in named, line
    with compiled.interpreted():
        expected = _drop_credits(text)
    assert _drop_credits(text) == expected


@settings(max_examples=1000, deadline=None)
@given(st.text(st.sampled_from("ab \n\x80\x81\x9f\ufeff\u00ef\u00bb\u00bf\u00ff\u00fe\u00e9")))
def test_text_said_clean_is_left_as_it_is_by_the_cleaning(text: str) -> None:
    cleaned = _BYTE_ORDER_MARKS.sub("", text.translate(_C1_AS_CP1252) if _C1.search(text) else text)
    if not _needs_cleaning(text):
        assert cleaned == text
