"""Fingerprints and signatures frozen: work on speed must not move a single bit.

An index holds fingerprints computed by earlier releases under one ``FORMAT_VERSION``; a
change that only makes the pipeline faster (decode, parse, walk, read-out, features,
SimHash, signature) must give every page the same fingerprint, signature and texts, or
the pages already stored stop matching their copies. This module builds a corpus of
pages in code (seeded, so the same bytes on every machine) that touches every step of
extraction: boilerplate by tag, role, visibility and class name, marked articles,
threads, streamed segments, credit lines, link lists, short pages, several charsets and
scripts. It compares what ``Fingerprinter.fingerprint_page`` and ``Signer.sign`` give
today, on the compiled walk and read-out and on the interpreted ones, with the values the
code gave when the file ``frozen_fingerprints.json`` was written.

When fingerprints are *meant* to change (a new ``FORMAT_VERSION``), write the file anew:
``python3 tests/unit/test_fingerprint_frozen.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.confirm import Signer
from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter, PageFingerprint
from scrapy_simhash.text import compiled

FROZEN = Path(__file__).with_name("frozen_fingerprints.json")
#: The namespace key every frozen signature is made under (any fixed value will do).
KEY = 0x5EED_0F_C0FFEE_1234
#: The configurations whose outputs are frozen: the defaults at both widths, and the
#: options that take the general feature path (title words, numbers kept, shingles).
CONFIGS = {
    "64": FingerprintConfig(),
    "128": FingerprintConfig(bits=128),
    "options": FingerprintConfig(title_weight=1.5, keep_numbers=True, seed=7),
    "shingles": FingerprintConfig(shingle_size=2, weighting="tf"),
}

_LATIN = [
    "".join(random.Random(n).choices("abcdefghijklmnoprstuvwyzéäöü", k=3 + n % 7))
    for n in range(1500)
]
_CJK = [chr(code) for code in range(0x4E00, 0x4E00 + 800)]
_STOP = ["the", "and", "of", "der", "und", "le", "的", "了", "是"]


def _sentence(rng: random.Random, cjk: bool, words: int) -> str:
    if cjk:
        chars = [rng.choice(_CJK + _STOP[-3:]) for _ in range(words * 2)]
        for at in range(rng.randint(1, 4)):
            chars.insert(min(len(chars), at * 9 + rng.randint(0, 8)), rng.choice("，。、："))
        return "".join(chars) + "。"
    picked = [rng.choice(_LATIN + _STOP[:6]) for _ in range(words)]
    if rng.random() < 0.3:
        picked.insert(rng.randrange(len(picked)), str(rng.randint(1, 99999)))
    if rng.random() < 0.3:
        picked[rng.randrange(len(picked))] += ","
    return " ".join(picked).capitalize() + rng.choice([".", ".", "!", "?"])


def _inline(rng: random.Random, text: str) -> str:
    """Wrap some words of ``text`` in inline elements (with tails), or break the line."""
    words = text.split(" ")
    if len(words) < 4:
        return text
    at = rng.randrange(1, len(words) - 2)
    tag = rng.choice(["a href='/x'", "b", "em", "span class='hl'", "strong", "code", "br"])
    name = tag.split()[0]
    if name == "br":
        words[at] = words[at] + "<br>"
    else:
        words[at] = f"<{tag}>{words[at]} {words[at + 1]}</{name}>"
        del words[at + 1]
    return " ".join(words)


def _paragraphs(rng: random.Random, cjk: bool, count: int, long: bool = True) -> str:
    out = []
    for _ in range(count):
        text = " ".join(
            _sentence(rng, cjk, rng.randint(8, 22) if long else rng.randint(2, 5))
            for _ in range(rng.randint(1, 4))
        )
        out.append(f"<p>{_inline(rng, text)}</p>")
    return "\n".join(out)


def _links(rng: random.Random, count: int, cls: str = "menu") -> str:
    items = "".join(
        f"<li><a href='/p/{rng.randint(1, 999)}'>{_sentence(rng, False, 2)}</a></li>"
        for _ in range(count)
    )
    return f"<ul class='{cls}'>{items}</ul>"


_CREDITS = [
    "By Jane Doe",
    "2024-03-01 10:31",
    "来源：新华网 责任编辑：王五",
    "Updated March 4, 2025",
    "分享到：",
    "Copyright 2024 Example Media. All rights reserved.",
    "阅读 (123)",
    "Jonah Reyes, 2026-03-08",
    "Donnerstag, 3. Februar 2022",
    "Share",
    "记者 张三 2026-03-08",
    "Posted by admin on Tuesday",
    "Tue, 4 Mar 2025 at 9:02 AM EST",
]
_BOILERPLATE = [
    lambda rng: f"<nav>{_links(rng, 6)}</nav>",
    lambda rng: f"<aside><h3>More</h3>{_links(rng, 5, 'widget')}</aside>",
    lambda rng: f"<footer><p>{_sentence(rng, False, 8)}</p>{_links(rng, 3)}</footer>",
    lambda rng: f"<div class='sidebar'>{_paragraphs(rng, False, 1)}{_links(rng, 4)}</div>",
    lambda rng: f"<div class='comments' id='comments'>{_paragraphs(rng, False, 3)}</div>",
    lambda rng: f"<div class='related-posts'>{_paragraphs(rng, rng.random() < 0.5, 2)}</div>",
    lambda rng: f"<div style='display: none'>{_paragraphs(rng, False, 2)}</div>",
    lambda rng: f"<div hidden>{_paragraphs(rng, False, 1)}</div>",
    lambda rng: f"<div aria-hidden='true'><p>{_sentence(rng, False, 12)}</p></div>",
    lambda rng: f"<div role='navigation'>{_links(rng, 5)}</div>",
    lambda rng: "<div class='share-bar js-share'><a href='#'>Tweet</a> <a href='#'>Mail</a></div>",
    lambda rng: f"<div class='cookie-consent'><p>{_sentence(rng, False, 20)}</p></div>",
    lambda rng: f"<header class='masthead'><h2>Site</h2>{_links(rng, 4)}</header>",
    lambda rng: "<script>var x = '<p>not text</p>';</script><style>p {color: red}</style>",
    lambda rng: (
        f"<form><input name='q'><button>Go</button><select><option>A</option></select>"
        f"<label>{_sentence(rng, False, 3)}</label></form>"
    ),
    lambda rng: (
        f"<table><tr><td>{_sentence(rng, False, 6)}</td><td>{rng.randint(1, 99)}"
        f"</td></tr><tr><th>Head</th><td>{_sentence(rng, True, 4)}</td></tr></table>"
    ),
    lambda rng: f"<noscript><p>{_sentence(rng, False, 9)}</p></noscript>",
    lambda rng: (
        f"<div class='widget' id='post-{rng.randint(1, 10**6)}'>"
        f"<p>{_sentence(rng, False, 5)}</p></div>"
    ),
]


def _article(rng: random.Random, cjk: bool, title: str) -> str:
    body = _paragraphs(rng, cjk, rng.randint(2, 12))
    if rng.random() < 0.5:
        credit = rng.choice(_CREDITS)
        body = f"<p class='meta'>{credit}</p>\n{body}\n<p>{rng.choice(_CREDITS)}</p>"
    if rng.random() < 0.3:
        body += f"<blockquote>{_paragraphs(rng, cjk, 1)}</blockquote>"
    if rng.random() < 0.3:
        body += f"<ul>{''.join(f'<li>{_sentence(rng, cjk, 10)}</li>' for _ in range(4))}</ul>"
    if rng.random() < 0.3:
        body += "<h2>" + _sentence(rng, cjk, 4) + "</h2>" + _paragraphs(rng, cjk, 2)
    headline = f"<h1>{title}</h1>" if rng.random() < 0.7 else ""
    wrapper = rng.choice(
        [
            "<article>{}</article>",
            "<div class='entry-content post-body'>{}</div>",
            "<div itemprop='articleBody'>{}</div>",
            "<main><div>{}</div></main>",
            "<div id='content'><div class='text'>{}</div></div>",
            "<div>{}</div>",
            "<section class='story'>{}</section>",
            "<div class='content-with-sidebar-wrp'>{}</div>",
            "<div class='sidebar-content'>{}</div>",
        ]
    )
    return headline + wrapper.format(body)


def _thread(rng: random.Random, cjk: bool) -> str:
    posts = "".join(
        f"<li class='post'><div class='post-text'>{_paragraphs(rng, cjk, rng.randint(1, 3))}"
        f"</div><span class='author'>user{rng.randint(1, 99)}</span></li>"
        for _ in range(rng.randint(3, 7))
    )
    return f"<ol class='thread'>{posts}</ol>"


def _streamed(rng: random.Random, cjk: bool) -> tuple[str, str]:
    """An article whose body arrives as a streamed segment, and the segment itself."""
    head = f"<article><h1>{_sentence(rng, cjk, 4)}</h1><template id='B:0'></template>tail"
    segment = f"<div hidden id='S:0'>{_paragraphs(rng, cjk, 4)}</div>"
    return head + "</article>", segment


def _page(index: int) -> tuple[bytes, str | None]:
    """Page ``index`` of the corpus: its bytes and the Content-Type it is served with."""
    rng = random.Random(index)
    cjk = rng.random() < 0.3
    title = _sentence(rng, cjk, rng.randint(3, 7)).rstrip(".!?。")
    kind = index % 9
    around = [rng.choice(_BOILERPLATE)(rng) for _ in range(rng.randint(0, 6))]
    tail = ""
    if kind == 0:
        main = _thread(rng, cjk)
    elif kind == 1:
        main, tail = _streamed(rng, cjk)
    elif kind == 2:  # a listing: links and nothing else
        main = _links(rng, 20, "list")
    elif kind == 3:  # a short page: one line of its own
        main = f"<h1>{title}</h1><div class='content'><p>{_sentence(rng, cjk, 6)}</p></div>"
    elif kind == 4:  # several articles, none marked; or teasers each marked
        teasers = "".join(
            f"<article class='teaser'><h2>{_sentence(rng, cjk, 3)}</h2>"
            f"{_paragraphs(rng, cjk, 1)}</article>"
            for _ in range(rng.randint(2, 5))
        )
        main = _article(rng, cjk, title) + teasers
    elif kind == 5:  # deep unclosed wrappers
        depth = rng.choice([40, 300])
        main = "<div class='wrap'>" * depth + _article(rng, cjk, title)
    else:
        main = _article(rng, cjk, title)
    parts = [*around[: len(around) // 2], main, *around[len(around) // 2 :]]
    meta = ""
    if rng.random() < 0.3:
        meta = f"<meta property='og:title' content='{title} | Example'>"
    title_tag = rng.choice(
        [
            f"<title>{title} - Example News</title>",
            "<title></title>",
            f"<title>Example | {title}</title>",
            "",
        ]
    )
    stray = "</html>" if rng.random() < 0.1 else ""
    text = (
        f"<!DOCTYPE html><html><head><meta charset='{{charset}}'>{title_tag}{meta}</head>"
        f"<body>{stray}{''.join(parts)}<!-- a comment -->{tail}"
        f"<p>&copy; 2024 &amp; &nbsp;more</p></body></html>"
    )
    return _encode(rng, text, cjk)


def _encode(rng: random.Random, text: str, cjk: bool) -> tuple[bytes, str | None]:
    """The page in one of the charsets real servers use, declared or not."""
    choice = rng.random()
    if cjk and choice < 0.4:
        body = text.replace("{charset}", "gbk").encode("gbk", errors="replace")
        return body, None
    if not cjk and choice < 0.2:
        # windows-1252 with a C1 byte and a wrong declaration the decoder must overrule.
        body = text.replace("{charset}", "utf-8").encode("cp1252", errors="replace")
        return body + b"\x93quoted\x94", None
    if choice < 0.3:
        return b"\xef\xbb\xbf" + text.replace("{charset}", "utf-8").encode(), None
    content_type = "text/html; charset=utf-8" if rng.random() < 0.5 else None
    return text.replace("{charset}", "utf-8").encode(), content_type


def corpus() -> dict[str, tuple[bytes, str | None]]:
    """The frozen corpus: generated pages plus a few hand-written edge cases."""
    pages = {f"page-{index:03d}": _page(index) for index in range(90)}
    pages["empty"] = (b"", None)
    pages["binary"] = (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), None)
    pages["text-only"] = (" ".join(_LATIN[:300]).encode(), "text/plain")
    pages["nul-bytes"] = (b"<html><body><p>" + b"word\x00 " * 80 + b"</p></body></html>", None)
    pages["too-deep"] = (
        b"<html><body>" + b"<div>" * 2100 + " ".join(_LATIN[300:700]).encode() + b"</body></html>",
        None,
    )
    return pages


def _digest(page: PageFingerprint) -> str:
    """One digest of every text a page's fingerprint keeps (what the template memory and
    the second test read)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (
        page.text,
        page.page_text,
        page.own,
        page.visible,
        page.title,
        page.encoding,
        page.reason or "",
        "\x01".join(page.notes),
        str(page.chars),
    ):
        h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()


