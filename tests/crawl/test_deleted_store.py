"""The embedded SQLite file changed under a running crawl.

Deleted (a cleanup job, an ``rm -rf .scrapy``): SQLite goes on writing to the file it
opened, which no one will open again, so the crawl used to finish "finished" while the next
one started empty. It must say so at ERROR, with what was lost, and go on with a new file
(``SIMHASH_ON_INDEX_LOST = "continue"``) or stop (``"close"``).

Made immutable (``chattr +i``) with its ``-wal`` and ``-shm`` files: SQLite writes the
``-shm`` file through a memory map, and writing a page the kernel no longer lets anyone
change killed the process with SIGBUS and no line in any log. It must be an outage named
in the log instead, and the process must end normally.

Every test is a real crawl in a child process (tests/scrapy_runner.py) of the local test
site, the file changed by the site itself just before it answers a given page, so the
change lands at a known point of the crawl without sleeping.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.scrapy_runner import ONE_AT_A_TIME, CrawlResult, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

BASE = ONE_AT_A_TIME
#: harbour and orchard are filed; the file goes just before telescope is answered; their
#: copies come after it, then a third harbour (a URL variant), a copy of the second.
PAGES = [
    "harbour.html",
    "orchard.html",
    "telescope.html",
    "harbour-copy.html",
    "orchard-print.html",
    "v/again/harbour.html",
    "library.html",
]


def crawl(site: SiteServer, tmp: Path, path: Path, **settings: Any) -> CrawlResult:
    requests = [{"url": site.url(p)} for p in PAGES]
    return run_crawl(
        tmp,
        {
            "requests": requests,
            "settings": {
                **BASE,
                "SIMHASH_INDEX_URL": f"sqlite:///{path}",
                **settings,
            },
        },
    )


def files(path: Path) -> list[Path]:
    return [path, Path(f"{path}-wal"), Path(f"{path}-shm")]


def delete(path: Path) -> None:
    for file in files(path):
        file.unlink(missing_ok=True)


def pages_in(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM simhash_index_entries").fetchone()[0])
    finally:
        db.close()


def lost_lines(result: CrawlResult) -> list[str]:
    return [line for line in result.log.splitlines() if "lost namespace" in line]


def test_a_deleted_index_file_is_said_and_the_crawl_goes_on_with_a_new_one(
    http_site: SiteServer, tmp_path: Path
) -> None:
    path = tmp_path / "index.sqlite3"
    http_site.hooks["/telescope.html"] = lambda: delete(path)
    result = crawl(http_site, tmp_path, path)
    assert result.stats["finish_reason"] == "finished"
    (line,) = lost_lines(result)
    assert "ERROR" in line
    assert (
        f"lost namespace 'pages' mid-crawl: the SQLite file {path} was deleted or moved "
        "while the crawl had it open"
    ) in line
    assert (
        "Lost: the fingerprints of the pages kept (2 of them by this crawl process), the "
        "drop records, the recrawl schedule, the hosts' templates, and every other "
        "namespace that file held"
    ) in line
    assert "in a new file at that path" in line
    assert "restore the file with its -wal file from a backup" in line
    assert result.stats["simhash/index_lost"] == 1
    assert "Traceback" not in result.log
    # The copies of pages filed before the loss are kept (their pages are gone with the
    # file); the index works again: the third harbour is dropped as the second's copy.
    urls = result.urls()
    assert http_site.url("harbour-copy.html") in urls
    assert http_site.url("orchard-print.html") in urls
    assert http_site.url("v/again/harbour.html") not in urls
    assert result.stats["simhash/dropped"] == 1
    # What was filed after the loss is in the new file at the path, not in the lost one.
    assert pages_in(path) == 4  # telescope, harbour-copy, orchard-print, library


def test_a_deleted_index_file_stops_the_crawl_when_told_to(
    http_site: SiteServer, tmp_path: Path
) -> None:
    """SIMHASH_ON_INDEX_LOST = "close": the crawl stops and creates no empty file where the
    lost one is to be restored."""
    path = tmp_path / "index.sqlite3"
    http_site.hooks["/telescope.html"] = lambda: delete(path)
    result = crawl(http_site, tmp_path, path, SIMHASH_ON_INDEX_LOST="close")
    assert result.stats["finish_reason"] == "simhash_index_lost"
    (line,) = lost_lines(result)
    assert f"the SQLite file {path} was deleted or moved" in line
    assert "Closing the spider" in line
    assert not any(file.exists() for file in files(path))
    assert "Traceback" not in result.log


def test_a_replaced_index_file_is_said_too(http_site: SiteServer, tmp_path: Path) -> None:
    """A file moved away and another put in its place (a restore of an older copy, a
    deploy): the crawl is no longer writing where the next one will read."""
    path = tmp_path / "index.sqlite3"

    def replace() -> None:
        db = sqlite3.connect(tmp_path / "other.sqlite3")
        db.execute("CREATE TABLE unrelated (n INTEGER)")
        db.close()
        delete(path)
        (tmp_path / "other.sqlite3").rename(path)

    http_site.hooks["/telescope.html"] = replace
    result = crawl(http_site, tmp_path, path)
    (line,) = lost_lines(result)
    assert f"the SQLite file {path} was replaced by another file" in line
    assert result.stats["finish_reason"] == "finished"


# -- immutable files -----------------------------------------------------------------------


def _chattr(flag: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["chattr", flag, *map(str, paths)], capture_output=True, text=True, check=False
    )


@pytest.fixture
def immutable_files(tmp_path: Path) -> Iterator[list[Path]]:
    """The paths the test makes immutable, made mutable again afterwards (or the temporary
    directory could not be removed). Skips where the flag cannot be set: it needs
    CAP_LINUX_IMMUTABLE (root) and a file system that keeps the flag (ext4, xfs, btrfs;
    tmpfs before Linux 6.0 does not)."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed, so no file can be made immutable here")
    done = _chattr("+i", probe)
    if done.returncode != 0:
        pytest.skip(f"the immutable flag cannot be set here: {done.stderr.strip()}")
    _chattr("-i", probe)
    chosen: list[Path] = []
    yield chosen
    _chattr("-i", *[path for path in chosen if path.exists()])


def test_immutable_wal_and_shm_files_are_an_outage_named_in_the_log(
    http_site: SiteServer, tmp_path: Path, immutable_files: list[Path]
) -> None:
    path = tmp_path / "index.sqlite3"
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    immutable_files += [wal, shm]

    def freeze() -> None:
        assert _chattr("+i", wal, shm).returncode == 0

    http_site.hooks["/telescope.html"] = freeze
    # Without the fix the crawl process dies of SIGBUS here: run_crawl raises.
    result = crawl(http_site, tmp_path, path)
    assert result.stats["finish_reason"] == "finished"
    errors = [
        line
        for line in result.log.splitlines()
        if "ERROR" in line and f"{shm} is immutable or append-only" in line
    ]
    assert errors, result.log[-3000:]
    # Each store of the file says the outage once (the template memory, asked first, too).
    (index,) = [line for line in errors if "SimHash index at" in line]
    assert "is unavailable" in index
    assert f"chattr -i -a {shm}" in index
    # Every page reached the spider (they pass unchecked, as in any outage).
    assert result.urls() == {http_site.url(p) for p in PAGES}
    assert result.stats["simhash/outage/passed_unchecked"] >= 1
    # Nothing committed before was lost: the file reads once the flags are gone.
    _chattr("-i", wal, shm)
    assert pages_in(path) == 2
