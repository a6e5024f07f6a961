"""Run one real Scrapy crawl in a child process and report items, stats and the log as JSON.

Crawl tests run each crawl in its own process (``python -m tests.scrapy_runner SPEC OUT``):
the crawl gets the asyncio reactor and a fresh Scrapy whatever reactor the test process has,
and several processes can share one Redis index the way a distributed crawl does.

SPEC is a JSON file: ``{"spider": "pages" | "redis" | "links", "settings": {...}, "requests":
[{"url", "meta", "headers"}], "item_text": bool, "follow": bool}``. Requests are fetched in the
listed order when ``CONCURRENT_REQUESTS`` is 1 (each gets a lower priority than the previous
one). ``hold``: ``{"url", "fifo"}``, the callback of that URL opens the FIFO for writing
(the test, reading it, learns that the callback holds the page) and never returns. ``follow``: the "pages" spider also follows every link and reports errbacks as items
with an ``errback`` field. The "links" spider crawls as a site crawl does: it fetches the
``start_urls`` of the spec (index pages, not fingerprinted) and follows their links, one item
per linked page that reaches it.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess

from tests.marked import require


def _item(response: Any, with_text: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "url": response.url,
        "status": response.status,
        "simhash": response.meta.get("simhash"),
    }
    if with_text:
        item["title"] = response.css("h1::text, h2::text").get(default="")
        # The article's own paragraphs, whichever template the page uses.
        paragraphs = response.css("article p:not(.byline)::text, #content p::text").getall()
        item["body"] = "\n".join(paragraphs)
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
                callback=self.hold
                if req["url"] == self.spec.get("hold", {}).get("url")
                else self.parse,
                errback=self.failed if self.spec.get("follow") else None,
            )

    def parse(self, response: Any) -> Any:
        yield _item(response, bool(self.spec.get("item_text")))
        if self.spec.get("follow"):  # same-site links, each followed once
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse, errback=self.failed)

    async def hold(self, response: Any) -> Any:
        """Hold the page in the callback until the process is killed."""
        with open(self.spec["hold"]["fifo"], "w") as fifo:  # noqa: ASYNC230 (a FIFO's open)
            fifo.write(response.url)
        await asyncio.Event().wait()
        yield _item(response, False)

    def failed(self, failure: Any) -> Any:
        """Errbacks see what was dropped as a near-duplicate, and of what."""
        exc = failure.value
        yield {
            "url": failure.request.url,
            "errback": type(exc).__name__,
            "kept_url": getattr(exc, "kept_url", None),
            "distance": getattr(exc, "distance", None),
        }


class LinksSpider(scrapy.Spider):
    """Follow the links of index pages; yield one item per linked page that reaches it."""

    name = "links"

    def __init__(self, spec: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    async def start(self) -> Any:
        for url in self.spec["start_urls"]:
            # An index page lists links, it is no page of the site: several processes'
            # index pages look alike and must not be dropped as copies of each other.
            yield scrapy.Request(url, meta={"dont_simhash": True}, callback=self.follow_links)

    def follow_links(self, response: Any) -> Any:
        yield from response.follow_all(css="a", callback=self.parse)

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


REPO = Path(__file__).resolve().parents[1]
#: The add-on at its defaults, one request at a time (one arrival order, the same every run),
#: fingerprinting inline with the fast segmenter: what the crawl tests start from.
ONE_AT_A_TIME: dict[str, Any] = {
    "ADDONS": {"scrapy_simhash.Addon": 0},
    "CONCURRENT_REQUESTS": 1,
    "SIMHASH_WORKERS": 0,
    "SIMHASH_TOKENIZER": "rjieba",
}


@dataclass
class CrawlResult:
    """What a finished child crawl reports."""

    items: list[dict[str, Any]]
    stats: dict[str, Any]
    errors: list[str]
    log: str
    cpu: dict[str, float]
    signals: dict[str, list[str]]

    def urls(self) -> set[str]:
        return {item["url"] for item in self.items}

    def simhash_stats(self) -> dict[str, Any]:
        return {k: v for k, v in self.stats.items() if k.startswith("simhash/")}


def start_crawl(
    workdir: Path, spec: dict[str, Any], *, name: str = "crawl"
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start a crawl in a child process (cwd ``workdir``, so ``.scrapy/`` lands there)."""
    require("crawl", "runs a crawl")
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}.log"
    out = workdir / f"{name}.json"
    spec = {**spec, "settings": {**spec.get("settings", {}), "LOG_FILE": str(log)}}
    spec_path = workdir / f"{name}-spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.scrapy_runner", str(spec_path), str(out)],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return proc, out, log


