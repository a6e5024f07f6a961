"""The compiled walk and read-out: built here, identical to the interpreted code, and not
needed.

An install on a machine with a C compiler builds ``scrapy_simhash/text/_compiled.pyx``;
one without a compiler installs without it, and the interpreted code gives the same
fingerprints. Both paths must agree on every page, or an index filled by one kind of
install stops matching the copies another kind sees. The frozen corpus of
``test_fingerprint_frozen.py`` runs on both paths; here random trees, which reach corners
no hand-written page does (text in odd places, nesting, attributes of every kind), are read
by both.
"""

from __future__ import annotations

import gc
import html
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_simhash.confirm import Signer
from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.text import compiled, extract_main_text, readout, rules
from scrapy_simhash.text.parse import (
    _parse,
    _place_streamed_segments,
    _strip_junk,
    _too_costly_interpreted,
)
from scrapy_simhash.text.parse import _tree as _tree_of
from scrapy_simhash.text.tree import Tree
from scrapy_simhash.text.walk import _Walk
from tests.scrapy_inprocess import HARBOUR, harness, story

REPO = Path(__file__).resolve().parents[2]
_P = frozenset(["p", "div"])

_TAGS = [
    "div", "p", "span", "a", "b", "br", "h1", "h2", "li", "ul", "article", "main", "section",
    "nav", "aside", "footer", "header", "td", "table", "tr", "em", "font", "pre", "noscript",
]  # fmt: skip
_CLASSES = [
    "content", "article-body", "sidebar", "comments", "share-bar", "entry-content has-sidebar",
    "post", "related", "nav", "js-share", "skip-link", "menu-item", "", "x y z",
]  # fmt: skip
_TEXTS = st.sampled_from(
    [
        "",
        " ",
        "\n   \t",
        "Hello, world.",
        "The council met on Tuesday, and the budget passed after a long debate about trams.",
        "新华社北京电，记者从会上获悉。今年的预算已经通过，",
        "\xa0nbsp\u3000wide ",
        "\x1c\x1dcontrol",
        "a&amp;b &lt;c&gt;",
        "Read more",
        "来源：新华网 责任编辑：王五",
        "By Staff Reporter, 2026-03-08",
    ]
)


