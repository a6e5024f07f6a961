"""Which URL names a page: the canonical URL a site declares for it.

Sites publish one article under many URLs (print and AMP views, tracking parameters, session
ids) and most say which one is the real one, with ``<link rel="canonical" href="...">`` in
the page or a ``Link: <...>; rel="canonical"`` header. Keying the index by that URL makes the
index, the drop record, recrawl scheduling and reports speak of the same URL whichever copy
happened to be fetched first.

A declaration is only believed within one site: a page cannot claim another site's URL
(scrapers and hijacked pages do exactly that). "One site" is the registrable domain,
approximated without a public-suffix list: the last two labels of the host, or the last
three when the last two are a known multi-part suffix such as ``co.uk`` or a known shared
host such as ``github.io``; IP addresses and single-label hosts must match exactly. The
approximation errs on the side of "same site" only for unlisted shared-host suffixes.

When the page and the header disagree, neither is believed (as search engines do with
conflicting hints): the page keeps its own URL.

Pages that declare nothing still come in copies; ``url_rank`` orders such copies by a
configurable preference (no print/AMP view, fewer parameters), so the cluster can be named
by its cleanest URL whichever copy arrived first.

A mirror on another site declares nothing believable; ``host_preferred`` ranks URLs by a
list of hosts the user prefers (the `prefer_hosts` option), so a page is named by its own
site's URL even when the mirror arrived first.
"""

from __future__ import annotations

import html
import ipaddress
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

if TYPE_CHECKING:
    from scrapy_simhash.index.drops import DropRecord

#: Two-label suffixes under which each name is a separate site (a small, common subset of
#: the public-suffix list: country second-level domains and shared hosting).
MULTI_PART_SUFFIXES = frozenset(
    [
        "co.uk",
        "org.uk",
        "ac.uk",
        "gov.uk",
        "me.uk",
        "net.uk",
        "ltd.uk",
        "plc.uk",
        "com.au",
        "net.au",
        "org.au",
        "edu.au",
        "gov.au",
        "co.nz",
        "org.nz",
        "govt.nz",
        "co.jp",
        "ne.jp",
        "or.jp",
        "ac.jp",
        "go.jp",
        "co.kr",
        "or.kr",
        "go.kr",
        "com.cn",
        "net.cn",
        "org.cn",
        "gov.cn",
        "edu.cn",
        "ac.cn",
        "com.hk",
        "org.hk",
        "com.tw",
        "org.tw",
        "edu.tw",
        "com.sg",
        "com.my",
        "co.id",
        "co.in",
        "net.in",
        "org.in",
        "co.th",
        "co.za",
        "org.za",
        "com.br",
        "net.br",
        "org.br",
        "com.ar",
        "com.mx",
        "com.tr",
        "com.ua",
        "co.il",
        "github.io",
        "gitlab.io",
        "blogspot.com",
        "wordpress.com",
        "tumblr.com",
        "herokuapp.com",
        "appspot.com",
        "netlify.app",
        "vercel.app",
        "pages.dev",
        "web.app",
        "firebaseapp.com",
        "azurewebsites.net",
        "cloudfront.net",
        "s3.amazonaws.com",
    ]
)

#: The document head is where a canonical link belongs; scanning stops at the body.
HEAD_SCAN_CHARS = 65536

_LINK_TAG = re.compile(r"<link\b([^>]*)>", re.IGNORECASE)
_HEAD_END = re.compile(r"</head\s*>|<body[\s>]", re.IGNORECASE)
#: The same in the bytes of a page in an ASCII-compatible charset (in the multi-byte ones a
#: web page uses, such as UTF-8, GBK, Big5 or Shift_JIS, no byte of another character is "<").
HEAD_END_BYTES = re.compile(_HEAD_END.pattern.encode("ascii"), re.IGNORECASE)
_ATTRIBUTE = re.compile(
    r"""([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""", re.DOTALL
)
_HEADER_LINK = re.compile(r"<([^>]*)>\s*((?:;[^,<]*)*)")
_HEADER_PARAM = re.compile(r""";\s*([^\s=;]+)\s*=\s*(?:"([^"]*)"|([^\s;,]+))""")


