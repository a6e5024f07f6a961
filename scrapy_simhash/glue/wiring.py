"""Index wiring shared by the middleware, the pipeline and the ``scrapy simhash`` command."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy_simhash._failures import broken_file, broken_file_message, permanent_reason
from scrapy_simhash._redact import mask_url, scrub
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
from scrapy_simhash.glue.guard import (
    ON_INDEX_ERROR,
    Guarded,
    OutageLog,
    backend_errors,
    without_own_name,
)
from scrapy_simhash.settings.names import in_setting_names, setting_names
from scrapy_simhash.verdict import UNAVAILABLE, UNUSABLE, Verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_simhash.recrawl import RecrawlConfig
    from scrapy_simhash.settings import GuardConfig

logger = logging.getLogger(__name__)

#: The oldest Scrapy the crawl tests pass with (setup.cfg declares the same; .ci/min_scrapy.py
#: runs them against it).
MIN_SCRAPY = (2, 13, 2)


async def resolve(value: Any) -> Any:
    """Await ``value`` if it is awaitable: openers may be plain functions or coroutines."""
    return await value if inspect.isawaitable(value) else value


def validate_index(url: str, kwargs: Mapping[str, Any], *, start_unreachable: bool = False) -> bool:
    """Open the index once, synchronously, before the crawl starts; tell whether it answered.

    A mismatched configuration (another SIMHASH_BITS or tokenizer than the one the index was
    built with) then stops the crawl at start-up with the index's own explanation, instead of
    failing on every page; ``SIMHASH_INDEX_RESET`` is applied here, to all the state of the
    namespace (index and recrawl schedule), and logs what it cleared. A failure no retry can
    fix (a wrong password, a missing database, a read-only replica or file, an SQLite file
    that is damaged or no database at all) is not an outage: it stops the crawl here, with
    the reason. Nor, by default, is a backend that does not answer: one that never answered
    is far more often a mistyped host or port than an outage. ``start_unreachable``
    (SIMHASH_INDEX_START_UNREACHABLE) starts the crawl anyway, the error policy handling the
    pages until the backend answers (a crawl that may start before its Redis).
    """
    from scrapy_simhash.index import open_index
    from scrapy_simhash.reset import reset_namespace

    try:
        with setting_names():
            if kwargs.get("reset"):
                reset_namespace(url, str(kwargs["namespace"]), kwargs)
            else:
                open_index(url, **kwargs).close()
    except backend_errors() as exc:
        broken = broken_file(exc)
        if broken is not None:
            raise ConfigurationError(in_setting_names(broken_file_message(url, broken))) from None
        reason = permanent_reason(exc)
        if reason is not None:
            raise ConfigurationError(
                f"SimHash index at {mask_url(url)} cannot be used: {scrub(reason, url)}; fix "
                "SIMHASH_INDEX_URL (or SIMHASH_ENABLED=False to crawl without it)"
            ) from None
        detail = without_own_name(scrub(str(exc), url), url)
        if not start_unreachable:
            raise ConfigurationError(
                f"SimHash index at {mask_url(url)} is not reachable at start-up ({detail}): "
                "check SIMHASH_INDEX_URL (host, port, database) and that the server is up, "
                "or set SIMHASH_INDEX_START_UNREACHABLE = True to start anyway and retry "
                "during the crawl"
            ) from None
        logger.warning(
            "SimHash index at %s is not reachable at start-up (%s); starting anyway "
            "(SIMHASH_INDEX_START_UNREACHABLE), will retry during the crawl",
            mask_url(url),
            detail,
        )
        return False
    return True


def check_recrawl_store(
    url: str, namespace: str, recrawl: RecrawlConfig, options: Mapping[str, Any] | None = None
) -> None:
    """Read the recrawl schedule's layout once before the crawl starts: one this version
    cannot use (0.2.0's, another shard count) refuses the crawl here, with the way out,
    instead of every page's update being lost. Not answering is an outage, left to the
    guard, as the index's reachability was already checked."""
    from scrapy_simhash.recrawl import open_recrawl_store

    try:
        with setting_names():
            store = open_recrawl_store(url, namespace=namespace, config=recrawl, options=options)
            try:
                store.count()
            finally:
                store.close()
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"SimHash recrawl store at {mask_url(url)} cannot be used: {exc} (or set "
            "SIMHASH_RECRAWL_ENABLED = False to crawl without the recrawl schedule)"
        ) from None
    except backend_errors():
        return


