"""Reference fingerprints the benchmark compares against.

* ``simhash`` (PyPI, 1e0ng): ``Simhash(text)`` on naive tag-stripped text, the usual
  "pip install simhash" approach.
* jieba + md5: the classic Chinese-blog SimHash: ``jieba.lcut`` words, md5 of each word,
  term-frequency weights, on the same naive text.

Both decode the body as Scrapy does (``w3lib.encoding.html_to_unicode``).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter

import numpy as np
from _pairs import naive_text
from w3lib.encoding import html_to_unicode

_PUNCT = re.compile(r"^[\W_]+$", re.UNICODE)


def page_text(body: bytes) -> str:
    return naive_text(html_to_unicode(None, body)[1])


def simhash_lib(body: bytes) -> int | None:
    text = page_text(body)
    return _simhash_class()(text).value if text else None


@functools.cache
def _simhash_class() -> type:
    """The library's Simhash, patched for NumPy 2 (weights above 255 overflowed uint8)."""
    from simhash import Simhash

    class PatchedSimhash(Simhash):  # type: ignore[misc]
        def _bitarray_from_bytes(self, b: bytes) -> np.ndarray:
            return np.unpackbits(np.frombuffer(b, dtype=">B")).astype(np.int64)

    return PatchedSimhash


def jieba_md5(body: bytes) -> int | None:
    import jieba

    words = [w for w in jieba.lcut(page_text(body)) if w.strip() and not _PUNCT.match(w)]
    if not words:
        return None
    counts = Counter(words)
    digests = b"".join(hashlib.md5(w.encode("utf-8")).digest()[:8] for w in counts)
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(len(counts), 8), axis=1)
    weights = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    votes = weights @ (2.0 * bits - 1.0)
    return int.from_bytes(np.packbits(votes > 0).tobytes(), "big")
