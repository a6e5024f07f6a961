"""The vocabularies of extraction: which tags, roles and class/id names mark boilerplate or
content, which lines are credits, and the thresholds the other steps use.

A new extraction rule is nearly always a word or a number here; the steps that apply
them (parse, walk, choose, read-out) stay as they are. The role caches live beside the
words they remember, bounded so that no page can grow them.
"""

from __future__ import annotations

import functools
import re
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy_simhash.text.compiled import Extension
    from scrapy_simhash.text.tree import Tree

# Elements whose content is never main text; removed before the walk.
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
# Elements that never hold open what follows them (``parse._too_costly``): void ones, and
# those a parser closes at the next of their kind (or their parent's end) when their end
# tag is missing.
_NOT_NESTING = frozenset(
    b"area base br col embed hr img input link meta source track wbr param keygen frame "
    b"p li dt dd option optgroup tr td th tbody thead tfoot colgroup caption rb rt rp rtc".split()
)
# Formatting elements: an HTML5 parser opens again, at each new block, every one of them
# still open (``parse._too_costly``).
_FORMATTING = frozenset(b"a b big code em font i nobr s small strike strong tt u".split())
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
# Boilerplate class/id words, matched as words of a class token (split at - and _): stems
# also match as the start of a run-together word ("commentlist", "relatedPosts"), whole
# words only alone.
_NEGATIVE_STEMS = (
    "comment", "disqus", "related", "recommend", "share", "sharing", "social", "sidebar",
    "cookie", "consent", "breadcrumb", "newsletter", "subscri", "advert", "sponsor",
    "pagination", "outbrain", "taboola", "popup", "footer", "masthead", "toolbar",
)  # fmt: skip
_NEGATIVE_WHOLE = (
    "nav", "navbar", "navigation", "menu", "header", "foot", "side", "aside", "gdpr", "cmp",
    "banner", "ad", "ads", "promo", "signup", "login", "modal", "overlay", "pager", "paging",
    "tag", "tags", "tagcloud", "copyright", "print", "byline", "hot", "rank", "ranking",
    "search", "reply", "replies", "respond", "rss", "community", "extra", "shoutbox",
    "bottom", "crumb", "crumbs", "follow", "author", "jump", "more", "btn", "button", "icon",
    "icons",
)  # fmt: skip
# Words that mark content containers, anywhere in a token.
_POSITIVE_WORDS = (
    "article", "body", "content", "entry", "main", "post", "story", "text", "blog", "detail",
    "news", "endtext", "hentry", "page", "read", "prose", "markdown", "rich", "column",
    "wrap", "container",
)  # fmt: skip
# A token's first role word (leftmost; a boilerplate word before a content word at the same
# place). The compiled walk finds the same (``_compiled.role_word``).
_ROLE_WORD = re.compile(
    rf"(?P<negative>(?:^|[_-])(?:(?:{'|'.join(_NEGATIVE_STEMS)})\w*|{'|'.join(_NEGATIVE_WHOLE)})"
    rf"(?=$|[_-]))|(?P<positive>{'|'.join(_POSITIVE_WORDS)})"
)
# Class tokens that say nothing of the element's role: hooks for scripts ("js-share-area")
# and descriptions of the layout around it ("has-sidebar", "no-sidebars",
# "sidebar-first-only" on the content column).
_NEUTRAL_PREFIXES = ("js-", "js_", "has-", "with-", "without-", "no-", "one-", "two-")
_LAYOUT_SUFFIX = "-only"
# Sections that are boilerplate even inside a content-named wrapper's class list, named
# anywhere in a token.
_STRONG_NEGATIVE_WORDS = (
    "comment", "disqus", "cookie", "consent", "gdpr", "newsletter", "related", "shar", "social",
)  # fmt: skip
_STRONG_NEGATIVE = re.compile("|".join(_STRONG_NEGATIVE_WORDS))
# "Skip to content" links for keyboard and screen-reader users: every page of a site has
# one, worded by the site, before everything else. Tokens starting so are strong.
_SKIP_LINK_PREFIXES = ("skiplink", "skip-link", "skip-to-main", "skip-to-content")


