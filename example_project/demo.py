"""scrapy-simhash demo: serve a small news site locally, crawl it twice, explain what happened.

Round 1 crawls The Lantern, a bundled news site whose articles also appear as print and AMP
views, with tracking parameters, with session ids and on a partner site: the add-on keeps one
page per story and drops the copies. Then the site moves on (a live blog gains entries, the
editor's letter shows a new timestamp and view count) and round 2 recrawls it: the live blog
is reported changed, the letter unchanged.

    python3 example_project/demo.py                      # embedded SQLite index in .scrapy/
    python3 example_project/demo.py --index-url redis://127.0.0.1:6379/0
    python3 example_project/demo.py -s SIMHASH_MAX_DISTANCE=0 --verbose
    python3 example_project/demo.py --dust      # and skip fetching copies URL rules name

Each run starts from an empty index (``--keep-index`` keeps what earlier runs stored), so
the summary is the same every time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # ``demo_site`` and ``demo_news`` live next to this file
    sys.path.insert(0, str(HERE))

try:
    from scrapy.crawler import AsyncCrawlerProcess, Crawler

    from scrapy_simhash._redis import mask_url
    from scrapy_simhash.exceptions import SimhashError
    from scrapy_simhash.glue.config import index_url
    from scrapy_simhash.recrawl import open_recrawl_store
    from scrapy_simhash.settings import namespace
except ModuleNotFoundError as exc:  # the first thing a new user runs: say what to do
    if exc.name not in ("scrapy", "scrapy_simhash"):
        raise
    sys.exit(f"{exc}: install the package first: python3 -m pip install -e .")

from demo_news.report import Recorder, RoundReport, check_against_site, format_summary
from demo_news.spiders.news import NewsSpider
from demo_site.server import DEFAULT_PORT, DemoServer, DemoSite


def project_settings(args: argparse.Namespace) -> Any:
    """The project's settings, plus the demo's command-line choices."""
    from scrapy.utils.project import get_project_settings

    settings = get_project_settings()
    if args.index_url:
        settings.set("SIMHASH_INDEX_URL", args.index_url, priority="cmdline")
    if not args.verbose:
        settings.set("LOG_LEVEL", "WARNING", priority="cmdline")
    if args.dust:
        settings.set("SIMHASH_DUST_ENABLED", True, priority="cmdline")
    for name, value in args.settings:
        settings.set(name, value, priority="cmdline")
    return settings


def reset_recrawl_history(settings: Any, url: str) -> None:
    """Forget earlier runs' per-URL history; the index is reset by SIMHASH_INDEX_RESET."""
    store = open_recrawl_store(url, namespace=namespace(settings, NewsSpider.name))
    try:
        store.clear()
    finally:
        store.close()


def scheduled_paths(settings: Any, url: str, site: str) -> list[str]:
    """Every URL the recrawl store schedules, as site paths (what the next round revisits)."""
    store = open_recrawl_store(url, namespace=namespace(settings, NewsSpider.name))
    try:
        due = store.due(within=10 * 365 * 86400, limit=100_000)
    finally:
        store.close()
    base = site.rstrip("/")
    return sorted(unquote(d.url.removeprefix(base)) for d in due)


def run_rounds(settings: Any, server: DemoServer, rounds: int, reset: bool) -> list[RoundReport]:
    """Crawl the site ``rounds`` times in one Scrapy process, moving it on in between."""
    process = AsyncCrawlerProcess(settings)  # installs the asyncio reactor
    from twisted.internet import reactor

    reports: list[RoundReport] = []

    async def crawl_all() -> None:
        try:
            for round_no in range(1, rounds + 1):
                server.site.round = round_no
                round_settings = settings.copy()
                round_settings.set("SIMHASH_INDEX_RESET", reset and round_no == 1, "cmdline")
                crawler = Crawler(NewsSpider, round_settings)
                recorder = Recorder(crawler, round_no, server.url)
                await process.crawl(crawler, site=server.url)
                recorder.report.schedule = scheduled_paths(
                    round_settings, index_url(round_settings), server.url
                )
                reports.append(recorder.report)
        finally:
            reactor.stop()  # type: ignore[misc]

    task = asyncio.get_event_loop().create_task(crawl_all())
    process.start(stop_after_crawl=False)
    if task.done():  # not done: interrupted (Ctrl-C); report the rounds that finished
        task.result()  # re-raise whatever stopped the rounds
    return reports


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serve the demo news site, crawl it with scrapy-simhash and summarise.",
    )
    parser.add_argument(
        "--index-url",
        help="index and recrawl store URL, e.g. redis://127.0.0.1:6379/0 "
        "(default: embedded SQLite in example_project/.scrapy/)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to serve the demo site on (default {DEFAULT_PORT}; a free one if taken)",
    )
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=2, help="crawls to run")
    parser.add_argument(
        "--keep-index", action="store_true", help="keep what earlier runs stored (no reset)"
    )
    parser.add_argument(
        "--dust",
        action="store_true",
        help="learn URL rules from the copies found and skip fetching known copies "
        "(SIMHASH_DUST_ENABLED=True)",
    )
    parser.add_argument("--verbose", action="store_true", help="show Scrapy's full log")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "-s",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        type=_setting,
        help="override a setting, as with scrapy crawl -s",
    )
    return parser.parse_args(argv)


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    json_path = Path(args.json).resolve() if args.json else None
    os.chdir(HERE)  # scrapy.cfg is found here, and the embedded index lands in ./.scrapy/
    settings = project_settings(args)
    index = index_url(settings)
    try:
        if not args.keep_index:
            reset_recrawl_history(settings, index)
    except SimhashError as exc:  # e.g. Redis not running: no point in crawling
        print(
            f"Cannot use the index at {mask_url(index)}: {exc}\n"
            "Is the server running? Without --index-url the demo uses an embedded index.",
            file=sys.stderr,
        )
        return 2
    with DemoServer(port=args.port) as server:
        if args.keep_index and server.port != args.port:
            print(
                f"Port {args.port} is taken, serving on {server.url}: pages stored by earlier "
                "runs have other URLs, so this run's pages look like copies of them.",
                file=sys.stderr,
            )
        reports = run_rounds(settings, server, args.rounds, reset=not args.keep_index)
    print(format_summary(reports, server.url, mask_url(index)))
    if json_path is not None:
        data = {
            "site": server.url,
            "index": mask_url(index),
            "rounds": [
                {
                    **asdict(r),
                    "check": check_against_site(r),
                    "clusters": DemoSite(r.round).clusters(),
                }
                for r in reports
            ],
        }
        json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False), "utf-8")
    return 0 if len(reports) == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
