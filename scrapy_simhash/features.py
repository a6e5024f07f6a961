"""Turn main text into weighted features for SimHash.

A fingerprint can only be as good as its features. Two copies of one article should yield
nearly the same weighted bag of words even when a timestamp, a counter or the surrounding
site differs, so text is normalised (NFKC folds full and half width, case folding),
numbers, punctuation and function words are dropped, and Latin-script runs are split on
word boundaries.

Chinese enters as single ideographs by default (``cjk_features="chars"``), jieba words on
request (``"words"``). Measured on an independent pair benchmark, characters win clearly
(Chinese F1 0.977 against 0.890 at k=3): a small edit or a changed punctuation mark moves
jieba's word boundaries around it, so a 5% edit changes far more than 5% of the words,
while it changes only 5% of the characters. A Chinese page repeats its characters, so its
character counts are a steady, concentrated profile; different pages still differ by
their content characters (no same-topic or same-template pair came closer). Character
n-grams, by contrast, move a fingerprint far on a one-character typo.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import operator
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import cache, cached_property, lru_cache
from importlib import resources
from itertools import repeat
from pathlib import Path
from typing import Protocol

import xxhash

from scrapy_simhash import _native
from scrapy_simhash.exceptions import ConfigurationError

logger = logging.getLogger(__name__)

TOKENIZERS = ("jieba", "rjieba")
WEIGHTINGS = ("tf", "tfidf")
CJK_FEATURES = ("chars", "words")
BUILTIN_STOPWORD_LANGUAGES = ("zh", "en", "de", "es", "fr", "pt", "it", "nl")

# CJK unified ideographs (basic, extension A, compatibility, extensions B-F). Kana and
# Hangul are left to the word pattern: they are written with spaces (Korean) or mixed with
# ideographs that the segmenter still sees (Japanese).
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_CJK_SPLIT = re.compile(f"([{_CJK}]+)")
_CJK_CHAR = re.compile(f"[{_CJK}]")
# Words of the text outside CJK runs: what _WORD finds in the parts between the runs.
_NON_CJK_WORD = re.compile(f"[^\\W_{_CJK}]+")
#: Longest run of CJK characters the segmenter gets in one piece. jieba builds a graph over
#: each run between punctuation; one unpunctuated 5 MB page took 900 MB. A longer run is
#: cut into pieces this long, which can split at most one word per cut.
MAX_RUN_CHARS = 4000
_WORD = re.compile(r"[^\W_]+")

# Part-of-speech factors of the improved-SimHash weighting: content words (nouns, names,
# verbs) carry a page's identity; particles and pronouns carry little.
_POS_FACTORS = {"n": 1.0, "v": 0.8, "a": 0.6, "d": 0.4, "eng": 1.0}
_POS_DEFAULT = 0.5

# One CJK ideograph carries about as much as three Latin letters (an English word plus its
# space is ~6 characters, a Chinese word ~2 ideographs), so thresholds on text length are
# stated in Latin-equivalent characters.
CJK_CHAR_WEIGHT = 3


class Tokenizer(Protocol):
    """A Chinese word segmenter."""

    name: str

    def cut(self, text: str) -> list[str]:
        """Split ``text`` into words; whitespace comes back as separate tokens."""

    def tag(self, text: str) -> list[tuple[str, str]]:
        """Split ``text`` into (word, part-of-speech flag) pairs."""


class _Jieba:
    name = "jieba"

    def __init__(self, hmm: bool) -> None:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        self._jieba = jieba
        self._hmm = hmm

    def cut(self, text: str) -> list[str]:
        words: list[str] = self._jieba.lcut(text, HMM=self._hmm)
        return words

    def tag(self, text: str) -> list[tuple[str, str]]:
        import jieba.posseg

        return [(pair.word, pair.flag) for pair in jieba.posseg.lcut(text, HMM=self._hmm)]


class _RJieba:
    name = "rjieba"

    def __init__(self, hmm: bool) -> None:
        try:
            import rjieba
        except ImportError:
            raise ConfigurationError(
                "`tokenizer` rjieba needs the rjieba package: "
                "pip install 'scrapy-simhash[fast]' (or set `tokenizer` to jieba)"
            ) from None
        self._rjieba = rjieba
        self._hmm = hmm

    def cut(self, text: str) -> list[str]:
        words: list[str] = self._rjieba.cut(text, hmm=self._hmm)
        return words

    def tag(self, text: str) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = self._rjieba.tag(text, hmm=self._hmm)
        return pairs


@cache
def get_tokenizer(name: str, hmm: bool = False) -> Tokenizer:
    """Load a segmenter once per process (jieba's dictionary takes about a second)."""
    if name == "jieba":
        return _Jieba(hmm)
    if name == "rjieba":
        return _RJieba(hmm)
    raise ConfigurationError(f"`tokenizer` must be one of {', '.join(TOKENIZERS)}")


def normalize(text: str) -> str:
    """Fold width and compatibility forms (NFKC) and case so copies compare equal."""
    hashes = _native.hashes
    if hashes is not None:
        return hashes.fold(text)
    return unicodedata.normalize("NFKC", text).casefold()


def effective_length(text: str) -> int:
    """Length of ``text`` in Latin-equivalent characters, whitespace runs counted once.

    Chinese packs about three Latin letters into each ideograph, so one threshold works
    for both scripts.
    """
    compact = " ".join(text.split())
    cjk = len(compact) - len(_CJK_CHAR.sub("", compact))
    return len(compact) + (CJK_CHAR_WEIGHT - 1) * cjk


def read_stopwords(lines: Iterable[str]) -> set[str]:
    """Parse a stop-word list: one word per line, ``#`` comments, normalised like text."""
    words = set()
    for line in lines:
        word = line.split("#", 1)[0].strip()
        if word:
            words.add(normalize(word))
    return words


@lru_cache(maxsize=1)
def builtin_stopwords() -> frozenset[str]:
    """The shipped lists: Chinese, English, German, Spanish, French, Portuguese, Italian,
    Dutch. Without them a German page's fingerprint rests on der, die, und: a page with
    half its words rewritten still matched it, and 5% edits moved it far."""
    words: set[str] = set()
    data = resources.files("scrapy_simhash") / "data"
    for name in BUILTIN_STOPWORD_LANGUAGES:
        name = f"stopwords-{name}.txt"
        words |= read_stopwords(data.joinpath(name).read_text(encoding="utf-8").splitlines())
    return frozenset(words)


def load_stopwords(*, builtin: bool = True, path: str | None = None) -> frozenset[str]:
    """The stop-word set in effect: the shipped lists (unless disabled) plus a user file."""
    words = set(builtin_stopwords()) if builtin else set()
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"`stopwords_file` {path!r} cannot be read as UTF-8 text: {exc}"
            ) from None
        words |= read_stopwords(text.splitlines())
    return frozenset(words)


