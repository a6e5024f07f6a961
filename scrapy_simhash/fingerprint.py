"""64- or 128-bit SimHash fingerprints of a page's main text (Charikar; Manku et al. 2007).

Each feature is hashed with xxh3 under a fixed seed (stable across processes and machines,
unlike ``hash()``), and the fingerprint's bit i is set when the features whose hash has
bit i set outweigh those that have it clear. Weights are rounded to fixed point before
the vectorised sum (integers below 2**53 add exactly in float64), so the result does not
depend on feature order or on summation order.
"""

from __future__ import annotations

import importlib
import json
import logging
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Protocol, cast

import xxhash

from scrapy_simhash import _native
from scrapy_simhash.confirm import Evidence, Signer, exact_fingerprint
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.features import (
    CJK_FEATURES,
    TOKENIZERS,
    WEIGHTINGS,
    FeatureExtractor,
    effective_length,
    load_stopwords,
    normalize,
)
from scrapy_simhash.simhash import from_hex, hamming, simhash, similarity, to_hex
from scrapy_simhash.sketch import folded as fold_spaced
from scrapy_simhash.sketch import line_hashes, make_sketch

# from_hex, hamming, similarity and to_hex were documented here before they moved to
# scrapy_simhash.simhash.
__all__ = [
    "FingerprintConfig",
    "Fingerprinter",
    "PageFingerprint",
    "from_hex",
    "hamming",
    "own_text",
    "similarity",
    "to_hex",
]

logger = logging.getLogger(__name__)

# Bump when extraction, the feature pipeline or the hashing changes, so indexes refuse old
# fingerprints (8: pages parsed by lexbor, the HTML5 rules, instead of libxml2).
FORMAT_VERSION = 8
#: Main text beyond this many characters is not tokenized (a long book chapter is ~100k).
MAX_FEATURE_CHARS = 300_000
_WIDTHS = (64, 128)


class ExtractedText(Protocol):
    """What an extractor returns (:class:`scrapy_simhash.text.MainText` is one)."""

    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def encoding(self) -> str: ...
    @property
    def notes(self) -> Sequence[str]: ...


class MainTextExtractor(Protocol):
    """A page's main text from its body (the ``extractor`` option names one of one's own)."""

    def __call__(
        self, body: bytes | str, *, content_type: str | None = ..., max_bytes: int | None = ...
    ) -> ExtractedText: ...


