"""A one-line progress bar on stderr, drawn only where a person is watching."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``[#####.....]  120/1000 files`` redrawn in place at most ten times a second."""

    def __init__(
        self, total: int, *, enabled: bool, stream: TextIO | None = None, width: int = 30
    ) -> None:
        self.total = total
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self.width = width
        self.done = 0
        self._drawn = 0.0

    def advance(self, step: int = 1) -> None:
        self.done += step
        now = time.monotonic()
        if self.enabled and (now - self._drawn >= 0.1 or self.done >= self.total):
            self._drawn = now
            filled = self.width * self.done // self.total
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r[{bar}] {self.done}/{self.total} files")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