@st.composite
def _attributes(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(f'class="{draw(st.sampled_from(_CLASSES))}"')
    if draw(st.integers(0, 4)) == 0:
        parts.append(f'id="{draw(st.sampled_from(_CLASSES))}"')
    hiding = draw(st.integers(0, 12))
    if hiding == 0:
        parts.append("hidden")
    elif hiding == 1:
        parts.append('style="display: none"')
    elif hiding == 2:
        parts.append('aria-hidden="true"')
    elif hiding == 3:
        parts.append(f'role="{draw(st.sampled_from(["main", "navigation", "article", "x"]))}"')
    elif hiding == 4:
        parts.append('itemprop="articleBody"')
    return (" " + " ".join(parts)) if parts else ""


def _tree(depth: int) -> st.SearchStrategy[str]:
    leaf = _TEXTS
    if depth == 0:
        return leaf

    @st.composite
    def element(draw: st.DrawFn) -> str:
        tag = draw(st.sampled_from(_TAGS))
        children = draw(st.lists(_tree(depth - 1), max_size=4))
        closed = draw(st.integers(0, 9)) > 0  # unclosed tags: the parser repairs them
        inner = "".join(children)
        return f"<{tag}{draw(_attributes())}>{draw(_TEXTS)}{inner}" + (
            f"</{tag}>{draw(_TEXTS)}" if closed else ""
        )

    return st.one_of(leaf, element())


_PAGES = st.lists(_tree(4), min_size=1, max_size=6).map(
    lambda parts: f"<html><head><title>A title</title></head><body>{''.join(parts)}</body></html>"
)


def _both(body: bytes) -> tuple[Any, Any]:
    compiled_result = extract_main_text(body)
    with compiled.interpreted():
        interpreted_result = extract_main_text(body)
    return compiled_result, interpreted_result


def _prepared(html: str) -> Tree:
    """The page's tree as the walk gets it: the compiled reading of lexbor's nodes, or
    selectolax's within ``compiled.interpreted()``."""
    parser = _parse(html.encode())
    assert parser is not None
    tree = _tree_of(parser)
    _place_streamed_segments(tree, tree.descendants(tree.root, frozenset(["template"])))
    _strip_junk(tree)
    return tree


def _elements(tree: Tree, top: int) -> list[int]:
    """``top`` and every element under it, in document order."""
    found = [top]
    for child in tree.children(top):
        found += _elements(tree, child)
    return found


def _place(tree: Tree, el: int) -> tuple[tuple[str, int], ...]:
    """Where ``el`` is: each ancestor's tag and place among its parent's elements."""
    steps = []
    parent = tree.parent(el)
    while parent is not None:
        steps.append((tree.tag(el), tree.children(parent).index(el)))
        el, parent = parent, tree.parent(parent)
    return tuple(reversed(steps))


def _measured(walk: _Walk) -> Any:
    """What the later steps read of a walk, with elements named by their place (each path
    parses its own tree: their addresses differ)."""
    tree = walk.tree
    frames = [(el, walk.measured(el)) for el in _elements(tree, walk.body)]
    return (
        [(_place(tree, el), f[:4], f[4], f[5], f[6], f[8]) for el, f in frames if f is not None],
        [_place(tree, el) for el in walk.candidates],
        [_place(tree, el) for el in walk.dropped],
        [_place(tree, el) for el in walk.marks],
        len(walk.stats),
    )


def _walks(html: str) -> tuple[_Walk, _Walk]:
    """The compiled and the interpreted walk of the page."""
    fast = _Walk(_prepared(html))
    fast.run()
    assert fast.extension is not None, compiled.MISSING
    with compiled.interpreted():
        slow = _Walk(_prepared(html))
        slow.run()
    return fast, slow


def test_the_extension_is_built_on_this_machine() -> None:
    """The test machines have a C compiler: an install there that did not build the
    extension is a broken build, not the slow path."""
    assert compiled.AVAILABLE, (
        "scrapy_simhash/text/_compiled was not built: run `pip install -e .` with a C "
        "compiler present"
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PAGES)
def test_the_compiled_walk_measures_every_tree_as_the_interpreted_one(html: str) -> None:
    fast, slow = _walks(html)
    assert _measured(fast) == _measured(slow)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PAGES)
def test_both_paths_extract_every_page_alike(html: str) -> None:
    fast, slow = _both(html.encode())
    assert fast == slow


_TAG_PIECES = st.sampled_from(
    [b"<div>", b"</div>", b"<DIV class=x>", b"<div/>", b"<p>", b"</p>", b"<li>", b"<br>",
     b"<span>", b"</span >", b"<a href='>'>", b"<", b"/", b">", b" ", b"\n", b"<!-- c -->",
     b"</", b"<1>", b"<x-very-long-custom-name>", b"</x-very-long-custom-name>", b"<Td>",
     b"\xe6\x96\xb0", b"<<div>>", b"<div\t\n>", b"<img/>", b"</br>", b"<sPaN>", b"<b id=1>",
     b"</b>", b"<Code>", b"</code>", b"<nobr>", b"<i/>", b"<font color=red>", b"<select>",
     b"</select>", b"<option>", b"<OPTION value=1>", b"</option>", b"<option/>"]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(_TAG_PIECES, max_size=60).map(b"".join),
    st.integers(0, 60),
    st.integers(0, 30),
    st.integers(0, 20),
)
def test_a_page_s_cost_is_counted_as_the_interpreted_scan_counts_it(
    data: bytes, max_scanned: int, max_reopened: int, max_compared: int
) -> None:
    extension = compiled.extension
    assert extension is not None
    found = extension.too_costly(data, max_scanned, max_reopened, max_compared)
    assert found == _too_costly_interpreted(data, max_scanned, max_reopened, max_compared)


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


