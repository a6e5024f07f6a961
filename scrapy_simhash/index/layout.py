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
from functools import lru_cache
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
            raise ConfigurationError(
                f"a band layout is written BLOCKSxKEYED (e.g. 4x1), got {name!r}"
            )
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


#: The recall a band layout states beyond the distance it was built for: a pair of
#: fingerprints further apart (its differing bits at random positions) is found only when a
#: table key holds none of them, and a candidate radius (SIMHASH_MAX_DISTANCE) is served
#: only where that happens at least this often (one pair in twenty). The basic 4x1 layout
#: of 64 bits finds 90% of the pairs at 4 bits, a third at 8, 5.9% at 13 and 0.3% at 20: a
#: radius of 20 would read as a promise the index keeps once in three hundred pairs.
RECALL_FLOOR = 0.05


def band_recall(layout: BandLayout, distance: int) -> float:
    """The share of pairs ``distance`` bits apart (the differing bits at random positions)
    that ``layout`` files under one table key: at least ``keyed`` of its blocks hold none
    of the differing bits. Counted exactly over the blocks' widths; 1.0 within the
    layout's own distance."""
    if distance <= layout.max_distance:
        return 1.0
    widths = tuple(width for _, width in split_bands(layout.bits, layout.blocks))
    return _recall(widths, layout.keyed, distance)


@lru_cache(maxsize=256)
def _recall(widths: tuple[int, ...], keyed: int, distance: int) -> float:
    # ways[(bits placed, clean blocks)]: placements of the differing bits block by block.
    ways: dict[tuple[int, int], int] = {(0, 0): 1}
    for width in widths:
        step: dict[tuple[int, int], int] = {}
        for (placed, clean), count in ways.items():
            for here in range(min(width, distance - placed) + 1):
                key = (placed + here, clean + (here == 0))
                step[key] = step.get(key, 0) + count * math.comb(width, here)
        ways = step
    found = sum(n for (placed, clean), n in ways.items() if placed == distance and clean >= keyed)
    return found / math.comb(sum(widths), distance)


def served_distance(layout: BandLayout, floor: float = RECALL_FLOOR) -> int:
    """The largest candidate radius ``layout`` serves at its stated recall: every pair
    within its own distance, and pairs further out found at least ``floor`` of the time."""
    distance = layout.max_distance
    while distance + 1 < layout.bits // 2 and band_recall(layout, distance + 1) >= floor:
        distance += 1
    return distance


def check_distance(bits: int, max_distance: int) -> None:
    """Reject distances the banding cannot serve (one block per bit at most)."""
    if not 0 <= max_distance < bits // 2:
        raise ConfigurationError(
            f"max_distance must be between 0 and {bits // 2 - 1} for {bits}-bit fingerprints, "
            f"got {max_distance}"
        )
