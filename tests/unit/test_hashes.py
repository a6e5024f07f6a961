"""The compiled counting and hashing (``scrapy_simhash/_hashes.pyx``) give the interpreted
code's results, bit for bit, on any text and any weights.

An index filled by an install with the extension must match the copies an install without
it sees: a feature counted differently, a vote rounded otherwise or a token split elsewhere
would move fingerprints and signatures between the two. The frozen corpus of
``test_fingerprint_frozen.py`` runs on both paths; here random texts reach the corners of
the character classes (ideographs at the edges of their blocks, Unicode spaces, digits
that are not decimal, underscores, combining marks) and random weights the corners of the
arithmetic.
"""

from __future__ import annotations

import math
import subprocess
import sys
import unicodedata
from array import array
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash import _hashes_interpreted, _native
from scrapy_simhash._hashes_interpreted import simhash as _simhash_interpreted
from scrapy_simhash.confirm import (
    _EXACT,
    SHINGLE_TOKENS,
    SIGNATURE_BITS,
    Evidence,
    Signer,
    _minhash,
    tokens,
)
from scrapy_simhash.features import _CJK_CHAR, _NON_CJK_WORD
from scrapy_simhash.fingerprint import _own_lines
from scrapy_simhash.simhash import simhash
from scrapy_simhash.sketch import line_hashes
from scrapy_simhash.text import compiled
from tests.scrapy_inprocess import HARBOUR, story

hashes = _native.hashes

#: Characters at the edges of the classes the tokens are cut by.
_EDGES = [
    "a", "Z", "9", "_", "-", ".", ",", "'", " ", "\t", "\n", "\r", "\x0b", "\x1c", "\x85",
    "\xa0", "\u1680", "\u2000", "\u2028", "\u3000", "\u200b", "é", "ß", "\u0301", "²", "½",
    "٣", "Ⅻ", "ｱ", "가", "あ", "😀", "\u33ff", "\u3400", "\u4dbf", "\u4dc0", "\u4e00",
    "\u9fff", "\ua000", "\uf8ff", "\uf900", "\ufaff", "\ufb00", "\U0001ffff", "\U00020000",
    "\U0002ebef", "\U0002ebf0", "新", "华", "社",
]  # fmt: skip
_TEXT = st.text(
    alphabet=st.one_of(st.sampled_from(_EDGES), st.characters(blacklist_categories=("Cs",))),
    max_size=300,
)
_KEY = st.integers(min_value=-(2**70), max_value=2**70)


def _minhash_interpreted(text: str, key: int) -> int | None:
    found = tokens(text)
    return _hashes_interpreted.minhash(found, key) & ~_EXACT if found else None


def test_the_interpreted_hashing_has_the_signatures_shape() -> None:
    """It keeps its own copy of the shape, not importing confirm (which imports it)."""
    assert _hashes_interpreted.BINS == SIGNATURE_BITS
    assert _hashes_interpreted.SHINGLE_TOKENS == SHINGLE_TOKENS


def test_the_hashing_is_built_on_this_machine() -> None:
    """The test machines have a C compiler: an install there that did not build the
    hashing would pass every comparison below by skipping it."""
    assert hashes is not None, _native.HASHES_MISSING
    assert compiled.AVAILABLE


def _folded(text: str) -> str:
    """``features.normalize`` as the interpreted code does it."""
    return unicodedata.normalize("NFKC", text).casefold()


#: Characters a fold folds alone, beside what normalisation joins them to or splits them
#: into: combining marks, Hangul jamo, ß, ligatures, full-width forms and their edges.
_FOLD_EDGES = [
    *_EDGES, "A", "\x00", "\x7f", "\xc0", "\xd6", "\xd7", "\xde", "\xdf", "\xe0", "\xf7",
    "\xff", "\xb5", "\u0130", "\u0308", "\u0327", "\u0345", "\u0344", "\u1100", "\u1161",
    "\u11a8", "\uac00", "\u3099", "\u309b", "\u304b", "\uff00", "\uff01", "\uff21", "\uff3a",
    "\uff5e", "\uff5f", "\ufb01", "\u2026", "\u2013", "\u2018", "\u201d", "\u3001", "\u3007",
    "\u3008", "\u3011", "\u3012", "\u212b", "\u0f73",
]  # fmt: skip


def test_no_whitespace_lies_above_the_ideographic_space() -> None:
    """The compiled tokens and lines take every character above U+3000 for a letter or
    a sign without asking unicodedata: a Unicode version with a space up there must stop
    the tests."""
    assert [hex(code) for code in range(0x3001, 0x110000) if chr(code).isspace()] == []


def test_every_character_alone_is_folded_as_unicodedata_folds_it() -> None:
    assert hashes is not None
    wrong = [
        hex(code)
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF and hashes.fold(chr(code)) != _folded(chr(code))
    ]
    assert wrong == []


