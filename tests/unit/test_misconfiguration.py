"""Permanent misconfiguration is told apart from an outage, against real servers and files;
settings that cannot be read name themselves; bad keys fail one call on every backend; the
index's configuration record survives a Redis restart without persistence; a locked SQLite
file says so; fingerprint workers do not outlive their crawl.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from scrapy_simhash.exceptions import (
    ConfigurationError,
    IndexBackendError,
    IndexMismatchError,
    InvalidKeyError,
)
from scrapy_simhash.glue.guard import Guarded
from scrapy_simhash.glue.wiring import guarded_index, validate_index
from scrapy_simhash.index import open_async_index, open_index
from scrapy_simhash.index.keys import MAX_KEY_CHARS, index_key
from scrapy_simhash.settings import KNOWN_SETTINGS, MiddlewareConfig, index_kwargs, unknown_settings
from tests.conftest import backend_params, backend_url
from tests.redis_servers import RedisServer, free_port
from tests.scrapy_runner import REPO

NO_RETRY = {"options": {"retries": 0}}


# -- permanent failures stop the crawl at start-up ------------------------------------------


@pytest.mark.redis
def test_wrong_password_and_missing_database_are_not_outages(own_redis: RedisServer) -> None:
    client = redis.Redis.from_url(own_redis.url)
    client.config_set("requirepass", "right")
    client.close()
    port = own_redis.port
    for url, reason in [
        (f"redis://:wrong@127.0.0.1:{port}/0", "authentication failed"),
        (f"redis://127.0.0.1:{port}/0", "authentication failed"),
        (f"redis://:right@127.0.0.1:{port}/99", "database number in the URL does not exist"),
    ]:
        with pytest.raises(ConfigurationError, match=reason) as caught:
            validate_index(url, NO_RETRY)
        assert "SIMHASH_INDEX_URL" in str(caught.value)
        assert "wrong" not in str(caught.value)
    validate_index(f"redis://:right@127.0.0.1:{port}/0", NO_RETRY)  # the right one works


@pytest.mark.redis
def test_a_read_only_replica_is_not_an_outage(own_redis: RedisServer) -> None:
    client = redis.Redis.from_url(own_redis.url)
    client.replicaof("127.0.0.1", free_port())  # a master that never answers
    client.close()
    with pytest.raises(ConfigurationError, match="read-only replica"):
        validate_index(own_redis.url, NO_RETRY)


def test_a_server_that_never_answered_refuses_unless_told_to_start_anyway(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A mistyped port looks like an outage that never ends: by default the crawl refuses,
    SIMHASH_INDEX_START_UNREACHABLE starts it and the guard retries."""
    url = f"redis://:pw-secret-2@127.0.0.1:{free_port()}/0"
    with pytest.raises(ConfigurationError, match="not reachable at start-up") as caught:
        validate_index(url, NO_RETRY)
    message = str(caught.value)
    assert "Error 111" in message
    assert "SIMHASH_INDEX_URL" in message
    assert "SIMHASH_INDEX_START_UNREACHABLE = True" in message
    assert "pw-secret-2" not in message
    assert message.count("127.0.0.1") == 2  # the URL once, and redis-py's own words
    with caplog.at_level(logging.WARNING):
        validate_index(url, NO_RETRY, start_unreachable=True)
    assert "not reachable at start-up" in caplog.text
    assert "starting anyway (SIMHASH_INDEX_START_UNREACHABLE)" in caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.redis
def test_urls_that_cannot_be_read_name_the_setting(own_redis: RedisServer) -> None:
    """A database that is not a number would silently be database 0 of a server that
    answers; a missing bracket was a bare ValueError. Neither shows the password."""
    server = f"pw-secret-1@127.0.0.1:{own_redis.port}"
    for url, reason in [
        (f"redis://:{server}/x", "the database 'x' in the path is not a number"),
        (f"redis+cluster://:{server}/x", "the database 'x' in the path is not a number"),
        (f"redis://:{server}/1/2", "the database '1/2' in the path is not a number"),
        ("redis://:pw-secret-1@[::1:6379/0", "Invalid IPv6 URL"),
    ]:
        with pytest.raises(ConfigurationError, match=reason) as caught:
            validate_index(url, NO_RETRY)
        with pytest.raises(ConfigurationError, match=reason) as caught_async:
            asyncio.run(open_async_index(url, **NO_RETRY))
        # The crawl's words, and the core's (open_async_index's ``url``).
        assert "SIMHASH_INDEX_URL" in str(caught.value)
        assert "`url`" in str(caught_async.value)
        for message in (str(caught.value), str(caught_async.value)):
            assert "pw-secret-1" not in message
    validate_index(f"redis://127.0.0.1:{own_redis.port}/3", NO_RETRY)  # a number is fine


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """Make ``directory`` unwritable, for root too (the immutable attribute)."""
    directory.chmod(0o555)
    immutable = os.geteuid() == 0
    if immutable:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


