"""``report``: one page on a crawl's state, as text and (``--png``) as a picture.

What a person asks after a crawl: how many pages each host kept and how many were dropped
as near-duplicates, which pages were copied most (and which URL was kept for them), how
often pages change, and when they will be fetched again. The figures come from the
index (its keys and drop records) and the recrawl store of the namespace; the text and the
picture show the same figures, in the same bins.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from scrapy_simhash._redis import mask_url
from scrapy_simhash.cli._progress import bar, counting
from scrapy_simhash.cli._records import tally
from scrapy_simhash.cli._target import add_store_options, open_index, open_store, when
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.drops import DropRecord, kept_name
from scrapy_simhash.recrawl.config import DAY, RecrawlConfig
from scrapy_simhash.recrawl.estimate import rests_on_history
from scrapy_simhash.recrawl.state import PageState

HOUR = 3600.0
#: How often pages change, as people say it: (label, lowest changes per day), fastest first.
RATE_BINS: tuple[tuple[str, float], ...] = (
    ("more than hourly", 24.0),
    ("hourly to daily", 1.0),
    ("daily to weekly", 1 / 7),
    ("weekly to monthly", 1 / 30),
    ("monthly to yearly", 1 / 365),
    ("less than yearly", 0.0),
)
#: The bin of pages whose rate is still the prior's: too few fetches, or too close together.
TOO_LITTLE_HISTORY = "too little history"
#: When pages are next due: (label, latest seconds from now), soonest first.
DUE_BINS: tuple[tuple[str, float], ...] = (
    ("overdue", 0.0),
    ("next hour", HOUR),
    ("1-6 hours", 6 * HOUR),
    ("6-24 hours", DAY),
    ("1-7 days", 7 * DAY),
    ("1-4 weeks", 28 * DAY),
    ("later", float("inf")),
)
#: Distances above this are a record's mark, not a distance (no radius is this wide).
MAX_DISTANCE = 127
#: Due times read at most (earliest first) for the timeline.
MAX_DUE = 1_000_000


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "report",
        parents=[common],
        help="one page on a crawl's state: kept and dropped pages per host, the largest "
        "near-duplicate clusters, change rates and the recrawl timeline",
        description=(
            "Summarise the namespace a crawl of the spider wrote: pages kept and dropped as "
            "near-duplicates per host, the largest clusters of copies with the URL kept for "
            "each, how often pages change and when they are due again (recrawl store). "
            "--png draws the same figures on one page."
        ),
    )
    add_store_options(parser, items=True)
    parser.add_argument(
        "--png",
        metavar="FILE",
        help="also draw the report into FILE (needs matplotlib: pip install "
        '"scrapy-simhash[plot]")',
    )
    parser.add_argument(
        "--top", type=int, default=8, metavar="N", help="largest clusters shown (default 8)"
    )
    parser.add_argument(
        "--hosts",
        type=int,
        default=10,
        metavar="N",
        help="hosts shown, most pages first; the rest are summed (default 10)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


@dataclass
class Cluster:
    """A kept page and the copies dropped in its favour (with their distances; None for
    a canonical URL dropped as the copy of the page another URL brought first, whose
    record holds no distance)."""

    kept: str
    copies: list[tuple[str, int | None]]
    kept_stored: bool


@dataclass
class Report:
    namespace: str
    store: str
    at: float
    kept: int
    dropped: int
    hosts: list[tuple[str, int, int]]  # host, kept, dropped
    clusters: list[Cluster]
    clusters_total: int
    #: URLs that reached the spider with their page filed under another URL (the
    #: canonical URL they name, or a preferred URL): neither kept entries nor dropped.
    filed: int = 0
    #: URLs found near-duplicates that reached the spider marked as such, not dropped
    #: (SIMHASH_DROP_DUPLICATES off): in no cluster of copies dropped.
    marked: int = 0
    recrawl_pages: int = 0
    #: Pages per change-rate bin, for pages whose estimate rests on their own history.
    rates: list[tuple[str, int]] = field(default_factory=list)
    #: Pages whose rate is still the prior's (SIMHASH_RECRAWL_PRIOR_RATE_PER_DAY): not
    #: fetched yet, or fetched too few times or too close together to tell.
    too_little_history: int = 0
    prior_per_day: float = 0.0
    due: list[tuple[str, int]] = field(default_factory=list)


def run(args: argparse.Namespace) -> int:
    if args.top < 0 or args.hosts < 1:
        raise ConfigurationError("--top must be 0 or more and --hosts at least 1")
    if args.png:
        from scrapy_simhash.cli._plot import pyplot

        pyplot()  # a missing matplotlib is said before reading a large store
    report = collect(args)
    if args.png:  # first: the picture is written even when the text goes to a closed pipe
        draw(report, args.png)
        print(f"wrote {args.png}", file=sys.stderr)
    if args.json:
        print(json.dumps(asdict(report), ensure_ascii=False, indent=2))
    else:
        print(render(report))
    return 0


def netloc_shown(url: str) -> str:
    """A URL's network location as the report lists it (a key that is no URL says so)."""
    return urlsplit(url).netloc or "(not a URL)"


