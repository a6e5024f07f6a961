"""The verdict on one fetched page: a copy or not, changed or not, and what storage learns.

Why one place: a page's answer takes several stores in a fixed order (the index's atomic
observe or claim, the change rule, the recrawl schedule, the drop record), and the order
carries the guarantees: a copy is never scheduled for revisits, a URL that names a canonical
URL it does not copy is filed under its own, the cluster keeps the name the URL preference
gives it. The judge (:mod:`scrapy_simhash.judge`) asks this step between the template
memory's steps; the downloader middleware, the item pipeline and ``dedup`` ask the judge
and turn its answer into their actions (drop, mark, skip, stats, signals; groups), deciding
nothing themselves. It imports no Scrapy, so its branches are tested with real backends
and no crawler.

Storage is reached through guarded callers (``glue.guard.Guarded`` in a crawl): a call
raises :class:`BackendUnavailable` during an outage and :class:`ConfigurationError` when the
storage cannot be used as configured; the verdict says which, and the caller's policy acts.
Pages that pass unchecked during an outage are kept in an :class:`OutageBacklog` and indexed
as soon as the index answers again, before any later page is judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from scrapy_simhash.canonical import MEMORY_ENTRIES, KeyMemory, host_preferred, preferred
from scrapy_simhash.confirm import Evidence, Signing, score, stored_signature
from scrapy_simhash.exceptions import BackendUnavailable, ConfigurationError, InvalidKeyError
from scrapy_simhash.filings import Filings
from scrapy_simhash.index.base import Match, Observation, judge
from scrapy_simhash.index.drops import (
    FILED,
    HELD,
    HELD_COPY,
    HELD_MARKED,
    HOLDERS,
    MARKED,
    MAX_HOPS,
    OWN_PAGE,
    DropRecord,
    holder_of,
)
from scrapy_simhash.index.inflight import BUSY
from scrapy_simhash.recrawl.state import Visit, compare
from scrapy_simhash.simhash import to_hex

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import PageFingerprint

#: Outcomes of :meth:`VerdictStep.page`.
UNIQUE = "unique"
DUPLICATE = "duplicate"
#: No fingerprint to check (too little text, an extraction failure, a key no backend stores).
UNCHECKED = "unchecked"
#: The index did not answer (an outage): SIMHASH_ON_INDEX_ERROR decides.
UNAVAILABLE = "unavailable"
#: The index cannot be used as configured: SIMHASH_ON_INDEX_MISMATCH decides.
UNUSABLE = "unusable"
#: The index refused this page's key alone (one no backend can store): the page passes.
INVALID_KEY = "invalid_key"
#: The page (or the page it copies) is in flight in another crawl process's callback: ask
#: again after ``retry_after`` seconds (:meth:`VerdictStep.page` does, until it is not).
DEFERRED = "deferred"

#: The keys of ``response.meta["simhash"]``, always present.
META_KEYS = (
    "key",
    "fingerprint",
    "duplicate_of",
    "distance",
    "changed",
    "change_distance",
    "reason",
)
#: Set on near-duplicates passed to the spider only for their links.
LINKS_ONLY = "links_only"
#: Keys present only when they hold something (``renamed_from``: the URL whose entry this
#: page's URL took, a copy preferred by SIMHASH_PREFER_URLS, or a page taking its entry over).
OPTIONAL_META_KEYS = ("renamed_from", LINKS_ONLY)

logger = logging.getLogger(__name__)


class GuardedStore(Protocol):
    """A storage object behind a guard: ``await call(lambda backend: backend.method())``."""

    async def call(self, operation: Callable[[Any], Awaitable[Any]]) -> Any: ...


class Unguarded:
    """A storage object called as it is: the command line's in-memory index, which has
    no outage to ride out (its errors are the command's)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    async def call(self, operation: Callable[[Any], Awaitable[Any]]) -> Any:
        return await operation(self.backend)


@dataclass(frozen=True)
class Answer:
    """What the server said about a URL, as recrawl scheduling needs it."""

    status: int
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True)
class Verdict(Mapping[str, Any]):
    """The answer for one page; as a mapping, the keys of ``response.meta["simhash"]``.

    The crawl stores ``dict(verdict)`` in ``meta``: items that carry it must still
    serialise with Scrapy's feed exporters, which know dicts, not mappings.
    """

    outcome: str
    key: str | None = None
    #: Hex digits, as users see fingerprints.
    fingerprint: str | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    changed: bool | None = None
    change_distance: int | None = None
    reason: str | None = None
    renamed_from: str | None = None
    #: A near-duplicate passed to the spider for its links only (SIMHASH_FOLLOW_DUPLICATE_LINKS).
    links_only: bool = False
    #: What went wrong, for the caller's policy: the outage (UNAVAILABLE), why the index
    #: is unusable (UNUSABLE) or why the key was refused (INVALID_KEY).
    error: Exception | None = None
    #: Candidates within the distance that the second test turned away (distinct pages
    #: whose fingerprints came close: simhash/confirm/rejected).
    rejected: int = 0
    #: DEFERRED: seconds to wait before asking again.
    retry_after: float | None = None
    #: Facts the judge (:mod:`scrapy_simhash.judge`) adds, each a stat of the crawl: the
    #: page was checked by an exact digest (simhash/exact); it was read but had too little
    #: text for a fingerprint (simhash/no_text); its host's template was set aside
    #: (simhash/template/applied); a second look found text its host never showed
    #: (simhash/template/kept_distinct).
    exact: bool = False
    no_text: bool = False
    template_set_aside: bool = False
    template_distinct: bool = False
    #: The page as judged, its host's template set aside (not in ``meta``): what a caller
    #: that lists pages reports of it.
    page: PageFingerprint | None = field(default=None, compare=False, repr=False)

    @property
    def teaches_template(self) -> bool:
        """Whether the page counts among its host's kept pages in the template memory: no
        copy (an article counts once, not once per URL) and no revisit (once per page, not
        per visit). The crawl and ``scrapy simhash dedup`` learn by this one rule."""
        return self.outcome in (UNIQUE, UNCHECKED) and self.changed is None

    def __getitem__(self, name: str) -> Any:
        if name in META_KEYS or (name in OPTIONAL_META_KEYS and getattr(self, name)):
            return getattr(self, name)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        yield from META_KEYS
        yield from (name for name in OPTIONAL_META_KEYS if getattr(self, name))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def but(self, **changes: Any) -> Verdict:
        """A copy with ``changes`` (the crawl adds what only it knows, such as links_only)."""
        return replace(self, **changes)


