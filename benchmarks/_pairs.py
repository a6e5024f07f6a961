"""Seeded near-duplicate pair benchmark built from real pages.

Positives are realistic re-publications of one page: the same paragraphs in another site's
template (syndication), injected comment sections and banners, timestamps and session ids,
1-5% word edits, markup-only rewrites and re-encoding (GBK / windows-1252, with and without
a declaration). Negatives are the hard cases: different pages of one site template, the
template's own page versus the syndicated copy in that template, and heavy (40-50%) edits,
plus random pages of the same language.

Structure-changing variants are built with lxml and re-serialised as UTF-8 with an explicit
``<meta charset>``; the benchmark's own page finding uses a simple, extractor-independent
rule (the element with the most direct ``<p>`` children) so that it does not favour ours.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from copy import deepcopy as copy_element
from dataclasses import dataclass, field
from itertools import combinations

from _pages import Page
from lxml import etree
from w3lib.html import remove_tags, remove_tags_with_content, replace_entities

from scrapy_simhash.text.decode import decode_html

_PARSER = etree.HTMLParser(encoding="utf-8", remove_comments=True, recover=True)
_CHARSET_META = re.compile(r"<meta[^>]*charset[^>]*>", re.IGNORECASE)
_WORD = re.compile(r"[\u4e00-\u9fff]{1,2}|[^\W\d_]+|\d+|[^\w]+|_", re.UNICODE)
_IS_WORD = re.compile(r"\w", re.UNICODE)
_SPACES = re.compile(r"\s+")
_MARKDOWN_PREFIX = re.compile(r"^(?:[-*+]|#{1,6}|\d+\.)\s+")
_BLOCK_TAGS = ("p", "li", "div", "td", "th", "dd", "dt", "pre", "blockquote", "h2", "h3", "h4")
# Same-site pages whose main texts share this much vocabulary are natural copies of one
# article (the corpus has a few), not negatives.
_NATURAL_COPY = 0.5


@dataclass
class Pair:
    a: str
    b: str
    positive: bool
    kind: str
    lang: str
    same_template: bool = False


@dataclass
class Corpus:
    docs: dict[str, bytes] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)
    langs: dict[str, str] = field(default_factory=dict)

    def add(self, doc_id: str, body: bytes, lang: str) -> str:
        self.docs[doc_id] = body
        self.langs[doc_id] = lang
        return doc_id


def naive_text(html: str) -> str:
    """Tag-stripped text without scripts and styles (what the baselines fingerprint)."""
    html = remove_tags_with_content(html, which_ones=("script", "style", "noscript"))
    return " ".join(replace_entities(remove_tags(html)).split())


def _parse(html: str) -> etree._Element | None:
    try:
        return etree.fromstring(html.encode("utf-8", "replace"), _PARSER)
    except (etree.LxmlError, ValueError):
        return None


def _serialise(root: etree._Element) -> str:
    html = etree.tostring(root, method="html", encoding="unicode")
    html = _CHARSET_META.sub("", html)
    return re.sub(r"<head([^>]*)>", r'<head\1><meta charset="utf-8">', html, count=1)


def _container(root: etree._Element) -> etree._Element | None:
    """The element with most direct paragraph children (at least three), provided those
    paragraphs hold most of the page's paragraph text (else the page's content is
    elsewhere and replacing the container would leave it in place)."""
    counts: dict[etree._Element, int] = defaultdict(int)
    sizes: dict[etree._Element, int] = defaultdict(int)
    total = 0
    for el in root.iter("p"):
        parent = el.getparent()
        size = len(_text(el))
        total += size
        if parent is not None and size > 20:
            counts[parent] += 1
            sizes[parent] += size
    best = max(counts.items(), key=lambda item: item[1], default=None)
    if best is None or best[1] < 3 or sizes[best[0]] < total * 0.6:
        return None
    return best[0]


def _text(el: etree._Element) -> str:
    return " ".join("".join(el.itertext()).split())


def _paragraphs(page: Page, root: etree._Element) -> list[str]:
    """The texts of the page's main-text paragraphs (see _main_blocks)."""
    return [_text(el) for el in _main_blocks(page, root)]


