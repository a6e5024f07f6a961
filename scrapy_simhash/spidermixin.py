"""The path settings and the README name; the code lives in :mod:`scrapy_simhash.glue.spidermixin`."""
from __future__ import annotations

from scrapy_simhash.glue.spidermixin import RecrawlSpiderMixin

__all__ = ["RecrawlSpiderMixin"]
