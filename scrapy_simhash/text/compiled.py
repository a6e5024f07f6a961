"""Whether the walk and the read-out run compiled, in one place.

The extension (``_compiled.pyx``) is built at install when the machine has a C compiler;
it gives the same frames and lines as the interpreted code, faster. Without it, the
interpreted code runs, and the crawl says so once when it starts (of the compiled hashing
too, :mod:`scrapy_simhash._native`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

from scrapy_simhash import _native

if TYPE_CHECKING:
    from lxml import etree

#: What a crawl says when the installation has no compiled parts.
NOT_BUILT = _native.NOT_BUILT


class Extension(Protocol):
    """What ``_compiled.pyx`` offers (it has no stub: this is its type)."""

    def run(self, walk: Any) -> None: ...

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

    def Counts(self) -> Any: ...  # a class: the table subtree_chars fills

    def subtree_chars(self, el: etree._Element, counted: Any) -> int: ...

    def without_closing_roots(self, data: bytes) -> bytes: ...

    def valid_utf8(self, data: bytes) -> bool: ...

    def role_word(self, token: str) -> int: ...

    def class_role(self, names: str) -> int: ...

    def has_c1_or_mark(self, text: str) -> bool: ...


def _load() -> tuple[Extension | None, str]:
    """The extension, or None and what a crawl says of its absence (or of the hashing's)."""
    module, missing = _native.load("scrapy_simhash.text._compiled")
    return cast(Extension | None, module), missing or _native.HASHES_MISSING


#: The extension the walk and the read-out use now (None: the interpreted code).
extension, MISSING = _load()

#: Whether this installation has every compiled part (MISSING says why not).
AVAILABLE = extension is not None and _native.hashes is not None


@contextmanager
def interpreted() -> Iterator[None]:
    """Run the interpreted walk, read-out and hashing within the block (tests and
    benchmarks compare the two paths)."""
    global extension
    saved = extension, _native.hashes
    extension, _native.hashes = None, None
    try:
        yield
    finally:
        extension, _native.hashes = saved
