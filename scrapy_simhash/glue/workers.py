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
slots and stall the crawl's first seconds. Pages of ``STARTUP_INLINE_MAX_BYTES`` or more wait
for it all the same (``WORKER_START_WAIT_SECS`` at most): read inline, one would hold the
reactor for a second and its memory.

Each worker is spoken to over a socket pair that the crawl's event loop reads and writes
itself, not through ``concurrent.futures``' process pool: that pool's two threads in the crawl
process (one feeding the pipe, one reading results) took the GIL from the reactor a dozen
times a page and cost more CPU than the page's own verdict.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import time
import types
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import xxhash

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter, PageFingerprint

logger = logging.getLogger(__name__)

_worker_fingerprinter: Fingerprinter | None = None

#: How often a worker checks that the crawl that started it is still alive (seconds).
PARENT_CHECK_SECS = 1.0


def _exit_with_parent(parent: int, interval: float) -> None:
    """End this worker once its parent is gone (SIGKILL of the crawl, an OOM kill).

    A worker waiting for a page finds its socket closed when the crawl is killed, but one
    inside a page (a huge one, a tokenizer that loops) would not look until it is done, and
    each worker (a tokenizer dictionary, ~100 MB) would live on. The orphan is re-parented,
    so a changed parent pid means the crawl is gone.
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


#: A request: the body's length and the header's (the pickled content type and signing
#: key), then the header, then the body's bytes as they are (never pickled: no copy of them).
_REQUEST = struct.Struct("!QI")
#: A reply: the length of what follows, a pickled ``(True, (page, cpu_secs))`` or
#: ``(False, exception)``; the first reply of a worker, a pickled None, says it is ready.
_REPLY = struct.Struct("!Q")
#: The socket buffers asked for, each way (the kernel's ``wmem_max``/``rmem_max`` cap them).
_SOCKET_BUFFER_BYTES = 4 * 1024 * 1024
#: The most the crawl process reads of a worker's socket at once.
_READ_BYTES = 256 * 1024
#: How long :meth:`FingerprintRunner.close` waits for a worker to finish its page.
CLOSE_WAIT_SECS = 30.0
#: While the workers start, a page this large or larger waits for one rather than being read
#: in the crawl process: a page of 5 MB held the reactor for a second or more there and took
#: 70-100 MB of its memory, where a page of the usual few hundred KB takes milliseconds.
STARTUP_INLINE_MAX_BYTES = 1_000_000
#: How long such a page waits for a worker to start; then it is read in the crawl process.
WORKER_START_WAIT_SECS = 10.0


def _received(sock: socket.socket, size: int) -> bytes | None:
    """Exactly ``size`` bytes from ``sock``; None once the other end is closed."""
    data = sock.recv(size, socket.MSG_WAITALL) if size else b""
    while len(data) < size:
        more = sock.recv(size - len(data), socket.MSG_WAITALL)
        if not more:
            return None
        data += more
    return data


def _reply(sock: socket.socket, reply: object) -> None:
    try:
        data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - an exception that does not pickle
        data = pickle.dumps((False, RuntimeError(f"in the fingerprint worker: {reply!r}: {exc}")))
    sock.sendall(_REPLY.pack(len(data)) + data)


def _serve(sock: socket.socket, config: FingerprintConfig, check_secs: float) -> None:
    """A worker's life: fingerprint each request in turn until the crawl closes its end
    (or is gone: the kernel closes it then).

    Ctrl-C reaches every process of the terminal's group. Scrapy's first one is a graceful
    stop that still fingerprints the pages in flight, so the worker leaves it to the crawl,
    which closes its socket when it is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init_worker(config, check_secs)
    with sock:
        _reply(sock, None)
        while True:
            head = _received(sock, _REQUEST.size)
            if head is None:
                return
            body_size, header_size = _REQUEST.unpack(head)
            header = _received(sock, header_size)
            body = _received(sock, body_size)
            if header is None or body is None:
                return
            content_type, sign_key = pickle.loads(header)
            try:
                reply: object = (True, _fingerprint_in_worker(body, content_type, sign_key))
            except Exception as exc:  # noqa: BLE001 - the crawl process logs it
                reply = (False, exc)
            _reply(sock, reply)