#: The edges of UTF-8: overlong forms, surrogates, the last code point, stray continuation
#: bytes, leads that are never valid, and runs of ASCII long enough for the 8-byte scan.
_UTF8_PIECES = st.sampled_from(
    [b"a", b"abcdefgh", b"\x00", b"\x7f", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80",
     b"\xdf\xbf", b"\xe0\x9f\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xed\xa0\x80",
     b"\xef\xbf\xbd", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf",
     b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xe6\x96", b"\xe6", b"\xf0\x9f\x98"]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.lists(_UTF8_PIECES, max_size=30).map(b"".join),
        st.text().map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(max_size=40),
    )
)
def test_utf8_is_checked_as_the_decoder_checks_it(data: bytes) -> None:
    extension = compiled.extension
    assert extension is not None
    assert extension.valid_utf8(data) == _decodes(data)


@settings(max_examples=200, deadline=None)
@given(_PAGES)
def test_text_and_names_are_read_as_selectolax_reads_them(html: str) -> None:
    assert compiled.extension is not None
    fast = _prepared(html)
    with compiled.interpreted():
        slow = _prepared(html)
    counted = compiled.extension.Counts()  # one walk's: every question in document order
    pairs = list(zip(_elements(fast, fast.body), _elements(slow, slow.body), strict=True))
    for mine, theirs in pairs:
        text = slow.text_content(theirs)
        assert fast.text_content(mine) == text
        assert compiled.extension.subtree_chars(mine, counted) == len(text)
        assert fast.tag(mine) == slow.tag(theirs)
        for name in ("class", "id", "hidden", "role", "itemprop", "style"):
            assert fast.get(mine, name) == slow.get(theirs, name)
        assert len(fast.descendants(mine, _P)) == len(slow.descendants(theirs, _P))


def test_names_lexbor_keeps_in_its_own_table_are_read_alike() -> None:
    """Tags and attributes outside lexbor's standard names are numbered by the address of
    their entry in the document's table, short names held in the entry and long ones
    pointed to: the compiled walk reads both kinds, and judges elements by them as the
    interpreted walk does."""
    paragraph = "The council met on Tuesday, and the budget passed after a long debate. " * 4
    blocks = [
        ('<x-sidebar class="sidebar" data-x="1">', "</x-sidebar>"),  # judged by its class
        ('<div data-a-very-long-attribute-name-here="1" class="sidebar">', "</div>"),
        (
            '<custom-element-with-a-long-name aria-hidden="true">',
            "</custom-element-with-a-long-name>",
        ),
        ('<div role="navigation" hidden>', "</div>"),  # hidden
        ('<section itemprop="x" data-y="z">', "</section>"),  # may mark the article
    ]
    body = "".join(f"{start}<p>{paragraph}</p>{end}" for start, end in blocks)
    fast, slow = _walks(f"<html><body>{body}<p>{paragraph * 3}</p></body></html>")
    assert _measured(fast) == _measured(slow)
    assert [fast.tree.tag(el) for el in fast.dropped] == [
        "x-sidebar",
        "div",
        "custom-element-with-a-long-name",
        "div",
    ]
    assert [fast.tree.tag(el) for el in fast.marks] == ["section"]
    # Elements asked for by tag, standard names (matched by number) and others together.
    wanted = frozenset(["x-sidebar", "p", "custom-element-with-a-long-name", "section"])
    found = [fast.tree.tag(el) for el in fast.tree.descendants(fast.tree.root, wanted)]
    assert found == [slow.tree.tag(el) for el in slow.tree.descendants(slow.tree.root, wanted)]
    assert found == [
        "x-sidebar", "p", "p", "custom-element-with-a-long-name", "p", "p", "section", "p", "p"
    ]  # fmt: skip


