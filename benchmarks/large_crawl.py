"""A real crawl of ``shared/data/large``: every host on its own port, every URL in several
random orders, in one process and in three sharing Redis.

Run by hand from the repository root (needs ../shared/data/large, or SIMHASH_BENCH_DATA)::

    python3 benchmarks/large_crawl.py                          # seeds 1 2 3, modes 1 and 3
    python3 benchmarks/large_crawl.py --seeds 7 --modes 1 -s SIMHASH_TEMPLATES_ENABLED=False

Each host of ``large/site.json`` is served by a local HTTP server of its own (its own port, so
what is learned per host stays per host). A hub server holds one index page per crawl
process, linking to that process's share of every URL of every host in a seeded random order
(the URLs of one cluster dealt to different processes). The crawl processes run the test
suite's "links" spider with ``ADDONS = {"scrapy_simhash.Addon": 0}`` at the defaults: mode 1
with the embedded SQLite store, mode 3 sharing a redis-server started on a free loopback port.

A page counts as kept only when an item of it is exported (a page passed to the spider for its
links only counts as dropped). Printed per run: articles lost (clusters none of whose URLs was
kept), copies dropped (URLs beyond one per cluster not kept), the worst host for each, pages
dropped as a copy of another cluster's page, and pages kept without a fingerprint.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _pages import data_dir
from pairs_crawl import CRAWL_SETTINGS, deal, index_page

from scrapy_simhash.cli import parse_setting
from tests.http_site import SiteServer
from tests.redis_servers import REDIS_SERVER, RedisServer
from tests.scrapy_runner import CrawlResult, finish_crawl, start_crawl

#: (host, path) of one URL of the site.
Page = tuple[str, str]


def load() -> dict[str, Any] | None:
    meta = data_dir() / "large" / "site.json"
    return json.loads(meta.read_text("utf-8")) if meta.is_file() else None


#: Orders of each process's share: ``random``; ``host`` (host by host, a host's pages
#: together, in random order within it); ``copies-first`` (every copy before any article:
#: the site's articles all arrive as the second URL of their page).
ORDERS = ("random", "host", "copies-first")


def shares(
    site: dict[str, Any], processes: int, seed: int, order: str = "random"
) -> list[list[Page]]:
    """Shuffled, disjoint shares of every URL; a cluster's URLs go to different processes;
    each share then put in ``order`` (stable sorts keep the shuffle within)."""
    clusters: dict[str, list[Page]] = defaultdict(list)
    kinds: dict[Page, str] = {}
    for host, info in sorted(site["hosts"].items()):
        for path, page in sorted(info["pages"].items()):
            clusters[page["cluster"]].append((host, path))
            kinds[(host, path)] = page["kind"]
    dealt = deal(sorted(clusters.values()), processes, seed)
    for share in dealt:
        if order == "host":
            share.sort(key=lambda url: url[0])
        elif order == "copies-first":
            share.sort(key=lambda url: kinds[url] == "article")
    return dealt


def crawl(
    servers: dict[str, SiteServer], hub: SiteServer, parts: list[list[Page]],
    settings: dict[str, Any], workdir: Path, timeout: float,
) -> list[CrawlResult]:
    running = []
    for n, pages in enumerate(parts):
        index = f"/index-{len(parts)}-{n}.html"
        hub.pages[index] = (
            "text/html; charset=utf-8", index_page([servers[h].url(p) for h, p in pages])
        )
        spec = {"spider": "links", "start_urls": [hub.url(index)], "settings": settings}
        running.append(start_crawl(workdir / f"p{n}", spec))
    return [finish_crawl(*proc, timeout=timeout) for proc in running]


def summarise(
    site: dict[str, Any], servers: dict[str, SiteServer], results: list[CrawlResult]
) -> dict[str, Any]:
    host_of_port = {server.port: host for host, server in servers.items()}

    def page(url: str) -> Page | None:
        parts = urlsplit(url)
        host = host_of_port.get(parts.port or 0)
        if host is None:
            return None
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return host, path

    cluster = {
        (h, p): info["cluster"]
        for h, host in site["hosts"].items() for p, info in host["pages"].items()
    }
    kept: Counter[Page] = Counter()
    unchecked = 0
    for result in results:
        for item in result.items:
            found = page(item["url"])
            if found in cluster:
                kept[found] += 1
                meta = item.get("simhash") or {}
                unchecked += meta.get("fingerprint") is None
    cross = 0
    for result in results:
        for line in result.signals["near_duplicate"]:
            url, _, of = line.partition(" ")
            a, b = page(url), page(of)
            cross += a in cluster and b in cluster and cluster[a] != cluster[b]
    kept_per_cluster: Counter[tuple[str, str]] = Counter()
    for pg, n in kept.items():
        kept_per_cluster[(pg[0], cluster[pg])] += n
    clusters_of_host: dict[str, set[str]] = defaultdict(set)
    urls_of_host: Counter[str] = Counter()
    for (host, _), c in cluster.items():
        clusters_of_host[host].add(c)
        urls_of_host[host] += 1
    lost = sorted((h, c) for h, cs in clusters_of_host.items() for c in cs
                  if not kept_per_cluster[(h, c)])
    copies = {h: urls_of_host[h] - len(cs) for h, cs in clusters_of_host.items()}
    extra: Counter[str] = Counter()
    for (h, _), n in kept_per_cluster.items():
        extra[h] += max(0, n - 1)
    lost_share = {h: sum(1 for x, _ in lost if x == h) / len(cs)
                  for h, cs in clusters_of_host.items()}
    copy_share = {h: 1 - extra[h] / copies[h] for h in copies if copies[h]}
    return {
        "articles": len(set(cluster.values())),
        "lost": lost,
        "copies_dropped": 1 - sum(extra.values()) / sum(copies.values()),
        "worst_lost": max((v, h) for h, v in lost_share.items()),
        "worst_copies": min((v, h) for h, v in copy_share.items()),
        "cross_cluster_drops": cross,
        "kept_unchecked": unchecked,
        "errors": [e for r in results for e in r.errors],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-s", "--set", dest="settings", action="append", default=[],
                        type=parse_setting, metavar="NAME=VALUE")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--modes", default="1,3")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--order", choices=ORDERS, default="random",
                        help="each process's order of its URLs (see ORDERS)")
    args = parser.parse_args()
    site = load()
    if site is None:
        print(f"skipped: no {data_dir() / 'large' / 'site.json'} (set SIMHASH_BENCH_DATA)")
        return 0
    root = data_dir()
    servers: dict[str, SiteServer] = {}
    for host, info in sorted(site["hosts"].items()):
        server = servers[host] = SiteServer().start()
        for path, page in info["pages"].items():
            server.pages[path] = ("text/html", gzip.decompress((root / page["file"]).read_bytes()))
    hub = SiteServer().start()
    overrides = dict(args.settings)
    modes = [int(m) for m in args.modes.split(",") if m.strip()]
    print(f"# crawl of large/: {sum(len(h['pages']) for h in site['hosts'].values())} URLs on "
          f"{len(servers)} hosts, order {args.order}, overrides {overrides or 'none'}")
    print("mode  seed  articles lost  copies dropped  worst host lost  worst host copies  "
          "dropped as another's copy  kept unchecked  secs")
    try:
        for processes in modes:
            for seed in args.seeds:
                settings = {**CRAWL_SETTINGS, **overrides}
                started = time.perf_counter()
                with tempfile.TemporaryDirectory(prefix="large-crawl-") as tmp:
                    redis_server = None
                    if processes > 1:
                        if REDIS_SERVER is None:
                            print(f"{processes}: skipped, no redis-server on PATH")
                            continue
                        redis_server = RedisServer(Path(tmp) / "redis").start()
                        settings["SIMHASH_INDEX_URL"] = redis_server.url
                    try:
                        results = crawl(servers, hub, shares(site, processes, seed, args.order),
                                        settings,
                                        Path(tmp), args.timeout)
                    finally:
                        if redis_server is not None:
                            redis_server.stop()
                s = summarise(site, servers, results)
                secs = time.perf_counter() - started
                print(f"{processes:<5} {seed:<5} {len(s['lost'])}/{s['articles']:<10} "
                      f"{s['copies_dropped']:<15.4f} {s['worst_lost'][0]:.3f} "
                      f"{s['worst_lost'][1]:<10} {s['worst_copies'][0]:.3f} "
                      f"{s['worst_copies'][1]:<12} {s['cross_cluster_drops']:<26} "
                      f"{s['kept_unchecked']:<15} {secs:.0f}")
                if s["lost"]:
                    print("      lost:", ", ".join("/".join(c) for c in s["lost"]))
                if s["errors"]:
                    print("      errors:", s["errors"][:3])
    finally:
        for server in [*servers.values(), hub]:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
