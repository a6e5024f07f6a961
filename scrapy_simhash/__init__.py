"""Content-level near-duplicate detection and change-driven recrawl scheduling for Scrapy.

The pure core (extraction, features, fingerprints, index, recrawl) never imports Scrapy, so
``import scrapy_simhash`` stays cheap; the Scrapy components are resolved lazily on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

__all__ = [
    "Addon",
    "SimhashDownloaderMiddleware",
    "SimhashPipeline",
    "SimhashSpiderMiddleware",
    "__version__",
]

_LAZY = {
    "Addon": "scrapy_simhash.addon",
    "SimhashDownloaderMiddleware": "scrapy_simhash.middleware",
    "SimhashPipeline": "scrapy_simhash.pipeline",
    "SimhashSpiderMiddleware": "scrapy_simhash.glue.follow",
}

if TYPE_CHECKING:
    from scrapy_simhash.addon import Addon
    from scrapy_simhash.glue.follow import SimhashSpiderMiddleware
    from scrapy_simhash.middleware import SimhashDownloaderMiddleware
    from scrapy_simhash.pipeline import SimhashPipeline


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_simhash' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
