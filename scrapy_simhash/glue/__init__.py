"""The Scrapy glue: everything that runs inside a crawl and speaks Scrapy's language.

The pure core (``text``, ``features``, ``fingerprint``, ``index``, ``recrawl``, ``dust``,
``verdict``) decides; these modules turn Scrapy's requests, responses, settings, stats and
signals into calls of the core and its answers back into Scrapy's actions. ``guard`` and
``workers`` import no Scrapy themselves but exist only for a crawl: bounding calls to a
storage that may be away, and fingerprinting off the reactor thread.
"""