def guarded(
    what: str,
    url: str,
    opener: Callable[[], Awaitable[Any]],
    config: GuardConfig,
    on_error: Callable[[], None],
    outages: OutageLog | None = None,
    *,
    on_lost: Callable[[], None] | None = None,
    opened: bool = False,
    meanwhile: str = ON_INDEX_ERROR,
) -> Guarded[Any]:
    """A backend behind a ``Guarded`` configured by the SIMHASH_INDEX_* guard settings;
    ``outages`` is shared by the guards of one storage (one line per outage for them all);
    ``on_lost`` hears when the storage lost the namespace (``opened``: it was opened at
    start-up); ``meanwhile``: what the crawl does without the store."""
    return Guarded(
        what,
        url,
        opener,
        timeout=config.timeout,
        retry_after=config.retry_after,
        log_interval=config.log_interval,
        on_error=on_error,
        outages=outages,
        on_lost=on_lost,
        opened=opened,
        reopen_lost=config.on_lost != "close",
        meanwhile=meanwhile,
    )


def outage_log(crawler: Crawler, url: str, config: GuardConfig) -> OutageLog:
    """The outage log of ``url`` in this crawl, shared by every component that guards a
    store there (the middleware's index and recrawl store, the pipeline's index)."""
    logs = _OUTAGE_LOGS.setdefault(crawler, {})
    if url not in logs:
        logs[url] = OutageLog(url, log_interval=config.log_interval)
    return logs[url]


_OUTAGE_LOGS: weakref.WeakKeyDictionary[Any, dict[str, OutageLog]] = weakref.WeakKeyDictionary()


# -- a Redis that may evict the crawl's keys ------------------------------------------------------

#: Seconds between two looks at what a Redis evicted (at most; SIMHASH_ERROR_LOG_INTERVAL_SECS
#: when shorter).
EVICTION_LOOK_SECS = 1.0


def check_eviction(
    crawler: Crawler,
    url: str,
    kwargs: Mapping[str, Any],
    config: GuardConfig,
    *,
    reachable: bool = True,
) -> None:
    """Refuse, at start-up, a Redis that may evict the crawl's keys, and watch what one
    evicts during the crawl; once per storage of a crawl (the first component to open it).

    A Redis with a memory limit evicts keys when it is full, under any ``allkeys-*``
    policy (a common cache setting) any key, under a ``volatile-*`` one keys with a TTL,
    which the hosts' template keys carry with SIMHASH_INDEX_TTL_SECS. An evicted key is a
    page, a drop record or a schedule the crawl forgets without a word: copies stop being
    dropped. So such a server refuses the crawl with the way out (``noeviction``, or a Redis
    of the crawl's own) unless SIMHASH_INDEX_ALLOW_EVICTION, which is said at start. Where
    neither ``CONFIG GET`` nor ``INFO`` is allowed, that is said once and the crawl goes on.
    During the crawl an :class:`EvictionWatch` says every key the server evicts.
    ``reachable``: the index answered at start-up (else the first look decides).
    """
    from scrapy_simhash._redis import REDIS_SCHEMES

    scheme = url.split(":", 1)[0].lower()
    if scheme not in REDIS_SCHEMES:
        return
    outages = outage_log(crawler, url, config)
    if outages.watch is not None:
        return
    from scrapy_simhash.settings import index_ttl_secs
    from scrapy_simhash.settings.configs import templates_enabled

    settings = crawler.settings
    ttl_keys = bool(index_ttl_secs(settings)) and templates_enabled(settings)
    options = {
        name: value
        for name, value in dict(kwargs.get("options") or {}).items()
        if name not in ("shards", "lock_lease_secs")
    }
    watch = EvictionWatch(
        crawler,
        url,
        options,
        ttl_keys=ttl_keys,
        allow=config.allow_eviction,
        timeout=config.timeout,
        log_interval=config.log_interval,
    )
    if reachable:
        watch.start()  # may refuse the crawl: only then is the watch set
    outages.watch = watch