@dataclass(frozen=True)
class FingerprintConfig:
    """Every option that shapes features and fingerprints (``settings.fingerprint_config``
    reads them from the crawl's settings)."""

    bits: int = 64
    tokenizer: str = "jieba"
    jieba_hmm: bool = False
    cjk_features: str = "chars"
    weighting: str = "tfidf"
    title_weight: float = 0.0
    shingle_size: int = 1
    builtin_stopwords: bool = True
    stopwords_file: str | None = None
    keep_numbers: bool = False
    length_factor: bool = False
    pos_factor: bool = False
    seed: int = 0
    min_text_chars: int = 200
    max_body_bytes: int = 5_000_000
    #: Import path of the main-text extractor; "" is the built-in one
    #: (:func:`scrapy_simhash.text.extract_main_text`).
    extractor: str = ""

    def __post_init__(self) -> None:
        if self.bits not in _WIDTHS:
            raise ConfigurationError(f"`bits` must be 64 or 128, got {self.bits}")
        if self.tokenizer not in TOKENIZERS:
            raise ConfigurationError(
                f"`tokenizer` must be one of {', '.join(TOKENIZERS)}, got {self.tokenizer!r}"
            )
        if self.cjk_features not in CJK_FEATURES:
            raise ConfigurationError(
                f"`cjk_features` must be one of {', '.join(CJK_FEATURES)}, "
                f"got {self.cjk_features!r}"
            )
        if self.weighting not in WEIGHTINGS:
            raise ConfigurationError(
                f"`weighting` must be one of {', '.join(WEIGHTINGS)}, got {self.weighting!r}"
            )
        if self.title_weight < 0:
            raise ConfigurationError("`title_weight` must be >= 0 (0 ignores the title)")
        if self.shingle_size < 1:
            raise ConfigurationError("`shingle_size` must be >= 1 (1 = single words)")
        if not 0 <= self.seed < 2**64:
            raise ConfigurationError("`seed` must be between 0 and 2**64-1")
        if self.min_text_chars < 0 or self.max_body_bytes < 0:
            raise ConfigurationError("`min_text_chars` and `max_body_bytes` must be >= 0")
        if self.extractor:  # the built-in one needs no check, nor its parser imported for it
            self.main_text  # noqa: B018 - an extractor that cannot be loaded refuses here

    @cached_property
    def main_text(self) -> MainTextExtractor:
        """The extractor ``extractor`` names: ``(body, *, content_type, max_bytes)`` returning
        an object with ``title``, ``text`` (a paragraph per line), ``encoding`` and
        ``notes``, as :func:`scrapy_simhash.text.extract_main_text` does."""
        if not self.extractor:
            from scrapy_simhash.text import extract_main_text

            return extract_main_text
        module, _, name = self.extractor.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), name) if module else None
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(
                f"`extractor` {self.extractor!r} cannot be loaded: {exc}"
            ) from None
        if not callable(found):
            raise ConfigurationError(
                f"`extractor` must be the import path of a function, got {self.extractor!r}"
            )
        return cast(MainTextExtractor, found)

    @cached_property
    def stopwords(self) -> frozenset[str]:
        """The stop words in effect (shipped lists and/or the user's file)."""
        return load_stopwords(builtin=self.builtin_stopwords, path=self.stopwords_file)

    @cached_property
    def scheme(self) -> str:
        """Short identifier of everything that changes fingerprints, e.g. ``sh1-64-9f0c2a1b``.

        The stop words enter by content, not by file name. The length and body-size limits
        are left out: they decide whether a page gets a fingerprint, not which one. So are
        the segmenter's options while Chinese is read as characters: they change nothing
        then, and switching jieba for rjieba must not make an index refuse the crawl.
        """
        options = asdict(self)
        left_out = ["stopwords_file", "builtin_stopwords", "min_text_chars", "max_body_bytes"]
        if not self.extractor:  # the built-in extractor is what every scheme id so far used
            left_out.append("extractor")
        if self.cjk_features == "chars":
            left_out += ["tokenizer", "jieba_hmm", "pos_factor"]
        for name in left_out:
            del options[name]
        options["stopwords"] = xxhash.xxh3_64_hexdigest("\n".join(sorted(self.stopwords)).encode())
        digest = xxhash.xxh3_64_hexdigest(json.dumps(options, sort_keys=True).encode())
        return f"sh{FORMAT_VERSION}-{self.bits}-{digest[:8]}"


@dataclass(frozen=True)
class PageFingerprint:
    """The fingerprint of one page, or why it has none."""

    fingerprint: int | None
    title: str
    chars: int
    encoding: str
    reason: str | None = None
    notes: tuple[str, ...] = field(default=())
    #: The main text read (the features' source) and every non-boilerplate line of the
    #: page: what the host's template memory sets aside and learns from.
    text: str = ""
    page_text: str = ""
    #: Lines of the host's template set aside (0: none, or no template known).
    template_lines: int = 0
    #: The text of its own the fingerprint read (the main text without its headline lines),
    #: normalised: what the second test signs (:mod:`scrapy_simhash.confirm`).
    own: str = ""
    #: The fingerprint is an exact digest of a short page's own text and title: only an
    #: exact copy matches it.
    exact: bool = False
    #: The whole page's text, kept for a short page only (its second test reads it).
    visible: str = ""

    @cached_property
    def evidence(self) -> Evidence:
        """What the second test reads of this page, and the sketch of its lines (made once:
        a page is asked for it by its claim, its observe and its second look)."""
        sketch = make_sketch(self.page_text) if self.page_text else 0
        return Evidence(self.own, self.title, self.exact, self.visible, sketch)

    def sign(self, key: int) -> None:
        """Sign :attr:`evidence` under ``key`` now, where the page was read: a fingerprint
        worker does, so that the crawl process's one thread need not (it signs again only
        if its index's key has changed since, :class:`scrapy_simhash.confirm.Signing`)."""
        evidence = self.evidence
        vars(self)["evidence"] = replace(evidence, signed=(key, Signer(key).sign(evidence)))

    @cached_property
    def line_hashes(self) -> array[int]:
        """The hash of each of the page's lines (``page_text``), folded: what its host's
        template memory counts and sets aside (:func:`scrapy_simhash.sketch.line_hashes`),
        made once a page (8 bytes a line), where the page is fingerprinted."""
        return line_hashes(self.page_text)

    @cached_property
    def main_line_hashes(self) -> array[int]:
        """:attr:`line_hashes` of the main text: the first of the page's when its text
        starts with the main text (as the extractor writes it), not hashed twice."""
        text, page = self.text, self.page_text
        if page.startswith(text) and page[len(text) : len(text) + 1] in ("", "\n"):
            return self.line_hashes[: sum(1 for line in text.split("\n") if line.strip())]
        return line_hashes(text)


