"""Where a CPU-bound crawl's time goes with the add-on: fingerprinting against the rest.

Run by hand from the repository root::

    python3 benchmarks/crawl_profile.py [--pages 300] [--variants 1] [--workers 0]
                                        [--off] [--instructions] [--save FILE]
                                        [-s NAME=VALUE ...]

The pages of ../shared/data/pages are served locally as ``crawl_throughput.py`` serves them
(``--variants`` byte-identical URLs per page: the first kept, the others dropped copies) and
crawled once in a child process (``tests/scrapy_runner.py``, 32 concurrent, the add-on at
its defaults, recrawl observations on, ``--workers`` fingerprint workers: 0 puts
fingerprinting in the crawl process, where the profile sees it).

Without ``--instructions`` the child runs under cProfile, every thread of it profiled (the
store threads too) by its own CPU time (``time.thread_time``: waits and other processes'
load are not counted), and the script prints per response: the profiled CPU of fingerprinting
(bytes -> fingerprint and signature), of the rest of the add-on, split by stage, and of
Scrapy itself; and counts that do not depend on the machine's load: store calls through the
guard, thread hops (calls handed to a thread), SQL statements and commits, filing calls.
cProfile's own overhead weighs on many small calls, so its proportions lean towards the
glue; the counts are exact.

With ``--instructions`` the child runs under valgrind (cachegrind, no cache model; the
fingerprint workers, when there are any, are not counted): instructions of the whole crawl
process per response, start-up included, once for each of two crawls, ``--pages`` and half
as many, so that their difference per page leaves start-up out.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: Stages of the add-on, each the cumulative time of the functions named (file suffix,
#: function name); a stage nested in another is subtracted from it where printed.
STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "fingerprint (bytes -> fingerprint + signature)": (
        ("scrapy_simhash/fingerprint.py", "fingerprint_page"),
    ),
    "second test's signature, in the crawl process (sketch)": (
        ("scrapy_simhash/fingerprint.py", "evidence"),
    ),
    "template memory (apply, see, second look, learn)": (
        ("scrapy_simhash/judge.py", "apply"),
        ("scrapy_simhash/glue/templates.py", "apply"),
        ("scrapy_simhash/glue/templates.py", "see"),
        ("scrapy_simhash/glue/templates.py", "second_look"),
        ("scrapy_simhash/glue/templates.py", "learn"),
    ),
    "verdict (index, filing lease, recrawl)": (("scrapy_simhash/verdict.py", "page"),),
    "filing settle (delivered)": (("scrapy_simhash/filings.py", "delivered"),),
    "spider middleware": (
        ("scrapy_simhash/glue/follow.py", "process_spider_output"),
        ("scrapy_simhash/glue/follow.py", "process_spider_output_async"),
        ("scrapy_simhash/glue/follow.py", "process_spider_input"),
    ),
    "downloader middleware, all of it": (
        ("scrapy_simhash/glue/middleware.py", "process_response"),
        ("scrapy_simhash/glue/middleware.py", "process_request"),
    ),
}

#: Counted calls, each (label, file suffix or "~" for builtins, function name). Only plain
#: functions: cProfile counts each resumption of a coroutine as a call.
COUNTS: tuple[tuple[str, str, str], ...] = (
    ("store calls through the guard (answered)", "scrapy_simhash/glue/guard.py", "_recovered"),
    ("thread hops, all (run_in_executor)", "asyncio/base_events.py", "run_in_executor"),
    ("  of which: SQLite calls sent to its thread", "scrapy_simhash/_sqlite.py", "_checked"),
    ("  of which: template store calls (its thread)", "scrapy_simhash/_runners.py", "_with_store"),
    ("  of which: pages sent to a fingerprint worker", "concurrent/futures/process.py", "submit"),
    ("SQLite statements (execute)", "~", "<method 'execute' of 'sqlite3.Connection' objects>"),
    ("SQLite executemany", "~", "<method 'executemany' of 'sqlite3.Connection' objects>"),
    ("index observe or claim (SQLite)", "scrapy_simhash/index/sqlite.py", "_observe"),
    ("index hold: filing lease (SQLite)", "scrapy_simhash/index/sqlite.py", "hold"),
    ("index settle: filing lease (SQLite)", "scrapy_simhash/index/sqlite.py", "settle"),
    ("index drop record (SQLite)", "scrapy_simhash/index/sqlite.py", "record_drop"),
    ("recrawl update (SQLite)", "scrapy_simhash/recrawl/sqlite.py", "update"),
    ("recrawl remove (SQLite)", "scrapy_simhash/recrawl/sqlite.py", "remove"),
    ("template store record", "scrapy_simhash/template/store.py", "record"),
    ("template store read", "scrapy_simhash/template/store.py", "read"),
    ("template line hashing (learnable)", "scrapy_simhash/template/__init__.py", "learnable"),
    ("stats inc_value", "scrapy/statscollectors.py", "inc_value"),
)


def _child(spec_path: str, out_path: str, prof_path: str) -> int:
    """Run the crawl of ``spec_path`` with every thread profiled; dump the merged profile."""
    from tests import scrapy_runner

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_thread_profile(*_: Any) -> None:
        # The first event of a new thread: a profile of its own replaces this hook.
        profile = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profile)
        profile.enable()

    threading.setprofile(start_thread_profile)
    main = cProfile.Profile(time.thread_time)
    main.enable()
    try:
        code = scrapy_runner.main(spec_path, out_path)
    finally:
        main.disable()
        threading.setprofile(None)  # type: ignore[arg-type]
    stats = pstats.Stats(main)
    with lock:
        for profile in profiles:
            try:
                stats.add(profile)
            except TypeError:  # a thread that made no call: nothing to add
                continue
    stats.dump_stats(prof_path)
    return code


def _matches(func: tuple[str, int, str], where: str, name: str) -> bool:
    filename, _, funcname = func
    if where == "~":
        return filename == "~" and funcname == name
    return filename.endswith(where) and funcname == name


def _find(raw: dict[Any, Any], where: str, name: str) -> Iterable[tuple[Any, Any]]:
    return ((func, row) for func, row in raw.items() if _matches(func, where, name))


def cumulative(raw: dict[Any, Any], names: Iterable[tuple[str, str]]) -> float:
    """The summed cumulative seconds of the functions named (each counted once)."""
    total = 0.0
    for where, name in names:
        for _, (_, _, _, cum, _) in _find(raw, where, name):
            total += cum
    return total


def calls(raw: dict[Any, Any], where: str, name: str) -> int:
    """How many times the functions named were called (primitive calls: a coroutine's
    resumptions are not calls)."""
    return sum(row[0] for _, row in _find(raw, where, name))


def report(prof: Path, responses: int, pages_kept: int) -> dict[str, Any]:
    """Per-response figures of one profile."""
    stats = pstats.Stats(str(prof))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in raw.values())
    per = 1e6 / responses
    stages = {label: cumulative(raw, names) * per for label, names in STAGES.items()}
    counts = {label: calls(raw, where, name) / responses for label, where, name in COUNTS}
    return {
        "total_us": total * per,
        "stages_us": stages,
        "counts": counts,
        "responses": responses,
        "kept": pages_kept,
    }


def _valgrind(command: list[str], workdir: Path) -> int:
    out = workdir / "cachegrind.out"
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            f"--cachegrind-out-file={out}",
            *command,
        ],
        cwd=workdir,
        # The child runs ``-m tests.scrapy_runner`` from the work directory.
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def run(
    site: Any, paths: list[str], settings: dict[str, Any], workdir: Path, *, instructions: bool
) -> tuple[dict[str, Any], int | None]:
    """One crawl of ``paths`` in a child process; its report and, with ``instructions``,
    the instructions the crawl process retired."""
    workdir.mkdir(parents=True, exist_ok=True)
    spec = {
        "requests": [{"url": site.url(p)} for p in paths],
        "settings": {**settings, "LOG_FILE": str(workdir / "crawl.log")},
    }
    spec_path, out_path, prof = workdir / "spec.json", workdir / "out.json", workdir / "crawl.prof"
    spec_path.write_text(json.dumps(spec))
    env_python = [sys.executable]
    if instructions:
        command = [*env_python, "-m", "tests.scrapy_runner", str(spec_path), str(out_path)]
        refs: int | None = _valgrind(command, workdir)
    else:
        command = [
            *env_python,
            str(Path(__file__).resolve()),
            "--child",
            str(spec_path),
            str(out_path),
            str(prof),
        ]
        subprocess.run(command, cwd=workdir, check=True)
        refs = None
    return json.loads(out_path.read_text()), refs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--variants", type=int, default=1)
    parser.add_argument("--workers", type=int, default=0, help="SIMHASH_WORKERS (default 0)")
    parser.add_argument("--off", action="store_true", help="the same crawl without the add-on")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions under valgrind instead of profiling",
    )
    parser.add_argument("--save", help="keep the profile at this path")
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        help="a setting NAME=VALUE (JSON value, else a string)",
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(*args.child)

    from benchmarks.crawl_throughput import MANIFEST, load_pages
    from tests.http_site import SiteServer

    if not MANIFEST.is_file():
        print(f"no page corpus at {MANIFEST}: this benchmark needs ../shared/data/pages")
        return 1
    if args.instructions and shutil.which("valgrind") is None:
        print("--instructions needs valgrind")
        return 1
    pages = load_pages(args.pages)
    site = SiteServer().start()
    paths_of: list[list[str]] = []
    for n, (content_type, body) in enumerate(pages):
        page_paths = [f"/p/{n}/{v}.html" for v in range(args.variants)]
        for path in page_paths:
            site.pages[path] = (content_type, body)
        paths_of.append(page_paths)
    settings: dict[str, Any] = {
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        "LOG_LEVEL": "INFO",
    }
    if not args.off:
        settings.update(
            {
                "ADDONS": {"scrapy_simhash.Addon": 0},
                "SIMHASH_RECRAWL_ENABLED": True,
                "SIMHASH_WORKERS": args.workers,
            }
        )
    for item in args.set:
        name, _, value = item.partition("=")
        try:
            settings[name] = json.loads(value)
        except json.JSONDecodeError:
            settings[name] = value

    def paths(count: int) -> list[str]:
        chosen = [p for page_paths in paths_of[:count] for p in page_paths]
        return sorted(chosen, key=lambda u: (u.rsplit("/", 1)[-1], u))

    try:
        with tempfile.TemporaryDirectory() as tmp:
            if args.instructions:
                half = len(paths_of) // 2
                figures = []
                for count in (half, len(paths_of)):
                    result, refs = run(
                        site, paths(count), settings, Path(tmp) / str(count), instructions=True
                    )
                    responses = result["stats"].get("downloader/response_count", 0)
                    figures.append((responses, refs or 0))
                    print(
                        f"{responses} responses: {refs:,} instructions "
                        f"({(refs or 0) / responses / 1e6:.2f} M a response, start-up "
                        "included)"
                    )
                (r1, i1), (r2, i2) = figures
                print(
                    f"per response, start-up left out: {(i2 - i1) / (r2 - r1) / 1e6:.2f} M "
                    f"instructions ({'off' if args.off else 'add-on on'}, "
                    f"SIMHASH_WORKERS={args.workers})"
                )
                return 0
            result, _ = run(site, paths(len(paths_of)), settings, Path(tmp), instructions=False)
            prof = Path(tmp) / "crawl.prof"
            if args.save:
                shutil.copy(prof, args.save)
            stats = result["stats"]
            responses = stats.get("downloader/response_count", 0)
            figures_of = report(prof, responses, len(result["items"]))
    finally:
        site.stop()
    print(
        f"{responses} responses ({len(pages)} pages x {args.variants} URLs), "
        f"{figures_of['kept']} reached the spider; simhash stats: "
        + ", ".join(
            f"{k[8:]}={v}"
            for k, v in sorted(stats.items())
            if k.startswith("simhash/") and isinstance(v, int)
        )
    )
    total = figures_of["total_us"]
    print(f"\nprofiled CPU per response: {total:,.0f} µs (all threads, cProfile overhead included)")
    for label, us in figures_of["stages_us"].items():
        print(f"  {label:<52}{us:>9,.0f} µs {us / total:>6.1%}")
    print("\ncounts per response")
    for label, value in figures_of["counts"].items():
        print(f"  {label:<52}{value:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
