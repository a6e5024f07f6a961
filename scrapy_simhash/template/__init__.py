"""What a crawl learns of each site's template, and how a page's fingerprint sets it aside.

A single page cannot tell its article from its template: when the extractor reads a block
the template repeats (an author bio, a product box, a row of toolbar toggles) instead of the
article, every page of that template whose article it missed reads the same, and all but one
would be dropped as copies. A crawl sees many pages of each host, and the lines a host
repeats on many distinct pages are its template (Bar-Yossef & Rajagopalan 2002).

The memory of a host is two fixed arrays of :data:`SLOTS` 16-bit counters, one per line
hash bucket, each with its page count: one counts the pages kept (never a copy, which would
count its article as often as it has URLs), the other every page fetched, counted before it
is judged. A part is halved when its page count reaches :data:`HALVE_AT`, so the shares
read from it mean the same on a host of 10 pages or 10 million, and a host costs at most
8 KiB (:data:`HOST_BYTES`) at any size (a host of one page far less in Redis, see
:mod:`scrapy_simhash.template.store`). Every process of a crawl adds to it atomically. Two
facts are read from it:

- **template** lines: on at least :data:`MIN_PAGES` kept pages and on :data:`SHARE` of
  them. A main text that is template is not the article: the page's other lines, without
  the template, are read instead (:func:`apply_template`).
- **seen** lines. Before a host's template is known, two of its pages can still read alike
  through it; a same-host match is confirmed only when the page brings no text of its own,
  outside its main text (:func:`second_look`): none that the host never showed (a counter
  at one, the page itself), and none that the matched page lacks (read from the sketch its
  index entry keeps, :mod:`scrapy_simhash.sketch`). Counters are shared by the lines that
  hash to them, so on a host of more than a few hundred distinct lines a page's own line
  is often counted with another's; the sketch compares the two pages alone, so it holds at
  any size and in any order (``benchmarks/template_orders.py``, ``template_size.py``).

Pure core: no Scrapy, no storage; the stores live in :mod:`scrapy_simhash.template.store`.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, cast
from urllib.parse import urlsplit

import xxhash

from scrapy_simhash import _native
from scrapy_simhash.confirm import Evidence
from scrapy_simhash.sketch import folded, line_hashes, lines_not_in, lines_outside
from scrapy_simhash.text.readout import _drop_credits

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint

#: Counter buckets per host and per count (16 bits each), whatever the host's size.
SLOTS = 2048
#: Lines of one page counted at most (its first distinct ones): a page of thousands of lines
#: must not fill every bucket of its host.
MAX_LINES = 256
#: A line is template once counted on this many distinct pages of its host...
MIN_PAGES = 4
#: ...and on this share of them (a host of many templates keeps each one's lines). A lower
#: bar (a tenth, tried) learns the teasers that listing pages share as template, and a
#: listing whose main text is then read anew reads as changed at its next visit.
SHARE = 0.2
#: Pages a line must be seen on, at the least, to be set aside by the second look as shown
#: widely by its host (:meth:`HostMemory.widely_seen`).
WIDELY_AT_LEAST = 5.0
#: Saturation of a counter.
COUNTER_MAX = 0xFFFF
#: A part's page count at which all its counters are halved. A line's counter is at most its
#: part's page count (a page counts each bucket once), so no counter reaches saturation, and
#: the share that makes a line template keeps its meaning on a host of any size: a host of
#: ten million pages is judged on its recent pages with the weights of a decaying window.
HALVE_AT = 1 << 15


def host_of(url: str) -> str:
    """The host whose template a page shares: host name and port, lower-cased."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port is not None else host


def line_slot(line: str) -> int:
    """The counter bucket of a line: case, width and whitespace folded as features are."""
    return folded_slot(folded(line))


def folded_slot(line: str) -> int:
    """The counter bucket of a line already folded (:func:`scrapy_simhash.sketch.folded`)."""
    return xxhash.xxh3_64_intdigest(line.encode("utf-8")) % SLOTS


def page_slots(text: str) -> tuple[int, ...]:
    """The distinct buckets of a page's lines, in order, at most :data:`MAX_LINES`."""
    return _slots(line_hashes(text))


def _slots(hashes: Iterable[int]) -> tuple[int, ...]:
    """:func:`page_slots` of lines already hashed (:func:`scrapy_simhash.sketch.line_hashes`)."""
    seen: dict[int, None] = {}
    for hashed in hashes:
        seen.setdefault(hashed % SLOTS, None)
        if len(seen) >= MAX_LINES:
            break
    return tuple(seen)


def _lines(text: str) -> list[str]:
    """A text's non-blank lines, as :func:`scrapy_simhash.sketch.line_hashes` hashes them."""
    return [line for line in text.split("\n") if line.strip()]


