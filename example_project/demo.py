"""scrapy-simhash demo: serve a small news site locally, crawl it twice, explain what happened.

Round 1 crawls The Lantern, a bundled news site whose articles also appear as print and AMP
views, with tracking parameters, with session ids and on a partner site: the add-on keeps one
page per story and drops the copies. Then the site moves on (a live blog gains entries, the
editor's letter shows a new timestamp and view count) and round 2 recrawls it: the live blog
is reported changed, the letter unchanged.

    python3 example_project/demo.py                      # embedded SQLite index in .scrapy/
    python3 example_project/demo.py --index-url redis://127.0.0.1:6379/0
    python3 example_project/demo.py -s SIMHASH_MAX_DISTANCE=0 --verbose

Each run starts from an empty index (``--keep-index`` keeps what earlier runs stored), so
the summary is the same every time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # ``demo_site`` and ``demo_news`` live next to this file
    sys.path.insert(0, str(HERE))

from demo_site.server import DemoServer, DemoSite

SPIDER = "news"


@dataclass
class PageResult:
    """What the middleware decided about one fetched page (from its ``page_observed`` info)."""

    path: str
    duplicate_of: str | None = None
    distance: int | None = None
    changed: bool | None = None
    change_distance: int | None = None
    reason: str | None = None


@dataclass
class RoundReport:
    round: int
    pages_fetched: int = 0
    items: int = 0
    pages: list[PageResult] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def kept(self) -> list[PageResult]:
        return [p for p in self.pages if p.duplicate_of is None]

    @property
    def duplicates(self) -> list[PageResult]:
        return [p for p in self.pages if p.duplicate_of is not None]


class Recorder:
    """Listens to one crawl's signals and turns them into a ``RoundReport``."""

    def __init__(self, crawler: Any, round_no: int, base_url: str) -> None:
        from scrapy import signals as scrapy_signals

        from scrapy_simhash import signals

        self.crawler = crawler
        self.base = base_url.rstrip("/")
        self.report = RoundReport(round_no)
        crawler.signals.connect(self._observed, signal=signals.page_observed)
        crawler.signals.connect(self._closed, signal=scrapy_signals.spider_closed)

    def path(self, url: str | None) -> str | None:
        """Site-relative form of a URL (or index key) for a readable summary."""
        if url is None:
            return None
        return url.removeprefix(self.base)

    def _observed(self, request: Any, response: Any, info: dict[str, Any]) -> None:
        self.report.pages.append(
            PageResult(
                path=self.path(response.url) or response.url,
                duplicate_of=self.path(info.get("duplicate_of")),
                distance=info.get("distance"),
                changed=info.get("changed"),
                change_distance=info.get("change_distance"),
                reason=info.get("reason"),
            )
        )

    def _closed(self, spider: Any, reason: str) -> None:
        stats = self.crawler.stats.get_stats()
        self.report.pages_fetched = int(stats.get("downloader/response_count", 0))
        self.report.items = int(stats.get("item_scraped_count", 0))
        self.report.stats = {k: v for k, v in sorted(stats.items()) if k.startswith("simhash/")}
        self.report.pages.sort(key=lambda p: p.path)


def project_settings(args: argparse.Namespace) -> Any:
    """The project's settings, plus the demo's command-line choices."""
    from scrapy.utils.project import get_project_settings

    settings = get_project_settings()
    if args.index_url:
        settings.set("SIMHASH_INDEX_URL", args.index_url, priority="cmdline")
    if not args.verbose:
        settings.set("LOG_LEVEL", "WARNING", priority="cmdline")
    for name, value in args.settings:
        settings.set(name, value, priority="cmdline")
    return settings


def reset_state(settings: Any) -> str:
    """Empty the demo's recrawl history; the index itself is reset by SIMHASH_INDEX_RESET.

    Returns the index URL the crawl will use (the embedded SQLite file unless configured).
    """
    from scrapy_simhash._scrapy_config import index_url, namespace
    from scrapy_simhash.recrawl import open_recrawl_store

    url = index_url(settings)
    store = open_recrawl_store(url, namespace=namespace(settings, SPIDER))
    try:
        store.clear()
    finally:
        store.close()
    return url


def run_rounds(settings: Any, server: DemoServer, rounds: int, reset: bool) -> list[RoundReport]:
    """Crawl the site ``rounds`` times in one Scrapy process, moving it on in between."""
    import asyncio

    from demo_news.spiders.news import NewsSpider
    from scrapy.crawler import AsyncCrawlerProcess, Crawler

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
                reports.append(recorder.report)
        finally:
            reactor.stop()  # type: ignore[attr-defined]

    task = asyncio.get_event_loop().create_task(crawl_all())
    process.start(stop_after_crawl=False)
    if task.done():  # not done: interrupted (Ctrl-C); report the rounds that finished
        task.result()  # re-raise whatever stopped the rounds
    return reports


# -- the summary -------------------------------------------------------------------------------