class WorkerLost(RuntimeError):
    """A fingerprint worker exited (killed, out of memory) or its socket broke."""


class _Worker:
    """One worker process and the crawl's end of its socket, read and written by the event
    loop: a request is sent as soon as the socket takes it, and replies come back in the
    order of the requests."""

    def __init__(
        self,
        process: Any,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        on_ready: Callable[[], None],
        on_lost: Callable[[_Worker], None],
    ) -> None:
        self.process = process
        self.sock = sock
        self.loop = loop
        self.ready = False
        self.lost = False
        #: Futures of the requests sent, in order; replies answer them in that order.
        self.pending: deque[asyncio.Future[Any]] = deque()
        self._on_ready = on_ready
        self._on_lost = on_lost
        self._outgoing: deque[memoryview] = deque()
        self._incoming = bytearray()
        # Read into one buffer, kept: a fresh one at each read would be mapped and unmapped.
        self._buffer = bytearray(_READ_BYTES)
        self._view = memoryview(self._buffer)
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._readable)

    def submit(
        self, body: bytes, content_type: str | None, sign_key: int | None
    ) -> asyncio.Future[Any]:
        if self.lost:
            raise WorkerLost("the fingerprint worker is gone")
        header = pickle.dumps((content_type, sign_key))
        future = self.loop.create_future()
        self.pending.append(future)
        self._outgoing.append(memoryview(_REQUEST.pack(len(body), len(header)) + header))
        self._outgoing.append(memoryview(body))
        if len(self._outgoing) == 2:  # nothing else was waiting to be written
            self._writable()
        return future

    def _writable(self) -> None:
        while self._outgoing:
            part = self._outgoing[0]
            try:
                sent = self.sock.send(part)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._lose(exc)
                return
            if sent < len(part):
                self._outgoing[0] = part[sent:]
                break
            self._outgoing.popleft()
        if self._outgoing:
            self.loop.add_writer(self.sock.fileno(), self._writable)
        else:
            self.loop.remove_writer(self.sock.fileno())

    def _readable(self) -> None:
        try:
            received = self.sock.recv_into(self._buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        if not received:
            self._lose(None)
            return
        incoming = self._incoming
        incoming += self._view[:received]
        while len(incoming) >= _REPLY.size:
            (size,) = _REPLY.unpack_from(incoming)
            end = _REPLY.size + size
            if len(incoming) < end:
                break
            try:
                with memoryview(incoming) as view:
                    reply = pickle.loads(view[_REPLY.size : end])
            except Exception as exc:  # noqa: BLE001 - what the worker sent cannot be made here
                reply = (
                    False,
                    RuntimeError(f"the fingerprint worker's reply is unreadable: {exc!r}"),
                )
            del incoming[:end]
            self._answer(reply)

    def _answer(self, reply: Any) -> None:
        if not self.ready:
            self.ready = True
            self._on_ready()
            return
        future = self.pending.popleft()
        if future.done():  # cancelled: its page was given up
            return
        ok, value = reply
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def _lose(self, exc: BaseException | None) -> None:
        """The worker is gone: every page sent to it is answered with :class:`WorkerLost`."""
        if self.lost:
            return
        self.detach()
        why = f": {exc}" if exc is not None else ""
        for future in self.pending:
            if not future.done():
                future.set_exception(WorkerLost(f"the fingerprint worker is gone{why}"))
        self.pending.clear()
        self._on_lost(self)

    def detach(self) -> None:
        """Stop reading and writing, and close the crawl's end: the worker, finding it
        closed, exits once its page is done."""
        self.lost = True
        if not self.loop.is_closed():
            self.loop.remove_reader(self.sock.fileno())
            self.loop.remove_writer(self.sock.fileno())
        self.sock.close()
        self._outgoing.clear()


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
        #: The workers running or starting; None until started (by :meth:`start` or the
        #: first page sent), then empty once every one is lost or closed.
        self._workers: list[_Worker] | None = None
        #: Set by :meth:`start`: until a worker says it is ready, pages go inline (see the
        #: module's docstring). Unset, the first page starts the workers and waits for one.
        self._started_ahead = False
        #: Done once a worker is ready, or none is left to become ready.
        self._ready: asyncio.Future[None] | None = None

    def start(self) -> None:
        """Start the workers now so their start-up overlaps the first downloads. Called in
        the event loop that will fingerprint the pages."""
        if self.workers > 0 and self._workers is None:
            self._started_ahead = True
            self._spawn(asyncio.get_running_loop())

    def _spawn(self, loop: asyncio.AbstractEventLoop) -> None:
        # "spawn" rather than fork: forking a process that runs a reactor, Redis
        # connections and threads is how deadlocks are made.
        context = multiprocessing.get_context("spawn")
        self._ready = loop.create_future()
        self._workers = []
        # An extractor of the main script's own is found there, so the workers need it.
        own_extractor = self.fingerprinter.config.extractor.startswith("__main__.")
        with nullcontext() if own_extractor else _main_script_hidden():
            for _ in range(self.workers):
                ours, theirs = socket.socketpair()
                # Room for a few pages in flight: a page is written in one call, and the
                # worker is not woken for each piece of it (the kernel caps the size asked).
                ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER_BYTES)
                theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCKET_BUFFER_BYTES)
                process = context.Process(
                    target=_serve,
                    args=(theirs, self.fingerprinter.config, PARENT_CHECK_SECS),
                    name="simhash-fingerprint",
                    daemon=True,
                )
                try:
                    process.start()
                finally:
                    theirs.close()  # the worker's end lives in the worker alone
                self._workers.append(_Worker(process, ours, loop, self._one_ready, self._lost))

    def _one_ready(self) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    def _lost(self, worker: _Worker) -> None:
        if self._workers is not None and worker in self._workers:
            self._workers.remove(worker)
        left = len(self._workers or ())
        logger.warning(
            "a SimHash fingerprint worker exited (killed or out of memory?); %s",
            f"{left} left" if left else "fingerprinting inline from now on",
        )
        if not left:
            self._one_ready()  # no worker will be: nothing waits for one

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers running or starting."""
        return [worker.process.pid for worker in self._workers or ()]

    @property
    def started(self) -> bool:
        """Whether pages go to the workers (one is ready, or none was started ahead)."""
        if not self._started_ahead:
            return True
        return any(worker.ready for worker in self._workers or ())

    async def wait_started(self) -> None:
        """Until a worker runs (or none is left to)."""
        if self._ready is not None:
            await asyncio.shield(self._ready)

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
        if self.workers <= 0 or len(body) < self.inline_max_bytes:
            return self._inline(body, content_type)
        if not self.started:
            if len(body) < STARTUP_INLINE_MAX_BYTES:
                return self._inline(body, content_type)
            # A worker slow to start, or stuck: the page is read here after all.
            with suppress(TimeoutError):
                await asyncio.wait_for(self.wait_started(), WORKER_START_WAIT_SECS)
            if not self.started:
                return self._inline(body, content_type)
        if self._workers is None:
            self._spawn(asyncio.get_running_loop())
        if not self._workers:  # every worker was lost
            return self._inline(body, content_type)
        worker = min(self._workers, key=lambda w: (not w.ready, len(w.pending)))
        try:
            page: PageFingerprint
            page, cpu_secs = await worker.submit(body, content_type, sign_key)
        except WorkerLost:
            return self._inline(body, content_type)
        self._count(cpu_secs)
        return page

    def close(self) -> None:
        """Stop the workers; pending pages are cancelled, a running one finishes first."""
        workers, self._workers = self._workers or [], []
        self._one_ready()  # a page waiting for a worker to start is read inline
        for worker in workers:
            for future in worker.pending:
                future.cancel()
            worker.detach()  # the worker reads the end of its socket once its page is done
        for worker in workers:
            worker.process.join(CLOSE_WAIT_SECS)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
