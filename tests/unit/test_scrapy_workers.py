"""Fingerprinting off the reactor: a real worker process, and the body cache."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.confirm import Signer
from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.glue import workers
from scrapy_simhash.glue.workers import FingerprintRunner
from scrapy_simhash.text import MainText, extract_main_text

REPO = Path(__file__).parents[2]
SITE = Path(__file__).parents[1] / "site"
CONFIG = FingerprintConfig(tokenizer="rjieba")


def body_size_extractor(body: Any, **kwargs: Any) -> MainText:
    """The built-in extractor, saying in its notes how many bytes it was handed and where
    (SIMHASH_EXTRACTOR: it runs in the worker process)."""
    main = extract_main_text(body, **kwargs)
    return replace(main, notes=(*main.notes, f"handed {len(body)} bytes in process {os.getpid()}"))


def _refuse_to_load() -> None:
    raise TypeError("this error cannot be loaded here")


class UnloadableError(Exception):
    """An error that pickles in the worker but fails to unpickle in the crawl process."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_refuse_to_load, ())


def failing_extractor(body: Any, **kwargs: Any) -> MainText:
    """An extractor that fails on a page that says so (SIMHASH_EXTRACTOR, in the worker)."""
    if b"fail here" in body:
        raise ValueError(f"cannot read a page of {len(body)} bytes")
    if b"fail oddly" in body:
        raise UnloadableError
    return extract_main_text(body, **kwargs)


def _huge(size: int) -> bytes:
    """A page of ``size`` bytes whose head is an article and whose tail is padding (a
    decompression bomb is a few MB of gzip that Scrapy inflates to 1 GiB of this)."""
    head = (SITE / "harbour.html").read_bytes()
    return head + b" " * (size - len(head))


@pytest.fixture
def held_start(tmp_path: Path, monkeypatch: Any) -> tuple[Path, FingerprintConfig]:
    """A FIFO and a configuration whose workers' start-up waits until the test writes to
    that FIFO (``tests/unit/held_worker_start.py``): the test decides when a worker is
    ready, without timing anything."""
    fifo = tmp_path / "start"
    os.mkfifo(fifo)
    monkeypatch.setenv("SIMHASH_TEST_HOLD_FIFO", str(fifo))
    monkeypatch.setenv("SIMHASH_TEST_HOLD_OWNER", str(os.getpid()))
    return fifo, replace(CONFIG, extractor="tests.unit.held_worker_start.extractor")


def test_a_huge_body_is_cut_before_it_leaves_the_crawl_process() -> None:
    limit = 50_000
    config = replace(CONFIG, max_body_bytes=limit)
    body = _huge(20_000_000)

    async def scenario() -> list[Any]:
        runner = FingerprintRunner(
            replace(config, extractor="tests.unit.test_scrapy_workers.body_size_extractor"),
            workers=1,
            inline_max_bytes=0,
        )
        plain = FingerprintRunner(config, workers=1, inline_max_bytes=0, cache_size=8)
        try:
            seen = await runner.fingerprint(body, "text/html")
            page = await plain.fingerprint(body, "text/html")
            # Another tail past the limit: the same page, so the cache answers (it hashed the
            # bytes that were kept, not 20 MB).
            again = await plain.fingerprint(body[:limit] + b"x" * 1000, "text/html")
            return [seen, page, again, plain.cache_hits]
        finally:
            runner.close()
            plain.close()

    seen, page, again, hits = asyncio.run(scenario())
    handed = re.fullmatch(r"handed (\d+) bytes in process (\d+)", seen.notes[-1])
    assert handed is not None, seen.notes
    size, worker = int(handed[1]), int(handed[2])
    assert worker != os.getpid()
    assert size <= config.max_body_bytes
    # The same page, and the same note, as when the extractor cuts the body itself.
    assert page == Fingerprinter(config).fingerprint_page(body, content_type="text/html")
    assert page.fingerprint is not None
    assert page.notes[0] == f"truncated to {limit} bytes"
    # It keeps what the worker made of it: the crawl process does not make it again.
    assert {"evidence", "line_hashes", "main_line_hashes"} <= vars(page).keys()
    assert again.fingerprint == page.fingerprint
    assert hits == 1