def _main_blocks(page: Page, root: etree._Element) -> list[etree._Element]:
    """The page's main-text paragraphs as the page itself writes them, as elements.

    The corpora's true main texts are normalised: cx-extractor drops every space
    ("Rhino Trading Partners" becomes "RhinoTradingPartners") and keeps the text of the
    page's related-links lists, WCXB writes list items as Markdown ("- item") and spaces
    inline elements differently. Copying those lines as plain paragraphs would make a
    syndicated copy differ from its original by the annotation's formatting (and turn
    link lists into prose), so each line is taken from the page's own block with the same
    non-space characters, links included, when there is one.
    """
    truth = page.main_text()
    if truth:
        blocks = _blocks(root)
        elements = []
        for line in truth.splitlines():
            line = line.strip()
            if line:
                key = _SPACES.sub("", _MARKDOWN_PREFIX.sub("", line))
                block = blocks.get(key)
                if block is None:
                    block = etree.Element("p")
                    block.text = line
                elements.append(block)
        return elements
    container = _container(root)
    if container is None:
        return []
    return [p for p in container if p.tag == "p"]


def _blocks(root: etree._Element) -> dict[str, etree._Element]:
    """Each block element, keyed by its text without whitespace."""
    blocks: dict[str, etree._Element] = {}
    for el in root.iter(*_BLOCK_TAGS):
        text = _text(el)
        if text:
            blocks.setdefault(_SPACES.sub("", text), el)
    return blocks


def _as_paragraph(block: etree._Element) -> etree._Element:
    """A copy of a block as a plain <p>: inline markup and links kept, attributes dropped
    (the other site's classes would be judged by the extractor, not the text)."""
    copy = copy_element(block)
    copy.tag = "p"
    copy.tail = "\n"
    for el in copy.iter():
        href = el.get("href")
        el.attrib.clear()
        if href is not None and el.tag == "a":
            el.set("href", href)
    return copy


def _has_container(html: str) -> bool:
    root = _parse(html)
    return root is not None and _container(root) is not None


def _headline(root: etree._Element) -> str:
    """The article's headline: its h1, else its whole <title>."""
    for tag in ("h1", "title"):
        for el in root.iter(tag):
            if text := _text(el):
                return text
    return ""


def syndicate(
    paragraphs: list[etree._Element], title: str, template_html: str, site: str
) -> str | None:
    """Put ``paragraphs`` and the headline into another page's template ("Title | Site")."""
    root = _parse(template_html)
    if root is None:
        return None
    container = _container(root)
    if container is None:
        return None
    for child in list(container):
        container.remove(child)
    container.text = "\n"
    for block in paragraphs:
        container.append(_as_paragraph(block))
    for el in root.iter("title", "h1"):
        for child in list(el):
            el.remove(child)
        el.text = f"{title} | {site}" if el.tag == "title" else title
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() in (
            "og:title",
            "twitter:title",
        ):
            meta.set("content", title)
    return _serialise(root)


def inject_boilerplate(html: str, donor: list[str], rng: random.Random) -> str | None:
    """Add a cookie banner, a related-links list and a comment section to a page."""
    root = _parse(html)
    body = root.find("body") if root is not None else None
    if root is None or body is None:
        return None
    anchor = _container(root)
    banner = etree.fromstring(
        '<div class="cookie-consent"><p>We use cookies and similar technologies to give you '
        "the best experience, to measure traffic and to show personalised content. By "
        "clicking accept you agree to this.</p></div>"
    )
    body.insert(0, banner)
    comments = etree.SubElement(body, "div", {"id": "comments", "class": "comments-area"})
    etree.SubElement(comments, "h3").text = f"{rng.randint(2, 99)} comments"
    for text in rng.sample(donor, min(4, len(donor))):
        item = etree.SubElement(comments, "div", {"class": "comment"})
        etree.SubElement(item, "p").text = text[:400]
    related = etree.Element("div", {"class": "related-posts"})
    items = etree.SubElement(related, "ul")
    for text in donor[:5]:
        etree.SubElement(etree.SubElement(items, "li"), "a", {"href": "/x"}).text = text[:60]
    if anchor is not None and anchor.getparent() is not None:
        anchor.addnext(related)
        related.addnext(comments)
    else:
        body.append(related)
    return _serialise(root)


