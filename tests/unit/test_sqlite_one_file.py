"""One SQLite file, every store of a crawl: the index, the recrawl schedule, the hosts'
template memory and the URL rules keep their tables in the file the index URL names, so
they must write it under one locking scheme. Each takes the file's one lock of this
process before it asks SQLite for the write lock (a checkpoint, which holds that lock,
sees none of them write), each checks the file it opened is still the one at the path,
and the crawl opens each off its event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.dust.store import SqliteRuleStore
from scrapy_simhash.exceptions import IndexBackendError, StorageLost
from scrapy_simhash.index import open_async_index, open_index
from scrapy_simhash.recrawl import open_async_recrawl_store, open_recrawl_store
from scrapy_simhash.template.store import Count, SqliteTemplateStore

#: Writes per store; each store's writes run in a thread of their own, all at once.
WRITES = 300


def test_the_stores_of_one_file_never_meet_each_others_lock(tmp_path: Path) -> None:
    """A crawl-like sequence (a page filed in the index, its visit in the schedule, its
    lines in its host's memory, a rule's support) from four threads of one process, with a
    busy timeout of zero: a store that took SQLite's write lock outside the file's one lock
    would meet another's and fail with "database is locked" at once."""
    path = tmp_path / "crawl.sqlite3"
    url = f"sqlite:///{path}"
    index = open_index(url, namespace="ns", options={"timeout": 0})
    schedule = open_recrawl_store(url, namespace="ns", options={"timeout": 0})
    templates = SqliteTemplateStore(str(path), "ns", timeout_secs=0)
    rules = SqliteRuleStore(str(path), "ns", timeout_secs=0)
    failures: list[BaseException] = []

    def page(n: int) -> None:
        index.observe(f"http://news.example/{n}", n * 0x9E37_79B9_7F4A_7C15 % (1 << 64))

    def visit(n: int) -> None:
        schedule.observe(f"http://news.example/{n}", n)

    def lines(n: int) -> None:
        templates.record([Count("news.example", (n % 512, 7)), Count("news.example", (7,), True)])

    def rule(n: int) -> None:
        rules.support("news.example", "param:sid", f"/a?sid={n}", "/a")

    def writer(write: Callable[[int], None]) -> None:
        for n in range(WRITES):
            try:
                write(n)
            except Exception as exc:  # noqa: BLE001 - every failure is the test's finding
                failures.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in (page, visit, lines, rule)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [str(f) for f in failures] == []
        assert index.count() == WRITES
        assert schedule.count() == WRITES
        assert templates.read("news.example").seen_pages == WRITES
        assert rules.rules()[0].support > 0
    finally:
        for store in (index, schedule, templates, rules):
            store.close()


def test_a_deleted_file_is_said_by_the_rule_store(tmp_path: Path) -> None:
    """A file deleted under a running crawl: SQLite would go on writing to a file no one
    will open again; the rule store says so, as the index does, with StorageLost (an
    IndexBackendError, which the guard tells as a loss). The template store's case is
    in its contract (test_template_store_contract.py)."""
    path = tmp_path / "crawl.sqlite3"
    rules = SqliteRuleStore(str(path), "ns")
    try:
        rules.support("news.example", "param:sid", "/a?sid=1", "/a")
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            name.unlink(missing_ok=True)
        with pytest.raises(StorageLost, match="deleted or moved"):
            rules.support("news.example", "param:sid", "/b?sid=2", "/b")
        with pytest.raises(StorageLost):
            rules.rules()
        assert issubclass(StorageLost, IndexBackendError)
    finally:
        rules.close()


def test_a_loss_one_store_found_is_the_cause_every_store_of_the_file_gives(
    tmp_path: Path,
) -> None:
    """The template store finds the file deleted and its guard opens a new one at the
    path (SIMHASH_ON_INDEX_LOST = "continue"): the rule store, still on the deleted file,
    must say it was deleted, not that the new file replaced it; the new store works."""
    path = tmp_path / "crawl.sqlite3"
    templates = SqliteTemplateStore(str(path), "ns")
    rules = SqliteRuleStore(str(path), "ns")
    reopened: SqliteTemplateStore | None = None
    try:
        templates.see("news.example", [1])
        rules.support("news.example", "param:sid", "/a?sid=1", "/a")
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            name.unlink(missing_ok=True)
        with pytest.raises(StorageLost, match="deleted or moved"):
            templates.see("news.example", [2])
        reopened = SqliteTemplateStore(str(path), "ns")
        with pytest.raises(StorageLost, match="deleted or moved"):
            rules.support("news.example", "param:sid", "/b?sid=2", "/b")
        reopened.see("news.example", [3])
        assert reopened.read("news.example").seen_pages == 1
    finally:
        for store in (templates, rules, reopened):
            if store is not None:
                store.close()


@pytest.mark.parametrize("store", ["index", "recrawl"])
def test_a_store_opens_off_the_event_loop(store: str, tmp_path: Path) -> None:
    """Another process holds the file's write lock while the crawl opens a store (its
    tables created, in a write transaction). Opened off the loop (both openers are
    coroutines that open in a worker thread), the
    opening waits in a thread and the loop runs the task that lets the lock go; opened on
    the loop, that task could not run until the busy timeout gave up: "database is
    locked"."""
    path = tmp_path / "crawl.sqlite3"
    url = f"sqlite:///{path}"
    open_index(url, namespace="ns").close()  # the file exists, in WAL mode
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    ran: list[str] = []

    async def let_go() -> None:
        ran.append("the other task")
        other.execute("COMMIT")

    async def scenario() -> None:
        letting_go = asyncio.create_task(let_go())
        opened: Any
        if store == "index":
            opened = await open_async_index(url, namespace="ns", options={"timeout": 5})
        else:
            opened = await open_async_recrawl_store(url, namespace="ns", options={"timeout": 5})
        await letting_go
        await opened.close()

    try:
        asyncio.run(scenario())
    finally:
        other.close()
    assert ran == ["the other task"]