def _class_role(names: str) -> int:
    """-1 for boilerplate class/id names, +1 for content names, 0 for neither.

    A class token is judged by its first role word, as BEM names put the component
    first: "sidebar-content" is boilerplate, "content-with-sidebar-wrp" and "article-body"
    are content. One content token outweighs boilerplate tokens ("entry-content
    has-sidebar", "article-body pagination-first"), except for comment, cookie, share and
    related sections. ``names`` is lower case. Compiled when the package was built with its
    C extension: on a crawl of many sites most names are new, and judging them was the
    largest part of the walk left in Python.
    """
    extension: Extension | None = _compiled().extension
    if extension is not None:
        return extension.class_role(names)
    negative = positive = False
    for token in names.split():
        role = _TOKEN_ROLES.get(token)
        if role is None:
            role = _remember(_TOKEN_ROLES, token, _token_role(token))
        if role == _STRONG:
            return -1
        if role < 0:
            negative = True
        elif role > 0:
            positive = True
    if positive:
        return 1
    return -1 if negative else 0


_STRONG = -2  # a token naming a section that is boilerplate even beside content names


def _token_role(token: str) -> int:
    """_STRONG, -1, +1 or 0 for one class token (interpreted; ``_compiled.pyx`` has the
    same).

    Skip-link tokens are strong: the link is no part of any section. Tokens prefixed
    "js-"/"js_" are hooks for scripts and say nothing about the role ("js-share-area"),
    nor do layout descriptions ("has-sidebar"), and BEM modifiers (after "--") describe a
    variant of the block named before them ("node--type-newsletter").
    """
    if token.startswith(_SKIP_LINK_PREFIXES):
        return _STRONG
    if token.startswith(_NEUTRAL_PREFIXES) or token.endswith(_LAYOUT_SUFFIX):
        return 0
    token = token.split("--", 1)[0]
    role = _role_word(token)
    if role < 0 and _STRONG_NEGATIVE.search(token):
        return _STRONG
    return role


def _role_word(token: str) -> int:
    """-1 or +1 by the token's first role word (see _ROLE_WORD), 0 for none."""
    match = _ROLE_WORD.search(token)
    if match is None:
        return 0
    return 1 if match.lastgroup == "positive" else -1


@functools.cache
def _compiled() -> ModuleType:
    """:mod:`scrapy_simhash.text.compiled`, which imports this module (so not at the top),
    imported once: an import statement in ``_class_role`` would cost as much as a token."""
    from scrapy_simhash.text import compiled

    return compiled


class _RoleCache(dict[str, int]):
    """A dict that counts the characters of its keys, so it can be bounded by size."""

    chars = 0


# Roles of class tokens and of whole class/id strings seen so far. They repeat across the
# elements and pages of a site, so nearly every element is judged by a dict lookup. Each
# cache is cleared when full, by count or by the characters of its keys, so that unique
# ids ("post-123456") or hostile pages of unique long class names cannot grow it without
# bound; names longer than _MAX_CACHED_KEY are judged every time and never kept.
_TOKEN_ROLES = _RoleCache()
_ROLES = _RoleCache()
_MAX_CACHED = 65536
_MAX_CACHED_CHARS = 1_000_000
_MAX_CACHED_KEY = 256


