"""A template block read as every page's article never makes a host's distinct pages copies,
whatever came before them on the host.

The site of :mod:`tests.crawl.test_templates` (20 short articles whose long shared author bio is
what the extractor reads as each one's main text), now after ordinary pages of the same host
(a home page, sections, an "about" page, as any crawl of a real site fetches first), after a
redesign, and judged by three processes sharing Redis. Before the second look read only the
text outside a page's main text, a host with more than four pages seen lost 19 of 20.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.cli._documents import Document
from scrapy_simhash.cli.dedup import Grouping
from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint
from scrapy_simhash.reset import reset_namespace
from scrapy_simhash.template import (
    EMPTY,
    HostMemory,
    LocalMemory,
    learnable,
    page_slots,
    second_look,
)
from tests.crawl.test_templates import article, urls
from tests.scrapy_inprocess import HARBOUR, harness, random_story, story

FINGERPRINTER = Fingerprinter()
ARTICLES = [FINGERPRINTER.fingerprint_page(article(n)) for n in range(20)]
#: Ordinary pages of the same host: each one's own text, six lines of it.
ORDINARY = [FINGERPRINTER.fingerprint_page(random_story(1000 + n)) for n in range(5)]


def _judge(pages: list[tuple[str, PageFingerprint]]) -> set[str]:
    """The names of the pages dropped when ``pages`` arrive in this order on one host, as
    the command line and the crawl judge them (template memory on)."""
    memory = LocalMemory(FINGERPRINTER)
    grouping = Grouping(FINGERPRINTER, 8, memory, 3)
    for name, page in pages:
        applied = memory.apply("news.example", page)
        grouping.add(Document(name, applied, applied.text, host="news.example"))
    return {doc.path for group in grouping.close() for doc, _ in group.members[1:]}


@settings(max_examples=60, deadline=None)
@given(first=st.integers(0, len(ORDINARY)), order=st.permutations(range(20)))
def test_no_article_is_dropped_whatever_came_first(first: int, order: list[int]) -> None:
    pages = [(f"other{n}", ORDINARY[n]) for n in range(first)]
    pages += [(f"article{n}", ARTICLES[n]) for n in order]
    assert _judge(pages) == set()


def test_a_copy_edited_inside_its_main_text_is_no_distinct_page() -> None:
    """A copy's changes (an edit, a timestamp) are inside its main text: the second look
    reads only the lines outside it, which its original showed too."""
    lines = [
        " ".join(
            random.Random(n).choice(["tram", "quay", "bridge", "ferry", "canal"]) for _ in range(25)
        )
        + "."
        for n in range(6)
    ]
    edited = [*lines[:2], lines[2].replace("tram", "bus", 1) + " Corrected.", *lines[3:]]
    sidebar = "<aside><p>Read the harbour newsletter every Monday for the week's news.</p></aside>"

    def page(paragraphs: list[str]) -> PageFingerprint:
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        return FINGERPRINTER.fingerprint_page(
            f"<html><title>Quay</title><body><article>{body}</article>{sidebar}</body></html>".encode()
        )

    original, copy = page(lines), page(edited)
    assert original.text != copy.text
    memory = EMPTY.saw(learnable(original)).saw(learnable(copy))
    look = second_look(FINGERPRINTER, copy, memory)
    assert look is None or not look.distinct


def test_a_page_that_reads_as_the_matched_one_is_not_read_again_by_its_rarer_lines() -> None:
    """A byte-identical copy (the commonest copy of all) has the matched page's very
    fingerprint and sketch: it is that page's copy, without fingerprinting its rarer lines
    to credit it elsewhere. A page of the same fingerprint but other lines still is."""
    sidebar = "".join(f"<p>Sidebar teaser number {n} of the harbour desk.</p>" for n in range(8))

    def page(extra: str = "") -> PageFingerprint:
        prose = "".join(f"<p>{line}</p>" for line in HARBOUR)
        body = f"<article>{prose}</article><aside>{sidebar}{extra}</aside>"
        return FINGERPRINTER.fingerprint_page(f"<html><body>{body}</body></html>".encode())

    original, copy = page(), page()
    memory = EMPTY.saw(learnable(original)).saw(learnable(copy))
    sketch = original.evidence.sketch
    read_again = second_look(FINGERPRINTER, copy, memory, sketch)
    assert read_again is not None  # the costly reading
    assert not read_again.distinct
    assert second_look(FINGERPRINTER, copy, memory, sketch, original.fingerprint) is None
    other = page("<p>" + "A longer line of its own that the sidebar never showed. " * 3 + "</p>")
    assert other.fingerprint == original.fingerprint
    assert other.evidence.sketch != sketch
    seen = EMPTY.saw(learnable(original)).saw(learnable(other))
    assert second_look(FINGERPRINTER, other, seen, sketch, original.fingerprint) is not None


@pytest.mark.parametrize("seed", [1, 2])
def test_ordinary_pages_first_then_every_article_is_kept_in_a_crawl(seed: int) -> None:
    """The scene of the report: home, a section and an about page first, then the articles
    in a random order. 0.3.0 dropped 19 of the 20."""
    order = list(range(20))
    random.Random(seed).shuffle(order)
    with harness() as h:
        for n, name in enumerate(("", "city", "about")):
            h.fetch(f"http://news.example:8080/{name}", random_story(2000 + n))
        metas = {urls()[n]: h.fetch(urls()[n], article(n))[1] for n in order}
        assert [url for url, meta in metas.items() if meta["duplicate_of"]] == []
        assert all(meta["fingerprint"] for meta in metas.values())


def test_a_redesign_mid_crawl_keeps_every_article_of_the_new_design() -> None:
    """Pages of the old design first (each its own text), then 15 of the new one, whose
    bio every page reads; 0.3.0 dropped 14 of the 15."""
    old = [(f"old{n}", FINGERPRINTER.fingerprint_page(random_story(3000 + n))) for n in range(12)]
    new = [(f"article{n}", ARTICLES[n]) for n in range(15)]
    assert _judge(old + new) == set()


def _three_processes(
    redis_url: str, namespace: str, first: list[tuple[str, bytes]], seed: int
) -> tuple[list[str], dict[str, object]]:
    """Three crawl processes sharing Redis take turns over ``first`` (URL, body), then the
    20 articles in an order drawn with ``seed``, then a print copy of the second article:
    the articles dropped, and the print copy's meta."""
    settings = {"SIMHASH_INDEX_URL": redis_url, "SIMHASH_NAMESPACE": namespace}
    order = list(range(20))
    random.Random(seed).shuffle(order)
    dropped: list[str] = []
    with harness(**settings) as a, harness(**settings) as b, harness(**settings) as c:
        processes = [a, b, c]
        for turn, (url, body) in enumerate(first):
            processes[turn % 3].fetch(url, body)
        for turn, n in enumerate(order):
            _, meta = processes[turn % 3].fetch(urls()[n], article(n))
            if meta["duplicate_of"]:
                dropped.append(urls()[n])
        _, printed = a.fetch(urls()[order[1]] + "?print=1", article(order[1], stamp="08:05"))
    reset_namespace(redis_url, namespace)
    printed["copied"] = urls()[order[1]]
    return dropped, printed


