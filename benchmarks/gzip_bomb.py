"""What a gzip bomb costs on top of Scrapy: peak memory and wall time of a crawl of one page
whose gzip body inflates to ``--mib`` MiB of zeros, with and without the add-on.

Run by hand from the repository root, on an otherwise idle machine (it times):

    python3 benchmarks/gzip_bomb.py [--mib 1000] [--runs 3]

A local server answers ``/bomb.html`` with ``Content-Encoding: gzip`` (about 1 MB on the
wire for 1000 MiB); Scrapy's HttpCompressionMiddleware inflates it (below its default
DOWNLOAD_MAXSIZE of 1 GiB), then the add-on fingerprints it. The body is cut to
SIMHASH_MAX_BODY_BYTES in the crawl process before it is hashed or sent to a fingerprint
worker. Target: the add-on adds at most 64 MB of peak RSS and 1 s of wall time. Prints the
median of ``--runs`` crawls of each, side by side.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.http_site import SiteServer
from tests.scrapy_runner import run_crawl

SETTINGS = {
    "ROBOTSTXT_OBEY": False,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
}


def bomb(mib: int) -> bytes:
    head = b"<html><head><title>Bomb</title></head><body><p>" + b"0" * 1024
    return gzip.compress(head + bytes(mib * 1024 * 1024 - len(head)), compresslevel=9)


def crawl(server: SiteServer, workdir: Path, addon: bool) -> tuple[float, float, float]:
    settings = dict(SETTINGS)
    if addon:
        settings["ADDONS"] = {"scrapy_simhash.Addon": 0}
    spec = {"requests": [{"url": server.url("/bomb.html")}], "settings": settings}
    started = time.perf_counter()
    result = run_crawl(workdir, spec)
    wall = time.perf_counter() - started
    assert result.errors == [], result.errors
    return wall, result.cpu["crawl_maxrss_mb"], result.cpu["workers_maxrss_mb"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    body = bomb(args.mib)
    server = SiteServer().start()

    server.pages["/bomb.html"] = ("text/html", body)
    original = server.resolve

    def resolve(path: str) -> tuple[int, dict[str, str], bytes]:
        status, headers, data = original(path)
        if path == "/bomb.html":
            headers["Content-Encoding"] = "gzip"
        return status, headers, data

    server.resolve = resolve  # type: ignore[method-assign]
    print(
        f"# a {len(body) / 1e6:.1f} MB gzip body inflating to {args.mib} MiB; "
        f"median of {args.runs} crawls"
    )
    rows = {}
    try:
        with tempfile.TemporaryDirectory(prefix="gzip-bomb-") as tmp:
            for name, addon in (("scrapy alone", False), ("with the add-on", True)):
                runs = [
                    crawl(server, Path(tmp) / f"{name[:4]}{n}", addon) for n in range(args.runs)
                ]
                rows[name] = [statistics.median(column) for column in zip(*runs, strict=True)]
    finally:
        server.stop()
    print(f"{'':18} {'wall s':>8} {'crawl RSS MB':>13} {'worker RSS MB':>14}")
    for name, (wall, rss, workers) in rows.items():
        print(f"{name:18} {wall:8.2f} {rss:13.0f} {workers:14.0f}")
    base, ours = rows["scrapy alone"], rows["with the add-on"]
    print(
        f"{'added by the add-on':18} {ours[0] - base[0]:8.2f} {ours[1] - base[1]:13.0f} "
        f"{ours[2] - base[2]:14.0f}   (target: <= 1 s, <= 64 MB)"
    )


if __name__ == "__main__":
    main()