# jieba's analyse/idf.txt as released (xxh3-64 of its bytes; jieba 0.42.1) -> its median.
# Every word of that table holds an ideograph. With Chinese read as ideographs (the
# default) only single ideographs (weighted by the median, see FeatureExtractor._idf) and
# words without ideographs are looked up, so the median is all of the table a fingerprint
# uses: parsing its 270,000 lines would cost every process 0.4 s of CPU and ~30 MB.
_KNOWN_IDF_MEDIANS = {"68c5902a51ea62db": 11.9547675029}


def _idf_path() -> Path:
    # Found without importing jieba: its import alone takes ~70 ms and its HMM tables,
    # which Chinese read as ideographs (the default) never uses.
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError("the jieba package is not installed (pip install jieba)")
    return Path(spec.submodule_search_locations[0]) / "analyse" / "idf.txt"


def idf_table(*, ideograph_words: bool = True) -> tuple[dict[str, float], float]:
    """jieba's IDF table and its median, the weight of words it lacks.

    The table was computed on a large Chinese corpus; a word missing from it (a rare
    name, any non-Chinese word) gets the median, as jieba's own keyword extractor does:
    an unknown word is neither boilerplate nor a keyword on evidence we do not have.
    With ``ideograph_words=False`` the table may leave out the words that hold an
    ideograph (the caller never looks them up); for the released table that leaves none.
    """
    return _idf_table(bool(ideograph_words))


@lru_cache(maxsize=2)
def _idf_table(ideograph_words: bool) -> tuple[dict[str, float], float]:
    path = _idf_path()
    if not ideograph_words:
        median = _KNOWN_IDF_MEDIANS.get(xxhash.xxh3_64_hexdigest(path.read_bytes()))
        if median is not None:
            return {}, median
    table: dict[str, float] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            word, _, value = line.rstrip("\n").rpartition(" ")
            if word:
                table[word] = float(value)
    median = statistics.median(table.values()) if table else 1.0
    return table, median


