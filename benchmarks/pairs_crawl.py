"""Crawl of the pair benchmark's site: is exactly one page of each cluster kept, and no
distinct page dropped?

Run by hand from the repository root (needs ../shared/data/pairs, or SIMHASH_BENCH_DATA)::

    python3 benchmarks/pairs_crawl.py                       # 1 process, then 3 sharing Redis
    python3 benchmarks/pairs_crawl.py --modes 1 --verbose   # and list the worst clusters
    python3 benchmarks/pairs_crawl.py -s SIMHASH_MAX_DISTANCE=5 --json crawl.json

Every URL of ``pairs/site/site_meta.json`` is served from a local HTTP server (the gunzipped
case file, ``Content-Type: text/html`` with no charset, as the pairs README asks) and crawled
by a spider that follows the links of an index page, with ``ADDONS = {"scrapy_simhash.Addon":
0}`` at its defaults. Mode 1: one crawl process with the embedded SQLite index. Mode 3: three
crawl processes started together, each given an index page linking to its own shuffled share
of the URLs (the members of a cluster are dealt to different processes), sharing one Redis
index (a redis-server started on a free loopback port, or ``--redis-url``). Clusters that
``same_text_clusters.json`` groups count as one. A cluster is right when exactly one of its
pages reaches the spider; a hard negative (a distinct page sharing a template, topic or
history with another cluster) must never be dropped, and no page may be dropped as a copy of
another cluster's page.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from w3lib.url import canonicalize_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _pages import data_dir

from scrapy_simhash.cli import parse_setting
from scrapy_simhash.settings import fingerprint_config
from tests.http_site import SiteServer
from tests.redis_servers import REDIS_SERVER, RedisServer
from tests.scrapy_runner import CrawlResult, finish_crawl, start_crawl

T = TypeVar("T")
WORST = 10
#: Settings for a crawl of a local site: no robots.txt, no throttling, no delay.
CRAWL_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_simhash.Addon": 0},
    "ROBOTSTXT_OBEY": False,
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "LOG_LEVEL": "INFO",
}


@dataclass(frozen=True)
class Site:
    """The site's URLs and the truth about them, with same-text clusters merged."""

    root: Path
    url_to_file: dict[str, str]
    cluster_of: dict[str, str]
    hard_negative: frozenset[str]

    def members(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for path, cluster in self.cluster_of.items():
            out[cluster].append(path)
        return out

    def body(self, path: str) -> bytes:
        return gzip.decompress((self.root / self.url_to_file[path]).read_bytes())


def load_site() -> Site | None:
    root = data_dir() / "pairs"
    site_dir = root / "site"
    if not (site_dir / "site_meta.json").is_file():
        return None
    meta = json.loads((site_dir / "site_meta.json").read_text(encoding="utf-8"))
    clusters: dict[str, str] = json.loads((site_dir / "clusters.json").read_text("utf-8"))
    groups = json.loads((site_dir / "same_text_clusters.json").read_text("utf-8"))
    merged = {c: "+".join(sorted(group)) for group in groups for c in group}
    hard = {merged.get(c, c) for c, info in meta["clusters"].items() if info.get("hard_negative")}
    return Site(
        root=root,
        url_to_file=meta["url_to_file"],
        cluster_of={path: merged.get(c, c) for path, c in clusters.items()},
        hard_negative=frozenset(hard),
    )


def index_page(paths: list[str]) -> bytes:
    links = "\n".join(f'<li><a href="{html.escape(p)}">{html.escape(p)}</a></li>' for p in paths)
    return (
        f"<html><head><title>Index</title></head><body><ul>\n{links}\n</ul></body></html>".encode()
    )


def shares(site: Site, processes: int, seed: int) -> list[list[str]]:
    """Shuffled, disjoint shares of the URLs; a cluster's members go to different processes."""
    return deal([paths for _, paths in sorted(site.members().items())], processes, seed)


def deal(clusters: list[list[T]], processes: int, seed: int) -> list[list[T]]:
    """Shuffled, disjoint shares of the clusters' members, a cluster's members dealt to
    different processes (in a seeded order: the same seed, the same shares)."""
    rng = random.Random(seed)
    out: list[list[T]] = [[] for _ in range(processes)]
    groups = list(clusters)
    rng.shuffle(groups)
    for members in groups:
        members = sorted(members)  # type: ignore[type-var]
        rng.shuffle(members)
        start = rng.randrange(processes)
        for i, member in enumerate(members):
            out[(start + i) % processes].append(member)
    for share in out:
        rng.shuffle(share)
    return out


def crawl(
    server: SiteServer,
    parts: list[list[str]],
    settings: dict[str, Any],
    workdir: Path,
    timeout: float,
) -> list[CrawlResult]:
    """One crawl process per share, all started before any is awaited."""
    running = []
    for n, paths in enumerate(parts):
        index = f"/crawl-index/{len(parts)}-{n}.html"
        server.pages[index] = ("text/html; charset=utf-8", index_page(paths))
        spec = {"spider": "links", "start_urls": [server.url(index)], "settings": settings}
        running.append(start_crawl(workdir / f"p{n}", spec))
    return [finish_crawl(*proc, timeout=timeout) for proc in running]


@dataclass
class Outcome:
    """What the crawl processes did with each URL, as URL paths of the site."""

    kept: list[str]
    dropped: dict[str, str]  # page -> the page it was dropped as a copy of
    errors: list[str]
    # page -> the kept page URL rules named it a copy of (not fetched; SIMHASH_DUST_ENABLED)
    skipped: dict[str, str]


def outcome(site: Site, server: SiteServer, results: list[CrawlResult]) -> Outcome:
    base = server.url("/")
    keys = {server.url(p): p for p in site.url_to_file}
    keys.update({canonicalize_url(url): p for url, p in keys.items()})

    def path(url: str) -> str:
        return keys.get(url) or keys.get(canonicalize_url(url)) or "/" + url.removeprefix(base)

    kept = [path(item["url"]) for r in results for item in r.items]
    dropped = {}
    for r in results:
        for line in r.signals["near_duplicate"]:
            url, _, of = line.partition(" ")
            dropped[path(url)] = path(of)
    errors = [e for r in results for e in r.errors]
    skipped = {}
    for r in results:
        for line in r.signals.get("known_copy", []):
            url, _, of = line.partition(" ")
            skipped[path(url)] = path(of)
    # A request skipped under a rule later found wrong is fetched after all.
    fetched = set(kept) | set(dropped)
    skipped = {p: of for p, of in skipped.items() if p not in fetched}
    return Outcome(kept, dropped, errors, skipped)


def page_info(site: Site, path: str) -> dict[str, str]:
    return {
        "url": path,
        "cluster": site.cluster_of.get(path, "?"),
        "file": site.url_to_file.get(path, "?"),
    }


def rule_shaped_copies(site: Site, min_support: int = 3) -> int:
    """Copies URL rules could name: pages related to another of their cluster by rules that
    at least ``min_support`` pairs of the site share (at most all but one page per
    cluster) - the most skipping could save."""
    from scrapy_simhash.dust import learn

    pairs: dict[tuple[str, str], list[str]] = {}
    for paths in site.members().values():
        for a in paths:
            for b in paths:
                if a != b:
                    pairs[(a, b)] = learn("http://h" + a, "http://h" + b)
    support = Counter(rule for rules in pairs.values() for rule in set(rules))
    total = 0
    for paths in site.members().values():
        related = {
            a
            for (a, b), rules in pairs.items()
            if a in paths and rules and all(support[r] >= 2 * min_support for r in rules)
        }
        total += max(0, len(related) - 1)
    return total


def index_would_drop(site: Site, pairs: dict[str, str], settings: dict[str, Any]) -> list[str]:
    """The pages of ``pairs`` (page -> kept page) within SIMHASH_MAX_DISTANCE of theirs: the
    index drops them as copies when they are fetched, so skipping them loses nothing more."""
    from scrapy.settings import Settings

    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.settings import max_distance

    crawl = Settings({**CRAWL_SETTINGS, **settings})
    fingerprinter = Fingerprinter(fingerprint_config(crawl))
    limit = max_distance(crawl)

    def fp(path: str) -> int | None:
        return fingerprinter.fingerprint_page(site.body(path), content_type="text/html").fingerprint

    out = []
    for page, of in pairs.items():
        a, b = fp(page), fp(of)
        if a is not None and b is not None and (a ^ b).bit_count() <= limit:
            out.append(page)
    return out


def summarise(site: Site, out: Outcome, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    members = site.members()
    kept = Counter(site.cluster_of[p] for p in out.kept if p in site.cluster_of)
    unknown = [p for p in out.kept if p not in site.cluster_of]
    exact = [c for c in members if kept[c] == 1]
    none = [c for c in members if kept[c] == 0]
    more = [c for c in members if kept[c] > 1]
    hard_dropped = [c for c in none if c in site.hard_negative]
    cross = {
        page: of
        for page, of in out.dropped.items()
        if site.cluster_of.get(page) != site.cluster_of.get(of)
    }
    cross_other = {p: of for p, of in cross.items() if site.cluster_of[p] not in site.hard_negative}
    seen = set(out.kept) | set(out.dropped) | set(out.skipped)
    lost = sorted(p for p in site.cluster_of if p not in seen)
    wrong_skips = {
        p: of for p, of in out.skipped.items() if site.cluster_of.get(p) != site.cluster_of.get(of)
    }
    copies = len(site.cluster_of) - len(members)

    def cluster_entry(cluster: str) -> dict[str, Any]:
        pages = []
        for p in sorted(members[cluster]):
            entry = page_info(site, p)
            if p in out.kept:
                entry["kept"] = "yes"
            elif p in out.dropped:
                entry["dropped_as_copy_of"] = out.dropped[p]
                entry["of_cluster"] = site.cluster_of.get(out.dropped[p], "?")
            else:
                entry["kept"] = "neither kept nor dropped as a copy"
            pages.append(entry)
        return {
            "cluster": cluster,
            "kept": kept[cluster],
            "size": len(members[cluster]),
            "hard_negative": cluster in site.hard_negative,
            "pages": pages,
        }

    total = len(members)
    return {
        "clusters": total,
        "exactly_one": len(exact),
        "exactly_one_pct": 100.0 * len(exact) / total,
        "none_kept": len(none),
        "more_than_one": len(more),
        "extra_pages_kept": sum(kept[c] - 1 for c in more),
        "hard_negatives": len(site.hard_negative),
        "hard_negatives_dropped": len(hard_dropped),
        "cross_cluster_drops": len(cross_other),
        "cross_cluster_drop_clusters": len({site.cluster_of[p] for p in cross_other}),
        "none_kept_not_hard_negative": len(none) - len(hard_dropped),
        "pages_kept": len(out.kept),
        "pages_dropped": len(out.dropped),
        "pages_lost_otherwise": len(lost),
        "copies": copies,
        "copy_fetches": len(out.dropped) + max(0, len(out.kept) - len(members)),
        "pages_skipped": len(out.skipped),
        "copy_fetches_avoided_pct": 100.0 * (len(out.skipped) - len(wrong_skips)) / copies,
        "distinct_pages_skipped": len(wrong_skips),
        "distinct_pages_skipped_index_drops_too": len(
            index_would_drop(site, wrong_skips, settings or {})
        ),
        "rule_shaped_copies": rule_shaped_copies(site),
        "unknown_urls_kept": unknown,
        "errors": out.errors,
        # Everything, for comparing runs (JSON only).
        "kept_per_cluster": {c: kept[c] for c in sorted(members)},
        "kept_pages": sorted(out.kept),
        "dropped_pages": dict(sorted(out.dropped.items())),
        "skipped_pages": dict(sorted(out.skipped.items())),
        "worst": {
            "hard_negatives_dropped": [cluster_entry(c) for c in sorted(hard_dropped)[:WORST]],
            "none_kept": [
                cluster_entry(c)
                for c in sorted(none, key=lambda c: (-len(members[c]), c))
                if c not in site.hard_negative
            ][:WORST],
            "more_than_one": [
                cluster_entry(c) for c in sorted(more, key=lambda c: (-kept[c], c))[:WORST]
            ],
            "cross_cluster_drops": [
                {
                    **page_info(site, p),
                    "dropped_as_copy_of": of,
                    "of_cluster": site.cluster_of.get(of, "?"),
                }
                for p, of in sorted(cross_other.items())[:WORST]
            ],
            "lost_otherwise": [page_info(site, p) for p in lost[:WORST]],
            "distinct_pages_skipped": [
                {
                    **page_info(site, p),
                    "skipped_as_copy_of": of,
                    "of_cluster": site.cluster_of.get(of, "?"),
                }
                for p, of in sorted(wrong_skips.items())[:WORST]
            ],
        },
    }


def print_summary(mode: str, s: dict[str, Any], verbose: bool) -> None:
    print(f"\n## {mode}")
    print(f"clusters                              {s['clusters']}")
    print(f"exactly one page kept                 {s['exactly_one']} ({s['exactly_one_pct']:.1f}%)")
    print(
        f"none kept                             {s['none_kept']} "
        f"({s['none_kept_not_hard_negative']} not hard negatives)"
    )
    print(
        f"more than one kept                    {s['more_than_one']} "
        f"({s['extra_pages_kept']} extra pages)"
    )
    print(
        f"hard negatives dropped                {s['hard_negatives_dropped']} "
        f"of {s['hard_negatives']}"
    )
    print(
        f"other pages dropped as another's copy {s['cross_cluster_drops']} "
        f"(in {s['cross_cluster_drop_clusters']} clusters)"
    )
    print(
        f"pages kept / dropped / neither        {s['pages_kept']} / {s['pages_dropped']} / "
        f"{s['pages_lost_otherwise']}"
    )
    if s["pages_skipped"] or s["distinct_pages_skipped"]:
        print(
            f"copies skipped before download        {s['pages_skipped']} of {s['copies']} "
            f"({s['copy_fetches_avoided_pct']:.1f}% of copy fetches avoided; "
            f"{s['rule_shaped_copies']} copies differ from a page of theirs by URL rules)"
        )
        print(
            f"distinct pages skipped                {s['distinct_pages_skipped']} "
            f"({s['distinct_pages_skipped_index_drops_too']} of them within "
            "SIMHASH_MAX_DISTANCE of the page they were skipped for: dropped when fetched)"
        )
        print(f"URL rule stats                        {s.get('dust_stats')}")
    if s["errors"] or s["unknown_urls_kept"]:
        print(f"crawl errors: {s['errors']}; unknown URLs kept: {s['unknown_urls_kept'][:5]}")
    if not verbose:
        return
    for category, entries in s["worst"].items():
        if not entries:
            continue
        print(f"\n### {category.replace('_', ' ')} (up to {WORST})")
        for entry in entries:
            if "pages" not in entry:
                print(f"  {entry['cluster']}: {_page_line(entry)}")
                continue
            hard = ", hard negative" if entry["hard_negative"] else ""
            print(f"  {entry['cluster']}: {entry['kept']} of {entry['size']} kept{hard}")
            for page in entry["pages"]:
                print(f"    {_page_line(page)}")


def _page_line(page: dict[str, str]) -> str:
    line = f"{page['url']}  [{page['file']}]"
    if "dropped_as_copy_of" in page:
        line += f"  dropped as copy of {page['dropped_as_copy_of']} ({page['of_cluster']})"
    elif page.get("kept") == "yes":
        line += "  kept"
    return line


def _drop_namespace(url: str, namespace: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"simhash:*{{{namespace}}}*"):
            client.delete(key)
    finally:
        client.close()


def run_mode(
    processes: int,
    site: Site,
    server: SiteServer,
    args: argparse.Namespace,
    overrides: dict[str, str],
) -> dict[str, Any] | None:
    settings = {**CRAWL_SETTINGS, **overrides}
    parts = shares(site, processes, args.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pairs-crawl-") as tmp:
        workdir = Path(tmp)
        redis_server = None
        namespace = None
        if processes > 1:
            url = args.redis_url
            if url is None:
                if REDIS_SERVER is None:
                    print(
                        f"\n## {processes} processes\nskipped: no redis-server on PATH "
                        "(install it or pass --redis-url)"
                    )
                    return None
                redis_server = RedisServer(workdir / "redis").start()
                url = redis_server.url
            else:
                # A namespace of its own in a server that may hold other data.
                namespace = f"pairs-crawl-{time.time_ns()}"
                settings.setdefault("SIMHASH_NAMESPACE", namespace)
            settings["SIMHASH_INDEX_URL"] = url
        try:
            results = crawl(server, parts, settings, workdir, args.timeout)
        finally:
            if redis_server is not None:
                redis_server.stop()
            elif namespace is not None and settings["SIMHASH_NAMESPACE"] == namespace:
                _drop_namespace(settings["SIMHASH_INDEX_URL"], namespace)
    summary = summarise(site, outcome(site, server, results), overrides)
    summary["wall_secs"] = round(time.perf_counter() - started, 1)
    dust: Counter[str] = Counter()
    for result in results:
        dust.update(
            {
                k: v
                for k, v in result.simhash_stats().items()
                if k.startswith("simhash/dust/") and isinstance(v, int)
            }
        )
    summary["dust_stats"] = dict(sorted(dust.items()))
    summary["dust_log"] = [
        line.split("] ", 1)[-1]
        for r in results
        for line in r.log.splitlines()
        if "URL rule" in line and "trusted" in line
    ]
    summary["shares"] = [len(p) for p in parts]
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "-s",
        "--set",
        dest="settings",
        action="append",
        default=[],
        type=parse_setting,
        metavar="NAME=VALUE",
        help="a setting for the crawls, as with scrapy crawl -s",
    )
    parser.add_argument(
        "--modes", default="1,3", help="comma-separated numbers of crawl processes (default 1,3)"
    )
    parser.add_argument(
        "--seed", type=int, default=20260101, help="seed of the shuffles of the index pages"
    )
    parser.add_argument(
        "--redis-url", help="Redis for multi-process modes (default: a redis-server of its own)"
    )
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds to wait for a crawl (default 1800)"
    )
    parser.add_argument(
        "--dust",
        action="store_true",
        help="learn URL rules from the copies found and skip fetching known "
        "copies (SIMHASH_DUST_ENABLED=True)",
    )
    parser.add_argument("--verbose", action="store_true", help="list the worst clusters")
    parser.add_argument("--json", metavar="PATH", help="write figures and worst clusters as JSON")
    args = parser.parse_args()
    site = load_site()
    if site is None:
        print(
            f"skipped: no pair benchmark site at {data_dir() / 'pairs' / 'site'} (set "
            "SIMHASH_BENCH_DATA to the folder holding pairs/site/site_meta.json)"
        )
        return 0
    modes = [int(m) for m in args.modes.split(",") if m.strip()]
    overrides = dict(args.settings)
    if args.dust:
        overrides.setdefault("SIMHASH_DUST_ENABLED", "True")
    print(
        f"# crawl of the pair benchmark's site: {len(site.url_to_file)} URLs, "
        f"{len(site.members())} clusters (same-text groups merged), seed {args.seed}, "
        f"overrides {overrides or 'none'}"
    )
    server = SiteServer().start()
    for path in site.url_to_file:
        server.pages[path] = ("text/html", site.body(path))
    report: dict[str, Any] = {"seed": args.seed, "overrides": overrides, "modes": {}}
    try:
        for processes in modes:
            summary = run_mode(processes, site, server, args, overrides)
            if summary is None:
                continue
            name = f"{processes} process" + ("es" if processes > 1 else "")
            report["modes"][name] = summary
            print_summary(name, summary, args.verbose)
    finally:
        server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