def test_every_pair_that_composes_is_folded_as_unicodedata_folds_it() -> None:
    """A character folded where it stands must never be one that normalisation joins to
    the character before it: each pair with a canonical composition (and Hangul's, which
    are computed) folds as a whole."""
    assert hashes is not None
    pairs = ["\u1100\u1161", "\uac00\u11a8", "\u1100\u1161\u11a8"]
    for code in range(0x110000):
        decomposition = unicodedata.decomposition(chr(code)).split()
        if len(decomposition) == 2 and not decomposition[0].startswith("<"):
            pairs.append("".join(chr(int(part, 16)) for part in decomposition))
    assert len(pairs) > 900
    wrong = [pair for pair in pairs if hashes.fold(pair) != _folded(pair)]
    assert wrong == []
    # And with what is folded alone around them, inside and at the ends of runs.
    wrong = [pair for pair in pairs if hashes.fold(f"ab{pair}x" * 3) != _folded(f"ab{pair}x" * 3)]
    assert wrong == []


@settings(max_examples=600, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.sampled_from(_FOLD_EDGES), st.characters(blacklist_categories=("Cs",))
        ),
        max_size=200,
    )
)
def test_a_text_is_folded_as_unicodedata_folds_it(text: str) -> None:
    assert hashes is not None
    assert hashes.fold(text) == _folded(text)


def test_long_runs_of_other_scripts_are_folded_as_unicodedata_folds_them() -> None:
    assert hashes is not None
    text = "Привет, мир: ﬁne ½ Å\u0301 " * 50 + "新华社电，ＡＢＣ　" * 50 + "e\u0301" * 9
    assert hashes.fold(text) == _folded(text)


@settings(max_examples=600, deadline=None)
@given(
    st.text(alphabet="ab \t\n\r\u3000\xa0\x85X新", max_size=60),
    st.text(alphabet="ab \u3000X新", max_size=12),
)
def test_the_own_lines_are_the_interpreted_ones(text: str, title: str) -> None:
    """Lines made of the title's words, in other spacing, blank and not."""
    assert hashes is not None
    folded = _folded(text)
    expected = "\n".join(_own_lines(text, title, folded, fold=True))
    assert hashes.own_lines(folded, " ".join(_folded(title).split())) == expected


@settings(max_examples=600, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.sampled_from([*_FOLD_EDGES, "\n", "\n", "\n"]),
            st.characters(blacklist_categories=("Cs",)),
        ),
        max_size=200,
    )
)
def test_the_line_hashes_are_the_interpreted_ones(text: str) -> None:
    """Blank lines, lines that fold longer or shorter, every width of UTF-8."""
    assert hashes is not None
    folded = _folded(text)
    packed = hashes.line_hashes(text, folded)
    assert packed is not NotImplemented
    found = array("Q")
    found.frombytes(packed)
    with compiled.interpreted():
        expected = line_hashes(text)
    assert list(found) == list(expected)


def test_a_line_without_utf8_is_given_back_to_the_interpreted_code() -> None:
    assert hashes is not None
    assert hashes.line_hashes("a\nb\ud800", "a\nb\ud800") is NotImplemented
    assert hashes.line_hashes("a\n \ud800", "a\n \ud800") is NotImplemented


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_words_and_ideographs_are_counted_as_the_regular_expressions_count_them(
    text: str,
) -> None:
    assert hashes is not None
    chars, words = hashes.count_tokens(text)
    assert list(chars.items()) == list(Counter(_CJK_CHAR.findall(text)).items())
    assert list(words.items()) == list(Counter(_NON_CJK_WORD.findall(text)).items())


@pytest.mark.parametrize("astral", ["", "😀"])
def test_thousands_of_distinct_words_and_ideographs_are_counted_in_order(astral: str) -> None:
    """More distinct tokens than the counting's first table holds, in texts of each width."""
    assert hashes is not None
    words = [f"w{i}{astral}" for i in range(3000)]
    ideographs = [chr(0x4E00 + i) for i in range(2000)]
    text = " ".join(words[i % 3000] + ideographs[i % 2000] for i in range(9000))
    chars, counted = hashes.count_tokens(text)
    assert list(chars.items()) == list(Counter(_CJK_CHAR.findall(text)).items())
    assert list(counted.items()) == list(Counter(_NON_CJK_WORD.findall(text)).items())
    assert len(chars) == 2000
    assert len(counted) == 3000


@settings(max_examples=400, deadline=None)
@given(_TEXT, _KEY)
def test_the_minhash_is_the_interpreted_one(text: str, key: int) -> None:
    """On texts with and without ideographs (which cut tokens differently), of none, one,
    two and many tokens (fewer than a shingle are hashed alone)."""
    assert hashes is not None
    expected = _minhash_interpreted(text, key & (2**64 - 1))
    assert hashes.minhash(text, key & (2**64 - 1)) == expected
    assert (expected is None) == (not tokens(text))


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 500])
def test_the_minhash_of_few_and_many_tokens(count: int) -> None:
    assert hashes is not None
    text = " ".join(f"w{i}" for i in range(count))
    assert hashes.minhash(text, 12345) == _minhash_interpreted(text, 12345)


