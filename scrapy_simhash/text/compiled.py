"""Whether the walk and the read-out run compiled, in one place.

The extension (``_compiled.pyx``) is built at install when the machine has a C compiler;
it gives the same frames and lines as the interpreted code, faster. Without it, the
interpreted code runs, and the crawl says so once when it starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from lxml import etree


class Extension(Protocol):
    """What ``_compiled.pyx`` offers (its stub is ``_compiled.pyi``)."""

    def run(self, walk: Any, score_paragraph: Callable[..., None]) -> None: ...

    def address(self, el: etree._Element) -> int: ...

    def read(
        self,
        containers: Iterable[etree._Element],
        stats: dict[Any, list[Any]],
        link_density: float,
        links_only: bool,
        dense_max_chars: int | None,
        skip: Iterable[etree._Element],
    ) -> str: ...

    def subtree_chars(self, el: etree._Element, counted: dict[int, int]) -> int: ...


#: What a crawl says when the installation has no extension.
NOT_BUILT = (
    "the compiled extraction is not built in this installation (there was no C compiler "
    "when scrapy-simhash was installed): pages get the same fingerprints on the interpreted "
    "path, more slowly. To build it, install a C compiler and Python's headers (Debian: "
    "apt-get install gcc python3-dev) and install scrapy-simhash again"
)


def _load() -> tuple[Extension | None, str]:
    """The extension, or None and what a crawl says of its absence."""
    try:
        module = importlib.import_module("scrapy_simhash.text._compiled")
    except ModuleNotFoundError:
        return None, NOT_BUILT
    except (ImportError, TypeError, ValueError) as exc:  # built against another lxml
        return None, (
            f"the compiled extraction cannot be loaded ({exc}): pages get the same "
            "fingerprints on the interpreted path, more slowly. Install scrapy-simhash "
            "again to build it against the lxml installed now"
        )
    return cast(Extension, module), ""


#: The extension the walk and the read-out use now (None: the interpreted code).
extension, MISSING = _load()

#: Whether this installation has the compiled extension (MISSING says why not).
AVAILABLE = extension is not None


@contextmanager
def interpreted() -> Iterator[None]:
    """Run the interpreted walk and read-out within the block (tests and benchmarks
    compare the two paths)."""
    global extension
    saved, extension = extension, None
    try:
        yield
    finally:
        extension = saved
