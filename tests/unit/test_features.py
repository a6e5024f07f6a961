"""Features: normalisation, segmentation, stop words, numbers, weights, shingles."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash import features as features_module
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.features import (
    CJK_CHAR_WEIGHT,
    FeatureExtractor,
    builtin_stopwords,
    effective_length,
    get_tokenizer,
    idf_table,
    load_stopwords,
    normalize,
)

STOP = builtin_stopwords()
ZH = "我们在北京天安门广场看升旗仪式，游客们非常激动。"


def words(extractor: FeatureExtractor, text: str) -> list[str]:
    return [word for word, _ in extractor.tokens(text)]


def test_normalize_folds_width_and_case() -> None:
    assert normalize("ＡＢＣ１２３，Straße") == "abc123,strasse"


def test_effective_length_counts_cjk_heavier_and_collapses_space() -> None:
    assert effective_length("ab   cd\n\n") == len("ab cd")
    assert effective_length("北京abc") == 2 * CJK_CHAR_WEIGHT + 3


@pytest.mark.parametrize("tokenizer", ["jieba", "rjieba"])
def test_chinese_is_segmented_into_words_without_stop_words(tokenizer: str) -> None:
    extractor = FeatureExtractor(tokenizer=tokenizer, stopwords=STOP, cjk_features="words")
    tokens = words(extractor, ZH)
    assert "升旗仪式" in tokens or "升旗" in tokens
    assert "北京天安门广场" in tokens or "天安门" in tokens
    assert "我们" not in tokens
    assert "在" not in tokens
    assert "，" not in tokens
    assert "," not in tokens


def test_chinese_enters_as_single_ideographs_by_default() -> None:
    tokens = words(FeatureExtractor(stopwords=STOP), ZH)
    assert "北京天安门广场" in "".join(tokens)
    assert all(len(token) == 1 for token in tokens)
    assert "的" not in words(FeatureExtractor(stopwords=STOP), "我的书")  # stop characters


def test_a_small_chinese_edit_changes_few_character_features() -> None:
    """A one-word substitution moves jieba's boundaries; characters change only locally."""
    original = "南京市长江大桥今天正式通车，市民纷纷前来参观。"
    edited = "南京市长江大桥昨天正式通车，市民纷纷前来参观。"
    for mode, most in (("chars", 2), ("words", 6)):
        extractor = FeatureExtractor(stopwords=STOP, cjk_features=mode, weighting="tf")
        a, b = extractor.features(original), extractor.features(edited)
        changed = sum(abs(a.get(f, 0) - b.get(f, 0)) for f in a.keys() | b.keys())
        assert changed <= most, (mode, changed)


def test_mixed_text_keeps_order_across_scripts() -> None:
    extractor = FeatureExtractor(stopwords=STOP, cjk_features="words")
    tokens = words(extractor, "Python编程语言 is great，数据分析 rocks")
    assert tokens == ["python", "编程语言", "great", "数据分析", "rocks"]
    chars = words(FeatureExtractor(stopwords=STOP), "Python编程 is great")
    assert chars == ["python", "编", "程", "great"]


def test_numbers_and_punctuation_are_dropped_unless_kept() -> None:
    text = "Updated 2024-05-01 12:30, 1,234 views. Version v2 released"
    default = words(FeatureExtractor(stopwords=STOP), text)
    assert default == ["updated", "views", "version", "v2", "released"]
    kept = words(FeatureExtractor(stopwords=STOP, keep_numbers=True), text)
    assert "2024" in kept
    assert "1" in kept


def test_full_width_digits_are_numbers_too() -> None:
    assert words(FeatureExtractor(stopwords=STOP), "２０２４年 sales") == ["年", "sales"]


def test_builtin_stop_words_cover_both_languages() -> None:
    assert {"the", "and", "的", "了", "我们"} <= STOP
    assert len([w for w in STOP if w.isascii()]) > 100
    assert len([w for w in STOP if not w.isascii()]) > 150


def test_user_stop_word_file_extends_or_replaces(tmp_path: Path) -> None:
    path = tmp_path / "stop.txt"
    path.write_text("# site boilerplate\nＳｕｂｓｃｒｉｂｅ\n升旗  # event\n", encoding="utf-8")
    extended = load_stopwords(path=str(path))
    assert {"subscribe", "升旗", "the"} <= extended
    only = load_stopwords(builtin=False, path=str(path))
    assert only == {"subscribe", "升旗"}


def test_unreadable_stop_word_file_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="`stopwords_file`"):
        load_stopwords(path="/nonexistent/stop.txt")


def test_missing_rjieba_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rjieba", None)
    get_tokenizer.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match=r"scrapy-simhash\[fast\]"):
            get_tokenizer("rjieba")
    finally:
        get_tokenizer.cache_clear()


def test_unknown_options_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="`tokenizer`"):
        FeatureExtractor(tokenizer="nltk")
    with pytest.raises(ConfigurationError, match="`weighting`"):
        FeatureExtractor(weighting="bm25")
    with pytest.raises(ConfigurationError, match="`shingle_size`"):
        FeatureExtractor(shingle_size=0)
    with pytest.raises(ConfigurationError, match="`cjk_features`"):
        FeatureExtractor(cjk_features="bigrams")


def test_term_frequency_counts_occurrences() -> None:
    extractor = FeatureExtractor(weighting="tf", stopwords=STOP, title_weight=0)
    assert extractor.features("apple banana apple apple") == {"apple": 3.0, "banana": 1.0}


