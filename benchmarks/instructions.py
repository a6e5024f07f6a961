"""Instructions per page, HTML bytes to result: a speed figure that other jobs do not move.

Run by hand (not by pytest) from the repository root; needs ``valgrind``:

    python3 benchmarks/instructions.py [--cases N] [--ours-only | --stages] [--jobs N]
                                       [-s NAME=VALUE ...]

CPU time on a shared machine moves by tens of percent between runs minutes apart, which
hides a step that saves 2-5%. Instructions retired hardly move, so this script counts
them under valgrind (cachegrind without its cache model): for each contender of
``speed.py`` (ours at the given settings, resiliparse's main-content extraction, lxml's
and lexbor's bare parse), one warm pass over N files of ``shared/data/pairs/cases``
(every n-th, as ``speed.py`` picks them), as the difference between a run of two passes
and a run of one (start-up and loading cancel out). An instruction of C code and one of
the Python interpreter do not take the same time, so the ratio beside resiliparse is not
the speed ratio of ``speed.py``; the figure is for comparing two versions of our code.
``--ours-only`` counts ours, compiled and interpreted, and ``worker``: all a fingerprint
worker makes of a page, ours and the hashes of its lines for the template memory.

``--stages`` counts where our instructions go instead: the product's steps run cumulatively
(decode; + parse; + preparation; + walk; + container choice; + read-out, i.e. the whole
extraction; + length check and own text; + features; + SimHash; + the second test's
signature), each stage the difference from the one before, beside lexbor's bare parse of
the same pages (the floor of any extractor) and lxml's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pages import data_dir
from benchmarks.speed import _contenders, pair_cases
from scrapy_simhash.cli import parse_setting

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_WARM_UP = 20  # files run once before counting: caches as in a crawl


# The cumulative stages of --stages, in the product's order; "ours" adds what the stages'
# glue leaves out (notes, the page record).
_STAGES = (
    "decode",
    "parse",
    "prepare",
    "walk",
    "choose",
    "read-out",
    "length check",
    "features",
    "simhash",
    "signature",
)


def _stage_runners(settings: dict[str, str]) -> dict[str, Callable[[bytes], object]]:
    """HTML bytes -> the end of each stage, through the product's own functions called as
    ``text/extract.py`` and ``Fingerprinter.fingerprint_document`` call them."""
    from scrapy_simhash.confirm import Evidence, Signer, new_key
    from scrapy_simhash.features import normalize
    from scrapy_simhash.fingerprint import Fingerprinter, own_folded
    from scrapy_simhash.settings import fingerprint_config
    from scrapy_simhash.text import extract_main_text
    from scrapy_simhash.text.choose import _choose
    from scrapy_simhash.text.decode import decode_html
    from scrapy_simhash.text.extract import _looked_at
    from scrapy_simhash.text.parse import _parse, _place_streamed_segments, _strip_junk, _tree
    from scrapy_simhash.text.readout import _title
    from scrapy_simhash.text.walk import _Walk

    fingerprinter = Fingerprinter(fingerprint_config(settings))
    fingerprinter.fingerprint_text("预热 warm up " * 100)
    signer = Signer(new_key())
    limit = fingerprinter.config.max_body_bytes or None

    def extraction(stage: str) -> Callable[[bytes], object]:
        def run(body: bytes) -> object:
            decoded = decode_html(body)
            if stage == "decode":
                return decoded
            data = decoded.utf8 or decoded.text.encode("utf-8", errors="replace")
            parser = _parse(data)
            if stage == "parse" or parser is None:
                return parser
            tree = _tree(parser)
            found = _looked_at(tree)
            _title(tree, found)
            _place_streamed_segments(tree, found)
            _strip_junk(tree)
            if stage == "prepare":
                return tree
            walk = _Walk(tree)
            walk.run()
            return walk if stage == "walk" else _choose(walk)

        return run

    def fingerprinting(stage: str) -> Callable[[bytes], object]:
        def run(body: bytes) -> object:
            main = extract_main_text(body, max_bytes=limit)
            if stage == "read-out":
                return main
            text, title = main.text, main.title
            folded = normalize(text)
            reason = fingerprinter.too_short(text, title, folded=folded)
            own = own_folded(text, title, folded)
            if stage == "length check" or reason is not None:
                return own  # a short page's exact digest and signature count as "other"
            features = fingerprinter.features(text, title, folded=folded)
            if stage == "features":
                return features
            fingerprint = fingerprinter.fingerprint_features(features)
            if stage == "simhash" or fingerprint is None:
                return fingerprint
            return signer.sign(Evidence(own, title))

        return run

    def worker(body: bytes) -> object:
        """All a fingerprint worker makes of a page (``glue/workers.py``): ours, and the
        hashes of the page's lines that its host's template memory counts."""
        page = fingerprinter.fingerprint_page(body)
        if page.fingerprint is not None:
            signer.sign(page.evidence)
        return page.line_hashes, page.main_line_hashes

    runners = {stage: extraction(stage) for stage in _STAGES[:5]}
    runners.update({stage: fingerprinting(stage) for stage in _STAGES[5:]})
    runners["worker"] = worker
    return runners


def _child(name: str, passes: int, count: int, settings: dict[str, str]) -> None:
    """The counted process: load, warm up, then ``passes`` passes of one contender."""
    bodies = pair_cases(count)
    runners = _contenders(settings)
    if name not in runners:
        runners = _stage_runners(settings)
    run = runners[name]
    for body in bodies[:_WARM_UP]:
        run(body)
    for _ in range(passes):
        for body in bodies:
            run(body)


def _count(name: str, passes: int, count: int, settings: list[str]) -> int:
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        name,
        "--passes",
        str(passes),
        "--cases",
        str(count),
        *(arg for setting in settings for arg in ("-s", setting)),
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
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a SIMHASH_* setting (repeatable)",
    )
    parser.add_argument(
        "--ours-only",
        action="store_true",
        help="count ours alone, compiled and interpreted, and all a fingerprint worker makes "
        "of a page (for comparing two versions)",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="where our instructions go, stage by stage, beside bare parses",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="valgrind runs at once (the counts do not depend on it)"
    )
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
    print(
        f"one warm pass over {args.cases} files of pairs/cases, instructions per page "
        "(valgrind, cachegrind without cache model)"
    )
    names = list(_contenders(settings))
    if args.ours_only:
        names = [name for name in names if name in ("ours", "interpreted")] + ["worker"]
    if args.stages:
        names = [*_STAGES, "ours", "lexbor parse", "lxml parse"]
    runs = [(name, passes) for name in names for passes in (1, 2)]
    with ThreadPoolExecutor(max(args.jobs, 1)) as pool:
        counts = dict(
            zip(
                runs,
                pool.map(lambda run: _count(run[0], run[1], args.cases, args.set), runs),
                strict=True,
            )
        )
    per_page = {name: (counts[name, 2] - counts[name, 1]) / args.cases for name in names}
    if args.stages:
        _print_stages(per_page)
        return
    for name in names:
        ratio = per_page[name] / per_page["ours"]
        print(f"  {name:<18}{per_page[name] / 1e6:>10.2f} M{ratio:>10.2f} of ours", flush=True)


def _print_stages(per_page: dict[str, float]) -> None:
    """Each stage as the difference between its cumulative count and the one before."""
    total = per_page["ours"]
    print(f"  {'stage':<16}{'M per page':>12}{'share':>8}")
    before = 0.0
    for stage in (*_STAGES, "ours"):
        own = per_page[stage] - before
        before = per_page[stage]
        label = "other" if stage == "ours" else stage
        print(f"  {label:<16}{own / 1e6:>12.2f}{own / total:>8.1%}")
    print(f"  {'total':<16}{total / 1e6:>12.2f}")
    for name in ("lexbor parse", "lxml parse"):
        print(
            f"  {name:<16}{per_page[name] / 1e6:>12.2f}{per_page[name] / total:>8.1%}"
            "  (bare parse of the same pages, for comparison)"
        )


if __name__ == "__main__":
    main()