def _remember(cache: _RoleCache, key: str, value: int) -> int:
    if len(key) > _MAX_CACHED_KEY:
        return value
    if len(cache) >= _MAX_CACHED or cache.chars + len(key) > _MAX_CACHED_CHARS:
        cache.clear()
        cache.chars = 0
    cache[key] = value
    cache.chars += len(key)
    return value


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
# A sibling of the best container that is not like it nor a plain paragraph continues the
# content when it scores at least this share of the best. Syndicated copies sit beside
# their host's teasers and product grids, which score a third or less of the article.
_SIBLING_SHARE = 0.5
# A parent whose paragraph mass is at most this multiple of its child's is a mere wrapper.
_WRAPPER_MASS = 1.05
# Prose blocks of one tag and class that make a page a thread of posts (see _thread).
_MIN_POSTS = 3
# ... and the least share of the page's paragraph mass that they hold together.
_THREAD_SHARE = 0.5
# Blocks inside the main container that are mostly link text are link lists.
_MAX_LINK_DENSITY = 0.5
_TITLE_SEPARATORS = re.compile(r"\s+[-|–—»·:]\s+|\s*[|｜_]\s*|\s+-{2,}\s+")
# Byline, source, editor, date, share-widget and copyright lines (see _drop_credits); only
# lines of at most _MAX_CREDIT_BYTES UTF-8 bytes are tested, so prose mentioning them stays.
_MAX_CREDIT_BYTES = 200
# Month names of German, French, Spanish, Portuguese, Italian and Dutch, and their usual
# abbreviations, for _DATE_IN_LINE (English ones are written out there).
_MONTHS = (
    r"(?:januar|jänner|januari|janvier|janv|enero|janeiro|gennaio|februar|februari|février|"
    r"fevrier|févr|febrero|fevereiro|febbraio|märz|maerz|maart|mars|marzo|março|marco|april|"
    r"avril|avr|abril|aprile|mai|mei|mayo|maio|maggio|juni|juin|junio|junho|giugno|juli|"
    r"juillet|juil|julio|julho|luglio|august|augustus|août|aout|agosto|september|septembre|"
    r"septiembre|setiembre|setembro|settembre|oktober|octobre|octubre|outubro|ottobre|"
    r"november|novembre|noviembre|novembro|dezember|décembre|decembre|diciembre|dezembro|"
    r"dicembre|jan|feb|mär|mrz|apr|jun|jul|aug|sep|sept|okt|nov|dez|déc)"
)
# A form added here needs its start in _CREDIT_START_CHARS or _CREDIT_START_WORDS below,
# and a form added to _CREDIT_ANYWHERE its characters in _CREDIT_ANYWHERE_LETTERS or
# _CREDIT_ANYWHERE_SEQUENCES: the compiled read-out tries only the lines they name.
# Split in two so that the anchored forms are tried at the line's start only and the
# search for the others can skip ahead by their first characters: one pattern with both
# tried every alternative at every position, the main cost of reading a page out.
_CREDIT_START = re.compile(
    r"\W*(?:来源|作者|责任编辑|责编|编辑|原标题|发布时间|发布日期|更新时间|时间|日期|浏览|阅读|"
    r"点击|本文来源|文章来源|出处|记者|通讯员|供稿|摄影|图片来源)\s*[:：]"
    r"|\W*\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}日?(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?"
    r"(?:\s+\S{1,12}){0,4}\s*$"
    r"|\W*(?:分享到|分享至|收藏|举报|不感兴趣|扫一扫|用微信扫)"
    r"|(?:by|posted|published|updated|last updated|last edited|written by)\b[^.!?]{0,80}$"
    r"|(?:share|print|email|tweet|comments?)\s*:?$"
    # A date alone ("March 4, 2025", "Tue, 4 Mar 2025 at 9:02 AM EST").
    r"|\W*(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
    r"(?:\d{1,2}(?:st|nd|rd|th)?\s+)?(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|"
    r"june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?,?\s+\d{4}(?:\s*(?:at|,|\|)?\s*\d{1,2}:\d{2}"
    r"(?:\s*[ap]\.?m\.?)?(?:\s+[a-z]{2,4})?)?[\W_]*$"
    # Contact lines of a site's footer that sit next to the content.
    r"|\W*(?:地址|电话|联系电话|传真|邮编|邮箱|主办单位|备案号)\s*[:：]",
    re.IGNORECASE,
)
_CREDIT_ANYWHERE = re.compile(
    r"责任编辑\s*[:：]|(?:浏览|阅读|点击)(?:数|量|次数)?\s*[:：(（]?\s*\d+[)）]?\s*$"
    # Copyright lines of a site's footer.
    r"|版权所有|all rights reserved|copyright\s*(?:©|\(c\)|\d{4})|©\s*\d{4}|ICP[备证]",
    re.IGNORECASE,
)
# What a line's first word (after any non-word characters) starts with when it can match
# _CREDIT_START: the first character of each Chinese form, or the first three letters, in
# any case, of each English one ("by" whole); or, for a date, a digit or the first three
# letters of a weekday or a month, and then the line holds a year (four digits in a row:
# every date form of _CREDIT_START has one). The compiled read-out tests only the lines
# that pass this or the tests of _CREDIT_ANYWHERE_LETTERS and _YEAR_DIGITS (and any line
# whose first three word characters hold another character beyond ASCII: some match ASCII
# letters in any case, "ſ" an "s").
_CREDIT_START_CHARS = "来作责编原发更时日浏阅点本文出记通供摄图分收举不扫用地电联传邮主备"
_CREDIT_START_WORDS = ["by", "pos", "pub", "upd", "las", "wri", "sha", "pri", "ema", "twe", "com"]
_CREDIT_DATE_WORDS = [
    "mon", "tue", "wed", "thu", "fri", "sat", "sun",
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
]  # fmt: skip
# A line can match _CREDIT_ANYWHERE only if it holds one of these characters, or one of
# _CREDIT_ANYWHERE_SEQUENCES in lower case with "ſ" read as "s" ("copyright" and "all
# rights reserved" in any case: of their letters only "s", and "i", which the sequences
# do not hold, match a character beyond ASCII in any case, "ſ", "ı" and "İ"). The pattern is
# case-insensitive and starts with letters, so the regex engine tries it at every
# position of every line (44k instructions a line); this test passes most lines in C.
_CREDIT_ANYWHERE_LETTERS = "责浏阅点版©备证"
_CREDIT_ANYWHERE_CHARS = re.compile(f"[{_CREDIT_ANYWHERE_LETTERS}]")
_CREDIT_ANYWHERE_SEQUENCES = ("yr", "hts r")
# A date inside a short line; with at most _MAX_BYLINE_WORDS other words around it the line is
# a dated byline ("Jonah Reyes, 2026-03-08", "记者 张三 2026-03-08 10:31") or a date alone in
# any of the languages whose stop words are shipped ("Donnerstag, 3. Februar 2022",
# "1er février 2024", "12 de marzo de 2024, 10:31").
_DATE_IN_LINE = re.compile(
    r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}\b"
    r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+\d{4}\b"
    rf"|\b\d{{1,2}}(?:\.|er|º)?\s+(?:de\s+)?{_MONTHS}\.?\s+(?:de\s+)?\d{{4}}\b",
    re.IGNORECASE,
)
# Every form of _DATE_IN_LINE holds a year, four digits in a row: a line without them is
# passed by this scan, not by the date's many forms tried at every position (10 µs a line
# of prices or scores, 1.6 µs here).
_YEAR_DIGITS = re.compile(r"\d{4}")
_WORD = re.compile(r"[^\W\d_]+")
_MAX_BYLINE_WORDS = 4
_MAX_BYLINE_CHARS = 80