def finish_crawl(
    proc: subprocess.Popen[bytes], out: Path, log: Path, timeout: float = 60
) -> CrawlResult:
    """Wait for a child crawl and read its report (fails with its stderr if it crashed)."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"crawl process failed ({proc.returncode}):\n{stderr.decode()[-4000:]}")
    data = json.loads(out.read_text())
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return CrawlResult(
        data["items"], data["stats"], data["errors"], text, data["cpu"], data["signals"]
    )


def run_crawl(workdir: Path, spec: dict[str, Any], *, name: str = "crawl") -> CrawlResult:
    """Run one crawl in a child process and return its report."""
    return finish_crawl(*start_crawl(workdir, spec, name=name))


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
        spider = LinksSpider if spec.get("spider") == "links" else PagesSpider
        crawler = process.create_crawler(spider)
        kwargs = {"spec": spec}

    def collect(item: Any, **_: Any) -> None:
        items.append(dict(item))

    from scrapy_simhash import signals as simhash_signals

    sent: dict[str, list[str]] = {"near_duplicate": [], "page_observed": [], "known_copy": []}

    def near_duplicate(response: Any, info: dict[str, Any], **_: Any) -> None:
        sent["near_duplicate"].append(f"{response.url} {info['duplicate_of']}")

    def page_observed(response: Any, info: dict[str, Any], **_: Any) -> None:
        sent["page_observed"].append(response.url)

    def known_copy(request: Any, kept_url: str, **_: Any) -> None:
        sent["known_copy"].append(f"{request.url} {kept_url}")

    #: The crawl process's usage when the spider opened (zeros if it never did).
    opened = [resource.struct_rusage((0,) * 16)]

    def spider_opened(**_: Any) -> None:
        opened[0] = resource.getrusage(resource.RUSAGE_SELF)

    # The signal dispatcher holds receivers weakly: keep named references.
    crawler.signals.connect(spider_opened, signals.spider_opened)
    crawler.signals.connect(collect, signals.item_scraped)
    crawler.signals.connect(near_duplicate, simhash_signals.near_duplicate)
    crawler.signals.connect(page_observed, simhash_signals.page_observed)
    crawler.signals.connect(known_copy, simhash_signals.known_copy_skipped)
    errors: list[str] = []
    deferred = process.crawl(crawler, **kwargs)
    deferred.addErrback(lambda failure: errors.append(f"{failure.type.__name__}: {failure.value}"))
    # Only when asked: the poll would add to the CPU and instructions that other
    # benchmarks measure of the crawl process.
    workers_peak = _ChildrenPeak() if spec.get("workers_peak") else None
    process.start()
    if workers_peak is not None:
        workers_peak.stop()
    raw = crawler.stats.get_stats() if crawler.stats else {}
    stats = {k: v for k, v in raw.items() if isinstance(v, (int, float, str))}
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    (start,) = opened
    cpu = {
        "crawl": own.ru_utime + own.ru_stime,
        "startup": start.ru_utime + start.ru_stime,
        # From spider_opened on: the crawl process's system CPU and its context switches
        # (voluntary: waits for a lock or I/O; involuntary: preempted).
        "crawl_sys": own.ru_stime - start.ru_stime,
        "crawl_voluntary_switches": own.ru_nvcsw - start.ru_nvcsw,
        "crawl_involuntary_switches": own.ru_nivcsw - start.ru_nivcsw,
        "workers": children.ru_utime + children.ru_stime,
        # Peak resident memory (MB) of the crawl process and of its largest worker.
        "crawl_maxrss_mb": own.ru_maxrss / 1024,
        "workers_maxrss_mb": children.ru_maxrss / 1024,
        # The largest worker's own peak (spec "workers_peak"): a spawned child's
        # ru_maxrss above counts the crawl process's image it was forked from before it
        # ran a fresh interpreter.
        "workers_own_peak_mb": workers_peak.peak_kb / 1024 if workers_peak else None,
    }
    result = {"items": items, "stats": stats, "errors": errors, "cpu": cpu, "signals": sent}
    Path(out_path).write_text(json.dumps(result, default=str))
    return 0


class _ChildrenPeak(threading.Thread):
    """The highest peak resident memory (``VmHWM``) of this process's children, read
    from ``/proc`` every 20 ms while they live (Linux; 0 elsewhere)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kb = 0
        self._stopped = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._stopped.wait(0.02):
            self._read()

    def stop(self) -> None:
        self._stopped.set()
        self.join()

    def _read(self) -> None:
        for children in Path("/proc/self/task").glob("*/children"):
            try:
                pids = children.read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
