"""Fingerprint pages off the reactor thread.

Segmenting a large page with jieba takes tens of milliseconds of pure-Python CPU; done in the
reactor thread it stalls every download in flight. A process pool puts that work on another
core (threads would not: the tokenizers hold the GIL). Each worker builds its Fingerprinter
once, in the initializer. Small pages are cheaper to fingerprint inline than to ship to a
worker, so pages under ``inline_max_bytes`` never leave the reactor thread, and no page sends
more than ``SIMHASH_MAX_BODY_BYTES`` of its body (the rest is cut before). Byte-identical
bodies (URL variants, mirrors, session parameters) are fingerprinted once: a small LRU cache
keyed by a 128-bit body digest returns the earlier result.

A worker is a fresh interpreter: it takes 0.1 s or more to start. Pages that arrive before
one has started are fingerprinted inline: held for a worker, they would keep their download
slots and stall the crawl's first seconds.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING

import xxhash

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter, PageFingerprint

logger = logging.getLogger(__name__)

_worker_fingerprinter: Fingerprinter | None = None

#: How often a worker checks that the crawl that started it is still alive (seconds).
PARENT_CHECK_SECS = 1.0


def _exit_with_parent(parent: int, interval: float) -> None:
    """End this worker once its parent is gone (SIGKILL of the crawl, an OOM kill).

    A pool only stops its workers when the parent shuts it down; a parent killed outright
    never does, and each worker (a tokenizer dictionary, ~100 MB) would live on. The
    orphan is re-parented, so a changed parent pid means the crawl is gone.
    """
    while True:
        time.sleep(interval)
        if os.getppid() != parent:
            os._exit(0)


def _init_worker(config: FingerprintConfig, check_secs: float = PARENT_CHECK_SECS) -> None:
    global _worker_fingerprinter
    from scrapy_simhash.fingerprint import Fingerprinter

    threading.Thread(
        target=_exit_with_parent,
        args=(os.getppid(), check_secs),
        name="simhash-parent-watch",
        daemon=True,
    ).start()

    _worker_fingerprinter = Fingerprinter(config)
    # Load the tokenizer's dictionary now rather than inside the first page's time budget.
    _worker_fingerprinter.fingerprint_text("warm up the tokenizer 预热分词词典")


def _fingerprint_in_worker(
    body: bytes, content_type: str | None, sign_key: int | None
) -> tuple[PageFingerprint, float]:
    """Fingerprint in a worker; also return the CPU seconds it took there."""
    if _worker_fingerprinter is None:  # pragma: no cover - the initializer always runs first
        raise RuntimeError("worker not initialised")
    started = time.thread_time()
    page = _worker_fingerprinter.fingerprint_page(body, content_type=content_type)
    # Made here, not in the crawl process: they go with the page (cached on it).
    if page.fingerprint is not None:
        if sign_key:
            page.sign(sign_key)
        else:
            page.evidence  # noqa: B018
    page.line_hashes  # noqa: B018 - what its host's template memory counts
    page.main_line_hashes  # noqa: B018
    return page, time.thread_time() - started


def _noop() -> None:
    return None


@contextmanager
def _main_script_hidden() -> Iterator[None]:
    """Workers started inside do not run the crawl's main script again.

    A "spawn" child runs its parent's main script (as ``__mp_main__``) so that functions
    defined there can be unpickled. A worker runs only this package's functions (and an
    extractor named by import path); for ``scrapy crawl`` the script imports Scrapy and
    Twisted, which cost each worker about 0.2 s of CPU and 35 MB before its first page.
    The children read ``sys.modules["__main__"]`` while they are started, in this thread.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


