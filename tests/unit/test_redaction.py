"""Passwords never reach a log line, an error, a stat or a command's output.

Every spelling redis-py accepts is tried against real failures: connections refused by a
loopback port where nothing listens, a unix socket that does not exist, a port that is not
a number. The property test generates the password.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scrapy.settings import Settings

from scrapy_simhash._redact import mask_url, scrub
from scrapy_simhash.cli import main as cli_main
from scrapy_simhash.exceptions import BackendUnavailable
from scrapy_simhash.glue.commands import SimhashCommand
from scrapy_simhash.glue.guard import Guarded
from scrapy_simhash.glue.wiring import validate_index
from scrapy_simhash.index import open_async_index, open_index
from tests.redis_servers import free_port

DEAD_PORT = free_port()


def spellings(password: str, port: int = DEAD_PORT) -> list[str]:
    """Every way redis-py takes a password, each pointing at a dead endpoint."""
    enc = quote(password, safe="")
    host = f"127.0.0.1:{port}"
    return [
        f"redis://:{enc}@{host}/0",
        f"redis://user:{enc}@{host}/0",
        f"redis://{host}/0?password={enc}",
        f"redis://{host}/0?username=user&password={enc}",
        f"redis://user@{host}/0?db=0&password={enc}",
        f"unix:///tmp/no-such-dir-simhash/redis.sock?password={enc}&db=0",
        f"rediss://:{enc}@{host}/0",
        f"redis+cluster://:{enc}@{host}/0",
        f"rediss+cluster://user:{enc}@{host}/0?password={enc}",
        f"redis://:{enc}@127.0.0.1:notaport/0",
    ]


@pytest.mark.parametrize("url", spellings("s3cr3t-Pa55"))
def test_every_spelling_is_masked(url: str) -> None:
    masked = mask_url(url)
    assert "s3cr3t-Pa55" not in masked
    assert "***" in masked
    assert "127.0.0.1" in masked or "redis.sock" in masked


def test_mask_never_raises_and_keeps_user_names() -> None:
    assert (
        mask_url("redis://bob:pw@db.example:notaport/0") == "redis://bob:***@db.example:notaport/0"
    )
    assert mask_url("redis://[::1/0?password=x") == "redis://[::1/0?password=***"
    assert mask_url("redis://db.example/0") == "redis://db.example/0"


def test_a_short_password_is_not_masked_inside_other_words() -> None:
    url = "redis://:e@db.example/0"
    text = f"Error connecting to {url}: the server sent e"
    assert scrub(text, url) == "Error connecting to redis://:***@db.example/0: the server sent ***"
    assert "conn***cting" not in scrub("connecting", url)
    # Edges that are not word characters need no word boundary; long passwords go anywhere.
    assert scrub("a-x-b", "redis://:-x-@db.example/0") == "a***b"
    assert scrub("xhunter2222y", "redis://:hunter2222@db.example/0") == "x***y"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextlib.contextmanager
def _captured_logs() -> Iterator[_Collect]:
    handler = _Collect()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("scrapy_simhash")
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def _everything_said_about(url: str, tmp: Path) -> str:
    """Log lines, errors (with tracebacks), counters and command output for a failing URL."""
    said: list[str] = [mask_url(url)]
    errors = 0

    def count() -> None:
        nonlocal errors
        errors += 1

    def attempt(step: Callable[[], object]) -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - whatever it is, its text is checked
            said.append("".join(traceback.format_exception(exc)))

    with _captured_logs() as logs:
        attempt(lambda: open_index(url, options={"retries": 0}).close())
        attempt(lambda: validate_index(url, {"options": {"retries": 0}}))

        async def opener() -> object:
            return await open_async_index(url, options={"retries": 0})

        async def scenario() -> None:
            guard = Guarded(
                "SimHash index",
                url,
                opener,
                timeout=5,
                retry_after=0,
                log_interval=0,
                on_error=count,
            )
            for _ in range(2):
                with contextlib.suppress(BackendUnavailable):
                    await guard.call(lambda index: index.observe("a", 1))
            await guard.aclose()

        attempt(lambda: asyncio.run(scenario()))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli_main(["due", "--index-url", url, "-s", 'SIMHASH_INDEX_OPTIONS={"retries": 0}'])
            store = f"sqlite:///{tmp / 'recrawl.db'}"
            (tmp / "urls.txt").write_text("https://example.com/a\n")
            cli_main(["due", "--index-url", store, "--add", str(tmp / "urls.txt")])
            cli_main(["due", "--index-url", store, "--push-redis-key", "k", "--redis", url])
            attempt(lambda: _scrapy_simhash_stats(url))
        said += [out.getvalue(), err.getvalue(), f"simhash/index_error={errors}"]
    said += logs.lines
    return "\n".join(said)


def _scrapy_simhash_stats(url: str) -> None:
    """``scrapy simhash stats`` in this process, on ``url``."""
    command = SimhashCommand()
    command.settings = Settings(SimhashCommand.default_settings)
    parser = argparse.ArgumentParser()
    command.add_options(parser)
    opts, positional = parser.parse_known_args(
        [
            "stats",
            "--spider",
            "pages",
            "-s",
            f"SIMHASH_INDEX_URL={url}",
            "-s",
            'SIMHASH_INDEX_OPTIONS={"retries": 0}',
        ]
    )
    command.process_options(positional, opts)
    command.run(positional, opts)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    password=st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
        min_size=8,
        max_size=24,
    ),
    which=st.integers(min_value=0, max_value=len(spellings("x")) - 1),
)
def test_a_generated_password_never_appears(password: str, which: int, tmp_path: Path) -> None:
    forms = {password, quote(password, safe=""), quote(password)}
    # Text that is said whatever the password (a module path in a traceback, such as
    # "scrapy_s" in ".../scrapy_simhash/...") is no leak: such passwords are skipped.
    baseline = _baseline(which, tmp_path)
    assume(not any(form in baseline for form in forms))
    url = spellings(password)[which]
    said = _everything_said_about(url, tmp_path)
    assert "***" in said
    for form in forms:
        assert form not in said, (form, said[:3000])


_BASELINES: dict[int, str] = {}


def _baseline(which: int, tmp_path: Path) -> str:
    """What is said about the same spelling with a password that appears nowhere else."""
    if which not in _BASELINES:
        _BASELINES[which] = _everything_said_about(spellings("Zq9sentinelQ")[which], tmp_path)
    return _BASELINES[which]
