"""Downloader middleware: drop near-duplicate pages before the spider parses them.

Placement: ``process_response`` runs from high priority numbers to low, so at 540 it sees the
response after redirects (600), decompression (590), meta refresh (580) and retries (550) —
the body a spider would parse, once per final page.

Each considered response is fingerprinted (main text, SimHash) and judged by the verdict
step (:mod:`scrapy_simhash.verdict`): a page within ``SIMHASH_MAX_DISTANCE`` bits of a page
kept under another key is a near-duplicate; the same key seen again is a change observation
for recrawl scheduling, never a duplicate of itself. This module decides nothing of that: it
skips what is not a page, picks the key, and turns the verdict into Scrapy's actions, stats
and signals.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse
from scrapy.http.request import NO_CALLBACK

from scrapy_simhash import settings as simhash_settings
from scrapy_simhash import signals
from scrapy_simhash._redis import mask_url
from scrapy_simhash.exceptions import ConfigurationError, InvalidKeyError
from scrapy_simhash.glue.dust import DustGlue
from scrapy_simhash.glue.errors import NearDuplicate
from scrapy_simhash.glue.follow import (
    FILING_DELIVERED,
    FILING_META,
    spider_middleware_installed,
)
from scrapy_simhash.glue.keys import CanonicalKeys
from scrapy_simhash.glue.shared_queue import unpersisted_queue
from scrapy_simhash.glue.stores import CrawlStores
from scrapy_simhash.glue.templates import TemplateMemory
from scrapy_simhash.glue.wiring import (
    IndexErrorPolicy,
    check_crawl_settings,
    outage_log,
    refusing_start,
    report_close,
    report_lost_namespace,
    send_signal,
    storage_options,
)
from scrapy_simhash.glue.workers import FingerprintRunner
from scrapy_simhash.judge import Judge
from scrapy_simhash.settings import (
    MiddlewareConfig,
    backend_options,
    content_type_matches,
    enabled,
    fingerprint_config,
    follow_links_asked,
    follows_duplicate_links,
    index_ttl_secs,
    recrawl_config,
)
from scrapy_simhash.text import compiled
from scrapy_simhash.verdict import (
    DUPLICATE,
    INVALID_KEY,
    UNCHECKED,
    UNIQUE,
    Answer,
    Verdict,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_simhash.fingerprint import PageFingerprint

logger = logging.getLogger("scrapy_simhash.middleware")  # the name users filter on

#: Priority in DOWNLOADER_MIDDLEWARES used by the add-on (see the module docstring).
PRIORITY = 540


def answer_of(response: Response) -> Answer:
    """The status and validators of a response, for recrawl scheduling."""
    etag = response.headers.get(b"ETag")
    modified = response.headers.get(b"Last-Modified")
    return Answer(
        response.status,
        etag.decode("latin-1") if etag else None,
        modified.decode("latin-1") if modified else None,
    )


def _not_a_page(request: Request) -> bool:
    """A request no spider callback receives (robots.txt, sitemaps' own internal fetches):
    its response is not a page of the site, neither checked nor scheduled for revisits."""
    return request.callback is NO_CALLBACK


class SimhashDownloaderMiddleware:
    """Fingerprint responses, drop near-duplicates, report changes to recrawl scheduling."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not enabled(settings):
            raise NotConfigured("SIMHASH_ENABLED is False: near-duplicate detection is off")
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = MiddlewareConfig.from_settings(settings)
        self.keys = CanonicalKeys(
            use_canonical=self.config.use_canonical, canonicalize=self.config.canonicalize_keys
        )
        self.runner = FingerprintRunner(
            fingerprint_config(settings),
            workers=self.config.workers,
            inline_max_bytes=self.config.inline_max_bytes,
            cache_size=self.config.body_cache_size,
        )
        self.stores = CrawlStores.open(
            crawler,
            namespace=simhash_settings.namespace(
                settings, getattr(crawler.spidercls, "name", None)
            ),
            fingerprinter=self.runner.fingerprinter,
            guard=self.config.guard,
            count=self._inc,
            recrawl=recrawl_config(settings),
            keys=self.keys.memory,
            prefer_urls=self.config.prefer_urls,
            prefer_hosts=self.config.prefer_hosts,
            on_lost=self._index_lost,
            filing_lease_secs=self._filing_lease(),
        )
        self.index, self.recrawl = self.stores.index, self.stores.recrawl
        self.verdicts = self.stores.verdicts
        self.errors = IndexErrorPolicy(
            crawler, self.config.guard.on_error, self.config.on_mismatch, self._inc
        )
        self.dust = self._open_dust()
        self.templates = self._open_templates()
        self.judge = Judge(self.verdicts, self.templates)
        self.follow_links = self._follow_links()
        self.filings = self.verdicts.filings
        self._renewing: asyncio.Future[None] | None = None
        self._settling: set[asyncio.Future[None]] = set()
        crawler.signals.connect(self._delivered, signal=FILING_DELIVERED)
        crawler.signals.connect(self._spider_opened, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    @refusing_start
    def from_crawler(cls, crawler: Crawler) -> SimhashDownloaderMiddleware:
        """Scrapy's way in: a crawl that cannot work (no asyncio reactor, an old Scrapy)
        stops here, and misspelt settings are named. Tests that drive the middleware from
        their own event loop build it directly."""
        if enabled(crawler.settings):
            check_crawl_settings(crawler.settings)
        return cls(crawler)

    def _open_dust(self) -> DustGlue | None:
        """URL rule learning (SIMHASH_DUST_ENABLED): skip fetching known copies."""
        if not DustGlue.enabled(self.crawler.settings):
            return None
        from scrapy_simhash.fingerprint import hamming

        stores, guard = self.stores, self.config.guard
        return DustGlue(
            self.crawler,
            self.index,
            self.keys,
            url=stores.url,
            namespace=stores.namespace,
            max_distance=stores.max_distance,
            bits=self.runner.fingerprinter.bits,
            hamming=hamming,
            guard=guard,
            outages=outage_log(self.crawler, stores.url, guard),
        )

    def _follow_links(self) -> bool:
        """Whether near-duplicates reach the callback for their links (their items dropped by
        SimhashSpiderMiddleware). Without that middleware their items would be exported:
        a crawl that asked for following by name refuses to start; one that did not drops
        copies outright, as the default did before, and says how to follow."""
        settings = self.crawler.settings
        if not follows_duplicate_links(settings):
            return False
        if spider_middleware_installed(settings):
            return True
        if follow_links_asked(settings):
            raise ConfigurationError(
                "SIMHASH_FOLLOW_DUPLICATE_LINKS is on but SPIDER_MIDDLEWARES lacks "
                "scrapy_simhash.SimhashSpiderMiddleware, which drops the items of the "
                "near-duplicates passed for their links: add it (priority 50), enable "
                'the add-on (ADDONS = {"scrapy_simhash.Addon": 0}), or set '
                "SIMHASH_FOLLOW_DUPLICATE_LINKS = False"
            )
        logger.info(
            "SimHash drops near-duplicates without following their links: "
            "scrapy_simhash.SimhashSpiderMiddleware is not in SPIDER_MIDDLEWARES (the add-on "
            "installs it); listing pages dropped as copies then end discovery"
        )
        return False

    def _filing_lease(self) -> float:
        """SIMHASH_FILING_LEASE_SECS, when SimhashSpiderMiddleware is there to say when a
        page was delivered; without it a page is filed for good at once (as said)."""
        lease = self.config.filing_lease_secs
        if lease > 0 and not spider_middleware_installed(self.crawler.settings):
            logger.info(
                "SimHash files pages for good when they reach the spider: "
                "scrapy_simhash.SimhashSpiderMiddleware, which says when a page was delivered, "
                "is not in SPIDER_MIDDLEWARES (SIMHASH_FILING_LEASE_SECS has no effect)"
            )
            return 0.0
        return lease

    def _delivered(self, token: str) -> None:
        """A page's callback returned and its items passed the pipelines: its filing is
        confirmed (SimhashSpiderMiddleware says so)."""
        if self.filings is not None:
            settling = asyncio.ensure_future(self.filings.delivered(token))
            self._settling.add(settling)
            settling.add_done_callback(self._settling.discard)

    def _index_lost(self) -> None:
        """The storage lost this namespace mid-crawl: said with what went, then
        SIMHASH_ON_INDEX_LOST decides whether the crawl goes on."""
        get = self.stats.get_value
        kept = get("simhash/unique", 0) + get("simhash/outage/indexed_later", 0)
        lost = [
            f"the fingerprints of the pages kept ({kept} of them by this crawl process)",
            "the drop records",
        ]
        if self.recrawl is not None:
            lost.append("the recrawl schedule")
        if getattr(self, "templates", None) is not None:
            lost.append("the hosts' templates")
        if getattr(self, "dust", None) is not None:
            lost.append("the URL rules")
        report_lost_namespace(
            self.crawler,
            self.config.guard.on_lost,
            url=self.stores.url,
            namespace=self.stores.namespace,
            lost=", ".join(lost),
            count=self._inc,
            log=logger,
        )

    def _open_templates(self) -> TemplateMemory | None:
        """Each host's template learned from its pages (SIMHASH_TEMPLATES_ENABLED)."""
        if not self.config.templates:
            return None
        settings = self.crawler.settings
        url, guard = self.stores.url, self.config.guard
        return TemplateMemory.open(
            url,
            self.stores.namespace,
            self.runner.fingerprinter,
            count=self._inc,
            guard=guard,
            outages=outage_log(self.crawler, url, guard),
            ttl_secs=index_ttl_secs(settings),
            options=storage_options(url, backend_options(settings), guard),
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def _spider_opened(self, spider: Any = None) -> None:
        self.runner.start()
        shared = unpersisted_queue(self.crawler.settings)
        if shared is not None:
            logger.warning("SimHash: %s", shared)
        logger.info(
            "SimHash near-duplicate detection on: index %s, namespace %r, %d-bit, "
            "%s duplicates, %d fingerprint worker(s)",
            mask_url(self.stores.url),
            self.stores.namespace,
            self.runner.fingerprinter.bits,
            "dropping" if self.config.drop_duplicates else "marking",
            self.config.workers,
        )
        if not compiled.AVAILABLE:
            logger.warning("SimHash: %s", compiled.MISSING)

    async def _spider_closed(self, spider: Any = None, reason: str = "") -> None:
        self.runner.close()
        if self.filings is not None:
            self.filings.stop()  # ends the renewals between two calls, never inside one
        pending = {*self._settling, *([self._renewing] if self._renewing else [])}
        if pending:
            await asyncio.wait(pending, timeout=self.config.guard.timeout)
        for name, value in self.runner.stats().items():
            self.stats.set_value(f"simhash/{name}", value)
        await self.stores.aclose()
        if self.dust is not None:
            await self.dust.aclose()
        if self.templates is not None:
            await self.templates.aclose()
        report_close(self.stats, logger)

    # -- per response ------------------------------------------------------------------------

    def _inc(self, name: str, count: int = 1) -> None:
        self.stats.inc_value(f"simhash/{name}", count)

    def _skip_reason(self, request: Request, response: Response) -> str | None:
        if request.meta.get("dont_simhash"):
            return "meta"
        if _not_a_page(request):
            return "not_a_page"
        if not 200 <= response.status < 300:
            return "status"
        content_type = response.headers.get(b"Content-Type")
        if content_type is None:
            # No header: trust Scrapy's sniffing of the body.
            return None if isinstance(response, TextResponse) else "content_type"
        text = content_type.decode("latin-1")
        if not content_type_matches(text, self.config.content_types):
            return "content_type"
        return None

    async def process_request(self, request: Request, spider: Any = None) -> None:
        """Known copies are not fetched (SIMHASH_DUST_ENABLED; KnownCopy is raised)."""
        if self.dust is not None:
            await self.dust.process_request(request)

    async def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        request.meta.pop(FILING_META, None)  # a token copied from another page's meta
        cached = "cached" in response.flags
        skip = self._skip_reason(request, response)
        if skip == "status" and not cached:
            # 304, 404, 5xx...: no page to fingerprint, but the schedule must hear of it.
            await self._record_status(request, response)
        if skip is not None:
            if response.status != 304:
                self._inc(f"skipped/{skip}")
            return response
        return await self._handle(request, response, cached)

    async def _handle(self, request: Request, response: Response, cached: bool) -> Response:
        self._inc("pages")
        if cached:
            self._inc("cached")
        try:
            key, own = self.keys.keys(request, response)
        except InvalidKeyError as exc:
            verdict = Verdict(UNCHECKED, reason=self._invalid_key(response, exc))
            await self._observed(request, response, self._meta(request, verdict))
            return response
        page, reason = await self._fingerprint(response)
        owner = None
        if self.filings is not None:
            owner = self.filings.owner()
            if self._renewing is None:  # in the crawl's loop, from the first page on
                self._renewing = asyncio.ensure_future(self.filings.keep_renewed())
        url_rules = None if self.dust is None else functools.partial(self.dust.observed, request)
        verdict = await self.judge.page(
            key,
            own,
            page,
            None if cached else answer_of(response),
            reason=reason,
            owner=owner,
            url_rules=url_rules,
            marking=not self.config.drop_duplicates,
        )
        if owner is not None and verdict.outcome == UNIQUE:
            request.meta[FILING_META] = owner  # in flight until SimhashSpiderMiddleware says
        self._count_facts(verdict)
        if verdict.outcome == DUPLICATE:
            return await self._duplicate(request, response, verdict)
        if verdict.outcome == UNIQUE:
            self._inc("unique")
            if verdict.changed is not None:
                self._inc("changed" if verdict.changed else "unchanged")
        elif verdict.no_text:
            self._inc("no_text")
        await self._observed(request, response, self._meta(request, verdict))
        try:
            passed = self.errors.apply(
                verdict, checking=response.url, things="pages", drop=IgnoreRequest
            )
        except BaseException:
            self._undelivered(request)
            raise
        if passed:
            return response
        if verdict.outcome == INVALID_KEY:
            self._invalid_key(response, verdict.error)
        elif verdict.changed is False and self.config.skip_unchanged:
            self._inc("skipped_unchanged")
            self._undelivered(request)
            raise IgnoreRequest(f"unchanged since the last visit: {verdict.key}")
        return response

    def _count_facts(self, verdict: Verdict) -> None:
        """The stats of what the judge found on the way to its verdict."""
        if verdict.rejected:
            self._inc("confirm/rejected", verdict.rejected)
        if verdict.exact:
            self._inc("exact")
        if verdict.template_set_aside:
            self._inc("template/applied")
        if verdict.template_distinct:
            self._inc("template/kept_distinct")

    def _undelivered(self, request: Request) -> None:
        """A page kept that will not reach the callback: nothing of it is in flight."""
        token = request.meta.pop(FILING_META, None)
        if token is not None:
            self._delivered(token)

    async def _fingerprint(self, response: Response) -> tuple[PageFingerprint | None, str | None]:
        """The page's fingerprint, or None and why (the fingerprinting failed)."""
        content_type = response.headers.get(b"Content-Type")
        index = self.stores.index.current  # its key, when open, for a worker to sign under
        try:
            page = await self.runner.fingerprint(
                response.body,
                content_type.decode("latin-1") if content_type else None,
                index.confirm_key if index is not None else None,
            )
        except Exception as exc:
            self._inc("error")
            logger.warning(
                "SimHash could not fingerprint %s; passing it: %r",
                response.url,
                exc,
                exc_info=True,
            )
            return None, f"fingerprint failed: {type(exc).__name__}"
        return page, None

    async def _duplicate(self, request: Request, response: Response, verdict: Verdict) -> Response:
        self._inc("duplicate")
        follow = self.follow_links
        info = self._meta(request, verdict.but(links_only=follow))
        await send_signal(
            self.crawler, signals.near_duplicate, request=request, response=response, info=info
        )
        await self._observed(request, response, info)
        url, kept, distance = response.url, str(verdict.duplicate_of), int(verdict.distance or 0)
        # What it copies is worked out only for a line that is logged (most crawls log INFO).
        copied = self._copied(url, kept) if logger.isEnabledFor(logging.DEBUG) else ""
        if not self.config.drop_duplicates:
            logger.debug(
                "Near-duplicate %s %s (distance %d), kept (mark-only mode)", url, copied, distance
            )
            return response
        self._inc("dropped")
        if follow:
            logger.debug(
                "Dropped near-duplicate %s %s (distance %d): passed for its links, items dropped",
                url,
                copied,
                distance,
            )
            return response
        logger.debug("Dropped near-duplicate %s %s (distance %d)", url, copied, distance)
        raise NearDuplicate(url, kept, distance)

    def _copied(self, url: str, kept: str) -> str:
        """What a fetched copy copies, for the log: the URL fetched and kept, and the key
        it was filed under when that differs (a copy arrived first and was filed under the
        canonical URL it names, which is the URL now fetched and dropped)."""
        holder = self.keys.memory.holder(kept)
        if holder is not None and holder != url:
            return f"of {holder}, fetched first and kept under its canonical URL {kept}"
        if kept == url:
            return "of the page another URL filed under this canonical URL"
        return f"of {kept}"

    @staticmethod
    def _meta(request: Request, verdict: Verdict) -> dict[str, Any]:
        """``meta["simhash"]``, which becomes response.meta once Scrapy binds them."""
        info: dict[str, Any] = dict(verdict)
        request.meta["simhash"] = info
        return info

    async def _observed(self, request: Request, response: Response, info: dict[str, Any]) -> None:
        await send_signal(
            self.crawler, signals.page_observed, request=request, response=response, info=info
        )

    async def _record_status(self, request: Request, response: Response) -> None:
        if self.recrawl is None or request.meta.get("dont_simhash") or _not_a_page(request):
            return
        # The URL's own key: an error page's canonical link must not mark its target.
        try:
            key = self.keys.url_key(request, response.url)
        except InvalidKeyError as exc:
            self._invalid_key(response, exc)
            return
        visit = await self.verdicts.status(key, answer_of(response))
        if visit is None:
            return
        if visit.changed is False:  # a 304 after a known version: an unchanged visit
            self._inc("unchanged")
        if visit.outcome != "fetched":
            self._inc(f"recrawl/{visit.outcome}")

    async def process_exception(
        self, request: Request, exception: BaseException, spider: Any = None
    ) -> None:
        """Record a download that failed for good (retries exhausted) as status 0."""
        if (
            self.recrawl is None
            or isinstance(exception, IgnoreRequest)
            or request.meta.get("dont_simhash")
            or _not_a_page(request)
        ):
            return
        try:
            key = self.keys.url_key(request, request.url)
        except InvalidKeyError:
            self._inc("invalid_key")
            return
        visit = await self.verdicts.status(key, Answer(0))
        if visit is not None:
            self._inc(f"recrawl/{visit.outcome}")

    def _invalid_key(self, response: Response, exc: Exception | None) -> str:
        """A key no backend can store fails this page's check alone; the page passes."""
        self._inc("invalid_key")
        logger.warning("SimHash cannot check %s, passing it: %s", response.url, exc)
        return f"invalid key: {exc}"
