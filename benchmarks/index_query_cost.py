"""Query cost as the index grows: candidates per probe and time per query, per layout.

    python3 benchmarks/index_query_cost.py [--sizes 100000,1000000,10000000]

Up to 10M fingerprints do not fit the pure-Python MemoryIndex in reasonable RAM/time, so
this benchmark uses a compact in-benchmark representation built from the same
``BandLayout``: per table, the fingerprints sorted by their table key (numpy uint64), so a
probe is one binary search per table plus an exact popcount over the candidates. The
real MemoryIndex is timed beside it at the smallest size.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scrapy_simhash.index import BandLayout, open_index

K = 3


class SortedTables:
    def __init__(self, layout: BandLayout, fps: np.ndarray) -> None:
        self.layout = layout
        self.masks = [np.uint64(mask) for mask in layout.masks]
        self.tables = []
        for mask in self.masks:
            keys = fps & mask
            order = np.argsort(keys, kind="stable")
            self.tables.append((keys[order], fps[order]))

    def query(self, probe: int) -> tuple[int, int]:
        value = np.uint64(probe)
        candidates = 0
        found: set[int] = set()
        for (keys, fps), mask in zip(self.tables, self.masks, strict=True):
            key = value & mask
            lo = np.searchsorted(keys, key, "left")
            hi = np.searchsorted(keys, key, "right")
            candidates += int(hi - lo)
            for other in fps[lo:hi].tolist():
                if (other ^ probe).bit_count() <= K:
                    found.add(other)
        return candidates, len(found)


def measure(layout: BandLayout, fps: np.ndarray, probes: list[int]) -> tuple[float, float]:
    tables = SortedTables(layout, fps)
    started = time.perf_counter()
    total = sum(tables.query(p)[0] for p in probes)
    elapsed = time.perf_counter() - started
    return total / len(probes), elapsed / len(probes) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--probes", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    layouts = [BandLayout(64, 4, 1), BandLayout(64, 5, 2)]
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"k={K}, 64 bits; candidates/probe (predicted) and µs/query")
    print(
        f"{'pages':>11} "
        + " ".join(f"{l.name + ' (' + str(l.tables) + ' tables)':>34}" for l in layouts)
        + f" {'ratio µs':>9}"
    )
    for size in sizes:
        fps = rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
        # Half the probes are near-duplicates of stored pages, half random.
        probes = [int(x) ^ 0b1001 for x in fps[: args.probes // 2]] + [
            int(x) for x in rng.integers(0, 2**64, args.probes // 2, dtype=np.uint64)
        ]
        cells = []
        times = []
        for layout in layouts:
            cands, micros = measure(layout, fps, probes)
            times.append(micros)
            cells.append(
                f"{cands:>8.1f} ({layout.candidates_per_probe(size):>7.1f}) {micros:>9.1f} µs"
            )
        print(
            f"{size:>11,} " + " ".join(f"{c:>34}" for c in cells) + f" {times[0] / times[1]:>9.2f}"
        )
        del fps
    size = sizes[0]
    with open_index("memory://", max_distance=K) as index:
        values = rng.integers(0, 2**64, size=size, dtype=np.uint64).tolist()
        for i, value in enumerate(values):
            index.observe(str(i), value)
        started = time.perf_counter()
        for value in values[: args.probes]:
            index.query(value ^ 0b1001)
        micros = (time.perf_counter() - started) / args.probes * 1e6
    print(f"MemoryIndex (4x1) at {size:,}: {micros:.1f} µs/query")


if __name__ == "__main__":
    main()