def _names_role(tree: Tree, el: int) -> int:
    """The role (see _class_role) of an element's class and id names together."""
    return _role_of_names(tree.get(el, "class"), tree.get(el, "id"))


def _role_of_names(cls: str | None, ident: str | None) -> int:
    """_names_role of an element with these class and id attributes (None: absent)."""
    if ident is None:
        if cls is None:
            return 0
        names = cls
    else:
        names = ident if cls is None else f"{cls} {ident}"
    role = _ROLES.get(names)
    if role is None:
        role = _remember(_ROLES, names, _class_role(names.lower()))
    return role


# Attributes that can hide an element; most elements have none of them.
_HIDING_ATTRIBUTES = frozenset(["hidden", "aria-hidden", "style", "role"])
# Attributes that can make an element boilerplate; elements without any are content.
_JUDGED_ATTRIBUTES = _HIDING_ATTRIBUTES | {"class", "id"}
# Tags and attributes that can mark a page's article (see _marked_article).
_MARK_TAGS = frozenset(["article", "main"])
_MARK_ATTRIBUTES = frozenset(["itemprop", "role"])


def _hides(hidden: str | None, aria: str | None, style: str | None, role: str | None) -> bool:
    """Whether an element with these ``hidden``, ``aria-hidden``, ``style`` and ``role``
    values (None: absent) is hidden or has a boilerplate role; the compiled walk reads them
    from the node."""
    if hidden is not None or aria == "true":
        return True
    if style:
        compact = style.replace(" ", "").lower()
        if "display:none" in compact or "visibility:hidden" in compact:
            return True
    return role is not None and role.lower() in _HIDDEN_ROLES
