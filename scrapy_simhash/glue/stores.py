"""The storage one crawl component talks to: opened and checked once, closed once.

The middleware (pages) and the pipeline (items, in ``<namespace>:items``) each keep an
index, the middleware also a recrawl schedule, in the storage ``SIMHASH_INDEX_URL`` names;
both reach them through guards (timeouts, retry pauses, throttled logs) and through one
verdict step, so opening them is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_simhash.filings import Filings
from scrapy_simhash.glue import config
from scrapy_simhash.glue.guard import Guarded
from scrapy_simhash.glue.wiring import (
    check_eviction,
    check_recrawl_store,
    guarded,
    guarded_index,
    outage_log,
    storage_options,
    validate_index,
)
from scrapy_simhash.settings import backend_options, index_kwargs
from scrapy_simhash.verdict import OutageBacklog, VerdictStep

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_simhash.canonical import KeyMemory
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.recrawl import RecrawlConfig
    from scrapy_simhash.settings import GuardConfig


@dataclass
class CrawlStores:
    """A component's index and recrawl store behind guards, and the verdict step over them."""

    url: str
    namespace: str
    max_distance: int
    index: Guarded[Any]
    recrawl: Guarded[Any] | None
    verdicts: VerdictStep

    @classmethod
    def open(
        cls,
        crawler: Crawler,
        *,
        namespace: str,
        fingerprinter: Fingerprinter,
        guard: GuardConfig,
        count: Callable[[str], None],
        recrawl: RecrawlConfig | None = None,
        keys: KeyMemory | None = None,
        prefer_urls: tuple[str, ...] = (),
        prefer_hosts: tuple[str, ...] = (),
        on_lost: Callable[[], None] | None = None,
        filing_lease_secs: float = 0.0,
    ) -> CrawlStores:
        """Check the index now (a mismatched, unusable or damaged one refuses the crawl
        here, and so does an unreachable one unless SIMHASH_INDEX_START_UNREACHABLE, or a
        recrawl schedule of another layout) and
        guard what the crawl will call, the index and the schedule sharing one outage log. ``count`` receives
        stat names (``index_error``, ``recrawl_error``, ``recrawl_lost``). ``recrawl`` None
        or disabled: no schedule, and the index's previous fingerprint alone tells a change
        (by the recrawl config's change distance when there is one). Pages passed unchecked
        during an outage (SIMHASH_ON_INDEX_ERROR "pass") are indexed when the index is back,
        up to SIMHASH_OUTAGE_BACKLOG_PAGES of them; ``on_lost`` hears when the storage lost
        the namespace mid-crawl."""
        url = config.index_url(crawler.settings)
        kwargs = index_kwargs(
            crawler.settings,
            namespace=namespace,
            bits=fingerprinter.bits,
            scheme=fingerprinter.scheme,
        )
        opened = validate_index(url, kwargs, start_unreachable=guard.start_unreachable)
        check_eviction(crawler, url, kwargs, guard, reachable=opened)
        outages = outage_log(crawler, url, guard)
        index = guarded_index(
            url,
            kwargs,
            guard,
            lambda: count("index_error"),
            outages,
            on_lost=on_lost,
            opened=opened,
        )
        store = None
        if recrawl is not None and recrawl.enabled:
            # The index's client options, and its SQLite busy timeout.
            options = storage_options(url, backend_options(crawler.settings), guard)
            if opened:
                check_recrawl_store(url, namespace, recrawl, options)
            store = guarded(
                "recrawl store",
                url,
                _recrawl_opener(url, namespace, recrawl, options),
                guard,
                lambda: count("recrawl_error"),
                outages,
            )
        filings = Filings(index, filing_lease_secs, count=count) if filing_lease_secs > 0 else None
        verdicts = VerdictStep(
            index,
            store,
            bits=fingerprinter.bits,
            change_distance=recrawl.change_distance if recrawl is not None else 0,
            keys=keys,
            prefer_urls=prefer_urls,
            prefer_hosts=prefer_hosts,
            count=count,
            backlog=OutageBacklog(guard.backlog_pages) if guard.on_error == "pass" else None,
            filings=filings,
        )
        return cls(url, namespace, int(kwargs["max_distance"]), index, store, verdicts)

    async def aclose(self) -> None:
        """Index what the outage backlog still holds if the index answers (trying it
        once more, retry pause or not), then close."""
        backlog = self.verdicts.backlog
        if backlog is not None and backlog.pages:
            self.index.retry_now()
        await self.verdicts.finish()
        if self.verdicts.filings is not None:  # a crawl closing was not killed
            await self.verdicts.filings.finish()
        await self.index.aclose()
        if self.recrawl is not None:
            await self.recrawl.aclose()


def _recrawl_opener(
    url: str, namespace: str, recrawl: RecrawlConfig, options: Mapping[str, Any]
) -> Callable[[], Any]:
    from scrapy_simhash.recrawl import open_async_recrawl_store

    async def opener() -> Any:
        # Off the event loop, as the index opens: the SQLite file may make it wait.
        return await open_async_recrawl_store(
            url, namespace=namespace, config=recrawl, options=options
        )

    return opener