def clusters_of(
    drops: list[DropRecord], stored: set[str], records: dict[str, DropRecord] | None = None
) -> list[Cluster]:
    """Group drop records by the URL now naming their cluster, largest first (``records``:
    every record of the namespace, filing records included, to follow renamed clusters)."""
    by_url = records if records is not None else {record.url: record for record in drops}
    groups: dict[str, list[tuple[str, int | None]]] = {}
    for record in drops:
        name = kept_name(by_url.get, record.url, stored.__contains__) or record.kept
        if record.url in stored:  # dropped, and the name of its cluster since
            name = record.url
        distance = record.distance if record.distance <= MAX_DISTANCE else None
        groups.setdefault(name, []).append((record.url, distance))
    clusters = [
        Cluster(kept, sorted(copies, key=lambda c: (c[1] is None, c[1] or 0, c[0])), kept in stored)
        for kept, copies in groups.items()
    ]
    clusters.sort(key=lambda c: (-len(c.copies), c.kept))
    return clusters


def rate_bins(states: list[PageState], config: RecrawlConfig) -> tuple[list[tuple[str, int]], int]:
    """Pages per change-rate bin, and apart the pages whose rate is still the prior's (as
    ``schedule`` shows both: "1/day with prior, 0/day from history alone")."""
    counts = Counter[str]()
    too_little = 0
    for state in states:
        if not rests_on_history(
            state.history, prior_rate=config.prior_rate, prior_weight=config.prior_weight
        ):
            too_little += 1
            continue
        per_day = state.rate * DAY
        label = next(name for name, lowest in RATE_BINS if per_day >= lowest)
        counts[label] += 1
    return [(name, counts[name]) for name, _ in RATE_BINS], too_little


def due_bins(due: list[float], now: float) -> list[tuple[str, int]]:
    counts = Counter[str]()
    for moment in due:
        ahead = moment - now
        label = next(name for name, latest in DUE_BINS if ahead <= latest)
        counts[label] += 1
    return [(name, counts[name]) for name, _ in DUE_BINS]


def collect(args: argparse.Namespace) -> Report:
    index, _, target = open_index(args)
    with index:
        total = len(index) + index.drop_count()
        with bar(total, "records", desc="reading the index") as progress:
            try:
                keys = set(counting(index.keys(), progress))
            except NotImplementedError as exc:  # a backend registered without keys()
                raise ConfigurationError(f"report needs the index's keys: {exc}") from None
            # Only the URLs dropped: filing and holder records are no drops.
            records = tally(counting(index.drops(), progress))
    drops = records.dropped
    every = {
        r.url: r for r in (*records.dropped, *records.filed, *records.holding, *records.marked)
    }
    kept_hosts = Counter(netloc_shown(key) for key in keys)
    dropped_hosts = Counter(netloc_shown(record.url) for record in drops)
    hosts = sorted(
        ((host, kept_hosts[host], dropped_hosts[host]) for host in kept_hosts | dropped_hosts),
        key=lambda h: (-(h[1] + h[2]), h[0]),
    )
    clusters = clusters_of(drops, keys, every)
    now = time.time()
    report = Report(
        namespace=target.namespace,
        store=mask_url(target.index_url),
        at=now,
        kept=len(keys),
        dropped=len(drops),
        hosts=_fold(hosts, args.hosts),
        clusters=clusters[: args.top],
        clusters_total=len(clusters),
        filed=len(records.filed),
        marked=len(records.marked),
    )
    with open_store(args) as store:
        report.recrawl_pages = store.count()
        if report.recrawl_pages:
            scheduled = store.scheduled(within=100 * 365 * DAY, limit=MAX_DUE)
            states = [state for state, _ in scheduled]
            report.rates, report.too_little_history = rate_bins(states, store.config)
            report.prior_per_day = store.config.prior_rate_per_day
            report.due = due_bins([due for _, due in scheduled], now)
    return report


