"""A real crawl of ``shared/data/large``: every host on its own port, every URL in several
random orders, in one process and in three sharing Redis.

Run by hand from the repository root (needs ../shared/data/large, or SIMHASH_BENCH_DATA)::

    python3 benchmarks/large_crawl.py                          # seeds 1 2 3, modes 1 and 3
    python3 benchmarks/large_crawl.py --seeds 7 --modes 1 -s SIMHASH_TEMPLATES_ENABLED=False
    python3 benchmarks/large_crawl.py --seeds 1 --order first-3 first-25 host template-last

Each host of ``large/site.json`` is served by a local HTTP server of its own (its own port, so
what is learned per host stays per host). A hub server holds one index page per crawl
process, linking to that process's share of every URL of every host in a seeded random order
(the URLs of one cluster dealt to different processes). The crawl processes run the test
suite's "links" spider with ``ADDONS = {"scrapy_simhash.Addon": 0}`` at the defaults: mode 1
with the embedded SQLite store, mode 3 sharing a redis-server started on a free loopback port.
Each process fetches its links in the order its index lists them (a FIFO scheduler queue;
Scrapy's default LIFO queue would reverse them), 16 requests in flight.

Orders (``--order``, several may be given; see ORDERS): ``random``; ``host`` (host by host);
``copies-first``; ``first-N`` (N other pages of every host before any of its articles);
``template-last`` (hosts paired, two templates on one host, all pages of one template after
every page of the other: a redesign mid-crawl). ``large/`` holds articles and their copies
only, no listing or section page of the hosts, so the "other pages" of ``first-N`` are real
pages of the dev corpus (``pages/``: its listings and collections first, then services,
forums, products, documentation and untyped pages, then other sites' articles; none whose
text is on a page of ``large/`` or whose fingerprint is near one of its articles'), each
served under one host only, at ``/o/NNN.html``.

A page counts as kept only when an item of it is exported (a page passed to the spider for its
links only counts as dropped). Printed per run: articles lost (clusters none of whose URLs was
kept), copies dropped (URLs beyond one per cluster not kept), the worst host for each, pages
dropped as a copy of another cluster's page or of an other page, other pages dropped, pages
kept without a fingerprint, and how far the order the processes judged pages in drifted from
their index (drift: the largest shift of one page, in positions among the pages judged). Every article lost is listed with
what it was dropped as and the first words of both pages' main texts.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
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

from _pages import data_dir, load_pages
from pairs_crawl import CRAWL_SETTINGS, deal, index_page

from scrapy_simhash.cli import parse_setting
from scrapy_simhash.fingerprint import Fingerprinter
from tests.http_site import SiteServer
from tests.redis_servers import REDIS_SERVER, RedisServer
from tests.scrapy_runner import CrawlResult, finish_crawl, start_crawl

#: (host, path) of one URL of the site (an other page: its ``/o/NNN.html`` path).
Page = tuple[str, str]


def load() -> dict[str, Any] | None:
    meta = data_dir() / "large" / "site.json"
    return json.loads(meta.read_text("utf-8")) if meta.is_file() else None


#: Orders of each process's share: ``random``; ``host`` (host by host, a host's pages
#: together, in random order within it); ``copies-first`` (every copy before any article:
#: the site's articles all arrive as the second URL of their page); ``first-N`` (N other
#: pages of every host, dealt to the processes, lead each share; then the site's URLs in
#: random order); ``template-last`` (hosts paired, the second of a pair served on the
#: first's port under ``/t/<host>``; in each share every page of one template of the pair,
#: chosen by the seed, after every page of the other).
ORDERS = ("random", "host", "copies-first", "first-3", "first-25", "template-last")
FIRST = re.compile(r"first-(\d+)$")

#: Dev corpus page types taken as a host's other pages, in order of preference (articles of
#: other sites only when the rest run out: "pages an outsider published").
OTHER_TYPES = (
    "listing",
    "collection",
    "service",
    "forum",
    "product",
    "documentation",
    None,
    "article",
)


def order_name(value: str) -> str:
    if value in ORDERS or FIRST.match(value):
        return value
    raise argparse.ArgumentTypeError(f"{value!r}: one of {', '.join(ORDERS)} or first-N")


def first_count(order: str) -> int:
    found = FIRST.match(order)
    return int(found.group(1)) if found else 0


def other_pages(
    site: dict[str, Any], root: Path, per_host: int, seed: int, fingerprinter: Fingerprinter
) -> dict[str, list[tuple[str, bytes]]]:
    """``per_host`` dev corpus pages (id, body) for every host, none shared by two hosts,
    none whose text is found on a page of ``large/`` (whose articles are dev pages' main
    blocks, not always what the extractor reads there) or whose fingerprint is within 12
    bits of one of its articles'."""
    if not per_host:
        return {}
    articles = [
        fingerprinter.fingerprint_page(gzip.decompress((root / page["file"]).read_bytes()))
        for info in site["hosts"].values()
        for page in info["pages"].values()
        if page["kind"] == "article"
    ]
    prints = [a.fingerprint for a in articles if a.fingerprint is not None]
    texts = "\x00".join(" ".join(a.page_text.split()) for a in articles)
    rng = random.Random(seed)
    groups: dict[str | None, list[Any]] = defaultdict(list)
    for page in load_pages():
        if page.page_type in OTHER_TYPES:
            groups[page.page_type].append(page)
    hosts = sorted(site["hosts"])
    need = per_host * len(hosts)
    pool: list[tuple[str, bytes]] = []
    for kind in OTHER_TYPES:
        candidates = sorted(groups[kind], key=lambda p: p.id)
        rng.shuffle(candidates)
        for page in candidates:
            if len(pool) == need:
                break
            body = page.body()
            fp = fingerprinter.fingerprint_page(body)
            windows = [
                text[i : i + 40]
                for text in (" ".join(t.split()) for t in (fp.text, fp.page_text))
                for i in (len(text) // 4, len(text) // 2, 3 * len(text) // 4)
                if len(text) >= 80
            ]
            if any(w in texts for w in windows):
                continue
            if fp.fingerprint is not None and any(
                (fp.fingerprint ^ other).bit_count() <= 12 for other in prints
            ):
                continue
            pool.append((page.id, body))
    if len(pool) < need:
        sys.exit(f"only {len(pool)} dev pages fit as other pages, {need} needed")
    return {host: pool[i :: len(hosts)] for i, host in enumerate(hosts)}


class Layout:
    """Every host's server, what it serves, and which page a URL is."""

    def __init__(
        self, site: dict[str, Any], root: Path, others: dict[str, list[tuple[str, bytes]]]
    ) -> None:
        self.body: dict[Page, bytes] = {}
        self.other_id: dict[Page, str] = {}
        self.servers: dict[str, SiteServer] = {}
        hosts = sorted(site["hosts"])
        #: template-last: the host of a pair served on the other's port.
        self.pairs = [(hosts[i], hosts[i + 1]) for i in range(0, len(hosts) - 1, 2)]
        self.served_on = {b: a for a, b in self.pairs}
        self._page: dict[tuple[int, str], Page] = {}
        for host in hosts:
            self.servers[host] = SiteServer().start()
        for host in hosts:
            for path, page in site["hosts"][host]["pages"].items():
                self._serve((host, path), gzip.decompress((root / page["file"]).read_bytes()))
            for n, (page_id, body) in enumerate(others.get(host, [])):
                self._serve((host, f"/o/{n:03d}.html"), body)
                self.other_id[(host, f"/o/{n:03d}.html")] = page_id

    def _serve(self, page: Page, body: bytes) -> None:
        host, path = page
        self.body[page] = body
        places = [(host, path)]
        if host in self.served_on:
            places.append((self.served_on[host], f"/t/{host}{path}"))
        for on, at in places:
            server = self.servers[on]
            server.pages[at] = ("text/html", body)
            self._page[(server.port, at)] = page

    def url(self, page: Page, order: str) -> str:
        host, path = page
        if order == "template-last" and host in self.served_on:
            return self.servers[self.served_on[host]].url(f"/t/{host}{path}")
        return self.servers[host].url(path)

    def page(self, url: str) -> Page | None:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return self._page.get((parts.port or 0, path))

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()


def shares(
    site: dict[str, Any],
    processes: int,
    seed: int,
    order: str = "random",
    others: dict[str, list[Page]] | None = None,
    pairs: list[tuple[str, str]] | None = None,
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
    if first_count(order):
        n = first_count(order)
        lead = deal(
            [[page] for host in sorted(others or {}) for page in (others or {})[host][:n]],
            processes,
            seed + 1,
        )
        dealt = [first + share for first, share in zip(lead, dealt, strict=True)]
    elif order == "template-last":
        rng = random.Random(seed)
        last = {pair[rng.randrange(2)] for pair in pairs or []}
        for share in dealt:
            share.sort(key=lambda url: url[0] in last)
    return dealt


def crawl(
    layout: Layout,
    hub: SiteServer,
    parts: list[list[Page]],
    order: str,
    settings: dict[str, Any],
    workdir: Path,
    timeout: float,
) -> list[CrawlResult]:
    running = []
    for n, pages in enumerate(parts):
        index = f"/index-{len(parts)}-{n}.html"
        hub.pages[index] = (
            "text/html; charset=utf-8",
            index_page([layout.url(p, order) for p in pages]),
        )
        spec = {"spider": "links", "start_urls": [hub.url(index)], "settings": settings}
        running.append(start_crawl(workdir / f"p{n}", spec))
    return [finish_crawl(*proc, timeout=timeout) for proc in running]


def first_words(text: str, chars: int = 70) -> str:
    flat = " ".join(text.split())
    return repr(flat[:chars] + ("..." if len(flat) > chars else ""))


def summarise(
    site: dict[str, Any],
    layout: Layout,
    parts: list[list[Page]],
    results: list[CrawlResult],
    fingerprinter: Fingerprinter,
) -> dict[str, Any]:
    cluster = {
        (h, p): info["cluster"]
        for h, host in site["hosts"].items()
        for p, info in host["pages"].items()
    }
    kept: Counter[Page] = Counter()
    others_kept: set[Page] = set()
    unchecked = 0
    for result in results:
        for item in result.items:
            found = layout.page(item["url"])
            if found in cluster:
                kept[found] += 1
                meta = item.get("simhash") or {}
                unchecked += meta.get("fingerprint") is None
            elif found is not None:
                others_kept.add(found)
    cross = of_other = 0
    dropped_as: dict[Page, Page | str] = {}
    for result in results:
        for line in result.signals["near_duplicate"]:
            url, _, of = line.partition(" ")
            a, b = layout.page(url), layout.page(of)
            if a in cluster:
                dropped_as[a] = b if b is not None else of
                cross += b in cluster and cluster[a] != cluster[b]
                of_other += b is not None and b not in cluster
    drift = 0
    for share, result in zip(parts, results, strict=True):
        planned = {page: i for i, page in enumerate(share)}
        seen = [p for p in map(layout.page, result.signals["page_observed"]) if p in planned]
        rank = {p: i for i, p in enumerate(sorted(seen, key=planned.__getitem__))}
        drift = max([drift, *(abs(i - rank[p]) for i, p in enumerate(seen))])
    others_served = {p for share in parts for p in share if p not in cluster}
    kept_per_cluster: Counter[tuple[str, str]] = Counter()
    for pg, n in kept.items():
        kept_per_cluster[(pg[0], cluster[pg])] += n
    clusters_of_host: dict[str, set[str]] = defaultdict(set)
    urls_of_host: Counter[str] = Counter()
    for (host, _), c in cluster.items():
        clusters_of_host[host].add(c)
        urls_of_host[host] += 1
    lost = sorted(
        (h, c) for h, cs in clusters_of_host.items() for c in cs if not kept_per_cluster[(h, c)]
    )
    copies = {h: urls_of_host[h] - len(cs) for h, cs in clusters_of_host.items()}
    extra: Counter[str] = Counter()
    for (h, _), n in kept_per_cluster.items():
        extra[h] += max(0, n - 1)
    lost_share = {
        h: sum(1 for x, _ in lost if x == h) / len(cs) for h, cs in clusters_of_host.items()
    }
    copy_share = {h: 1 - extra[h] / copies[h] for h in copies if copies[h]}
    details = []
    for host, c in lost:
        for page in sorted(p for p, cl in cluster.items() if p[0] == host and cl == c):
            of = dropped_as.get(page)
            mine = fingerprinter.fingerprint_page(layout.body[page]).text
            if isinstance(of, tuple):
                name = (
                    f"other page {'/'.join(of)} ({layout.other_id[of]})"
                    if of in layout.other_id
                    else f"{'/'.join(of)} ({cluster[of]})"
                )
                theirs = first_words(fingerprinter.fingerprint_page(layout.body[of]).text)
                details.append(
                    f"{'/'.join(page)}: near-duplicate of {name}; "
                    f"own {first_words(mine)}; of {theirs}"
                )
            else:
                how = f"near-duplicate of {of}" if of else "no item, no near_duplicate signal"
                details.append(f"{'/'.join(page)}: {how}; own {first_words(mine)}")
    return {
        "articles": len(set(cluster.values())),
        "lost": lost,
        "details": details,
        "copies_dropped": 1 - sum(extra.values()) / sum(copies.values()),
        "worst_lost": max((v, h) for h, v in lost_share.items()),
        "worst_copies": min((v, h) for h, v in copy_share.items()),
        "cross_cluster_drops": cross,
        "of_other": of_other,
        "others": (len(others_served - others_kept), len(others_served)),
        "kept_unchecked": unchecked,
        "drift": drift,
        "errors": [e for r in results for e in r.errors],
    }


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
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--modes", default="1,3")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument(
        "--order",
        type=order_name,
        nargs="+",
        default=["random"],
        help=f"each process's order of its URLs: {', '.join(ORDERS)} or first-N (see ORDERS)",
    )
    args = parser.parse_args()
    site = load()
    if site is None:
        print(f"skipped: no {data_dir() / 'large' / 'site.json'} (set SIMHASH_BENCH_DATA)")
        return 0
    root = data_dir()
    fingerprinter = Fingerprinter()
    most = max(first_count(order) for order in args.order)
    others = other_pages(site, root, most, 20261128, fingerprinter)
    layout = Layout(site, root, others)
    other_urls = {
        host: sorted(p for p in layout.other_id if p[0] == host) for host in site["hosts"]
    }
    hub = SiteServer().start()
    overrides = dict(args.settings)
    modes = [int(m) for m in args.modes.split(",") if m.strip()]
    print(
        f"# crawl of large/: {sum(len(h['pages']) for h in site['hosts'].values())} URLs on "
        f"{len(layout.servers)} hosts, overrides {overrides or 'none'}"
        + (
            f"; up to {most} other pages a host (dev pages: "
            + ", ".join(
                f"{k} {v}"
                for k, v in Counter(
                    next(p.page_type for p in load_pages() if p.id == i) or "untyped"
                    for pages in others.values()
                    for i, _ in pages
                ).most_common()
            )
            + ")"
            if most
            else ""
        )
    )
    print(
        "order          mode  seed  articles lost  copies dropped  worst host lost  "
        "worst host copies  other cluster's copy  other page's copy  others dropped  "
        "kept unchecked  drift  secs"
    )
    try:
        for order in args.order:
            for processes in modes:
                for seed in args.seeds:
                    settings = {
                        **CRAWL_SETTINGS,
                        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
                        **overrides,
                    }
                    started = time.perf_counter()
                    parts = shares(site, processes, seed, order, other_urls, layout.pairs)
                    with tempfile.TemporaryDirectory(prefix="large-crawl-") as tmp:
                        redis_server = None
                        if processes > 1:
                            if REDIS_SERVER is None:
                                print(f"{processes}: skipped, no redis-server on PATH")
                                continue
                            redis_server = RedisServer(Path(tmp) / "redis").start()
                            settings["SIMHASH_INDEX_URL"] = redis_server.url
                        try:
                            results = crawl(
                                layout, hub, parts, order, settings, Path(tmp), args.timeout
                            )
                        finally:
                            if redis_server is not None:
                                redis_server.stop()
                    s = summarise(site, layout, parts, results, fingerprinter)
                    secs = time.perf_counter() - started
                    print(
                        f"{order:<14} {processes:<5} {seed:<5} "
                        f"{len(s['lost'])}/{s['articles']:<10} "
                        f"{s['copies_dropped']:<15.4f} {s['worst_lost'][0]:.3f} "
                        f"{s['worst_lost'][1]:<10} {s['worst_copies'][0]:.3f} "
                        f"{s['worst_copies'][1]:<12} {s['cross_cluster_drops']:<21} "
                        f"{s['of_other']:<18} {s['others'][0]}/{s['others'][1]:<12} "
                        f"{s['kept_unchecked']:<15} {s['drift']:<6} {secs:.0f}",
                        flush=True,
                    )
                    for line in s["details"]:
                        print("      lost:", line)
                    if s["errors"]:
                        print("      errors:", s["errors"][:3])
    finally:
        layout.stop()
        hub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