def test_tfidf_weighs_rare_words_over_common_ones_and_unknown_at_median() -> None:
    table, median = idf_table()
    extractor = FeatureExtractor(weighting="tfidf", stopwords=frozenset(), cjk_features="words")
    weights = extractor.features("发展 量子 zzqxunknownword")
    assert weights["量子"] > weights["发展"]
    assert weights["发展"] == pytest.approx(table["发展"])
    assert weights["zzqxunknownword"] == pytest.approx(median)
    assert min(table.values()) < median < max(table.values())


def test_a_chinese_character_weighs_half_an_unknown_word() -> None:
    _, median = idf_table()
    weights = FeatureExtractor(stopwords=frozenset()).features("量子 量 zzqxunknownword")
    assert weights["量"] == pytest.approx(2 * median / 2)
    assert weights["子"] == pytest.approx(median / 2)
    assert weights["zzqxunknownword"] == pytest.approx(median)


def test_ideographs_read_one_by_one_need_only_the_median_of_the_released_table() -> None:
    """The shortcut for the released table gives the weights the whole table gives."""
    table, median = idf_table()
    assert idf_table(ideograph_words=False) == ({}, median)
    ideograph = re.compile(f"[{features_module._CJK}]")
    assert all(ideograph.search(word) for word in table)  # nothing else is ever looked up


def test_an_idf_table_of_another_release_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    released = next(iter(features_module._KNOWN_IDF_MEDIANS.values()))
    monkeypatch.setattr(features_module, "_KNOWN_IDF_MEDIANS", {})
    features_module._idf_table.cache_clear()
    try:
        table, median = idf_table(ideograph_words=False)
        assert len(table) > 100_000
        assert median == released  # computed from the file, equal to the one known
    finally:
        features_module._idf_table.cache_clear()


def test_title_words_are_boosted_by_title_weight() -> None:
    plain = FeatureExtractor(weighting="tf", title_weight=0).features("apple pie", "apple")
    boosted = FeatureExtractor(weighting="tf", title_weight=2.5).features("apple pie", "apple")
    assert plain == {"apple": 1.0, "pie": 1.0}
    assert boosted == {"apple": 3.5, "pie": 1.0}


def test_shingles_join_consecutive_words() -> None:
    extractor = FeatureExtractor(weighting="tf", shingle_size=2, stopwords=STOP)
    assert extractor.features("red apple, green apple. red apple!") == {
        "red apple": 2.0,
        "apple green": 1.0,
        "green apple": 1.0,
        "apple red": 1.0,
    }
    assert extractor.features("lonely") == {}


def test_length_factor_favours_longer_words() -> None:
    extractor = FeatureExtractor(
        weighting="tf", length_factor=True, stopwords=STOP, cjk_features="words"
    )
    weights = extractor.features("北京天安门广场 看 international ox")
    assert weights["北京天安门广场"] > weights["看"]
    assert weights["international"] > weights["ox"]


@pytest.mark.parametrize("tokenizer", ["jieba", "rjieba"])
def test_pos_factor_favours_nouns_over_adverbs_and_particles(tokenizer: str) -> None:
    extractor = FeatureExtractor(
        tokenizer=tokenizer, weighting="tf", pos_factor=True, cjk_features="words"
    )
    weights = extractor.features("政府认真地处理教育问题")
    assert weights["政府"] > weights["认真"] > weights["地"]


# Text mixing ideographs (BMP and extension B), kana, Hangul, Latin with accents, full-width
# forms, digits of several scripts, stop words and punctuation: what the default options'
# counting path and the general token path must read alike.
_PIECES = st.sampled_from(
    [
        "的",
        "了",
        "北京",
        "天安门",
        "𠀀𠀁",
        "ｶﾀｶﾅ",
        "한국어",
        "Straße",
        "ÉTÉ",
        "ＡＢＣ",
        "the",
        "und",
        "123",
        "٣٤",
        "x1",
        "_",
        "-",
        "，",
        "。",
        " ",
        "\n",
        "\t",
        "ﬁ",
        "①",
        "㎏",
        "Ⅻ",
    ]
)
_MIXED_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=40).map("".join)


@given(
    _MIXED_TEXT,
    _MIXED_TEXT,
    st.sampled_from(["tf", "tfidf"]),
    st.booleans(),
    st.sampled_from([0.0, 2.0]),
)
@settings(max_examples=300, deadline=None)
def test_counted_features_equal_the_general_path(
    text: str, title: str, weighting: str, keep_numbers: bool, title_weight: float
) -> None:
    extractor = FeatureExtractor(
        weighting=weighting,
        keep_numbers=keep_numbers,
        title_weight=title_weight,
        stopwords=STOP,
    )
    assert extractor._counted
    assert extractor.features(text, title) == extractor._general_features(text, title)


@given(_MIXED_TEXT)
@settings(max_examples=200, deadline=None)
def test_effective_length_collapses_every_unicode_space(text: str) -> None:
    import re

    compact = re.sub(r"\s+", " ", text).strip()
    cjk = re.findall("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]", compact)
    assert effective_length(text) == len(compact) + (CJK_CHAR_WEIGHT - 1) * len(cjk)


def test_default_fingerprints_load_no_segmenter() -> None:
    """Chinese read as ideographs needs jieba's IDF table, never jieba itself (whose import
    costs start-up time and memory in every worker)."""
    import subprocess

    code = (
        "import sys\n"
        "from scrapy_simhash.fingerprint import Fingerprinter\n"
        "assert Fingerprinter().fingerprint_text('北京的天气很好 the weather ' * 40)\n"
        "print(sorted(m for m in sys.modules if 'jieba' in m))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
