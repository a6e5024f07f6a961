"""The index key of a response: its declared canonical URL, and who stored it first.

A page fetched under one URL may name another as canonical (``/print/a.html`` names
``/a.html``); its key is then the canonical URL and the index is asked with ``claim``, so
the stored page under that key counts as its match. One case needs memory beyond the
index: a copy arrived first and was stored under the canonical URL, and then the canonical
URL itself arrives. To the index that looks like a re-fetch of the same key (a change
observation), yet it is the second page of one cluster in this crawl. So the keys stored by
another URL during this crawl are remembered here (bounded), and such an arrival is a
claim too. A later crawl starts with an empty memory, so a re-fetch of the canonical URL is
again a change observation.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse, TextResponse

from scrapy_simhash.canonical import HEAD_SCAN_CHARS, declared_canonical
from scrapy_simhash.index.keys import index_key

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

#: Keys stored by another URL, and keys declared canonical, remembered per crawl (each; the
#: oldest are forgotten first).
MEMORY_ENTRIES = 100_000


class CanonicalKeys:
    """Chooses index keys and remembers keys first stored by another URL in this crawl."""

    def __init__(self, *, use_canonical: bool, canonicalize: bool) -> None:
        self.use_canonical = use_canonical
        self.canonicalize = canonicalize
        self._held: OrderedDict[str, str] = OrderedDict()
        #: Keys some page of this crawl declared canonical: a URL preference never renames them.
        self._declared: OrderedDict[str, None] = OrderedDict()

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
        if not canonical:
            return own, own
        key = self._normal(canonical)
        _remember(self._declared, key, None)
        return key, own

    def is_declared(self, key: str) -> bool:
        return key in self._declared

    @staticmethod
    def _declaration(response: Response) -> str | None:
        links = [v.decode("latin-1") for v in response.headers.getlist(b"Link")]
        document = None
        if isinstance(response, HtmlResponse) or (
            isinstance(response, TextResponse) and b"<link" in response.body[:HEAD_SCAN_CHARS]
        ):
            head = response.body[:HEAD_SCAN_CHARS]
            document = head.decode(response.encoding, errors="replace")
        if not links and not document:
            return None
        return declared_canonical(response.url, document=document, link_headers=links)

    def needs_claim(self, key: str, own: str) -> bool:
        """Whether the index must count an entry already under ``key`` as a match."""
        return key != own or key in self._held

    def stored_by(self, key: str, own: str) -> None:
        """``own`` was stored under ``key``: remember it if that is another URL."""
        if key == own:
            self._held.pop(key, None)
            return
        _remember(self._held, key, own)


def _remember(memory: OrderedDict[str, Any], key: str, value: Any) -> None:
    """Add ``key`` as the newest entry, forgetting the oldest beyond MEMORY_ENTRIES."""
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > MEMORY_ENTRIES:
        memory.popitem(last=False)
