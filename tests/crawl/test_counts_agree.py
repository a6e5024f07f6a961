"""One crawl, three counts: the close line of the log, ``stats`` and ``report`` agree, drop
records exist exactly for the URLs dropped, and ``lookup`` tells the story the log tells.

A real crawl (a child process, tests/scrapy_runner.py) of a small news site on a local HTTP
server, twice: two hosts (the site on ``127.0.0.1`` and a mirror on ``localhost``, another
site to the add-on, so canonical links across them are not believed), print views and
tracking links that name their article canonical, short briefs (checked by an exact
digest) with print views, and notes that name no canonical URL at all (their cluster is
named by the best URL, ``SIMHASH_PREFER_URLS``). Requests run concurrently, so which copy
of a page arrives first changes from run to run: every assertion holds whichever it is.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.scrapy_runner import ONE_AT_A_TIME, REPO, CrawlResult, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]
pytestmark = pytest.mark.crawl

SETTINGS = ONE_AT_A_TIME

_WORDS = (
    "harbour council bridge tram library orchard festival museum archive river budget school "
    "station market theatre garden clinic ferry stadium canal tower valley island forest "
    "harvest winter engine signal printer bakery violin lantern meadow quarry teacher nurse "
    "mayor farmer driver pilot baker painter miller weaver tailor sailor singer dancer "
    "repaired opened closed visited painted counted measured planted carried delivered "
    "reported announced approved rejected delayed finished started expanded reduced "
    "northern southern eastern western quiet busy narrow wide ancient modern early late "
    "morning evening summer autumn spring weekend holiday season decade century moment"
)
VOCABULARY = _WORDS.split()


def prose(seed: int, sentences: int = 7) -> list[str]:
    """Paragraphs of a page of its own: far from every other seed's."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(VOCABULARY) for _ in range(16)).capitalize() + "."
        for _ in range(sentences)
    ]


def page(
    title: str,
    paragraphs: list[str],
    *,
    canonical: str | None = None,
    links: tuple[str, ...] = (),
    chrome: str = "",
    comments: tuple[str, ...] = (),
) -> bytes:
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    remarks = "".join(f'<div class="comment">{c}</div>' for c in comments)
    return (
        f"<html><head><title>{title}</title>{head}</head><body>{chrome}"
        f"<article><h1>{title}</h1>{body}</article><ul class='related'>{anchors}</ul>"
        f"<section class='comments'>{remarks}</section></body></html>"
    ).encode()


@dataclass
class Site:
    """The pages served, and which URLs are one page (a cluster, named by its article)."""

    main: str
    mirror: str
    clusters: dict[str, set[str]] = field(default_factory=dict)
    starts: list[str] = field(default_factory=list)

    def cluster_of(self, url: str) -> set[str]:
        return next(urls for urls in self.clusters.values() if url in urls)


