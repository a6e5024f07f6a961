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


class KnownCopy(IgnoreRequest):
    """``url`` was not fetched: trusted URL rules (``rules``) name it a copy of ``kept_url``,
    a page already kept (``SIMHASH_DUST_ENABLED``)."""

    def __init__(self, url: str, kept_url: str, rules: tuple[str, ...] = ()) -> None:
        super().__init__(f"known copy of {kept_url} by URL rule(s) {', '.join(rules)}")
        self.url = url
        self.kept_url = kept_url
        self.rules = rules

    def __reduce__(self) -> tuple[type[KnownCopy], tuple[str, str, tuple[str, ...]]]:
        return (type(self), (self.url, self.kept_url, self.rules))
