"""Change-driven adaptive recrawl scheduling (pure: no Scrapy import).

Each fetch of a URL is compared with the previous one by SimHash distance, so timestamps,
counters and rotating ads do not count as changes; the change history gives a per-page
change rate (Cho & Garcia-Molina's estimators) and a policy turns rates into revisit times.
"""

from __future__ import annotations

from scrapy_simhash.recrawl.config import RecrawlConfig
from scrapy_simhash.recrawl.state import PageState, Visit
from scrapy_simhash.recrawl.store import (
    AsyncRecrawlStore,
    DueUrl,
    RecrawlStore,
    open_async_recrawl_store,
    open_recrawl_store,
    register_backend,
)

__all__ = [
    "AsyncRecrawlStore",
    "DueUrl",
    "PageState",
    "RecrawlConfig",
    "RecrawlStore",
    "Visit",
    "open_async_recrawl_store",
    "open_recrawl_store",
    "register_backend",
]