def test_worker_process_gives_the_inline_fingerprints() -> None:
    pages = [
        (SITE / name).read_bytes()
        for name in ("harbour.html", "school-gbk.html", "broken.html", "fake-html.bin")
    ]
    inline = Fingerprinter(CONFIG)

    async def scenario() -> tuple[list[object], int, float]:
        runner = FingerprintRunner(CONFIG, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            await runner.wait_started()
            pages_out = await asyncio.gather(*(runner.fingerprint(p, "text/html") for p in pages))
            return list(pages_out), runner.computed - runner.computed_inline, runner.cpu_secs
        finally:
            runner.close()

    results, computed, cpu_secs = asyncio.run(scenario())
    assert results == [inline.fingerprint_page(p, content_type="text/html") for p in pages]
    # All read in the worker, which reports its own CPU time: what a page cost, not how
    # long it waited.
    assert computed == len(pages)
    assert cpu_secs > 0


def test_pages_that_come_before_a_worker_has_started_are_fingerprinted_inline(
    held_start: tuple[Path, FingerprintConfig],
) -> None:
    """A crawl's first pages do not wait for a worker's start-up (a fresh interpreter) while
    holding their download slots; once one runs, pages go to it."""
    fifo, config = held_start
    body = (SITE / "harbour.html").read_bytes()

    async def scenario() -> tuple[Any, bool, Any, bool, dict[str, int]]:
        runner = FingerprintRunner(config, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            early = await runner.fingerprint(body, "text/html")
            started_early = runner.started
            await asyncio.to_thread(fifo.write_bytes, b"")  # the worker's start-up goes on
            await runner.wait_started()
            late = await runner.fingerprint(body, "text/html")
            return early, started_early, late, runner.started, runner.stats()
        finally:
            runner.close()

    early, started_early, late, started_late, stats = asyncio.run(scenario())
    assert (started_early, started_late) == (False, True)
    assert stats["fingerprinted_inline"] == 1  # said in the crawl's stats
    assert early.notes[-1] == f"read in process {os.getpid()}"
    assert re.fullmatch(r"read in process \d+", late.notes[-1])
    assert late.notes[-1] != early.notes[-1]
    assert late.fingerprint == early.fingerprint is not None


def test_a_large_page_that_comes_before_a_worker_has_started_waits_for_it(
    held_start: tuple[Path, FingerprintConfig], monkeypatch: Any
) -> None:
    """While the worker starts, a small page is read inline and a large one (a huge page
    would hold the reactor and its memory) waits for the worker; one that waits longer
    than WORKER_START_WAIT_SECS is read inline after all."""
    fifo, config = held_start
    small = (SITE / "harbour.html").read_bytes()
    large = _huge(2 * len(small))
    monkeypatch.setattr(workers, "STARTUP_INLINE_MAX_BYTES", len(large))

    async def scenario() -> tuple[Any, bool, Any, Any, dict[str, int]]:
        runner = FingerprintRunner(config, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            early_small = await runner.fingerprint(small, "text/html")
            waiting = asyncio.ensure_future(runner.fingerprint(large, "text/html"))
            for _ in range(20):  # the page cannot be answered while the worker is held
                await asyncio.sleep(0)
            held = waiting.done()
            monkeypatch.setattr(workers, "WORKER_START_WAIT_SECS", 0)
            given_up = await runner.fingerprint(large + b" ", "text/html")
            await asyncio.to_thread(fifo.write_bytes, b"")  # the worker's start-up goes on
            waited = await waiting
            return early_small, held, given_up, waited, runner.stats()
        finally:
            runner.close()

    early_small, held, given_up, waited, stats = asyncio.run(scenario())
    here = f"read in process {os.getpid()}"
    assert early_small.notes[-1] == here
    assert not held
    assert given_up.notes[-1] == here
    assert re.fullmatch(r"read in process \d+", waited.notes[-1])
    assert waited.notes[-1] != here
    assert stats["fingerprinted_inline"] == 2


def test_a_large_page_waiting_for_a_worker_is_read_inline_once_the_workers_close(
    held_start: tuple[Path, FingerprintConfig], monkeypatch: Any
) -> None:
    """Closing the workers (the crawl's end) lets a page that waits for one go on, read
    inline, rather than leave it to wait out WORKER_START_WAIT_SECS."""
    _, config = held_start  # the FIFO is never written: the worker never starts
    monkeypatch.setattr(workers, "STARTUP_INLINE_MAX_BYTES", 0)
    monkeypatch.setattr(workers, "WORKER_START_WAIT_SECS", 3600)
    monkeypatch.setattr(workers, "CLOSE_WAIT_SECS", 0)  # the held worker is killed at once
    body = (SITE / "harbour.html").read_bytes()

    async def scenario() -> Any:
        runner = FingerprintRunner(config, workers=1, inline_max_bytes=0)
        runner.start()
        waiting = asyncio.ensure_future(runner.fingerprint(body, "text/html"))
        await asyncio.sleep(0)  # the page is now waiting for the worker
        runner.close()
        return await waiting

    page = asyncio.run(scenario())
    assert page.notes[-1] == f"read in process {os.getpid()}"


# A crawl's main script: it notes each process that runs it, then fingerprints one page in
# a worker and prints where the page was read ({guard}: the script's last lines, indented).
MAIN_SCRIPT = """
import asyncio, os, sys
from pathlib import Path

with Path(sys.argv[1]).open("a") as ran:
    ran.write(f"{{__name__}} {{os.getpid()}}\\n")

from tests.unit.held_worker_start import extractor as extract


async def main():
    from scrapy_simhash.fingerprint import FingerprintConfig
    from scrapy_simhash.glue.workers import FingerprintRunner

    config = FingerprintConfig(tokenizer="rjieba", extractor=sys.argv[2])
    runner = FingerprintRunner(config, workers=1, inline_max_bytes=0)
    runner.start()
    try:
        await runner.wait_started()
        page = await runner.fingerprint(sys.stdin.buffer.read(), "text/html")
    finally:
        runner.close()
    print(page.notes[-1])


{guard}
    asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("extractor", "guarded", "runs_in_worker"),
    [
        ("tests.unit.held_worker_start.extractor", True, False),
        # Nor does a script that starts its crawl without `if __name__ == "__main__":`
        # start it again in each worker.
        ("tests.unit.held_worker_start.extractor", False, False),
        ("__main__.extract", True, True),
    ],
)
def test_workers_do_not_run_the_crawl_s_main_script(
    tmp_path: Path, extractor: str, guarded: bool, runs_in_worker: bool
) -> None:
    """A worker started by a "spawn" pool runs its parent's main script again; for
    ``scrapy crawl`` that imports Scrapy into every worker (35 MB, 0.2 s). Workers skip it,
    unless the extractor they must run is defined there."""
    script, ran = tmp_path / "crawl.py", tmp_path / "ran"
    script.write_text(
        MAIN_SCRIPT.format(guard='if __name__ == "__main__":' if guarded else "if True:")
    )
    done = subprocess.run(
        [sys.executable, str(script), str(ran), extractor],
        input=(SITE / "harbour.html").read_bytes(),
        capture_output=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    read_in = re.fullmatch(r"read in process (\d+)\n", done.stdout.decode())
    assert read_in is not None, done.stdout
    runs = dict(line.split() for line in ran.read_text().splitlines())
    crawl = int(runs.pop("__main__"))
    assert int(read_in[1]) != crawl  # the page was read in the worker
    assert runs == ({"__mp_main__": read_in[1]} if runs_in_worker else {})


def test_identical_bodies_are_fingerprinted_once() -> None:
    body = (SITE / "orchard.html").read_bytes()
    other = (SITE / "library.html").read_bytes()

    async def scenario() -> tuple[int, int, set[int | None]]:
        runner = FingerprintRunner(CONFIG, workers=0, inline_max_bytes=0, cache_size=1)
        same = await asyncio.gather(*(runner.fingerprint(body, "text/html") for _ in range(3)))
        concurrent_hits = runner.cache_hits
        await runner.fingerprint(other, "text/html")  # evicts the first body (size 1)
        await runner.fingerprint(body, "text/html")
        return concurrent_hits, runner.cache_hits, {page.fingerprint for page in same}

    concurrent_hits, hits, fingerprints = asyncio.run(scenario())
    assert concurrent_hits == 2  # three copies at once: one computation
    assert hits == 2  # evicted, so computed again
    assert len(fingerprints) == 1
    assert None not in fingerprints


def test_a_page_s_evidence_is_made_in_the_worker_and_comes_back_with_it() -> None:
    """The second test's text, its signature and the sketch of the page's lines are made
    where the page was read, not again in the crawl process."""
    body = (SITE / "harbour.html").read_bytes()

    async def scenario() -> Any:
        runner = FingerprintRunner(CONFIG, workers=1, inline_max_bytes=0)
        try:
            return await runner.fingerprint(body, "text/html", sign_key=0x5EED)
        finally:
            runner.close()

    page = asyncio.run(scenario())
    assert page.fingerprint is not None
    assert "evidence" in vars(page)
    assert page.evidence == Fingerprinter(CONFIG).fingerprint_page(body).evidence
    assert page.evidence.sketch != 0
    # Signed there too, under the key the crawl process passed.
    assert page.evidence.signed == (0x5EED, Signer(0x5EED).sign(page.evidence))
    # So are the hashes of its lines that its host's template memory counts.
    assert {"line_hashes", "main_line_hashes"} <= vars(page).keys()
    inline = Fingerprinter(CONFIG).fingerprint_page(body)
    assert (page.line_hashes, page.main_line_hashes) == (
        inline.line_hashes,
        inline.main_line_hashes,
    )
    assert len(page.line_hashes) >= len(page.main_line_hashes) > 0


def test_pages_larger_than_the_socket_takes_at_once_arrive_whole_and_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Several pages of megabytes sent at once through small socket buffers: each is
    written as the worker reads, and each reply answers its own page."""
    monkeypatch.setattr(workers, "_SOCKET_BUFFER_BYTES", 64 * 1024)
    config = replace(CONFIG, max_body_bytes=8_000_000)
    names = ("harbour.html", "school-gbk.html", "orchard.html", "library.html")
    bodies = [
        (SITE / name).read_bytes() + b"<!--" + bytes([65 + n]) * (1_000_000 * (n + 1)) + b"-->"
        for n, name in enumerate(names)
    ]

    async def scenario() -> tuple[list[Any], int]:
        runner = FingerprintRunner(config, workers=2, inline_max_bytes=0)
        runner.start()
        try:
            await runner.wait_started()
            sent = asyncio.gather(*(runner.fingerprint(b, "text/html") for b in bodies))
            pages = await asyncio.wait_for(sent, 60)
            return list(pages), runner.computed_inline
        finally:
            runner.close()

    pages, inline_count = asyncio.run(scenario())
    assert inline_count == 0
    inline = Fingerprinter(config)
    assert pages == [inline.fingerprint_page(b, content_type="text/html") for b in bodies]
    assert len({page.fingerprint for page in pages}) == len(bodies)


def test_a_page_given_up_leaves_the_next_reply_to_its_own_page() -> None:
    first, second = ((SITE / name).read_bytes() for name in ("harbour.html", "library.html"))

    async def scenario() -> Any:
        runner = FingerprintRunner(CONFIG, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            await runner.wait_started()
            given_up = asyncio.ensure_future(runner.fingerprint(first, "text/html"))
            kept = asyncio.ensure_future(runner.fingerprint(second, "text/html"))
            await asyncio.sleep(0)  # both sent
            given_up.cancel()
            return await kept
        finally:
            runner.close()

    page = asyncio.run(scenario())
    assert page == Fingerprinter(CONFIG).fingerprint_page(second, content_type="text/html")


def test_an_error_in_the_worker_is_raised_for_its_page_alone() -> None:
    config = replace(CONFIG, extractor="tests.unit.test_scrapy_workers.failing_extractor")
    good = (SITE / "harbour.html").read_bytes()
    bad = b"<html><body><p>fail here</p></body></html>"
    odd = b"<html><body><p>fail oddly</p></body></html>"

    async def scenario() -> tuple[list[Any], int, int]:
        runner = FingerprintRunner(config, workers=1, inline_max_bytes=0)
        try:
            pages = await asyncio.gather(
                *(runner.fingerprint(b, "text/html") for b in (good, bad, odd, good)),
                return_exceptions=True,
            )
            return list(pages), runner.computed_inline, len(runner.pids)
        finally:
            runner.close()

    (before, error, unreadable, after), inline_count, workers_left = asyncio.run(scenario())
    assert isinstance(error, ValueError)
    assert str(error) == f"cannot read a page of {len(bad)} bytes"
    # An error that cannot be loaded in the crawl process is still that page's alone.
    assert isinstance(unreadable, RuntimeError)
    assert "reply is unreadable" in str(unreadable)
    assert "this error cannot be loaded here" in str(unreadable)
    assert before == after == Fingerprinter(config).fingerprint_page(good, content_type="text/html")
    assert (inline_count, workers_left) == (0, 1)  # the worker read all four, and lives on


def test_a_worker_killed_mid_crawl_leaves_its_pages_to_the_crawl_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Killed (out of memory, by hand), the worker's pages are read inline: none is lost,
    and the crawl says so once."""
    bodies = [(SITE / name).read_bytes() for name in ("harbour.html", "library.html")]

    async def scenario() -> tuple[Any, list[Any], int, list[int]]:
        runner = FingerprintRunner(CONFIG, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            await runner.wait_started()
            first = await runner.fingerprint(bodies[0], "text/html")
            (pid,) = runner.pids
            os.kill(pid, signal.SIGKILL)
            later = await asyncio.gather(*(runner.fingerprint(b, "text/html") for b in bodies))
            return first, list(later), runner.computed_inline, runner.pids
        finally:
            runner.close()

    with caplog.at_level(logging.WARNING, logger="scrapy_simhash.glue.workers"):
        first, later, inline_count, pids = asyncio.run(scenario())
    inline = Fingerprinter(CONFIG)
    assert first == inline.fingerprint_page(bodies[0], content_type="text/html")
    assert later == [inline.fingerprint_page(b, content_type="text/html") for b in bodies]
    assert inline_count == 2
    assert pids == []
    warnings = [r.getMessage() for r in caplog.records if "worker exited" in r.getMessage()]
    assert warnings == [
        "a SimHash fingerprint worker exited (killed or out of memory?); fingerprinting "
        + "inline from now on"
    ]


def _ignored_signals(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.MULTILINE)[1], 16)  # type: ignore[index]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_worker_leaves_ctrl_c_to_the_crawl() -> None:
    """Scrapy's first Ctrl-C stops the crawl gracefully, its pages in flight still
    fingerprinted: the terminal's SIGINT must not kill the workers under it."""

    async def scenario() -> tuple[int, Any, int]:
        runner = FingerprintRunner(CONFIG, workers=1, inline_max_bytes=0)
        runner.start()
        try:
            await runner.wait_started()
            (pid,) = runner.pids
            ignored = _ignored_signals(pid)
            os.kill(pid, signal.SIGINT)
            page = await runner.fingerprint((SITE / "harbour.html").read_bytes(), "text/html")
            return ignored, page, runner.computed_inline
        finally:
            runner.close()

    ignored, page, inline_count = asyncio.run(scenario())
    assert ignored & (1 << (signal.SIGINT - 1))
    assert page.fingerprint is not None
    assert inline_count == 0  # read in the worker, which lived on
