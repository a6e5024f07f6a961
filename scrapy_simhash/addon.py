"""The path settings and the README name; the code lives in :mod:`scrapy_simhash.glue.addon`."""
from __future__ import annotations

from scrapy_simhash.glue.addon import DEFAULTS, Addon

__all__ = ["DEFAULTS", "Addon"]