class FeatureExtractor:
    """Weighted features of a text, under one fixed set of options."""

    def __init__(
        self,
        *,
        tokenizer: str = "jieba",
        hmm: bool = False,
        weighting: str = "tfidf",
        title_weight: float = 2.0,
        shingle_size: int = 1,
        stopwords: frozenset[str] = frozenset(),
        keep_numbers: bool = False,
        length_factor: bool = False,
        pos_factor: bool = False,
        cjk_features: str = "chars",
    ) -> None:
        if cjk_features not in CJK_FEATURES:
            raise ConfigurationError(f"`cjk_features` must be one of {', '.join(CJK_FEATURES)}")
        if tokenizer not in TOKENIZERS:
            raise ConfigurationError(f"`tokenizer` must be one of {', '.join(TOKENIZERS)}")
        if weighting not in WEIGHTINGS:
            raise ConfigurationError(f"`weighting` must be one of {', '.join(WEIGHTINGS)}")
        if shingle_size < 1:
            raise ConfigurationError("`shingle_size` must be >= 1")
        self._tokenizer_name = tokenizer
        self._hmm = hmm
        self.weighting = weighting
        self.title_weight = title_weight
        self.shingle_size = shingle_size
        self.stopwords = stopwords
        self.keep_numbers = keep_numbers
        self.length_factor = length_factor
        self.pos_factor = pos_factor
        self.cjk_features = cjk_features
        # The default options (ideographs, single words, no length factor) count words in
        # C (see _counted_features); any other option takes the general path.
        self._counted = cjk_features == "chars" and shingle_size == 1 and not length_factor

    @property
    def tokenizer(self) -> Tokenizer:
        return get_tokenizer(self._tokenizer_name, self._hmm)

    def tokens(self, text: str) -> list[tuple[str, float]]:
        """Kept tokens in text order, each with its per-occurrence factor (POS, length).

        CJK runs are collected and segmented in one call (one call per run costs more
        than the segmentation of a typical page), then put back in place.
        """
        parts = _CJK_SPLIT.split(normalize(text))
        # parts alternates: non-CJK, CJK run, non-CJK, CJK run, ..., non-CJK
        runs = parts[1::2]
        if self.cjk_features == "chars":
            segmented = [[(char, 1.0) for char in run] for run in runs]
        else:
            segmented = self._segment(runs) if runs else []
        out: list[tuple[str, float]] = []
        for index, part in enumerate(parts):
            if index % 2:
                for word, factor in segmented[index // 2]:
                    if word not in self.stopwords:
                        out.append((word, factor * self._length(word, cjk=True)))
            else:
                for word in _WORD.findall(part):
                    if word in self.stopwords or (word.isdecimal() and not self.keep_numbers):
                        continue
                    out.append((word, self._length(word, cjk=False)))
        return out

    def _segment(self, runs: list[str]) -> list[list[tuple[str, float]]]:
        joined = "\n".join(_bounded(run) for run in runs)
        pairs: Iterable[tuple[str, float]]
        if self.pos_factor:
            pairs = (
                (word, _POS_FACTORS.get(flag, _POS_FACTORS.get(flag[:1], _POS_DEFAULT)))
                for word, flag in self.tokenizer.tag(joined)
            )
        else:
            pairs = ((word, 1.0) for word in self.tokenizer.cut(joined))
        result: list[list[tuple[str, float]]] = [[]]
        for word, factor in pairs:
            if word == "\n":
                result.append([])
            elif not word.isspace():
                result[-1].append((word, factor))
        return result

    def _idf(self, word: str) -> float:
        """jieba's IDF of a word; the median for words it lacks.

        No IDF table covers single ideographs. A Chinese word is about two of them, so
        each weighs half of an unknown word: a mixed page's Chinese and Latin text keep
        their shares of the fingerprint.
        """
        table, median = self._idf_table
        if self.cjk_features == "chars" and len(word) == 1 and _CJK_CHAR.match(word):
            return median / 2
        return table.get(word, median)

    @cached_property
    def _idf_table(self) -> tuple[dict[str, float], float]:
        """The table _idf reads, found once: _idf runs for every feature."""
        return idf_table(ideograph_words=self.cjk_features != "chars")

    def _length(self, word: str, *, cjk: bool) -> float:
        """Longer words are more specific (improved-SimHash word-length factor)."""
        if not self.length_factor:
            return 1.0
        units = len(word) if cjk else math.ceil(len(word) / 3)
        return min(units, 4) / 2

    def features(
        self, text: str, title: str = "", *, folded: str | None = None
    ) -> dict[str, float]:
        """Feature -> weight for a page's main text and title (title words boosted).

        A title alone gives no features: a page whose body has nothing left (a login wall
        under a real title) must not be fingerprinted as if it were the article.
        ``folded`` is ``normalize(text)`` when the caller has it already.
        """
        if self._counted:
            weights = self._counted_features(normalize(text) if folded is None else folded)
            if weights and title and self.title_weight > 0:
                for feature, value in self._counted_features(normalize(title)).items():
                    weights[feature] = weights.get(feature, 0.0) + self.title_weight * value
            return weights
        return self._general_features(text, title)

    def _general_features(self, text: str, title: str = "") -> dict[str, float]:
        """features() for every option: tokens with their factors, then weights."""
        weights: dict[str, float] = {}
        self._accumulate(weights, self.tokens(text), 1.0)
        if weights and title and self.title_weight > 0:
            self._accumulate(weights, self.tokens(title), self.title_weight)
        return weights

    def _counted_features(self, folded: str) -> dict[str, float]:
        """features() of one text under the default options, the same weights as
        _general_features: every token's factor is 1 there, so a weight is a count times
        an IDF. Ideographs and words are found and counted in C (_count_tokens) instead
        of one Python step per token (a Chinese page has thousands of ideographs).
        ``folded`` is the text normalised."""
        chars, words = _count_tokens(folded)
        # Deletions and weights in C (dict's own methods, map): a page has hundreds of
        # distinct words, and Counter's __delitem__ is Python code.
        remove = dict.__delitem__
        for counts in (chars, words):
            for word in self.stopwords.intersection(counts):
                remove(counts, word)
        if not self.keep_numbers:
            for word in list(filter(str.isdecimal, words)):
                remove(words, word)
        if self.weighting != "tfidf":
            return {
                word: count * 1.0 for counts in (chars, words) for word, count in counts.items()
            }
        table, median = self._idf_table  # ideographs are read one by one here
        half = median / 2  # see _idf
        weights = {char: count * half for char, count in chars.items()}
        idfs = map(table.get, words, repeat(median))
        weights.update(zip(words, map(operator.mul, words.values(), idfs), strict=True))
        return weights

    def _accumulate(
        self, weights: dict[str, float], tokens: list[tuple[str, float]], boost: float
    ) -> None:
        size = self.shingle_size
        if size == 1:
            counts: Counter[str] = Counter()
            factors: dict[str, float] = {}
            for word, factor in tokens:
                counts[word] += 1
                factors[word] = factor
            items = [(word, count * factors[word]) for word, count in counts.items()]
        else:
            items = []
            for start in range(max(len(tokens) - size + 1, 0)):
                window = tokens[start : start + size]
                items.append((" ".join(w for w, _ in window), sum(f for _, f in window) / size))
        if self.weighting == "tfidf":
            idf = self._idf
            if size == 1:
                items = [(word, value * idf(word)) for word, value in items]
            else:
                items = [
                    (shingle, value * statistics.fmean(map(idf, shingle.split(" "))))
                    for shingle, value in items
                ]
        for feature, value in items:
            weights[feature] = weights.get(feature, 0.0) + boost * value


def _count_tokens(folded: str) -> tuple[dict[str, int], dict[str, int]]:
    """The counts of the ideographs of ``folded`` and of its other words (runs of letters
    and digits), each in the order of first occurrence: compiled when the package was built
    with its C extension, two regular expressions otherwise."""
    hashes = _native.hashes
    if hashes is not None:
        return hashes.count_tokens(folded)
    return Counter(_CJK_CHAR.findall(folded)), Counter(_NON_CJK_WORD.findall(folded))


def _bounded(run: str) -> str:
    """A CJK run with a space every MAX_RUN_CHARS characters (see MAX_RUN_CHARS)."""
    if len(run) <= MAX_RUN_CHARS:
        return run
    return " ".join(run[i : i + MAX_RUN_CHARS] for i in range(0, len(run), MAX_RUN_CHARS))
