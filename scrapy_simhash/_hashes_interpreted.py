"""SimHash, the signature's MinHash and the template memory's counter scans in Python and
numpy: what an install without the compiled hashing (``_hashes.pyx``) runs, what the
compiled code gives an input back to when it cannot match it exactly, and the reference
the compiled code is held to (``tests/unit/test_hashes.py``).

numpy is imported here only, and this module only when it is needed: a process on the
compiled path (a fingerprint worker, the crawl process) never loads numpy and its BLAS
threads.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from itertools import repeat

import numpy as np
import xxhash

# Weights are multiplied by this and rounded: sums of integers below 2**53 are exact in
# float64 whatever the order.
_FIXED_POINT = 1024.0
# Offset of each digest byte position in the (position, byte value) weight table.
_BYTE_SLOTS = np.arange(16, dtype=np.intp) * 256
# Row v holds the 8 bits of byte value v, most significant first.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)

#: The signature's bins and tokens a shingle (``confirm.SIGNATURE_BITS`` and
#: ``SHINGLE_TOKENS``; a test holds them equal: this module does not import ``confirm``,
#: which imports it).
BINS = 128
SHINGLE_TOKENS = 3
_BIN_SHIFT = np.uint64(64 - 7)  # the top 7 bits of a shingle's hash pick its bin
_VALUE_MASK = np.uint64((1 << 57) - 1)
_EMPTY = np.uint64(1 << 57)
_BIN_NUMBERS = np.arange(BINS)
#: Mixed into each bin's minimum before its bit is taken (one odd multiple per bin).
_BIN_SALTS = np.arange(1, BINS + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
_ONE = np.uint64(1)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_33 = np.uint64(33)


def simhash(features: Mapping[str, float], bits: int, seed: int) -> int | None:
    """:func:`scrapy_simhash.simhash.simhash`."""
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


def minhash(found: list[str], key: int) -> int:
    """The bits of ``confirm._minhash`` for the tokens ``found`` (at least one), the last
    bin's included.

    Each token is hashed once under the key; a shingle's hash mixes its three tokens'
    (rotated, XORed, then the MurmurHash3 finaliser) in numpy, not a string and a hash
    call per shingle. A repeated shingle changes no minimum, so none is removed.
    """
    count = len(found)
    hashed = np.fromiter(
        map(xxhash.xxh3_64_intdigest, map(str.encode, found), repeat(key)),
        dtype=np.uint64,
        count=count,
    )
    size = SHINGLE_TOKENS
    if count >= size:
        mixed = hashed[: count - size + 1].copy()
        for at in range(1, size):
            mixed ^= _rotate(hashed[at : count - size + 1 + at], (21 * at) % 64)
        hashed = _mix(mixed)
    mins = np.full(BINS, _EMPTY, dtype=np.uint64)
    np.minimum.at(mins, (hashed >> _BIN_SHIFT).astype(np.intp), hashed & _VALUE_MASK)
    empty = mins == _EMPTY
    if empty.any():
        # Rotation densification: an empty bin takes the next filled bin's minimum to
        # its right (circularly). The bit is then drawn from the minimum and the bin's
        # own number, so the bins that borrow one minimum still give independent bits.
        filled = np.flatnonzero(~empty)
        mins = mins[filled[np.searchsorted(filled, _BIN_NUMBERS) % len(filled)]]
    bits = (_mix(mins ^ _BIN_SALTS) & _ONE).astype(np.uint8)
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def _rotate(values: np.ndarray, by: int) -> np.ndarray:
    return (values << np.uint64(by)) | (values >> np.uint64(64 - by))


def _mix(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: every output bit depends on every input bit."""
    values ^= values >> _33
    values *= _M1
    values ^= values >> _33
    values *= _M2
    values ^= values >> _33
    return values


def counter_total(counts: array[int]) -> int:
    """The sum of a host's 16-bit counters (``template._above_load``)."""
    return int(np.frombuffer(counts, dtype=np.uint16).sum(dtype=np.int64))


def counters_at_least(counts: array[int], least: float) -> list[int]:
    """The buckets whose counter is ``least`` or more, in order (``HostMemory.template``)."""
    found: list[int] = np.flatnonzero(np.frombuffer(counts, dtype=np.uint16) >= least).tolist()
    return found