class EvictionWatch:
    """What a Redis may evict, read at start-up, and what it evicted, read during the crawl
    (at most every EVICTION_LOOK_SECS, after a call that answered, in a worker thread).

    The server's ``evicted_keys`` counts every key it evicted, of any namespace: those
    evicted while the server may evict the crawl's keys are counted
    (``simhash/redis_evicted_keys``) and said at ERROR, each look that finds some (at most
    one line per SIMHASH_ERROR_LOG_INTERVAL_SECS, which then sums them), and again at
    the close. A policy changed to one that evicts during the crawl is said once.
    """

    def __init__(
        self,
        crawler: Crawler,
        url: str,
        options: Mapping[str, Any],
        *,
        ttl_keys: bool,
        allow: bool,
        timeout: float,
        log_interval: float,
        clock: Callable[[], float] | None = None,
    ) -> None:
        import time

        self.crawler = crawler
        self.url = url
        self._options = dict(options)
        self._ttl_keys = ttl_keys
        self._allow = allow
        self._timeout = timeout
        self._log_interval = log_interval
        self._every = min(EVICTION_LOOK_SECS, log_interval)
        self._clock = clock or time.monotonic
        self._client: Any = None
        self._started = False
        self._blind = False  # neither CONFIG GET nor INFO: nothing to look at
        self._evicted: int | None = None  # the servers' evicted_keys at the last look
        self._unsaid = 0  # keys counted, not said yet
        self._said_at = float("-inf")
        self._next = 0.0
        self._looking = False
        self._risky = False  # the servers may evict the crawl's keys (as last read)
        self._policy = ""  # what let them evict the keys counted last

    def _where(self) -> str:
        return f"SimHash index at {mask_url(self.url)}"

    def _connect(self) -> Any:
        if self._client is None:
            from scrapy_simhash._redis import sync_client
            from scrapy_simhash.index.redis.connection import client_options

            self._client = sync_client(self.url, **client_options(self._options))
        return self._client

    def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def start(self) -> None:
        """Read what the servers may evict (blocking; before the crawl starts): refuse the
        crawl (ConfigurationError), say what allowing it means, or say that it cannot be
        told."""
        from scrapy_simhash._redis import MemoryUnknown, read_memory

        self._started = True
        try:
            nodes, refused = read_memory(self._connect())
        except MemoryUnknown as exc:
            self._blind = True
            self._disconnect()
            logger.warning(
                "%s: cannot tell whether Redis may evict the crawl's keys, as neither CONFIG "
                "GET nor INFO is allowed (%s): make sure its maxmemory-policy is noeviction "
                "(or maxmemory 0), or evicted pages are forgotten without a word",
                self._where(),
                scrub(str(exc), self.url),
            )
            return
        except backend_errors() as exc:  # it answered a moment ago: the first look will tell
            self._started = False
            logger.debug("reading the memory policy of %s failed: %s", mask_url(self.url), exc)
            return
        if refused is not None:
            logger.info(
                "%s: CONFIG GET is not allowed (%s); the memory policy was read from INFO",
                self._where(),
                scrub(refused, self.url),
            )
        self._evicted = _total(nodes)
        risky = [node for node in nodes if node.evicts(ttl_keys=self._ttl_keys)]
        self._risky = bool(risky)
        if not risky:
            return
        what = self._what(risky)
        if not self._allow:
            self._disconnect()
            raise ConfigurationError(
                f"{self._where()} may lose its keys: Redis evicts keys when its memory is "
                f"full ({what}), and a page, drop record or recrawl schedule evicted is "
                "forgotten without a word (copies stop being dropped). Set "
                "maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and "
                "in redis.conf), or give the crawl a Redis of its own; "
                "SIMHASH_INDEX_ALLOW_EVICTION = True starts anyway and counts what is evicted"
            )
        logger.warning(
            "%s may lose its keys: Redis evicts keys when its memory is full (%s), and "
            "SIMHASH_INDEX_ALLOW_EVICTION is set, so the crawl goes on: a page whose keys "
            "are evicted is forgotten (its copies are kept, its recrawl schedule starts "
            "over). Every key the server evicts is counted (simhash/redis_evicted_keys) "
            "and said at ERROR",
            self._where(),
            what,
        )

    def _what(self, risky: list[Any]) -> str:
        what = "; ".join(node.describe() for node in risky)
        if self._ttl_keys and any(node.policy.startswith("volatile-") for node in risky):
            what += "; the hosts' template keys carry a TTL (SIMHASH_INDEX_TTL_SECS)"
        return what

    async def look(self, *, last: bool = False) -> None:
        """Read what the servers evicted since the last look, and say it (never raises)."""
        now = self._clock()
        if self._blind or self._looking or (now < self._next and not last):
            return
        self._looking = True
        self._next = now + self._every
        try:
            await self._look(last)
        except Exception as exc:  # noqa: BLE001 - an outage is the guards' to say
            logger.debug("looking at what %s evicted failed: %s", mask_url(self.url), exc)
        finally:
            self._looking = False

    async def _look(self, last: bool) -> None:
        from scrapy_simhash._redis import read_memory

        if not self._started:  # unreachable at start-up: this is the start
            try:
                await asyncio.to_thread(self.start)
            except ConfigurationError as exc:
                self._blind = True
                logger.error("%s; closing the spider", exc)
                close_spider(self.crawler, "simhash_redis_evicts")
                return
            if not self._started or self._blind:
                return
        nodes, _ = await asyncio.wait_for(
            asyncio.to_thread(read_memory, self._connect(), config=False), self._timeout
        )
        total = _total(nodes)
        risky = [node for node in nodes if node.evicts(ttl_keys=self._ttl_keys)]
        if risky and not self._risky and not self._allow:
            logger.error(
                "%s may lose its keys from now on: Redis evicts keys when its memory is full "
                "(%s); set maxmemory-policy noeviction, or give the crawl a Redis of its own",
                self._where(),
                self._what(risky),
            )
        self._risky = bool(risky)
        before, self._evicted = self._evicted, total
        # None: a server does not say; fewer: one restarted, and its count started over.
        new = total - before if total is not None and before is not None else 0
        if new > 0 and not risky:
            logger.debug(
                "%s: Redis evicted %d key(s), none of them the crawl's (%s)",
                self._where(),
                new,
                "; ".join(n.describe() for n in nodes),
            )
        elif new > 0:
            self._unsaid += new
            self.crawler.stats.inc_value("simhash/redis_evicted_keys", new)
            self._policy = self._what(risky)
        now = self._clock()
        if self._unsaid and (last or now - self._said_at >= self._log_interval):
            self._said_at = now
            count, self._unsaid = self._unsaid, 0
            logger.error(
                "%s: Redis evicted %d key(s) since the last line (%s): they may be the "
                "crawl's fingerprints, drop records, recrawl schedule, hosts' templates or "
                "URL rules; a page whose keys went is forgotten and its copies are kept. "
                "%d evicted in all during the crawl (simhash/redis_evicted_keys); give "
                "Redis more memory or set maxmemory-policy noeviction",
                self._where(),
                count,
                self._policy,
                self.crawler.stats.get_value("simhash/redis_evicted_keys", 0),
            )

    async def aclose(self) -> None:
        """A last look (what was evicted since the last one is said now), then close."""
        await self.look(last=True)
        await asyncio.to_thread(self._disconnect)


