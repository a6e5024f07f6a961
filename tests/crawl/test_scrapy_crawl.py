"""Real crawls of the local test site with the embedded SQLite index.

Each crawl runs in a child process (tests/scrapy_runner.py) with the asyncio reactor; the
assertions read its items, stats and log.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings

from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.glue.commands import SimhashCommand
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store
from tests.scrapy_runner import REPO, CrawlResult, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

# The local site's fixtures (http_site, http_site_server).
pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

ADDON = {"ADDONS": {"scrapy_simhash.Addon": 0}}
# One request at a time, in the listed order, fingerprinted inline: deterministic "first kept".
ORDERED = {"CONCURRENT_REQUESTS": 1, "SIMHASH_WORKERS": 0, "SIMHASH_TOKENIZER": "rjieba"}

CLUSTERS = [
    ("harbour.html", "harbour-copy.html"),  # same article, different byline
    ("orchard.html", "orchard-print.html"),  # same article, another template
    ("school.html", "school-gbk.html"),  # same Chinese article, UTF-8 and GBK
]
SINGLES = ["telescope.html", "library.html", "switch.html"]


def spec(site: SiteServer, pages: list[str], **settings: Any) -> dict[str, Any]:
    return {
        "requests": [{"url": site.url(p)} for p in pages],
        "settings": {**ORDERED, **settings},
    }


def no_errors(result: CrawlResult) -> None:
    assert result.errors == []
    assert "Traceback" not in result.log, result.log[-3000:]
    assert result.stats.get("finish_reason") == "finished"


def test_addon_drops_near_duplicates_and_remembers_them(
    http_site: SiteServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pages = [p for pair in CLUSTERS for p in pair] + SINGLES
    settings = ADDON
    result = run_crawl(tmp_path, spec(http_site, pages, **settings))
    no_errors(result)
    kept = {http_site.url(p) for p in [a for a, _ in CLUSTERS] + SINGLES}
    assert result.urls() == kept
    stats = result.simhash_stats()
    assert stats["simhash/pages"] == len(pages)
    assert stats["simhash/unique"] == len(kept)
    assert stats["simhash/duplicate"] == stats["simhash/dropped"] == len(CLUSTERS)
    # CPU per fingerprinted page, not the summed wall time of concurrent pages.
    assert 0 < stats["simhash/fingerprint_cpu_us_per_page"] <= stats["simhash/fingerprint_cpu_us"]
    assert "simhash/time_us" not in stats
    for item in result.items:
        info = item["simhash"]
        assert info["key"] == item["url"]
        assert len(info["fingerprint"]) == 16
        assert info["duplicate_of"] is None
    for first, second in CLUSTERS:
        assert f"Dropped near-duplicate {http_site.url(second)} of {http_site.url(first)}" in (
            result.log
        )
    assert "SimHash: 9 pages checked, 6 unique, 3 near-duplicates (3 dropped)" in result.log
    assert sorted(result.signals["page_observed"]) == sorted(http_site.url(p) for p in pages)
    assert sorted(result.signals["near_duplicate"]) == sorted(
        f"{http_site.url(second)} {http_site.url(first)}" for first, second in CLUSTERS
    )
    assert (tmp_path / ".scrapy" / "simhash" / "index.sqlite3").is_file()
    recrawl_url = f"sqlite:///{tmp_path / '.scrapy' / 'simhash' / 'index.sqlite3'}"
    with open_recrawl_store(recrawl_url, namespace="pages") as store:
        assert {url for url in kept if store.get(url) is not None} == kept
        assert [p for _, p in CLUSTERS if store.get(http_site.url(p)) is not None] == []

    # A second crawl in the same project: the index persisted, so the copy is still a
    # duplicate, while the kept page is a re-visit of its own URL (unchanged), not a duplicate.
    again = run_crawl(
        tmp_path, spec(http_site, ["harbour-copy.html", "harbour.html"], **settings), name="again"
    )
    no_errors(again)
    assert again.urls() == {http_site.url("harbour.html")}
    (item,) = again.items
    assert item["simhash"]["changed"] is False
    assert item["simhash"]["change_distance"] == 0
    assert again.stats["simhash/unchanged"] == 1

    # The 'scrapy simhash' command inspects the same index (one real 'scrapy' process for
    # the entry point, the other sub-commands in this process).
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "simhash",
            "stats",
            "--spider",
            "pages",
            "-s",
            "SIMHASH_TOKENIZER=rjieba",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "  pages kept                        6   (" in proc.stdout
    assert "  near-duplicates dropped           3   (" in proc.stdout
    assert "  URLs scheduled for recrawl        6" in proc.stdout
    monkeypatch.chdir(tmp_path)
    fingerprint = item["simhash"]["fingerprint"]
    harbour = http_site.url("harbour.html")
    assert command(capsys, "lookup", harbour) == (0, f"{harbour}: {fingerprint}")
    # A dropped copy is not in the index, but the drop record says what it copies.
    copy_url = http_site.url("harbour-copy.html")
    code, out = command(capsys, "lookup", copy_url)
    assert code == 0
    assert out.startswith(f"{copy_url}: near-duplicate of {harbour} (distance ")
    assert out.endswith(f"; {harbour}: {fingerprint}")
    copy_file = str(REPO / "tests" / "site" / "harbour-copy.html")
    code, out = command(capsys, "similar", copy_file)
    assert (code, out.splitlines()[-1]) == (
        0,
        f"  0  {fingerprint}  {harbour}  copy: confirmed by the second test",
    )
    code, out = command(capsys, "similar", harbour)  # a stored page is not its own duplicate
    assert (code, out.splitlines()[-1]) == (0, "no near-duplicates")
    code, out = command(capsys, "lookup", http_site.url("nothing-here.html"))
    assert code == 1
    assert ": not in the index: never fetched by a crawl of namespace 'pages'" in out


def command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run ``scrapy simhash ARGS --spider pages`` in this process; return status and output."""
    cmd = SimhashCommand()
    cmd.settings = Settings(SimhashCommand.default_settings)
    parser = argparse.ArgumentParser()
    cmd.add_options(parser)
    opts, positional = parser.parse_known_args(
        [*args, "--spider", "pages", "-s", "SIMHASH_TOKENIZER=rjieba"]
    )
    cmd.process_options(positional, opts)
    capsys.readouterr()
    cmd.run(positional, opts)
    return cmd.exitcode, capsys.readouterr().out.strip()