def test_the_walk_s_frames_are_left_out_of_the_cyclic_collector_s_rounds() -> None:
    """A page's frames and blocks (two lists an element) live until the page is read; the
    collector, which runs every 700 new containers, would look at each of them in every
    round. They make no cycles, so the compiled walk takes them out of its rounds."""
    paragraph = "The council met on Tuesday, and the budget passed after a long debate. "
    body = "".join(f"<div><p>{paragraph}<b>{n}</b></p></div>" for n in range(300))
    fast, slow = _walks(f"<html><body>{body}</body></html>")
    frames = [frame for el, frame in fast.stats.items() if el != fast.body]
    assert len(frames) == 900
    assert not any(gc.is_tracked(frame) or gc.is_tracked(frame[4]) for frame in frames)
    assert _measured(fast) == _measured(slow)


def test_the_counts_of_a_page_s_elements_are_each_kept_once() -> None:
    """The table of counts grows from 64 slots as a page's elements are counted: every
    element with attributes is kept once, and each count is read back as it was made."""
    assert compiled.extension is not None
    nested = "".join(f'<div class="c{n}">{"é" * (n % 7)}<b>x</b>' for n in range(1500))
    tree = _prepared(f"<html><body>{nested}{'</div>' * 1500}</body></html>")
    counted = compiled.extension.Counts()
    body = tree.body
    assert compiled.extension.subtree_chars(body, counted) == len(tree.text_content(body))
    assert len(counted) == 1501  # the divs and the body
    for el in tree.descendants(body, frozenset(["div"])):
        assert compiled.extension.subtree_chars(el, counted) == len(tree.text_content(el))
    assert len(counted) == 1501


# Every character str.split splits on, and text of any other character beside them.
_WHITESPACE = [chr(code) for code in range(0x110000) if chr(code).isspace()]
_ANY_TEXT = st.lists(
    st.sampled_from(_WHITESPACE)
    | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
    | st.sampled_from(["word", "新闻", "é", "&amp;"]),
    max_size=40,
).map("".join)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ANY_TEXT, min_size=1, max_size=6))
def test_lines_are_read_alike_whatever_their_whitespace(texts: list[str]) -> None:
    """The compiled read-out makes each line from the UTF-8 of the tree's text nodes,
    whitespace runs single spaces: the lines are the interpreted read-out's, for text of
    any character."""
    assert compiled.extension is not None
    paragraphs = "".join(
        f"<p>{html.escape(text)}<b>{html.escape(text[::-1])}</b>{html.escape(text)}<br>x</p>"
        for text in texts
    )
    fast, slow = _walks(f"<html><body><div>{paragraphs}</div></body></html>")
    read = compiled.extension.read(fast.tree, [fast.body], fast.stats, 1.0, False, None, ())
    expected = readout._read_interpreted(slow.tree, [slow.body], slow.stats, 1.0, False, None, ())
    assert read == expected


@settings(max_examples=2000)
@given(
    st.lists(
        st.sampled_from(["\x7f", "\x80", "\x9f", "\xa0", "\xee", "\xef", "\xfd", "\xfe"])
        | st.sampled_from(["\xff", "\u0100", "\ufeff", "\ufefe", "\uff00", "a", "新"])
        | st.characters(blacklist_categories=("Cs",)),
        max_size=12,
    ).map("".join)
)
def test_c1_characters_and_marks_are_found_alike_on_both_paths(text: str) -> None:
    assert compiled.extension is not None
    expected = readout._C1_OR_MARK.search(text) is not None
    assert compiled.extension.has_c1_or_mark(text) == expected
    assert readout._needs_cleaning(text) == expected
    with compiled.interpreted():
        assert readout._needs_cleaning(text) == expected


