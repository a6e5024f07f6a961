"""The example project: the demo site itself, and ``example_project/demo.py`` run for real.

The crawl tests run the README's main command as a user would (a subprocess, two rounds,
a real Scrapy crawl of the locally served site) and check its decisions against the site's
ground truth, computed here from the site module, not copied from the demo's own summary.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
README = EXAMPLE.parent / "README.md"
sys.path.insert(0, str(EXAMPLE))

from demo_site.server import (
    ABOUT_PATH,
    LETTER_PATH,
    LIVE_PATH,
    DemoServer,
    DemoSite,
)

SITE = DemoSite()


def _all_paths(site: DemoSite) -> list[str]:
    paths = [*site.listing_paths(), LIVE_PATH, LETTER_PATH, ABOUT_PATH]
    for original, copies in site.clusters().items():
        paths += [original, *copies.values()]
    return paths


# -- the site, without a crawl -----------------------------------------------------------------


def test_server_serves_every_page_and_404s_the_rest() -> None:
    with DemoServer() as server:
        for path in ("/", "/news/coral-spawning.html;jsessionid=AB12", "/tag/气候/"):
            url = server.url.rstrip("/") + quote(path, safe="/;=?&")
            with urllib.request.urlopen(url, timeout=5) as response:
                assert response.status == 200
                assert b"<h1>" in response.read()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url + "news/no-such-story.html", timeout=5)
        assert missing.value.code == 404


def test_every_linked_page_exists_and_copies_are_only_linked_from_their_original() -> None:
    """Breadth-first crawls meet each original before its copies: the demo relies on it."""
    from lxml import html

    copies = {path: original for original, c in SITE.clusters().items() for path in c.values()}
    for path in _all_paths(SITE):
        page = SITE.render(path)
        assert page.status == 200, path
        for href in html.fromstring(page.body).xpath("//a/@href"):
            if href.startswith("/") and not href.startswith("/search"):
                assert SITE.render(href).status == 200, f"{path} links to missing {href}"
            if href in copies and not path.startswith(("/print/", "/amp/", "/partner/")):
                assert path == copies[href] or path.startswith(copies[href]), (path, href)


def test_chinese_print_view_is_gb18030_declared_only_in_meta() -> None:
    page = SITE.render("/print/news/gaokao-reform.html")
    assert page.content_type == "text/html"
    assert b"charset=gb18030" in page.body
    assert "走班制".encode("gb18030") in page.body


def test_listings_show_distinct_sets_of_stories() -> None:
    sets = [tuple(s.slug for s in stories) for stories in SITE.tags().values()]
    sets += [tuple(s.slug for s in stories) for stories in SITE.sections().values() if stories]
    assert len(sets) == len(set(sets))


def _without_session_ids(body: bytes) -> bytes:
    return re.sub(rb"(jsessionid=|sid=)[0-9A-Fa-f]+", rb"\1...", body)


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=2, max_value=40))
def test_only_the_live_blog_and_the_letter_change_between_rounds(later: int) -> None:
    """Apart from session ids in links, which a new visit gets anyway."""
    before, after = DemoSite(round=1), DemoSite(round=later)
    for path in _all_paths(before):
        if path in (LIVE_PATH, LETTER_PATH):
            continue
        same_path = _without_session_ids(path.encode()).decode()
        expected = _without_session_ids(before.render(path).body)
        assert _without_session_ids(after.render(same_path).body) == expected, path
    assert before.render(ABOUT_PATH).body == after.render(ABOUT_PATH).body
    assert before.render(LETTER_PATH).body != after.render(LETTER_PATH).body
    live_before = before.render(LIVE_PATH).body.count(b'class="entry"')
    live_after = after.render(LIVE_PATH).body.count(b'class="entry"')
    assert live_after > live_before > 0


def test_server_falls_back_to_a_free_port_when_its_port_is_taken() -> None:
    with DemoServer() as first, DemoServer(port=first.port) as second:
        assert second.port != first.port
        with urllib.request.urlopen(second.url, timeout=5) as response:
            assert response.status == 200


def test_ground_truth_check_names_missed_copies_and_wrong_drops() -> None:
    """The demo's own verdict must be able to fail, or its "65 of 65" would mean nothing."""
    from demo_news.report import PageResult, RoundReport, check_against_site, format_round

    clusters = SITE.clusters()
    pages = [PageResult(original) for original in clusters]
    pages += [
        PageResult(path, duplicate_of=original, distance=1)
        for original, copies in clusters.items()
        for path in copies.values()
    ]
    missed, misattributed = pages[len(clusters)], pages[len(clusters) + 1]
    missed.duplicate_of = None
    misattributed.duplicate_of = "/about.html"
    pages.append(PageResult("/tag/ocean/", duplicate_of="/section/science/", distance=2))
    # A copy that arrived first stands for its original, filed under the original's URL;
    # the original is then a copy of itself: both right.
    second = list(clusters)[1]
    stand_in = next(p for p in pages if p.path == clusters[second]["print"])
    stand_in.duplicate_of, stand_in.key = None, second
    pages[1].duplicate_of = second
    report = RoundReport(1, pages=pages)

    check = check_against_site(report)
    assert check["missed"] == [missed.path]
    assert check["wrong_original"] == [f"{misattributed.path} -> /about.html"]
    assert check["false_duplicates"] == ["/tag/ocean/ -> /section/science/"]
    total = sum(len(c) for c in clusters.values())
    text = "\n".join(format_round(report))
    assert f"Ground truth: {total - 2} of {total} copies recognised" in text
    assert "1 distinct pages taken for copies" in text
    assert "(kept: print)" in text
    # A copy kept under its own URL while its original is kept too: one story, two pages.
    stand_in.key = ""
    pages[1].duplicate_of = None
    check = check_against_site(RoundReport(1, pages=pages))
    assert stand_in.path in check["missed"]


