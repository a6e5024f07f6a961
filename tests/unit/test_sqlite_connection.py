"""The embedded SQLite file: calls run in the event loop's thread while nothing stands in
the way, and in the connection's worker thread, in order, when they would wait; a call
waiting there holds up no other."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from scrapy_simhash import _sqlite
from scrapy_simhash._sqlite import SharedConnection
from scrapy_simhash.index import open_async_index
from scrapy_simhash.recrawl import open_async_recrawl_store


def _shared(tmp_path: Path) -> SharedConnection:
    connection = SharedConnection(str(tmp_path / "db.sqlite3"), timeout_secs=30)
    with connection.write() as db:
        db.execute("CREATE TABLE rows (n INTEGER)")
    return connection


def _insert(connection: SharedConnection, n: int, threads: list[tuple[int, int]]) -> None:
    threads.append((n, threading.get_ident()))
    with connection.write() as db:
        db.execute("INSERT INTO rows VALUES (?)", (n,))


def _rows(path: Path) -> list[int]:
    with sqlite3.connect(path) as db:
        return [n for (n,) in db.execute("SELECT n FROM rows ORDER BY rowid")]


def test_a_call_on_a_free_file_runs_in_the_loops_thread(tmp_path: Path) -> None:
    connection = _shared(tmp_path)
    threads: list[tuple[int, int]] = []

    async def scenario() -> None:
        await connection.run(_insert, connection, 1, threads)

    asyncio.run(scenario())
    connection.close()
    assert threads == [(1, threading.get_ident())]
    assert _rows(tmp_path / "db.sqlite3") == [1]


def test_calls_that_would_wait_for_another_writer_run_in_the_thread(tmp_path: Path) -> None:
    connection = _shared(tmp_path)
    other = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    threads: list[tuple[int, int]] = []

    async def scenario() -> None:
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        first = asyncio.ensure_future(connection.run(_insert, connection, 1, threads))
        await asyncio.sleep(0)
        # The loop runs on: the call went to the worker thread instead of waiting here.
        assert not first.done()
        second = asyncio.ensure_future(connection.run(_insert, connection, 2, threads))
        await asyncio.sleep(0)
        assert not second.done()  # tried here too, then sent to the thread
        other.execute("COMMIT")
        await asyncio.gather(first, second)
        await connection.run(_insert, connection, 3, threads)  # the file is free again

    asyncio.run(scenario())
    connection.close()
    other.close()
    main = threading.get_ident()
    attempts = {n: [thread for m, thread in threads if m == n] for n in (1, 2, 3)}
    worker = attempts[1][1]
    # Tried in the loop's thread first, the two that met the lock ran in the worker (the
    # second found the file held by the worker, or the write lock taken, before it began).
    assert attempts[1] == [main, worker]
    assert attempts[2] in ([worker], [main, worker])
    assert attempts[3] == [main]
    assert worker != main
    assert _rows(tmp_path / "db.sqlite3") == [1, 2, 3]  # the thread ran them in order


def test_a_call_runs_inline_while_an_earlier_one_waits_in_the_thread(tmp_path: Path) -> None:
    """No queueing behind a waiting call: in a busy crawl new calls came faster than the
    thread finished the queued ones, and every call went through the thread for good."""
    connection = _shared(tmp_path)
    threads: list[tuple[int, int]] = []
    busy, free = threading.Event(), threading.Event()
    held, release = threading.Event(), threading.Event()

    def hold_the_file() -> None:
        with _sqlite._file_lock(connection.path):
            held.set()
            release.wait(10)

    async def scenario() -> None:
        # The connection's thread is busy, so a call sent there stays queued.
        connection._thread().submit(lambda: (busy.set(), free.wait(10)))
        busy.wait(10)
        holder = threading.Thread(target=hold_the_file)
        holder.start()
        held.wait(10)
        first = asyncio.ensure_future(connection.run(_insert, connection, 1, threads))
        await asyncio.sleep(0)  # met the file held: sent to the thread
        release.set()
        holder.join(10)
        await asyncio.wait_for(connection.run(_insert, connection, 2, threads), 5)
        assert not first.done()
        assert _rows(tmp_path / "db.sqlite3") == [2]
        free.set()
        await asyncio.wait_for(first, 10)

    asyncio.run(scenario())
    connection.close()
    main = threading.get_ident()
    assert [n for n, thread in threads if thread == main] == [2]  # 1 met the file held
    assert [n for n, thread in threads if thread != main] == [1]
    assert _rows(tmp_path / "db.sqlite3") == [2, 1]


def test_an_error_that_is_not_a_lock_is_raised_not_retried(tmp_path: Path) -> None:
    connection = _shared(tmp_path)
    calls: list[int] = []

    def broken() -> None:
        calls.append(threading.get_ident())
        connection.db.execute("SELECT * FROM no_such_table")

    async def scenario() -> None:
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            await connection.run(broken)

    asyncio.run(scenario())
    connection.close()
    assert calls == [threading.get_ident()]


def test_the_write_ahead_log_is_checkpointed_in_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's own checkpoint (in a commit, with a sync of the disk) is off; the
    connection's thread checkpoints every CHECKPOINT_EVERY transactions, so the log stays
    small."""

    def wal_bytes_after_writes(every: int) -> int:
        monkeypatch.setattr(_sqlite, "CHECKPOINT_EVERY", every)
        path = tmp_path / f"every-{every}.sqlite3"
        connection = SharedConnection(str(path), timeout_secs=30)
        assert connection.db.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        with connection.write() as db:
            db.execute("CREATE TABLE rows (n INTEGER, pad BLOB)")
        for n in range(200):
            with connection.write() as db:
                db.execute("INSERT INTO rows VALUES (?, randomblob(3000))", (n,))
            connection._thread().submit(lambda: None).result()  # let a checkpoint finish
        size = Path(f"{path}-wal").stat().st_size
        connection.close()
        return size

    checkpointed = wal_bytes_after_writes(10)
    never = wal_bytes_after_writes(10**9)
    assert checkpointed * 5 < never