class FingerprintRunner:
    """Fingerprint page bodies inline or in a worker pool, whichever keeps the reactor free."""

    def __init__(
        self,
        config: FingerprintConfig,
        *,
        workers: int,
        inline_max_bytes: int,
        cache_size: int = 0,
    ) -> None:
        from scrapy_simhash.fingerprint import Fingerprinter

        self.fingerprinter = Fingerprinter(config)
        self.workers = workers
        self.inline_max_bytes = inline_max_bytes
        self.cache_size = cache_size
        self.cache_hits = 0
        #: Bodies fingerprinted (not served from the cache) and the CPU seconds they took.
        self.computed = 0
        self.cpu_secs = 0.0
        #: Of them, read in this thread (small, or come before a worker had started).
        self.computed_inline = 0
        self._cache: OrderedDict[tuple[bytes, str | None], asyncio.Future[PageFingerprint]] = (
            OrderedDict()
        )
        self._pool: ProcessPoolExecutor | None = None
        #: Answered once a worker runs; None when no start was asked for (then pages wait
        #: for the pool to start one on demand).
        self._started: list[Future[None]] | None = None
        if workers > 0:
            # "spawn" rather than fork: forking a process that runs a reactor, Redis
            # connections and threads is how deadlocks are made.
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(config,),
            )

    def start(self) -> None:
        """Start the workers now so their start-up overlaps the first downloads."""
        if self._pool is not None:
            # An extractor of the main script's own is found there, so the workers need it.
            own_extractor = self.fingerprinter.config.extractor.startswith("__main__.")
            with nullcontext() if own_extractor else _main_script_hidden():
                self._started = [self._pool.submit(_noop) for _ in range(self.workers)]

    @property
    def started(self) -> bool:
        """Whether pages go to the workers (one has started, or none was started ahead)."""
        if self._started is None:
            return True
        if any(future.done() for future in self._started):
            self._started = None
            return True
        return False

    async def wait_started(self) -> None:
        """Until a worker runs (or has failed to start, which the next page finds out)."""
        if self._started is not None:
            await asyncio.wait(
                [asyncio.wrap_future(future) for future in self._started],
                return_when=asyncio.FIRST_COMPLETED,
            )

    async def fingerprint(
        self, body: bytes, content_type: str | None, sign_key: int | None = None
    ) -> PageFingerprint:
        """The page's fingerprint. A body over ``max_body_bytes`` is cut here, in the crawl
        process, before it is hashed for the cache or pickled to a worker: a decompression
        bomb must not be copied whole (1 GiB for a gzip of a few MB) to be cut there.
        ``sign_key``: the key the index holds now; a worker signs the page under it."""
        limit = self.fingerprinter.config.max_body_bytes
        if limit and len(body) > limit:
            page = await self._fingerprint(body[:limit], content_type, sign_key)
            # What the extractor says of a body it cuts itself.
            cut = replace(page, notes=(f"truncated to {limit} bytes", *page.notes))
            # With what the worker made of it (evidence, signature, line hashes).
            vars(cut).update({k: v for k, v in vars(page).items() if k not in vars(cut)})
            return cut
        return await self._fingerprint(body, content_type, sign_key)

    async def _fingerprint(
        self, body: bytes, content_type: str | None, sign_key: int | None
    ) -> PageFingerprint:
        if not self.cache_size:
            return await self._compute(body, content_type, sign_key)
        key = (xxhash.xxh3_128_digest(body), content_type)
        cached = self._cache.get(key)
        if cached is None:
            # Copies fetched at the same time share one computation.
            cached = asyncio.ensure_future(self._compute(body, content_type, sign_key))
            self._cache[key] = cached
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
            self.cache_hits += 1
        try:
            return await asyncio.shield(cached)
        except Exception:
            self._cache.pop(key, None)  # do not remember failures
            raise

    def _inline(self, body: bytes, content_type: str | None) -> PageFingerprint:
        self.computed_inline += 1
        started = time.thread_time()
        try:
            return self.fingerprinter.fingerprint_page(body, content_type=content_type)
        finally:
            self._count(time.thread_time() - started)

    def stats(self) -> dict[str, int]:
        """Body cache hits, the pages read in this thread though workers run, and the CPU
        time spent fingerprinting (reactor thread and workers), not wall time: wall time of
        concurrent pages overlaps and includes waiting for a worker."""
        stats = {"body_cache_hits": self.cache_hits} if self.cache_hits else {}
        if self.workers and self.computed_inline:
            stats["fingerprinted_inline"] = self.computed_inline
        if self.computed:
            total_us = int(self.cpu_secs * 1_000_000)
            stats["fingerprint_cpu_us"] = total_us
            stats["fingerprint_cpu_us_per_page"] = total_us // self.computed
        return stats

    def _count(self, cpu_secs: float) -> None:
        self.computed += 1
        self.cpu_secs += cpu_secs

    async def _compute(
        self, body: bytes, content_type: str | None, sign_key: int | None
    ) -> PageFingerprint:
        if self._pool is None or len(body) < self.inline_max_bytes or not self.started:
            return self._inline(body, content_type)
        loop = asyncio.get_running_loop()
        try:
            page, cpu_secs = await loop.run_in_executor(
                self._pool, _fingerprint_in_worker, body, content_type, sign_key
            )
        except BrokenProcessPool:
            logger.warning(
                "the SimHash worker pool died (killed or out of memory?); "
                "fingerprinting inline from now on"
            )
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            return self._inline(body, content_type)
        self._count(cpu_secs)
        return page

    def close(self) -> None:
        """Stop the workers; pending pages are cancelled, a running one finishes first."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