@pytest.mark.redis
def test_three_processes_sharing_redis_keep_every_article(redis_url: str) -> None:
    """Three crawl processes take turns over one host's pages (three ordinary pages first),
    sharing the namespace's index and template memory in Redis."""
    first = [
        (f"http://news.example:8080/{name}", random_story(2000 + n))
        for n, name in enumerate(("", "city", "about"))
    ]
    dropped, _ = _three_processes(redis_url, "three-orders", first, seed=7)
    assert dropped == []


def listing(seed: int, lines: int = 200) -> bytes:
    """A section page of the host: an introduction and ``lines`` teasers of its own."""
    rng = random.Random(seed)
    words = ["tram", "quay", "ferry", "canal", "market", "choir", "orchard", "rowing", "dock"]

    def sentence(n: int) -> str:
        return f"{' '.join(rng.choice(words) for _ in range(9))} number {seed}-{n}."

    intro = "".join(f"<p>{sentence(n)}</p>" for n in range(6))
    teasers = "".join(f"<p>{sentence(n)}</p>" for n in range(6, lines))
    return (
        f"<html><head><title>Section {seed}</title></head><body><article><h1>Section {seed}"
        f"</h1>{intro}</article><aside>{teasers}</aside></body></html>"
    ).encode()


#: Section pages enough to fill the host's counters: every bucket counted on two pages or
#: more, so "a line the host never showed" can no longer be told from the counters.
SECTIONS = [FINGERPRINTER.fingerprint_page(listing(4000 + n)) for n in range(40)]


def _filled_memory() -> LocalMemory:
    memory = LocalMemory(FINGERPRINTER)
    for page in SECTIONS:
        memory.see("news.example", page)
    return memory


def test_the_section_pages_fill_the_counters() -> None:
    """The premise of the tests below: after the sections, nearly every bucket is counted
    on two pages or more, and the counters alone let article 1 be dropped."""
    memory = _filled_memory()
    seen = memory.hosts["news.example"].seen
    assert sum(count >= 2 for count in seen) > 0.9 * len(seen)
    memory.see("news.example", ARTICLES[0])
    memory.see("news.example", ARTICLES[1])
    look = memory.second_look("news.example", ARTICLES[1])
    assert look is None or not look.distinct


def test_the_matched_page_s_sketch_tells_a_distinct_article_on_a_full_host() -> None:
    memory = _filled_memory()
    memory.see("news.example", ARTICLES[0])
    memory.see("news.example", ARTICLES[1])
    look = memory.second_look("news.example", ARTICLES[1], ARTICLES[0].evidence.sketch)
    assert look is not None
    assert look.distinct
    # A copy of article 0 (its timestamp changed) brings nothing article 0 lacks.
    copy = FINGERPRINTER.fingerprint_page(article(0, stamp="08:05"))
    memory.see("news.example", copy)
    again = memory.second_look("news.example", copy, ARTICLES[0].evidence.sketch)
    assert again is None or not again.distinct