def _total(nodes: list[Any]) -> int | None:
    counts = [node.evicted for node in nodes]
    return None if any(count is None for count in counts) else sum(counts)


def storage_options(
    url: str, options: Mapping[str, Any] | None, config: GuardConfig
) -> dict[str, Any]:
    """The client options every store of ``url`` in a crawl opens with (the index, the
    recrawl schedule, the template memory, the URL rules): one connection policy per
    storage. An SQLite connection gives up waiting for another process's write lock just
    before a guarded call's timeout, so the error says "database is locked" and no thread
    stays blocked; SIMHASH_INDEX_OPTIONS' own ``timeout`` wins."""
    merged = dict(options or {})
    if url.startswith("sqlite:"):
        merged.setdefault("timeout", config.timeout * 0.9)
    return merged


def guarded_index(
    url: str,
    kwargs: Mapping[str, Any],
    config: GuardConfig,
    on_error: Callable[[], None],
    outages: OutageLog | None = None,
    *,
    on_lost: Callable[[], None] | None = None,
    opened: bool = False,
) -> Guarded[Any]:
    """The async index behind a ``Guarded`` (timeouts, retry pause, throttled logs); see
    :func:`guarded` for ``on_lost`` and ``opened``."""
    from scrapy_simhash.index import open_async_index

    # SIMHASH_INDEX_RESET applies once, at start-up (validate_index): a reconnection after
    # an outage must not wipe the index again.
    reopen = {**kwargs, "reset": False} if "reset" in kwargs else dict(kwargs)
    reopen["options"] = storage_options(url, reopen.get("options"), config)

    async def opener() -> Any:
        return await resolve(open_async_index(url, **reopen))

    return guarded(
        "SimHash index", url, opener, config, on_error, outages, on_lost=on_lost, opened=opened
    )


