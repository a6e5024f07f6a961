"""The index key of a response: its declared canonical URL, or its own URL.

A page fetched under one URL may name another as canonical (``/print/a.html`` names
``/a.html``); its key is then the canonical URL and the index is asked with ``claim``, so
the stored page under that key counts as its match. What this crawl has seen stored under
which key is the core's :class:`~scrapy_simhash.canonical.KeyMemory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.http import HtmlResponse, TextResponse

from scrapy_simhash.canonical import HEAD_END_BYTES, HEAD_SCAN_CHARS, KeyMemory, declared_canonical
from scrapy_simhash.index.keys import index_key

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response


def _only_scheme_differs(canonical: str, url: str) -> bool:
    a, b = urlsplit(canonical), urlsplit(url)
    return a.scheme != b.scheme and a._replace(scheme="") == b._replace(scheme="")


class CanonicalKeys:
    """Chooses index keys from requests and responses, remembering declarations."""

    def __init__(
        self, *, use_canonical: bool, canonicalize: bool, memory: KeyMemory | None = None
    ) -> None:
        self.use_canonical = use_canonical
        self.canonicalize = canonicalize
        self.memory = memory if memory is not None else KeyMemory()

    def _normal(self, url: str) -> str:
        if self.canonicalize:
            from w3lib.url import canonicalize_url

            url = canonicalize_url(url)
        return index_key(url)

    def normal(self, url: str) -> str:
        """The key of ``url`` itself (canonicalized if so configured, capped in length)."""
        return self._normal(url)

    def url_key(self, request: Request, url: str) -> str:
        """The key of a fetched URL itself, whatever its body declares (for answers with no
        page to read, such as a 404 or a failed download); InvalidKeyError as ``keys``."""
        forced = request.meta.get("simhash_key")
        return index_key(str(forced)) if forced else self._normal(url)

    def keys(self, request: Request, response: Response) -> tuple[str, str]:
        """(index key, the key of the fetched URL itself): they differ for a page naming
        another URL as canonical. ``meta["simhash_key"]`` overrides both. Keys are checked
        and capped in length (``index_key``): InvalidKeyError for one no backend can store."""
        forced = request.meta.get("simhash_key")
        if forced:
            key = index_key(str(forced))
            return key, key
        own = self._normal(response.url)
        canonical = self._declaration(response) if self.use_canonical else None
        if not canonical or _only_scheme_differs(canonical, response.url):
            # An http page naming its https URL (or the reverse) is that page: filed under
            # what was fetched, so that a revisit fetches a URL the site serves and `lookup`
            # never calls the kept page a dropped copy.
            return own, own
        key = self._normal(canonical)
        self.memory.declared(key)
        return key, own

    @staticmethod
    def _declaration(response: Response) -> str | None:
        links = [v.decode("latin-1") for v in response.headers.getlist(b"Link")]
        document = None
        head = response.body[:HEAD_SCAN_CHARS]
        if isinstance(response, HtmlResponse) or (
            isinstance(response, TextResponse) and b"<link" in head
        ):
            end = HEAD_END_BYTES.search(head)
            if end is not None:  # decode the head alone (not found: UTF-16, or no head end)
                head = head[: end.start()]
            document = head.decode(response.encoding, errors="replace")
        if not links and not document:
            return None
        return declared_canonical(response.url, document=document, link_headers=links)