class Fingerprinter:
    """Computes fingerprints under one configuration; create once, reuse for every page."""

    def __init__(self, config: FingerprintConfig | None = None) -> None:
        self.config = config or FingerprintConfig()
        c = self.config
        self._extractor = FeatureExtractor(
            tokenizer=c.tokenizer,
            hmm=c.jieba_hmm,
            weighting=c.weighting,
            title_weight=c.title_weight,
            shingle_size=c.shingle_size,
            stopwords=c.stopwords,
            keep_numbers=c.keep_numbers,
            length_factor=c.length_factor,
            pos_factor=c.pos_factor,
            cjk_features=c.cjk_features,
        )
        self._digest = xxhash.xxh3_64_digest if c.bits == 64 else xxhash.xxh3_128_digest

    @property
    def bits(self) -> int:
        return self.config.bits

    @property
    def scheme(self) -> str:
        return self.config.scheme

    def features(
        self, text: str, title: str = "", *, folded: str | None = None
    ) -> dict[str, float]:
        """Weighted features of a text (main text plus boosted title words); ``folded`` is
        ``normalize(text)`` when the caller has it already."""
        return self._extractor.features(text, title, folded=folded)

    def fingerprint_features(self, features: Mapping[str, float]) -> int | None:
        """SimHash of weighted features; None when there are none (never all zeros)."""
        return simhash(features, self.bits, self.config.seed)

    def too_short(self, text: str, title: str = "", *, folded: str | None = None) -> str | None:
        """Why ``text`` is too little to fingerprint, or None when it is enough.

        Only the page's own text counts: lines that repeat the title (the headline) are
        set aside. Two different pages of one template whose article was not found read
        alike (a promotion banner, a login prompt, the headline); below this length a
        match would rest on such shared words, and a distinct page would be dropped. A
        page without a fingerprint is never dropped, so when in doubt it passes.
        ``folded`` is ``normalize(text)`` when the caller has it already.
        """
        if not text.strip():
            return "no main text"
        minimum = self.config.min_text_chars
        kept: list[str] = []
        # The own text's length with whitespace runs as single spaces, line by line: it
        # only grows, so reading stops once it is long enough (most pages: a line or two).
        length = -1
        for line in _own_lines(text, title, folded):
            kept.append(line)
            chars = len(" ".join(line.split()))
            if chars:
                length += chars + 1
                if length >= minimum:
                    return None
        # Ideographs count three times: only a text short of the minimum needs them counted.
        length = effective_length("\n".join(kept))
        if length < minimum:
            return (
                f"too little text of its own ({length} chars besides the title, CJK "
                f"counted x3; {self.config.min_text_chars} needed)"
            )
        return None

    def fingerprint_text(self, text: str, title: str = "") -> int | None:
        """Fingerprint of main text, or None when there is too little of it."""
        return self.fingerprint_document(text, title).fingerprint

    def fingerprint_document(
        self,
        text: str,
        title: str = "",
        *,
        encoding: str = "",
        notes: tuple[str, ...] = (),
    ) -> PageFingerprint:
        """Fingerprint already-extracted main text, with the reason when there is none.

        Only the first MAX_FEATURE_CHARS characters are tokenized: the cost of a page
        must not grow without bound with a hostile body.
        """
        chars = len(text)
        if chars > MAX_FEATURE_CHARS:
            text = text[:MAX_FEATURE_CHARS]
            notes = (*notes, f"features taken from the first {MAX_FEATURE_CHARS} characters")
        # Normalised once for the length check, the features and the own text.
        folded = normalize(text)
        reason = self.too_short(text, title, folded=folded)
        own = own_folded(text, title, folded)
        fingerprint = None
        if reason is None:
            fingerprint = self.fingerprint_features(self.features(text, title, folded=folded))
            if fingerprint is None:
                reason = "no features left after dropping stop words and numbers"
        elif own.strip():
            # Too little text for a fingerprint: an exact copy of it is still a copy.
            exact = exact_fingerprint(own, title, self._exact_digest)
            return PageFingerprint(
                exact,
                title,
                chars,
                encoding,
                f"{reason}: exact copies only",
                notes,
                own=own,
                exact=True,
            )
        return PageFingerprint(fingerprint, title, chars, encoding, reason, notes, own=own)

    def _exact_digest(self, data: bytes) -> bytes:
        digest: bytes = self._digest(data, self.config.seed)
        return digest

    def fingerprint_page(
        self, body: bytes | str, *, content_type: str | None = None
    ) -> PageFingerprint:
        """Extract a page's main text (HTML bytes or text) and fingerprint it."""
        main = self.config.main_text(
            body, content_type=content_type, max_bytes=self.config.max_body_bytes or None
        )
        page = self.fingerprint_document(
            main.text, main.title, encoding=main.encoding, notes=tuple(main.notes)
        )
        # A user's extractor may not read the page's other lines: its main text stands in.
        visible = getattr(main, "visible_text", "") if page.exact else ""
        return replace(
            page,
            text=main.text,
            page_text=getattr(main, "page_text", main.text),
            visible=visible,
        )