async def send_signal(crawler: Crawler, signal: object, **kwargs: Any) -> None:
    """Send one of our signals, waiting for coroutine handlers (Scrapy 2.13 and later)."""
    manager = crawler.signals
    send_async = getattr(manager, "send_catch_log_async", None)
    if send_async is not None:
        await send_async(signal, **kwargs)
        return
    from scrapy.utils.defer import maybe_deferred_to_future

    await maybe_deferred_to_future(manager.send_catch_log_deferred(signal, **kwargs))


def check_crawl_settings(settings: Any) -> None:
    """Refuse a crawl the add-on cannot serve; warn about misspelt ``SIMHASH_*`` names.

    Without the asyncio reactor the middleware's coroutines cannot run: every page would
    log an error and nothing would be deduplicated, so the crawl stops at start-up instead.
    """
    import scrapy
    from scrapy.utils.reactor import is_asyncio_reactor_installed

    from scrapy_simhash.settings import unknown_settings

    version = tuple(int(part) for part in re.findall(r"\d+", scrapy.__version__)[:3])
    if version < MIN_SCRAPY:
        raise ConfigurationError(
            f"scrapy-simhash needs Scrapy {'.'.join(map(str, MIN_SCRAPY))} or later, this is "
            f"{scrapy.__version__} (older releases fail in ways that hide the real error)"
        )
    try:
        asyncio_reactor = is_asyncio_reactor_installed()
    except RuntimeError:  # no reactor installed yet: not inside a crawl
        asyncio_reactor = True
    if not asyncio_reactor:
        raise ConfigurationError(
            "scrapy-simhash needs Scrapy's asyncio reactor, but TWISTED_REACTOR is "
            f"{settings.get('TWISTED_REACTOR')!r}: set TWISTED_REACTOR = "
            "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default), "
            "or SIMHASH_ENABLED = False"
        )
    for message in unknown_settings(name for name in settings if isinstance(name, str)):
        logger.warning("scrapy-simhash: %s", message)


#: The logger of a refused start: one line, whichever component refused.
_start_log = logging.getLogger("scrapy_simhash")

C = TypeVar("C")