def build_site(server: SiteServer, site: Site, round_: int) -> None:
    """Articles (print view, tracking link; three mirrored on the second host), briefs
    (short pages with a print view) and notes naming no canonical URL. One tracking link
    changes between rounds (the second round meets a URL the first never saw)."""
    main, mirror = site.main, site.mirror
    home: list[str] = []
    mirror_home: list[str] = []

    def serve(path: str, body: bytes) -> None:
        server.pages[path] = ("text/html; charset=utf-8", body)

    def cluster(name: str, *urls: str) -> None:
        site.clusters.setdefault(name, set()).update(urls)

    for number in range(6):
        slug = f"story-{number}"
        text = prose(100 + number)
        article, printed = f"/news/{slug}.html", f"/print/news/{slug}.html"
        # Story 3's tracking link changes between rounds; it is linked from the article
        # alone, so the article is judged first in both (a URL that reached the spider
        # keeps its page's name while it is fetched).
        campaign = f"round{round_}" if number == 3 else "feed&utm_medium=rss"
        tracked = f"{article}?utm_source={campaign}"
        canonical = main + article
        links = (printed, tracked)
        serve(
            article,
            page(
                f"Story {number}",
                text,
                canonical=canonical,
                links=links,
                chrome="<nav>Home · News · Sport</nav>",
            ),
        )
        serve(printed, page(f"Story {number}", text, canonical=canonical))
        serve(
            tracked,
            page(
                f"Story {number}",
                text,
                canonical=canonical,
                links=links,
                chrome="<div class='banner'>Subscribe to our newsletter</div>",
            ),
        )
        cluster(canonical, main + article, main + printed, main + tracked)
        home.append(article)
        if number % 2 == 0:  # the tracking link is on the home page too: it may come first
            home.append(tracked)
        if number < 3:  # mirrored on the second host, with its own template and comments
            mirrored = f"/m/{slug}/"
            serve(
                mirrored,
                page(
                    f"Story {number}",
                    text,
                    canonical=canonical,
                    chrome="<header>The Mirror</header>",
                    comments=("Great read.", "Thanks for sharing this."),
                ),
            )
            mirror_home.append(mirrored)
            cluster(canonical, mirror + mirrored)
    for number in range(2):
        slug = f"brief-{number}"
        text = [f"Brief {number}: the {VOCABULARY[number]} opened at noon."]
        brief, printed = f"/brief/{slug}.html", f"/print/brief/{slug}.html"
        canonical = main + brief
        for path in (brief, printed):  # a short page: its print view reads alike
            serve(path, page(f"Brief {number}", text, canonical=canonical, links=(printed,)))
        home += [printed, brief] if number == 0 else [brief]
        cluster(canonical, main + brief, main + printed)
    for number in range(2):
        slug = f"note-{number}"
        text = prose(200 + number)
        note, printed = f"/notes/{slug}.html", f"/print/notes/{slug}.html"
        shared = f"{note}?ref=home"
        serve(note, page(f"Note {number}", text, links=(printed,)))
        serve(printed, page(f"Note {number}", text))
        serve(shared, page(f"Note {number}", text, links=(printed,)))
        home += [printed, shared, note]
        cluster(main + note, main + note, main + printed, main + shared)
    listing = "".join(f'<a href="{href}">{href}</a> ' for href in home)
    serve("/", f"<html><body>{listing}</body></html>".encode())
    mirror_listing = "".join(f'<a href="{href}">{href}</a> ' for href in mirror_home)
    serve("/mirror-home.html", f"<html><body>{mirror_listing}</body></html>".encode())
    site.starts = [main + "/", mirror + "/mirror-home.html"]


def crawl(
    site: Site, workdir: Path, name: str, settings: dict[str, Any] | None = None
) -> CrawlResult:
    """One crawl of both hosts from their home pages (not fingerprinted: listings)."""
    spec = {
        "follow": True,
        "requests": [{"url": url, "meta": {"dont_simhash": True}} for url in site.starts],
        "settings": {**SETTINGS, **(settings or {})},
    }
    result = run_crawl(workdir, spec, name=name)
    assert result.errors == []
    assert "Traceback" not in result.log, result.log[-3000:]
    return result


def cli(workdir: Path, *args: str) -> tuple[int, str]:
    """``scrapy-simhash ARGS`` on the crawl's store, in a process of its own."""
    store = f"sqlite:///{workdir / '.scrapy' / 'simhash' / 'index.sqlite3'}"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy_simhash",
            *args,
            "--index-url",
            store,
            "--namespace",
            "pages",
            "-s",
            "SIMHASH_TOKENIZER=rjieba",
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, proc.stdout


@dataclass
class Outcome:
    """One crawl as its items and its log tell it."""

    fetched: set[str]
    delivered: set[str]
    #: URL dropped -> the URL the log says it copies (None: "the page another URL filed
    #: under this canonical URL", which names none).
    dropped: dict[str, str | None]
    #: The close line: pages checked, unique, near-duplicates, dropped.
    line: tuple[int, ...]


DROP_LINE = re.compile(r"Dropped near-duplicate (\S+) of (\S+?)(?:,| \()")
CLOSE_LINE = re.compile(
    r"SimHash: (\d+) pages checked, (\d+) unique, (\d+) near-duplicates \((\d+) dropped\)"
    r".* in this crawl"
)
URL = re.compile(r"https?://[^\s;,()]+")


def outcome(result: CrawlResult, site: Site) -> Outcome:
    starts = set(site.starts)
    delivered = {
        item["url"] for item in result.items if "errback" not in item and item["url"] not in starts
    }
    dropped: dict[str, str | None] = {
        url: None if kept == "the" else kept for url, kept in DROP_LINE.findall(result.log)
    }
    match = CLOSE_LINE.search(result.log)
    assert match is not None, result.log[-2000:]
    return Outcome(
        set(result.signals["page_observed"]),
        delivered,
        dropped,
        tuple(int(n) for n in match.groups()),
    )