class Unchecked(NamedTuple):
    """A page passed unchecked during an outage: what indexing it later takes (no body)."""

    key: str
    own: str
    fingerprint: int
    #: Its visit, when the recrawl store did not hear of it either: made when the page is
    #: indexed, else counted lost (simhash/recrawl_lost).
    answer: Answer | None
    record_drops: bool
    signing: Signing


class OutageBacklog:
    """The pages passed unchecked while the index was away, oldest first, at most ``limit``
    of them (the ``backlog_pages`` option): indexed when it answers again, so their copies
    fetched afterwards are found. Pages beyond the bound are counted, never indexed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pages: deque[Unchecked] = deque()
        #: Held while the backlog is indexed: pages judged meanwhile wait for it.
        self.lock = asyncio.Lock()


async def _signed(
    backend: Any, method: str, key: str, fingerprint: int, signing: Signing
) -> Observation:
    """``backend.observe`` or ``backend.claim`` of a page signed under the index's key.

    A namespace created anew during the call (another process reset it, a Redis restarted
    empty) holds another key once the call returns: the page is asked about again, signed
    under that key, so no entry keeps a signature no later page can confirm. A page the
    first call filed is filed again under its own key (a claim would meet itself).
    """
    signed_with = backend.confirm_key
    observation: Observation = await getattr(backend, method)(
        key, fingerprint, signing.under(signed_with)
    )
    if backend.confirm_key != signed_with:
        again = "observe" if observation.stored else method
        observation = await getattr(backend, again)(
            key, fingerprint, signing.under(backend.confirm_key)
        )
    return observation


async def _drop_of(backend: Any, url: str) -> Any:
    return await backend.drop_of(url)


class VerdictStep:
    """Index observe -> change rule -> recrawl observe or forget -> one :class:`Verdict`."""

    def __init__(
        self,
        index: GuardedStore,
        recrawl: GuardedStore | None,
        *,
        bits: int,
        change_distance: int,
        keys: KeyMemory | None = None,
        prefer_urls: tuple[str, ...] = (),
        prefer_hosts: tuple[str, ...] = (),
        count: Callable[[str], None] = lambda name: None,
        backlog: OutageBacklog | None = None,
        filings: Filings | None = None,
    ) -> None:
        """``recrawl`` None: no schedule is kept, and the index's previous fingerprint
        alone tells whether a re-fetched page changed, by the same ``change_distance``.
        ``count`` receives the names of stats the step alone sees (recrawl updates lost,
        the backlog's ``outage/*``). ``backlog``: the caller passes the pages the index
        could not check (pages passed on an outage), to be indexed when it is back;
        None: they are not passed, or not remembered. ``prefer_hosts``: hosts whose URLs
        name a page over any other host's, best first (:meth:`_takes_over`). ``filings``:
        the pages this process holds in flight (:mod:`scrapy_simhash.filings`); None: a
        page is filed for good when the index files it."""
        self.index = index
        self.recrawl = recrawl
        self.bits = bits
        self.change_distance = change_distance
        self.keys = keys if keys is not None else KeyMemory()
        self.prefer_urls = prefer_urls
        self.prefer_hosts = prefer_hosts
        self._count = count
        #: Whether a recrawl store that cannot be used as configured was reported.
        self._recrawl_refused = False
        #: Records read in this crawl of keys a page matched (whose page it may take over:
        #: :meth:`_takes_over`); a record this step writes or forgets is read again.
        self._records: OrderedDict[str, DropRecord | None] = OrderedDict()
        self.backlog = backlog
        self.filings = filings
        #: When this crawl process began judging: a holder record written before it was
        #: written by an earlier crawl (:meth:`_names_back`).
        self._opened = time.time()

    def hex(self, fingerprint: int) -> str:
        return to_hex(fingerprint, self.bits)

    async def page(
        self,
        key: str,
        own: str,
        fingerprint: int | None,
        answer: Answer | None,
        *,
        reason: str | None = None,
        record_drops: bool = True,
        marking: bool = False,
        look_again: Callable[[Any], Awaitable[Any]] | None = None,
        evidence: Evidence | None = None,
        owner: str | None = None,
    ) -> Verdict:
        """The verdict on a page (:meth:`_judge` says what each argument means).

        ``owner`` (a token of :meth:`Filings.owner`, with ``filings``): the page is held in
        flight under its keys before it is filed, until the crawl says it was delivered
        (:meth:`Filings.delivered`; a page not kept is released here). A page whose key, or
        whose match, another live process holds in flight waits for it (``filings.sleep``)
        and is judged again: a copy once the holder delivered, the page taken over once the
        holder's mark is older than the lease (it died). A holder that keeps renewing its
        mark for ``filings.max_wait_secs`` is taken to deliver: the page is judged as
        without marks.
        """
        filings = self.filings
        judge_page = functools.partial(
            self._judge,
            key,
            own,
            fingerprint,
            answer,
            reason=reason,
            record_drops=record_drops,
            marking=marking,
            look_again=look_again,
            evidence=evidence,
        )
        if owner is None or filings is None or fingerprint is None:
            return await judge_page()
        waited = 0.0
        while True:
            patient = waited < filings.max_wait_secs
            try:
                verdict = await judge_page(owner=owner, patient=patient)
            except BaseException:
                await filings.release(owner)
                raise
            if verdict.outcome != UNIQUE:
                await filings.release(owner)
            if verdict.outcome != DEFERRED:
                if waited and not patient:
                    filings.waited_out()
                return verdict
            if not waited:
                filings.deferred()
            delay = float(verdict.retry_after or filings.poll_secs)
            await filings.sleep(delay)
            waited += delay

    async def _judge(
        self,
        key: str,
        own: str,
        fingerprint: int | None,
        answer: Answer | None,
        *,
        reason: str | None = None,
        record_drops: bool = True,
        marking: bool = False,
        look_again: Callable[[Any], Awaitable[Any]] | None = None,
        evidence: Evidence | None = None,
        owner: str | None = None,
        patient: bool = True,
    ) -> Verdict:
        """The verdict on a page fetched from ``own`` and keyed ``key`` (its declared
        canonical URL, or ``own``). ``answer`` None: not a visit (a cached response), the
        schedule is left alone. ``fingerprint`` None: nothing to check, for ``reason``;
        the visit still counts for scheduling. ``record_drops``: write the drop record of
        copies (``lookup`` answers from it). ``marking``: copies reach the spider marked
        (the crawl drops no copy), so their records say marked, not dropped: a drop
        record exists exactly for the URLs dropped. ``look_again(match)``: a second look at a
        match before it is acted on (:func:`scrapy_simhash.template.second_look`: None, the
        match stands; else whether the page is distinct and the fingerprint to go on with).
        ``reason`` is said on a page checked by an exact digest too (why it has no
        fingerprint of its words).
        ``evidence``: what the second test signs (:mod:`scrapy_simhash.confirm`) under the
        index's key; None files the page without a signature (confirmed by distance alone).
        ``owner``: the page holds its keys in flight (:meth:`page`); a match held by
        another live page defers it (unless not ``patient``), one whose holder died is
        taken over.
        """
        if fingerprint is None:
            await self._visit(key, None, answer, own=key == own)
            return Verdict(UNCHECKED, key=key or None, reason=reason)
        hex_digits = self.hex(fingerprint)
        signing = Signing(evidence)
        try:
            await self._catch_up()
            if owner is not None and self.filings is not None:
                # Held before it is filed; an index away fails here, as the observe would.
                busy = await self.filings.hold(owner, (key, own), patient=patient)
                if busy is not None:
                    return Verdict(
                        DEFERRED,
                        key=key,
                        fingerprint=hex_digits,
                        reason=f"{key} is in flight in another crawl process",
                        retry_after=self.filings.retry_after(busy),
                    )
            observation, key = await self._observe(key, own, fingerprint, signing)
            if observation.match is not None and look_again is not None:
                observation, key, fingerprint = await self._look_again(
                    look_again, observation, key, own, fingerprint, signing
                )
                hex_digits = self.hex(fingerprint)
        except BackendUnavailable as exc:
            # The visit still counts for scheduling (the store may be up when the index
            # is not); if it fails too, it is counted as lost, unless it is made when the
            # page is indexed from the backlog.
            visit = await self._visit(
                key, fingerprint, answer, own=key == own, count_lost=self.backlog is None
            )
            missed = answer if visit is None and self.recrawl is not None else None
            self._defer(Unchecked(key, own, fingerprint, missed, record_drops, signing))
            return Verdict(
                UNAVAILABLE,
                key=key,
                fingerprint=hex_digits,
                reason=f"index unavailable: {exc}",
                error=exc,
            )
        except InvalidKeyError as exc:  # this page's key alone: the page passes
            return Verdict(
                INVALID_KEY,
                key=key,
                fingerprint=hex_digits,
                reason=f"invalid key: {exc}",
                error=exc,
            )
        except ConfigurationError as exc:  # not an outage: the caller's mismatch policy
            return Verdict(
                UNUSABLE,
                key=key,
                fingerprint=hex_digits,
                reason=f"index unusable: {exc}",
                error=exc,
            )
        took_from = adopted = None
        match = observation.match
        if match is not None and owner is not None and self.filings is not None:
            filings = self.filings
            if patient and match.key not in (key, own):
                busy = await filings.check(owner, match.key)
                if busy.state == BUSY:
                    return Verdict(
                        DEFERRED,
                        key=key,
                        fingerprint=hex_digits,
                        duplicate_of=match.key,
                        distance=match.distance,
                        retry_after=filings.retry_after(busy),
                        reason=f"the page filed under {match.key} is in flight in another "
                        "crawl process",
                    )
            if filings.took(owner, match.key):
                return await self._take_page(
                    own,
                    fingerprint,
                    answer,
                    match,
                    observation.rejected,
                    record_drops=record_drops,
                    reason=reason,
                )
        if match is not None and match.key not in (key, own):
            try:
                took = await self._take_over(key, own, fingerprint, signing, match)
            except (BackendUnavailable, ConfigurationError):
                took = None  # the page stays a copy of what holds it
            if took is not None:
                observation, took_from, adopted = took
                match = observation.match
        if match is not None:
            renamed = await self._prefer(key, own, fingerprint, match, answer)
            apart = score(signing.signed, match.signature)
            if own != match.key:
                # A copy is not scheduled for revisits: its content is tracked under the
                # page it copies, and a URL claimed from the due queue must not return when
                # its lease ends (a copy that renamed its cluster is what the schedule names
                # now). The record says what it copies, for `lookup`: the URL whose page
                # reached the spider, as the log says, even when the cluster took this name.
                if key == own and not renamed:
                    await self.forget(own)
                if record_drops:
                    distance = match.distance + (MARKED if marking else 0)
                    await self.record_drop(own, match.key, distance, apart)
            else:
                # The canonical URL itself, whose page another URL's fetch filed under it:
                # a copy for the spider, yet the fetch of the URL the schedule names (with
                # its own validators), so a due URL does not come back when its lease ends.
                # Its holder record says it was dropped too, so it is counted with the copies.
                await self._visit(own, fingerprint, answer)
                holder = await self._holder(own)
                if record_drops and holder is not None:
                    held = HELD_MARKED if marking else HELD_COPY
                    await self.record_drop(own, holder, held, apart)
                    self.keys.remember_record(own, DropRecord(own, holder, held, 0, apart))
            return Verdict(
                DUPLICATE,
                key=key,
                fingerprint=hex_digits,
                duplicate_of=match.key,
                distance=match.distance,
                renamed_from=match.key if renamed else None,
                rejected=observation.rejected,
                reason=reason,
            )
        if key != own and record_drops:
            await self._kept_under(key, own)
        changed = change_distance = None
        if observation.previous is not None:
            changed, change_distance = compare(
                observation.previous, fingerprint, self.change_distance
            )
        visit = await self._visit(key, fingerprint, answer, own=key == own)
        if visit is not None:
            changed = visit.changed
            if visit.distance is not None:
                change_distance = visit.distance
        if adopted:
            # The history it took over is the copy's, fetched under another URL: this URL
            # reaches the spider for the first time, and no change is said of it (so
            # SIMHASH_SKIP_UNCHANGED does not keep the preferred URL's page from it).
            changed = change_distance = None
        return Verdict(
            UNIQUE,
            key=key,
            fingerprint=hex_digits,
            changed=changed,
            change_distance=change_distance,
            rejected=observation.rejected,
            reason=reason,
            renamed_from=took_from,
        )

    async def _take_page(
        self,
        own: str,
        fingerprint: int,
        answer: Answer | None,
        match: Match,
        rejected: int,
        *,
        record_drops: bool,
        reason: str | None,
    ) -> Verdict:
        """The page filed under ``match.key`` by a crawl process that died before delivering
        it (its mark older than the lease, taken by this page): this fetch delivers it. The
        entry stays (the same page); ``own`` reached the spider with the page filed under
        that name, as a copy first to arrive is filed under its canonical URL, and a filing
        record of the dead process's URL goes (it never reached a spider)."""
        name = match.key
        if self.filings is not None:
            self.filings.taken_over()
        logger.warning(
            "SimHash: %s takes over the page filed under %s by a crawl process that did not "
            "deliver it (its filing was not renewed for the filing lease)",
            own,
            name,
        )
        holder = await self._holder(name) if record_drops else None
        if holder is not None and holder != own:
            await self.forget_drop(holder)
        if own != name:
            if record_drops:
                await self._kept_under(name, own)
            self.keys.stored_by(name, own)
        else:
            await self._release(name)
        await self._visit(name, fingerprint, answer, own=name == own)
        return Verdict(
            UNIQUE,
            key=name,
            fingerprint=self.hex(fingerprint),
            rejected=rejected,
            reason=reason,
        )

    async def _kept_under(self, key: str, own: str) -> None:
        """Kept under the canonical URL it names: its own URL reached the spider and its
        page is filed under that one (a filing record, no drop: `lookup` says so, and
        counts of dropped URLs leave it out). The holder record says which URL reached the
        spider, so a later crawl keeps that one whatever arrives first; written again at
        each visit (it ages like any record), still saying whether the canonical URL was
        dropped as its copy since."""
        await self.record_drop(own, key, FILED)
        known = self.keys.record(key)
        held = (
            known
            if known is not None
            and known.distance in (HELD_COPY, HELD_MARKED)
            and known.kept == own
            else DropRecord(key, own, HELD, 0)
        )
        await self.record_drop(key, own, held.distance, held.apart)
        self.keys.remember_record(key, held)

    def _defer(self, page: Unchecked) -> None:
        """A page the index could not check passes: keep it to index later, if there is
        room."""
        backlog = self.backlog
        if backlog is None:
            return
        self._count("outage/passed_unchecked")
        if len(backlog.pages) >= backlog.limit:
            self._count("outage/backlog_overflow")
            if page.answer is not None:
                self._count("recrawl_lost")
            return
        backlog.pages.append(page)

    async def _catch_up(self) -> None:
        """Index the pages passed unchecked during an outage before any later page is
        judged, so a copy of one of them is found whichever finishes first. Raises
        :class:`BackendUnavailable` while the index is still away (the pages stay)."""
        backlog = self.backlog
        if backlog is None or not backlog.pages:
            return
        async with backlog.lock:
            pages = backlog.pages
            while pages:
                try:
                    await self._index_later(pages[0])
                except InvalidKeyError:  # a key no backend stores: that page alone
                    self._not_indexed(pages[0])
                except ConfigurationError:  # back, but unusable: none of them can be
                    self._forget_backlog()
                    return
                pages.popleft()

    async def _index_later(self, page: Unchecked) -> None:
        """What :meth:`page` would have done with a page that has since reached the spider:
        filed as any page, its lost visit recorded. A copy of a page indexed meanwhile (or
        earlier in the backlog) is not stored and is said at DEBUG and counted, but it is
        no dropped page: no drop record, and its visit is recorded as a fetch (a revisit
        judges it again, as a copy)."""
        observation, key = await self._observe(page.key, page.own, page.fingerprint, page.signing)
        match = observation.match
        if match is not None:
            self._count("outage/copies_later")
            logger.debug(
                "%s, passed unchecked during the index outage, is a near-duplicate of %s "
                "(distance %d) indexed meanwhile: kept, it had reached the spider",
                page.own,
                match.key,
                match.distance,
            )
            # Its fetch is recorded all the same (it reached the spider): under its own URL
            # when that holds another URL's page (as for any fetch of it), else under the
            # key it passed with.
            key = page.own if match.key == page.own else page.key
        else:
            if key != page.own and page.record_drops:
                await self._kept_under(key, page.own)
            self._count("outage/indexed_later")
        if page.answer is not None:
            await self._visit(key, page.fingerprint, page.answer, own=key == page.own)

    def _forget_backlog(self) -> None:
        backlog = self.backlog
        if backlog is None:
            return
        for page in backlog.pages:
            self._not_indexed(page)
        backlog.pages.clear()

    def _not_indexed(self, page: Unchecked) -> None:
        self._count("outage/not_indexed")
        if page.answer is not None:
            self._count("recrawl_lost")

    async def finish(self) -> None:
        """At the close: index what the backlog holds if the index answers; what it cannot
        is counted as not indexed."""
        with contextlib.suppress(BackendUnavailable):
            await self._catch_up()
        self._forget_backlog()

    async def _observe(
        self, key: str, own: str, fingerprint: int, signing: Signing
    ) -> tuple[Any, str]:
        """Ask the index about a page; return the answer and the key it is filed under.

        A page keyed by a canonical URL other than its own (or by one another URL stored
        earlier in this crawl) is a claim: what is stored under that key is its match.
        """
        index = self.index

        def observe(under: str) -> Callable[[Any], Awaitable[Any]]:
            return lambda backend: _signed(backend, "observe", under, fingerprint, signing)

        if not self.keys.needs_claim(key, own):
            observation = await index.call(observe(key))
            if observation.stored and observation.previous is None:
                await self._own_page(key)
            elif observation.stored:
                observation = await self._own_fetch(key, fingerprint, observation)
            return observation, key
        observation = await index.call(
            lambda backend: _signed(backend, "claim", key, fingerprint, signing)
        )
        if (
            key != own
            and (observation.match is None or observation.match.key == key)
            and not observation.stored
            and await self._holder(key) == own
        ):
            # This URL's page is what is filed under the canonical URL (it reached the
            # spider in an earlier crawl, or earlier in this one): a visit again.
            observation = await index.call(observe(key))
            self.keys.stored_by(key, own)
            return observation, key
        if observation.match is not None and observation.match.key == own != key:
            # The page itself, filed under its own URL at an earlier fetch because it does
            # not copy the canonical URL it names (page 2 naming page 1): a visit again.
            return await index.call(observe(own)), own
        if observation.match is None and not observation.stored:
            # The key holds other content: a page naming a canonical URL it does not copy
            # (a paginated or misdeclared page) is filed under its own URL, and the
            # canonical URL itself replaces what a misdeclaring page stored under it.
            held = observation.previous, observation.previous_signature
            observation = await index.call(observe(own))
            if observation.stored and observation.previous is None and key != own:
                await self._own_page(own)
            if key == own:  # nor is that page's fetch a visit of this one
                observation = observation._replace(previous=None)
                await self.forget(key)
                holder = self.keys.holder(key)
                if holder is not None:  # which is no copy of this page either
                    await self._release(key)
                    await self._refile(holder, *held)
            key = own
        if observation.stored:
            self.keys.stored_by(key, own)
        return observation, key

    async def _own_page(self, url: str) -> None:
        """``url`` was filed anew under itself: a page of its own now. A record saying it
        was dropped (or marked, or filed under another URL) at an earlier fetch is
        superseded by one saying it is a page of its own since (which keeps the URL it
        copied: the page's history is that URL's, :meth:`_takes_over`); a holder record
        (an entry since gone held another URL's page) goes."""
        self.keys.remember_record(url, None)
        record = await self._record(url)
        if record is None or record.distance == OWN_PAGE:
            return
        if record.distance in HOLDERS:
            await self.forget_drop(url)
        else:
            await self.record_drop(url, record.kept, OWN_PAGE)

    async def _own_fetch(self, key: str, fingerprint: int, observation: Observation) -> Observation:
        """A URL fetched again and filed under itself, whose entry may hold the page another
        URL brought (a copy fetched first that names this URL canonical, in an earlier crawl
        or another process): then that URL reached the spider, and this fetch is its copy
        while the page has not changed, so the same page keeps the same URL from crawl to
        crawl while it arrives first. A change hands the entry to this URL, and so does
        a holder this URL ranks better than (:meth:`_names_back`)."""
        holder = await self._holder(key)
        previous = observation.previous
        if holder is None and self.keys.record(key) is not None:
            # The record of a URL dropped (or filed elsewhere) at an earlier fetch: this
            # fetch reached the spider under its own URL, so the record no longer holds.
            await self._release(key)
        if holder is None or holder == key or previous is None:
            return observation
        changed, distance = compare(previous, fingerprint, self.change_distance)
        if changed or self._names_back(key, holder):
            await self._release(key)
            return observation
        signature = stored_signature(observation.previous_signature)
        if distance:  # the entry keeps the fingerprint of the page the spider received
            with contextlib.suppress(BackendUnavailable, ConfigurationError):
                await self.index.call(lambda backend: backend.observe(key, previous, signature))
        self.keys.stored_by(key, holder)  # this crawl's next fetches of it are claims
        match = Match(key, previous, distance, signature)
        return Observation(match, previous, False, observation.previous_signature)

    def _names_back(self, key: str, holder: str) -> bool:
        """Whether ``key``, fetched while its entry holds the unchanged page ``holder``
        brought in an earlier crawl (a copy fetched first that names ``key`` canonical),
        takes its page's name back: a preferred host (``prefer_hosts``), or, the hosts
        alike, a URL with fewer parameters than ``holder`` (tracking or session ones; the
        ``fewer_params`` URL rule), and no process of this crawl has delivered ``holder``
        yet (its holder record, rewritten at each delivery, is older than this process).
        A holder no longer linked (a tracking link whose campaign changed) would otherwise
        leave every URL of the page its copy, and the page without an item; ``holder``
        fetched later is this URL's copy. A print or AMP view keeps the page it brought
        (it stays linked, and items keep their URL from crawl to crawl)."""
        by_host = host_preferred(key, holder, self.prefer_hosts)
        rules = tuple(rule for rule in self.prefer_urls if rule == "fewer_params")
        better = by_host if by_host is not None else preferred(key, holder, rules)
        record = self.keys.record(key)
        return (
            better
            and self.keys.holder(key) is None
            and record is not None
            and record.at < self._opened
        )

    async def _holder(self, key: str) -> str | None:
        """The other URL whose page is filed under ``key``: known to this crawl, or read
        from the holder record once per crawl (an index away: none)."""
        held = self.keys.holder(key)
        if held is not None:
            return held
        if self.keys.knows_record(key):
            return holder_of(self.keys.record(key))
        try:
            record = await self.index.call(lambda backend: backend.drop_of(key))
        except (BackendUnavailable, ConfigurationError):
            return None
        self.keys.remember_record(key, record)
        return holder_of(record)

    async def _release(self, key: str) -> None:
        """``key``'s own page holds its entry now: forget its holder record (or any record
        of it)."""
        if self.keys.knows_record(key) and self.keys.record(key) is None:
            return
        self.keys.remember_record(key, None)
        await self.forget_drop(key)

    async def _refile(self, holder: str, fingerprint: int | None, signature: int | None) -> None:
        """A page filed under a canonical URL that the canonical page itself turned out not
        to share content with keeps an entry of its own: under its own URL, with its own
        recrawl state, and no drop record calling it a copy. (What this process stored;
        a crawl of several processes knows only its own.)"""
        await self.forget_drop(holder)
        if fingerprint is None:
            return
        with contextlib.suppress(BackendUnavailable, ConfigurationError):
            await self.index.call(
                lambda backend: backend.observe(holder, fingerprint, stored_signature(signature))
            )
            self.keys.stored_by(holder, holder)
        await self._visit(holder, fingerprint, Answer(200))

    async def _look_again(
        self,
        look_again: Callable[[Any], Awaitable[Any]],
        observation: Any,
        key: str,
        own: str,
        fingerprint: int,
        signing: Signing,
    ) -> tuple[Any, str, int]:
        """A match seen again: a distinct page is filed under its own text's fingerprint
        and signature (which may still match a page elsewhere); a copy is credited to the
        page that its less shared lines match and its signature confirms, when one does,
        rather than to one sharing only template."""
        look = await look_again(observation.match)
        if look is None:
            return observation, key, fingerprint
        if look.distinct:
            again, filed = await self._observe(key, own, look.fingerprint, Signing(look.evidence))
            return again, filed, look.fingerprint

        async def credited(backend: Any) -> Match | None:
            matches = await backend.query(look.fingerprint)
            others = (m for m in matches if m.key not in (key, own))
            limit = backend.config.confirm_distance
            return judge(others, signing.under(backend.confirm_key), limit)[0]

        found = await self.index.call(credited)
        if found is not None:
            observation = observation._replace(match=found)
        return observation, key, fingerprint

    async def _prefer(
        self, key: str, own: str, fingerprint: int, match: Any, answer: Answer | None
    ) -> bool:
        """Name the cluster by this copy's URL if the preferred URLs (``prefer_urls``) rank it
        better.

        Only between URLs no page declared canonical: the index entry is renamed (the
        stored fingerprint, of the page the spider received, stays), the URL that reached
        the spider gets a filing record (its page is filed under this URL), and
        recrawl scheduling moves to this URL. The page itself is still a near-duplicate:
        its cluster already reached the spider.
        """
        if (
            not self.prefer_urls
            or key != own
            or own == match.key
            or self.keys.is_declared(match.key)
            or not preferred(own, match.key, self.prefer_urls)
        ):
            return False
        try:
            renamed = await self.index.call(lambda backend: backend.rename(match.key, own))
        except (BackendUnavailable, ConfigurationError):  # the copy is still dropped
            return False
        if not renamed:
            return False
        await self.forget(match.key)
        # The URL that reached the spider has its page filed under this URL now (the
        # copy's own record, written by the caller, says it was dropped).
        reached, _ = await self._reached(match.key)
        if reached:
            await self.record_drop(reached, own, FILED)
        await self._visit(own, fingerprint, answer)
        return True

    async def _reached(self, name: str) -> tuple[str, DropRecord | None]:
        """The URL whose fetch brought the page filed under ``name`` to the spider ("" when
        the records do not tell), and ``name``'s own record.

        ``name`` itself, unless its record says otherwise: a holder record names the copy
        fetched first and filed under this canonical URL; drop records lead, URL after
        URL that took the cluster's name (``prefer_urls``), to the URL that reached the
        spider, whose filing record names ``name`` back. A chain that does not end so is
        older than ``name``'s entry (``name`` was filed again since): ``name`` reached it."""
        own_record: DropRecord | None = None
        reached = name
        with contextlib.suppress(BackendUnavailable, ConfigurationError):
            for hop in range(MAX_HOPS):
                former = await self.index.call(functools.partial(_drop_of, url=reached))
                if hop == 0:
                    own_record = former
                if former is None or former.distance == FILED:
                    if reached == name or (former is not None and former.kept == name):
                        return reached, own_record
                    return name, own_record  # a record from before it was filed again
                if former.distance in HOLDERS:
                    return former.kept, own_record
                reached = former.kept
        return "", own_record

    async def _takes_over(self, name: str, holder: str) -> bool:
        """Whether a page to be filed under ``name``, matching the page ``holder`` names,
        takes that page over (the page is one; which URL names it follows these rules):

        1. the host preference (``prefer_hosts``): a URL of a better host takes the
           page over, one of a worse host never does, whichever arrived first;
        2. then the URL rules (``prefer_urls``) keep a holder they prefer;
        3. then the URL that held the page: ``holder`` was recorded as ``name``'s copy (a
           drop or filing record naming it) and has been filed under its own URL since,
           because it arrived first once the page had changed. The page's history is
           ``name``'s, so ``name`` takes it back, and the change is counted there.
        """
        by_host = host_preferred(name, holder, self.prefer_hosts)
        if by_host is not None:
            return by_host
        if preferred(holder, name, self.prefer_urls):
            return False
        record = await self._record(holder)
        return record is not None and record.kept == name and record.distance not in HOLDERS

    async def _record(self, url: str) -> DropRecord | None:
        """``url``'s record, read once per crawl (an index away: none)."""
        if url in self._records:
            self._records.move_to_end(url)
            return self._records[url]
        try:
            record = await self.index.call(functools.partial(_drop_of, url=url))
        except (BackendUnavailable, ConfigurationError):
            return None
        self._records[url] = record
        while len(self._records) > MEMORY_ENTRIES:
            self._records.popitem(last=False)
        return record  # type: ignore[no-any-return]

    async def _take_over(
        self, key: str, own: str, fingerprint: int, signing: Signing, match: Match
    ) -> tuple[Observation, str | None, bool] | None:
        """File the page under ``key`` in place of the entry of ``match.key`` when the
        naming rules say so (:meth:`_takes_over`); None when they do not.

        Two atomic index steps: the holder's entry is renamed to ``key`` (whose own entry
        it replaces), then the page is filed under ``key`` with its own fingerprint and
        signature; between them the page is under one name or the other, never none, so
        a copy fetched meanwhile by any process is still found. The URL that reached the
        spider with the holder's page gets a filing record naming ``key`` (no drop: it
        was delivered, which cannot be undone), and the page's recrawl history moves to
        ``key`` unless ``key`` has one of its own (:meth:`_adopt`). Returns what the
        observe of a page filed anew would, with ``key``'s previous entry; the holder's
        name (None when another process moved the entry first: then the page is judged
        again as any page); whether ``key`` adopted the holder's history.
        """
        holder = match.key
        if not await self._takes_over(key, holder):
            return None
        index = self.index
        reached, record = await self._reached(holder)
        prior = await index.call(lambda backend: backend.entry(key))
        if not await index.call(lambda backend: backend.rename(holder, key)):
            # Another process moved or dropped the entry meanwhile: judged again.
            observation, _ = await self._observe(key, own, fingerprint, signing)
            return observation, None, False
        again = await index.call(
            lambda backend: _signed(backend, "observe", key, fingerprint, signing)
        )
        # ``again.match``: another entry confirms the page too; the renamed entry stays.
        observation = Observation(
            None,
            None if prior is None else prior[0],
            True,
            None if prior is None else prior[1],
            again.rejected,
        )
        self.keys.stored_by(key, own)
        self.keys.stored_by(holder, holder)  # nothing is filed under the holder now
        self.keys.remember_record(holder, None)
        if reached and reached != key:
            await self.record_drop(reached, key, FILED)
        mine = await self._record(key)
        if mine is not None and mine.distance not in HOLDERS:
            await self.forget_drop(key)  # from when another URL named its page: not now
        if record is not None and record.distance == HELD and reached != holder:
            await self.forget_drop(holder)  # a canonical URL that holds nothing now
        elif record is not None and record.distance in (HELD_COPY, HELD_MARKED):
            # Dropped (or marked), as said.
            marked = MARKED if record.distance == HELD_MARKED else 0
            await self.record_drop(holder, key, marked, record.apart)
        adopted = await self._adopt(holder, key)
        logger.debug(
            "%s takes over the page %s named (%s)",
            key,
            holder,
            "preferred host"
            if self.prefer_hosts and host_preferred(key, holder, self.prefer_hosts)
            else "the URL that held it",
        )
        return observation, holder, adopted

    async def _adopt(self, old: str, new: str) -> bool:
        """Move ``old``'s recrawl history to ``new`` when ``new`` has none of its own (a
        page has one history), and take ``old`` off the schedule; tell whether it moved."""
        if self.recrawl is None:
            return False
        try:
            moved: bool = await self.recrawl.call(lambda store: store.adopt(old, new))
        except (BackendUnavailable, ConfigurationError) as exc:
            self._lost(exc)
            return False
        return moved

    async def status(self, key: str, answer: Answer) -> Visit | None:
        """A response with no page to read (304, 404, 5xx; status 0: the download failed
        for good): the schedule hears of it. None without a schedule or when it is away."""
        return await self._visit(key, None, answer)

    async def record_drop(
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> None:
        """Record a dropped near-duplicate (``apart``: the second test's figure); an
        unavailable (or, found mid-crawl, unusable) index only loses the record."""
        self._records.pop(url, None)
        with contextlib.suppress(BackendUnavailable, ConfigurationError):
            await self.index.call(lambda backend: backend.record_drop(url, kept, distance, apart))

    async def forget_drop(self, url: str) -> None:
        """Forget a drop record that turned out wrong; an index away only keeps it."""
        self._records.pop(url, None)
        with contextlib.suppress(BackendUnavailable, ConfigurationError):
            await self.index.call(lambda backend: backend.forget_drop(url))

    async def forget(self, key: str) -> None:
        """Take ``key`` off the recrawl schedule."""
        if self.recrawl is None:
            return
        try:
            await self.recrawl.call(lambda store: store.remove(key))
        except (BackendUnavailable, ConfigurationError) as exc:
            self._lost(exc)

    async def _visit(
        self,
        key: str,
        fingerprint: int | None,
        answer: Answer | None,
        *,
        own: bool = True,
        count_lost: bool = True,
    ) -> Visit | None:
        """Record a fetch under ``key``; validators only come from the key's own URL (a
        copy's ETag would be sent to the canonical URL) and from a page, not an error.
        ``count_lost`` False: a failure is not counted lost (the caller tries again)."""
        if self.recrawl is None or answer is None:
            return None
        status = answer.status
        validators = own and (200 <= status < 300 or status == 304)
        etag = answer.etag if validators else None
        modified = answer.last_modified if validators else None
        try:
            visit: Visit = await self.recrawl.call(
                lambda store: store.observe(
                    key, fingerprint, status=status, etag=etag, last_modified=modified
                )
            )
        except (BackendUnavailable, ConfigurationError) as exc:
            self._lost(exc, lost=count_lost)
            return None
        return visit

    def _lost(self, exc: Exception, *, lost: bool = True) -> None:
        """A recrawl update that did not happen: counted (simhash/recrawl_error by the guard
        for outages, here for the rest) and summed up in a WARNING at the close."""
        if isinstance(exc, ConfigurationError):
            self._count("recrawl_error")
            if not self._recrawl_refused:  # the reason, and the way out, once
                self._recrawl_refused = True
                logger.error(
                    "SimHash recrawl store cannot be used, the schedule is not kept: %s", exc
                )
        if lost:
            self._count("recrawl_lost")