def check_against_site(report: RoundReport) -> dict[str, list[str]]:
    """Compare a round's decisions with the site's ground truth (which pages copy which)."""
    clusters = DemoSite(round=report.round).clusters()
    decided = {p.path: p for p in report.pages}
    caught, wrong_original, missed = [], [], []
    for original, copies in clusters.items():
        for path in copies.values():
            page = decided.get(path)
            if page is None or page.duplicate_of is None:
                missed.append(path)
            elif page.duplicate_of != original:
                wrong_original.append(f"{path} -> {page.duplicate_of}")
            else:
                caught.append(path)
    copies = {path for c in clusters.values() for path in c.values()}
    false = [f"{p.path} -> {p.duplicate_of}" for p in report.duplicates if p.path not in copies]
    return {
        "caught": caught,
        "wrong_original": wrong_original,
        "missed": missed,
        "false_duplicates": false,
    }


def format_round(report: RoundReport, site: DemoSite) -> list[str]:
    lines = [
        f"  pages fetched            {report.pages_fetched:4d}",
        f"  unique pages kept        {len(report.kept):4d}   (articles scraped: {report.items})",
        f"  near-duplicates dropped  {len(report.duplicates):4d}",
    ]
    untexted = [p for p in report.kept if p.reason]
    if untexted:
        lines.append(f"  kept without fingerprint {len(untexted):4d}   (too little text, e.g. short listings)")
    if report.round == 1:
        lines.append("")
        lines.append("  Near-duplicates, grouped by the page kept (Hamming distance in bits):")
        groups: dict[str, list[PageResult]] = {}
        for page in report.duplicates:
            groups.setdefault(page.duplicate_of or "", []).append(page)
        for original in sorted(groups):
            lines.append(f"    {original}")
            lines.extend(f"      = {p.path}   (distance {p.distance})" for p in groups[original])
        return lines
    watched = site.changing_pages()
    changed = [p for p in report.kept if p.changed]
    unchanged = [p for p in report.kept if p.changed is False]
    lines.append(f"  changed since round 1    {len(changed):4d}")
    lines.extend(f"      {p.path}   (distance {p.change_distance})" for p in changed)
    lines.append(f"  unchanged                {len(unchanged):4d}")
    for path, how in watched.items():
        page = next((p for p in report.kept if p.path == path), None)
        if page is not None:
            verdict = {True: "changed", False: "unchanged", None: "not compared"}[page.changed]
            lines.append(f"      {path}: {how} -> {verdict} (distance {page.change_distance})")
    return lines


def format_summary(
    reports: list[RoundReport], site: DemoSite, index: str, checks: dict[str, list[str]]
) -> str:
    from scrapy_simhash._redis import mask_url

    lines = ["", f"scrapy-simhash demo: The Lantern, index {mask_url(index)}", ""]
    titles = {1: "Round 1: first crawl", 2: "Round 2: the site moved on, recrawl"}
    for report in reports:
        lines.append(titles.get(report.round, f"Round {report.round}: recrawl"))
        lines.extend(format_round(report, site))
        lines.append("")
    total = sum(len(c) for c in site.clusters().values())
    lines.append(
        f"Check against the site's ground truth: {len(checks['caught'])} of {total} copies "
        f"dropped as duplicates of their original"
    )
    for name, label in (
        ("missed", "copies kept as unique"),
        ("wrong_original", "copies matched to another page"),
        ("false_duplicates", "distinct pages dropped as duplicates"),
    ):
        if checks[name]:
            shown = ", ".join(checks[name][:5])
            more = f" and {len(checks[name]) - 5} more" if len(checks[name]) > 5 else ""
            lines.append(f"  {len(checks[name])} {label}: {shown}{more}")
    last = reports[-1].stats
    lines.append("")
    lines.append(f"simhash stats (round {reports[-1].round}):")
    lines.extend(f"  {name:32s} {value}" for name, value in last.items())
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serve the demo news site, crawl it with scrapy-simhash and summarise.",
    )
    parser.add_argument(
        "--index-url",
        help="index and recrawl store URL, e.g. redis://127.0.0.1:6379/0 "
        "(default: embedded SQLite in example_project/.scrapy/)",
    )
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=2, help="crawls to run")
    parser.add_argument(
        "--keep-index", action="store_true", help="keep what earlier runs stored (no reset)"
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
    index = reset_state(settings) if not args.keep_index else None
    with DemoServer() as server:
        reports = run_rounds(settings, server, args.rounds, reset=not args.keep_index)
        site = server.site
    if index is None:
        from scrapy_simhash._scrapy_config import index_url

        index = index_url(settings)
    checks = check_against_site(reports[0])
    print(format_summary(reports, site, index, checks))
    if json_path is not None:
        data = {
            "site": {
                "clusters": DemoSite(round=1).clusters(),
                "listings": site.listing_paths(),
                "changing": site.changing_pages(),
            },
            "rounds": [asdict(r) for r in reports],
            "check": checks,
        }
        json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False), "utf-8")
    return 0 if len(reports) == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
