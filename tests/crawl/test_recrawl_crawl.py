"""End to end: repeated real crawls of a local site whose pages change between runs.

The spider uses ``RecrawlSpiderMixin``; the add-on's middleware records each fetch. After a
few runs the page that really changes is revisited more and more often, the static pages
and the page whose only change is a timestamp less and less often, and the page with an
ETag is revalidated with ``If-None-Match`` (a 304 counts as unchanged).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_simhash.recrawl import open_recrawl_store

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]
pytestmark = pytest.mark.crawl

_SPIDER = """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy_simhash import RecrawlSpiderMixin

spec = json.loads(sys.argv[1])

class NewsSpider(RecrawlSpiderMixin, scrapy.Spider):
    name = "news"
    start_urls = spec["start_urls"]

    def parse(self, response):
        yield {"url": response.url}

process = CrawlerProcess(spec["settings"])
process.crawl(NewsSpider)
process.start()
"""

SETTINGS = {
    "ADDONS": {"scrapy_simhash.Addon": 0},
    "CONCURRENT_REQUESTS": 1,
    "SIMHASH_WORKERS": 0,
    "SIMHASH_TOKENIZER": "rjieba",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "LOG_LEVEL": "INFO",
    # Runs are seconds apart: a prior of one change per 10 s and no clamps in the way.
    "SIMHASH_RECRAWL_PRIOR_RATE_PER_DAY": 8640,
    "SIMHASH_RECRAWL_MIN_INTERVAL_SECS": 0.001,
    # Claim every known URL at start, however far its next visit is.
    "SIMHASH_RECRAWL_START_WITHIN_SECS": 1e9,
}

WORDS = [
    "river",
    "market",
    "council",
    "harvest",
    "station",
    "winter",
    "bridge",
    "garden",
    "school",
    "museum",
    "railway",
    "festival",
    "library",
    "orchard",
    "harbour",
    "factory",
    "village",
    "mountain",
    "forest",
    "theatre",
    "hospital",
    "stadium",
    "airport",
    "bakery",
]


def article(title: str, paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        "<footer><p>Copyright Valley Gazette.</p></footer></body></html>"
    ).encode()


def random_story(seed: int) -> bytes:
    rng = random.Random(seed)
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(40)).capitalize() + "." for _ in range(5)
    ]
    return article(f"Story {seed}", paragraphs)


STATIC_TEXT = [
    (
        "The town council approved the plan to restore the old stone bridge over the river, "
        "which has been closed to traffic since the floods two winters ago."
    ),
    (
        "Engineers will replace the damaged arches and strengthen the foundations, and the "
        "work is expected to take most of next year, according to the council."
    ),
    (
        "Residents welcomed the decision, saying the detour through the industrial estate "
        "has added twenty minutes to every journey into the market square."
    ),
]


def timestamped(run: int) -> bytes:
    stamp = f"Updated 2024-05-0{run} 1{run}:0{run}:3{run}. {100 + 37 * run} readers online."
    return article("Bridge repairs approved", [*STATIC_TEXT, stamp])


def crawl(workdir: Path, start_urls: list[str]) -> None:
    spec = {
        "start_urls": start_urls,
        "settings": {**SETTINGS, "LOG_FILE": str(workdir / "crawl.log")},
    }
    proc = subprocess.run(
        [sys.executable, "-c", _SPIDER, json.dumps(spec)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    log = (workdir / "crawl.log").read_text(errors="replace")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_intervals_follow_real_changes_across_runs(http_site: SiteServer, tmp_path: Path) -> None:
    html = "text/html; charset=utf-8"
    http_site.pages["/static.html"] = (html, article("Library hours", STATIC_TEXT[:2]))
    paths = ["/busy.html", "/stamp.html", "/static.html", "/etag/validated.html"]
    urls = [http_site.url(p) for p in paths]
    http_site.pages["/validated.html"] = (html, random_story(999))
    history: dict[str, list[Any]] = {u: [] for u in urls}
    runs = 3
    for run in range(1, runs + 1):
        http_site.pages["/busy.html"] = (html, random_story(run))
        http_site.pages["/stamp.html"] = (html, timestamped(run))
        http_site.hits.clear()
        crawl(tmp_path, urls)  # the start URLs are also due after the first run
        assert {p: http_site.hits[p] for p in paths} == dict.fromkeys(paths, 1)
        store_url = f"sqlite:///{tmp_path / '.scrapy' / 'simhash' / 'index.sqlite3'}"
        with open_recrawl_store(store_url, namespace="news") as store:
            for u in urls:
                history[u].append(store.get(u))

    busy, stamp, static, validated = (history[u] for u in urls)
    assert all(s.visits == runs for states in history.values() for s in states[-1:])
    assert busy[-1].changes == runs - 1
    assert stamp[-1].changes == static[-1].changes == validated[-1].changes == 0
    assert validated[-1].status == 304  # revalidated with the stored ETag
    assert validated[-1].etag is not None

    def intervals(states: list[Any]) -> list[float]:
        return [s.interval_secs for s in states]

    # All start from the same prior; then the changing page's interval shrinks every run
    # while the others grow.
    assert len({s[0].interval_secs for s in history.values()}) == 1
    assert all(a > b for a, b in pairwise(intervals(busy)))
    for states in (stamp, static, validated):
        assert all(a < b for a, b in pairwise(intervals(states)))


_FOLLOWING_SPIDER = _SPIDER.replace(
    '        yield {"url": response.url}',
    '        yield {"url": response.url}\n'
    '        yield from response.follow_all(css="a.story", callback=self.parse)',
)


def test_a_due_url_is_fetched_once_per_round(http_site: SiteServer, tmp_path: Path) -> None:
    html = "text/html; charset=utf-8"
    stories = [f"/etag/s{n}.html" for n in range(6)]
    for n in range(6):
        http_site.pages[f"/s{n}.html"] = (html, random_story(100 + n))
    links = "".join(f'<a class="story" href="{p}">story</a> ' for p in stories)
    http_site.pages["/front.html"] = (html, article("Front page", [STATIC_TEXT[0], links]))
    spec = {
        "start_urls": [http_site.url("/front.html")],
        "settings": {**SETTINGS, "LOG_FILE": str(tmp_path / "crawl.log")},
    }
    for _ in range(2):  # round 1 discovers; round 2 claims every URL as due
        http_site.hits.clear()
        proc = subprocess.run(
            [sys.executable, "-c", _FOLLOWING_SPIDER, json.dumps(spec)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    # The due stories answer 304 (ETag) and are not fetched again when the front page,
    # also due, links to them.
    assert {p: http_site.hits[p] for p in stories} == dict.fromkeys(stories, 1)
    assert http_site.hits["/front.html"] == 1


def test_robots_txt_is_not_a_page(http_site: SiteServer, tmp_path: Path) -> None:
    from tests.scrapy_runner import run_crawl

    http_site.pages["/robots.txt"] = ("text/plain", b"User-agent: *\nDisallow: /private/\n")
    http_site.pages["/s1.html"] = ("text/html; charset=utf-8", random_story(1))
    store_url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    result = run_crawl(
        tmp_path / "c",
        {
            "requests": [{"url": http_site.url("/s1.html")}],
            "settings": {
                **SETTINGS,
                "ROBOTSTXT_OBEY": True,
                "SIMHASH_INDEX_URL": store_url,
                "SIMHASH_RECRAWL_ENABLED": True,
                "SIMHASH_NAMESPACE": "news",
            },
        },
    )
    assert http_site.hits["/robots.txt"] == 1
    assert result.stats["simhash/pages"] == 1
    assert result.stats["simhash/skipped/not_a_page"] == 1
    with open_recrawl_store(store_url, namespace="news") as store:
        assert store.get(http_site.url("/robots.txt")) is None
        assert store.get(http_site.url("/s1.html")) is not None