def test_a_text_without_utf8_is_given_back_to_the_interpreted_code() -> None:
    """A lone surrogate has no UTF-8: the compiled MinHash declines, and a signature is
    what the interpreted code makes of it (here: it cannot encode the token either)."""
    assert hashes is not None
    assert hashes.minhash("a \ud800 b", 1) is NotImplemented
    with pytest.raises(UnicodeEncodeError):
        _minhash("a \ud800 b", 1)
    assert hashes.minhash("新 \ud800 华", 1) is NotImplemented
    assert _minhash("新 \ud800 华", 1) == _minhash_interpreted("新 \ud800 华", 1)


_WEIGHT = st.one_of(
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from([0.0, 0.5 / 1024, 1.5 / 1024, 2.5 / 1024, 2.0**45, 2.0**60]),
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.one_of(_TEXT, st.sampled_from(_EDGES)), _WEIGHT, max_size=60),
    st.sampled_from([64, 128]),
    _KEY,
)
def test_simhash_is_the_interpreted_one(features: dict[str, float], bits: int, seed: int) -> None:
    """Half-way weights round to even on both paths; weights whose sums would be inexact
    (or that are not finite) are left to the interpreted code, which then answers."""
    seed &= 2**64 - 1
    assert hashes is not None
    found = hashes.simhash(features, bits, seed)
    expected = _simhash_interpreted(features, bits, seed)
    scaled = [value * 1024 for value in features.values()]
    if found is NotImplemented:  # declined only where the sums could be inexact
        assert not all(map(math.isfinite, scaled)) or math.fsum(map(abs, scaled)) >= 2**51
    else:
        assert found == expected
    assert simhash(features, bits, seed) == expected


def test_a_signature_is_the_same_on_both_paths() -> None:
    evidence = Evidence("the council met on tuesday and the budget passed 新华社北京电")
    short = Evidence("read more", "title", exact=True, page="Read more\nHome About")
    signer = Signer(2**63 + 5)
    fast = [signer.sign(evidence), signer.sign(short), signer.sign(Evidence("", "t"))]
    with compiled.interpreted():
        assert _native.hashes is None
        slow = [signer.sign(evidence), signer.sign(short), signer.sign(Evidence("", "t"))]
    assert _native.hashes is hashes
    assert fast == slow


def test_a_worker_on_the_compiled_path_never_loads_numpy() -> None:
    """numpy (and its BLAS threads) cost a fingerprint worker 0.1 s of CPU and 12 MB at
    start-up; on the compiled path nothing it runs needs it."""
    code = (
        "import sys\n"
        "from scrapy_simhash.fingerprint import FingerprintConfig\n"
        "from scrapy_simhash.glue.workers import _fingerprint_in_worker, _init_worker\n"
        "_init_worker(FingerprintConfig(), 3600)\n"
        "page, _ = _fingerprint_in_worker(sys.stdin.buffer.read(), None, 12345)\n"
        "print(page.fingerprint is not None, 'numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=story(HARBOUR), capture_output=True, check=True
    )
    assert done.stdout.decode().split() == ["True", "False"]


_COUNTERS = st.lists(st.integers(0, 0xFFFF), min_size=0, max_size=2048)


@settings(max_examples=300)
@given(
    _COUNTERS,
    st.one_of(st.floats(-1.0, 70000.0, allow_nan=False), st.integers(0, 0xFFFF).map(float)),
)
def test_the_template_counters_are_scanned_alike_on_both_paths(
    values: list[int], least: float
) -> None:
    assert hashes is not None
    counts = array("H", values)
    assert hashes.counter_total(counts) == _hashes_interpreted.counter_total(counts) == sum(values)
    found = hashes.counters_at_least(counts, least)
    assert found == _hashes_interpreted.counters_at_least(counts, least)
    assert found == [i for i, value in enumerate(values) if value >= least]


def test_the_template_memory_on_the_compiled_path_never_loads_numpy() -> None:
    """The crawl process reads its hosts' templates (numpy: 0.25 s of CPU at start, its
    objects scanned by every full garbage collection, BLAS threads)."""
    code = (
        "import sys\n"
        "import scrapy_simhash.glue.addon\n"
        "from scrapy_simhash.template import HostMemory\n"
        "memory = HostMemory()\n"
        "for page in range(30):\n"
        "    memory = memory.learned([1, 2, page]).saw([1, 2, page])\n"
        "print(sorted(memory.template()), memory.widely_seen() > 0, 'numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stdout.decode().split() == ["[1,", "2]", "True", "False"]
