"""What a crawl decided, page by page, and the demo's readable summary of it.

``Recorder`` listens to scrapy-simhash's ``page_observed`` signal, whose ``info`` dict says for
every fetched page whether it was kept or dropped (and as a copy of what), under which key
(the canonical URL the page names) and whether it changed since the last crawl. The summary then checks those decisions against the demo
site's ground truth, so a reader sees both what happened and that it was right.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from demo_site.server import DemoSite

#: How the summary names each kind of copy the demo site publishes.
KIND_LEGEND = {
    "print": "/print/news/...",
    "amp": "/amp/news/...",
    "tracking": "?utm_source=...",
    "session": ";jsessionid=... or ?sid=...",
    "partner": "/partner/story/...",
}


@dataclass
class PageResult:
    """The middleware's decision about one fetched page (site-relative paths).

    ``key`` is what the index files the page under: its canonical URL (empty: its own path).
    """

    path: str
    duplicate_of: str | None = None
    key: str = ""
    distance: int | None = None
    changed: bool | None = None
    change_distance: int | None = None
    reason: str | None = None

    @property
    def name(self) -> str:
        """The URL the page is known by: its canonical URL."""
        return self.key or self.path


@dataclass
class RoundReport:
    """One crawl: counts from Scrapy's stats and every page's decision."""

    round: int
    pages_fetched: int = 0
    items: int = 0
    seconds: float = 0.0
    pages: list[PageResult] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    #: URLs the recrawl store schedules after this round (site-relative).
    schedule: list[str] = field(default_factory=list)
    #: Requests not fetched because URL rules name them copies of a kept page
    #: (SIMHASH_DUST_ENABLED): path -> the kept page's path.
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def kept(self) -> list[PageResult]:
        return [p for p in self.pages if p.duplicate_of is None]

    @property
    def duplicates(self) -> list[PageResult]:
        return [p for p in self.pages if p.duplicate_of is not None]

    def page(self, path: str) -> PageResult | None:
        return next((p for p in self.pages if p.path == path), None)


class Recorder:
    """Turns one crawl's signals into a ``RoundReport``."""

    def __init__(self, crawler: Any, round_no: int, base_url: str) -> None:
        from scrapy import signals as scrapy_signals

        from scrapy_simhash import signals

        self.crawler = crawler
        self.base = base_url.rstrip("/")
        self.report = RoundReport(round_no)
        self._started = time.monotonic()
        crawler.signals.connect(self._opened, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(self._observed, signal=signals.page_observed)
        crawler.signals.connect(self._skipped, signal=signals.known_copy_skipped)
        crawler.signals.connect(self._closed, signal=scrapy_signals.spider_closed)

    def _path(self, url: str) -> str:
        return unquote(url.removeprefix(self.base))

    def _opened(self, spider: Any) -> None:
        self._started = time.monotonic()

    def _observed(self, request: Any, response: Any, info: dict[str, Any]) -> None:
        duplicate_of = info.get("duplicate_of")
        self.report.pages.append(
            PageResult(
                path=self._path(response.url),
                key=self._path(info.get("key") or response.url),
                duplicate_of=None if duplicate_of is None else self._path(duplicate_of),
                distance=info.get("distance"),
                changed=info.get("changed"),
                change_distance=info.get("change_distance"),
                reason=info.get("reason"),
            )
        )

    def _skipped(self, request: Any, kept_url: str, **_: Any) -> None:
        self.report.skipped[self._path(request.url)] = self._path(kept_url)

    def _closed(self, spider: Any, reason: str) -> None:
        stats = self.crawler.stats.get_stats()
        self.report.pages_fetched = int(stats.get("downloader/response_count", 0))
        self.report.items = int(stats.get("item_scraped_count", 0))
        self.report.seconds = time.monotonic() - self._started
        self.report.stats = {k: v for k, v in sorted(stats.items()) if k.startswith("simhash/")}
        self.report.pages.sort(key=lambda p: p.path)


def check_against_site(report: RoundReport) -> dict[str, list[str]]:
    """Compare a round's decisions with the site's ground truth (which pages copy which).

    Judged per story, not per URL: whichever of its URLs arrived first, exactly one page of
    the story must be kept, under the original's URL, and every other one dropped as a copy
    of the original.
    """
    clusters = DemoSite(round=report.round).clusters()
    caught, wrong_original, missed, avoided = [], [], [], []
    for original, copies in clusters.items():
        members = [report.page(path) for path in (original, *copies.values())]
        fetched = [page for page in members if page is not None]
        # The page kept under the original's URL stands for the story (the original itself,
        # or a copy that arrived first); every other URL must be a copy of the original.
        named = [p for p in fetched if p.duplicate_of is None and p.name == original]
        stand_in = named[0] if named else None
        for page in fetched:
            if page is stand_in:
                continue
            if page.duplicate_of is None:
                missed.append(page.path)
            elif page.duplicate_of != original:
                wrong_original.append(f"{page.path} -> {page.duplicate_of}")
            else:
                caught.append(page.path)
        story = {original, *copies.values()}
        for path, page in zip((original, *copies.values()), members, strict=True):
            if page is not None:
                continue
            # Not fetched: a copy the URL rules named a copy of a page of its own story.
            if report.skipped.get(path) in story:
                avoided.append(path)
            elif path != original or path not in report.skipped:
                missed.append(path)
    known = {path for o, c in clusters.items() for path in (o, *c.values())}
    false = [f"{p.path} -> {p.duplicate_of}" for p in report.duplicates if p.path not in known]
    story_of = {path: o for o, c in clusters.items() for path in (o, *c.values())}
    wrong_skips = [
        f"{path} -> {kept}"
        for path, kept in report.skipped.items()
        if path not in story_of or story_of.get(kept) != story_of[path]
    ]
    return {
        "caught": caught,
        "avoided": avoided,
        "distinct_skipped": wrong_skips,
        "wrong_original": wrong_original,
        "missed": missed,
        "false_duplicates": false,
    }


def _duplicate_lines(report: RoundReport) -> list[str]:
    """One line per kept page: the copies dropped as its duplicates, by kind and distance."""
    clusters = DemoSite(round=report.round).clusters()
    kinds = {path: kind for copies in clusters.values() for kind, path in copies.items()}
    kinds.update(dict.fromkeys(clusters, "original"))
    order = {kind: i for i, kind in enumerate(KIND_LEGEND)}
    groups: dict[str, list[tuple[int, str]]] = {}
    for page in report.duplicates:
        label = kinds.get(page.path, page.path)
        entry = (order.get(label, len(order)), f"{label} {page.distance}")
        groups.setdefault(page.duplicate_of or "", []).append(entry)
    for page in report.kept:  # a copy that arrived first is kept under the original's URL
        if page.name != page.path:
            label = kinds.get(page.path, page.path)
            groups.setdefault(page.name, []).append((-1, f"(kept: {label})"))
    width = max((len(k) for k in groups), default=0)
    lines = ["  Near-duplicates, by the page kept, under its canonical URL (distance in bits):"]
    for kept in sorted(groups):
        copies = " · ".join(text for _, text in sorted(groups[kept]))
        lines.append(f"    {kept:{width}s}  {copies}")
    legend = ", ".join(f"{kind} {where}" for kind, where in KIND_LEGEND.items())
    lines.append(f"  ({legend})")
    return lines


def _change_lines(report: RoundReport) -> list[str]:
    changed = [p for p in report.kept if p.changed]
    unchanged = [p for p in report.kept if p.changed is False]
    lines = [f"  changed since last crawl {len(changed):4d}"]
    lines.extend(f"      {p.path} ({p.change_distance} bits)" for p in changed)
    lines.append(f"  unchanged                {len(unchanged):4d}")
    lines.append("  The pages that differ between rounds:")
    watched = DemoSite(round=report.round).changing_pages()
    width = max(len(path) for path in watched)
    for path, how in watched.items():
        page = report.page(path)
        if page is None:
            verdict = "not fetched"
        else:
            word = {True: "changed", False: "unchanged", None: "not compared"}[page.changed]
            verdict = f"{word} ({page.change_distance} bits)"
        lines.append(f"    {path:{width}s}  {how:44s} -> {verdict}")
    return lines


def _dropped(report: RoundReport) -> str:
    dropped = int(report.stats.get("simhash/dropped", 0))
    if dropped or not report.duplicates:
        return f"{dropped} dropped"
    return "passed on, marked in response.meta: SIMHASH_DROP_DUPLICATES is off"


def format_round(report: RoundReport) -> list[str]:
    """The lines describing one round."""
    short = [p for p in report.kept if p.reason]
    lines = [
        f"  pages fetched            {report.pages_fetched:4d}   in {report.seconds:.1f} s",
        f"  unique pages kept        {len(report.kept):4d}   ({report.items} articles scraped)",
        f"  near-duplicates          {len(report.duplicates):4d}   ({_dropped(report)})",
    ]
    if short:
        lines.append(f"  kept, short pages        {len(short):4d}")
        lines.extend(f"      {p.path}: {p.reason}" for p in short)
    if any(p.changed is not None for p in report.kept):  # an earlier crawl to compare with
        lines.extend(_change_lines(report))
    lines.append("")
    lines.extend(_duplicate_lines(report))
    if report.schedule:
        copies = {p for c in DemoSite(round=report.round).clusters().values() for p in c.values()}
        listed = sum(1 for url in report.schedule if url in copies)
        lines.append(
            f"  Recrawl schedule: {len(report.schedule)} URLs, {listed} of them copies "
            "(every story is scheduled under its canonical URL)"
        )
    check = check_against_site(report)
    total = len(check["caught"]) + len(check["missed"]) + len(check["wrong_original"])
    total += len(check["avoided"])
    recognised = len(check["caught"]) + len(check["avoided"])
    lines.append(
        f"  Ground truth: {recognised} of {total} copies recognised as copies of "
        f"their original; {len(check['false_duplicates'])} distinct pages taken for copies"
    )
    if report.skipped:
        lines.append(
            f"  URL rules: {len(check['avoided'])} copies not fetched at all (of "
            f"{len(check['avoided']) + len(check['caught'])} copies recognised), "
            f"{len(check['distinct_skipped'])} distinct pages skipped"
        )
    for name, label in (
        ("distinct_skipped", "distinct pages skipped by URL rules"),
        ("missed", "copies kept as unique"),
        ("wrong_original", "copies matched to another page"),
        ("false_duplicates", "distinct pages dropped as duplicates"),
    ):
        if check[name]:
            shown = ", ".join(check[name][:5])
            more = f" and {len(check[name]) - 5} more" if len(check[name]) > 5 else ""
            lines.append(f"    {len(check[name])} {label}: {shown}{more}")
    return lines


def format_summary(reports: list[RoundReport], site_url: str, index: str) -> str:
    """The whole summary the demo prints."""
    lines = ["", f"scrapy-simhash demo: crawled The Lantern at {site_url}", f"index: {index}", ""]
    for report in reports:
        title = "first crawl" if report.round == 1 else "the site moved on; recrawl"
        lines.append(f"Round {report.round}: {title}")
        lines.extend(format_round(report))
        lines.append("")
    last = reports[-1]
    lines.append(f"scrapy-simhash stats of round {last.round}:")
    lines.extend(f"  {name:30s} {value}" for name, value in last.stats.items())
    return "\n".join(lines)
