"""Every drop confirmed: hand-written pages through both tests of the crawl's decision.

The fingerprint finds candidates; a candidate is a copy only when the keyed signature of
the two own texts confirms it. These pages are the cases the second test exists for: the
same words in other sentences, a page crafted onto another's fingerprint, short briefs.
"""

from __future__ import annotations

import random
import string
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.confirm import (
    CONFIRM_DISTANCE,
    Evidence,
    Signer,
    Signing,
    confirms,
    pass_probability,
    resemblance,
    score,
)
from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint
from scrapy_simhash.index import open_index
from scrapy_simhash.index.defaults import default_distances

WORDS = [
    "".join(random.Random(n).choices(string.ascii_lowercase, k=random.Random(-n).randint(4, 9)))
    for n in range(600)
]


def article(seed: int, words: int = 400, vocabulary: list[str] = WORDS) -> list[str]:
    """Sentences of 12 words drawn from ``vocabulary``."""
    rng = random.Random(seed)
    text = [rng.choice(vocabulary) for _ in range(words)]
    return [" ".join(text[i : i + 12]) + "." for i in range(0, words, 12)]


def html(lines: list[str], title: str = "The Courier") -> bytes:
    body = "".join(f"<p>{line}</p>" for line in lines)
    return f"<html><head><title>{title}</title></head><body><article>{body}</article></body></html>".encode()


class Crawl:
    """Pages judged in order as the crawl's observe judges them: both tests, one index."""

    def __init__(self, radius: int | None = None, url: str = "memory://", **options: Any) -> None:
        self.fingerprinter = Fingerprinter()
        k, exact = default_distances(64)
        radius = k if radius is None else radius
        options.setdefault("new_key", lambda: 0x5EED)  # one draw of the test, every run
        self.index = open_index(
            url,
            max_distance=radius,
            exact_distance=min(exact, radius),
            scheme=self.fingerprinter.scheme,
            **options,
        )

    def read(self, body: bytes) -> PageFingerprint:
        return self.fingerprinter.fingerprint_page(body)

    def fetch(self, url: str, body: bytes) -> str | None:
        """The URL ``url`` was dropped as a copy of, None when it is kept."""
        page = self.read(body)
        assert page.fingerprint is not None
        signature = Signer(self.index.confirm_key).sign(page.evidence)
        match = self.index.observe(url, page.fingerprint, signature).match
        return None if match is None else match.key


@pytest.mark.parametrize("radius", [0, 4, 8, 12, 20, 31])
def test_the_same_words_in_other_sentences_are_never_a_copy_at_any_radius(radius: int) -> None:
    """Two articles of one word list: every word as often in each, so their fingerprints
    are the same; no sentence is shared, so their signatures are not."""
    one = article(1)
    words = " ".join(one).replace(".", "").split()
    random.Random(2).shuffle(words)
    other = [" ".join(words[i : i + 12]) + "." for i in range(0, len(words), 12)]
    crawl = Crawl(radius)
    assert crawl.read(html(one)).fingerprint == crawl.read(html(other)).fingerprint
    assert crawl.fetch("https://a.example/one", html(one)) is None
    assert crawl.fetch("https://a.example/other", html(other)) is None


def test_same_topic_articles_sharing_most_words_are_kept_at_a_stress_radius() -> None:
    """Articles on one subject: a small shared vocabulary, different sentences."""
    topic = WORDS[:60]
    crawl = Crawl(12)
    kept = [crawl.fetch(f"https://a.example/{n}", html(article(n, 300, topic))) for n in range(20)]
    assert kept == [None] * 20


def test_a_print_view_with_a_footer_line_is_a_copy() -> None:
    story = article(3)
    printed = [*story, "Printed from The Courier on 8 March 2026 at 10:31, page 1 of 1."]
    crawl = Crawl()
    assert crawl.fetch("https://a.example/story", html(story)) is None
    assert crawl.fetch("https://a.example/print/story", html(printed)) == "https://a.example/story"