def test_a_read_only_index_directory_is_not_an_outage(tmp_path: Path) -> None:
    directory = tmp_path / "readonly"
    directory.mkdir()
    with read_only(directory):
        for path in (directory / "index.sqlite3", directory / "sub" / "index.sqlite3"):
            with pytest.raises(ConfigurationError, match="cannot be"):
                validate_index(f"sqlite:///{path}", {})


def _damaged(path: Path, how: str) -> None:
    """A real index file, then damaged as a disk, a copy or a person damages one."""
    if how == "not a database":
        path.write_bytes(b"a file that is no SQLite database at all\n" * 400)
        return
    with open_index(f"sqlite:///{path}", namespace="n") as index:
        for i in range(3000):
            index.observe(f"https://a.example/{i}", (i * 0x9E3779B97F4A7C15) & (2**64 - 1))
    assert not Path(f"{path}-wal").exists()
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.truncate(size // 2)  # a copy cut short


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("not a database", "file is not a database"),
        ("truncated", "database disk image is malformed"),
    ],
)
def test_a_damaged_sqlite_file_is_not_an_outage(tmp_path: Path, how: str, said: str) -> None:
    path = tmp_path / "index.sqlite3"
    _damaged(path, how)
    url = f"sqlite:///{path}"
    for kwargs in ({"namespace": "n"}, {"namespace": "n", "reset": True}):
        # Refused even with SIMHASH_INDEX_START_UNREACHABLE: waiting mends no file.
        with pytest.raises(ConfigurationError, match=said) as caught:
            validate_index(url, kwargs, start_unreachable=True)
        message = str(caught.value)
        assert str(path) in message
        assert "Move it away" in message
        assert "delete" in message
        assert "SIMHASH_INDEX_URL" in message


def test_an_index_file_of_0_2_0_is_refused_never_misread(tmp_path: Path) -> None:
    """0.2.0 named URLs in its band rows (tables simhash_entries, simhash_bands): such a
    file is refused at open with what to do, and left as it is."""
    path = tmp_path / "index.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE simhash_entries (ns INTEGER NOT NULL, key TEXT NOT NULL, fp BLOB NOT "
        "NULL, seen INTEGER NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID;"
        "INSERT INTO simhash_entries VALUES (1, 'https://a.test/', x'0102030405060708', 1);"
    )
    db.commit()
    db.close()
    with pytest.raises(ConfigurationError, match=r"0\.2\.0's layout") as caught:
        validate_index(f"sqlite:///{path}", {"namespace": "n"}, start_unreachable=True)
    message = str(caught.value)
    assert str(path) in message
    assert "delete the file" in message
    assert "SIMHASH_INDEX_URL" in message
    db = sqlite3.connect(path)
    assert db.execute("SELECT key FROM simhash_entries").fetchall() == [("https://a.test/",)]
    db.close()


