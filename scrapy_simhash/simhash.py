"""SimHash maths: weighted features to a fingerprint, and fingerprints compared and written.

Charikar's SimHash: every feature's hash votes on each bit with its weight; a bit is set
where the votes for it outweigh half the total. Kept apart from the fingerprinting pipeline
(:mod:`scrapy_simhash.fingerprint`: extraction, features, limits, scheme ids) because these
few functions are all an index, a report or another tool needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import repeat
from typing import cast

import numpy as np
import xxhash

from scrapy_simhash import _native

# Weights are multiplied by this and rounded: sums of integers below 2**53 are exact in
# float64 whatever the order.
_FIXED_POINT = 1024.0
_HEX = re.compile("[0-9a-f]{1,32}")
# Offset of each digest byte position in the (position, byte value) weight table.
_BYTE_SLOTS = np.arange(16, dtype=np.intp) * 256
# Row v holds the 8 bits of byte value v, most significant first.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)


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
    return _simhash_interpreted(features, bits, seed)


def _simhash_interpreted(features: Mapping[str, float], bits: int, seed: int) -> int | None:
    if not features:
        return None
    digest = xxhash.xxh3_64_digest if bits == 64 else xxhash.xxh3_128_digest
    count, width = len(features), bits // 8
    names = map(str.encode, features)
    hashes = map(digest, names, repeat(seed)) if seed else map(digest, names)
    raw = b"".join(hashes)
    digests = np.frombuffer(raw, dtype=np.uint8).reshape(count, width)
    weights = np.fromiter(features.values(), dtype=np.float64, count=count)
    np.rint(np.multiply(weights, _FIXED_POINT, out=weights), out=weights)
    total = float(weights.sum())
    if total <= 0:
        return None
    # Sum the weights per (byte position, byte value), then expand each byte value to
    # its 8 bits: 8x less arithmetic than a features x bits matrix. Byte 0 of the
    # canonical digest is the most significant, so the votes come out in bit order.
    slots = (digests + _BYTE_SLOTS[:width]).ravel()
    per_value = np.bincount(slots, weights=np.repeat(weights, width), minlength=256 * width)
    votes = (per_value.reshape(width, 256) @ _BYTE_BITS).ravel()
    return int.from_bytes(np.packbits(votes > total / 2).tobytes(), "big")


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