def row(out: str, label: str) -> int:
    found = re.search(rf"^  {label} +(\d+)", out, re.MULTILINE)
    assert found is not None, out
    return int(found.group(1))


def test_counts_records_and_lookup_agree_with_the_crawl(
    http_site: SiteServer, tmp_path: Path
) -> None:
    site = Site(f"http://127.0.0.1:{http_site.port}", f"http://localhost:{http_site.port}")
    latest: dict[str, str] = {}  # URL -> "delivered" or "dropped", by its latest fetch
    for round_ in (1, 2):
        build_site(http_site, site, round_)
        result = crawl(site, tmp_path, f"round{round_}")
        seen = outcome(result, site)
        stats = result.simhash_stats()
        # The close line says what the crawl's stats say.
        assert seen.line == tuple(
            stats.get(f"simhash/{n}", 0) for n in ("pages", "unique", "duplicate", "dropped")
        )
        # Every page fetched either reached the spider with its items or was dropped, and
        # the log names each URL dropped: as many as it counts.
        assert seen.fetched == seen.delivered | set(seen.dropped)
        assert not seen.delivered & set(seen.dropped)
        assert len(seen.dropped) == stats["simhash/dropped"] == stats["simhash/duplicate"]
        assert stats["simhash/unique"] == len(seen.delivered)
        # One page of each cluster reached the spider, whichever URL came first.
        for name, urls in site.clusters.items():
            assert len(urls & seen.delivered) == 1, (round_, name, urls & seen.delivered)
        latest.update(dict.fromkeys(seen.delivered, "delivered"))
        latest.update(dict.fromkeys(seen.dropped, "dropped"))
        dropped = {url for url, what in latest.items() if what == "dropped"}

        # stats and report count the namespace over both crawls: the URLs dropped when
        # last fetched, each once (the second round's new tracking links add to the first
        # round's copies), and the pages kept, one per cluster.
        _, out = cli(tmp_path, "stats")
        assert "over all crawls" in out
        _, text = cli(tmp_path, "report", "--json", "--top", "100")
        report = json.loads(text)
        copies = {url for cluster in report["clusters"] for url, _ in cluster["copies"]}
        assert copies == dropped, (round_, copies ^ dropped)
        assert row(out, "near-duplicates dropped") == report["dropped"] == len(dropped)
        assert row(out, "pages kept") == report["kept"] == len(site.clusters)
        if round_ == 1:  # a fresh namespace: the crawl's counts are the namespace's
            assert report["dropped"] == seen.line[3]
            assert report["kept"] == seen.line[1]
        else:
            assert report["dropped"] > seen.line[3]

        # lookup tells each URL's story as the log told it: a URL that reached the spider
        # is never called a copy, a dropped one is a copy of what the log says, and every
        # URL it names is a URL of the same page.
        for url, what in sorted(latest.items()):
            code, out = cli(tmp_path, "lookup", url)
            assert code == 0, out
            named = {found.rstrip(":") for found in URL.findall(out)}
            assert named <= site.cluster_of(url), (url, out)
            mine = [line for line in out.splitlines() if line.startswith(f"{url}: ")]
            if what == "delivered":
                assert not any("near-duplicate" in line or "dropped" in line for line in mine), (
                    round_,
                    url,
                    out,
                )
                continue
            assert any("near-duplicate" in line or "dropped as" in line for line in mine), (
                round_,
                url,
                out,
            )
            if url in seen.dropped and seen.dropped[url] is not None:
                assert seen.dropped[url] in named, (url, seen.dropped[url], out)


