"""The path settings and the README name; the code lives in :mod:`scrapy_simhash.glue.commands`."""
from __future__ import annotations

from scrapy_simhash.glue.commands import SimhashCommand

__all__ = ["SimhashCommand"]
