"""The exception an errback receives for a dropped near-duplicate.

It subclasses Scrapy's ``IgnoreRequest``, so code that treats every ignored request alike
keeps working, while an errback can tell "dropped as a copy of X" from a failure.
Importable as ``scrapy_simhash.exceptions.NearDuplicate`` (resolved lazily, so the pure core
never imports Scrapy).
"""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest


class NearDuplicate(IgnoreRequest):
    """``url`` was dropped: its main text is within ``distance`` bits of ``kept_url``."""

    def __init__(self, url: str, kept_url: str, distance: int) -> None:
        super().__init__(f"near-duplicate of {kept_url} (distance {distance})")
        self.url = url
        self.kept_url = kept_url
        self.distance = distance

    def __reduce__(self) -> tuple[type[NearDuplicate], tuple[str, str, int]]:
        return (type(self), (self.url, self.kept_url, self.distance))
