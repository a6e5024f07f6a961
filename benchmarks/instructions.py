"""Instructions per page, HTML bytes to result: a speed figure that other jobs do not move.

Run by hand (not by pytest) from the repository root; needs ``valgrind``:

    python3 benchmarks/instructions.py [--cases N] [--ours-only] [-s NAME=VALUE ...]

CPU time on a shared machine moves by tens of percent between runs minutes apart, which
hides a step that saves 2-5%. Instructions retired hardly move, so this script counts
them under valgrind (cachegrind without its cache model): for each contender of
``speed.py`` (ours at the given settings, resiliparse's main-content extraction, lxml's
and lexbor's bare parse), one warm pass over N files of ``shared/data/pairs/cases``
(every n-th, as ``speed.py`` picks them), as the difference between a run of two passes
and a run of one (start-up and loading cancel out). An instruction of C code and one of
the Python interpreter do not take the same time, so the ratio beside resiliparse is not
the speed ratio of ``speed.py``; the figure is for comparing two versions of our code.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pages import data_dir
from benchmarks.speed import _contenders, pair_cases
from scrapy_simhash.cli import parse_setting

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_WARM_UP = 20  # files run once before counting: caches as in a crawl


def _child(name: str, passes: int, count: int, settings: dict[str, str]) -> None:
    """The counted process: load, warm up, then ``passes`` passes of one contender."""
    bodies = pair_cases(count)
    run = _contenders(settings)[name]
    for body in bodies[:_WARM_UP]:
        run(body)
    for _ in range(passes):
        for body in bodies:
            run(body)


def _count(name: str, passes: int, count: int, settings: list[str]) -> int:
    command = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, __file__, "--child", name, "--passes", str(passes),
        "--cases", str(count), *(arg for setting in settings for arg in ("-s", setting)),
    ]
    # A fixed hash seed: dict and set orders, and so the instructions, repeat run to run.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    match = _REFS.search(done.stderr)
    if match is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300, help="files of pairs/cases")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a SIMHASH_* setting (repeatable)")
    parser.add_argument("--ours-only", action="store_true",
                        help="count ours alone (half the time: for comparing two versions)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = dict(parse_setting(item) for item in args.set)
    if args.child:
        _child(args.child, args.passes, args.cases, settings)
        return
    if not (data_dir() / "pairs" / "cases").is_dir():
        print("skipped: ../shared/data/pairs is absent")
        return
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed (apt-get install valgrind)")
        return
    print(f"one warm pass over {args.cases} files of pairs/cases, instructions per page "
          "(valgrind, cachegrind without cache model)")
    per_page: dict[str, float] = {}
    names = ["ours"] if args.ours_only else list(_contenders(settings))
    for name in names:
        one, two = (_count(name, passes, args.cases, args.set) for passes in (1, 2))
        per_page[name] = (two - one) / args.cases
        ratio = per_page[name] / per_page["ours"]
        print(f"  {name:<18}{per_page[name] / 1e6:>10.2f} M{ratio:>10.2f} of ours", flush=True)


if __name__ == "__main__":
    main()
