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

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

from scrapy_simhash.decode import decode_html

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


# Elements whose content is never main text; removed by lxml in C before the walk.
_JUNK_TAGS = (
    "script",
    "style",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "embed",
    "canvas",
    "video",
    "audio",
    "map",
    "button",
    "select",
    "option",
    "textarea",
    "input",
    "head",
)
# Elements that templates use for boilerplate; dropped during the walk unless they hold a
# large share of the page (some sites wrap everything in <header>; Discourse forums serve
# their posts inside <noscript>).
_BOILERPLATE_TAGS = frozenset(["nav", "aside", "footer", "header", "dialog", "menu", "noscript"])
_HIDDEN_ROLES = frozenset(
    {
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "search",
        "dialog",
        "alertdialog",
        "menu",
        "menubar",
        "toolbar",
        "tablist",
    }
)
_INLINE_TAGS = frozenset(
    [
        "a",
        "abbr",
        "acronym",
        "b",
        "bdi",
        "bdo",
        "big",
        "cite",
        "code",
        "data",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "img",
        "ins",
        "kbd",
        "label",
        "mark",
        "nobr",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "tt",
        "u",
        "var",
        "wbr",
    ]
)
# Boilerplate class/id words, matched as words of a class token (split at - and _),
# several also as prefixes of run-together names ("commentlist", "relatedPosts").
_NEGATIVE_WORDS = (
    r"(?:^|[_-])(?:"
    r"(?:comment|disqus|related|recommend|share|sharing|social|sidebar|cookie|consent|"
    r"breadcrumb|newsletter|subscri|advert|sponsor|pagination|outbrain|taboola|popup|"
    r"footer|masthead|toolbar)\w*"
    r"|nav|navbar|navigation|menu|header|foot|side|aside|gdpr|cmp|banner|ads?|promo|signup|login|"
    r"modal|overlay|pager|paging|tags?|tagcloud|copyright|print|byline|meta|hot|"
    r"rank|ranking|search|reply|replies|respond|rss|community|extra|shoutbox|bottom|"
    r"crumbs?|follow|author|jump|more|btn|button|icons?"
    r")(?=$|[_-])"
)
# Words that mark content containers.
_POSITIVE_WORDS = (
    r"article|body|content|entry|main|post|story|text|blog|detail|news|endtext|hentry|"
    r"page|read|prose|markdown|rich|column|wrap|container"
)
_ROLE_WORD = re.compile(f"(?P<negative>{_NEGATIVE_WORDS})|(?P<positive>{_POSITIVE_WORDS})")
# Class tokens that name a script's hook, not the element's role.
_JS_HOOK = ("js-", "js_")
# Sections that are boilerplate even inside a content-named wrapper's class list.
_STRONG_NEGATIVE = re.compile(r"comment|disqus|cookie|consent|gdpr|newsletter|related|shar|social")


@functools.lru_cache(maxsize=8192)
def _class_role(names: str) -> int:
    """-1 for boilerplate class/id names, +1 for content names, 0 for neither.

    A class token is judged by its first role word, as BEM names put the component
    first: "sidebar-content" is boilerplate, "content-with-sidebar-wrp" and "article-body"
    are content. One content token outweighs boilerplate tokens ("entry-content
    has-sidebar", "article-body pagination-first"), except for comment, cookie, share and
    related sections. Tokens prefixed "js-"/"js_" are hooks for scripts and say nothing
    about the role, and BEM modifiers (after "--") describe a variant of the block named
    before them. Class strings repeat across pages and elements, hence the cache.
    """
    negative = positive = False
    for token in names.split():
        if token.startswith(_JS_HOOK):
            continue  # "js-share-area" names a script's target, not the element's role
        token = token.split("--", 1)[0]  # a BEM modifier ("node--type-newsletter") is a variant
        match = _ROLE_WORD.search(token)
        if match is None:
            continue
        if match.lastgroup == "negative":
            if _STRONG_NEGATIVE.search(token):
                return -1
            negative = True
        else:
            positive = True
    if positive:
        return 1
    return -1 if negative else 0