def test_a_pages_calls_run_inline_and_scans_in_a_thread(tmp_path: Path) -> None:
    """The index and the recrawl store of the embedded file, as a crawl opens them."""
    url = f"sqlite:///{tmp_path}/index.sqlite3"
    main = threading.get_ident()
    threads: dict[str, list[int]] = {}

    def spy(owner: object, name: str) -> None:
        original = getattr(owner, name)

        def call(*args: object) -> object:
            threads.setdefault(name, []).append(threading.get_ident())
            return original(*args)

        setattr(owner, name, call)

    async def scenario() -> None:
        index = await open_async_index(url)
        store = await open_async_recrawl_store(url)
        spy(index.backend.backend, "observe")  # type: ignore[attr-defined]
        spy(index.backend.backend, "count")  # type: ignore[attr-defined]
        spy(store._backend._backend, "update")  # type: ignore[attr-defined]
        spy(store._backend._backend, "count")  # type: ignore[attr-defined]
        assert (await index.observe("https://a.test/x", 12345)).stored
        assert (await store.observe("https://a.test/x", 12345)).visits == 1
        assert await index.count() == 1
        assert await store.count() == 1
        await index.close()
        await store.close()

    asyncio.run(scenario())
    assert threads["observe"] == [main]
    assert threads["update"] == [main]
    assert len(threads["count"]) == 2
    assert main not in threads["count"]


def test_commits_that_sync_the_disk_never_run_inline(tmp_path: Path) -> None:
    connection = SharedConnection(str(tmp_path / "db.sqlite3"), timeout_secs=30, synchronous="FULL")
    assert not connection.inline
    threads: list[tuple[int, int]] = []
    with connection.write() as db:
        db.execute("CREATE TABLE rows (n INTEGER)")

    async def scenario() -> None:
        await connection.run(_insert, connection, 1, threads)

    asyncio.run(scenario())
    connection.close()
    assert threads[0][1] != threading.get_ident()


def test_the_log_stays_small_while_pages_are_written_during_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint holds the file (index and recrawl store alike), so the writes of a
    busy crawl queue behind it; a log past WAL_LIMIT_BYTES is emptied. (Whether a passive
    checkpoint lets the next write restart the log depends on when each connection last
    read, so the bound asserted is the limit's, which does not.)"""
    monkeypatch.setattr(_sqlite, "CHECKPOINT_EVERY", 50)
    monkeypatch.setattr(_sqlite, "WAL_LIMIT_BYTES", 8 * 2**20)
    url = f"sqlite:///{tmp_path}/index.sqlite3"

    async def scenario() -> None:
        index = await open_async_index(url)
        store = await open_async_recrawl_store(url)
        for n in range(3000):
            await index.observe(f"https://a.test/{n}", (n * 0x9E3779B97F4A7C15) % 2**64)
            await store.observe(f"https://a.test/{n}", n)
        size = Path(f"{tmp_path}/index.sqlite3-wal").stat().st_size
        await index.close()
        await store.close()
        # Without checkpoints that hold the file, the log grew by ~30 KB a page (90 MB here).
        assert size < 16 * 2**20

    asyncio.run(scenario())


def test_a_call_after_close_says_the_file_is_closed(tmp_path: Path) -> None:
    connection = _shared(tmp_path)
    connection.close()
    threads: list[tuple[int, int]] = []
    with pytest.raises(sqlite3.ProgrammingError, match="is closed"):
        asyncio.run(connection.run(_insert, connection, 1, threads))
    assert threads == []
