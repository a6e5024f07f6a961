"""The package's compiled parts, loaded in one place: the hashing here, the walk and the
read-out in :mod:`scrapy_simhash.text.compiled` (which says once, when a crawl starts, what
is missing).

Each part is built at install when the machine has a C compiler and gives the same results
as the interpreted code, faster; without it, the interpreted code runs.
"""

from __future__ import annotations

import importlib
from array import array
from types import ModuleType
from typing import Protocol, cast

#: What a crawl says when the installation has no compiled parts.
NOT_BUILT = (
    "the compiled extraction is not built in this installation (there was no C compiler "
    "when scrapy-simhash was installed): pages get the same fingerprints on the interpreted "
    "path, more slowly. To build it, install a C compiler and Python's headers (Debian: "
    "apt-get install gcc python3-dev) and install scrapy-simhash again"
)


def load(name: str) -> tuple[ModuleType | None, str]:
    """The compiled module ``name``, or None and what a crawl says of its absence."""
    try:
        return importlib.import_module(name), ""
    except ModuleNotFoundError:
        return None, NOT_BUILT
    except (ImportError, TypeError, ValueError) as exc:  # built against other packages
        return None, (
            f"the compiled extraction cannot be loaded ({exc}): pages get the same "
            "fingerprints on the interpreted path, more slowly. Install scrapy-simhash "
            "again to build it against the packages installed now"
        )


class Hashes(Protocol):
    """What ``_hashes.pyx`` offers: ``simhash`` and ``minhash`` answer NotImplemented
    for an input the interpreted code must answer; ``fold`` hands such input to
    unicodedata itself."""

    def fold(self, text: str) -> str: ...

    def own_lines(self, folded: str, folded_title: str) -> str: ...

    def line_hashes(self, text: str, folded: str) -> object: ...

    def count_tokens(self, folded: str) -> tuple[dict[str, int], dict[str, int]]: ...

    def simhash(self, features: dict[str, float], bits: int, seed: int) -> object: ...

    def minhash(self, folded: str, key: int) -> object: ...

    def counter_total(self, counts: array[int]) -> int: ...

    def counters_at_least(self, counts: array[int], least: float) -> list[int]: ...


_module, HASHES_MISSING = load("scrapy_simhash._hashes")
#: The compiled hashing (None: the interpreted code).
hashes = cast(Hashes | None, _module)
