"""SimHash maths: weighted features to a fingerprint, and fingerprints compared and written.

Charikar's SimHash: every feature's hash votes on each bit with its weight; a bit is set
where the votes for it outweigh half the total. Kept apart from the fingerprinting pipeline
(:mod:`scrapy_simhash.fingerprint`: extraction, features, limits, scheme ids) because these
few functions are all an index, a report or another tool needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import cast

from scrapy_simhash import _native

_HEX = re.compile("[0-9a-f]{1,32}")


def simhash(features: Mapping[str, float], bits: int, seed: int = 0) -> int | None:
    """SimHash of weighted features under xxh3 of ``bits`` bits (64 or 128) seeded with
    ``seed``; None when there are none or their weights sum to nothing (never all zeros).

    Compiled when the package was built with its C extension, interpreted otherwise; both
    give the same fingerprints."""
    hashes = _native.hashes
    if hashes is not None and type(features) is dict:
        found = hashes.simhash(features, bits, seed)
        if found is not NotImplemented:
            return cast(int | None, found)
    from scrapy_simhash import _hashes_interpreted  # numpy: only off the compiled path

    return _hashes_interpreted.simhash(features, bits, seed)


def hamming(a: int, b: int) -> int:
    """Number of differing bits."""
    return (a ^ b).bit_count()


def similarity(a: int, b: int, bits: int = 64) -> float:
    """Share of equal bits, 0..1 (1.0 = identical fingerprints)."""
    return 1.0 - hamming(a, b) / bits


def to_hex(fingerprint: int, bits: int = 64) -> str:
    """Fixed-width lowercase hex (16 digits for 64 bits, 32 for 128)."""
    if not 0 <= fingerprint < 1 << bits:
        raise ValueError(f"fingerprint does not fit in {bits} bits: {fingerprint}")
    return format(fingerprint, f"0{bits // 4}x")


def from_hex(text: str) -> int:
    """Parse a fingerprint written by :func:`to_hex` (an ``0x`` prefix is accepted)."""
    cleaned = text.strip().lower().removeprefix("0x")
    if not _HEX.fullmatch(cleaned):
        raise ValueError(f"not a 64- or 128-bit hex fingerprint: {text!r}")
    return int(cleaned, 16)
