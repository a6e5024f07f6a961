"""The page's tree as the walk, the choice of containers and the read-out see it: lexbor's
(through selectolax), its elements named by their node's address.

Both paths read one tree. The compiled one (``_compiled.LexborTree``) reads lexbor's nodes
where they lie; :class:`PureTree` asks selectolax's nodes for the same things, and is the
reference the compiled reading is held to. The text of an element's subtree is its text
nodes' in document order; comments are passed over as if absent, so that the text on
either side of one reads as one run, as a reader sees it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Protocol

# XPath's normalize-space: runs of these four characters are one space.
_XML_SPACE_RUN = re.compile("[ \t\r\n]+")


class Tree(Protocol):
    """What is asked of a page's tree (an element is its node's address)."""

    #: selectolax's parser, which holds the document.
    parser: Any
    #: The root element (<html>).
    root: int
    #: The body element (the root element when the page has none).
    body: int

    def tag(self, n: int) -> str: ...

    def get(self, n: int, name: str) -> str | None: ...

    def parent(self, n: int) -> int | None: ...

    def children(self, n: int) -> list[int]: ...

    def text_content(self, n: int) -> str: ...

    def descendants(self, n: int, tags: frozenset[str]) -> list[int]: ...


class PureTree:
    """A page's tree read through selectolax's nodes (the interpreted path)."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser  # holds the document: the addresses are its nodes'
        self.root: int = parser.root.mem_id
        body = parser.body or parser.root
        self.body: int = body.mem_id
        self._nodes: dict[int, Any] = {self.root: parser.root, self.body: body}

    def node(self, n: int) -> Any:
        """The selectolax node of an element met before (the walk meets them all)."""
        return self._nodes[n]

    def known(self, node: Any) -> int:
        """``node``'s address, remembering the node."""
        n: int = node.mem_id
        self._nodes[n] = node
        return n

    def tag(self, n: int) -> str:
        return str(self._nodes[n].tag)

    def get(self, n: int, name: str) -> str | None:
        return attribute(self._nodes[n].attributes, name)

    def parent(self, n: int) -> int | None:
        parent = self._nodes[n].parent
        if parent is None or not parent.is_element_node:
            return None
        return self.known(parent)

    def children(self, n: int) -> list[int]:
        found = []
        child = self._nodes[n].first_child
        while child is not None:
            if child.is_element_node:
                found.append(self.known(child))
            child = child.next
        return found

    def text_content(self, n: int) -> str:
        return "".join(_texts(self._nodes[n]))

    def descendants(self, n: int, tags: frozenset[str]) -> list[int]:
        """The elements under ``n`` whose tag is one of ``tags``, in document order."""
        return [self.known(node) for node in _elements_under(self._nodes[n]) if node.tag in tags]


def _nodes_under(top: Any) -> Iterator[Any]:
    """Every node under ``top``, in document order."""
    node = top.first_child
    while node is not None:
        yield node
        if node.is_element_node and node.first_child is not None:
            node = node.first_child
            continue
        while node.next is None:
            node = node.parent
            if node is None or node.mem_id == top.mem_id:
                return
        node = node.next


def _texts(top: Any) -> Iterator[str]:
    """The text of every text node under ``top``, in document order."""
    return (node.text_content or "" for node in _nodes_under(top) if node.is_text_node)


def _elements_under(top: Any) -> Iterator[Any]:
    """Every element under ``top``, in document order."""
    return (node for node in _nodes_under(top) if node.is_element_node)


def run_after(node: Any) -> tuple[list[str], Any]:
    """The text nodes from ``node`` on, up to the first element (passing comments), and
    that element (None: none)."""
    pieces = []
    while node is not None:
        if node.is_text_node:
            pieces.append(node.text_content or "")
        elif node.is_element_node:
            return pieces, node
        node = node.next
    return pieces, None


def attribute(attributes: dict[str, str | None], name: str) -> str | None:
    """An attribute's value from selectolax's ``Node.attributes`` (None: absent; '' for an
    attribute without a value, which selectolax gives as None)."""
    if name not in attributes:
        return None
    value = attributes[name]
    return "" if value is None else value


def normalized_length(text: str) -> int:
    """XPath's ``string-length(normalize-space(text))``."""
    return len(_XML_SPACE_RUN.sub(" ", text).strip(" "))