def dynamic_tokens(html: str, rng: random.Random) -> str:
    """Session ids in links, a fresh timestamp and view counter near the top of the body."""
    sid = f"{rng.getrandbits(128):032x}"
    html = re.sub(r'href="([^"#?]*)"', lambda m: f'href="{m.group(1)}?sid={sid}"', html)
    stamp = (
        f'<div class="updated">Updated 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} '
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} · {rng.randint(100, 99999)} views"
        "</div>"
    )
    return re.sub(
        r"(<body[^>]*>)", lambda m: m.group(1) + stamp, html, count=1, flags=re.IGNORECASE
    )


def _edit_text(text: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str:
    tokens = _WORD.findall(text)
    words = [i for i, token in enumerate(tokens) if _IS_WORD.match(token)]
    for i in rng.sample(words, round(len(words) * rate)):
        op = rng.random()
        if op < 0.4:
            tokens[i] = rng.choice(vocabulary)
        elif op < 0.7:
            tokens[i] = ""
        else:
            tokens[i] = tokens[i] + " " + rng.choice(vocabulary)
    return "".join(tokens)


def edit_words(html: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str | None:
    """Replace, delete or insert ``rate`` of the words of every sizeable text node."""
    root = _parse(html)
    body = root.find("body") if root is not None else None
    if root is None or body is None:
        return None
    for el in body.iter():
        if el.tag in ("script", "style"):
            continue
        if el.text and len(el.text) > 20:
            el.text = _edit_text(el.text, rate, rng, vocabulary)
        if el.tail and len(el.tail) > 20:
            el.tail = _edit_text(el.tail, rate, rng, vocabulary)
    return _serialise(root)


def markup_only(html: str) -> str | None:
    """Same text, different markup: wrappers, renamed classes, no indentation."""
    root = _parse(html)
    if root is None:
        return None
    for el in root.iter("p"):
        span = etree.Element("span", {"class": "text-run"})
        span.text, el.text = el.text, None
        for child in list(el):
            span.append(child)
        el.insert(0, span)
    for el in root.iter("div"):
        if el.get("class"):
            el.set("class", el.get("class", "") + " v2")
    html = _serialise(root)
    return re.sub(r">\s+<", "><", html)


def reencode(html: str, lang: str, declare: bool) -> bytes:
    """The page in the legacy charset of its language, with or without a declaration."""
    encoding = "gbk" if lang == "zh" else "cp1252"
    html = _CHARSET_META.sub("", html)
    if declare:
        html = re.sub(
            r"<head([^>]*)>",
            rf'<head\1><meta charset="{encoding}">',
            html,
            count=1,
            flags=re.IGNORECASE,
        )
    return html.encode(encoding, errors="xmlcharrefreplace")


def build(pages: list[Page], per_lang: int | None, seed: int) -> Corpus:
    """Documents and labelled pairs for English and Chinese pages."""
    rng = random.Random(seed)
    corpus = Corpus()
    by_lang: dict[str, list[Page]] = defaultdict(list)
    for page in pages:
        if page.lang in ("en", "zh") and page.page_type != "listing":
            by_lang[page.lang].append(page)
    for lang, group in sorted(by_lang.items()):
        rng.shuffle(group)
        texts: dict[str, str] = {}
        anchors: list[Page] = []
        for page in group:
            html = decode_html(page.body()).text
            if len(naive_text(html)) >= 500:
                texts[page.id] = html
                anchors.append(page)
        vocabulary = [
            word
            for page in anchors[:30]
            for word in _WORD.findall(naive_text(texts[page.id]))
            if _IS_WORD.match(word)
        ]
        templates = [p for p in anchors if _has_container(texts[p.id])]
        selected = anchors if per_lang is None else anchors[:per_lang]
        for page in selected:
            _variants(corpus, page, texts, templates, vocabulary, rng, lang)
        _same_template(corpus, selected, anchors, texts, rng, lang)
        for page in selected:
            for other in rng.sample(selected, min(2, len(selected))):
                if other.domain != page.domain:
                    corpus.pairs.append(Pair(page.id, other.id, False, "random", lang))
    return corpus


def _variants(
    corpus: Corpus,
    page: Page,
    texts: dict[str, str],
    templates: list[Page],
    vocabulary: list[str],
    rng: random.Random,
    lang: str,
) -> None:
    html = texts[page.id]
    a = corpus.add(page.id, page.body(), lang)

    def positive(kind: str, variant: str | bytes | None) -> None:
        if variant is None:
            return
        body = variant if isinstance(variant, bytes) else variant.encode("utf-8")
        corpus.pairs.append(Pair(a, corpus.add(f"{a}~{kind}", body, lang), True, kind, lang))

    root = _parse(html)
    paragraphs = _main_blocks(page, root) if root is not None else []
    others = [t for t in templates if t.domain != page.domain]
    if paragraphs and others and root is not None:
        template = rng.choice(others)
        syndicated = syndicate(paragraphs, _headline(root), texts[template.id], template.domain)
        if syndicated is not None:
            positive("syndication", syndicated)
            b = corpus.add(template.id, template.body(), lang)
            corpus.pairs.append(
                Pair(b, f"{a}~syndication", False, "template-vs-syndicated", lang, True)
            )
    donor_page = rng.choice(others or templates)
    donor_root = _parse(texts[donor_page.id])
    donor = [
        p
        for p in (_paragraphs(donor_page, donor_root) if donor_root is not None else [])
        if len(p) > 40
    ] or ["Great article, thanks for sharing this with us all, I learned a lot from it today."]
    positive("boilerplate", inject_boilerplate(html, donor, rng))
    positive("dynamic", dynamic_tokens(html, rng))
    positive("edit-1-5%", edit_words(html, rng.uniform(0.01, 0.05), rng, vocabulary))
    positive("markup", markup_only(html))
    positive("reencode-declared", reencode(html, lang, True))
    positive("reencode-undeclared", reencode(html, lang, False))
    heavy = edit_words(html, rng.uniform(0.4, 0.5), rng, vocabulary)
    if heavy is not None:
        corpus.pairs.append(
            Pair(a, corpus.add(f"{a}~heavy", heavy.encode(), lang), False, "heavy-edit", lang)
        )


def _same_template(
    corpus: Corpus,
    selected: list[Page],
    anchors: list[Page],
    texts: dict[str, str],
    rng: random.Random,
    lang: str,
    per_domain: int = 60,
) -> None:
    """Pairs of different pages of one site (the hardest natural negatives)."""
    domains = {page.domain for page in selected}
    groups: dict[str, list[Page]] = defaultdict(list)
    for page in anchors:
        if page.domain in domains:
            groups[page.domain].append(page)
    words: dict[str, set[str]] = {}
    for group in groups.values():
        for page in group:
            root = _parse(texts[page.id])
            paragraphs = _paragraphs(page, root) if root is not None else []
            words[page.id] = set(_WORD.findall(" ".join(paragraphs))) - {" "}
        pairs = [
            (x, y)
            for x, y in combinations(group, 2)
            if _jaccard(words[x.id], words[y.id]) < _NATURAL_COPY
        ]
        for x, y in rng.sample(pairs, min(per_domain, len(pairs))):
            corpus.add(x.id, x.body(), lang)
            corpus.add(y.id, y.body(), lang)
            corpus.pairs.append(Pair(x.id, y.id, False, "same-site", lang, True))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