def refusing_start(
    build: Callable[[type[C], Crawler], C],
) -> Callable[[type[C], Crawler], C]:
    """Decorate a component's ``from_crawler``: a :class:`ConfigurationError` raised while it
    is built (a store that is refused, a setting that cannot be read) is said as one ERROR
    line (:func:`refuse_start`), then raised as before: the crawl does not start, Scrapy
    sets its exit status, and a script that runs the crawl can still catch the error."""

    @functools.wraps(build)
    def from_crawler(cls: type[C], crawler: Crawler) -> C:
        try:
            return build(cls, crawler)
        except ConfigurationError as exc:
            refuse_start(exc)
            raise

    return from_crawler


def refuse_start(exc: ConfigurationError) -> None:
    """Say why the crawl cannot start, once, at ERROR, and keep Scrapy from saying it again.

    The message says what is wrong and the way out; the 20 lines of traceback Scrapy would
    log under "Task exception was never retrieved" (a crawl on asyncio) or "Unhandled error
    in Deferred" (one on Twisted's Deferreds) only bury it. So the exception is marked as
    told, and the task or Deferred that carries it out of the crawl is told not to report
    it: an error the user's own code awaits or handles still reaches that code.
    """
    if getattr(exc, _TOLD, False):
        return
    setattr(exc, _TOLD, True)
    _start_log.error("Crawl not started: %s", exc)
    _quiet_task()
    _quiet_deferred()


#: Set on a start-up error once it was logged.
_TOLD = "_simhash_told"


def _told(exc: BaseException | None) -> bool:
    return exc is not None and bool(getattr(exc, _TOLD, False))


def _quiet_task() -> None:
    """A crawl run by Scrapy's asyncio runner fails its task with the error; no one awaits
    it (``scrapy crawl``), so asyncio would log it with its traceback when the task is
    collected. Reading the error when the task ends stops that; an error that is not the
    one told is handed to the loop's exception handler, as asyncio would have."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop: not inside the asyncio runner
        return
    if task is None:
        return

    def retrieve(done: asyncio.Task[Any]) -> None:
        if done.cancelled():
            return
        error = done.exception()  # read: asyncio no longer reports it
        if error is not None and not _told(error):
            done.get_loop().call_exception_handler(
                {
                    "message": "Task exception was never retrieved",
                    "exception": error,
                    "future": done,
                }
            )

    task.add_done_callback(retrieve)


def _quiet_deferred() -> None:
    """A crawl run by Scrapy's Twisted runner (``CrawlerProcess``) fails the Deferred that
    ``crawl()`` returns, which ``scrapy crawl`` drops: Twisted then logs "Unhandled error in
    Deferred" with the traceback, twice, when it is collected. The component is built while
    ``crawl()`` runs, so that Deferred is a local of the outermost ``inlineCallbacks`` frame
    on the stack; its report at collection is left out when the error it would report is
    the one told. Any other error, or one a callback handles, is reported as before. Best
    effort: a Twisted whose internals differ keeps its report."""
    try:
        from twisted.internet import defer
    except ImportError:  # pragma: no cover - Scrapy depends on Twisted
        return
    info_class = getattr(defer, "DebugInfo", None)
    deferred: Any = None
    frame = inspect.currentframe()
    while frame is not None:
        if (
            frame.f_code.co_name == "_cancellableInlineCallbacks"
            and frame.f_globals.get("__name__") == defer.__name__
        ):
            deferred = frame.f_locals.get("deferred", deferred)
        frame = frame.f_back
    del frame
    if info_class is None or not isinstance(deferred, defer.Deferred):
        return

    class ToldDebugInfo(info_class):  # type: ignore[misc,valid-type]
        """Twisted's record of a Deferred's unhandled failure, silent for a told error."""

        def __del__(self) -> None:
            if _told(getattr(getattr(self, "failResult", None), "value", None)):
                self.failResult = None
            super().__del__()

    def mark(failure: Any) -> Any:
        if _told(getattr(failure, "value", None)):
            info = getattr(deferred, "_debugInfo", None)
            if info is None:
                deferred._debugInfo = ToldDebugInfo()
            elif type(info) is info_class:
                info.__class__ = ToldDebugInfo
        return failure

    deferred.addErrback(mark)


def close_spider(crawler: Crawler, reason: str) -> None:
    """Ask the engine to close the spider, without waiting (callers are inside a download,
    which the close itself waits for)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # Scrapy 2.13+: no engine before the crawl starts
        return
    if engine is None:
        return
    close_async = getattr(engine, "close_spider_async", None)
    if close_async is not None:
        task = asyncio.ensure_future(close_async(reason=reason))
        _CLOSING.add(task)
        task.add_done_callback(_CLOSING.discard)
        return
    if crawler.spider is not None:
        engine.close_spider(crawler.spider, reason)