def threshold(pages: int) -> float:
    """How many pages a line must be counted on to be template, for a host of ``pages``."""
    return max(MIN_PAGES, SHARE * pages)


def _zeros() -> array[int]:
    return array("H", bytes(2 * SLOTS))


def _counts(blob: bytes) -> array[int]:
    counts = array("H", blob)
    if sys.byteorder == "little":  # stored big-endian, as Redis BITFIELD u16 keeps them
        counts.byteswap()
    return counts


def _counted(counts: array[int], slots: Iterable[int]) -> array[int]:
    out = array("H", counts)
    for slot in set(slots):
        if out[slot] < COUNTER_MAX:
            out[slot] += 1
    return out


def _halved(counts: array[int]) -> array[int]:
    return array("H", (count >> 1 for count in counts))


@dataclass(frozen=True)
class HostMemory:
    """One host's counters as read from a store.

    ``counts[slot]`` and ``pages``: the pages kept (never a copy: an article must not count
    as often as it has URLs), for the template. ``seen[slot]`` and ``seen_pages``: every
    page fetched, counted before it is judged, so that a page judged at the same time in
    another process is already counted when this page's match is looked at again.
    """

    pages: int = 0
    counts: array[int] = field(default_factory=_zeros)
    seen_pages: int = 0
    seen: array[int] = field(default_factory=_zeros)

    #: Offsets of the four parts, in 16-bit counters, as stores keep them.
    PAGES_AT: ClassVar[int] = SLOTS
    SEEN_AT: ClassVar[int] = SLOTS + 1
    SEEN_PAGES_AT: ClassVar[int] = 2 * SLOTS + 1

    @classmethod
    def from_bytes(cls, blob: bytes | None) -> HostMemory:
        """From the stored layout (kept counts, kept pages, seen counts, seen pages); a
        short blob is zero-padded (Redis stores up to the last byte written)."""
        blob = (blob or b"").ljust(HOST_BYTES, b"\0")
        words = _counts(blob[:HOST_BYTES])
        return cls(
            words[cls.PAGES_AT],
            array("H", words[:SLOTS]),
            words[cls.SEEN_PAGES_AT],
            array("H", words[cls.SEEN_AT : cls.SEEN_PAGES_AT]),
        )

    def to_bytes(self) -> bytes:
        words = array("H", self.counts)
        words.append(min(self.pages, COUNTER_MAX))
        words.extend(self.seen)
        words.append(min(self.seen_pages, COUNTER_MAX))
        if sys.byteorder == "little":
            words.byteswap()
        return words.tobytes()

    def learned(self, slots: Iterable[int], halve_at: int = HALVE_AT) -> HostMemory:
        """This memory with one more kept page of ``slots`` counted (halved first at
        ``halve_at`` pages, see :data:`HALVE_AT`)."""
        pages, counts = self.pages, self.counts
        if pages + 1 >= halve_at:
            pages, counts = pages >> 1, _halved(counts)
        return replace(self, pages=min(pages + 1, COUNTER_MAX), counts=_counted(counts, slots))

    def saw(self, slots: Iterable[int], halve_at: int = HALVE_AT) -> HostMemory:
        """This memory with one more fetched page of ``slots`` counted (halved as
        :meth:`learned` is)."""
        pages, seen = self.seen_pages, self.seen
        if pages + 1 >= halve_at:
            pages, seen = pages >> 1, _halved(seen)
        return replace(self, seen_pages=min(pages + 1, COUNTER_MAX), seen=_counted(seen, slots))

    def widely_seen(self) -> float:
        """A count above which a bucket holds a line shown on many of the host's pages, not
        a line of one page sharing its bucket with others': a page's own line is counted
        once plus the bucket's share of the other lines (Poisson, of the mean load), so a
        bar four deviations above that mean is passed by one in a thousand at most. The
        second look sets such lines aside (a copy from another template of the host has the
        host's chrome and teasers that its original, a print view, lacks); it grows with
        the host, so a page's own text stays its own on a host of any size. Never below
        :data:`WIDELY_AT_LEAST` pages: on a small host an article's lede is often also the
        teaser on its home and section pages."""
        return max(WIDELY_AT_LEAST, _above_load(self.seen, own=2.0))

    def template(self) -> frozenset[int]:
        """The buckets of the host's template lines (worked out once per memory)."""
        return self._template

    @cached_property
    def _template(self) -> frozenset[int]:
        if self.pages < MIN_PAGES:
            return frozenset()
        # Read once per page the memory changes by: scanned in C (numpy without the
        # compiled parts), a tenth of the time a Python loop over the 2,048 counters takes.
        # A few pages of hundreds of lines each load every bucket with lines of one page:
        # a bucket is template only above what that load alone gives (see widely_seen).
        least = max(threshold(self.pages), _above_load(self.counts, own=1.0))
        return frozenset(_counters().counters_at_least(self.counts, least))


