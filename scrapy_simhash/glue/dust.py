"""Scrapy glue of URL rule learning (``SIMHASH_DUST_ENABLED``): learn, skip, check, undo.

The downloader middleware owns one :class:`DustGlue` and calls it at two points:

- ``process_request``: a request whose URL the learned rules of its host rewrite into a
  page already kept (or a copy dropped in favour of one) is a skip. While one of those
  rules has passed fewer than ``SIMHASH_DUST_MIN_CHECKS`` checks on the host, every such
  request is fetched anyway and its page checked against the kept one
  (``simhash/dust/checks``, ``trial_checks``; ``check_passed`` counts towards the rule's
  trust in the shared store, ``check_failed`` kills it): support alone is a few copies that
  happened to fit a pattern, and on a small site the next URL of that pattern may be a page
  of its own. Once every rule used is trusted, the request is not downloaded: it fails
  with :class:`~scrapy_simhash.glue.errors.KnownCopy` (an ``IgnoreRequest``), a DEBUG line
  and ``simhash/dust/skipped``; ``SIMHASH_DUST_CHECK_SHARE`` of those are still checked.
- ``observed``: every fingerprinted page. A drop (or a page filed under the canonical URL
  it names) is a pair the rules learn from; the page also tests every live rule of its
  host that maps its URL to a known page. A page farther than ``SIMHASH_MAX_DISTANCE`` from
  the page a rule names kills that rule for the host, in the shared store, and the requests
  this process skipped under it are scheduled again.

Rules killed by another process are seen at the next refresh of the rules
(``SIMHASH_DUST_REFRESH_SECS``, and whenever the spider is idle). A rule store that fails
costs only skipping: requests are then fetched as without the feature.
"""

from __future__ import annotations

import concurrent.futures
import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals

from scrapy_simhash import signals
from scrapy_simhash.dust import (
    AsyncRuleStore,
    Check,
    Rule,
    RuleBook,
    RuleState,
    learn,
    open_rule_store,
    rule_netloc,
)
from scrapy_simhash.exceptions import (
    BackendUnavailable,
    ConfigurationError,
    IndexBackendError,
    InvalidKeyError,
)
from scrapy_simhash.glue.errors import KnownCopy
from scrapy_simhash.glue.guard import Guarded, OutageLog
from scrapy_simhash.glue.wiring import guarded, send_signal, storage_options
from scrapy_simhash.settings import DustConfig, GuardConfig, dust_enabled
from scrapy_simhash.settings.names import setting_names
from scrapy_simhash.storage import check_rule_store_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_simhash.glue.keys import CanonicalKeys

logger = logging.getLogger(__name__)

#: Meta key: False fetches the request whatever the rules say.
META_KEY = "simhash_dust"
#: Meta key set on a request fetched to check a rule: the kept URL it was checked against.
CHECK_META = "simhash_dust_check"

_STORE_ERRORS = (IndexBackendError, ConfigurationError, BackendUnavailable, OSError)


class GuardedRules:
    """The URL rule store behind the guard the index sits behind (timeouts, retry pauses,
    the storage's outage log): each call raises BackendUnavailable during an outage and
    ConfigurationError when the store cannot be used as configured."""

    def __init__(self, guard: Guarded[AsyncRuleStore]) -> None:
        self.guard = guard

    async def support(self, host: str, rule: str, copy: str, kept: str) -> int:
        count: int = await self.guard.call(lambda store: store.support(host, rule, copy, kept))
        return count

    async def passed(self, host: str, rule: str, url: str, kept: str) -> int:
        count: int = await self.guard.call(lambda store: store.passed(host, rule, url, kept))
        return count

    async def kill(self, host: str, rule: str, example: str) -> None:
        await self.guard.call(lambda store: store.kill(host, rule, example))

    async def rules(self) -> list[RuleState]:
        states: list[RuleState] = await self.guard.call(lambda store: store.rules())
        return states

    def rules_now(self, timeout_secs: float) -> list[RuleState]:
        """:meth:`rules` for a caller that cannot await (the spider_idle handler): from the
        store open now, blocking at most ``timeout_secs``; an outage goes without."""
        store = self.guard.current
        if store is None:
            raise BackendUnavailable("the URL rule store is not open")
        return store.rules_now(timeout_secs)

    async def aclose(self) -> None:
        await self.guard.aclose()