_CLOSING: set[asyncio.Future[Any]] = set()


class IndexErrorPolicy:
    """What a page (or item) meets when the index could not check it, for the middleware
    and the pipeline alike: ``SIMHASH_ON_INDEX_ERROR`` for outages, ``SIMHASH_ON_INDEX_MISMATCH``
    (reported once) for an index that turned out unusable."""

    def __init__(
        self, crawler: Crawler, on_error: str, on_mismatch: str, count: Callable[[str], None]
    ) -> None:
        self.crawler = crawler
        self.on_error = on_error
        self.on_mismatch = on_mismatch
        self._count = count
        self._reported = False

    def apply(self, verdict: Verdict, *, checking: str, things: str, drop: type[Exception]) -> bool:
        """Act on a verdict the index could not give: count it, and raise what the policy
        says (``drop``: IgnoreRequest or DropItem). False for any other verdict."""
        if verdict.outcome == UNAVAILABLE:
            error = str(verdict.error)
            if self.on_error == "drop":
                self._count("dropped")
                raise drop(f"SimHash index unavailable ({error}); SIMHASH_ON_INDEX_ERROR=drop")
            if self.on_error == "raise":
                raise IndexBackendError(
                    f"SimHash index unavailable while checking {checking}: {error} "
                    f"(set SIMHASH_ON_INDEX_ERROR=pass to let {things} through)"
                )
            return True
        if verdict.outcome == UNUSABLE:
            self._count("index_unusable")
            # Reported once; the thing itself passes either way.
            if not self._reported:
                self._reported = True
                report_unusable_index(
                    self.crawler,
                    self.on_mismatch,
                    verdict.error or ConfigurationError(verdict.reason),
                )
            return True
        return False


def report_unusable_index(crawler: Crawler, policy: str, exc: Exception) -> None:
    """The index turned out (after an outage, say) to be built with another configuration.

    Every later page would fail the same way, so with ``policy`` "close" the spider is
    closed with the mismatch as its reason; with "pass" pages go through unchecked, said
    once as an ERROR. Callers report the first occurrence only.
    """
    if policy == "close":
        logger.error(
            "SimHash index cannot be used as configured; closing the spider "
            "(SIMHASH_ON_INDEX_MISMATCH=pass lets pages through unchecked): %s",
            exc,
        )
        close_spider(crawler, f"simhash_index_mismatch: {exc}")
    else:
        logger.error(
            "SimHash index cannot be used as configured; every page from now on passes "
            "UNCHECKED (SIMHASH_ON_INDEX_MISMATCH=pass): %s",
            exc,
        )


