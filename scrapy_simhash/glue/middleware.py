"""Downloader middleware: drop near-duplicate pages before the spider parses them.

Placement: ``process_response`` runs from high priority numbers to low, so at 540 it sees the
response after redirects (600), decompression (590), meta refresh (580) and retries (550) —
the body a spider would parse, once per final page.

Each considered response is fingerprinted (main text, SimHash) and handed to the index in one
atomic ``observe``: a page within ``SIMHASH_MAX_DISTANCE`` bits of a page kept under another
key is a near-duplicate; the same key seen again is a change observation for recrawl
scheduling, never a duplicate of itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse

from scrapy_simhash import signals
from scrapy_simhash._redis import mask_url
from scrapy_simhash._settings import get_bool
from scrapy_simhash.canonical import preferred
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, InvalidKeyError
from scrapy_simhash.glue import config
from scrapy_simhash.glue.config import MiddlewareConfig
from scrapy_simhash.glue.dust import DustGlue
from scrapy_simhash.glue.errors import NearDuplicate
from scrapy_simhash.glue.follow import FOLLOW_ONLY
from scrapy_simhash.glue.guard import BackendUnavailable, Guarded
from scrapy_simhash.glue.keys import CanonicalKeys
from scrapy_simhash.glue.wiring import (
    check_crawl_settings,
    guarded,
    guarded_index,
    index_kwargs,
    record_drop,
    report_unusable_index,
    resolve,
    send_signal,
    validate_index,
)
from scrapy_simhash.glue.workers import FingerprintRunner

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_simhash.fingerprint import PageFingerprint
    from scrapy_simhash.index import Observation

logger = logging.getLogger("scrapy_simhash.middleware")  # the name users filter on

#: Priority in DOWNLOADER_MIDDLEWARES used by the add-on (see the module docstring).
PRIORITY = 540


class SimhashDownloaderMiddleware:
    """Fingerprint responses, drop near-duplicates, report changes to recrawl scheduling."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not get_bool(settings, "SIMHASH_ENABLED", True):
            raise NotConfigured("SIMHASH_ENABLED is False: near-duplicate detection is off")
        from scrapy_simhash.fingerprint import FingerprintConfig, hamming, to_hex

        self._hamming = hamming
        self._to_hex = to_hex
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = MiddlewareConfig.from_settings(settings)
        self.keys = CanonicalKeys(
            use_canonical=self.config.use_canonical, canonicalize=self.config.canonicalize_keys
        )
        self.runner = FingerprintRunner(
            FingerprintConfig.from_settings(settings),
            workers=self.config.workers,
            inline_max_bytes=self.config.inline_max_bytes,
            cache_size=self.config.body_cache_size,
        )
        fingerprinter = self.runner.fingerprinter
        self.bits = fingerprinter.bits
        self.namespace = config.namespace(settings, getattr(crawler.spidercls, "name", None))
        self.index_url = config.index_url(settings)
        kwargs = index_kwargs(
            settings, namespace=self.namespace, bits=self.bits, scheme=fingerprinter.scheme
        )
        validate_index(self.index_url, kwargs)
        self.index = guarded_index(
            self.index_url, kwargs, self.config.guard, lambda: self._inc("index_error")
        )
        self.recrawl = self._open_recrawl(settings)
        self.dust = self._open_dust(kwargs["max_distance"])
        self._unusable_reported = False
        crawler.signals.connect(self._spider_opened, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashDownloaderMiddleware:
        """Scrapy's way in: a crawl that cannot work (no asyncio reactor, an old Scrapy)
        stops here, and misspelt settings are named. Tests that drive the middleware from
        their own event loop build it directly."""
        if get_bool(crawler.settings, "SIMHASH_ENABLED", True):
            check_crawl_settings(crawler.settings)
        return cls(crawler)

    def _open_recrawl(self, settings: Any) -> Guarded[Any] | None:
        """The recrawl store (same storage as the index), unless SIMHASH_RECRAWL_ENABLED is off."""
        from scrapy_simhash.recrawl import RecrawlConfig, open_async_recrawl_store

        recrawl_config = RecrawlConfig.from_settings(settings)
        # Without the recrawl store, the index's previous fingerprint still tells whether a
        # re-fetched page changed, by the same threshold.
        self.change_threshold = recrawl_config.change_distance
        if not recrawl_config.enabled:
            return None

        async def opener() -> Any:
            return await resolve(
                open_async_recrawl_store(
                    self.index_url, namespace=self.namespace, config=recrawl_config
                )
            )

        return guarded(
            "recrawl store",
            self.index_url,
            opener,
            self.config.guard,
            lambda: self._inc("recrawl_error"),
        )

    def _open_dust(self, max_distance: int) -> DustGlue | None:
        """URL rule learning (SIMHASH_DUST_ENABLED): skip fetching known copies."""
        if not DustGlue.enabled(self.crawler.settings):
            return None
        return DustGlue(
            self.crawler, self.index, self.keys, url=self.index_url, namespace=self.namespace,
            max_distance=max_distance, bits=self.bits, hamming=self._hamming,
            timeout_secs=self.config.guard.timeout,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def _spider_opened(self, spider: Any = None) -> None:
        self.runner.start()
        logger.info(
            "SimHash near-duplicate detection on: index %s, namespace %r, %d-bit, "
            "%s duplicates, %d fingerprint worker(s)",
            mask_url(self.index_url), self.namespace, self.bits,
            "dropping" if self.config.drop_duplicates else "marking",
            self.config.workers,
        )

    async def _spider_closed(self, spider: Any = None, reason: str = "") -> None:
        self.runner.close()
        if self.runner.cache_hits:
            self.stats.set_value("simhash/body_cache_hits", self.runner.cache_hits)
        self._cpu_stats()
        await self.index.aclose()
        if self.recrawl is not None:
            await self.recrawl.aclose()
        if self.dust is not None:
            await self.dust.aclose()
        get = self.stats.get_value
        unchecked = get("simhash/index_unusable", 0)
        if unchecked:
            logger.error(
                "SimHash: %d page(s) passed unchecked because the index cannot be used as "
                "configured (simhash/index_unusable)", unchecked,
            )
        lost = get("simhash/recrawl_lost", 0)
        if lost:
            logger.warning(
                "SimHash: %d recrawl observation(s) lost while the recrawl store was "
                "unavailable (simhash/recrawl_error); those pages keep their earlier schedule",
                lost,
            )
        logger.info(
            "SimHash: %d pages checked, %d unique, %d near-duplicates (%d dropped), "
            "%d changed, %d unchanged, %d without text, %d index errors",
            *(get(f"simhash/{n}", 0) for n in (
                "pages", "unique", "duplicate", "dropped", "changed", "unchanged",
                "no_text", "index_error",
            )),
        )

    def _cpu_stats(self) -> None:
        """CPU time spent fingerprinting (reactor thread and workers), not wall time:
        wall time of concurrent pages overlaps and includes waiting for a worker."""
        pages = self.runner.computed
        if not pages:
            return
        total_us = int(self.runner.cpu_secs * 1_000_000)
        self.stats.set_value("simhash/fingerprint_cpu_us", total_us)
        self.stats.set_value("simhash/fingerprint_cpu_us_per_page", total_us // pages)

    # -- per response ------------------------------------------------------------------------

    def _inc(self, name: str, count: int = 1) -> None:
        self.stats.inc_value(f"simhash/{name}", count)

    def _skip_reason(self, request: Request, response: Response) -> str | None:
        if request.meta.get("dont_simhash"):
            return "meta"
        if not 200 <= response.status < 300:
            return "status"
        content_type = response.headers.get(b"Content-Type")
        if content_type is None:
            # No header: trust Scrapy's sniffing of the body.
            return None if isinstance(response, TextResponse) else "content_type"
        text = content_type.decode("latin-1")
        if not config.content_type_matches(text, self.config.content_types):
            return "content_type"
        return None

    async def process_request(self, request: Request, spider: Any = None) -> None:
        """Known copies are not fetched (SIMHASH_DUST_ENABLED; KnownCopy is raised)."""
        if self.dust is not None:
            await self.dust.process_request(request)

    async def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
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
        invalid = None
        try:
            key, own = self.keys.keys(request, response)
        except InvalidKeyError as exc:
            key = own = ""
            invalid = self._invalid_key(response, exc)
        info: dict[str, Any] = {
            "key": key or None,
            "fingerprint": None,
            "duplicate_of": None,
            "distance": None,
            "changed": None,
            "change_distance": None,
            "reason": None,
        }
        request.meta["simhash"] = info  # becomes response.meta once Scrapy binds them
        if invalid is not None:
            info["reason"] = invalid
            await self._observed(request, response, info)
            return response
        page = await self._fingerprint(response, info)
        fp = page.fingerprint if page is not None else None
        if fp is None:
            if page is not None:
                self._inc("no_text")
                notes = "; ".join(page.notes)
                info["reason"] = f"{page.reason or 'no text'}" + (f" ({notes})" if notes else "")
            if self.recrawl is not None and not cached:
                await self._observe_recrawl(key, None, response, own=key == own)
            await self._observed(request, response, info)
            return response
        info["fingerprint"] = self._to_hex(fp, self.bits)

        try:
            observation, key = await self._observe(key, own, fp)
        except BackendUnavailable as exc:
            info["reason"] = f"index unavailable: {exc}"
            if self.recrawl is not None and not cached:
                # The visit still counts for recrawl scheduling (the store may be up when
                # the index is not); if it fails too, it is counted as lost.
                await self._observe_recrawl(key, fp, response, own=key == own)
            await self._observed(request, response, info)
            return self._index_failed(response, str(exc))
        except ConfigurationError as exc:  # not an outage: see _index_unusable
            info["reason"] = f"index unusable: {exc}"
            await self._observed(request, response, info)
            return self._index_unusable(response, exc)
        info["key"] = key
        if self.dust is not None:
            match = observation.match.key if observation.match is not None else None
            await self.dust.observed(request, own, key, fp, match)

        if observation.match is not None:
            return await self._duplicate(request, response, info, observation.match, own, fp)
        self._inc("unique")
        if key != own:
            # Kept under the canonical URL it names: its own URL is a copy of that, which
            # `scrapy simhash lookup` should say as for any dropped copy.
            await record_drop(self.index, own, key, 0)
        if observation.previous is not None:
            info["change_distance"] = self._hamming(observation.previous, fp)
            info["changed"] = info["change_distance"] > self.change_threshold
        if self.recrawl is not None and not cached:
            visit = await self._observe_recrawl(key, fp, response, own=key == own)
            if visit is not None:
                info["changed"] = visit.changed
                if visit.distance is not None:
                    info["change_distance"] = visit.distance
        if info["changed"] is not None:
            self._inc("changed" if info["changed"] else "unchanged")
        await self._observed(request, response, info)
        if info["changed"] is False and self.config.skip_unchanged:
            self._inc("skipped_unchanged")
            raise IgnoreRequest(f"unchanged since the last visit: {key}")
        return response

    async def _observe(self, key: str, own: str, fp: int) -> tuple[Observation, str]:
        """Ask the index about a page; return the answer and the key it is filed under.

        A page keyed by a canonical URL other than its own (or by one another URL stored
        earlier in this crawl) is a claim: what is stored under that key is its match.
        """
        if not self.keys.needs_claim(key, own):
            return await self.index.call(lambda index: index.observe(key, fp)), key
        observation = await self.index.call(lambda index: index.claim(key, fp))
        if observation.match is not None and observation.match.key == own != key:
            # The page itself, filed under its own URL at an earlier fetch because it does
            # not copy the canonical URL it names (page 2 naming page 1): a visit again.
            return await self.index.call(lambda index: index.observe(own, fp)), own
        if observation.match is None and not observation.stored:
            # The key holds other content: a page naming a canonical URL it does not copy
            # (a paginated or misdeclared page) is filed under its own URL, and the
            # canonical URL itself replaces what a misdeclaring page stored under it.
            observation = await self.index.call(lambda index: index.observe(own, fp))
            if key == own:  # nor is that page's fetch a visit of this one
                observation = observation._replace(previous=None)
                await self._forget_recrawl(key)
            key = own
        if observation.stored:
            self.keys.stored_by(key, own)
        return observation, key

    async def _fingerprint(
        self, response: Response, info: dict[str, Any]
    ) -> PageFingerprint | None:
        content_type = response.headers.get(b"Content-Type")
        try:
            return await self.runner.fingerprint(
                response.body, content_type.decode("latin-1") if content_type else None
            )
        except Exception as exc:
            self._inc("error")
            info["reason"] = f"fingerprint failed: {type(exc).__name__}"
            logger.warning(
                "SimHash could not fingerprint %s; passing it: %r", response.url, exc,
                exc_info=True,
            )
            return None

    async def _duplicate(
        self,
        request: Request,
        response: Response,
        info: dict[str, Any],
        match: Any,
        own: str,
        fp: int,
    ) -> Response:
        self._inc("duplicate")
        info["duplicate_of"] = match.key
        info["distance"] = match.distance
        if self.config.drop_duplicates and self.config.follow_duplicate_links:
            info[FOLLOW_ONLY] = True
        renamed = await self._prefer(response, info, match, own, fp)  # before the signals
        await send_signal(
            self.crawler, signals.near_duplicate, request=request, response=response, info=info
        )
        await self._observed(request, response, info)
        if not renamed and own != match.key:
            # A copy is not scheduled for revisits: its content is tracked under the page
            # it copies, and a URL claimed from the due queue must not return when its
            # lease ends. The record says what it copies, for `scrapy simhash lookup`.
            if info["key"] == own:
                await self._forget_recrawl(own)
            await record_drop(self.index, own, match.key, match.distance)
        if not self.config.drop_duplicates:
            logger.debug(
                "Near-duplicate %s of %s (distance %d), kept (mark-only mode)",
                response.url, match.key, match.distance,
            )
            return response
        self._inc("dropped")
        if self.config.follow_duplicate_links:
            logger.debug(
                "Near-duplicate %s of %s (distance %d): passed for its links, items dropped",
                response.url, match.key, match.distance,
            )
            return response
        logger.debug(
            "Dropped near-duplicate %s of %s (distance %d)",
            response.url, match.key, match.distance,
        )
        raise NearDuplicate(response.url, match.key, match.distance)

    async def _prefer(
        self, response: Response, info: dict[str, Any], match: Any, own: str, fp: int
    ) -> bool:
        """Name the cluster by this copy's URL if SIMHASH_PREFER_URLS ranks it better.

        Only between URLs no page declared canonical: the index entry is renamed (the
        stored fingerprint, of the page the spider received, stays), the former name is
        recorded as a copy, and recrawl scheduling moves to this URL. The page itself is
        still a near-duplicate: its cluster already reached the spider.
        """
        rules = self.config.prefer_urls
        if (
            not rules
            or info["key"] != own
            or own == match.key
            or self.keys.is_declared(match.key)
            or not preferred(own, match.key, rules)
        ):
            return False
        try:
            renamed = await self.index.call(lambda index: index.rename(match.key, own))
        except (BackendUnavailable, ConfigurationError):  # the copy is still dropped
            return False
        if not renamed:
            return False
        info["renamed_from"] = match.key
        logger.debug("Cluster of %s is now named %s (SIMHASH_PREFER_URLS)", match.key, own)
        await self._forget_recrawl(match.key)
        await record_drop(self.index, match.key, own, match.distance)
        if self.recrawl is not None and "cached" not in response.flags:
            await self._observe_recrawl(own, fp, response)
        return True

    async def _observed(self, request: Request, response: Response, info: dict[str, Any]) -> None:
        await send_signal(
            self.crawler, signals.page_observed, request=request, response=response, info=info
        )

    def _index_failed(self, response: Response, error: str) -> Response:
        """Apply SIMHASH_ON_INDEX_ERROR to a page the index could not check."""
        policy = self.config.guard.on_error
        if policy == "drop":
            self._inc("dropped")
            raise IgnoreRequest(f"SimHash index unavailable ({error}); SIMHASH_ON_INDEX_ERROR=drop")
        if policy == "raise":
            raise IndexBackendError(
                f"SimHash index unavailable while checking {response.url}: {error} "
                "(set SIMHASH_ON_INDEX_ERROR=pass to let pages through)"
            )
        return response

    async def _record_status(self, request: Request, response: Response) -> None:
        if self.recrawl is None or request.meta.get("dont_simhash"):
            return
        # The URL's own key: an error page's canonical link must not mark its target.
        try:
            key = self.keys.url_key(request, response.url)
        except InvalidKeyError as exc:
            self._invalid_key(response, exc)
            return
        visit = await self._observe_recrawl(key, None, response)
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
        ):
            return
        try:
            key = self.keys.url_key(request, request.url)
        except InvalidKeyError:
            self._inc("invalid_key")
            return
        visit = await self._recrawl_observe(key, None, 0, None, None)
        if visit is not None:
            self._inc(f"recrawl/{visit.outcome}")

    def _index_unusable(self, response: Response, exc: ConfigurationError) -> Response:
        """The index cannot be used as configured: SIMHASH_ON_INDEX_MISMATCH decides (see
        ``report_unusable_index``); this page reaches the spider either way."""
        self._inc("index_unusable")
        if not self._unusable_reported:
            self._unusable_reported = True
            report_unusable_index(self.crawler, self.config.on_mismatch, exc)
        return response

    def _invalid_key(self, response: Response, exc: InvalidKeyError) -> str:
        """A key no backend can store fails this page's check alone; the page passes."""
        self._inc("invalid_key")
        logger.warning("SimHash cannot check %s, passing it: %s", response.url, exc)
        return f"invalid key: {exc}"

    async def _forget_recrawl(self, key: str) -> None:
        if self.recrawl is None:
            return
        try:
            await self.recrawl.call(lambda store: store.remove(key))
        except (BackendUnavailable, ConfigurationError) as exc:
            self._recrawl_lost(exc)

    async def _observe_recrawl(
        self, key: str, fp: int | None, response: Response, *, own: bool = True
    ) -> Any:
        """Record a fetch under ``key``; validators only come from the key's own URL (a
        copy's ETag would be sent to the canonical URL) and from a page, not an error."""
        ok = 200 <= response.status < 300 or response.status == 304
        headers = response.headers if own and ok else {}
        etag = headers.get(b"ETag")
        modified = headers.get(b"Last-Modified")
        return await self._recrawl_observe(
            key,
            fp,
            response.status,
            etag.decode("latin-1") if etag else None,
            modified.decode("latin-1") if modified else None,
        )

    async def _recrawl_observe(
        self, key: str, fp: int | None, status: int, etag: str | None, modified: str | None
    ) -> Any:
        if self.recrawl is None:
            return None
        try:
            return await self.recrawl.call(
                lambda store: store.observe(
                    key, fp, status=status, etag=etag, last_modified=modified
                )
            )
        except (BackendUnavailable, ConfigurationError) as exc:
            self._recrawl_lost(exc)
            return None

    def _recrawl_lost(self, exc: Exception) -> None:
        """A recrawl update that did not happen: counted (simhash/recrawl_error by the guard
        for outages, here for the rest) and summed up in a WARNING at the close."""
        if isinstance(exc, ConfigurationError):
            self._inc("recrawl_error")
        self._inc("recrawl_lost")