def _attributes(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, double, single, bare in _ATTRIBUTE.findall(text):
        found.setdefault(name.lower(), html.unescape(double or single or bare))
    return found


def html_canonical(document: str) -> str | None:
    """The ``href`` of the first ``<link rel="canonical">`` in the head of ``document``."""
    head = document[:HEAD_SCAN_CHARS]
    end = _HEAD_END.search(head)
    if end is not None:
        head = head[: end.start()]
    for match in _LINK_TAG.finditer(head):
        text = match.group(1)
        # Most heads link dozens of style sheets and preloads: read only the tags that can
        # say "canonical" (in letters, or in character references).
        if "&" not in text and "canonical" not in text.lower():
            continue
        attributes = _attributes(text)
        if "canonical" in attributes.get("rel", "").lower().split():
            href = attributes.get("href", "").strip()
            if href:
                return href
    return None


def header_canonical(values: Iterable[str]) -> str | None:
    """The target of the first ``rel="canonical"`` link in ``Link`` header values."""
    for value in values:
        for target, params in _HEADER_LINK.findall(value):
            for name, quoted, bare in _HEADER_PARAM.findall(params):
                rels = (quoted or bare).lower().split()
                if name.lower() == "rel" and "canonical" in rels and target.strip():
                    return str(target).strip()
    return None


@lru_cache(maxsize=4096)
def site_of(host: str) -> str:
    """The registrable domain of ``host``, as approximated in the module docstring.

    Remembered per host: a crawl asks about the same few hosts for every page, and telling
    a name from an IP address costs an exception each time."""
    host = host.lower().rstrip(".")
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return host
    labels = host.split(".")
    if len(labels) <= 2:
        return host
    keep = 3 if ".".join(labels[-2:]) in MULTI_PART_SUFFIXES else 2
    return ".".join(labels[-keep:])


def same_site(url: str, other: str) -> bool:
    """Whether two http(s) URLs belong to one site (scheme and port may differ)."""
    try:
        a, b = urlsplit(url).hostname, urlsplit(other).hostname
    except ValueError:
        return False
    return bool(a) and bool(b) and site_of(a or "") == site_of(b or "")


def _absolute(page_url: str, href: str) -> str | None:
    try:
        parts = urlsplit(urljoin(page_url, href.strip()))
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))


def declared_canonical(
    page_url: str, *, document: str | None = None, link_headers: Iterable[str] = ()
) -> str | None:
    """The canonical URL a page declares for itself, if it is believable.

    ``None`` when the page declares none, the page and the header disagree, or the target is
    not an http(s) URL of the same site. A page declaring itself returns its own URL (with
    any fragment removed).
    """
    declared = [
        _absolute(page_url, href)
        for href in (
            html_canonical(document) if document else None,
            header_canonical(link_headers),
        )
        if href
    ]
    if not declared or None in declared or len(set(declared)) > 1:
        return None
    target = declared[0]
    if target is None or not same_site(page_url, target):
        return None
    return target


#: Path segments and query parameters that mark a print or AMP view of a page.
VIEW_MARKERS = frozenset({"print", "printable", "amp"})

#: Rules naming which of two copies represents their cluster, best first (see url_rank).
PREFERENCE_RULES = ("no_print_amp", "fewer_params")


def _view_flag(parts: SplitResult) -> int:
    segments = {s.lower() for s in parts.path.split("/")}
    names = {pair.split("=", 1)[0].lower() for pair in parts.query.split("&") if pair}
    return int(bool((segments | names) & VIEW_MARKERS))


def _params(parts: SplitResult) -> int:
    query = len([pair for pair in parts.query.split("&") if pair])
    return query + parts.path.count(";")


_RULES: dict[str, Callable[[SplitResult], int]] = {
    "no_print_amp": _view_flag,
    "fewer_params": _params,
}


def check_rules(rules: Iterable[str]) -> tuple[str, ...]:
    """``rules`` if every one is known, else a ConfigurationError naming the known ones."""
    from scrapy_simhash.exceptions import ConfigurationError

    chosen = tuple(rules)
    unknown = [rule for rule in chosen if rule not in _RULES]
    if unknown:
        raise ConfigurationError(
            f"unknown URL preference rule(s) {unknown}: use any of {', '.join(_RULES)}"
        )
    return chosen


def url_rank(url: str, rules: Iterable[str] = PREFERENCE_RULES) -> tuple[int, ...]:
    """Sort key of a URL among copies of one page, lower is better: ``no_print_amp`` puts
    URLs without a ``print``/``amp`` path segment or parameter first, ``fewer_params`` those
    with fewer query and ``;`` path parameters (tracking and session ids)."""
    parts = urlsplit(url)
    return tuple(_RULES[rule](parts) for rule in rules)


def preferred(candidate: str, current: str, rules: Iterable[str] = PREFERENCE_RULES) -> bool:
    """Whether ``candidate`` should represent a cluster now named by ``current``: strictly
    better by the rules, and on the same site (a copy elsewhere never takes a site's page)."""
    chosen = tuple(rules)
    return (
        bool(chosen)
        and same_site(candidate, current)
        and url_rank(candidate, chosen) < url_rank(current, chosen)
    )