def own_text(text: str, title: str, folded: str | None = None) -> str:
    """``text`` without the lines that repeat ``title`` or a part of it (the headline);
    ``text`` itself when it has none (one string, not two, for a worker to send back).

    ``folded`` is ``normalize(text)`` when the caller has it already.
    """
    lines = list(_own_lines(text, title, folded))
    if len(lines) == text.count("\n") + 1:
        return text
    return "\n".join(lines)


def own_folded(text: str, title: str, folded: str | None = None) -> str:
    """:func:`own_text` normalised (``folded`` is ``normalize(text)``): the whole folded
    text when there is no title to set aside, with no further work."""
    if folded is None:
        folded = normalize(text)
    if not title.strip():
        return folded
    hashes = _native.hashes
    if hashes is not None and folded.count("\n") == text.count("\n"):
        return hashes.own_lines(folded, fold_spaced(title))
    return "\n".join(_own_lines(text, title, folded, fold=True))


def _own_lines(
    text: str, title: str, folded: str | None = None, *, fold: bool = False
) -> Iterator[str]:
    """The lines of own_text (folded ones with ``fold``), one at a time, so that a length
    check can stop early."""
    folded_title = fold_spaced(title)
    lines = text.split("\n")
    if not folded_title and not fold:
        yield from lines
        return
    # One normalisation of the whole text rather than one per line: no character folds
    # to or from a line feed, so the folded lines are the lines folded (checked by count).
    folded_lines = (normalize(text) if folded is None else folded).split("\n")
    if len(folded_lines) != len(lines):
        folded_lines = [normalize(line) for line in lines]
    for line, folded_line in zip(lines, folded_lines, strict=True):
        spaced = " ".join(folded_line.split())
        if spaced and (not folded_title or spaced not in folded_title):
            yield folded_line if fold else line