def test_a_widget_named_wrapper_of_long_paragraphs_is_kept_on_both_paths() -> None:
    """A block named like boilerplate that holds a small share of the page is dropped,
    unless it holds several article paragraphs ("share-wrap" around the story); comment
    sections are dropped whatever they hold."""
    long = "The council met on Tuesday, and the budget passed after a long debate. " * 3
    short = "Share this story with a friend."
    article = "".join(f"<p>{long} {n}</p>" for n in range(12))
    wrapped = "".join(f"<p>{long}</p>" for _ in range(3))
    fast, slow = _walks(
        f'<html><body><div class="story">{article}</div>'
        f'<div class="share-wrap" id="kept">{wrapped}</div>'
        f'<div class="share-wrap" id="short"><p>{short}</p><p>{short}</p></div>'
        f'<div class="comments" id="comments">{wrapped}</div></body></html>'
    )
    assert _measured(fast) == _measured(slow)
    tree = fast.tree
    assert sorted(tree.get(el, "id") for el in fast.dropped) == ["comments", "short"]
    divs = tree.descendants(tree.body, frozenset(["div"]))
    (kept,) = [el for el in divs if tree.get(el, "id") == "kept"]
    assert fast.frame(kept)[6] is True  # kept for what it holds: its inside is not judged


def test_a_page_of_more_names_than_the_name_table_holds_reads_alike() -> None:
    """Each distinct tag and attribute name is decoded once per walk into a table of 256
    slots, filled to half: a page of hundreds of custom elements overflows it, and the
    names past it are decoded each time, the same names."""
    paragraph = "The council met on Tuesday, and the budget passed after a long debate. " * 3
    pieces = [
        f'<x-part{i} data-k{i}="v" class="{"sidebar" if i % 7 == 0 else "content"}">'
        f"<p>{paragraph} {i}</p><aside>related {i}</aside></x-part{i}>"
        for i in range(400)
    ]
    html = f"<html><head><title>t</title></head><body>{''.join(pieces)}</body></html>"
    fast, slow = _both(html.encode())
    assert fast == slow
    assert fast.text.count("council met") > 1000  # the article was found and read


def test_text_pieces_next_to_each_other_are_read_as_one() -> None:
    """A script or style removed from inside a paragraph leaves the text before it and
    after it as two text nodes in a row, and a comment stands between two: each is read as
    one text."""
    html = (
        "<html><body><div><p>The council met, one <script>var x = 1;</script> two "
        "<style>p {}</style>three<!-- c --> four, and a long sentence to make it a paragraph "
        "of its own.</p></div></body></html>"
    )
    fast, slow = _both(html.encode())
    assert fast == slow
    assert "one two three four" in fast.text


def _without_extension(error: str) -> str:
    """What a fresh interpreter says of the extraction when importing the compiled parts
    raises ``error``: whether it is compiled, why not, the main text of a page, its
    fingerprint and its signature."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in ('scrapy_simhash.text._compiled', 'scrapy_simhash._hashes'):\n"
        f"            raise {error}\n"
        "sys.meta_path.insert(0, Block())\n"
        "from scrapy_simhash.text import compiled, extract_main_text\n"
        "from scrapy_simhash.confirm import Signer\n"
        "from scrapy_simhash.fingerprint import Fingerprinter\n"
        "body = sys.stdin.buffer.read()\n"
        "page = extract_main_text(body)\n"
        "print(compiled.AVAILABLE, repr(page.text))\n"
        "print(compiled.MISSING)\n"
        "found = Fingerprinter().fingerprint_page(body)\n"
        "print(found.fingerprint, Signer(7).sign(found.evidence))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=story(HARBOUR),
        capture_output=True,
        check=True,
        cwd=REPO,
    )
    return done.stdout.decode()


def test_without_the_extension_the_package_imports_and_extracts_the_same() -> None:
    """An install without a compiler has no ``_compiled`` module: everything still works,
    and says which path it is on and how to build the other."""
    said = _without_extension("ModuleNotFoundError(name)").splitlines()
    assert said[0] == f"False {extract_main_text(story(HARBOUR)).text!r}"
    assert said[1] == compiled.NOT_BUILT
    found = Fingerprinter().fingerprint_page(story(HARBOUR))
    assert said[2] == f"{found.fingerprint} {Signer(7).sign(found.evidence)}"


def test_an_extension_that_cannot_be_loaded_is_passed_over_and_named() -> None:
    said = _without_extension("ImportError('undefined symbol: PyFoo')").splitlines()
    assert said[0] == f"False {extract_main_text(story(HARBOUR)).text!r}"
    assert "cannot be loaded (undefined symbol: PyFoo)" in said[1]
    assert "Install scrapy-simhash again" in said[1]


def test_the_compiled_reading_agrees_with_selectolax_s_on_this_install() -> None:
    extension = compiled.extension
    assert extension is not None, compiled.MISSING
    assert extension.check_layout() is None


def test_a_lexbor_read_otherwise_than_selectolax_reads_it_is_refused_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another selectolax may bundle a lexbor with another layout or numbering of names:
    the extension's check against selectolax's reading refuses it when it is loaded, and
    says why and what to do."""
    built = compiled.extension
    assert built is not None

    class Misread:
        def __getattr__(self, name: str) -> Any:
            return getattr(built, name)

        def check_layout(self) -> str:
            return "selectolax 9.9: node 3 read ('p', []), is ('div', [])"

    monkeypatch.setattr(compiled._native, "load", lambda name: (Misread(), ""))
    extension, missing = compiled._load()
    assert extension is None
    assert "does not read this selectolax's trees (selectolax 9.9: node 3" in missing
    assert "reinstall scrapy-simhash" in missing