@settings(max_examples=25, deadline=None)
@given(first=st.integers(0, len(SECTIONS)), order=st.permutations(range(20)))
def test_no_article_is_dropped_after_any_number_of_section_pages(
    first: int, order: list[int]
) -> None:
    pages = [(f"section{n}", SECTIONS[n]) for n in range(first)]
    pages += [(f"article{n}", ARTICLES[n]) for n in order]
    # A print copy of an article that is not the first: the first is filed under the bio.
    copied = order[1]
    pages.append(("print", FINGERPRINTER.fingerprint_page(article(copied, stamp="08:05"))))
    assert _judge(pages) == {"print"}


@pytest.mark.redis
def test_three_processes_on_a_full_host_keep_every_article(redis_url: str) -> None:
    """The same through Redis: each page's sketch is stored with its entry and read back by
    whichever process meets the page's copy or its neighbour."""
    first = [
        (f"http://news.example:8080/section/{n}", listing(4000 + n)) for n in range(len(SECTIONS))
    ]
    dropped, printed = _three_processes(redis_url, "full-host", first, seed=11)
    assert dropped == []
    assert printed["duplicate_of"] == printed["copied"]


def test_a_few_long_pages_make_no_template_of_their_own_lines() -> None:
    """Ten section pages of 200 lines of their own load every bucket about once: a bucket
    is template only above what that load gives (before, about 40 buckets passed the bar
    of four pages by sharing, and an article whose main text fell in them lost it)."""
    memory = HostMemory()
    shared = FINGERPRINTER.fingerprint_page(random_story(77)).page_text
    for page in SECTIONS[:10]:
        memory = memory.learned(page_slots(page.page_text + "\n" + shared))
    template = memory.template()
    assert set(page_slots(shared)) <= template
    assert len(template - set(page_slots(shared))) <= 3


CHROME = "".join(
    f"<p>Harbour Gazette {part}: letters to the editor, subscriptions, advertising, careers "
    f"and the archive of every edition since 1921, open to readers at the Quay Street desk.</p>"
    for part in ("North", "South")
)


def _desktop(paragraphs: list[str], seed: int) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<html><head><title>Quay {seed}</title></head><body><article><h1>Quay {seed}</h1>"
        f"{body}</article><div class='desk'>{CHROME}</div></body></html>"
    ).encode()


def test_a_desktop_copy_of_a_print_view_is_no_distinct_page() -> None:
    """The print view came first, so the desktop page has the host's footer, which the print
    view lacks; the footer is on every page of the host, so it is not the page's own text."""
    rng = random.Random(5)
    words = ["tram", "quay", "bridge", "ferry", "canal", "market", "choir", "dock"]
    # Paragraphs shorter than the footer's lines, so the print view's sketch can tell.
    paragraphs = [" ".join(rng.choice(words) for _ in range(14)) + "." for _ in range(5)]
    printed = FINGERPRINTER.fingerprint_page(
        (
            "<html><head><title>Quay 0</title></head><body><article><h1>Quay 0</h1>"
            + "".join(f"<p>{p}</p>" for p in paragraphs)
            + "</article></body></html>"
        ).encode()
    )
    desktop = FINGERPRINTER.fingerprint_page(_desktop(paragraphs, 0))
    memory = EMPTY
    for seed in range(1, 40):  # the host's other pages, each with the footer
        other = [" ".join(rng.choice(words) for _ in range(14)) + "." for _ in range(5)]
        memory = memory.saw(learnable(FINGERPRINTER.fingerprint_page(_desktop(other, seed))))
    memory = memory.saw(learnable(printed)).saw(learnable(desktop))
    assert desktop.text == printed.text
    look = second_look(FINGERPRINTER, desktop, memory, printed.evidence.sketch)
    assert look is None or not look.distinct
    # On a host that never showed the footer, the desktop page is told apart by it.
    alone = EMPTY.saw(learnable(printed)).saw(learnable(desktop))
    look = second_look(FINGERPRINTER, desktop, alone, printed.evidence.sketch)
    assert look is not None
    assert look.distinct


def test_an_article_teased_on_its_home_and_section_pages_is_still_its_own() -> None:
    """A small host shows an article's text as the teaser of its home and section pages
    before the article comes: three pages of the host have it, and it is still the
    article's own text, not text the host shows widely."""
    main = ARTICLES[1].text.split("\n")
    # The article's own paragraph (the bio is what is read as its main text).
    own = max((line for line in ARTICLES[1].page_text.split("\n") if line not in main), key=len)
    assert "Ada Lindqvist" not in own
    listings = [
        FINGERPRINTER.fingerprint_page(
            story([own, *(f"Teaser {n} of the {name}." for n in range(4))])
        )
        for name in ("home", "section")
    ]
    memory = EMPTY
    for page in (*listings, ARTICLES[0], ARTICLES[1]):
        memory = memory.saw(learnable(page))
    look = second_look(FINGERPRINTER, ARTICLES[1], memory, ARTICLES[0].evidence.sketch)
    assert look is not None
    assert look.distinct