_TAG_BONUS = {
    "article": 10.0,
    "main": 5.0,
    "div": 5.0,
    "section": 2.0,
    "pre": 3.0,
    "td": 3.0,
    "blockquote": 3.0,
    "ul": -3.0,
    "ol": -3.0,
    "li": -3.0,
    "dl": -3.0,
    "dd": -3.0,
    "dt": -3.0,
    "form": -3.0,
    "th": -5.0,
    "h1": -5.0,
    "h2": -5.0,
    "h3": -5.0,
    "h4": -5.0,
    "h5": -5.0,
    "h6": -5.0,
}
# A block of fewer UTF-8 bytes than this is not a paragraph (about 25 Latin letters or
# 9 CJK characters: byte length is a cheap proxy for information content across scripts).
_MIN_PARAGRAPH_BYTES = 25
# Main text shorter than this (UTF-8 bytes; ~100 CJK characters or ~50 English words)
# means no container of prose was found. Kept small so that a short news brief is not
# padded with template text (300 and 600 score the same on the quality benchmark).
_FALLBACK_BYTES = 300
# Boilerplate-looking elements are dropped only when they hold less than this share of the
# page's text: a "sidebar" holding most of the page is a mislabelled wrapper, and a
# "comments" list holding most of a forum page is its content (and then so are the
# "comment" items inside it).
_LARGE_SHARE = 0.4
# A parent whose paragraph mass is at most this multiple of its child's is a mere wrapper.
_WRAPPER_MASS = 1.05
# Blocks inside the main container that are mostly link text are link lists.
_MAX_LINK_DENSITY = 0.5
_TITLE_SEPARATORS = re.compile(r"\s+[-|–—»·:]\s+|\s*[|｜_]\s*|\s+-{2,}\s+")
# Byline, source, editor, date and share-widget lines (see _drop_credits); only lines of
# at most _MAX_CREDIT_BYTES UTF-8 bytes are tested, so prose that mentions them stays.
_MAX_CREDIT_BYTES = 200
_CREDIT_LINE = re.compile(
    r"^\W*(?:来源|作者|责任编辑|责编|编辑|原标题|发布时间|发布日期|更新时间|时间|日期|浏览|阅读|"
    r"点击|本文来源|文章来源|出处|记者|通讯员|供稿|摄影|图片来源)\s*[:：]"
    r"|责任编辑\s*[:：]|(?:浏览|阅读|点击)(?:数|量|次数)?\s*[:：(（]?\s*\d+[)）]?\s*$"
    r"|^\W*\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}日?(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?"
    r"(?:\s+\S{1,12}){0,4}\s*$"
    r"|^\W*(?:分享到|分享至|收藏|举报|不感兴趣|扫一扫|用微信扫)"
    r"|^(?:by|posted|published|updated|last updated|last edited|written by)\b[^.!?]{0,80}$"
    r"|^(?:share|print|email|tweet|comments?)\s*:?$",
    re.IGNORECASE,
)
_CLOSING_ROOT = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
_PARSER = etree.HTMLParser(
    encoding="utf-8",
    remove_comments=True,
    remove_pis=True,
    no_network=True,
    recover=True,
)


class _Frame:
    """Measurements of one open element during the walk."""

    __slots__ = ("block", "chars", "el", "guarded", "link", "mass", "own", "score")

    def __init__(self, el: etree._Element, block: bool, guarded: bool) -> None:
        self.el = el
        self.block = block
        self.guarded = guarded
        self.chars = 0
        self.link = 0
        self.own: list[str] = []
        self.score = 0.0
        self.mass = 0.0


@dataclass
class _Stats:
    chars: int  # text characters in the subtree
    link: int  # of which inside links
    score: float  # paragraph credit from children (full) and grandchildren (half)
    mass: float  # paragraph scores of the whole subtree


def _class_id(el: etree._Element) -> str:
    cls = el.get("class")
    ident = el.get("id")
    if cls is None and ident is None:
        return ""
    return f"{cls or ''} {ident or ''}".lower()


def _is_hidden(el: etree._Element) -> bool:
    if el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    style = el.get("style")
    if style:
        compact = style.replace(" ", "").lower()
        if "display:none" in compact or "visibility:hidden" in compact:
            return True
    role = el.get("role")
    return role is not None and role.lower() in _HIDDEN_ROLES


