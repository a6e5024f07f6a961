"""Kept for imports written before the text package: see :mod:`scrapy_simhash.text.decode`."""

from __future__ import annotations

from scrapy_simhash.text.decode import DecodedHtml, decode_html, is_binary

__all__ = ["DecodedHtml", "decode_html", "is_binary"]
