"""The path settings and the README name; the code lives in :mod:`scrapy_simhash.glue.pipeline`."""
from __future__ import annotations

from scrapy_simhash.glue.pipeline import ANONYMOUS, PRIORITY, SimhashPipeline

__all__ = ["ANONYMOUS", "PRIORITY", "SimhashPipeline"]