def test_an_exact_copy_of_a_short_brief_is_a_copy_and_other_briefs_are_not() -> None:
    banner = "Subscribe to our morning briefing."
    brief = ["Bridge closed on Sunday for repairs.", banner]
    crawl = Crawl()
    first = crawl.read(html(brief, "Bridge closed"))
    assert first.exact
    assert crawl.fetch("https://a.example/brief", html(brief, "Bridge closed")) is None
    assert crawl.fetch("https://a.example/amp/brief", html(brief, "Bridge closed")) == (
        "https://a.example/brief"
    )
    # The same banner under another title, or another brief: distinct pages.
    assert crawl.fetch("https://a.example/ferry", html(brief, "Ferry resumes")) is None
    other = ["Ferry resumes on Monday after repairs.", banner]
    assert crawl.fetch("https://a.example/ferry2", html(other, "Bridge closed")) is None


def listing(headline: str, items: list[str]) -> bytes:
    """A listing page: one featured headline read as its text, the list in link rows."""
    links = "".join(f'<li><a href="/a/{n}">{item}</a></li>' for n, item in enumerate(items))
    return (
        f"<html><head><title>News</title></head><body><nav><ul>{links}</ul></nav>"
        f"<div class='featured'><p>{headline}</p></div></body></html>"
    ).encode()


def test_short_pages_reading_alike_but_different_as_whole_pages_are_not_copies() -> None:
    """Two pages of a listing show one featured headline (all the extractor reads) under
    one title: the same digest, yet different pages. A copy reads alike as a whole."""
    headline = "Council approves the new tram line to the harbour."
    items = [" ".join(article(n, 8)) for n in range(30)]
    first, second = listing(headline, items[:15]), listing(headline, items[15:])
    crawl = Crawl()
    assert crawl.read(first).exact
    assert crawl.read(first).fingerprint == crawl.read(second).fingerprint
    assert crawl.fetch("https://a.example/news?page=1", first) is None
    assert crawl.fetch("https://a.example/news?page=2", second) is None
    again = listing(headline, [*items[:15], "Updated 10:31"])
    assert crawl.fetch("https://a.example/news?page=1&utm_source=feed", again) == (
        "https://a.example/news?page=1"
    )


def test_a_short_page_is_never_a_copy_of_a_long_one() -> None:
    crawl = Crawl(31)
    story = article(4)
    assert crawl.fetch("https://a.example/long", html(story)) is None
    short = crawl.read(html(story[:1]))
    assert short.exact
    index = crawl.index
    signature = Signer(index.confirm_key).sign(short.evidence)
    long_signature = index.entry("https://a.example/long")[1]
    assert not confirms(signature, long_signature)


def crafted_onto(fingerprinter: Fingerprinter, target: int, avoid: set[str]) -> str:
    """A text of random words none of which ``avoid`` holds, whose fingerprint is
    ``target``: words whose public hashes agree with the target on most bits, added until
    the weighted vote gives every bit (what an outsider can do with the public seed)."""
    rng = random.Random(target)
    chosen: list[str] = []
    for _ in range(200_000):
        word = "".join(rng.choices(string.ascii_lowercase, k=8))
        if word in avoid:
            continue
        hashed = fingerprinter.fingerprint_features({word: 1.0})
        assert hashed is not None
        if 64 - (hashed ^ target).bit_count() >= 42:
            chosen.append(word)
            if len(chosen) % 50 == 0:
                text = "\n".join(" ".join(chosen[i : i + 12]) for i in range(0, len(chosen), 12))
                if fingerprinter.fingerprint_document(text).fingerprint == target:
                    return text
    raise AssertionError("no crafted text found")


def test_a_page_crafted_onto_a_fingerprint_never_makes_its_victim_a_copy() -> None:
    crawl = Crawl(31)
    victim = html(article(5))
    page = crawl.read(victim)
    assert page.fingerprint is not None
    text = crafted_onto(crawl.fingerprinter, page.fingerprint, set(page.own.split()))
    crafted = html(text.split("\n"))
    assert crawl.read(crafted).fingerprint == page.fingerprint
    assert crawl.fetch("https://outsider.example/bait", crafted) is None
    assert crawl.fetch("https://a.example/victim", victim) is None