class DustGlue:
    """Skips known copies before download and keeps the rules honest (see the module)."""

    def __init__(
        self,
        crawler: Crawler,
        index: Guarded[Any],
        keys: CanonicalKeys,
        *,
        url: str,
        namespace: str,
        max_distance: int,
        bits: int,
        hamming: Callable[[int, int], int],
        guard: GuardConfig | None = None,
        outages: OutageLog | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.index = index
        self.keys = keys
        self.max_distance = max_distance
        self.hamming = hamming
        self.config = DustConfig.from_settings(settings, max_distance=max_distance, bits=bits)
        with setting_names():  # a store that cannot hold rules refuses the crawl now
            check_rule_store_url(url)
        guard = guard if guard is not None else GuardConfig.from_settings(settings)
        options = storage_options(url, self.config.store_options, guard)

        async def open_store() -> AsyncRuleStore:
            return AsyncRuleStore(lambda: open_rule_store(url, namespace, **options))

        self.store = GuardedRules(
            guarded(
                "SimHash URL rule store",
                url,
                open_store,
                guard,
                lambda: self._inc("store_error"),
                outages,
                meanwhile="requests are fetched as without SIMHASH_DUST_ENABLED",
            )
        )
        self.book: RuleBook[Request] = RuleBook(
            self.config.min_support, min_checks=self.config.min_checks
        )
        self.rng = rng if rng is not None else random.Random()
        self.clock = clock
        self._loaded_at: float | None = None
        self._store_failures = 0
        # Other processes can kill a rule only through a store they share.
        self._shared = not url.startswith("memory:")
        self._skips = 0
        self._idle_checked: int | None = None
        self.timeout_secs = guard.timeout
        crawler.signals.connect(self._idle, signal=scrapy_signals.spider_idle)

    @classmethod
    def enabled(cls, settings: Any) -> bool:
        return dust_enabled(settings)

    def _inc(self, name: str, count: int = 1) -> None:
        self.stats.inc_value(f"simhash/dust/{name}", count)

    def _store_failed(self, exc: Exception) -> None:
        """A rule store call that failed: an outage is counted and said by the guard (the
        storage's one outage log); anything else here, once."""
        if isinstance(exc, BackendUnavailable):
            return
        self._inc("store_error")
        self._store_failures += 1
        if self._store_failures == 1:
            logger.warning(
                "SimHash URL rules: the rule store failed (%s); requests are fetched as "
                "without SIMHASH_DUST_ENABLED while it does",
                exc,
            )

    # -- the shared rules ----------------------------------------------------------------------

    async def refresh(self, *, force: bool = False) -> None:
        now = self.clock()
        recent = self._loaded_at is not None and now - self._loaded_at < self.config.refresh_secs
        if not force and recent:
            return
        self._loaded_at = now
        try:
            states = await self.store.rules()
        except _STORE_ERRORS as exc:
            self._store_failed(exc)
            return
        self._requeue(self.book.load(states), "killed in another crawl process")

    def _idle(self, spider: Any = None) -> None:
        """Before the spider closes, read the shared rules once more: a rule another
        process killed may have skipped this process's requests, which must be fetched.

        A blocking read (bounded by ``SIMHASH_INDEX_TIMEOUT_SECS``): the crawl is idle, nothing
        waits on the reactor, and a request queued here keeps the spider open.
        """
        if not self._shared or not self.book.skipped_count or self._idle_checked == self._skips:
            return
        self._idle_checked = self._skips
        try:
            states = self.store.rules_now(self.timeout_secs)
        except (*_STORE_ERRORS, TimeoutError, concurrent.futures.TimeoutError) as exc:
            self._store_failed(exc)
            return
        self._requeue(self.book.load(states), "killed in another crawl process")

    def _requeue(self, requests: list[Request], why: str) -> None:
        if not requests:
            return
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy 2.14+: no crawl running (the middleware driven alone)
            engine = None
        for request in requests:
            self._inc("requeued")
            logger.info("Fetching %s after all: its URL rule was %s", request.url, why)
            retry = request.replace(dont_filter=True)
            retry.meta[META_KEY] = False
            if engine is not None:
                engine.crawl(retry)

    # -- before download -----------------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        try:
            await self._process_request(request)
        except KnownCopy:
            raise
        except Exception:  # noqa: BLE001 - logged with its traceback; the request goes on
            self._failed("deciding whether to fetch", request)

    def _failed(self, doing: str, request: Request) -> None:
        """A fault of ours costs the skip or the lesson, never the request."""
        self._inc("error")
        logger.exception("SimHash URL rules failed %s %s; fetching as usual", doing, request.url)

    async def _process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get("dont_simhash") or meta.get(META_KEY) is False or meta.get("simhash_key"):
            return
        await self.refresh()
        try:
            key = self.keys.url_key(request, request.url)
        except InvalidKeyError:
            return
        for other, used in self.book.candidates(key):
            kept = await self._kept(self.keys.normal(other))
            if kept is None:
                continue
            if await self._fingerprint(key) is not None:
                return  # the URL is a page of its own, whatever the rules say
            rules = tuple(rule.rule for rule in used)
            on_trial = not all(self.book.is_trusted(rule) for rule in used)
            if on_trial or self.rng.random() < self.config.check_share:
                self._inc("checks")
                if on_trial:
                    self._inc("trial_checks")
                meta[CHECK_META] = {"kept": kept, "rules": list(rules)}
                return
            if not self.book.skipped(request, used):
                return
            self._inc("skipped")
            self._skips += 1
            logger.debug(
                "Not fetching %s: a copy of %s by URL rule(s) %s",
                request.url,
                kept,
                ", ".join(rules),
            )
            await send_signal(
                self.crawler,
                signals.known_copy_skipped,
                request=request,
                kept_url=kept,
                rules=rules,
            )
            raise KnownCopy(request.url, kept, rules)

    async def _fingerprint(self, key: str) -> int | None:
        try:
            value = await self.index.call(lambda index: index.get(key))
        except _STORE_ERRORS:
            return None
        return value if isinstance(value, int) else None

    async def _kept(self, url: str) -> str | None:
        """``url`` if a page is kept under it, else the kept page ``url`` was dropped as a
        copy of (the rules relate the request to ``url``, the index ``url`` to that page)."""
        if await self._fingerprint(url) is not None:
            return url
        try:
            record = await self.index.call(lambda index: index.drop_of(url))
        except _STORE_ERRORS:
            return None
        if record is None or await self._fingerprint(record.kept) is None:
            return None
        return str(record.kept)

    # -- after a page was fingerprinted --------------------------------------------------------

    async def observed(
        self, request: Request, own: str, key: str, fingerprint: int, duplicate_of: str | None
    ) -> None:
        try:
            await self._observed(request, own, key, fingerprint, duplicate_of)
        except Exception:  # noqa: BLE001 - logged with its traceback; the page goes on
            self._failed("learning from", request)

    async def _observed(
        self, request: Request, own: str, key: str, fingerprint: int, duplicate_of: str | None
    ) -> None:
        if duplicate_of is not None and duplicate_of != own:
            await self._learn(own, duplicate_of)
        else:
            # A page filed under the canonical URL it names, with nothing stored there yet,
            # teaches nothing: only matching content shows that one URL copies another
            # (page 2 naming page 1 would otherwise teach "drop ?page").
            self.book.kept(key)
        check = request.meta.get(CHECK_META)
        if isinstance(check, dict):
            await self._check_fetch(own, fingerprint, check)
        for waiting in self.book.waiting_for(own):
            await self._judge(waiting, fingerprint)
        for test in self.book.checks(own, fingerprint):
            test = test._replace(other=self.keys.normal(test.other))
            other = await self._fingerprint(test.other)
            if other is None:
                self.book.wait(test)
            else:
                await self._judge(test, other)

    async def _learn(self, copy: str, kept: str) -> None:
        rules = learn(copy, kept)
        if not rules:
            return
        self._inc("pairs")
        host = rule_netloc(copy)
        for rule in rules:
            try:
                support = await self.store.support(host, rule, copy, kept)
            except _STORE_ERRORS as exc:
                self._store_failed(exc)
                return
            before = rule in self.book.learned(host)
            self.book.supported(Rule(host, rule), support)
            if before or rule not in self.book.learned(host):
                continue
            if self.book.is_trusted(Rule(host, rule)):
                logger.info("URL rule %s of %s trusted (%d pairs)", rule, host, support)
            else:
                logger.info(
                    "URL rule %s of %s learned (%d pairs): the requests it names copies of are "
                    "fetched and checked until %d checks passed (%d so far)",
                    rule,
                    host,
                    support,
                    self.config.min_checks,
                    self.book.checks_passed(Rule(host, rule)),
                )

    async def _passed(self, rules: tuple[Rule, ...], url: str, kept: str) -> None:
        """A check of ``rules`` passed: count it for each in the shared store."""
        for rule in rules:
            if self.book.is_dead(rule):
                continue
            before = self.book.is_trusted(rule)
            try:
                passed = await self.store.passed(rule.host, rule.rule, url, kept)
            except _STORE_ERRORS as exc:
                self._store_failed(exc)
                return
            self.book.checked(rule, passed)
            if not before and self.book.is_trusted(rule):
                logger.info(
                    "URL rule %s of %s trusted: %d checks passed", rule.rule, rule.host, passed
                )

    async def _check_fetch(self, own: str, fingerprint: int, check: dict[str, Any]) -> None:
        kept = await self._fingerprint(str(check.get("kept")))
        if kept is None:
            return
        host = rule_netloc(own)
        rules = tuple(Rule(host, str(r)) for r in check.get("rules", ()))
        distance = self.hamming(fingerprint, kept)
        if distance <= self.max_distance:
            self._inc("check_passed")
            await self._passed(rules, own, str(check.get("kept")))
        elif distance <= self.config.counterexample_distance:
            self._inc("check_unclear")
        else:
            self._inc("check_failed")
            await self._judge(Check(own, fingerprint, str(check.get("kept")), rules), kept)

    async def _judge(self, test: Check, other: int) -> None:
        distance = self.hamming(test.fingerprint, other)
        if distance <= self.config.counterexample_distance:
            return
        fresh = [rule for rule in test.rules if not self.book.is_dead(rule)]
        if not fresh:
            return
        self._inc("counterexamples")
        example = f"{test.url} and {test.other} differ by {distance} bits"
        logger.info(
            "URL rule(s) %s of %s no longer trusted: %s",
            ", ".join(rule.rule for rule in fresh),
            fresh[0].host,
            example,
        )
        requests = self.book.died(fresh)
        for rule in fresh:
            try:
                await self.store.kill(rule.host, rule.rule, example)
            except _STORE_ERRORS as exc:
                self._store_failed(exc)
                break
        self._requeue(requests, "found wrong")

    async def aclose(self) -> None:
        try:
            states = await self.store.rules()
        except _STORE_ERRORS:
            states = []
        config = self.config
        trusted = sum(1 for s in states if s.trusted(config.min_support, config.min_checks))
        on_trial = sum(1 for s in states if s.learned(config.min_support)) - trusted
        self.stats.set_value("simhash/dust/rules_trusted", trusted)
        self.stats.set_value("simhash/dust/rules_on_trial", on_trial)
        logger.info(
            "SimHash URL rules: %d skipped as known copies (%d checked anyway: %d passed, "
            "%d failed), %d rule(s) trusted, %d still checked (fewer than %d checks passed), "
            "%d counterexample(s), %d request(s) queued again",
            *(
                self.stats.get_value(f"simhash/dust/{n}", 0)
                for n in ("skipped", "checks", "check_passed", "check_failed")
            ),
            trusted,
            on_trial,
            config.min_checks,
            *(
                self.stats.get_value(f"simhash/dust/{n}", 0)
                for n in ("counterexamples", "requeued")
            ),
        )
        await self.store.aclose()
