"""Kept for the documented import path: see :mod:`scrapy_simhash.text`."""

from __future__ import annotations

from scrapy_simhash.text import MainText, extract_main_text

__all__ = ["MainText", "extract_main_text"]
