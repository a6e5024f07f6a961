"""No distinct page is dropped on its template's text; copies still are.

Two pages of one site template share a title scheme, a navigation, a site introduction and
a footer. When the extractor reads the template instead of the article, or the article is
too short to tell pages apart, the pages must both be kept: a page without a fingerprint
always passes, and a fingerprint must rest on the page's own text.
"""

from __future__ import annotations

import random

import pytest

from scrapy_simhash.confirm import Signer
from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.index import open_index
from scrapy_simhash.index.defaults import default_distances

VOCABULARY = [
    "harbour",
    "council",
    "bridge",
    "tram",
    "library",
    "orchard",
    "festival",
    "museum",
    "archive",
    "river",
    "budget",
    "school",
    "station",
    "market",
    "theatre",
    "garden",
    "clinic",
    "ferry",
    "stadium",
    "canal",
    "tower",
    "valley",
    "forest",
    "mill",
    "quarry",
    "lighthouse",
    "airport",
    "depot",
    "factory",
    "bakery",
    "brewery",
    "vineyard",
    "observatory",
    "chapel",
    "fountain",
    "square",
    "avenue",
    "parish",
    "district",
    "county",
    "island",
    "meadow",
    "pasture",
    "glacier",
]


def story(seed: int, words: int) -> list[str]:
    """Paragraphs of about 40 words of seeded prose."""
    rng = random.Random(seed)
    text = [rng.choice(VOCABULARY) for _ in range(words)]
    return [" ".join(text[i : i + 40]) + "." for i in range(0, words, 40)]


def page(paragraphs: list[str], *, title: str = "Latest news | The Courier") -> str:
    """A news template: navigation, a long site introduction that no class marks as
    boilerplate, the article, and a footer."""
    intro = (
        "The Courier has reported on the valley, its towns and its people since 1887. "
        "Our newsroom of forty journalists covers local politics, business, culture and "
        "sport, and every reader can send us tips, letters and photographs at any time. "
        "Subscribers receive the morning briefing, the weekend magazine and full access "
        "to more than a century of archives, searchable by name, place and date."
    )
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<html><head><title>{title}</title></head><body>
<nav><a href="/">Home</a> <a href="/local">Local</a> <a href="/sport">Sport</a></nav>
<div class="site-intro"><p>{intro}</p><p>{intro}</p></div>
<article><h1>Latest news</h1>{body}</article>
<footer>Contact us. Terms. Privacy.</footer>
</body></html>"""


@pytest.fixture(scope="module")
def fingerprinter() -> Fingerprinter:
    return Fingerprinter()


def kept(fingerprinter: Fingerprinter, pages: dict[str, str]) -> set[str]:
    """The URLs a crawl keeps: pages without a fingerprint pass, the rest go through
    the index's check-and-add in order."""
    max_distance, exact_distance = default_distances(64)
    index = open_index(
        "memory://",
        bits=64,
        max_distance=max_distance,
        exact_distance=exact_distance,
        scheme=fingerprinter.scheme,
    )
    signer = Signer(index.confirm_key)
    result = set()
    for url, html in pages.items():
        read = fingerprinter.fingerprint_page(html.encode())
        fingerprint = read.fingerprint
        if (
            fingerprint is None
            or index.check_and_add(url, fingerprint, signer.sign(read.evidence)) is None
        ):
            result.add(url)
    return result


def test_same_title_same_template_articles_of_150_words_are_both_kept(
    fingerprinter: Fingerprinter,
) -> None:
    one, two = page(story(1, 160)), page(story(2, 160))
    assert fingerprinter.fingerprint_page(one.encode()).fingerprint is not None
    assert fingerprinter.fingerprint_page(two.encode()).fingerprint is not None
    assert kept(fingerprinter, {"/a": one, "/b": two}) == {"/a", "/b"}


def test_same_title_same_template_articles_of_10_words_are_both_kept(
    fingerprinter: Fingerprinter,
) -> None:
    one, two = page(story(1, 10)), page(story(2, 10))
    result = fingerprinter.fingerprint_page(one.encode())
    assert result.exact  # too short for a near test: exact copies only
    assert result.reason is not None
    assert "of its own" in result.reason
    assert kept(fingerprinter, {"/a": one, "/b": two}) == {"/a", "/b"}


def test_a_print_copy_of_an_article_is_still_dropped(fingerprinter: Fingerprinter) -> None:
    original = page(story(3, 200))
    printed = f"""<html><head><title>Latest news</title></head><body>
<div class="print-header">Printed from The Courier</div>
<div class="content"><h1>Latest news</h1>{"".join(f"<p>{p}</p>" for p in story(3, 200))}
<p class="credit">Updated 2026-03-08 10:31, 1,024 views</p></div></body></html>"""
    assert kept(fingerprinter, {"/a": original, "/print/a": printed}) == {"/a"}


def test_template_text_outside_a_marked_article_is_not_read_as_the_page(
    fingerprinter: Fingerprinter,
) -> None:
    """Without <article>, the intro would be the main text of every page of the site."""
    from scrapy_simhash import extract_main_text

    main = extract_main_text(page(story(4, 10)).encode())
    assert "1887" not in main.text
    assert main.text.split()[0] in VOCABULARY
