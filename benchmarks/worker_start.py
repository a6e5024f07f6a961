"""What a fingerprint worker costs before and at its first page.

Run by hand from the repository root::

    python3 benchmarks/worker_start.py [--runs 3]

Each run is a fresh interpreter doing what a "spawn" child of the fingerprint pool does
(``scrapy_simhash.glue.workers``): import the worker's function, run its initialiser, then
fingerprint one page (signed, its line hashes made). Printed per run: the CPU seconds of
the import and initialiser, the resident memory after them (VmRSS), the CPU of the first
page, and whether numpy was loaded (it is needed only off the compiled path). Needs no
shared data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys, time
started = time.process_time()
from scrapy_simhash.fingerprint import FingerprintConfig
from scrapy_simhash.glue.workers import _fingerprint_in_worker, _init_worker
_init_worker(FingerprintConfig(), 3600)
ready = time.process_time()
status = open("/proc/self/status").read()
rss = int(status.split("VmRSS:")[1].split()[0]) / 1024
page = (
    b"<html><body><article><p>"
    + b"The council met on Tuesday and the budget passed after a long debate. " * 40
    + b"</p></article></body></html>"
)
_fingerprint_in_worker(page, None, 12345)
done = time.process_time()
print(json.dumps({"start_s": ready - started, "rss_mb": rss,
                  "first_page_ms": 1000 * (done - ready), "numpy": "numpy" in sys.modules}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _ in range(args.runs):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], cwd=REPO, capture_output=True, text=True, check=True
        )
        rows.append(json.loads(done.stdout))
    print(f"{'run':>4} {'start CPU s':>12} {'VmRSS MB':>9} {'first page ms':>14} {'numpy':>6}")
    for number, row in enumerate(rows, 1):
        print(
            f"{number:>4} {row['start_s']:>12.3f} {row['rss_mb']:>9.1f} "
            f"{row['first_page_ms']:>14.1f} {row['numpy']!s:>6}"
        )
    print(
        f"median: start {statistics.median(r['start_s'] for r in rows):.3f} s CPU, "
        f"{statistics.median(r['rss_mb'] for r in rows):.1f} MB, first page "
        f"{statistics.median(r['first_page_ms'] for r in rows):.1f} ms"
    )


if __name__ == "__main__":
    main()
