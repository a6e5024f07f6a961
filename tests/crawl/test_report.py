"""``report`` on the state a small real crawl wrote: text, JSON, picture and progress bar."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import sys
import termios
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_simhash.cli import main
from tests.scrapy_runner import run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

#: Fetched in this order, one at a time: the first page of each cluster is the one kept.
CLUSTERS = {
    "harbour.html": ["harbour-copy.html", "v/a/harbour-copy.html", "v/b/harbour.html"],
    "orchard.html": ["orchard-print.html"],
}
SINGLES = ["telescope.html", "switch.html"]


@pytest.fixture(scope="module")
def crawled(http_site_server: SiteServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one crawl with the recrawl store on (its state in ``.scrapy/``)."""
    http_site_server.reset()
    pages = [p for kept, copies in CLUSTERS.items() for p in [kept, *copies]] + SINGLES
    workdir = tmp_path_factory.mktemp("report")
    spec = {
        "requests": [{"url": http_site_server.url(p)} for p in pages],
        "settings": {
            "ADDONS": {"scrapy_simhash.Addon": 0},
            "CONCURRENT_REQUESTS": 1,
            "SIMHASH_WORKERS": 0,
            "SIMHASH_TOKENIZER": "rjieba",
            "SIMHASH_RECRAWL_ENABLED": True,
        },
    }
    result = run_crawl(workdir, spec)
    assert not result.errors
    return workdir


def report(
    crawled: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
) -> tuple[int, str, str]:
    monkeypatch.chdir(crawled)
    code = main(["report", "--namespace", "pages", "-s", "SIMHASH_TOKENIZER=rjieba", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_report_counts_pages_per_host_and_names_the_kept_url_of_each_cluster(
    crawled: Path,
    http_site_server: SiteServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = report(crawled, monkeypatch, capsys, "--json")
    assert code == 0, err
    data = json.loads(out)
    host = http_site_server.url("").split("/")[2]
    copies = sum(len(c) for c in CLUSTERS.values())
    assert data["hosts"] == [[host, len(CLUSTERS) + len(SINGLES), copies]]
    assert (data["kept"], data["dropped"], data["clusters_total"]) == (
        len(CLUSTERS) + len(SINGLES),
        copies,
        len(CLUSTERS),
    )
    clusters = {c["kept"]: sorted(url for url, _ in c["copies"]) for c in data["clusters"]}
    assert clusters == {
        http_site_server.url(kept): sorted(http_site_server.url(p) for p in pages)
        for kept, pages in CLUSTERS.items()
    }
    assert data["clusters"][0]["kept"] == http_site_server.url("harbour.html")
    assert all(c["kept_stored"] for c in data["clusters"])
    # Every page the recrawl store tracks has a rate bin and a due bin. One fetch each is
    # no history: every rate is still the prior's, shown apart rather than as "daily".
    assert data["recrawl_pages"] == len(CLUSTERS) + len(SINGLES)
    assert sum(n for _, n in data["rates"]) == 0
    assert data["too_little_history"] == data["recrawl_pages"]
    assert data["prior_per_day"] == 1.0
    assert sum(n for _, n in data["due"]) == data["recrawl_pages"]
    assert dict(data["due"])["overdue"] == 0  # just fetched: nothing due yet

    code, out, err = report(crawled, monkeypatch, capsys)
    assert code == 0
    assert f"{len(CLUSTERS) + len(SINGLES) + copies} pages fingerprinted: 4 kept, 4 dropped" in out
    assert f"1. {http_site_server.url('harbour.html')}  3 copies" in out
    assert f"2. {http_site_server.url('orchard.html')}  1 copy" in out
    assert "how often pages change (0 of the 4 pages" in out
    assert "  too little history      4   (rate still the prior's 1/day" in out
    assert err == ""  # stderr is not a terminal: no progress bar


def test_rates_from_too_little_history_are_shown_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two unchanged fetches seconds apart leave the rate at the prior's (1/day, "daily to
    weekly" if it were binned): the data the rates panel is drawn from counts such pages
    apart. A page seen unchanged a month later, or changed at three hourly visits, has a
    rate of its own."""
    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
    from scrapy_simhash.index import open_index
    from scrapy_simhash.recrawl import open_recrawl_store
    from tests.conftest import Clock

    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    with open_index(url, namespace="n", scheme=Fingerprinter(FingerprintConfig()).scheme) as index:
        index.observe("https://a.example/quiet", 1)
    clock = Clock(1_700_000_000.0)
    with open_recrawl_store(url, namespace="n", clock=clock) as store:
        for page in ("quiet", "busy", "twice"):
            store.observe(f"https://a.example/{page}", 1)
        clock.now += 21
        store.observe("https://a.example/twice", 1)
        for change in range(1, 4):
            clock.now += 3600
            store.observe("https://a.example/busy", (1 << (16 * change)) - 1)
        clock.now += 30 * 86400
        store.observe("https://a.example/quiet", 1)
        store.add(["https://a.example/new"])  # queued, never fetched
    assert main(["report", "--index-url", url, "--namespace", "n", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["recrawl_pages"], data["too_little_history"]) == (4, 2)  # twice, new
    assert [(name, n) for name, n in data["rates"] if n] == [
        ("hourly to daily", 1),
        ("weekly to monthly", 1),
    ]
    assert main(["report", "--index-url", url, "--namespace", "n"]) == 0
    out = capsys.readouterr().out
    assert "how often pages change (2 of the 4 pages" in out
    assert "  daily to weekly         0\n" in out
    assert "  too little history      2   (rate still the prior's 1/day" in out


def test_report_draws_one_png_page(
    crawled: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    png = tmp_path / "state.png"
    code, out, err = report(crawled, monkeypatch, capsys, "--png", str(png))
    assert code == 0, err
    assert f"wrote {png}" in err
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > height > 800
    assert "largest near-duplicate clusters" in out  # the same figures as text


def test_a_namespace_without_recrawl_state_says_so(
    crawled: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
    from scrapy_simhash.index import open_index

    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    scheme = Fingerprinter(FingerprintConfig()).scheme
    with open_index(url, namespace="plain", scheme=scheme) as index:
        index.observe("https://a.example/1", 0x1234)
    code = main(
        ["report", "--index-url", url, "--namespace", "plain", "--png", str(tmp_path / "plain.png")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "1 pages fingerprinted: 1 kept, 0 dropped" in out
    assert "no near-duplicates dropped" in out
    assert "SIMHASH_RECRAWL_ENABLED was off" in out


def test_png_without_matplotlib_names_the_extra(
    crawled: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    code, _, err = report(crawled, monkeypatch, capsys, "--png", str(tmp_path / "x.png"))
    assert code == 2
    assert 'pip install "scrapy-simhash[plot]"' in err
    assert not (tmp_path / "x.png").exists()


def test_progress_bar_only_on_a_terminal(
    crawled: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    terminal: Any = os.fdopen(slave, "w", encoding="utf-8")
    monkeypatch.chdir(crawled)
    with capsys.disabled():
        monkeypatch.setattr(sys, "stderr", terminal)
        monkeypatch.setattr(sys, "stdout", open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
        code = main(["report", "--namespace", "pages", "-s", "SIMHASH_TOKENIZER=rjieba"])
        sys.stdout.close()
        terminal.close()
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert code == 0
    assert b"reading the index" in drawn
    assert b"8/8" in drawn  # 4 kept keys and 4 drop records