# -- the demo, crawling for real ---------------------------------------------------------------


def run_demo(tmp_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "demo.json"
    result = subprocess.run(
        [sys.executable, str(EXAMPLE / "demo.py"), "--json", str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(out.read_text("utf-8")), result.stdout


def assert_demo_decisions(data: dict[str, Any], stdout: str) -> None:
    rounds = data["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    for report in rounds:
        site = DemoSite(round=report["round"])
        pages = {p["path"]: p for p in report["pages"]}
        kept = {path for path, p in pages.items() if p["duplicate_of"] is None}
        # Per story, not per URL: whichever of its URLs arrived first, exactly one is kept,
        # filed under the original (canonical) URL, and every other one is a copy of that.
        for original, copies in site.clusters().items():
            cluster = {original, *copies.values()}
            # Every URL of the story was fetched and observed (the log says why not).
            assert cluster <= set(pages), (report["round"], cluster - set(pages), stdout[-3000:])
            assert len(kept & cluster) == 1, (report["round"], kept & cluster, stdout[-3000:])
            [survivor] = kept & cluster
            assert pages[survivor]["key"] == original, (report["round"], survivor)
            for path in cluster - {survivor}:
                assert pages[path]["duplicate_of"] == original, (path, pages.get(path))
                assert pages[path]["key"] == original, (path, pages.get(path))
        for path in [*site.listing_paths(), LIVE_PATH, LETTER_PATH, ABOUT_PATH]:
            assert path in kept, f"round {report['round']}: {path} should be kept"
        copies_total = sum(len(c) for c in site.clusters().values())
        assert len(report["pages"]) - len(kept) == copies_total  # nothing else dropped
        assert report["items"] == len(site.articles) + 2  # + the live blog and the letter
        # The recrawl schedule names each page once, by its canonical URL: no copy URLs.
        schedule = set(report["schedule"])
        assert len(schedule) == len(kept)
        assert schedule == {pages[path]["key"] for path in kept}
        assert not schedule & {path for c in site.clusters().values() for path in c.values()}
    assert stdout.count("Recrawl schedule: 29 URLs, 0 of them copies") == 2
    second = {p["path"]: p for p in rounds[1]["pages"]}
    assert second[LIVE_PATH]["changed"] is True
    assert second[LIVE_PATH]["change_distance"] > 3
    assert second[LETTER_PATH]["changed"] is False
    assert second[ABOUT_PATH]["changed"] is False
    total = sum(len(c) for c in SITE.clusters().values())
    assert stdout.count(f"Ground truth: {total} of {total} copies recognised") == 2
    assert "0 distinct pages taken for copies" in stdout
    assert f"{LIVE_PATH} ({second[LIVE_PATH]['change_distance']} bits)" in stdout


def readme_demo_sample() -> list[str]:
    """The lines of the sample output in the README's "The demo" section."""
    section = README.read_text("utf-8").split("\n## The demo\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert block is not None, "the README's demo section has no sample output"
    return block.group(1).splitlines()


def _timeless(line: str) -> str:
    """A summary line without its run time, the one figure that differs between runs."""
    return re.sub(r"\bin \d+(?:\.\d+)? s\b", "in N s", line.rstrip())


def assert_readme_sample_is_the_run(stdout: str) -> None:
    """Every line of the README's sample is a line of the run, in the same order, figures
    and all (run times aside); ``...`` stands for lines left out."""
    run = [_timeless(line) for line in stdout.splitlines()]
    sample = [line for line in readme_demo_sample() if line.strip() not in ("", "...")]
    assert len(sample) >= 10, sample
    at = 0
    for line in sample:
        wanted = _timeless(line)
        assert wanted in run[at:], (
            f"the README's demo sample says {line!r}; the run does not, at this point:\n"
            + "\n".join(run[at:])
        )
        at = run.index(wanted, at) + 1


def test_the_readme_sample_check_tells_a_stale_figure_from_a_run_time() -> None:
    run = "\n".join(readme_demo_sample())
    assert_readme_sample_is_the_run(re.sub(r"in \d+\.\d s", "in 12.3 s", run))
    with pytest.raises(AssertionError, match="unchanged"):
        assert_readme_sample_is_the_run(re.sub(r"(unchanged +)\d+", r"\g<1>25", run))


@pytest.mark.crawl
def test_demo_on_the_embedded_index(tmp_path: Path) -> None:
    """The README's main command on an embedded SQLite index (in tmp_path, not in the
    project's .scrapy/, so that test runs in parallel checkouts cannot reset each other).
    Its summary is the one the README shows."""
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    data, stdout = run_demo(tmp_path, "--index-url", url)
    assert data["index"] == url
    assert (tmp_path / "index.sqlite3").is_file()
    assert_demo_decisions(data, stdout)
    assert_readme_sample_is_the_run(stdout)


def test_demo_default_index_is_in_the_project_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy_simhash.glue.config import index_url

    monkeypatch.chdir(EXAMPLE)  # what demo.py does before reading the settings
    monkeypatch.delenv("SCRAPY_SETTINGS_MODULE", raising=False)
    url = index_url({})
    assert url == f"sqlite:///{EXAMPLE / '.scrapy' / 'simhash' / 'index.sqlite3'}"


@pytest.mark.crawl
@pytest.mark.redis
def test_demo_on_redis(tmp_path: Path, redis_url: str) -> None:
    data, stdout = run_demo(tmp_path, "--index-url", redis_url)
    assert data["index"] == redis_url
    assert_demo_decisions(data, stdout)
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        assert client.dbsize() > 0  # the index and the recrawl history live in Redis
    finally:
        client.close()
