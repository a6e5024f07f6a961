"""Scrapy glue of the hosts' template memory (``SIMHASH_TEMPLATES_ENABLED``, on by default).

The judge (:mod:`scrapy_simhash.judge`, whose ``Templates`` protocol this satisfies) asks
it four things per page (:mod:`scrapy_simhash.template` decides each): the page's
fingerprint with its host's template set aside, to count the page as seen, whether a
match on its own host stands, and, for a page kept, to count its lines as the host's. The
verdict says what was set aside or found distinct, for the stats. A process keeps a
short-lived copy of each host's memory (:data:`REFRESH_SECS`) and reads it again for
every same-host match, the one answer that must see what other processes learned.

**At most one store write per page.** Counting a page as seen is a write that cannot wait:
a page judged at the same time in another process must find it. Counting a kept page can:
it is queued and written with this process's next page, in the same call (write-behind of
the kept part). The trade: another process sees a page kept here one page of this process
late (at the close, the queue is written before the store is closed); this process's own
copy, and every memory it reads, count its queued pages at once. A queue that could not
be written is kept for the next write, up to :data:`MAX_QUEUED` pages. Pages seen while a
write is in flight wait for the next one and share it (group commit: concurrent pages make
one store call, one thread hop and one transaction), each judged once its own counts are
written.

A store that fails costs only the memory: pages are judged as without it (the match
stands, nothing is set aside). It sits behind the guard the index sits behind (timeouts,
retry pauses), its outages said in the storage's one outage log and counted as
``simhash/template/error``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy_simhash._runners import StoreThread
from scrapy_simhash.confirm import sketch_of
from scrapy_simhash.exceptions import BackendUnavailable, ConfigurationError
from scrapy_simhash.glue.guard import Guarded, OutageLog
from scrapy_simhash.settings import GuardConfig
from scrapy_simhash.storage import open_template_store, storage_for
from scrapy_simhash.template import (
    EMPTY,
    HostMemory,
    SecondLook,
    apply_template,
    host_of,
    learnable,
    second_look,
)
from scrapy_simhash.template.store import Count, TemplateStore

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint
    from scrapy_simhash.index.base import Match

logger = logging.getLogger("scrapy_simhash.middleware")

#: How long a process uses its copy of a host's memory before reading it again.
REFRESH_SECS = 5.0
#: Hosts whose memory a process keeps a copy of.
CACHED_HOSTS = 1024
#: Kept pages queued at most for the next write (write-behind, see the module); beyond it,
#: while the store fails, the oldest are forgotten.
MAX_QUEUED = 1024

T = TypeVar("T")


class TemplateMemory:
    """One crawl process's access to the namespace's template store (see the module)."""

    def __init__(
        self,
        opener: Callable[[], TemplateStore],
        fingerprinter: Fingerprinter,
        *,
        count: Callable[[str], None],
        timeout_secs: float,
        clock: Callable[[], float] = time.monotonic,
        url: str = "",
        guard: GuardConfig | None = None,
        outages: OutageLog | None = None,
    ) -> None:
        """``guard`` (its retry pause and log interval; the defaults of the settings when
        None) and ``outages`` (the outage log of the storage ``url``, shared with the
        index's guard) put the store behind the guard the index and the schedule sit
        behind: the same timeouts, retry pauses and outage lines, and the same answer to
        a file deleted under the crawl (SIMHASH_ON_INDEX_LOST: "close" opens no new one
        where the lost file is to be restored)."""
        guard = guard if guard is not None else GuardConfig.from_settings({})

        async def open_store() -> StoreThread[TemplateStore]:
            return StoreThread(opener, "simhash-templates")  # opened on its first call

        self._store: Guarded[StoreThread[TemplateStore]] = Guarded(
            "SimHash template store",
            url,
            open_store,
            timeout=timeout_secs,
            retry_after=guard.retry_after,
            log_interval=guard.log_interval,
            on_error=lambda: count("template/error"),
            outages=outages,
            reopen_lost=guard.on_lost != "close",
            meanwhile="pages are judged without their host's template",
        )
        self.fingerprinter = fingerprinter
        self._count = count
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, HostMemory]] = OrderedDict()
        #: Whether a store that cannot be used as configured was said.
        self._refused = False
        #: Kept pages not yet written (write-behind): they go with the next write.
        self._queued: list[Count] = []
        #: Pages seen while a write was in flight, and the write that will carry them
        #: (resolved once it is done): see() of concurrent pages share one store call.
        self._waiting: list[Count] = []
        self._next: asyncio.Future[None] | None = None
        self._writing = False
        #: The writes started for pages that waited (awaited at the close).
        self._writes: set[asyncio.Future[None]] = set()

    @classmethod
    def open(
        cls,
        url: str,
        namespace: str,
        fingerprinter: Fingerprinter,
        *,
        count: Callable[[str], None],
        guard: GuardConfig,
        outages: OutageLog | None = None,
        ttl_secs: float | None = None,
        options: dict[str, Any] | None = None,
    ) -> TemplateMemory | None:
        """None when the storage of ``url`` keeps no template memory (one of a user's own
        registering no template store): pages are then judged as without it."""
        if storage_for(url, "index").templates is None:
            return None
        extra = dict(options or {})
        if ttl_secs:
            extra["ttl_secs"] = ttl_secs
        return cls(
            lambda: open_template_store(url, namespace, **extra),
            fingerprinter,
            count=count,
            timeout_secs=guard.timeout,
            url=url,
            guard=guard,
            outages=outages,
        )

    async def _call(self, func: Callable[[TemplateStore], T]) -> T | None:
        """``func(store)`` through the guard; None when the store failed (counted as
        simhash/template/error and said by the storage's outage log, as the index's
        failures are) or cannot be used as configured (said once)."""
        try:
            result: T = await self._store.call(lambda thread: thread.call(func))
        except BackendUnavailable:
            return None
        except ConfigurationError as exc:
            self._count("template/error")
            if not self._refused:
                self._refused = True
                logger.error(
                    "SimHash template store cannot be used, pages are judged "
                    "without their host's template: %s",
                    exc,
                )
            return None
        return result

    async def _memory(self, host: str, *, fresh: bool = False) -> HostMemory:
        now = self._clock()
        cached = self._cache.get(host)
        if cached is not None and not fresh and now - cached[0] < REFRESH_SECS:
            self._cache.move_to_end(host)
            return cached[1]
        memory = await self._call(lambda store: store.read(host))
        if memory is None:
            return cached[1] if cached is not None else EMPTY
        for count in self._queued:  # this process's kept pages, not yet written
            if count.host == host:
                memory = count.apply(memory)
        self._cache[host] = (now, memory)
        self._cache.move_to_end(host)
        while len(self._cache) > CACHED_HOSTS:
            self._cache.popitem(last=False)
        return memory

    async def apply(self, url: str, page: PageFingerprint) -> PageFingerprint:
        """``page`` with its host's template set aside (the same page when none applies)."""
        memory = await self._memory(host_of(url))
        return apply_template(self.fingerprinter, page, memory.template())

    async def second_look(self, url: str, page: PageFingerprint, match: Match) -> SecondLook | None:
        """Whether a match on the page's own host stands (None) or what the page is."""
        host = host_of(url)
        if host_of(match.key) != host:
            return None
        memory = await self._memory(host, fresh=True)
        return second_look(
            self.fingerprinter, page, memory, sketch_of(match.signature), match.fingerprint
        )

    async def see(self, url: str, page: PageFingerprint) -> None:
        """Count a fetched page's lines before it is judged: a page judged at the same
        time in another process is then counted when either looks again at a match. The
        kept pages queued since the last write go with it (the page's one write)."""
        slots = learnable(page)
        if slots:
            await self._write([Count(host_of(url), tuple(slots))])

    async def learn(self, url: str, page: PageFingerprint) -> None:
        """Count a kept page's lines in its host's memory: in this process's copy now, in
        the store with this process's next write (see the module)."""
        host = host_of(url)
        slots = learnable(page)
        if not slots:
            return
        count = Count(host, tuple(slots), kept=True)
        self._queued.append(count)
        del self._queued[:-MAX_QUEUED]
        cached = self._cache.get(host)
        if cached is not None:
            self._cache[host] = (cached[0], count.apply(cached[1]))

    async def _write(self, counts: list[Count]) -> None:
        """Return once ``counts`` are written, with every queued kept page, or the write
        failed. Group commit: while a write is in flight, the pages seen meanwhile wait
        for the next one and share it (one store call, one thread hop and one transaction
        for all of them, not one each); each page still waits for its own counts."""
        self._waiting.extend(counts)
        if not self._writing:
            await self._write_waiting()
            return
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._next)

    async def _write_waiting(self) -> None:
        """Write what waits in one store call; then start the write of what came
        meanwhile. A failed call keeps the kept pages queued for the next."""
        counts, self._waiting = self._waiting, []
        done, self._next = self._next, None
        if not counts and not self._queued:
            if done is not None:
                done.set_result(None)
            return
        queued, self._queued = self._queued, []
        batch = [*queued, *counts]

        def record(store: TemplateStore) -> bool:
            store.record(batch)
            return True

        self._writing = True
        try:
            if await self._call(record) is None:
                kept = [*queued, *(count for count in counts if count.kept)]
                self._queued = [*kept, *self._queued][-MAX_QUEUED:]
        finally:
            self._writing = False
            if done is not None:
                done.set_result(None)
            if self._next is not None:
                write = asyncio.ensure_future(self._write_waiting())
                self._writes.add(write)
                write.add_done_callback(self._writes.discard)

    async def flush(self) -> None:
        """Write the kept pages still queued (after the writes in flight)."""
        while self._writes:
            await asyncio.wait(set(self._writes))
        if self._queued or self._waiting:
            await self._write([])

    async def aclose(self) -> None:
        """Write what is queued, then close the store (a store that fails to close is
        counted and said, never raised into the spider's close)."""
        await self.flush()
        await self._store.aclose()