def _bare_host(host: str) -> bool:
    """A host name or an IP address, with no scheme, port, path or leading dot."""
    if ":" in host:  # only an IPv6 address has one
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    return bool(re.fullmatch(r"[a-z0-9_\-]+(\.[a-z0-9_\-]+)*", host))


def check_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """``hosts`` as host names, lower case, if every one is a bare host name, else a
    ConfigurationError saying what a listed host looks like."""
    from scrapy_simhash.exceptions import ConfigurationError

    chosen = tuple(host.strip().lower().rstrip(".").strip("[]") for host in hosts if host.strip())
    wrong = [host for host in chosen if not _bare_host(host)]
    if wrong:
        raise ConfigurationError(
            f"`prefer_hosts`: {wrong} are no host names: list hosts such as "
            "'www.example.com' or 'example.com' (a name covers its subdomains), best first"
        )
    return chosen


def host_rank(url: str, hosts: tuple[str, ...]) -> int:
    """Place of ``url``'s host among ``hosts`` (best first; a listed name covers its
    subdomains, as ``allowed_domains`` does), ``len(hosts)`` for a host not listed."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return len(hosts)
    for rank, listed in enumerate(hosts):
        if host == listed or host.endswith("." + listed):
            return rank
    return len(hosts)


def host_preferred(candidate: str, holder: str, hosts: tuple[str, ...]) -> bool | None:
    """Whether ``candidate`` should name the page ``holder`` names now by the host
    preference: True when its host ranks better, False when worse, None when the
    preference cannot tell them apart (no preference, the same rank)."""
    if not hosts:
        return None
    mine, theirs = host_rank(candidate, hosts), host_rank(holder, hosts)
    return None if mine == theirs else mine < theirs


#: Keys stored by another URL, and keys declared canonical, remembered per crawl (each; the
#: oldest are forgotten first).
MEMORY_ENTRIES = 100_000


class KeyMemory:
    """Which keys this crawl saw stored by another URL, or declared canonical, and the
    holder records it read of keys (what the index says another URL's page is filed
    under them): all this crawl knows of who holds a key, in one place.

    One case needs memory beyond the index: a copy arrived first and was stored under the
    canonical URL it names, and then the canonical URL itself arrives. To the index that
    looks like a re-fetch of the same key (a change observation), yet it is the second page
    of one cluster in this crawl, so such an arrival is a claim too. A later crawl starts
    with an empty memory, so a re-fetch of the canonical URL is again a change observation.
    Keys some page declared canonical are never renamed by a URL preference.
    """

    def __init__(self, entries: int = MEMORY_ENTRIES) -> None:
        self._entries = entries
        self._held: OrderedDict[str, str] = OrderedDict()
        self._declared: OrderedDict[str, None] = OrderedDict()
        #: Holder records read (or written) in this crawl: key -> its record, None for
        #: none. A key's record is read once per crawl at most.
        self._records: OrderedDict[str, DropRecord | None] = OrderedDict()

    def declared(self, key: str) -> None:
        """A page of this crawl named ``key`` as its canonical URL."""
        self._remember(self._declared, key, None)

    def is_declared(self, key: str) -> bool:
        return key in self._declared

    def needs_claim(self, key: str, own: str) -> bool:
        """Whether the index must count an entry already under ``key`` as a match."""
        return key != own or key in self._held

    def holder(self, key: str) -> str | None:
        """The other URL whose page this crawl stored under ``key``, if any."""
        return self._held.get(key)

    def stored_by(self, key: str, own: str) -> None:
        """``own`` was stored under ``key``: remember it if that is another URL."""
        if key == own:
            self._held.pop(key, None)
            return
        self._remember(self._held, key, own)

    def knows_record(self, key: str) -> bool:
        """Whether ``key``'s holder record was read (or written) in this crawl."""
        return key in self._records

    def record(self, key: str) -> DropRecord | None:
        """``key``'s holder record as this crawl last knew it (None: none, or not read)."""
        return self._records.get(key)

    def remember_record(self, key: str, record: DropRecord | None) -> None:
        self._remember(self._records, key, record)

    def _remember(self, memory: OrderedDict[str, Any], key: str, value: Any) -> None:
        """Add ``key`` as the newest entry, forgetting the oldest beyond the bound."""
        memory[key] = value
        memory.move_to_end(key)
        while len(memory) > self._entries:
            memory.popitem(last=False)