def _counters() -> _native.Hashes:
    """Where the counters are scanned: the compiled hashing, else numpy (imported only
    then: the crawl process on the compiled path never loads it)."""
    if _native.hashes is not None:
        return _native.hashes
    from scrapy_simhash import _hashes_interpreted

    return cast(_native.Hashes, _hashes_interpreted)


def _above_load(counts: array[int], *, own: float) -> float:
    """Four deviations above a bucket's count from its mean load alone (Poisson), plus
    ``own`` for the line itself."""
    load = _counters().counter_total(counts) / SLOTS
    return float(load + 4.0 * load**0.5 + own)


#: Bytes a host costs in every store: its four parts of 16-bit counters.
HOST_BYTES = 2 * (2 * SLOTS + 2)
EMPTY = HostMemory()


def _lines_outside(
    text: str, hashes: Sequence[int], slots: frozenset[int]
) -> tuple[list[str], int]:
    """``text``'s lines (of these ``hashes``) outside the buckets ``slots``, and how many
    were inside."""
    lines = _lines(text)
    kept = [line for line, hashed in zip(lines, hashes, strict=True) if hashed % SLOTS not in slots]
    return kept, len(lines) - len(kept)


def apply_template(
    fingerprinter: Fingerprinter, page: PageFingerprint, template: frozenset[int]
) -> PageFingerprint:
    """``page`` fingerprinted by its own text when its main text is the host's template.

    A main text with enough left besides its template lines keeps its fingerprint: the
    few template lines inside an article (a newsletter prompt, a "share" line) move it a
    few bits at most, and a fingerprint that changed once the template is learned would
    no longer find the copies indexed before. A main text that is template, or nearly, is
    not the article: the page's other lines without the template are read instead (what
    the host's other pages do not share is this page's own text); if too little is left,
    the page gets no fingerprint, as any page with too little text of its own.
    """
    if not template or not page.page_text:
        return page
    kept, dropped = _lines_outside(page.text, page.main_line_hashes, template)
    if not dropped or fingerprinter.too_short("\n".join(kept), page.title) is None:
        return page
    own, dropped_own = _lines_outside(page.page_text, page.line_hashes, template)
    other = _refingerprint(
        fingerprinter,
        page,
        _drop_credits("\n".join(own)),
        f"the main text is the host's template ({dropped} line(s)); the page's other "
        "text read instead",
        dropped_own,
    )
    if other.fingerprint is not None:
        return other
    return replace(other, reason=f"too little text besides the host's template ({other.reason})")


def _refingerprint(
    fingerprinter: Fingerprinter, page: PageFingerprint, text: str, note: str, dropped: int
) -> PageFingerprint:
    again = fingerprinter.fingerprint_document(
        text, page.title, encoding=page.encoding, notes=(*page.notes, note)
    )
    return replace(
        again,
        chars=page.chars,
        text=page.text,
        page_text=page.page_text,
        template_lines=dropped,
        visible=page.visible if again.exact else "",
    )


@dataclass(frozen=True)
class SecondLook:
    """What a same-host match turns out to be once the host's memory is asked.

    ``distinct``: the page brings text its host never showed; it is kept, filed under
    ``fingerprint`` (its own text). Otherwise ``fingerprint`` is that of the page's lines
    seen on at most one other page: the page copies whichever page matches it, if any.
    """

    distinct: bool
    fingerprint: int
    #: What the second test reads of the lines fingerprinted (:mod:`scrapy_simhash.confirm`).
    evidence: Evidence


