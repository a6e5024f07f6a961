"""Index wiring shared by the middleware, the pipeline and the ``scrapy simhash`` command."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy_simhash._redis import mask_url
from scrapy_simhash._scrapy_config import GuardConfig
from scrapy_simhash._scrapy_guard import BACKEND_ERRORS, BackendUnavailable, Guarded, scrub

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


async def resolve(value: Any) -> Any:
    """Await ``value`` if it is awaitable: openers may be plain functions or coroutines."""
    return await value if inspect.isawaitable(value) else value


def index_kwargs(
    settings: Mapping[str, Any], *, namespace: str, bits: int, scheme: str
) -> dict[str, Any]:
    """Keyword arguments of ``open_index``/``open_async_index`` for this crawl."""
    from scrapy_simhash.index import index_options_from_settings

    options = dict(index_options_from_settings(settings))
    options.pop("url", None)
    options.update(namespace=namespace, bits=bits, scheme=scheme)
    return options


def validate_index(url: str, kwargs: Mapping[str, Any]) -> None:
    """Open the index once, synchronously, before the crawl starts.

    A mismatched configuration (another SIMHASH_BITS or tokenizer than the one the index was
    built with) then stops the crawl at start-up with the index's own explanation, instead of
    failing on every page; ``SIMHASH_INDEX_RESET`` is applied here, to all the state of the
    namespace (index and recrawl schedule), and logs what it cleared. An unreachable backend
    is only a warning: the crawl may start before Redis does, and the error policy handles
    the pages meanwhile.
    """
    from scrapy_simhash.index import open_index
    from scrapy_simhash.reset import reset_namespace

    try:
        if kwargs.get("reset"):
            reset_namespace(url, str(kwargs["namespace"]), kwargs)
        else:
            open_index(url, **kwargs).close()
    except BACKEND_ERRORS as exc:
        logger.warning(
            "SimHash index at %s is not reachable at start-up (%s); will retry during the crawl",
            mask_url(url), scrub(str(exc), url),
        )


def guarded(
    what: str,
    url: str,
    opener: Callable[[], Awaitable[Any]],
    config: GuardConfig,
    on_error: Callable[[], None],
) -> Guarded[Any]:
    """A backend behind a ``Guarded`` configured by the SIMHASH_INDEX_* guard settings."""
    return Guarded(
        what,
        url,
        opener,
        timeout=config.timeout,
        retry_after=config.retry_after,
        log_interval=config.log_interval,
        on_error=on_error,
    )


def guarded_index(
    url: str, kwargs: Mapping[str, Any], config: GuardConfig, on_error: Callable[[], None]
) -> Guarded[Any]:
    """The async index behind a ``Guarded`` (timeouts, retry pause, throttled logs)."""
    from scrapy_simhash.index import open_async_index

    # SIMHASH_INDEX_RESET applies once, at start-up (validate_index): a reconnection after
    # an outage must not wipe the index again.
    reopen = {**kwargs, "reset": False} if "reset" in kwargs else dict(kwargs)

    async def opener() -> Any:
        return await resolve(open_async_index(url, **reopen))

    return guarded("SimHash index", url, opener, config, on_error)


async def send_signal(crawler: Crawler, signal: object, **kwargs: Any) -> None:
    """Send one of our signals, waiting for coroutine handlers (Scrapy 2.13 and later)."""
    manager = crawler.signals
    send_async = getattr(manager, "send_catch_log_async", None)
    if send_async is not None:
        await send_async(signal, **kwargs)
        return
    from scrapy.utils.defer import maybe_deferred_to_future

    await maybe_deferred_to_future(manager.send_catch_log_deferred(signal, **kwargs))


async def record_drop(index: Guarded[Any], url: str, kept: str, distance: int) -> None:
    """Record a dropped near-duplicate; an unavailable index only loses the record."""
    with contextlib.suppress(BackendUnavailable):
        await index.call(lambda backend: backend.record_drop(url, kept, distance))
