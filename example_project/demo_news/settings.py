"""Settings of the demo project: one add-on line enables scrapy-simhash.

Everything else is ordinary crawl tuning for a site on the loopback interface. With no
``SIMHASH_INDEX_URL`` the index is an SQLite file in ``.scrapy/`` next to ``scrapy.cfg``.
"""

from __future__ import annotations

BOT_NAME = "demo_news"
SPIDER_MODULES = ["demo_news.spiders"]
NEWSPIDER_MODULE = "demo_news.spiders"

ADDONS = {"scrapy_simhash.Addon": 0}

# Keep per-URL change history, so a second crawl reports what changed and what did not.
SIMHASH_RECRAWL_ENABLED = True

# A local site: no robots.txt, no politeness delay, no throttling.
ROBOTSTXT_OBEY = False
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = False
# One request at a time, so every run reports what the README shows: with several in
# flight, a partner's copy that happens to arrive before its original is the page kept
# under the original's canonical URL ("kept: partner"), which is right, but differs by run.
CONCURRENT_REQUESTS = 1
CONCURRENT_REQUESTS_PER_DOMAIN = 1
USER_AGENT = "demo_news (scrapy-simhash example project)"

# Breadth-first: pages linked from the listings (the originals) are fetched before the
# copies linked from those pages, so the first copy the index sees is the original.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"

TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
