"""A crawl scrapy-simhash cannot serve stops at start-up with one clear ERROR line.

Each case runs a real ``scrapy crawl`` of a small project in a child process, once with the
asyncio runner ``scrapy crawl`` uses by default and once with Twisted's (``CrawlerProcess``,
``FORCE_CRAWLER_PROCESS``, what scripts and older set-ups run). The log must hold the
message once, with no traceback, no "Task exception was never retrieved" (asyncio) and no
"Unhandled error in Deferred" (Twisted); the exit status says the crawl failed and no page
was fetched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.redis_servers import free_port
from tests.scrapy_runner import REPO

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

#: What a start-up failure must never bring along.
NOISE = ("Traceback", "Task exception was never retrieved", "Unhandled error in Deferred")

SPIDER = """
import scrapy


class One(scrapy.Spider):
    name = "one"

    def __init__(self, start: str = "", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        yield {"url": response.url}
"""


def project(root: Path) -> Path:
    """A Scrapy project with the add-on on and one spider, in ``root``."""
    package = root / "proj"
    (package / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = proj.settings\n")
    (package / "__init__.py").write_text("")
    (package / "spiders" / "__init__.py").write_text("")
    (package / "spiders" / "one.py").write_text(SPIDER)
    (package / "settings.py").write_text(
        'BOT_NAME = "proj"\nSPIDER_MODULES = ["proj.spiders"]\n'
        'ADDONS = {"scrapy_simhash.Addon": 0}\nTELNETCONSOLE_ENABLED = False\n'
        "SIMHASH_WORKERS = 0\n"
    )
    return root


def scrapy_crawl(root: Path, site: SiteServer, settings: dict[str, object]) -> tuple[int, str, str]:
    """``scrapy crawl one`` in ``root``: exit status, log file, standard error."""
    log = root / "crawl.log"
    args = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "one",
        "-a",
        f"start={site.url('harbour.html')}",
        "-s",
        f"LOG_FILE={log}",
    ]
    for name, value in settings.items():
        text = value if isinstance(value, str) else json.dumps(value)
        args += ["-s", f"{name}={text}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        args, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, log.read_text(errors="replace") if log.exists() else "", done.stderr


def broken_file(root: Path) -> str:
    path = root / "broken.sqlite3"
    path.write_bytes(b"a file that is no SQLite database at all\n" * 400)
    return f"sqlite:///{path}"


CASES = {
    # A Redis that does not answer: a mistyped port.
    "unreachable": (
        lambda root: {
            "SIMHASH_INDEX_URL": f"redis://127.0.0.1:{free_port()}/0",
            "SIMHASH_INDEX_OPTIONS": {"retries": 0},
        },
        "is not reachable at start-up",
    ),
    # A value inside SIMHASH_INDEX_OPTIONS: was a raw ValueError.
    "bad option": (
        lambda root: {
            "SIMHASH_INDEX_URL": f"redis://127.0.0.1:{free_port()}/0",
            "SIMHASH_INDEX_OPTIONS": {"retries": "many"},
        },
        (
            "the Redis client option 'retries' must be a whole number of at least 0, got "
            "'many'; fix SIMHASH_INDEX_OPTIONS"
        ),
    ),
    "unknown option": (
        lambda root: {
            "SIMHASH_INDEX_URL": f"redis://127.0.0.1:{free_port()}/0",
            "SIMHASH_INDEX_OPTIONS": {"retrys": 2},
        },
        "unknown Redis client option(s) 'retrys'",
    ),
    "bad sqlite option": (
        lambda root: {
            "SIMHASH_INDEX_URL": f"sqlite:///{root / 'index.sqlite3'}",
            "SIMHASH_INDEX_OPTIONS": {"timeout": "soon"},
        },
        "the SQLite option 'timeout' must be a number of seconds",
    ),
    # A damaged index file: also logged "Unhandled error in Deferred".
    "damaged file": (
        lambda root: {"SIMHASH_INDEX_URL": broken_file(root)},
        "is damaged or is not an SQLite database (file is not a database)",
    ),
    # A setting the add-on reads before any component is built.
    "bad setting": (
        lambda root: {"SIMHASH_FOLLOW_DUPLICATE_LINKS": "maybe"},
        "SIMHASH_FOLLOW_DUPLICATE_LINKS must be a boolean",
    ),
}


@pytest.mark.parametrize("runner", ["asyncio", "twisted"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_start_is_one_error_line(
    http_site: SiteServer, tmp_path: Path, case: str, runner: str
) -> None:
    root = project(tmp_path)
    make, said = CASES[case]
    settings = make(root)
    if runner == "twisted":
        settings["FORCE_CRAWLER_PROCESS"] = "True"
    status, log, stderr = scrapy_crawl(root, http_site, settings)
    assert status == 1, (log[-3000:], stderr[-3000:])
    lines = [line for line in log.splitlines() if "Crawl not started: " in line]
    assert len(lines) == 1, log[-3000:]
    assert "[scrapy_simhash] ERROR: Crawl not started: " in lines[0]
    assert said in lines[0]
    assert log.count(said) == 1, log[-3000:]
    for noise in NOISE:
        assert noise not in log, (noise, log[-3000:])
        assert noise not in stderr, (noise, stderr[-3000:])
    assert sum(http_site.hits.values()) == 0  # refused before any request