def _fold(hosts: list[tuple[str, int, int]], most: int) -> list[tuple[str, int, int]]:
    """The ``most`` largest hosts, the others summed in one row."""
    if len(hosts) <= most:
        return hosts
    rest = hosts[most - 1 :]
    other = (f"{len(rest)} other hosts", sum(h[1] for h in rest), sum(h[2] for h in rest))
    return [*hosts[: most - 1], other]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def summary(report: Report) -> str:
    """The counts, said as what they count: the namespace over every crawl that wrote it
    (one crawl's own counts are its log's closing line)."""
    pages = report.kept + report.dropped
    filed = (
        f"; {report.filed} URL(s) reached the spider with their page filed under another "
        "(canonical or preferred) URL"
        if report.filed
        else ""
    )
    marked = (
        f"; {report.marked} near-duplicate(s) reached the spider marked as copies, not "
        "dropped (SIMHASH_DROP_DUPLICATES off)"
        if report.marked
        else ""
    )
    return (
        f"{pages} pages fingerprinted: {report.kept} kept, {report.dropped} dropped as "
        f"near-duplicates ({_share(report.dropped, pages)}) in {report.clusters_total} "
        f"cluster(s), over all crawls{filed}{marked}"
    )


def render(report: Report) -> str:
    """The report as text."""
    lines = [
        f"namespace {report.namespace!r} of {report.store}, {when(report.at)}",
        summary(report),
        "",
        f"  {'pages per host':<40} {'kept':>5}  {'dropped':>7}",
    ]
    width = 40
    for host, kept, dropped in report.hosts:
        lines.append(f"  {_cut(host, width):<{width}} {kept:>5}  {dropped:>7}")
    lines.append("")
    if report.clusters:
        lines.append(
            "largest near-duplicate clusters (URL kept <- copies dropped, distance in bits)"
        )
        for number, cluster in enumerate(report.clusters, 1):
            gone = "" if cluster.kept_stored else "  (no longer in the index)"
            lines.append(f"  {number}. {cluster.kept}  {_copies(len(cluster.copies))}{gone}")
            lines.extend(
                f"       <- d={'-' if d is None else d}  {url}"
                + (" (the cluster's own name, dropped as its copy)" if d is None else "")
                for url, d in cluster.copies[:5]
            )
            if len(cluster.copies) > 5:
                lines.append(f"       <- ... {len(cluster.copies) - 5} more")
    else:
        lines.append("no near-duplicates dropped")
    lines.append("")
    if not report.recrawl_pages:
        lines.append("recrawl: no state in this namespace (SIMHASH_RECRAWL_ENABLED was off)")
        return "\n".join(lines)
    estimated = sum(n for _, n in report.rates)
    lines.append(
        f"how often pages change ({estimated} of the {report.recrawl_pages} pages the recrawl "
        "store tracks have a rate from their own history)"
    )
    lines.extend(f"  {name:<18} {n:>6}" for name, n in report.rates)
    lines.append(
        f"  {TOO_LITTLE_HISTORY:<18} {report.too_little_history:>6}   ({_prior_note(report)})"
    )
    lines.append("")
    lines.append(f"next visits (from {when(report.at)})")
    lines.extend(f"  {name:<18} {n:>6}" for name, n in report.due)
    return "\n".join(lines)


def _prior_note(report: Report) -> str:
    """What the pages with too little history have for a rate."""
    return (
        f"rate still the prior's {report.prior_per_day:g}/day: fetched too few times or too "
        "close together; 'schedule URL' shows both"
    )


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def _two_lines(label: str) -> str:
    """A bin label on two lines, so tick labels stay horizontal."""
    for joint in (" to ", " than ", " "):
        if joint in label:
            head, tail = label.split(joint, 1)
            return f"{head}{joint.rstrip()}\n{tail}"
    return label


def _cut(text: str, width: int) -> str:
    """Shorten ``text`` to ``width`` characters, keeping both ends."""
    if len(text) <= width:
        return text
    half = (width - 1) // 2
    return f"{text[:half]}…{text[-(width - 1 - half) :]}"


def _label(url: str, single_host: bool) -> str:
    if single_host:
        parts = urlsplit(url)
        url = parts.path + (f"?{parts.query}" if parts.query else "") or "/"
    return _cut(url, 48)


def draw(report: Report, path: str) -> None:
    """The report on one page: four panels under a one-line summary."""
    from scrapy_simhash.cli._plot import pyplot, save

    plt = pyplot()
    figure, grid = plt.subplots(2, 2, figsize=(15, 10), layout="constrained")
    figure.suptitle(
        f"Crawl state of namespace '{report.namespace}' ({report.store}) at "
        f"{when(report.at)}\n{summary(report)}",
        fontsize=12,
    )
    _draw_hosts(grid[0][0], report)
    _draw_clusters(grid[0][1], report)
    _draw_rates(grid[1][0], report)
    _draw_due(grid[1][1], report)
    save(figure, path)


def _empty(axes: Any, text: str) -> None:
    axes.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        wrap=True,
        fontsize=10,
        color="0.35",
        transform=axes.transAxes,
    )
    axes.set_xticks([])
    axes.set_yticks([])


