"""Pages built to hurt: deep nesting, huge text nodes, unique long class names, and one
unpunctuated CJK run of megabytes. None may turn distinct pages into copies, and none may
make the work or memory of one page grow without bound (asserted with counters, not timers).
"""

from __future__ import annotations

import random
import re
import string

import pytest

from scrapy_simhash import extract_main_text, features
from scrapy_simhash.features import get_tokenizer
from scrapy_simhash.fingerprint import MAX_FEATURE_CHARS, FingerprintConfig, Fingerprinter
from scrapy_simhash.text import rules

_VOCABULARY = [
    "".join(random.Random(i).choices(string.ascii_lowercase, k=3 + i % 7)) for i in range(3000)
]


def _story(n: int, depth: int, tag: str = "<div class='row'>") -> bytes:
    """The issue's repro: a shared intro, ``depth`` unclosed wrappers, then story ``n``."""
    rng = random.Random(n)
    paragraphs = "".join(
        "<p>" + " ".join(rng.choice(_VOCABULARY) for _ in range(60)) + ".</p>" for _ in range(8)
    )
    return (
        "<html><head><title>The Daily</title></head><body>"
        "<p>Welcome to the shared introduction of our site; read on.</p>"
        f"{tag * depth}<h1>Story {n}</h1>{paragraphs}</body></html>"
    ).encode()


@pytest.fixture(scope="module")
def fingerprinter() -> Fingerprinter:
    return Fingerprinter(FingerprintConfig(tokenizer="rjieba"))


@pytest.mark.parametrize("depth", [260, 1000, 3000])
def test_deeply_nested_stories_stay_distinct(fingerprinter: Fingerprinter, depth: int) -> None:
    one = fingerprinter.fingerprint_page(_story(1, depth))
    two = fingerprinter.fingerprint_page(_story(2, depth))
    shallow = fingerprinter.fingerprint_page(_story(1, 5))
    assert one.fingerprint is not None
    assert two.fingerprint is not None
    assert (one.fingerprint ^ two.fingerprint).bit_count() > 10
    # The story's own text is read at any depth, like the same story nested 5 deep.
    assert (one.fingerprint ^ shallow.fingerprint).bit_count() <= 3


def test_deep_nesting_no_wrapper_explains_is_read_whole(fingerprinter: Fingerprinter) -> None:
    # <q> is no wrapper tag; 3000 nested of them are parsed and the story under them read.
    deep = fingerprinter.fingerprint_page(_story(1, 3000, tag="<q>"))
    shallow = fingerprinter.fingerprint_page(_story(1, 5, tag="<q>"))
    assert deep.fingerprint is not None
    assert shallow.fingerprint is not None
    assert (deep.fingerprint ^ shallow.fingerprint).bit_count() <= 3
    assert deep.notes == shallow.notes


def test_a_page_too_costly_to_parse_even_without_wrappers_is_not_read_and_says_why(
    fingerprinter: Fingerprinter,
) -> None:
    # 40,000 nested <q>s: each tag would look through all the open ones before it.
    page = fingerprinter.fingerprint_page(_story(1, 40_000, tag="<q>"))
    assert page.fingerprint is None
    assert any(
        "would look through more than 20000000 open elements: the page is not read" in note
        for note in page.notes
    )


# Pages an HTML5 parse spends time or memory on out of all proportion to their size, each
# with the story after it: blocks that each look through 2,000 open <div>s, unclosed <b>s
# of distinct ids that every new paragraph opens again (1.1 million elements for 1,500),
# and one menu of 20,000 options that each new option is compared with.
_COSTLY = {
    "looked through": "<div>" * 2000 + "<li>" * 20_000 + "</div>" * 2000,
    "opened again": "".join(f"<b id=b{n}> <p>" for n in range(1500)) + "</b>" * 1500,
    "compared": "<select>" + "<option>x" * 20_000 + "</select>",
}


@pytest.mark.parametrize("name", sorted(_COSTLY))
def test_a_page_built_to_make_its_parse_costly_is_read_without_its_wrappers(
    fingerprinter: Fingerprinter, name: str
) -> None:
    costly = fingerprinter.fingerprint_page(_story(1, 1, tag=_COSTLY[name]))
    plain = fingerprinter.fingerprint_page(_story(1, 5))
    assert costly.fingerprint is not None
    assert plain.fingerprint is not None
    assert (costly.fingerprint ^ plain.fingerprint).bit_count() <= 3  # the story is read
    assert any("read without its wrapper tags and menus" in note for note in costly.notes)
    assert not any("read without" in note for note in plain.notes)


def test_a_text_node_over_10_mb_is_read() -> None:
    words = " ".join(_VOCABULARY[:400]) + ". "
    text = words * (11_000_000 // len(words) + 1)
    main = extract_main_text(f"<html><body><p>{text}</p></body></html>".encode())
    assert len(main.text) > 10_000_000


def _class_name(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase + "-", k=rng.randint(50, 3000)))


def test_role_caches_are_bounded_by_size() -> None:
    rng = random.Random(3)
    body = " ".join(_VOCABULARY[:200])
    for _ in range(300):
        parts = "".join(
            f'<div class="{_class_name(rng)} {_class_name(rng)[:200]}" id="{_class_name(rng)}">'
            f"<p>{body}</p></div>"
            for _ in range(20)
        )
        extract_main_text(f"<html><body>{parts}</body></html>".encode())
        for cache in (rules._ROLES, rules._TOKEN_ROLES):
            held = sum(map(len, cache))
            assert held <= rules._MAX_CACHED_CHARS
            assert all(len(key) <= rules._MAX_CACHED_KEY for key in cache)


def test_text_handed_to_the_tokenizer_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(tokenizer="rjieba", cjk_features="words"))
    tokenizer = get_tokenizer("rjieba", False)  # the instance the fingerprinter uses
    calls: list[str] = []
    real_cut = tokenizer.cut

    def counting_cut(text: str) -> list[str]:
        calls.append(text)
        return real_cut(text)

    monkeypatch.setattr(tokenizer, "cut", counting_cut)
    rng = random.Random(5)
    ideographs = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    run = "".join(rng.choices(ideographs, k=1_000_000))  # ~3 MB of CJK, no punctuation
    page = fingerprinter.fingerprint_page(f"<html><body><p>{run}</p></body></html>".encode())
    assert page.fingerprint is not None
    assert any("first 300000 characters" in note for note in page.notes)
    handed = "".join(calls)
    assert len(handed) <= MAX_FEATURE_CHARS + MAX_FEATURE_CHARS // features.MAX_RUN_CHARS + 1
    longest = max(len(piece) for piece in re.findall(r"[\u4e00-\u9fff]+", handed))
    assert longest <= features.MAX_RUN_CHARS
