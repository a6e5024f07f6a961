"""A crawl of several processes on scrapy-redis whose shared queue does not persist.

With scrapy-redis's scheduler and ``SCHEDULER_PERSIST = False`` (its default), the first
process of a crawl to finish deletes the shared request queue and the set of requests
seen: the processes still running then fetch their URLs again. scrapy-simhash cannot tell
such a second fetch from a recrawl: a URL fetched again is a visit of the page it holds,
never a copy of itself, so every page and its item come twice. Nothing in one process
shows whether others share its queue, so the setting alone is said, at start.
"""

from __future__ import annotations

from typing import Any

#: The scheduler class whose queue is shared through Redis.
SCRAPY_REDIS_SCHEDULER = "scrapy_redis.scheduler.Scheduler"


def _name(value: Any) -> str:
    if isinstance(value, str):
        return value
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"


def unpersisted_queue(settings: Any) -> str | None:
    """The WARNING to log at start when the crawl's queue is scrapy-redis's and is not
    kept (None otherwise): what happens with several processes, and the setting."""
    scheduler = settings.get("SCHEDULER")
    if scheduler is None or not _name(scheduler).startswith("scrapy_redis."):
        return None
    if settings.getbool("SCHEDULER_PERSIST"):
        return None
    return (
        "SCHEDULER_PERSIST is False with scrapy-redis's scheduler: when several processes "
        "share this crawl, the first to finish deletes the shared request queue and the "
        "requests seen, the others fetch their URLs again, and scrapy-simhash takes each "
        "second fetch for a visit of a page it kept (a URL is never a copy of itself): "
        "every page is crawled, and its item delivered, twice. Set SCHEDULER_PERSIST = True "
        "for a crawl of several processes (one process alone is not affected)"
    )