def compute() -> dict[str, dict[str, Any]]:
    """What today's code makes of the corpus under every frozen configuration."""
    signer = Signer(KEY)
    results: dict[str, dict[str, Any]] = {}
    fingerprinters = {name: Fingerprinter(config) for name, config in CONFIGS.items()}
    for name, (body, content_type) in corpus().items():
        row: dict[str, Any] = {}
        for label, fingerprinter in fingerprinters.items():
            page = fingerprinter.fingerprint_page(body, content_type=content_type)
            fingerprint = None if page.fingerprint is None else f"{page.fingerprint:x}"
            signature = f"{signer.sign(page.evidence):x}" if page.fingerprint is not None else None
            row[label] = [fingerprint, signature, page.exact, _digest(page)]
        results[name] = row
    return results


@pytest.fixture(scope="module")
def frozen() -> dict[str, dict[str, Any]]:
    loaded: dict[str, dict[str, Any]] = json.loads(FROZEN.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module", params=["compiled", "interpreted"])
def computed(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """Today's values on each path: the compiled walk and read-out, and the interpreted
    ones of an install without a C compiler (both must keep every bit)."""
    if request.param == "interpreted":
        with compiled.interpreted():
            return compute()
    assert compiled.AVAILABLE, "the compiled extension was not built (pip install -e .)"
    return compute()


def test_the_corpus_reaches_every_kind_of_outcome(frozen: dict[str, dict[str, Any]]) -> None:
    """The corpus is worth freezing: long pages, short pages' exact digests, pages with no
    fingerprint, and both scripts' texts."""
    rows = [row["64"] for row in frozen.values()]
    assert sum(1 for fp, _, exact, _ in rows if fp and not exact) >= 40
    assert sum(1 for fp, _, exact, _ in rows if fp and exact) >= 3
    assert sum(1 for fp, _, _, _ in rows if fp is None) >= 5
    assert len(corpus()) == len(frozen)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_fingerprints_signatures_and_texts_are_unchanged(
    config: str, frozen: dict[str, dict[str, Any]], computed: dict[str, dict[str, Any]]
) -> None:
    changed = {
        name: (frozen[name][config], row[config])
        for name, row in computed.items()
        if row[config] != frozen[name][config]
    }
    assert not changed, f"{len(changed)} pages changed, e.g. {next(iter(changed.items()))}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    FROZEN.write_text(json.dumps(compute(), indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {FROZEN}")
