"""Real crawls with URL rules on (SIMHASH_DUST_ENABLED): tracking copies are not fetched,
parameters that make pages (?page=, ?id=, ?lang=) are never learned as copies, and a
request skipped under a rule later found wrong is fetched after all."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_simhash.cli import main as cli_main
from tests.scrapy_inprocess import WORDS, random_story
from tests.scrapy_runner import run_crawl
from tests.test_scrapy_crawl import command, no_errors

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

pytestmark = pytest.mark.crawl

GERMAN = [
    "Hafen", "Rat", "Brücke", "Straßenbahn", "Bibliothek", "Obstgarten", "Fest", "Museum",
    "Archiv", "Fluss", "Haushalt", "Schule", "Bahnhof", "Markt", "Theater", "Garten",
    "Klinik", "Fähre", "Stadion", "Kanal", "Turm", "Tal", "Insel", "Wald",
]
SETTINGS = {
    "ADDONS": {"scrapy_simhash.Addon": 0},
    "CONCURRENT_REQUESTS": 1,  # in the listed order: "first kept" is the test's choice
    "SIMHASH_WORKERS": 0,
    "SIMHASH_DUST_ENABLED": True,
    "SIMHASH_DUST_MIN_SUPPORT": 2,
    "SIMHASH_DUST_CHECK_SHARE": 0.0,
}


def page(seed: int, words: list[str] = WORDS) -> tuple[str, bytes]:
    return "text/html; charset=utf-8", random_story(seed, words)


def crawl(
    site: SiteServer, tmp_path: Path, pages: dict[str, int], order: list[str],
    meta: dict[str, dict[str, Any]] | None = None,
) -> Any:
    for path, seed in pages.items():
        site.pages[path] = page(seed, GERMAN if "lang=de" in path else WORDS)
    spec = {
        "requests": [{"url": site.url(p), "meta": (meta or {}).get(p, {})} for p in order],
        "follow": True,  # errbacks report what was not fetched, and why
        "settings": SETTINGS,
    }
    result = run_crawl(tmp_path, spec)
    no_errors(result)
    return result


def test_parameters_that_matter_are_kept_and_tracking_copies_are_not_fetched(
    http_site: SiteServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pages = {
        "/list": 1, "/list?page=2": 2, "/list?page=3": 3,
        "/item?id=7": 4, "/item?id=8": 5,
        "/about": 6, "/about?lang=de": 7,
        # Copies with tracking parameters.
        "/list?utm_source=x": 1, "/item?id=7&utm_source=x": 4, "/about?utm_source=x": 6,
        "/list?page=2&utm_source=y": 2, "/item?id=8&utm_source=z": 5,
    }
    order = [
        "/list", "/list?utm_source=x", "/item?id=7", "/item?id=7&utm_source=x",  # 2 pairs
        "/about", "/about?utm_source=x", "/about?lang=de",
        "/list?page=2", "/list?page=2&utm_source=y", "/list?page=3",
        "/item?id=8", "/item?id=8&utm_source=z",
    ]
    result = crawl(http_site, tmp_path, pages, order)
    distinct = ["/list", "/list?page=2", "/list?page=3", "/item?id=7", "/item?id=8",
                "/about", "/about?lang=de"]
    fetched = {item["url"] for item in result.items if "errback" not in item}
    assert fetched == {http_site.url(p) for p in distinct}
    skipped = {item["url"]: item["kept_url"] for item in result.items
               if item.get("errback") == "KnownCopy"}
    assert skipped == {
        http_site.url("/about?utm_source=x"): http_site.url("/about"),
        http_site.url("/list?page=2&utm_source=y"): http_site.url("/list?page=2"),
        http_site.url("/item?id=8&utm_source=z"): http_site.url("/item?id=8"),
    }
    stats = result.simhash_stats()
    assert stats["simhash/dust/skipped"] == 3
    assert http_site.hits["/about?utm_source=x"] == 0
    assert "Not fetching " + http_site.url("/about?utm_source=x") in result.log

    # Both commands list the rules: only the tracking parameter, trusted.
    monkeypatch.chdir(tmp_path)
    code, out = command(capsys, "rules", "-s", "SIMHASH_DUST_MIN_SUPPORT=2")
    assert code == 0
    rules = [line.split()[:4] for line in out.splitlines()[2:]]
    assert rules == [["trusted", "2", "0", f"127.0.0.1:{http_site.port}"]]
    assert out.splitlines()[2].endswith("param:utm_source")
    assert cli_main(["rules", "--namespace", "pages"]) == 0  # default support 3: learning
    assert capsys.readouterr().out.splitlines()[2].split()[:2] == ["learning", "2"]


def test_a_request_skipped_under_a_rule_found_wrong_is_fetched_after_all(
    http_site: SiteServer, tmp_path: Path
) -> None:
    pages = {
        "/a1": 1, "/a1?ref=x": 1, "/a2": 2, "/a2?ref=x": 2,  # ?ref= looks like a copy...
        "/b": 3, "/b?ref=x": 4,  # ...but here it is a page of its own
        "/c?ref=x": 5, "/c": 6,  # and this pair of fetched pages proves it
    }
    order = ["/c?ref=x", "/a1", "/a1?ref=x", "/a2", "/a2?ref=x", "/b", "/b?ref=x", "/c"]
    # /c?ref=x was fetched before the rule was trusted: its check waits for /c, which the
    # spider asks for whatever the rules say (meta simhash_dust=False).
    result = crawl(http_site, tmp_path, pages, order, {"/c": {"simhash_dust": False}})
    stats = result.simhash_stats()
    assert stats["simhash/dust/skipped"] == 1
    assert stats["simhash/dust/counterexamples"] == 1
    assert stats["simhash/dust/requeued"] == 1
    fetched = {item["url"] for item in result.items if "errback" not in item}
    assert fetched == {http_site.url(p) for p in ["/a1", "/a2", "/b", "/b?ref=x", "/c?ref=x", "/c"]}
    assert http_site.hits["/b?ref=x"] == 1