def second_look(
    fingerprinter: Fingerprinter,
    page: PageFingerprint,
    memory: HostMemory,
    sketch: int = 0,
    matched: int | None = None,
) -> SecondLook | None:
    """Whether a page that matched another page of its own host really copies it.

    ``memory`` has seen this page already (:meth:`HostMemory.saw`, before the page was
    judged), and every page judged before this one's match was found. Two pages of a host
    match through a block the extractor read instead of each one's article (an author bio,
    a product box) whenever that block is not yet known as template: the host's first
    pages, a redesign, a section of its own. Such a page's article is then outside its
    main text, and no other page showed it. A copy's main text is the article itself: what
    it changes (an edit, a timestamp) is inside the main text, and what it has outside (the
    template, teasers, comments of the page it copies) its original showed too, so every
    such line is counted on two pages or more. Only lines outside the main text are read,
    then: a page with enough of them that no other page showed is distinct, whatever came
    before it on its host. This asks nothing of the pages kept, so no order (other pages
    first, copies first, a template read by every page) makes the host's distinct pages
    copies, as far as the counters tell lines apart. ``sketch``, the matched page's
    (:mod:`scrapy_simhash.sketch`), tells it at any size of host: a page with enough text
    outside its main text that the matched page certainly lacks is distinct. None: the
    match stands. ``matched``, the matched page's fingerprint: a page of that very
    fingerprint and sketch reads as that page, and is not read again by its rarer lines
    to credit it to another (the costly step, and the one every byte-identical copy met).
    """
    template = memory.template()
    counted = _counted_outside(page, template)
    seen = memory.seen
    novel = _fingerprint_lines(fingerprinter, page, (ln for ln, s in counted if seen[s] <= 1))
    if novel is not None:
        return SecondLook(True, novel[0], novel[1])
    if sketch:
        widely = memory.widely_seen()

        def not_widely_shown(hashed: int) -> bool:
            slot = hashed % SLOTS
            return slot not in template and seen[slot] <= widely

        rest = lines_outside(
            page.page_text, page.line_hashes, page.main_line_hashes, not_widely_shown
        )
        lacking = "\n".join(lines_not_in(sketch, rest))
        # Distinct when what the matched page lacks is text enough for a fingerprint; the
        # page is then filed under all its text outside the main text (what its copies
        # read alike, and a page whose extraction left its article outside finds it so).
        if lacking and fingerprinter.too_short(lacking, page.title) is None:
            found = _fingerprint_lines(fingerprinter, page, rest)
            if found is not None:
                return SecondLook(True, found[0], found[1])
    if matched == page.fingerprint and sketch == page.evidence.sketch:
        return None
    # A copy of whichever page its lines shown on at most one other page match.
    rare = _fingerprint_lines(fingerprinter, page, (ln for ln, s in counted if seen[s] <= 2))
    if rare is not None and rare[0] != page.fingerprint:
        return SecondLook(False, rare[0], rare[1])
    return None


def _counted_outside(page: PageFingerprint, template: frozenset[int]) -> list[tuple[str, int]]:
    """The page's lines outside its main text and the template, with their buckets (a
    line beyond :data:`MAX_LINES` was never counted)."""
    counted = set(learnable(page))
    main = {hashed % SLOTS for hashed in page.main_line_hashes}
    return [
        (line, slot)
        for line, hashed in zip(_lines(page.page_text), page.line_hashes, strict=True)
        if (slot := hashed % SLOTS) in counted and slot not in template and slot not in main
    ]


def _fingerprint_lines(
    fingerprinter: Fingerprinter, page: PageFingerprint, lines: Iterable[str]
) -> tuple[int, Evidence] | None:
    """The fingerprint of some of a page's lines and what the second test reads of them;
    None when they are too few for a fingerprint (an exact digest is no second look).
    Credit lines (bylines, dates) are left out, as :func:`apply_template` leaves them out:
    a copy read once the template is known then finds the page filed here."""
    text = _drop_credits("\n".join(lines))
    if not text or fingerprinter.too_short(text, page.title) is not None:
        return None
    read = fingerprinter.fingerprint_document(text, page.title)
    if read.fingerprint is None:
        return None
    # Filed under its own text, the page keeps the sketch of the whole page's other lines.
    return read.fingerprint, replace(read.evidence, sketch=page.evidence.sketch)


def learnable(page: PageFingerprint) -> Sequence[int]:
    """The buckets a kept page adds to its host's memory."""
    return _slots(page.line_hashes)


class LocalMemory:
    """The memories of hosts kept in one process, for judging files as a crawl judges
    pages (the command line, benchmarks): the same three steps, no store."""

    def __init__(self, fingerprinter: Fingerprinter) -> None:
        self.fingerprinter = fingerprinter
        self.hosts: dict[str, HostMemory] = {}

    def apply(self, host: str, page: PageFingerprint) -> PageFingerprint:
        memory = self.hosts.get(host, EMPTY)
        return apply_template(self.fingerprinter, page, memory.template())

    def see(self, host: str, page: PageFingerprint) -> None:
        """Count a page fetched, before it is judged."""
        self.hosts[host] = self.hosts.get(host, EMPTY).saw(learnable(page))

    def second_look(
        self, host: str, page: PageFingerprint, sketch: int = 0, matched: int | None = None
    ) -> SecondLook | None:
        return second_look(self.fingerprinter, page, self.hosts.get(host, EMPTY), sketch, matched)

    def learn(self, host: str, page: PageFingerprint) -> None:
        slots = learnable(page)
        if slots:
            self.hosts[host] = self.hosts.get(host, EMPTY).learned(slots)

    def pages(self, host: str) -> int:
        return self.hosts.get(host, EMPTY).pages