def test_hand_wired_mark_only_mode_and_request_meta(http_site: SiteServer, tmp_path: Path) -> None:
    requests = [
        {"url": http_site.url("harbour.html")},
        {"url": http_site.url("harbour-copy.html")},
        {"url": http_site.url("orchard.html")},
        {"url": http_site.url("orchard-print.html"), "meta": {"dont_simhash": True}},
        {"url": http_site.url("v/a/library.html"), "meta": {"simhash_key": "library"}},
        {"url": http_site.url("v/b/library.html"), "meta": {"simhash_key": "library"}},
    ]
    settings = {
        **ORDERED,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_simhash.SimhashDownloaderMiddleware": 540},
        "SIMHASH_DROP_DUPLICATES": False,
        "SIMHASH_INDEX_URL": f"sqlite:///{tmp_path / 'hand.sqlite3'}",
    }
    result = run_crawl(tmp_path, {"requests": requests, "settings": settings})
    no_errors(result)
    assert len(result.items) == len(requests)  # mark-only: everything reaches the spider
    by_url = {item["url"]: item["simhash"] for item in result.items}
    copy = by_url[http_site.url("harbour-copy.html")]
    assert copy["duplicate_of"] == http_site.url("harbour.html")
    assert copy["distance"] == 0
    assert by_url[http_site.url("orchard-print.html")] is None  # opted out
    # Same simhash_key under two URLs: a re-visit of one page, not a duplicate.
    second = by_url[http_site.url("v/b/library.html")]
    assert second["key"] == "library"
    assert second["duplicate_of"] is None
    assert second["changed"] is False
    stats = result.simhash_stats()
    assert stats["simhash/duplicate"] == 1
    assert "simhash/dropped" not in stats
    assert stats["simhash/skipped/meta"] == 1
    assert "(mark-only mode)" in result.log
    assert (tmp_path / "hand.sqlite3").is_file()
    assert not (tmp_path / ".scrapy").exists()