def report_lost_namespace(
    crawler: Crawler,
    policy: str,
    *,
    url: str,
    namespace: str,
    lost: str,
    count: Callable[[str], None],
    log: logging.Logger,
) -> None:
    """The storage answered without the namespace's configuration record: it lost what the
    namespace held (a Redis restarted without persistence, a flush, an eviction, a reset by
    another process), and the record is back in place. Said at ERROR with what was lost;
    ``policy`` (SIMHASH_ON_INDEX_LOST) "continue" goes on with the namespace re-created,
    "close" closes the spider."""
    count("index_lost")
    logs = _OUTAGE_LOGS.get(crawler, {})
    cause = logs[url].lost_cause if url in logs else None
    if cause is not None:  # the SQLite file went: what it held went with it
        head = (
            f"SimHash index at {mask_url(url)} lost namespace {namespace!r} mid-crawl: "
            f"{cause}. Lost: {lost}, and every other namespace that file held. Pages "
            "fetched before now no longer match their copies"
        )
        keep = (
            "restore the file with its -wal file from a backup to get them back, and keep "
            "the index file away from cleanup jobs (temporary-file cleaners, an rm of .scrapy/)"
        )
    else:
        head = (
            f"SimHash index at {mask_url(url)} lost namespace {namespace!r} mid-crawl: its "
            "configuration record was gone when the store answered (a Redis restarted without "
            "persistence, a flush, an eviction, or a reset by another process). Lost: "
            f"{lost}. Pages fetched before now no longer match their copies"
        )
        keep = "Redis persistence, appendonly yes, keeps the namespace across restarts"
    if policy == "close":
        log.error(
            "%s. Closing the spider (SIMHASH_ON_INDEX_LOST = 'continue' goes on with the "
            "namespace re-created)%s",
            head,
            f"; {keep}" if cause is not None else "",
        )
        close_spider(crawler, "simhash_index_lost")
    else:
        log.error(
            "%s: the first copy of each is kept. Going on with the namespace re-created, "
            "empty%s (SIMHASH_ON_INDEX_LOST = 'close' stops the crawl instead; %s)",
            head,
            ", in a new file at that path" if cause is not None else "",
            keep,
        )


def report_close(stats: Any, log: logging.Logger) -> None:
    """The crawl's SimHash summary at the close: what passed unchecked or was lost first."""
    get = stats.get_value
    unchecked = get("simhash/index_unusable", 0)
    if unchecked:
        log.error(
            "SimHash: %d page(s) passed unchecked because the index cannot be used as "
            "configured (simhash/index_unusable)",
            unchecked,
        )
    lost_index = get("simhash/index_lost", 0)
    if lost_index:
        log.error(
            "SimHash: the index lost this namespace's data %d time(s) during the crawl "
            "(simhash/index_lost): pages fetched before that no longer matched their copies",
            lost_index,
        )
    passed = get("simhash/outage/passed_unchecked", 0)
    if passed:
        missed = get("simhash/outage/backlog_overflow", 0), get("simhash/outage/not_indexed", 0)
        log.warning(
            "SimHash: %d page(s) passed unchecked while the index was unavailable "
            "(simhash/outage/passed_unchecked): %d indexed later, %d found then to copy a "
            "page indexed meanwhile (kept: they had reached the spider), %d over the "
            "backlog's bound (SIMHASH_OUTAGE_BACKLOG_PAGES) and %d not indexed by the close%s",
            passed,
            get("simhash/outage/indexed_later", 0),
            get("simhash/outage/copies_later", 0),
            *missed,
            ": their copies fetched later may have been kept" if any(missed) else "",
        )
    evicted = get("simhash/redis_evicted_keys", 0)
    if evicted:
        log.error(
            "SimHash: Redis evicted %d key(s) while it could evict the crawl's "
            "(simhash/redis_evicted_keys): pages whose keys went were forgotten, and their "
            "copies kept",
            evicted,
        )
    lost = get("simhash/recrawl_lost", 0)
    if lost:
        log.warning(
            "SimHash: %d recrawl observation(s) lost while the recrawl store was "
            "unavailable (simhash/recrawl_error); those pages keep their earlier schedule",
            lost,
        )
    # This process's counts of this crawl: `scrapy simhash stats` and `report` count the
    # namespace over every crawl (and process) that wrote it, so the line says which.
    log.info(
        "SimHash: %d pages checked, %d unique, %d near-duplicates (%d dropped), "
        "%d changed, %d unchanged, %d without text, %d index errors in this crawl "
        "(the namespace over all crawls: scrapy simhash stats)",
        *(
            get(f"simhash/{n}", 0)
            for n in (
                "pages",
                "unique",
                "duplicate",
                "dropped",
                "changed",
                "unchanged",
                "no_text",
                "index_error",
            )
        ),
    )
