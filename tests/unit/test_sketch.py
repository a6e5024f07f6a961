"""The sketch of a page's lines: what it names it names for certain.

A later page's line is called missing from the kept page only when the kept page certainly
lacks it (longer than the sketch's cutoff, hash not named), so a copy, whose lines its
original has, never brings "text of its own" through the sketch; a page's own paragraph,
longer than the original's lines, does.
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from scrapy_simhash.sketch import (
    SKETCH_LINES,
    _line_hash,
    folded,
    line_hashes,
    lines_not_in,
    lines_outside,
    make_sketch,
)
from scrapy_simhash.template import SLOTS, line_slot, page_slots

LINE = st.text(alphabet="abcdefgh XYZ", min_size=1, max_size=60).filter(lambda s: s.strip())


@given(rest=st.lists(LINE, min_size=1, max_size=30), main=st.lists(LINE, max_size=5))
def test_no_line_of_the_kept_page_is_ever_called_missing(rest: list[str], main: list[str]) -> None:
    sketch = make_sketch("\n".join(rest + main))
    page, main_text = "\n".join(rest + main), "\n".join(main)
    outside = lines_outside(page, line_hashes(page), line_hashes(main_text))
    assert lines_not_in(sketch, outside) == []


@given(rest=st.lists(LINE, min_size=1, max_size=30), extra=st.integers(1, 40))
def test_a_line_longer_than_the_kept_page_s_lines_is_called_missing(
    rest: list[str], extra: int
) -> None:
    sketch = make_sketch("\n".join(rest))
    longest = max(len(folded(line)) for line in rest)
    own = "q" * (longest + extra)
    # A 16-bit hash may name it by chance (3 in 65,535): that one is not certain.
    assume(all(_line_hash(own) != _line_hash(folded(line)) for line in rest))
    assert lines_not_in(sketch, [own]) == [own]


def test_the_sketch_names_the_longest_lines_and_cuts_off_below_them() -> None:
    rest = ["a short line", "the longest line of all of them", "a medium long line", "tiny"]
    sketch = make_sketch("\n".join(rest))
    # Lines as long as the fourth longest cannot be told: not called missing.
    assert lines_not_in(sketch, ["zzzz"]) == []
    assert lines_not_in(sketch, ["zzzzz"]) == ["zzzzz"]
    assert len(rest) > SKETCH_LINES


def test_no_sketch_tells_nothing() -> None:
    assert make_sketch("") == 0
    assert lines_not_in(0, ["anything at all, however long it is"]) == []


@given(lines=st.lists(st.text(alphabet="abAB \u3000Ｘｘ\t", max_size=12), max_size=20))
def test_a_text_s_line_hashes_are_its_non_blank_lines_folded_and_hashed(lines: list[str]) -> None:
    """Made once a page, they stand for folding and hashing each line where it is asked."""
    text = "\n".join(lines)
    non_blank = [line for line in lines if line.strip()]
    hashes = line_hashes(text)
    assert len(hashes) == len(non_blank)
    assert [h % SLOTS for h in hashes] == [line_slot(line) for line in non_blank]
    assert page_slots(text) == tuple(dict.fromkeys(line_slot(line) for line in non_blank))


@given(
    main=st.lists(st.text(alphabet="ab \u3000", max_size=6), max_size=8),
    rest=st.lists(st.text(alphabet="ab \u3000", max_size=6), max_size=8),
    joined=st.booleans(),
)
def test_the_main_text_s_line_hashes_are_those_of_its_own_lines(
    main: list[str], rest: list[str], joined: bool
) -> None:
    """Taken from the page's hashes when the page's text starts with the main text, hashed
    on their own otherwise: the same either way."""
    from scrapy_simhash.fingerprint import PageFingerprint

    text = "\n".join(main)
    page_text = "\n".join([*main, *rest]) if joined else "\n".join([*rest, *main])
    page = PageFingerprint(None, "", 0, "", text=text, page_text=page_text)
    assert page.main_line_hashes == line_hashes(text)


@given(
    page=st.lists(st.text(alphabet="abAB ﬁ\u3000x", max_size=8), max_size=25),
    main=st.integers(0, 25),
    kept=st.integers(0, 3),
)
def test_lines_outside_are_the_folded_lines_the_main_text_lacks(
    page: list[str], main: int, kept: int
) -> None:
    """Told apart by hash as by folded text, in page order, each once; ``keep`` sees each
    line's hash (its folded text's)."""
    text, main_text = "\n".join(page), "\n".join(page[:main])
    inside = {folded(line) for line in page[:main] if line.strip()}
    expected: dict[str, None] = {}
    for line in page:
        fold = folded(line)
        if line.strip() and fold and fold not in inside:
            expected.setdefault(fold, None)

    def keep(hashed: int) -> bool:
        return hashed % 4 != kept

    hashes = line_hashes(text)
    assert lines_outside(text, hashes, line_hashes(main_text)) == list(expected)
    assert lines_outside(text, hashes, line_hashes(main_text), keep) == [
        fold for fold in expected if keep(line_hashes(fold)[0])
    ]
