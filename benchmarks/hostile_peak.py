"""Peak memory and CPU of fingerprinting one hostile page, compiled and interpreted.

Run by hand (not by pytest) from the repository root:

    python3 benchmarks/hostile_peak.py

Each page is fingerprinted in a fresh process, as a fingerprint worker does it (the page's
fingerprint, the second test's evidence, the line hashes its host's template memory
counts), once on the compiled walk and read-out and once on the interpreted ones (an
install without a C compiler: the code as it was before the extension). Printed per page
and path: the process's peak resident memory (``ru_maxrss``) above what it held before the
page, and the CPU seconds of the page. The pages are those the reliability tests feed the
extractor, made larger: wrappers nested 3,000 deep, one text node of 11 MB, 200,000 short
paragraphs, 100,000 elements with class names never seen before.

With ``--crawl``, each page is crawled instead, alone, from a local server, by Scrapy alone
and with the add-on at its defaults and one fingerprint worker: printed are the crawl
process's peak resident memory (``ru_maxrss``) and the worker's own (``VmHWM``, read while
it lives: a spawned process's ``ru_maxrss`` counts the image of the crawl process it was
forked from before it started a fresh interpreter). The page is cut to
``SIMHASH_MAX_BODY_BYTES`` in the crawl process, as in any crawl:

    python3 benchmarks/hostile_peak.py --crawl [--runs N] [--no-hold]

The server holds each page until the worker is ready; with ``--no-hold`` it answers at once,
as a crawl's first pages come, and the last column says which process read the page.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_WORDS = [
    "".join(random.Random(i).choices(string.ascii_lowercase, k=3 + i % 7)) for i in range(3000)
]


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)) + "."


def page(kind: str) -> bytes:
    rng = random.Random(kind)
    if kind == "nested":
        paragraphs = "".join(f"<p>{_prose(rng, 60)}</p>" for _ in range(8))
        body = "<div class='row'>" * 3000 + paragraphs
    elif kind == "text node":
        words = " ".join(_WORDS[:400]) + ". "
        body = "<p>" + words * (11_000_000 // len(words) + 1) + "</p>"
    elif kind == "paragraphs":
        body = "".join(f"<p>{_prose(rng, 6)}</p>" for _ in range(200_000))
    elif kind == "class names":
        body = "".join(
            f"<div class='{''.join(rng.choices(string.ascii_lowercase, k=40))}'>"
            f"{_prose(rng, 5)}</div>"
            for _ in range(100_000)
        )
    else:
        raise ValueError(kind)
    return f"<html><head><title>Hostile</title></head><body>{body}</body></html>".encode()


def child(kind: str, interpreted: bool) -> None:
    from contextlib import nullcontext

    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
    from scrapy_simhash.text import compiled

    body = page(kind)
    fingerprinter = Fingerprinter(FingerprintConfig())
    fingerprinter.fingerprint_text("warm up " * 100)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    with compiled.interpreted() if interpreted else nullcontext():
        result = fingerprinter.fingerprint_page(body)
        if result.fingerprint is not None:
            result.evidence  # noqa: B018 - made in the worker, as a crawl makes it
        result.line_hashes  # noqa: B018
        result.main_line_hashes  # noqa: B018
    cpu = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{(peak - before) / 1024:.1f} {cpu:.2f}")


#: Long enough for the worker to start before the page arrives.
WORKER_START_SECS = 3.0
KINDS = ("nested", "text node", "paragraphs", "class names")


def crawled(kind: str, runs: int, hold: bool) -> None:
    """Print one row: peak RSS of the crawl process (Scrapy alone, with the add-on) and of
    the add-on's worker, medians of ``runs`` crawls of the page alone."""
    from tests.http_site import SiteServer
    from tests.scrapy_runner import run_crawl

    server = SiteServer().start()
    server.pages["/hostile.html"] = ("text/html; charset=utf-8", page(kind))
    figures: dict[str, list[float]] = {"alone": [], "crawl": [], "worker": []}
    readers: set[str] = set()
    try:
        with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
            for run in range(runs):
                for addon in (False, True):
                    settings: dict[str, object] = {"LOG_LEVEL": "WARNING"}
                    if addon:
                        settings["ADDONS"] = {"scrapy_simhash.Addon": 0}
                        settings["SIMHASH_WORKERS"] = 1
                        if (
                            hold
                        ):  # a small page that comes before the worker is ready is read inline
                            server.hooks["/hostile.html"] = lambda: time.sleep(WORKER_START_SECS)
                    spec = {
                        "requests": [{"url": server.url("/hostile.html")}],
                        "settings": settings,
                        "workers_peak": True,
                    }
                    result = run_crawl(Path(tmp) / f"{run}-{addon}", spec)
                    assert result.errors == [], result.errors
                    if addon:
                        inline = result.simhash_stats().get("simhash/fingerprinted_inline")
                        assert not (hold and inline), "the page was read in the crawl process"
                        readers.add("crawl" if inline else "worker")
                        figures["crawl"].append(result.cpu["crawl_maxrss_mb"])
                        figures["worker"].append(result.cpu["workers_own_peak_mb"])
                    else:
                        figures["alone"].append(result.cpu["crawl_maxrss_mb"])
    finally:
        server.stop()
    alone, crawl, worker = (statistics.median(figures[k]) for k in ("alone", "crawl", "worker"))
    size = len(page(kind)) / 1e6
    print(
        f"  {kind:<14}{size:>8.1f}{alone:>12.0f}{crawl:>12.0f}{crawl - alone:>+10.0f}{worker:>12.0f}"
        f"  {'/'.join(sorted(readers))}"
    )


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3] == "interpreted")
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crawl", action="store_true", help="crawl each page (see above)")
    parser.add_argument("--runs", type=int, default=3, help="crawls of each page (--crawl)")
    parser.add_argument("--no-hold", action="store_true", help="serve each page at once (--crawl)")
    args = parser.parse_args()
    if args.crawl:
        print(f"peak RSS (MB) of one crawl of the page alone, median of {args.runs}")
        print(
            f"  {'page':<14}{'MB':>8}{'scrapy':>12}{'add-on':>12}{'added':>10}{'worker':>12}"
            "  read by"
        )
        for kind in KINDS:
            crawled(kind, args.runs, hold=not args.no_hold)
        return
    print("peak RSS above the process's before the page (MB) / CPU s, one page per process")
    print(f"  {'page':<14}{'MB':>8}{'compiled':>10}{'interpreted':>14}")
    for kind in KINDS:
        size = len(page(kind)) / 1e6
        figures = {}
        for path in ("compiled", "interpreted"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", kind, path],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO,
            )
            mb, cpu = done.stdout.split()
            figures[path] = f"{mb} MB {cpu} s"
        print(f"  {kind:<14}{size:>8.1f}{figures['compiled']:>18}{figures['interpreted']:>18}")


if __name__ == "__main__":
    main()
