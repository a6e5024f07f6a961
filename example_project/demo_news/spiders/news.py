"""A plain news spider: it knows nothing about duplicates, scrapy-simhash does that.

It starts at the home page, follows every link on the same host (listings, articles, print
and AMP views, share links, the partner site) and yields one item per article page it
receives. Near-duplicate responses never reach it: the add-on's middleware drops them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor


class NewsSpider(scrapy.Spider):
    name = "news"

    # demo_site/server.py serves on this port by default: `python3 demo_site/server.py`
    def __init__(self, site: str = "http://127.0.0.1:8931/", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.site = site
        self.netloc = urlsplit(site).netloc
        self.links = LinkExtractor()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.site, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):  # not text: nothing to read or follow
            return
        if response.css('meta[property="og:type"]::attr(content)').get() == "article":
            yield {
                "url": response.url,
                "title": " ".join(response.css("h1 ::text").getall()).strip(),
            }
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc == self.netloc:  # stay on the demo site
                yield response.follow(link.url, callback=self.parse)
