"""Band layouts: how a fingerprint is cut into table keys so that neighbours always collide.

Pigeonhole (Manku, Jain, Das Sarma 2007): cut the f bits into b blocks. Two fingerprints at
Hamming distance <= k differ in at most k blocks, so at least b - k blocks are identical. A
table keyed by m blocks (one table per m-subset, C(b, m) tables) therefore always holds the
pair under the same key when b - m >= k. The basic layout is b = k + 1, m = 1: few tables
(cheap writes, little memory) but short keys, so buckets grow as N / 2^(f / (k + 1)). Larger
b with m = b - k gives longer keys (fewer candidates per probe) at the price of more tables
(more writes and memory per page). ``choose_layout`` picks between them from the expected
corpus size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

from scrapy_simhash.exceptions import ConfigurationError

#: Widths the index supports (the fingerprint module produces these).
SUPPORTED_BITS = (64, 128)
#: Layouts with more tables than this cost more in writes than any probe saving repays.
MAX_TABLES = 64
#: One stored band record costs memory for the life of the index and one more write per
#: stored page, a candidate check costs one XOR and popcount once; the cost model weighs a
#: table this many candidates. At 16 the basic k + 1 layout serves k=3 up to ~1.6M
#: expected pages (~100 candidates per probe, ~35 µs per in-memory probe at 1M), then 5x2
#: (10 tables: 2.5x the band records, ~3 candidates). 4 switched at ~400k, far too early
#: for Redis memory; a numpy sorted-table probe is faster with 4x1 up to ~10M, but there
#: a table costs a binary search, not a dict lookup.
TABLE_COST = 16.0


def split_bands(bits: int, blocks: int) -> tuple[tuple[int, int], ...]:
    """Cut ``bits`` into ``blocks`` contiguous (offset, width) pairs, widths differing by <= 1.

    Offsets count from the least significant bit; the wider blocks come first (high bits).
    """
    if not 1 <= blocks <= bits:
        raise ConfigurationError(f"cannot cut {bits} bits into {blocks} blocks")
    base, extra = divmod(bits, blocks)
    widths = [base + 1 if i < extra else base for i in range(blocks)]
    bands = []
    top = bits
    for width in widths:
        top -= width
        bands.append((top, width))
    return tuple(bands)


@dataclass(frozen=True)
class BandLayout:
    """``blocks`` blocks with one table per ``keyed``-subset of them."""

    bits: int
    blocks: int
    keyed: int
    masks: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.bits not in SUPPORTED_BITS:
            raise ConfigurationError(f"bits must be one of {SUPPORTED_BITS}, got {self.bits}")
        if not 1 <= self.keyed <= self.blocks:
            raise ConfigurationError(
                f"a layout keys tables by 1..blocks blocks, got {self.keyed} of {self.blocks}"
            )
        bands = split_bands(self.bits, self.blocks)
        masks = []
        for subset in combinations(range(self.blocks), self.keyed):
            mask = 0
            for index in subset:
                offset, width = bands[index]
                mask |= ((1 << width) - 1) << offset
            masks.append(mask)
        object.__setattr__(self, "masks", tuple(masks))

    @property
    def tables(self) -> int:
        """Number of tables, i.e. band records written per stored fingerprint."""
        return len(self.masks)

    @property
    def max_distance(self) -> int:
        """Largest k for which every pair within k shares a table key."""
        return self.blocks - self.keyed

    @property
    def key_bits(self) -> int:
        """Bits in the shortest table key (it bounds the expected bucket size)."""
        return min(mask.bit_count() for mask in self.masks)

    @property
    def name(self) -> str:
        """Short form recorded with the index, e.g. ``"4x1"`` (4 blocks, tables keyed by 1)."""
        return f"{self.blocks}x{self.keyed}"

    def keys(self, fingerprint: int) -> list[int]:
        """Return the table keys of ``fingerprint`` (the fingerprint masked per table)."""
        return [fingerprint & mask for mask in self.masks]

    def candidates_per_probe(self, size: int) -> float:
        """Expected stored fingerprints sharing a key with a random probe, over all tables."""
        return float(sum(size / 2.0 ** mask.bit_count() for mask in self.masks))

    @classmethod
    def parse(cls, bits: int, name: str) -> BandLayout:
        """Rebuild a layout from :attr:`name`."""
        blocks, sep, keyed = name.partition("x")
        if not sep or not blocks.isdigit() or not keyed.isdigit():
            raise ConfigurationError(f"a band layout is written BLOCKSxKEYED (e.g. 4x1), got {name!r}")
        return cls(bits, int(blocks), int(keyed))


def candidate_layouts(bits: int, max_distance: int) -> list[BandLayout]:
    """Every exact layout for k = ``max_distance`` with at most :data:`MAX_TABLES` tables."""
    check_distance(bits, max_distance)
    layouts = []
    blocks = max_distance + 1
    while blocks <= bits:
        keyed = blocks - max_distance
        if math.comb(blocks, keyed) > MAX_TABLES:
            break
        layouts.append(BandLayout(bits, blocks, keyed))
        blocks += 1
    return layouts


def choose_layout(
    bits: int, max_distance: int, *, expected_size: int | None = None, tables: int | None = None
) -> BandLayout:
    """Pick the band layout for k = ``max_distance``.

    ``tables`` asks for an exact table count (4, 10, 20... for k = 3). Otherwise, without an
    ``expected_size`` the basic k + 1 layout is used (least memory per page); with one, the
    layout minimising ``TABLE_COST * tables + candidates per probe`` at that size.
    """
    layouts = candidate_layouts(bits, max_distance)
    if tables is not None:
        for layout in layouts:
            if layout.tables == tables:
                return layout
        counts = ", ".join(str(layout.tables) for layout in layouts)
        raise ConfigurationError(
            f"no exact layout for max_distance={max_distance} has {tables} tables; "
            f"choose one of: {counts}"
        )
    if not expected_size:
        return layouts[0]
    return min(
        layouts,
        key=lambda layout: TABLE_COST * layout.tables + layout.candidates_per_probe(expected_size),
    )


def check_distance(bits: int, max_distance: int) -> None:
    """Reject distances the banding cannot serve (one block per bit at most)."""
    if not 0 <= max_distance < bits // 2:
        raise ConfigurationError(
            f"max_distance must be between 0 and {bits // 2 - 1} for {bits}-bit fingerprints, "
            f"got {max_distance}"
        )