def test_in_mark_only_mode_copies_are_counted_and_told_as_marked_not_dropped(
    http_site: SiteServer, tmp_path: Path
) -> None:
    """SIMHASH_DROP_DUPLICATES = False: every copy reaches the spider with ``duplicate_of``
    set, so no URL is counted dropped; the close line's near-duplicates are the URLs that
    ``stats`` and ``report`` count marked, and ``lookup`` says each was marked, not
    dropped, naming what its item's ``duplicate_of`` names."""
    site = Site(f"http://127.0.0.1:{http_site.port}", f"http://localhost:{http_site.port}")
    build_site(http_site, site, 1)
    result = crawl(site, tmp_path, "marked", {"SIMHASH_DROP_DUPLICATES": False})
    seen = outcome(result, site)
    marked = {
        item["url"]: item["simhash"]["duplicate_of"]
        for item in result.items
        if (item.get("simhash") or {}).get("duplicate_of")
    }
    assert seen.fetched == seen.delivered  # nothing dropped
    assert seen.dropped == {}
    pages, unique, duplicates, dropped = seen.line
    assert (dropped, duplicates, unique) == (0, len(marked), pages - len(marked))
    assert len(marked) >= len(site.clusters)  # every article, brief and note has copies

    _, out = cli(tmp_path, "stats")
    assert row(out, "near-duplicates dropped") == 0
    assert row(out, "near-duplicates marked") == len(marked)
    _, text = cli(tmp_path, "report", "--json")
    report = json.loads(text)
    assert (report["dropped"], report["marked"], report["clusters"]) == (0, len(marked), [])

    for url in sorted(seen.delivered):
        code, out = cli(tmp_path, "lookup", url)
        assert code == 0, out
        mine = [line for line in out.splitlines() if line.startswith(f"{url}: ")]
        named = {found.rstrip(":") for found in URL.findall(out)}
        assert named <= site.cluster_of(url), (url, out)
        if url not in marked:
            assert not any("near-duplicate" in line or "marked" in line for line in mine), out
            continue
        assert any("marked as" in line and "not dropped" in line for line in mine), (url, out)
        assert not any("dropped as" in line or "dropped 20" in line for line in mine), out
        assert marked[url] in named, (url, marked[url], out)


# -- every arrival order, in one process -------------------------------------------------------

SITE = "https://news.example.com"
CLEAN = f"{SITE}/news/orchard.html"
#: URLs of one page naming no canonical URL: the preference renames the cluster as better
#: URLs arrive (a chain of names when they arrive worst first).
UNDECLARED = (
    f"{SITE}/print/news/orchard.html?utm_source=x",
    f"{SITE}/print/news/orchard.html",
    f"{SITE}/news/orchard.html?utm_source=x",
    CLEAN,
)
#: URLs of one page naming the clean URL canonical (the canonical URL among them).
DECLARED = (f"{SITE}/print/news/orchard.html", f"{SITE}/amp/news/orchard.html", CLEAN)