def test_a_crawl_without_the_extension_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(compiled, "AVAILABLE", False)
    monkeypatch.setattr(compiled, "extension", None)
    monkeypatch.setattr(compiled, "MISSING", compiled.NOT_BUILT)
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"), harness() as h:
        _, first = h.fetch("https://news.example/a", story(HARBOUR))
        _, second = h.fetch("https://news.example/b", story(HARBOUR))
    assert first["fingerprint"] is not None
    assert second["duplicate_of"] == "https://news.example/a"  # the slow path works
    said = [r for r in caplog.records if "compiled extraction is not built" in r.getMessage()]
    assert len(said) == 1
    assert "install a C compiler" in said[0].getMessage()


def test_a_crawl_with_the_extension_says_nothing_of_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"), harness() as h:
        h.fetch("https://news.example/a", story(HARBOUR))
    assert "compiled extraction" not in caplog.text


def test_an_install_without_a_compiler_goes_on_and_says_why(tmp_path: Path) -> None:
    """setup.py with a compiler that cannot run: the build succeeds without the
    extension and says why."""
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(
        REPO / "scrapy_simhash",
        tmp_path / "scrapy_simhash",
        ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"),
    )
    env = {**os.environ, "CC": "/nonexistent/cc", "LDSHARED": "/nonexistent/cc -shared"}
    done = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the compiled extraction was not built" in done.stdout
    assert "/nonexistent/cc" in done.stdout  # the compiler failed, not a missing Cython
    assert not list((tmp_path / "scrapy_simhash").glob("**/*.so"))


# The expression class tokens were judged by before the words were listed once (rules.py):
# the compiled search and the one built from the lists must both find what it finds.
_ROLE_WORD_AS_WRITTEN = re.compile(
    r"(?P<negative>(?:^|[_-])(?:"
    r"(?:comment|disqus|related|recommend|share|sharing|social|sidebar|cookie|consent|"
    r"breadcrumb|newsletter|subscri|advert|sponsor|pagination|outbrain|taboola|popup|"
    r"footer|masthead|toolbar)\w*"
    r"|nav|navbar|navigation|menu|header|foot|side|aside|gdpr|cmp|banner|ads?|promo|signup|login|"
    r"modal|overlay|pager|paging|tags?|tagcloud|copyright|print|byline|hot|"
    r"rank|ranking|search|reply|replies|respond|rss|community|extra|shoutbox|bottom|"
    r"crumbs?|follow|author|jump|more|btn|button|icons?"
    r")(?=$|[_-]))|(?P<positive>"
    r"article|body|content|entry|main|post|story|text|blog|detail|news|endtext|hentry|"
    r"page|read|prose|markdown|rich|column|wrap|container)"
)
_ROLE_PIECES = [
    *rules._NEGATIVE_STEMS, *rules._NEGATIVE_WHOLE, *rules._POSITIVE_WORDS,
    "-", "_", "--", "\n", "x", "s", "9", "é", "ß", "²", "٣", "Ⅻ", "新", ".", ":", "/", " ",
    "\u0301", "ａ", "K",
]  # fmt: skip


