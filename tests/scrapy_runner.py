"""Run one real Scrapy crawl in a child process and report items, stats and the log as JSON.

Crawl tests run each crawl in its own process (``python -m tests.scrapy_runner SPEC OUT``):
the crawl gets the asyncio reactor and a fresh Scrapy whatever reactor the test process has,
and several processes can share one Redis index the way a distributed crawl does.

SPEC is a JSON file: ``{"spider": "pages" | "redis", "settings": {...}, "requests": [{"url",
"meta", "headers"}], "item_text": bool}``. Requests are fetched in the listed order when
``CONCURRENT_REQUESTS`` is 1 (each gets a lower priority than the previous one).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess


def _item(response: Any, with_text: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "url": response.url,
        "status": response.status,
        "simhash": response.meta.get("simhash"),
    }
    if with_text:
        item["title"] = response.css("h1::text, h2::text").get(default="")
        item["body"] = "\n".join(response.css("p::text").getall())
    return item


class PagesSpider(scrapy.Spider):
    """Fetch the given requests in order; yield one item per response that reaches it."""

    name = "pages"

    def __init__(self, spec: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    async def start(self) -> Any:
        for i, req in enumerate(self.spec["requests"]):
            yield scrapy.Request(
                req["url"],
                meta=req.get("meta", {}),
                headers=req.get("headers"),
                priority=-i,
                dont_filter=True,
                callback=self.parse,
            )

    def parse(self, response: Any) -> Any:
        yield _item(response, bool(self.spec.get("item_text")))


def _redis_spider(spec: dict[str, Any]) -> type[scrapy.Spider]:
    from scrapy_redis.spiders import RedisSpider

    class SharedSpider(RedisSpider):
        """Reads its URLs from a Redis list shared by every process of the crawl."""

        name = "shared"
        redis_key = spec["redis_key"]

        def parse(self, response: Any) -> Any:
            yield _item(response, bool(spec.get("item_text")))

    return SharedSpider


def main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    settings = {
        "LOG_LEVEL": "DEBUG",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        **spec.get("settings", {}),
    }
    items: list[dict[str, Any]] = []
    process = CrawlerProcess(settings)
    if spec.get("spider") == "redis":
        # The engine looks for new work every 5 s when idle; a Redis-fed spider only
        # notices its empty queue then. Look more often so the test ends sooner.
        from scrapy.core.engine import ExecutionEngine

        ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = 0.2  # type: ignore[attr-defined]
        crawler = process.create_crawler(_redis_spider(spec))
        kwargs: dict[str, Any] = {}
    else:
        crawler = process.create_crawler(PagesSpider)
        kwargs = {"spec": spec}
    def collect(item: Any, **_: Any) -> None:
        items.append(dict(item))

    # The signal dispatcher holds receivers weakly: keep a named reference.
    crawler.signals.connect(collect, signals.item_scraped)
    errors: list[str] = []
    deferred = process.crawl(crawler, **kwargs)
    deferred.addErrback(lambda failure: errors.append(f"{failure.type.__name__}: {failure.value}"))
    process.start()
    raw = crawler.stats.get_stats() if crawler.stats else {}
    stats = {k: v for k, v in raw.items() if isinstance(v, (int, float, str))}
    result = {"items": items, "stats": stats, "errors": errors}
    Path(out_path).write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