class _Walk:
    """One pass over the body: drop boilerplate, measure elements, score containers."""

    def __init__(self, body: etree._Element) -> None:
        self.body = body
        self.stats: dict[etree._Element, _Stats] = {}
        self.candidates: list[etree._Element] = []
        self.dropped: list[etree._Element] = []
        self._body_chars: int | None = None

    def body_chars(self) -> int:
        if self._body_chars is None:
            self._body_chars = len(_text_content(self.body))
        return self._body_chars

    def is_boilerplate(self, el: etree._Element, tag: str, guarded: bool) -> bool | None:
        """True to drop ``el``; None when it looks like boilerplate but is kept for its size
        (its descendants are then not judged by class names); False otherwise."""
        if tag in _BOILERPLATE_TAGS or _is_hidden(el):
            return self._small(el) or None
        if guarded or el.get("itemprop") == "articleBody":
            return False
        names = _class_id(el)
        if not names or _class_role(names) >= 0:
            return False
        return self._small(el) or None

    def _small(self, el: etree._Element) -> bool:
        """Whether ``el`` holds a small enough share of the page's text to be dropped."""
        return len(_text_content(el)) < self.body_chars() * _LARGE_SHARE

    def run(self) -> None:
        stack: list[_Frame] = []
        walker = etree.iterwalk(self.body, events=("start", "end"))
        stats = self.stats
        for event, el in walker:
            tag = el.tag
            if event == "start":
                if not isinstance(tag, str):
                    walker.skip_subtree()
                    continue
                guarded = bool(stack) and stack[-1].guarded
                verdict = self.is_boilerplate(el, tag, guarded) if stack else False
                if verdict:
                    self.dropped.append(el)
                    walker.skip_subtree()
                    continue
                frame = _Frame(el, tag not in _INLINE_TAGS, guarded or verdict is None)
                stack.append(frame)
                text = el.text
                if text:
                    self._add_text(stack, text)
                continue
            # "end": a dropped or skipped element has no frame; its tail still counts.
            if stack and stack[-1].el is el:
                frame = stack.pop()
                if stack and frame.block:
                    self._score_paragraph(frame, stack)
                stats[el] = _Stats(frame.chars, frame.link, frame.score, frame.mass)
                if frame.score:
                    self.candidates.append(el)
                if stack:
                    parent = stack[-1]
                    parent.chars += frame.chars
                    parent.link += frame.chars if tag == "a" else frame.link
                    parent.mass += frame.mass
            tail = el.tail
            if tail and stack:
                self._add_text(stack, tail)

    @staticmethod
    def _add_text(stack: list[_Frame], text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        top = stack[-1]
        top.chars += len(stripped)
        for frame in reversed(stack):
            if frame.block:
                frame.own.append(stripped)
                break

    @staticmethod
    def _score_paragraph(frame: _Frame, stack: list[_Frame]) -> None:
        if not frame.own:
            return
        text = " ".join(frame.own)
        size = len(text.encode("utf-8"))
        if size < _MIN_PARAGRAPH_BYTES:
            return
        score = 1.0 + text.count(",") + text.count("，") + text.count("。") + min(size / 100, 3)
        frame.mass += score
        stack[-1].score += score
        if len(stack) > 1:
            stack[-2].score += score / 2


def _text_content(el: etree._Element) -> str:
    return str(etree.tostring(el, method="text", encoding="unicode", with_tail=False))


def _weight(el: etree._Element) -> float:
    weight = _TAG_BONUS.get(str(el.tag), 0.0)
    names = _class_id(el)
    if names:
        weight += 25 * _class_role(names)
    if el.get("itemprop") == "articleBody" or el.get("role") == "main":
        weight += 25
    return weight


def _final_score(el: etree._Element, stats: _Stats) -> float:
    density = stats.link / stats.chars if stats.chars else 0.0
    return (stats.score + _weight(el)) * (1.0 - density)


def _choose(walk: _Walk) -> list[etree._Element]:
    """The best-scoring container plus siblings that continue its content."""
    if not walk.candidates:
        return [walk.body]
    scored = [(_final_score(el, walk.stats[el]), el) for el in walk.candidates]
    best_score, best = max(scored, key=lambda item: item[0])
    best = _widen(best, walk)
    parent = best.getparent()
    if parent is None or best is walk.body:
        return [best]
    threshold = max(10.0, best_score * 0.2)
    best_stats = walk.stats[best]
    best_key = (best.tag, best.get("class"))
    chosen: list[etree._Element] = []
    for sibling in parent:
        if sibling is best:
            chosen.append(sibling)
            continue
        stats = walk.stats.get(sibling)
        if stats is None or not stats.chars:
            continue
        # Repeated units (posts of a thread, sections of one article) share tag and class.
        alike = (sibling.tag, sibling.get("class")) == best_key and (
            stats.mass >= best_stats.mass * 0.2
        )
        prose = sibling.tag == "p" and stats.link < stats.chars * 0.25 and stats.chars > 80
        if alike or prose or _final_score(sibling, stats) >= threshold:
            chosen.append(sibling)
    return chosen


def _widen(best: etree._Element, walk: _Walk) -> etree._Element:
    """Climb through wrappers that add no prose of their own.

    On a forum thread the best element is one post's body inside its list item; the list
    item is the unit whose siblings (the other posts) continue the content.
    """
    stats = walk.stats
    while best is not walk.body:
        parent = best.getparent()
        if parent is None or parent is walk.body or parent not in stats:
            break
        if stats[parent].mass > stats[best].mass * _WRAPPER_MASS:
            break
        best = parent
    return best


def _lines(containers: Iterable[etree._Element], stats: dict[etree._Element, _Stats]) -> str:
    """Read containers out as text, one line per block, skipping link lists and h1."""
    lines: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            line = " ".join("".join(current).split())
            if line:
                lines.append(line)
            current.clear()

    for container in containers:
        walker = etree.iterwalk(container, events=("start", "end"))
        for event, el in walker:
            tag = el.tag
            if event == "start":
                info = stats.get(el)
                if info is None or not isinstance(tag, str):
                    walker.skip_subtree()  # dropped as boilerplate, or not an element
                    continue
                if tag not in _INLINE_TAGS:
                    flush()
                    if tag == "h1" or (
                        info.chars and info.link > info.chars * _MAX_LINK_DENSITY and tag != "a"
                    ):
                        walker.skip_subtree()
                        continue
                if el.text:
                    current.append(el.text)
                continue
            if tag not in _INLINE_TAGS or tag == "br":
                flush()
            if el.tail and el is not container:
                current.append(el.tail)
        flush()
    return "\n".join(lines)


def _drop_credits(text: str) -> str:
    """Remove short byline, source, editor, date and share-widget lines.

    They are not the article: every re-publication of one story carries its own ("来源：
    新华网 责任编辑：王五", "By Staff Reporter", "Updated 2025-03-01", "分享到："), so keeping
    them pulls copies of one story apart and adds nothing that tells stories apart.
    """
    if not text:
        return text
    kept = [
        line
        for line in text.split("\n")
        if len(line.encode("utf-8")) > _MAX_CREDIT_BYTES or not _CREDIT_LINE.search(line)
    ]
    return "\n".join(kept)


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


def _parse(text: str) -> etree._Element | None:
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not text.strip():
        return None
    # libxml2 ignores everything after a stray </html> and puts what follows a stray
    # </body> outside the body; real pages have both (an included header fragment that
    # ends in </html>). Without them the parser closes body and html at the end anyway.
    text = _CLOSING_ROOT.sub("", text)
    try:
        return etree.fromstring(text.encode("utf-8", errors="replace"), _PARSER)
    except etree.LxmlError:
        return None


def _extract(text: str, encoding: str, notes: list[str]) -> MainText:
    root = _parse(text)
    if root is None:
        notes.append("no HTML content")
        return MainText("", "", encoding, tuple(notes))
    title = _title(root)
    etree.strip_elements(root, *_JUNK_TAGS, with_tail=False)
    body = root.find("body")
    if body is None:
        body = root
    walk = _Walk(body)
    walk.run()
    main = _drop_credits(_lines(_choose(walk), walk.stats))
    if len(main.encode("utf-8")) < _FALLBACK_BYTES:
        # No container of prose (product pages, galleries, landing pages): the page's
        # own text is everything that is not boilerplate or link lists.
        whole = _drop_credits(_lines([body], walk.stats))
        if len(whole) > len(main):
            notes.append("no prose container; using all non-boilerplate text")
            main = whole
    if not main:
        notes.append("no main text found")
    return MainText(title, main, encoding, tuple(notes))


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
            text = decoded.text
        return _extract(text, encoding, notes)
    except Exception as exc:  # the contract is "never raises": report instead
        logger.warning("main-text extraction failed: %r", exc, exc_info=True)
        notes.append(f"extraction failed: {type(exc).__name__}")
        return MainText("", "", encoding, tuple(notes))
