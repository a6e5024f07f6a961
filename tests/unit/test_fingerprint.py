"""SimHash fingerprints: exactness, stability, widths, thresholds, schemes."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.features import effective_length, normalize
from scrapy_simhash.fingerprint import (
    FingerprintConfig,
    Fingerprinter,
    from_hex,
    hamming,
    own_text,
    similarity,
    to_hex,
)
from scrapy_simhash.settings import fingerprint_config

FP64 = st.integers(min_value=0, max_value=2**64 - 1)
FEATURES = st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.floats(min_value=0.01, max_value=1000, allow_nan=False),
    min_size=1,
    max_size=40,
)
VOCABULARY = [f"word{n}" for n in range(3000)]


def article(seed: int, words: int = 400) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCABULARY) for _ in range(words))


def edit(text: str, share: float, seed: int) -> str:
    """Replace ``share`` of the words with words from outside the vocabulary."""
    rng = random.Random(seed)
    words = text.split()
    for index in rng.sample(range(len(words)), int(len(words) * share)):
        words[index] = f"edit{rng.randrange(10**6)}"
    return " ".join(words)


@pytest.fixture(scope="module")
def fingerprinter() -> Fingerprinter:
    return Fingerprinter()


@given(FP64, FP64, FP64)
@settings(max_examples=200)
def test_hamming_is_a_metric(a: int, b: int, c: int) -> None:
    assert hamming(a, a) == 0
    assert hamming(a, b) == hamming(b, a)
    assert (hamming(a, b) == 0) == (a == b)
    assert hamming(a, c) <= hamming(a, b) + hamming(b, c)
    assert 0.0 <= similarity(a, b) <= 1.0
    assert similarity(a, b) == 1 - hamming(a, b) / 64


@given(st.integers(min_value=0, max_value=2**128 - 1))
@settings(max_examples=100)
def test_hex_round_trips_at_fixed_width(value: int) -> None:
    text = to_hex(value, 128)
    assert len(text) == 32
    assert text == text.lower()
    assert from_hex(text) == value
    if value < 2**64:
        assert len(to_hex(value)) == 16
        assert from_hex(to_hex(value)) == value


@pytest.mark.parametrize("bad", ["", "xyz", "-1", "1_0", "0" * 33, " "])
def test_from_hex_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError, match="fingerprint"):
        from_hex(bad)


def test_to_hex_rejects_values_wider_than_bits() -> None:
    with pytest.raises(ValueError, match="64 bits"):
        to_hex(2**64, 64)


def reference_simhash(features: dict[str, float], bits: int, seed: int = 0) -> int:
    """The textbook per-bit loop the vectorised code must agree with."""
    digest = xxhash.xxh3_64_intdigest if bits == 64 else xxhash.xxh3_128_intdigest
    totals = [0] * bits
    for name, weight in features.items():
        value = digest(name.encode(), seed)
        quantised = round(weight * 1024)
        for bit in range(bits):
            totals[bit] += quantised if value >> bit & 1 else -quantised
    return sum(1 << bit for bit in range(bits) if totals[bit] > 0)


@given(FEATURES, st.sampled_from([64, 128]))
@settings(max_examples=60, deadline=None)
def test_vectorised_simhash_matches_the_per_bit_definition(
    features: dict[str, float], bits: int
) -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(bits=bits))
    assert fingerprinter.fingerprint_features(features) == reference_simhash(features, bits)


@given(FEATURES, st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_fingerprint_does_not_depend_on_feature_order(
    features: dict[str, float], rng: random.Random
) -> None:
    items = list(features.items())
    rng.shuffle(items)
    fingerprinter = Fingerprinter()
    assert fingerprinter.fingerprint_features(dict(items)) == fingerprinter.fingerprint_features(
        features
    )


def test_no_features_means_no_fingerprint(fingerprinter: Fingerprinter) -> None:
    assert fingerprinter.fingerprint_features({}) is None
    assert fingerprinter.fingerprint_features({"a": 0.0}) is None


def test_seed_changes_fingerprints() -> None:
    features = {"alpha": 1.0, "beta": 2.0, "gamma": 3.0}
    a = Fingerprinter(FingerprintConfig(seed=0)).fingerprint_features(features)
    b = Fingerprinter(FingerprintConfig(seed=7)).fingerprint_features(features)
    assert a != b


def test_widths(fingerprinter: Fingerprinter) -> None:
    wide = Fingerprinter(FingerprintConfig(bits=128))
    narrow_fps = [fingerprinter.fingerprint_text(article(n)) for n in range(8)]
    wide_fps = [wide.fingerprint_text(article(n)) for n in range(8)]
    assert all(fp is not None and 0 <= fp < 2**64 for fp in narrow_fps)
    assert all(fp is not None and fp < 2**128 for fp in wide_fps)
    assert any(fp is not None and fp >= 2**64 for fp in wide_fps)
    assert wide.bits == 128
    assert fingerprinter.bits == 64


def test_small_edits_stay_close_and_other_texts_are_far(fingerprinter: Fingerprinter) -> None:
    base = article(1)
    fp = fingerprinter.fingerprint_text(base)
    assert fp is not None
    near = [fingerprinter.fingerprint_text(edit(base, 0.01, s)) for s in range(5)]
    far = [fingerprinter.fingerprint_text(article(100 + s)) for s in range(5)]
    assert max(hamming(fp, other) for other in near if other is not None) <= 3
    assert min(hamming(fp, other) for other in far if other is not None) > 10


def test_timestamps_and_counters_do_not_move_fingerprints(
    fingerprinter: Fingerprinter,
) -> None:
    base = article(2)
    one = fingerprinter.fingerprint_text(f"Updated 2024-05-01 12:30. {base} 1,234 views")
    two = fingerprinter.fingerprint_text(f"Updated 2025-11-30 08:05. {base} 98,001 views")
    assert one is not None
    assert one == two


def test_title_takes_part_only_when_weighted(fingerprinter: Fingerprinter) -> None:
    text = article(3, words=120)
    assert fingerprinter.fingerprint_text(text, "alpha beta gamma") == (
        fingerprinter.fingerprint_text(text, "delta epsilon")
    )
    titled = Fingerprinter(FingerprintConfig(title_weight=2.0))
    assert titled.fingerprint_text(text, "alpha beta gamma") != (
        titled.fingerprint_text(text, "delta epsilon")
    )


def test_lines_repeating_the_title_are_not_own_text(fingerprinter: Fingerprinter) -> None:
    title = "Council approves the new transport plan for the whole city centre"
    body = "Short brief about buses and trams on the river road, with new stops by the harbour."
    assert fingerprinter.too_short(f"{title}\n{body}\n{title}", title) is not None
    assert fingerprinter.too_short(f"{title}\n{body}\n{title}", "") is None


@pytest.mark.parametrize(
    "text",
    ["", "   \n\t", "Sign in to continue", "登录后查看全文", "word " * 15],
)
def test_too_little_text_has_no_near_fingerprint_and_a_reason(
    fingerprinter: Fingerprinter, text: str
) -> None:
    """Short own text gets an exact digest (only an exact copy matches it); none gets
    nothing."""
    page = fingerprinter.fingerprint_document(text, "A title")
    assert page.reason
    if text.strip():
        assert page.exact
        assert page.fingerprint is not None
        assert page.reason.endswith("exact copies only")
        again = fingerprinter.fingerprint_document(f"  {text}\n", "A  title")
        assert again.fingerprint == page.fingerprint  # normalised: whitespace, case
        assert fingerprinter.fingerprint_document(text + " x", "A title").fingerprint != (
            page.fingerprint
        )
        assert fingerprinter.fingerprint_document(text, "Other title").fingerprint != (
            page.fingerprint
        )
    else:
        assert page.fingerprint is None
        assert not page.exact


def test_cjk_text_counts_each_ideograph_as_several_characters(
    fingerprinter: Fingerprinter,
) -> None:
    chinese = "北京市政府今天发布了新的城市交通规划方案，计划在未来五年内新建地铁线路和公交专用道。"
    latin = "x" * len(chinese)
    assert len(chinese) < fingerprinter.config.min_text_chars
    assert not fingerprinter.fingerprint_document(chinese * 2).exact
    assert fingerprinter.fingerprint_document(" ".join([latin] * 2)).exact


def test_stop_words_only_has_a_reason(fingerprinter: Fingerprinter) -> None:
    page = fingerprinter.fingerprint_document("the and of to in 2024 " * 60, "A real title")
    assert page.fingerprint is None
    assert page.reason is not None
    assert "stop words" in page.reason


def test_fingerprints_are_stable_across_processes(fingerprinter: Fingerprinter) -> None:
    texts = [article(4), "北京市政府今天发布了新的城市交通规划方案，计划新建地铁线路。" * 5]
    code = (
        "import json, sys\n"
        "from scrapy_simhash.fingerprint import Fingerprinter, FingerprintConfig, to_hex\n"
        "texts = json.load(sys.stdin)\n"
        "for bits in (64, 128):\n"
        "    f = Fingerprinter(FingerprintConfig(bits=bits))\n"
        "    print(json.dumps([to_hex(f.fingerprint_text(t, 'title'), bits) for t in texts]))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    wide = Fingerprinter(FingerprintConfig(bits=128))
    expected = [
        [to_hex(fingerprinter.fingerprint_text(t, "title"), 64) for t in texts],  # type: ignore[arg-type]
        [to_hex(wide.fingerprint_text(t, "title"), 128) for t in texts],  # type: ignore[arg-type]
    ]
    assert [json.loads(line) for line in result.stdout.splitlines()] == expected
    assert result.stderr == ""  # jieba's start-up chatter is silenced


SCHEME_CHANGES = {
    "bits": 128,
    "cjk_features": "words",
    "tokenizer": "rjieba",
    "jieba_hmm": True,
    "weighting": "tf",
    "title_weight": 1.5,
    "shingle_size": 2,
    "builtin_stopwords": False,
    "keep_numbers": True,
    "length_factor": True,
    "pos_factor": True,
    "seed": 1,
    "extractor": "scrapy_simhash.text.extract_main_text",
}


# Options that only shape jieba's words: with Chinese read as characters they change no
# fingerprint, so they leave the scheme (and an existing index) alone.
WORD_OPTIONS = {"tokenizer", "jieba_hmm", "pos_factor"}


@pytest.mark.parametrize(("name", "value"), sorted(SCHEME_CHANGES.items()))
def test_scheme_changes_with_every_fingerprint_option(name: str, value: object) -> None:
    default = FingerprintConfig()
    if name in WORD_OPTIONS:
        words = FingerprintConfig(cjk_features="words")
        assert dataclasses.replace(words, **{name: value}).scheme != words.scheme  # type: ignore[arg-type]
        assert dataclasses.replace(default, **{name: value}).scheme == default.scheme  # type: ignore[arg-type]
    else:
        assert dataclasses.replace(default, **{name: value}).scheme != default.scheme  # type: ignore[arg-type]


def test_scheme_covers_every_option_but_the_limits() -> None:
    options = {f.name for f in dataclasses.fields(FingerprintConfig)}
    limits = {"min_text_chars", "max_body_bytes", "stopwords_file"}
    assert set(SCHEME_CHANGES) == options - limits


def test_scheme_follows_stop_word_content_not_file_name(tmp_path: Path) -> None:
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("subscribe\n", encoding="utf-8")
    two.write_text("subscribe\n", encoding="utf-8")
    same = FingerprintConfig(stopwords_file=str(one)).scheme
    assert FingerprintConfig(stopwords_file=str(two)).scheme == same
    assert same != FingerprintConfig().scheme
    two.write_text("newsletter\n", encoding="utf-8")
    assert FingerprintConfig(stopwords_file=str(two)).scheme != same


def test_scheme_ignores_limits_and_is_short() -> None:
    default = FingerprintConfig()
    changed = FingerprintConfig(min_text_chars=10, max_body_bytes=1000)
    assert changed.scheme == default.scheme
    assert default.scheme.startswith("sh8-64-")
    assert len(default.scheme) <= 20


def test_from_settings_reads_command_line_strings() -> None:
    config = fingerprint_config(
        {
            "SIMHASH_BITS": "128",
            "SIMHASH_TOKENIZER": "RJIEBA",
            "SIMHASH_WEIGHTING": "tf",
            "SIMHASH_TITLE_WEIGHT": "0",
            "SIMHASH_SHINGLE_SIZE": "2",
            "SIMHASH_KEEP_NUMBERS": "true",
            "SIMHASH_SEED": "42",
            "SIMHASH_MIN_TEXT_CHARS": "50",
            "SIMHASH_MAX_BODY_BYTES": "0",
            "OTHER": "ignored",
        }
    )
    assert config == FingerprintConfig(
        bits=128,
        tokenizer="rjieba",
        weighting="tf",
        title_weight=0.0,
        shingle_size=2,
        keep_numbers=True,
        seed=42,
        min_text_chars=50,
        max_body_bytes=0,
    )
    assert fingerprint_config({}) == FingerprintConfig()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SIMHASH_BITS", "32"),
        ("SIMHASH_BITS", "many"),
        ("SIMHASH_TOKENIZER", "nltk"),
        ("SIMHASH_WEIGHTING", "bm25"),
        ("SIMHASH_TITLE_WEIGHT", "-1"),
        ("SIMHASH_SHINGLE_SIZE", "0"),
        ("SIMHASH_SEED", "-3"),
        ("SIMHASH_MIN_TEXT_CHARS", "-1"),
        ("SIMHASH_STOPWORDS", "maybe"),
    ],
)
def test_bad_settings_name_the_setting(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        fingerprint_config({name: value})


def test_missing_stop_word_file_fails_when_the_fingerprinter_is_built() -> None:
    with pytest.raises(ConfigurationError, match="`stopwords_file`"):
        Fingerprinter(FingerprintConfig(stopwords_file="/nonexistent/stop.txt"))


def _html(title: str, text: str, charset: str = "utf-8") -> bytes:
    paragraphs = "".join(f"<p>{line}</p>" for line in text.split(". "))
    return (
        f"<html><head><meta charset='{charset}'><title>{title}</title></head>"
        f"<body><nav>Home | News</nav><article>{paragraphs}</article></body></html>"
    ).encode(charset)


def test_fingerprint_page_extracts_then_fingerprints(fingerprinter: Fingerprinter) -> None:
    from scrapy_simhash import extract_main_text

    body = _html("Report", article(5, words=150).replace("word1 ", "word1. "))
    page = fingerprinter.fingerprint_page(body, content_type="text/html; charset=utf-8")
    main = extract_main_text(body, content_type="text/html; charset=utf-8")
    assert page.fingerprint == fingerprinter.fingerprint_text(main.text, main.title)
    assert page.fingerprint is not None
    assert page.title == main.title
    assert page.chars == len(main.text)
    assert page.encoding
    assert page.reason is None


def test_same_chinese_page_in_gbk_and_utf8_has_one_fingerprint(
    fingerprinter: Fingerprinter,
) -> None:
    text = (
        "北京市政府今天发布了新的城市交通规划方案. 计划在未来五年内新建地铁线路和公交专用道. " * 4
    )
    utf8 = fingerprinter.fingerprint_page(_html("交通规划", text))
    gbk = fingerprinter.fingerprint_page(_html("交通规划", text, "gbk"))
    assert utf8.fingerprint is not None
    assert utf8.fingerprint == gbk.fingerprint


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
        b"<html><body><p>Sign in</p></body></html>",
    ],
)
def test_pages_without_enough_text_have_a_reason(fingerprinter: Fingerprinter, body: bytes) -> None:
    page = fingerprinter.fingerprint_page(body)
    assert page.fingerprint is None or page.exact
    assert page.reason


@given(st.text(max_size=200), st.text(max_size=30))
@settings(max_examples=300, deadline=None)
def test_own_text_folds_like_line_by_line(text: str, title: str) -> None:
    folded_title = " ".join(normalize(title).split())
    expected = [
        line
        for line in text.split("\n")
        if (folded := " ".join(normalize(line).split())) and folded not in folded_title
    ]
    assert own_text(text, title) == ("\n".join(expected) if folded_title else text)


_LINE = st.text(alphabet="ab 中\u3000\t", max_size=12)


@given(
    st.lists(st.one_of(_LINE, st.just("ab 中")), max_size=12),
    st.sampled_from(["", "ab 中", "中"]),
    st.integers(min_value=-4, max_value=4),
)
@settings(max_examples=300, deadline=None)
def test_length_check_stopping_early_agrees_with_the_whole_own_text(
    lines: list[str], title: str, offset: int
) -> None:
    """too_short stops reading lines once the own text is long enough; its verdict must be
    that of the whole own text (CJK counted three times only below the minimum), with
    minimums around the own text's length, where an early stop could go wrong."""
    text = "\n".join(lines)
    own = " ".join(own_text(text, title).split())
    minimum = max(len(own) + offset, 0)
    length = len(own) if len(own) >= minimum else effective_length(own)
    reason = Fingerprinter(FingerprintConfig(min_text_chars=minimum)).too_short(text, title)
    if not text.strip():
        assert reason == "no main text"
    else:
        assert (reason is None) == (length >= minimum)
        if reason is not None:
            assert f"({length} chars besides the title" in reason