def _lookup(index_url: str, url: str, capsys: pytest.CaptureFixture[str]) -> str:
    from scrapy_simhash.cli import main

    capsys.readouterr()
    assert main(["lookup", url, "--index-url", index_url, "--namespace", "inprocess"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("declared", [False, True], ids=["undeclared", "canonical"])
def test_in_every_arrival_order_records_count_the_urls_dropped(
    declared: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each order of arrival, twice (the second crawl meets what the first stored): the
    URLs counted dropped are those the crawl dropped when they were last fetched, the
    URL that reached the spider is never called a copy, and each dropped URL's lookup
    names what its log line named."""
    from scrapy.http import HtmlResponse

    from scrapy_simhash.cli._records import tally
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.index import open_index
    from scrapy_simhash.index.drops import kept_name
    from scrapy_simhash.settings import fingerprint_config, index_kwargs
    from tests.scrapy_inprocess import ORCHARD, harness, story

    fingerprinter = Fingerprinter(fingerprint_config({}))
    kwargs = index_kwargs(
        {}, namespace="inprocess", bits=fingerprinter.bits, scheme=fingerprinter.scheme
    )
    urls = DECLARED if declared else UNDECLARED
    body = story(ORCHARD, canonical=CLEAN if declared else None)
    for number, order in enumerate(itertools.permutations(urls)):
        index_url = f"sqlite:///{tmp_path / f'order{number}.sqlite3'}"
        latest: dict[str, str | None] = {}  # URL -> None: delivered, else the URL it copies
        for crawl_order in (order, order[::-1]):
            with harness(SIMHASH_INDEX_URL=index_url, SIMHASH_DROP_DUPLICATES=True) as h:
                for url in crawl_order:
                    result, _ = h.fetch(url, body)
                    latest[url] = None if isinstance(result, HtmlResponse) else result.kept_url
                delivered = [url for url in crawl_order if latest[url] is None]
                assert len(delivered) == 1, (order, crawl_order, latest)
            with open_index(index_url, **kwargs) as index:
                records = tally(index.drops())
                stored = set(index.keys())
                names = {
                    kept_name(index.drop_of, url, stored.__contains__)
                    for url in urls
                    if url not in stored
                }
                assert names <= stored, (order, names)
            dropped = {url for url, kept in latest.items() if kept is not None}
            assert {r.url for r in records.dropped} == dropped, (order, crawl_order, records)
            assert not {r.url for r in records.filed} & dropped
        for url, kept in latest.items():
            out = _lookup(index_url, url, capsys)
            mine = [line for line in out.splitlines() if line.startswith(f"{url}: ")]
            if kept is None:
                assert not any("near-duplicate" in line or "dropped" in line for line in mine), (
                    order,
                    url,
                    out,
                )
            else:
                assert any("near-duplicate" in line or "dropped as" in line for line in mine)
                assert kept in out, (order, url, kept, out)


# -- every stat the code counts is in the README's list ---------------------------------------

PACKAGE = REPO / "scrapy_simhash"
#: Modules whose counts become ``simhash/NAME`` (their ``count``/``_count``/``_inc`` calls),
#: and the prefix each adds; the verdict step and the stores count for the page middleware
#: and for the item pipeline alike (``items_`` prefix).
COUNTING = {
    "glue/middleware.py": ("",),
    "glue/wiring.py": ("",),
    "glue/templates.py": ("",),
    "glue/stores.py": ("", "items_"),
    "verdict.py": ("", "items_"),
    "filings.py": ("",),  # the page middleware's alone
    "glue/pipeline.py": ("items_",),
    "glue/dust.py": ("dust/",),
}
#: Names the heuristic above makes that no code counts: the pipeline keeps no schedule.
NOT_COUNTED = {"items_recrawl_error", "items_recrawl_lost"}
CALL = re.compile(r"""(?:\b_inc|\b_count|\bcount)\(\s*["']([a-z_/]+)["']""")
DIRECT = re.compile(r"""(?:inc_value|set_value)\(\s*["']simhash/([a-z_/]+)["']""")


def _counted() -> set[str]:
    """Every stat name the code counts, as ``simhash/`` is followed."""
    from scrapy_simhash.recrawl.state import FAILED, MISSING, NOT_MODIFIED, RETIRED

    names: set[str] = set()
    for module, prefixes in COUNTING.items():
        source = (PACKAGE / module).read_text(encoding="utf-8")
        found = set(CALL.findall(source))
        names |= {prefix + name for prefix in prefixes for name in found}
    for path in PACKAGE.rglob("*.py"):
        names |= set(DIRECT.findall(path.read_text(encoding="utf-8")))
    middleware = (PACKAGE / "glue/middleware.py").read_text(encoding="utf-8")
    skip = middleware.split("def _skip_reason", 1)[1].split("\n    def ", 1)[0]
    names |= {f"skipped/{reason}" for reason in re.findall(r'return "([a-z_]+)"', skip)}
    names |= {f"recrawl/{outcome}" for outcome in (NOT_MODIFIED, MISSING, RETIRED, FAILED)}
    workers = (PACKAGE / "glue/workers.py").read_text(encoding="utf-8")
    names |= set(re.findall(r'stats\["([a-z_]+)"\]', workers))
    names |= set(re.findall(r'\{"([a-z_]+)": self\.cache_hits\}', workers))
    return names - NOT_COUNTED


def _listed() -> set[str]:
    """The stat names the README's **Stats** paragraph lists (``a/{b,c}`` spelled out)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("**Stats**", 1)[1].split("\n\n", 1)[0]
    names: set[str] = set()
    for code in re.findall(r"`([^`]+)`", paragraph):
        code = code.removeprefix("simhash/")
        group = re.fullmatch(r"([a-z_/]*)\{([a-z_,]+)\}([a-z_/]*)", code)
        if group:
            names |= {group[1] + part + group[3] for part in group[2].split(",")}
        elif re.fullmatch(r"[a-z_/]+", code):
            names.add(code)
    return names


def test_the_readme_lists_every_stat_the_code_counts() -> None:
    counted = _counted()
    assert {
        "pages",
        "dropped",
        "template/applied",
        "skipped/not_a_page",
        "dust/pairs",
        "items_seen",
        "redis_evicted_keys",
        "fingerprint_cpu_us",
    } <= counted
    missing = sorted(counted - _listed())
    assert missing == [], f"README's Stats paragraph lacks {missing}"
