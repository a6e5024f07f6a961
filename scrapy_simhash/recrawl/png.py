"""A minimal line-chart PNG writer (stdlib only: zlib and struct).

Enough to look at freshness against budget without installing matplotlib: axes, one
coloured polyline with point markers per series, no text (the caller prints the legend).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence

#: Distinct colours, in the order series are drawn, with names for a printed legend.
PALETTE: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("grey", (128, 128, 128)),
    ("orange", (230, 120, 0)),
    ("purple", (140, 60, 170)),
    ("red", (210, 30, 30)),
    ("blue", (20, 90, 220)),
    ("green", (20, 150, 60)),
    ("black", (0, 0, 0)),
)

Series = Sequence[tuple[float, float]]


class _Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x: int, y: int, colour: tuple[int, int, int], radius: int = 1) -> None:
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                px, py = x + dx, y + dy
                if 0 <= px < self.width and 0 <= py < self.height:
                    i = (py * self.width + px) * 3
                    self.pixels[i : i + 3] = bytes(colour)

    def line(self, a: tuple[int, int], b: tuple[int, int], colour: tuple[int, int, int]) -> None:
        steps = max(abs(b[0] - a[0]), abs(b[1] - a[1]), 1)
        for s in range(steps + 1):
            x = a[0] + (b[0] - a[0]) * s // steps
            y = a[1] + (b[1] - a[1]) * s // steps
            self.dot(x, y, colour, 1)

    def png(self) -> bytes:
        rows = b"".join(
            b"\x00" + bytes(self.pixels[y * self.width * 3 : (y + 1) * self.width * 3])
            for y in range(self.height)
        )

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9))
            + chunk(b"IEND", b"")
        )


def line_chart(series: Sequence[Series], *, width: int = 640, height: int = 400) -> bytes:
    """Return a PNG of the series (x, y); y from 0 to 1 (freshness), x scaled to fit."""
    canvas = _Canvas(width, height)
    margin = 30
    xs = [x for points in series for x, _ in points] or [0.0, 1.0]
    x_lo, x_hi = min(xs), max(xs)
    span = (x_hi - x_lo) or 1.0

    def at(x: float, y: float) -> tuple[int, int]:
        px = margin + round((x - x_lo) / span * (width - 2 * margin))
        py = height - margin - round(min(1.0, max(0.0, y)) * (height - 2 * margin))
        return px, py

    axis = (0, 0, 0)
    canvas.line(at(x_lo, 0.0), at(x_hi, 0.0), axis)
    canvas.line(at(x_lo, 0.0), at(x_lo, 1.0), axis)
    for tick in range(1, 10):  # light grid every 0.1 of freshness
        y = at(x_lo, tick / 10)[1]
        for px in range(margin, width - margin, 4):
            canvas.dot(px, y, (210, 210, 210), 0)
    for (_, colour), points in zip(PALETTE, series, strict=False):
        pixels = [at(x, y) for x, y in points]
        for a, b in itertools.pairwise(pixels):
            canvas.line(a, b, colour)
        for p in pixels:
            canvas.dot(p[0], p[1], colour, 3)
    return canvas.png()