def test_a_sqlite_file_found_damaged_mid_crawl_is_unusable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Found on reopening after an outage, say: the page goes to the mismatch policy (the
    spider is closed by default), and the guard does not try the file again."""
    path = tmp_path / "index.sqlite3"
    _damaged(path, "truncated")
    url = f"sqlite:///{path}"
    errors: list[int] = []
    opened: list[int] = []

    async def opener() -> object:
        opened.append(1)
        return await open_async_index(url, namespace="n")

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index",
            url,
            opener,
            timeout=5,
            retry_after=0,
            log_interval=60,
            on_error=lambda: errors.append(1),
        )
        for _ in range(2):
            with pytest.raises(ConfigurationError, match="database disk image is malformed"):
                await guard.call(lambda index: index.observe("a", 1))
        await guard.aclose()

    with caplog.at_level(logging.ERROR, logger="scrapy_simhash.glue.guard"):
        asyncio.run(scenario())
    assert (len(opened), len(errors)) == (1, 0)
    (message,) = [r.getMessage() for r in caplog.records]
    assert str(path) in message
    assert "Traceback" not in message


# -- settings --------------------------------------------------------------------------------


def test_malformed_list_settings_name_themselves() -> None:
    with pytest.raises(ConfigurationError, match="SIMHASH_CONTENT_TYPES must be a JSON list"):
        MiddlewareConfig.from_settings({"SIMHASH_CONTENT_TYPES": "[bad"})
    with pytest.raises(ConfigurationError, match="SIMHASH_CONTENT_TYPES must be a list"):
        MiddlewareConfig.from_settings({"SIMHASH_CONTENT_TYPES": 5})
    config = MiddlewareConfig.from_settings({"SIMHASH_CONTENT_TYPES": '["text/html"]'})
    assert config.content_types == ("text/html",)


def test_misspelt_settings_are_named_with_the_closest_one() -> None:
    messages = unknown_settings(
        ["SIMHASH_MAX_DISTANSE", "SIMHASH_INDEX_URL", "simhash_workers", "SIMHASH_ZZZ", "OTHER"]
    )
    assert messages == [
        "unknown setting SIMHASH_MAX_DISTANSE is ignored; did you mean SIMHASH_MAX_DISTANCE?",
        "unknown setting SIMHASH_ZZZ is ignored",
        "unknown setting simhash_workers is ignored; did you mean SIMHASH_WORKERS?",
    ]


def test_the_command_line_names_misspelt_settings_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-s of scrapy-simhash, and the project's settings under scrapy simhash, as a crawl."""
    from scrapy.settings import Settings

    from scrapy_simhash.cli import main
    from scrapy_simhash.recrawl import open_recrawl_store

    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    with open_recrawl_store(url) as store:
        store.add(["http://a/1"])
    assert main(["due", "--index-url", url, "-s", "SIMHASH_MAX_DISTANSE=2"]) == 0
    warning = (
        "scrapy-simhash: warning: unknown setting SIMHASH_MAX_DISTANSE is ignored; did you "
        "mean SIMHASH_MAX_DISTANCE?"
    )
    assert warning in capsys.readouterr().err.splitlines()
    project = Settings({"SIMHASH_RECRAWL_BUDGET_PER_DAI": 10, "SIMHASH_INDEX_URL": url})
    assert (
        main(["due", "--namespace", "default"], project_settings=project, prog="scrapy simhash")
        == 0
    )
    warning = (
        "scrapy simhash: warning: unknown setting SIMHASH_RECRAWL_BUDGET_PER_DAI is ignored; did "
        "you mean SIMHASH_RECRAWL_BUDGET_PER_DAY?"
    )
    assert capsys.readouterr().err.splitlines() == [warning]
    assert main(["due", "--index-url", url, "-s", "SIMHASH_MAX_DISTANCE=2"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_command_whose_store_is_unreachable_says_what_to_check() -> None:
    """A one-shot command gets no next call: it says what to check, exit status 1."""
    url = RedisServer(Path("never-started")).url
    for command in (["stats"], ["due"], ["rules"], ["lookup", "http://a/1"]):
        result = subprocess.run(
            [sys.executable, "-m", "scrapy_simhash", *command, "--index-url", url],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 1, (command, result.stderr)
        assert result.stdout == ""
        assert "reconnects" not in result.stderr
        assert "Connection refused" in result.stderr or "ConnectionError" in result.stderr
        assert result.stderr.splitlines()[-1] == (
            "scrapy-simhash: the store did not answer: check that its server is running and "
            "reachable from here, and that the URL is right (--index-url or SIMHASH_INDEX_URL: "
            "host, port, database number, password)"
        ), command


def test_known_settings_are_the_readme_settings_and_those_the_code_reads() -> None:
    readme = (REPO / "README.md").read_text()
    documented = set(re.findall(r"^\| `(SIMHASH_[A-Z0-9_]+)`", readme, re.MULTILINE))
    assert documented == KNOWN_SETTINGS
    read = {
        name
        for path in (REPO / "scrapy_simhash").rglob("*.py")
        for name in re.findall(r"\"(SIMHASH_[A-Z0-9_]*[A-Z0-9])\"", path.read_text())
    }
    assert read <= KNOWN_SETTINGS


# -- keys ------------------------------------------------------------------------------------


@pytest.fixture(params=backend_params(["memory", "sqlite", "redis", "cluster"]))
def index_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def test_a_bad_key_fails_one_call_alike_on_every_backend(index_url: str) -> None:
    errors: list[int] = []

    async def scenario() -> None:
        guard = Guarded(
            "SimHash index",
            index_url,
            lambda: open_async_index(index_url, namespace="keys"),
            timeout=5,
            retry_after=60,
            log_interval=60,
            on_error=lambda: errors.append(1),
        )
        with pytest.raises(InvalidKeyError, match="valid Unicode"):
            await guard.call(lambda index: index.observe("https://a.example/\ud800", 1))
        # Not an outage: the next page is checked at once.
        observation = await guard.call(lambda index: index.observe("https://a.example/", 1))
        assert observation.stored
        await guard.aclose()

    asyncio.run(scenario())
    assert errors == []


def test_long_keys_are_stored_hashed() -> None:
    long_a = "https://a.example/?" + "x" * 1_000_000
    long_b = long_a + "y"
    stored_a, stored_b = index_key(long_a), index_key(long_b)
    assert len(stored_a) == MAX_KEY_CHARS
    assert stored_a != stored_b
    assert stored_a.startswith("https://a.example/?xxx")
    assert index_key("https://a.example/") == "https://a.example/"
    with open_index("memory://") as index:
        index.observe(stored_a, 1)
        assert index.get(stored_a) == 1


# -- the configuration record ----------------------------------------------------------------


def test_ttl_is_part_of_the_recorded_configuration(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    open_index(url, ttl_secs=3600).close()
    with pytest.raises(IndexMismatchError, match="TTL 3600s"):
        open_index(url)
    open_index(url, ttl_secs=3600).close()


@pytest.mark.redis
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_record_is_written_back_after_a_restart_without_persistence(
    own_redis: RedisServer, asynchronous: bool
) -> None:
    url = own_redis.url

    async def observe_after_restart() -> None:
        index = await open_async_index(url, namespace="n", bits=64)
        await index.observe("a", 1)
        own_redis.stop()
        own_redis.start()  # no persistence: everything is gone, the record too
        # The pooled connection died with the server: one outage error, then it reconnects.
        with contextlib.suppress(IndexBackendError):
            await index.observe("b", 1 << 40)
        assert (await index.observe("b", 1 << 40)).stored
        await index.close()

    if asynchronous:
        asyncio.run(observe_after_restart())
    else:
        with open_index(url, namespace="n", bits=64) as index:
            index.observe("a", 1)
            own_redis.stop()
            own_redis.start()
            assert index.observe("b", 1 << 40).stored
    with pytest.raises(IndexMismatchError, match="bits 64 \\(now 128\\)"):
        open_index(url, namespace="n", bits=128)


@pytest.mark.redis
def test_a_process_finding_another_record_written_meanwhile_refuses(
    own_redis: RedisServer,
) -> None:
    with open_index(own_redis.url, namespace="n", bits=64) as index:
        index.observe("a", 1)
        own_redis.stop()
        own_redis.start()
        open_index(own_redis.url, namespace="n", bits=128).close()  # first after the restart
        with pytest.raises(IndexMismatchError):
            index.observe("b", 2)


# -- a locked SQLite file --------------------------------------------------------------------


def test_a_locked_sqlite_file_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    settings = {"SIMHASH_INDEX_URL": url, "SIMHASH_INDEX_TIMEOUT_SECS": 0.3}
    config = MiddlewareConfig.from_settings(settings).guard
    kwargs = index_kwargs(settings, namespace="locked", bits=64, scheme="")
    validate_index(url, kwargs)
    holder = sqlite3.connect(str(tmp_path / "index.sqlite3"), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")

    async def scenario() -> None:
        guard = guarded_index(url, kwargs, config, lambda: None)
        for _ in range(2):
            with contextlib.suppress(Exception):
                await guard.call(lambda index: index.observe("a", 1))
        await guard.aclose()

    try:
        with caplog.at_level(logging.ERROR, logger="scrapy_simhash.glue.guard"):
            asyncio.run(scenario())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    first = caplog.records[0].getMessage()
    assert "database is locked" in first
    assert "SIMHASH_INDEX_TIMEOUT_SECS" in first


# -- fingerprint workers ---------------------------------------------------------------------

_PARENT = """
import sys
from scrapy_simhash.glue.workers import FingerprintRunner
from scrapy_simhash.fingerprint import FingerprintConfig
import asyncio
if __name__ == "__main__":
    runner = FingerprintRunner(FingerprintConfig(tokenizer="rjieba"), workers=1,
                               inline_max_bytes=0)
    page = b"<html><body><p>" + b"words of a page " * 200 + b"</p></body></html>"
    asyncio.run(runner.fingerprint(page, "text/html"))
    print(*runner.pids, flush=True)
    sys.stdin.read()
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in "ZX"


def test_workers_exit_when_the_crawl_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        text=True,
    )
    assert parent.stdout is not None
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert workers
    assert all(_alive(pid) for pid in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def test_the_minimum_scrapy_is_declared_once() -> None:
    from scrapy_simhash.glue.wiring import MIN_SCRAPY

    setup = (REPO / "setup.cfg").read_text()
    assert f"Scrapy>={'.'.join(map(str, MIN_SCRAPY))}\n" in setup
