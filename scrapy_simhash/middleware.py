"""The path settings and the README name; the code lives in :mod:`scrapy_simhash.glue.middleware`."""
from __future__ import annotations

from scrapy_simhash.glue.middleware import PRIORITY, SimhashDownloaderMiddleware

__all__ = ["PRIORITY", "SimhashDownloaderMiddleware"]