def test_item_pipeline_drops_near_duplicate_items(
    http_site: SiteServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pages = [
        "harbour.html",
        "harbour-copy.html",
        "orchard.html",
        "orchard-print.html",
        "telescope.html",
    ]
    settings = {
        "ITEM_PIPELINES": {"scrapy_simhash.SimhashPipeline": 800},
        "SIMHASH_ITEM_FIELDS": "body",
        "SIMHASH_ITEM_TITLE_FIELD": "title",
        "SIMHASH_ITEM_FINGERPRINT_FIELD": "fingerprint",
    }
    result = run_crawl(tmp_path, {**spec(http_site, pages, **settings), "item_text": True})
    no_errors(result)
    # Items are checked as their callbacks finish, which need not be in request order:
    # assert per cluster (exactly one item of each survives), not which URL it came from.
    clusters = [
        {http_site.url(p) for p in pair}
        for pair in (["harbour.html", "harbour-copy.html"], ["orchard.html", "orchard-print.html"])
    ]
    urls = result.urls()
    assert len(result.items) == 3
    assert http_site.url("telescope.html") in urls
    monkeypatch.chdir(tmp_path)
    for cluster in clusters:
        [kept] = urls & cluster
        [copy] = cluster - {kept}
        assert f"near-duplicate of item {kept}" in result.log, copy
        # The items' own drop record says what the dropped item copied.
        code, out = command(capsys, "lookup", copy, "--items")
        assert code == 0
        assert out.startswith(f"{copy}: near-duplicate of {kept} (distance ")
    assert all(len(item["fingerprint"]) == 16 for item in result.items)
    stats = result.simhash_stats()
    assert stats["simhash/items_seen"] == 5
    assert stats["simhash/items_dropped"] == 2
    assert "simhash/pages" not in stats  # the middleware was not installed


def test_disabled_and_unconfigured_components_say_why(
    http_site: SiteServer, tmp_path: Path
) -> None:
    settings = {
        **ADDON,
        "SIMHASH_ENABLED": False,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_simhash.SimhashDownloaderMiddleware": 540},
    }
    result = run_crawl(tmp_path, spec(http_site, ["harbour.html", "harbour-copy.html"], **settings))
    no_errors(result)
    assert len(result.items) == 2
    assert result.simhash_stats() == {}
    assert "SIMHASH_ENABLED is False: near-duplicate detection is off" in result.log

    unconfigured = {"ITEM_PIPELINES": {"scrapy_simhash.SimhashPipeline": 800}}
    result = run_crawl(tmp_path, spec(http_site, ["harbour.html"], **unconfigured), name="p")
    no_errors(result)
    assert "SIMHASH_ITEM_FIELDS is empty" in result.log


def test_awkward_pages_never_break_the_crawl(http_site: SiteServer, tmp_path: Path) -> None:
    pages = [
        "telescope.html",
        "broken.html",  # the telescope article in broken markup with stray bytes
        "empty.html",
        "short.html",
        "fake-html.bin",  # binary body served as text/html
        "image.png",
        "huge.html",
        "gzip/library.html",
        "redirect/orchard.html",
        "missing.html",
    ]
    settings = {
        **ADDON,
        # Pages over 1 KB go to one worker process; the huge page is cut at 100 KB.
        "SIMHASH_WORKERS": 1,
        "SIMHASH_INLINE_MAX_BYTES": 1024,
        "SIMHASH_MAX_BODY_BYTES": 100_000,
    }
    result = run_crawl(tmp_path, spec(http_site, pages, **settings))
    no_errors(result)
    by_url = {item["url"]: item["simhash"] for item in result.items}
    assert http_site.url("broken.html") not in by_url  # still recognised as the telescope page
    assert by_url[http_site.url("image.png")] is None  # not a text content type
    for name, note in [("empty.html", "empty body"), ("fake-html.bin", "binary body")]:
        info = by_url[http_site.url(name)]
        assert info["fingerprint"] is None
        assert note in info["reason"]
    short = by_url[http_site.url("short.html")]  # checked by its exact digest
    assert short["fingerprint"] is not None
    assert "too little text" in short["reason"]
    assert "exact copies only" in short["reason"]
    assert by_url[http_site.url("huge.html")]["fingerprint"] is not None
    assert by_url[http_site.url("gzip/library.html")]["fingerprint"] is not None
    # The key of a redirected page is where it landed.
    assert by_url[http_site.url("orchard.html")]["key"] == http_site.url("orchard.html")
    stats = result.simhash_stats()
    assert stats["simhash/no_text"] == 2
    assert stats["simhash/exact"] == 1
    assert stats["simhash/skipped/content_type"] == 1
    assert stats["simhash/skipped/status"] == 1
    assert stats["simhash/duplicate"] == 1
    assert "simhash/error" not in stats
    assert "1 fingerprint worker(s)" in result.log


def test_mismatched_index_configuration_stops_the_crawl_at_start(
    http_site: SiteServer, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    scheme = Fingerprinter(FingerprintConfig(tokenizer="rjieba")).scheme
    open_index(url, namespace="pages", bits=64, scheme=scheme).close()  # a 64-bit index
    settings = {**ADDON, "SIMHASH_INDEX_URL": url, "SIMHASH_BITS": 128}
    result = run_crawl(tmp_path, spec(http_site, ["orchard.html"], **settings))
    assert len(result.errors) == 1
    assert result.errors[0].startswith("IndexMismatchError")
    assert result.items == []
    assert http_site.hits["/orchard.html"] == 0


def test_cached_responses_are_checked_but_not_recrawl_observations(
    http_site: SiteServer, tmp_path: Path
) -> None:
    settings = {**ADDON, "HTTPCACHE_ENABLED": True}
    first = run_crawl(tmp_path, spec(http_site, ["harbour.html", "switch.html"], **settings))
    no_errors(first)
    http_site.version = 2  # the live page changes; the cache still holds version 1
    pages = ["harbour.html", "harbour-copy.html", "switch.html"]
    second = run_crawl(tmp_path, spec(http_site, pages, **settings), name="second")
    no_errors(second)
    assert second.urls() == {http_site.url("harbour.html"), http_site.url("switch.html")}
    assert http_site.hits["/harbour.html"] == http_site.hits["/switch.html"] == 1
    stats = second.simhash_stats()
    assert stats["simhash/cached"] == 2
    assert stats["simhash/dropped"] == 1  # the fresh copy is still a duplicate
    url = f"sqlite:///{tmp_path / '.scrapy' / 'simhash' / 'index.sqlite3'}"
    with open_recrawl_store(url, namespace="pages") as store:
        for page in ("harbour.html", "switch.html"):
            state = store.get(http_site.url(page))
            assert state is not None
            assert state.visits == 1  # the cached fetch was not a visit
        # The copy is never scheduled for revisits: the page it copies is.
        assert store.get(http_site.url("harbour-copy.html")) is None
