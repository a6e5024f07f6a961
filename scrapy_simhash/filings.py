"""The filings this crawl process holds in flight: pages it filed and has not yet delivered.

A page is held (:meth:`~scrapy_simhash.index.base.NearDuplicateIndex.hold`) before the index
files it, its mark renewed while its callback runs (:meth:`Filings.keep_renewed`), and
settled once the callback has returned and its items have passed the pipelines
(:meth:`Filings.delivered`, which the crawl calls). A process killed in between leaves a mark
that ages: a copy meeting it within the lease waits for the page's holder, after it takes the
page over (:mod:`scrapy_simhash.verdict`). No Scrapy here; time and sleep are injected.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from scrapy_simhash.exceptions import BackendUnavailable, ConfigurationError, InvalidKeyError
from scrapy_simhash.index.inflight import BUSY, FREE, MINE, TAKEN, Hold

logger = logging.getLogger(__name__)

#: Default lease of a filing in flight (SIMHASH_FILING_LEASE_SECS): a holder that has not
#: renewed its mark for this long is taken for dead.
LEASE_SECS = 60.0
#: A copy waiting for a live holder asks again at least this often (seconds).
POLL_SECS = 1.0
#: A copy waits at most this many leases for a holder that keeps renewing its mark; then
#: the filing is taken as delivered (its holder is alive) and the copy judged as before.
MAX_WAIT_LEASES = 4
#: Failures of the storage that leave a mark as it was (the page goes on unheld).
_AWAY = (BackendUnavailable, ConfigurationError, InvalidKeyError)


class Filings:
    """The marks one crawl process holds, by owner token (one per page).

    ``index`` is the guarded index (``await index.call(lambda backend: ...)``); ``count``
    receives stat names (``filing/...``); ``sleep`` waits (injected in tests).
    """

    def __init__(
        self,
        index: Any,
        lease_secs: float = LEASE_SECS,
        *,
        count: Callable[[str], None] = lambda name: None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        process: str | None = None,
    ) -> None:
        if not lease_secs > 0:
            raise ConfigurationError(f"the filing lease must be positive, got {lease_secs!r}")
        self.index = index
        self.lease_secs = float(lease_secs)
        self.max_wait_secs = MAX_WAIT_LEASES * self.lease_secs
        self.poll_secs = min(POLL_SECS, self.lease_secs / 4)
        self.sleep = sleep or self._nap
        #: Set by :meth:`stop`: the renewal loop ends, and waits end early.
        self._stopping: asyncio.Event | None = None
        self._count = count
        self._process = process or uuid.uuid4().hex[:16]
        self._numbers = itertools.count(1)
        #: owner -> the keys it holds (in the order held).
        self.held: dict[str, list[str]] = {}
        #: owner -> the keys whose stale mark (a dead holder's) it took.
        self.taken: dict[str, set[str]] = {}
        #: Owners whose settle failed (the index away): settled at the next renewal.
        self._unsettled: set[str] = set()

    def _stop_event(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    async def _nap(self, secs: float) -> None:
        """Sleep ``secs``, or until :meth:`stop`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop_event().wait(), secs)

    def stop(self) -> None:
        """End :meth:`keep_renewed` at its next turn (never in the middle of a call)."""
        self._stop_event().set()

    def deferred(self) -> None:
        """Count a page that waited for a page in flight."""
        self._count("filing/deferred")

    def waited_out(self) -> None:
        """Count a page that waited out a holder still renewing its mark."""
        self._count("filing/waited_out")

    def taken_over(self) -> None:
        """Count a page taken over from a holder that died."""
        self._count("filing/taken_over")

    def owner(self) -> str:
        """A new owner token, for one page."""
        return f"{self._process}:{next(self._numbers)}"

    async def _hold(self, owner: str, key: str, *, create: bool, away: bool = True) -> Hold | None:
        """One hold; a storage failure is None (the page goes on unheld, as before there
        were marks), or raised unless ``away``."""
        lease = self.lease_secs
        try:
            found: Hold = await self.index.call(
                lambda backend: backend.hold(key, owner, lease, create=create)
            )
        except _AWAY:
            if not away:
                raise
            return None
        if found.state == TAKEN or (create and found.state != BUSY):
            self.held.setdefault(owner, []).append(key)
        if found.state == TAKEN:
            self.taken.setdefault(owner, set()).add(key)
        return found

    async def hold(self, owner: str, keys: Iterable[str], *, patient: bool = True) -> Hold | None:
        """Hold ``keys`` for ``owner`` before its page is filed under one of them; the first
        hold found busy (another live page in flight under that key: the page waits), or
        None. A busy answer releases what was held; not ``patient``, a busy key is left to
        its holder and the others are held. A storage failure is raised (the verdict's
        outage, or unusable index, or invalid key), what was held released."""
        for key in dict.fromkeys(keys):
            try:
                found = await self._hold(owner, key, create=True, away=False)
            except _AWAY:
                await self.release(owner)
                raise
            if patient and found is not None and found.state == BUSY:
                await self.release(owner)
                return found
        return None

    async def check(self, owner: str, key: str) -> Hold:
        """The mark of ``key``, whose entry ``owner``'s page matched: busy (its holder is
        alive: wait), taken (its holder died: ``owner`` holds it now and takes the page
        over) or free (settled, or the index away: the match stands)."""
        found = await self._hold(owner, key, create=False)
        return found if found is not None else Hold(FREE)

    def took(self, owner: str, key: str) -> bool:
        """Whether ``owner`` took ``key``'s mark from a holder that died."""
        return key in self.taken.get(owner, ())

    def retry_after(self, busy: Hold) -> float:
        """Seconds to wait before asking again about a busy mark."""
        return max(0.01, min(self.poll_secs, self.lease_secs - busy.age))

    async def release(self, owner: str) -> None:
        """Settle every mark ``owner`` holds (its page delivered, or nothing filed)."""
        keys = self.held.pop(owner, [])
        self.taken.pop(owner, None)
        failed = False
        for key in keys:
            try:
                await self.index.call(lambda backend, key=key: backend.settle(key, owner))
            except _AWAY:
                failed = True
        if failed:  # tried again at the next renewal
            self.held[owner] = keys
            self._unsettled.add(owner)

    async def delivered(self, owner: str) -> None:
        """``owner``'s page reached its callback, which returned, and its items passed the
        pipelines: its filing is confirmed."""
        await self.release(owner)

    async def renew(self) -> None:
        """Renew every mark held (a live holder's page is never taken over), and settle
        what an index away kept from being settled."""
        for owner in list(self._unsettled):
            self._unsettled.discard(owner)
            await self.release(owner)
        for owner, keys in list(self.held.items()):
            if owner in self._unsettled:
                continue
            for key in list(keys):
                found = await self._renew(owner, key)
                if found is None or found.state == MINE:
                    continue
                if found.state in (BUSY, TAKEN):
                    self._count("filing/lease_lost")
                    logger.warning(
                        "SimHash: the filing of %s was taken for dead by another crawl process "
                        "(its mark was not renewed for %.1f s, the filing lease being %g s): "
                        "the page may reach a callback twice",
                        key,
                        found.age,
                        self.lease_secs,
                    )
                if found.state != TAKEN:  # gone (FREE) or another's (BUSY): not ours to settle
                    keys.remove(key)

    async def _renew(self, owner: str, key: str) -> Hold | None:
        lease = self.lease_secs
        try:
            found: Hold = await self.index.call(
                lambda backend: backend.hold(key, owner, lease, create=False)
            )
        except _AWAY:
            return None
        return found

    async def keep_renewed(self) -> None:
        """Renew the marks every third of a lease, until :meth:`stop`."""
        stopping = self._stop_event()
        while not stopping.is_set():
            await self.sleep(self.lease_secs / 3)
            if stopping.is_set():
                break
            with contextlib.suppress(Exception):
                await self.renew()

    async def finish(self) -> None:
        """At the close of a crawl that was not killed: every page it holds was delivered
        or will not be (its request ended), so its marks go."""
        self._unsettled.clear()
        for owner in list(self.held):
            await self.release(owner)
