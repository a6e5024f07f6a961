"""The second test every drop needs: a keyed resemblance signature of the page's own text.

Why a second test: a SimHash fingerprint is a bag of words under a public seed. At the
scale of a crawl, distinct pages on one subject land within a few bits of each other (a
crawl of N kept pages drops a new distinct page with a probability that grows with N), and
a page can be crafted to hit a victim's fingerprint with none of its words. So the
fingerprint only names *candidates*; a candidate is a copy only when this test confirms it
(Henzinger, SIGIR 2006: one method confirming the other's candidates beat both alone;
CopyCat checked SimHash candidates by word n-gram overlap).

The test: Broder's resemblance of the two texts' word 3-shingles (Chinese: characters),
estimated by a one-permutation b-bit MinHash (Li & König 2010; Shrivastava 2017 for the
densification of empty bins): 128 bins of one bit, 16 bytes stored with every kept
page. Two pages of resemblance R agree on each bit with probability (1 + R) / 2, so the
number of differing bits estimates R and a threshold on it is a test with a known error: a
pair that shares no shingle (R = 0) passes ``CONFIRM_DISTANCE`` = 20 with probability
7e-16 (:func:`pass_probability`). Shingles are independent of the word bag: pages on one
subject share their words, rarely three in a row.

The shingles are hashed under a 64-bit key that the public code does not contain: made
when a namespace is created and kept in it (the index's configuration record), so a page
cannot be built to agree with another's signature without its text.

Short pages (too little text of their own for a fingerprint) get an exact digest of their
normalised own text and title instead of a fingerprint. A few words tell little: two
listings showing the same top headline, or two articles whose extraction kept only their
dateline, read the same. So a short page is a copy only of a page with the same digest
whose *whole* text (boilerplate included) also reads alike: its signature is a MinHash of
all the page's text, marked by the lowest bit (1), and confirms only another so marked,
at the same digest, within :data:`SHORT_PAGE_DISTANCE` bits (resemblance about 0.9: a
copy under another URL, with its own timestamps and counters). A short page is never
dropped by a near test, nor a long page by a short one.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import xxhash

from scrapy_simhash import _native
from scrapy_simhash.features import _CJK, _CJK_CHAR, normalize

#: Bits of a signature (128 bins of one bit). 64 bins were tried: their estimate is noisy
#: enough that, depending on the key, 1 to 4 labelled distinct pairs (30% rewrites) of the
#: pair benchmark passed, against 1 at 128 bins for every key tried.
SIGNATURE_BITS = 128
#: Tokens per shingle. Chosen on the pair benchmark (benchmarks/false_matches.py): 2 lets
#: same-topic pages through, 4 and 5 lose 5% edits.
SHINGLE_TOKENS = 3
#: Differing bits two signatures may have and still confirm a candidate, one value for
#: both fingerprint widths (the signature is the same at both). Chosen on ``pairs/``
#: labels only (benchmarks/false_matches.py prints the margin on every dev page pair).
CONFIRM_DISTANCE = 20
#: The same for short pages' signatures of their whole text. Chosen on the dev pages: copies
#: differing in timestamps, counters and ids read 0.94-1.0 alike as whole pages; the two
#: distinct pairs of short pages found there (a listing's two pages showing one headline,
#: two articles read as their dateline) 0.66 and 0.38. 10 bits pass 0.9 (96%) and 0.66
#: (0.5%).
SHORT_PAGE_DISTANCE = 10
#: What a page filed without a signature carries (scripts and tests of the index alone):
#: marked exact, so it confirms only another filed without one, i.e. by distance alone.
NO_SIGNATURE = (1 << SIGNATURE_BITS) - 1
#: Bits an index stores after each page's signature: the sketch of the page's lines outside
#: its main text (:func:`scrapy_simhash.template.rest_sketch`), which the second look of a
#: same-host match reads; it takes no part in the second test.
SKETCH_BITS = 64
#: Bits an index stores per page for both: the sketch above the signature.
STORED_BITS = SIGNATURE_BITS + SKETCH_BITS
_EXACT = 1
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
#: Bits a near signature compares: bit 0 is the exact-digest mark, always clear in one.
_COMPARED = SIGNATURE_BITS - 1


def new_key() -> int:
    """A fresh namespace key (the index stores it in its configuration record)."""
    return secrets.randbits(64)


def confirms(a: int, b: int, limit: int = CONFIRM_DISTANCE, distance: int = 0) -> bool:
    """Whether signature ``b`` confirms a candidate signed ``a`` whose fingerprint is
    ``distance`` bits away: both near signatures within ``limit`` bits; or both short
    pages', at the same digest, within :data:`SHORT_PAGE_DISTANCE`; or both filed without
    a signature (the fingerprint alone decides). A stored sketch (the upper bits) is not
    read."""
    a &= NO_SIGNATURE
    b &= NO_SIGNATURE
    if a == NO_SIGNATURE or b == NO_SIGNATURE:
        return a == b
    if (a | b) & _EXACT:
        return bool(a & b & _EXACT) and distance == 0 and (a ^ b).bit_count() <= SHORT_PAGE_DISTANCE
    return (a ^ b).bit_count() <= limit


def score(a: int, b: int) -> int | None:
    """Differing bits of two signatures of one kind (near, or short pages'); None across
    kinds or without a signature."""
    a &= NO_SIGNATURE
    b &= NO_SIGNATURE
    if a == NO_SIGNATURE or b == NO_SIGNATURE or (a ^ b) & _EXACT:
        return None
    return (a ^ b).bit_count()


def resemblance(differing: int) -> float:
    """The resemblance (shingle Jaccard) that ``differing`` bits estimate, 0..1."""
    return max(0.0, 1.0 - 2.0 * differing / _COMPARED)


def pass_probability(resemblance: float, limit: int = CONFIRM_DISTANCE) -> float:
    """Probability that a pair of this resemblance differs in ``limit`` bits or fewer:
    each bit differs with probability (1 - R) / 2, independently."""
    q = min(max((1.0 - resemblance) / 2.0, 0.0), 1.0)
    n = _COMPARED
    return math.fsum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(limit + 1))


def tokens(folded: str) -> list[str]:
    """The tokens a signature shingles, of a normalised text (``normalize``): words between
    spaces (their punctuation kept: copies keep it too); in a text with ideographs, each
    ideograph on its own and the words between them (punctuation, there, is left out: a
    shingle of ideographs and a comma matched copies less often)."""
    if not _CJK_CHAR.search(folded):
        return folded.split()
    return _TOKEN.findall(folded)


def shingles(text: str) -> set[str]:
    """The distinct word 3-shingles of a text, as the signature reads them (for figures
    that explain it: the resemblance of two texts is the Jaccard index of these sets); a
    text of fewer tokens is one shingle."""
    found = tokens(normalize(text))
    if len(found) < SHINGLE_TOKENS:
        return {" ".join(found)} if found else set()
    return set(map(" ".join, zip(*(found[i:] for i in range(SHINGLE_TOKENS)), strict=False)))


def _exact_text(text: str, title: str) -> bytes:
    """What an exact digest reads: the own text and title, normalised, whitespace folded."""
    return (" ".join(normalize(text).split()) + "\0" + " ".join(normalize(title).split())).encode()


def exact_fingerprint(text: str, title: str, digest: Callable[[bytes], bytes]) -> int | None:
    """The public fingerprint of a short page: a digest of its own text and title (``digest``
    the fingerprint width's xxhash); None when it has no text of its own."""
    if not text.strip():
        return None
    return int.from_bytes(digest(b"exact\0" + _exact_text(text, title)), "big")


@dataclass(frozen=True)
class Evidence:
    """What the second test reads of a page: the own text its fingerprint was computed
    from, normalised (``normalize``), its title, whether that fingerprint is a short page's
    exact digest, and (for a short page) all of the page's text."""

    text: str
    title: str = ""
    exact: bool = False
    page: str = ""
    #: The sketch of the page's lines outside its main text, stored beside the signature
    #: (0: none).
    sketch: int = 0
    #: (key, signature) when it was signed where the page was read (a fingerprint worker
    #: signs under the key its crawl's index held then), so the crawl process need not.
    signed: tuple[int, int] | None = field(default=None, compare=False)


class Signer:
    """Signatures under one namespace's key (made once per key, reused for every page)."""

    def __init__(self, key: int) -> None:
        self.key = key

    def sign(self, evidence: Evidence) -> int:
        """A page's signature: a MinHash of its own text's shingles; a short page's, of
        its whole text (marked); a text of no token at all, a keyed digest of it and its
        title (marked, confirming only its equal)."""
        text, title = evidence.text, evidence.title
        folded = normalize(evidence.page or f"{text}\n{title}") if evidence.exact else text
        sketch = evidence.sketch << SIGNATURE_BITS
        signature = _minhash(folded, self.key)
        if signature is None:
            return xxhash.xxh3_128_intdigest(_exact_text(text, title), self.key) | _EXACT | sketch
        return signature | (_EXACT if evidence.exact else 0) | sketch


def _minhash(folded: str, key: int) -> int | None:
    """One-permutation 1-bit MinHash of the 3-shingles of the tokens of ``folded`` (a
    normalised text) under ``key``, bit 0 clear; None when it has no token. Compiled when
    the package was built with its C extension, interpreted otherwise: the same bits."""
    hashes = _native.hashes
    if hashes is not None:
        signature = hashes.minhash(folded, key)
        if signature is not NotImplemented:
            return cast(int | None, signature)
    from scrapy_simhash import _hashes_interpreted  # numpy: only off the compiled path

    found = tokens(folded)
    if not found:
        return None
    # Bit 0 (the last bin) is the exact-digest mark: a near signature keeps it clear.
    return _hashes_interpreted.minhash(found, key) & ~_EXACT


class Signing:
    """One page's signature under whichever key its index holds, made once per key: the
    key is the index's (it can change when a namespace is created anew mid-crawl), and a
    page may be asked about more than once (a claim, then its own URL)."""

    def __init__(self, evidence: Evidence | None) -> None:
        self.evidence = evidence
        self._signature = NO_SIGNATURE
        self._key: int | None = None
        if evidence is not None and evidence.signed is not None:
            self._key, self._signature = evidence.signed

    @property
    def signed(self) -> int:
        """The signature last made (NO_SIGNATURE before any, or without evidence)."""
        return self._signature

    def under(self, key: int) -> int:
        if self.evidence is not None and key != self._key:
            self._signature = Signer(key).sign(self.evidence)
            self._key = key
        return self._signature


def sketch_of(stored: int) -> int:
    """The sketch an index keeps above a page's signature (0: none)."""
    return stored >> SIGNATURE_BITS


def stored_signature(signature: int | None) -> int:
    """A signature read back from an index (None: the entry had none) to store again."""
    return NO_SIGNATURE if signature is None else signature
