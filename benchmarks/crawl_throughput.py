"""Crawl throughput with the SimHash add-on on and off, over real pages served locally.

Run by hand from the repository root::

    python3 benchmarks/crawl_throughput.py [--pages 300] [--variants 3] [--concurrency 16]

The pages of ../shared/data/pages (real HTML, gzip-compressed; see its README) are served by a
local HTTP server, each under ``--variants`` URLs (``/p/<n>/<v>.html``: byte-identical copies,
as URL variants and mirrors are). The same spider requests all of them with the add-on off,
then on with each tokenizer and worker setting; every crawl runs in its own process with a
fresh embedded index. Printed side by side: pages per second, the ratio to the crawl without
the add-on, CPU seconds of the crawl process and its workers, and whether exactly one URL of
each page with text was kept (a page whose variants are all kept, or none, is a miss).

Also printed: the bare cost of fingerprinting the same pages in one process, per tokenizer, so
the crawl figures can be read against the CPU work they must hide.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.http_site import SiteServer
from tests.scrapy_runner import finish_crawl, start_crawl

DATA = REPO.parent / "shared" / "data"
MANIFEST = DATA / "pages" / "manifest.jsonl"
#: Modes that crawl without the add-on, with a reference library in its place.
REFERENCES = ("resiliparse",)


def load_pages(limit: int) -> list[tuple[str, bytes]]:
    """Every k-th page of the manifest (a spread over sources), as (content type, body)."""
    rows = [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]
    step = max(1, len(rows) // limit)
    pages = []
    for row in rows[::step][:limit]:
        body = gzip.decompress((DATA / row["path"]).read_bytes())
        hint = row.get("charset_hint")
        pages.append((f"text/html; charset={hint}" if hint else "text/html", body))
    return pages


def pin_apart(pid: int, stop: threading.Event) -> None:
    """Keep the crawl process on core 0 and every process it starts (its fingerprint
    workers) on core 1, where this process serves the pages: the crawl process's CPU is then
    its own, not inflated by sharing a core with the workers."""
    os.sched_setaffinity(pid, {0})
    pinned: set[int] = set()
    children = Path(f"/proc/{pid}/task/{pid}/children")
    while not stop.wait(0.005):
        try:
            found = {int(p) for p in children.read_text().split()}
        except OSError:
            return
        for child in found - pinned:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(child, {1})
            pinned.add(child)


def crawl(
    site: SiteServer, urls: list[str], settings: dict[str, Any], workdir: Path, pin: bool = False
) -> dict[str, Any]:
    started = time.perf_counter()
    # This process only waits for the child while its thread serves the pages: its CPU
    # during the crawl is the server's.
    served = time.process_time()
    proc, out, log = start_crawl(
        workdir, {"requests": [{"url": u} for u in urls], "settings": settings}, name="crawl"
    )
    stop = threading.Event()
    pinning = threading.Thread(target=pin_apart, args=(proc.pid, stop), daemon=True)
    if pin:
        pinning.start()
    try:
        result = finish_crawl(proc, out, log)
    finally:
        stop.set()
        if pin:
            pinning.join()
    wall = time.perf_counter() - started
    server_cpu = time.process_time() - served
    if result.errors:
        raise SystemExit(f"crawl failed: {result.errors}")
    stats = result.stats
    # Counted by DownloaderStats (850), before the SimHash middleware drops duplicates; the
    # response_received signal only fires for responses that got through.
    responses = stats.get("downloader/response_count", 0)
    return {
        "pages_per_sec": responses / stats["elapsed_time_seconds"],
        "responses": responses,
        "crawl_cpu_ms": (result.cpu["crawl"] - result.cpu["startup"]) * 1000 / responses,
        "worker_cpu_ms": result.cpu["workers"] * 1000 / responses,
        "server_cpu_ms": server_cpu * 1000 / responses,
        # Of the crawl CPU, the kernel's; and how often the crawl process's threads gave up
        # a core (waiting for the GIL, a lock, a thread) or were made to.
        "crawl_sys_ms": result.cpu["crawl_sys"] * 1000 / responses,
        "switches": (
            result.cpu["crawl_voluntary_switches"] + result.cpu["crawl_involuntary_switches"]
        )
        / responses,
        "wall": wall,
        "items": result.items,
        "stats": result.simhash_stats(),
    }


def kept_check(items: list[dict[str, Any]], with_text: set[str]) -> tuple[int, int, int]:
    """Of the pages with text: (kept exactly once, kept more than once, never kept)."""
    kept: Counter[str] = Counter()
    for item in items:
        page = item["url"].rsplit("/", 2)[-2]
        if page in with_text:
            kept[page] += 1
    once = sum(1 for n in kept.values() if n == 1)
    more = sum(1 for n in kept.values() if n > 1)
    return once, more, len(with_text) - len(kept)


def fingerprint_pass(
    pages: list[tuple[str, bytes]], tokenizer: str
) -> tuple[float, list[int | None]]:
    """CPU seconds per page of fingerprinting in this process, and the fingerprints."""
    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter

    fingerprinter = Fingerprinter(FingerprintConfig(tokenizer=tokenizer))
    fingerprinter.fingerprint_text("warm up the tokenizer 预热分词词典")
    started = time.process_time()
    fps = [fingerprinter.fingerprint_page(body, content_type=ct).fingerprint for ct, body in pages]
    return (time.process_time() - started) / len(pages), fps


def near_duplicates_in_corpus(fps: list[int | None], k: int = 3) -> int:
    """Pages within k bits of an earlier page of the corpus (these are rightly never kept)."""
    seen: list[int] = []
    count = 0
    for fp in fps:
        if fp is None:
            continue
        if any((fp ^ other).bit_count() <= k for other in seen):
            count += 1
        else:
            seen.append(fp)
    return count


def print_round(
    results: dict[str, dict[str, Any]], modes: dict[str, dict[str, Any]], with_text: set[str]
) -> dict[str, tuple[float, float]]:
    """Print one round's table; return each mode's (ratio, CPU ratio) against "off"."""
    ratios: dict[str, tuple[float, float]] = {}
    off = results.get("off")
    print(
        f"\n{'mode':<15}{'pages/s':>9}{'ratio':>7}{'CPU ratio':>10}{'crawl CPU':>11}"
        f"{'of it sys':>11}{'switches':>10}{'worker CPU':>12}{'server CPU':>12}"
        f"{'kept once':>11}{'kept 2+':>9}{'never':>7}{'cache hits':>12}"
    )
    for mode, r in results.items():
        ratio = f"{r['pages_per_sec'] / off['pages_per_sec']:.2f}" if off else "-"
        once: Any = "-"
        more: Any = "-"
        never: Any = "-"
        if mode != "off" and mode not in REFERENCES:
            once, more, never = kept_check(r["items"], with_text)
        hits = r["stats"].get("simhash/body_cache_hits", "-")
        cpu_ratio = "-"
        if off:
            # Throughput when CPU is the limit and each worker has a core of its own: the
            # slower of the reactor and the workers sets the pace.
            workers = max(1, int(modes.get(mode, {}).get("SIMHASH_WORKERS", 1)))
            busiest = max(r["crawl_cpu_ms"], r["worker_cpu_ms"] / workers)
            cpu = min(1.0, off["crawl_cpu_ms"] / busiest)
            cpu_ratio = f"{cpu:.2f}"
            if mode != "off":
                ratios[mode] = (r["pages_per_sec"] / off["pages_per_sec"], cpu)
        print(
            f"{mode:<15}{r['pages_per_sec']:>9.1f}{ratio:>7}{cpu_ratio:>10}"
            f"{r['crawl_cpu_ms']:>8.1f} ms{r['crawl_sys_ms']:>8.2f} ms{r['switches']:>10.1f}"
            f"{r['worker_cpu_ms']:>9.1f} ms{r['server_cpu_ms']:>9.1f} ms{once!s:>11}{more!s:>9}{never!s:>7}{hits!s:>12}"
        )
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300, help="distinct pages (default 300)")
    parser.add_argument("--variants", type=int, default=3, help="URLs per page (default 3)")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="CONCURRENT_REQUESTS (default 16, Scrapy's)"
    )
    parser.add_argument(
        "--per-domain",
        type=int,
        default=0,
        help="CONCURRENT_REQUESTS_PER_DOMAIN (default: the same as --concurrency). Scrapy's "
        "own defaults are 16 and 8; a response being fingerprinted holds only a global slot",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="seconds the server waits before each answer, standing in for the network "
        "(default 0: a CPU-bound crawl, the worst case for the add-on)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of all modes, interleaved; more than one also prints the medians",
    )
    parser.add_argument(
        "--modes",
        default="off,rjieba,jieba,rjieba-inline",
        help="comma-separated crawls: off, default, memory, templates, notemplates, nolease, bare, rjieba, jieba, rjieba-inline, "
        "jieba-inline, rjieba-nocache, jieba-nocache, rjieba-w2, jieba-w2; resiliparse (no add-on: "
        "resiliparse's main text of each response, in the crawl process)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the crawl process alone on core 0; its fingerprint workers and the server on "
        "core 1 (Linux): what the crawl process costs when no other process shares its core",
    )
    args = parser.parse_args()
    if not MANIFEST.is_file():
        print(f"no page corpus at {MANIFEST}: this benchmark needs ../shared/data/pages")
        return 1
    pages = load_pages(args.pages)
    if args.pin:
        os.sched_setaffinity(0, {1})  # the server's thread, and the fingerprint pass below
    site = SiteServer().start()
    site.latency = args.latency
    urls = []
    for n, (content_type, body) in enumerate(pages):
        for v in range(args.variants):
            path = f"/p/{n}/{v}.html"
            site.pages[path] = (content_type, body)
            urls.append(site.url(path))
    # Interleave variants so copies of a page arrive at different times, as in a real crawl.
    urls.sort(key=lambda u: (u.rsplit("/", 1)[-1], u))
    mb = sum(len(b) for _, b in pages) / 1e6
    print(
        f"{len(pages)} pages ({mb:.1f} MB) x {args.variants} URLs = {len(urls)} requests, "
        f"CONCURRENT_REQUESTS={args.concurrency}, "
        f"CONCURRENT_REQUESTS_PER_DOMAIN={args.per_domain or args.concurrency}, latency {args.latency * 1000:.0f} ms, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        + (", crawl process pinned to core 0, workers and server to core 1" if args.pin else "")
    )
    costs = {tok: fingerprint_pass(pages, tok) for tok in ("rjieba", "jieba")}
    print(
        "fingerprint cost in one process (CPU ms per page): "
        + ", ".join(f"{tok} {cost * 1000:.1f}" for tok, (cost, _) in costs.items())
    )
    fps = costs["rjieba"][1]
    with_text = {str(n) for n, fp in enumerate(fps) if fp is not None}
    print(
        f"pages with text: {len(with_text)}; near-duplicates of another page of the corpus "
        f"(k=3, never kept by design): {near_duplicates_in_corpus(fps)}"
    )

    base = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_domain or args.concurrency,
        "LOG_LEVEL": "INFO",
        "SIMHASH_RECRAWL_ENABLED": False,
    }
    modes: dict[str, dict[str, Any]] = {
        "off": {},
        # The add-on exactly as ADDONS enables it (jieba, recrawl observations on).
        "default": {"SIMHASH_RECRAWL_ENABLED": True},
        # The same with the in-process memory index instead of the embedded SQLite one.
        "memory": {"SIMHASH_RECRAWL_ENABLED": True, "SIMHASH_INDEX_URL": "memory://"},
        # The add-on at its defaults with the hosts' template memory on, and off.
        "templates": {},
        "notemplates": {"SIMHASH_TEMPLATES_ENABLED": False},
        # The add-on without holding kept pages in flight until delivered.
        "nolease": {"SIMHASH_FILING_LEASE_SECS": 0},
        # The least the add-on does to a page: the in-process memory index, no template
        # memory, no filing lease, no spider middleware, no recrawl schedule.
        "bare": {
            "SIMHASH_INDEX_URL": "memory://",
            "SIMHASH_TEMPLATES_ENABLED": False,
            "SIMHASH_FILING_LEASE_SECS": 0,
            "SIMHASH_FOLLOW_DUPLICATE_LINKS": False,
        },
        "rjieba": {"SIMHASH_TOKENIZER": "rjieba"},
        "jieba": {"SIMHASH_TOKENIZER": "jieba"},
        "rjieba-inline": {"SIMHASH_TOKENIZER": "rjieba", "SIMHASH_WORKERS": 0},
        "rjieba-nocache": {"SIMHASH_TOKENIZER": "rjieba", "SIMHASH_BODY_CACHE_ENTRIES": 0},
        "jieba-nocache": {"SIMHASH_TOKENIZER": "jieba", "SIMHASH_BODY_CACHE_ENTRIES": 0},
        "jieba-inline": {"SIMHASH_TOKENIZER": "jieba", "SIMHASH_WORKERS": 0},
        "rjieba-w2": {"SIMHASH_TOKENIZER": "rjieba", "SIMHASH_WORKERS": 2},
        "jieba-w2": {"SIMHASH_TOKENIZER": "jieba", "SIMHASH_WORKERS": 2},
        # The reference without the add-on: resiliparse's main text of every response,
        # extracted in the crawl process (benchmarks/_reference_middleware.py).
        "resiliparse": {
            "DOWNLOADER_MIDDLEWARES": {"benchmarks._reference_middleware.ResiliparseMainText": 950}
        },
    }
    rounds: list[dict[str, dict[str, Any]]] = []
    try:
        for _ in range(args.repeat):
            results: dict[str, dict[str, Any]] = {}
            for mode in args.modes.split(","):
                settings = dict(base)
                if mode in REFERENCES:
                    settings.update(modes[mode])
                elif mode != "off":
                    settings.update(modes[mode], ADDONS={"scrapy_simhash.Addon": 0})
                with tempfile.TemporaryDirectory() as tmp:
                    results[mode] = crawl(site, urls, settings, Path(tmp), args.pin)
            rounds.append(results)
    finally:
        site.stop()

    ratios: dict[str, list[tuple[float, float]]] = {}
    for results in rounds:
        for mode, pair in print_round(results, modes, with_text).items():
            ratios.setdefault(mode, []).append(pair)
    if len(rounds) > 1 and ratios:
        print(
            f"\nmedian of {len(rounds)} rounds (modes interleaved): "
            + "; ".join(
                f"{mode} ratio {statistics.median(r for r, _ in pairs):.2f}, "
                f"CPU ratio {statistics.median(c for _, c in pairs):.2f}"
                for mode, pairs in ratios.items()
            )
        )
    print(
        "\nratio = pages/s with the add-on / pages/s without it (targets: >= 0.85 CPU-bound, "
        ">= 0.98 at 100 ms latency), measured on this machine as loaded now. crawl/worker CPU "
        "= CPU time "
        "per response of the crawl process (reactor, from spider_opened on) and of its "
        "fingerprint workers (start-up included); 'of it sys' = the crawl CPU spent in the "
        "kernel, 'switches' = the crawl process's context switches per response (a thread "
        "waiting for the GIL, a lock or another thread, or preempted); server CPU = the local "
        "HTTP server's, which shares the machine's cores with the crawl. CPU ratio = the ratio those CPU costs give when each process has a core "
        "(off crawl CPU / the larger of crawl CPU and worker CPU per worker). Of the pages "
        "with text: "
        "'kept once' = exactly one of its URLs reached the spider, 'kept 2+' = a missed "
        "duplicate, 'never' = all its URLs were dropped as near-duplicates of another page."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