def paragraphs_only(
    body: bytes | str, *, content_type: str | None = None, max_bytes: int | None = None
) -> Any:
    """An extractor of one's own: the text of <p> elements, nothing else."""
    from scrapy_simhash.text import MainText

    html = body.decode() if isinstance(body, bytes) else body
    found = re.findall(r"<p>(.*?)</p>", html, flags=re.DOTALL)
    return MainText(title="", text="\n".join(found), encoding="utf-8")


def test_an_extractor_of_ones_own_by_import_path_enters_the_scheme() -> None:
    from scrapy_simhash.settings import fingerprint_config

    article = " ".join(
        f"Sentence {i} tells of the harbour, the ferry and the bridge." for i in range(30)
    )
    page = f"<html><body><div>{'menu ' * 50}</div><p>{article}</p></body></html>"
    builtin = Fingerprinter(FingerprintConfig())
    own = Fingerprinter(
        fingerprint_config({"SIMHASH_EXTRACTOR": "tests.unit.test_fingerprint.paragraphs_only"})
    )
    assert own.fingerprint_page(page).fingerprint == own.fingerprint_text(article)
    assert own.scheme != builtin.scheme
    assert builtin.scheme == Fingerprinter(fingerprint_config({"SIMHASH_EXTRACTOR": ""})).scheme
    with pytest.raises(ConfigurationError, match="cannot be loaded"):
        fingerprint_config({"SIMHASH_EXTRACTOR": "tests.unit.test_fingerprint.no_such_function"})
