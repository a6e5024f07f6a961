"""Content-level near-duplicate detection and change-driven recrawl scheduling for Scrapy.

The pure core (extraction, features, fingerprints, index, recrawl) never imports Scrapy, so
``import scrapy_simhash`` stays cheap; the Scrapy components are resolved lazily on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

__all__ = [
    "Addon",
    "MainText",
    "RecrawlSpiderMixin",
    "SimhashDownloaderMiddleware",
    "SimhashPipeline",
    "SimhashSpiderMiddleware",
    "__version__",
    "extract_main_text",
]

#: The public names and the modules that hold them (imported on first use).
_LAZY = {
    "Addon": "scrapy_simhash.glue.addon",
    "SimhashDownloaderMiddleware": "scrapy_simhash.glue.middleware",
    "SimhashPipeline": "scrapy_simhash.glue.pipeline",
    "SimhashSpiderMiddleware": "scrapy_simhash.glue.follow",
    "RecrawlSpiderMixin": "scrapy_simhash.glue.spidermixin",
    "MainText": "scrapy_simhash.text",
    "extract_main_text": "scrapy_simhash.text",
}

if TYPE_CHECKING:
    from scrapy_simhash.glue.addon import Addon
    from scrapy_simhash.glue.follow import SimhashSpiderMiddleware
    from scrapy_simhash.glue.middleware import SimhashDownloaderMiddleware
    from scrapy_simhash.glue.pipeline import SimhashPipeline
    from scrapy_simhash.glue.spidermixin import RecrawlSpiderMixin
    from scrapy_simhash.text import MainText, extract_main_text


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_simhash' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
