"""Whether the walk and the read-out run compiled, in one place.

The extension (``_compiled.pyx``) is built at install when the machine has a C compiler;
it reads the tree selectolax's lexbor built where it lies, and gives the same frames and
lines as the interpreted code, which asks selectolax's nodes, faster. Without it, or when
it does not read this selectolax's trees as selectolax does, the interpreted code runs,
and the crawl says so once when it starts (of the compiled hashing too,
:mod:`scrapy_simhash._native`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

from scrapy_simhash import _native

if TYPE_CHECKING:
    from scrapy_simhash.text.tree import Tree

#: What a crawl says when the installation has no compiled parts.
NOT_BUILT = _native.NOT_BUILT


class Extension(Protocol):
    """What ``_compiled.pyx`` offers (it has no stub: this is its type)."""

    def LexborTree(self, parser: Any) -> Tree: ...  # a class: lexbor's nodes read in place

    def run(self, walk: Any) -> None: ...

    def read(
        self,
        tree: Tree,
        containers: Iterable[int],
        stats: dict[int, list[Any]],
        link_density: float,
        links_only: bool,
        dense_max_chars: int | None,
        skip: Iterable[int],
    ) -> str: ...

    def Counts(self) -> Any: ...  # a class: the table subtree_chars fills

    def subtree_chars(self, el: int, counted: Any) -> int: ...

    def strip_junk(self, tree: Tree) -> None: ...

    def too_costly(
        self, data: bytes, max_scanned: int, max_reopened: int, max_compared: int
    ) -> int: ...

    def check_layout(self) -> str | None: ...

    def valid_utf8(self, data: bytes) -> bool: ...

    def role_word(self, token: str) -> int: ...

    def class_role(self, names: str) -> int: ...

    def has_c1_or_mark(self, text: str) -> bool: ...

    def credit_lines(self, text: str) -> list[int]: ...


def _load() -> tuple[Extension | None, str]:
    """The extension, or None and what a crawl says of its absence (or of the hashing's).

    The extension reads lexbor's nodes where selectolax's parser left them, with their
    layout and lexbor's numbering of names built in: it is used only once its reading of a
    page agrees with selectolax's own (``check_layout``)."""
    module, missing = _native.load("scrapy_simhash.text._compiled")
    if module is not None:
        refused = module.check_layout() if hasattr(module, "check_layout") else "an older build"
        if refused:
            return None, (
                f"the compiled walk does not read this selectolax's trees ({refused}); "
                "main text is read by the interpreted code, slower: reinstall scrapy-simhash "
                "to build it again"
            )
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