@pytest.mark.redis
def test_a_crafted_page_fails_across_two_processes_sharing_redis(redis_url: str) -> None:
    """Two crawl processes on one Redis namespace share its key: the bait filed by one
    never makes the other drop the victim."""
    url = redis_url
    first, second = Crawl(31, url), Crawl(31, url)
    assert first.index.confirm_key == second.index.confirm_key
    victim = html(article(6))
    page = first.read(victim)
    assert page.fingerprint is not None
    text = crafted_onto(first.fingerprinter, page.fingerprint, set(page.own.split()))
    assert first.fetch("https://outsider.example/bait", html(text.split("\n"))) is None
    assert second.fetch("https://a.example/victim", victim) is None
    first.index.close()
    second.index.close()


def edited(words: list[str], share: float, rng: random.Random) -> list[str]:
    """``words`` with ``share`` of them replaced by words from elsewhere."""
    out = list(words)
    for position in rng.sample(range(len(out)), int(len(out) * share)):
        out[position] = rng.choice(WORDS)
    return out


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10**6),
    words=st.integers(300, 1500),
    share=st.floats(0.0, 0.03),
    key=st.integers(0, 2**64 - 1),
)
def test_a_copy_with_at_most_3_percent_of_its_words_changed_is_confirmed(
    seed: int, words: int, share: float, key: int
) -> None:
    rng = random.Random(seed)
    text = [rng.choice(WORDS) for _ in range(words)]
    copy = edited(text, share, rng)
    signer = Signer(key)
    a = signer.sign(Evidence(" ".join(text)))
    b = signer.sign(Evidence(" ".join(copy)))
    assert confirms(a, b), score(a, b)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300), st.integers(0, 2**64 - 1))
def test_signatures_are_symmetric_and_marked_by_kind(a: str, b: str, key: int) -> None:
    signer = Signer(key)
    near_a, near_b = signer.sign(Evidence(a)), signer.sign(Evidence(b))
    assert confirms(near_a, near_b) == confirms(near_b, near_a)
    assert confirms(near_a, near_a)
    exact = signer.sign(Evidence(a, "t", exact=True))
    assert exact & 1
    assert confirms(exact, exact)
    assert not confirms(exact, near_a)


def test_the_estimator_states_the_chance_a_pair_passes() -> None:
    assert pass_probability(1.0) == pytest.approx(1.0)
    assert pass_probability(0.0) < 1e-14
    assert pass_probability(0.5) < pass_probability(0.7) < pass_probability(0.9)
    assert resemblance(0) == 1.0
    assert resemblance(63) == pytest.approx(1.0 - 126 / 127)
    # The threshold's stated chance for an unrelated pair is what the estimator gives.
    assert pass_probability(0.0, CONFIRM_DISTANCE) < 1e-15


READER = Fingerprinter()


@settings(max_examples=30, deadline=None)
@given(
    key=st.integers(min_value=1, max_value=2**64 - 1),
    other=st.integers(min_value=1, max_value=2**64 - 1),
)
def test_a_page_signed_where_it_was_read_is_signed_again_only_under_another_key(
    key: int, other: int
) -> None:
    """A fingerprint worker signs a page under the key its crawl's index held then; the
    crawl process uses that signature while the key holds, and signs anew once it changed
    (a namespace created anew mid-crawl)."""
    page = READER.fingerprint_page(html(article(7)))
    plain = page.evidence
    page.sign(key)
    assert page.evidence == plain  # the same evidence, now carrying its signature
    assert page.evidence.signed == (key, Signer(key).sign(plain))
    # The signature it came with is the one used (a stand-in proves it is not remade).
    stand_in = replace(page.evidence, signed=(key, 12345))
    assert Signing(stand_in).under(key) == 12345
    signing = Signing(page.evidence)
    assert signing.signed == Signer(key).sign(plain)
    if other != key:
        assert signing.under(other) == Signer(other).sign(plain)
        assert signing.signed == Signer(other).sign(plain)