def _role_as_written(token: str) -> int:
    match = _ROLE_WORD_AS_WRITTEN.search(token)
    if match is None:
        return 0
    return 1 if match.lastgroup == "positive" else -1


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_ROLE_PIECES), max_size=8).map("".join) | st.text(max_size=20))
def test_a_class_token_s_role_word_is_found_alike_on_both_paths(token: str) -> None:
    extension = compiled.extension
    assert extension is not None, compiled.MISSING
    expected = _role_as_written(token)
    assert extension.role_word(token) == expected
    with compiled.interpreted():
        assert rules._role_word(token) == expected


def test_every_role_word_is_found_at_every_edge() -> None:
    extension = compiled.extension
    assert extension is not None, compiled.MISSING
    words = [*rules._NEGATIVE_STEMS, *rules._NEGATIVE_WHOLE, *rules._POSITIVE_WORDS]
    edges = ["", "-", "_", "x", "-x", "_x", "x-", "2", "\n", "\nx", "--", ".", "é"]
    tokens = [f"{before}{word}{after}" for word in words for before in edges for after in edges]
    found = [extension.role_word(token) for token in tokens]
    assert found == [_role_as_written(token) for token in tokens]
    assert found.count(-1) > 1000  # both kinds are reached
    assert found.count(1) > 1000


# Class and id names: role words, and what makes a token strong, neutral or cut short.
_NAME_PIECES = [
    *_ROLE_PIECES, *rules._STRONG_NEGATIVE_WORDS, *rules._NEUTRAL_PREFIXES,
    *rules._SKIP_LINK_PREFIXES, "skip", "skip-to-", "-only", "only", "--", "\t", "  ",
    "\u3000", "\xa0",
]  # fmt: skip


def _judged_afresh(class_role: Callable[[str], int], names: str) -> int:
    """``class_role(names)`` with both role caches empty, so nothing judged by the other
    path is read back."""
    for cache in (rules._ROLES, rules._TOKEN_ROLES):
        cache.clear()
        cache.chars = 0
    return class_role(names)


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_NAME_PIECES), max_size=10).map("".join) | st.text(max_size=30))
def test_class_names_are_judged_alike_on_both_paths(names: str) -> None:
    extension = compiled.extension
    assert extension is not None, compiled.MISSING
    found = _judged_afresh(extension.class_role, names)
    with compiled.interpreted():
        assert found == _judged_afresh(rules._class_role, names)
    assert _judged_afresh(rules._class_role, names) == found  # dispatched to the extension


def test_class_names_reach_every_role_on_the_compiled_path() -> None:
    extension = compiled.extension
    assert extension is not None, compiled.MISSING
    cases = {
        "entry-content has-sidebar": 1,
        "article-body pagination-first": 1,
        "article-body related-posts": -1,  # strong beside content
        "skip-link": -1,
        "skip-to-content main": -1,
        "js-share-area": 0,
        "sidebar-first-only": 0,
        "node--type-newsletter": 0,
        "sidebar": -1,
        "": 0,
    }
    assert {names: _judged_afresh(extension.class_role, names) for names in cases} == cases
    extension.class_role("sidebar content")
    assert rules._TOKEN_ROLES == {"sidebar": -1, "content": 1}  # remembered in the cache
    assert rules._TOKEN_ROLES.chars == len("sidebarcontent")