def _counts(axes: Any, bars: Any, values: list[int]) -> None:
    axes.bar_label(bars, labels=[str(v) if v else "" for v in values], padding=2, fontsize=8)


def _draw_hosts(axes: Any, report: Report) -> None:
    axes.set_title("Pages kept and dropped as near-duplicates, per host", fontsize=11)
    if not report.hosts:
        _empty(axes, "no pages fingerprinted yet")
        return
    hosts = list(reversed(report.hosts))  # largest at the top
    names = [_cut(h[0], 34) for h in hosts]
    kept = [h[1] for h in hosts]
    dropped = [h[2] for h in hosts]
    height = 0.6
    left = axes.barh(names, kept, height, color="tab:green", label="kept (unique content)")
    right = axes.barh(
        names,
        dropped,
        height,
        left=kept,
        color="tab:orange",
        label="dropped (near-duplicate of a kept page)",
    )
    axes.bar_label(
        left,
        labels=[str(k) if k else "" for k in kept],
        label_type="center",
        color="white",
        fontsize=9,
    )
    axes.bar_label(
        right, labels=[str(d) if d else "" for d in dropped], label_type="center", fontsize=9
    )
    axes.set_xlabel("pages")
    axes.set_ylim(-0.5, len(names) - 0.5)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8, frameon=False)


def _draw_clusters(axes: Any, report: Report) -> None:
    shown = (
        f" ({len(report.clusters)} of {report.clusters_total})"
        if report.clusters_total > len(report.clusters)
        else ""
    )
    axes.set_title(f"Largest near-duplicate clusters{shown}", fontsize=11)
    if not report.clusters:
        _empty(axes, "no near-duplicates dropped")
        return
    single = len({netloc_shown(c.kept) for c in report.clusters}) == 1
    clusters = list(reversed(report.clusters))
    names = [_label(c.kept, single) + ("" if c.kept_stored else " (gone)") for c in clusters]
    sizes = [len(c.copies) for c in clusters]
    bars = axes.barh(names, sizes, 0.6, color="tab:orange")
    examples = [
        f"{_copies(len(c.copies))}, e.g. {_label(c.copies[0][0], single)}" for c in clusters
    ]
    axes.bar_label(bars, labels=examples, padding=3, fontsize=8)
    axes.set_xlabel(
        "copies dropped in favour of the URL kept (named on the left)"
        + (f"\nall on {netloc_shown(report.clusters[0].kept)}" if single else "")
    )
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_xlim(0, max(sizes) * 2.8)  # room for the examples


def _draw_rates(axes: Any, report: Report) -> None:
    estimated = sum(n for _, n in report.rates)
    axes.set_title("How often pages change (estimated from recrawls)", fontsize=11)
    if not report.recrawl_pages:
        _empty(axes, "no recrawl state in this namespace\n(SIMHASH_RECRAWL_ENABLED was off)")
        return
    names = [_two_lines(name) for name, _ in report.rates]
    values = [n for _, n in report.rates]
    bars = axes.bar(names, values, color="tab:blue")
    _counts(axes, bars, values)
    # Apart, in grey: pages whose rate is still the prior's, not an estimate.
    apart = axes.bar(
        [f"too little\nhistory (prior\n{report.prior_per_day:g}/day)"],
        [report.too_little_history],
        color="0.75",
        hatch="//",
        edgecolor="0.45",
    )
    _counts(axes, apart, [report.too_little_history])
    axes.set_ylabel("pages")
    axes.set_xlabel(
        f"the page's content changes ...\n{estimated} of the {report.recrawl_pages} pages "
        f"tracked have a rate from their own history; {report.too_little_history} were\n"
        "fetched too few times or too close together to tell ('schedule URL' shows both rates)",
        fontsize=9,
    )
    axes.tick_params(axis="x", labelsize=8)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.margins(y=0.15)


def _draw_due(axes: Any, report: Report) -> None:
    axes.set_title("When pages are due for a recrawl", fontsize=11)
    if not report.recrawl_pages:
        _empty(axes, "no recrawl state in this namespace\n(SIMHASH_RECRAWL_ENABLED was off)")
        return
    names = [_two_lines(name) if name != "next hour" else "next\nhour" for name, _ in report.due]
    values = [n for _, n in report.due]
    colours = ["tab:red" if name == "overdue" else "tab:purple" for name, _ in report.due]
    bars = axes.bar(names, values, color=colours)
    _counts(axes, bars, values)
    axes.set_ylabel("pages")
    axes.set_xlabel(f"next visit, counted from {when(report.at)}\n(overdue: due, not fetched yet)")
    axes.tick_params(axis="x", labelsize=8)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.margins(y=0.15)
