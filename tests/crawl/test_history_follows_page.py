"""A page's history follows the page, not the URL that arrives first (issue 36, item 4).

A site and its mirror: crawl 1 keeps the article and drops the mirror as its copy; the
article changes; crawl 2 fetches the mirror first. The mirror reaches the spider (nothing
yet says the article changed the same way), and when the article's own URL comes it takes
its page back: the change is counted in its history, the mirror is recorded as filed under
it, and crawl 3 drops the mirror again whichever comes first. Verdict steps over every
backend here; a real crawl of a site and its mirror, with the command line, at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_simhash.cli import main
from scrapy_simhash.cli._records import DROPPED, kind, tally
from scrapy_simhash.index.drops import FILED, OWN_PAGE, kept_name
from scrapy_simhash.verdict import DUPLICATE, UNIQUE
from tests.conftest import backend_params, backend_url
from tests.naming_stores import CHANGED_A, NEAR_A, NEAR_CHANGED_A, A, Stores, run
from tests.scrapy_inprocess import HARBOUR, story
from tests.scrapy_runner import ONE_AT_A_TIME, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

ARTICLE = "https://news.example.com/a.html"
MIRROR = "https://mirror.example.net/news/a.html"


@pytest.fixture(params=backend_params(("memory", "sqlite", "redis", "sharded")))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def test_the_url_that_held_a_changed_page_takes_it_back_from_the_copy_fetched_first(
    url: str,
) -> None:
    async def scenario() -> None:
        stores = Stores(url)
        # Crawl 1: the article, then its mirror, dropped as its copy.
        assert (await stores.page(ARTICLE, A)).outcome == UNIQUE
        dropped = await stores.page(MIRROR, NEAR_A)
        assert (dropped.outcome, dropped.duplicate_of) == (DUPLICATE, ARTICLE)

        # Crawl 2: the page changed; the mirror comes first and reaches the spider.
        stores.crawl()
        mirror = await stores.page(MIRROR, CHANGED_A)
        assert mirror.outcome == UNIQUE
        article = await stores.page(ARTICLE, NEAR_CHANGED_A)
        assert (article.outcome, article.key, article.renamed_from) == (UNIQUE, ARTICLE, MIRROR)
        assert (article.changed, article.change_distance) == (True, 30)
        # One entry, under the article's URL, with the article's own fingerprint.
        assert await stores.call("get", ARTICLE) == NEAR_CHANGED_A
        assert await stores.call("get", MIRROR) is None
        assert await stores.call("count") == 1
        # The mirror reached the spider: a filing record (no drop), naming the article.
        record = await stores.call("drop_of", MIRROR)
        assert (record.kept, record.distance) == (ARTICLE, FILED)
        # One history: the article's, with the change counted; the mirror off the schedule.
        state = await stores.state(ARTICLE)
        assert (state.visits, state.changes) == (2, 1)
        assert await stores.state(MIRROR) is None

        # Crawl 3, unchanged: the mirror first again is the article's copy.
        stores.crawl()
        again = await stores.page(MIRROR, CHANGED_A)
        assert (again.outcome, again.duplicate_of) == (DUPLICATE, ARTICLE)
        visit = await stores.page(ARTICLE, NEAR_CHANGED_A)
        assert (visit.outcome, visit.changed, visit.renamed_from) == (UNIQUE, False, None)
        assert (await stores.state(ARTICLE)).visits == 3
        await stores.close()

    run(scenario())


def test_a_url_dropped_once_and_filed_as_a_page_of_its_own_is_no_longer_counted_dropped(
    url: str,
) -> None:
    """The mirror, dropped in crawl 1, is filed under its own URL in crawl 2 (the page
    changed, its article not fetched yet): from that filing on, its record no longer says
    dropped (``stats``, ``report`` and ``lookup`` count and tell it as a page of its own),
    yet it still names the article, whose page history it is: the article fetched alike
    takes the page back as before."""

    async def scenario() -> None:
        stores = Stores(url)
        await stores.page(ARTICLE, A)
        assert (await stores.page(MIRROR, NEAR_A)).outcome == DUPLICATE
        assert kind(await stores.call("drop_of", MIRROR), lambda _: None) == DROPPED

        stores.crawl()
        assert (await stores.page(MIRROR, CHANGED_A)).outcome == UNIQUE
        record = await stores.call("drop_of", MIRROR)
        assert (record.kept, record.distance) == (ARTICLE, OWN_PAGE)
        assert tally([record]).dropped == []
        # Another process, with no memory of the filing, reads the same record.
        other = stores.crawl()
        article = await stores.page(ARTICLE, NEAR_CHANGED_A, other)
        assert (article.outcome, article.renamed_from) == (UNIQUE, MIRROR)
        record = await stores.call("drop_of", MIRROR)
        assert (record.kept, record.distance) == (ARTICLE, FILED)
        await stores.close()

    run(scenario())


def test_in_two_processes_the_url_that_held_the_page_takes_it_back(url: str) -> None:
    """The mirror filed by one process, the article fetched by another: the record the
    first crawl left is what both read, so no memory of either process is needed."""

    async def scenario() -> None:
        stores = Stores(url)
        await stores.page(ARTICLE, A)
        await stores.page(MIRROR, NEAR_A)
        first, second = stores.crawl(), stores.crawl()
        assert (await stores.page(MIRROR, CHANGED_A, first)).outcome == UNIQUE
        article = await stores.page(ARTICLE, NEAR_CHANGED_A, second)
        assert (article.outcome, article.changed, article.renamed_from) == (UNIQUE, True, MIRROR)
        # A later copy in the first process is the article's copy.
        late = await stores.page("https://mirror.example.net/news/a.html?ref=x", CHANGED_A, first)
        assert (late.outcome, late.duplicate_of) == (DUPLICATE, ARTICLE)
        await stores.close()

    run(scenario())


def test_a_distinct_page_that_changed_into_a_copy_of_another_takes_nothing_over(
    url: str,
) -> None:
    """Only a URL recorded as the holder's copy takes it back: two pages kept apart, one
    of which comes to copy the other, leave the other's page and history alone."""

    async def scenario() -> None:
        stores = Stores(url)
        other = "https://news.example.com/b.html"
        await stores.page(ARTICLE, A)
        await stores.page(other, CHANGED_A)
        stores.crawl()
        assert (await stores.page(other, CHANGED_A)).changed is False
        copy = await stores.page(ARTICLE, NEAR_CHANGED_A)
        assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, other)
        assert await stores.call("get", other) == CHANGED_A
        assert (await stores.state(other)).visits == 2
        await stores.close()

    run(scenario())


def test_a_cluster_named_by_the_url_rules_keeps_its_name_and_history(url: str) -> None:
    """SIMHASH_PREFER_URLS named the cluster by its clean URL, the print view having
    arrived first: after a change the print view first, then the clean URL takes the page
    back (it held it); the print view arriving after the clean URL is its copy."""

    async def scenario() -> None:
        stores = Stores(url, rules=("no_print_amp",))
        printed = "https://news.example.com/print/a.html"
        await stores.page(printed, A)
        renamed = await stores.page(ARTICLE, NEAR_A)
        assert (renamed.outcome, renamed.renamed_from) == (DUPLICATE, printed)
        stores.crawl()
        assert (await stores.page(printed, CHANGED_A)).outcome == UNIQUE
        back = await stores.page(ARTICLE, NEAR_CHANGED_A)
        assert (back.outcome, back.renamed_from, back.changed) == (UNIQUE, printed, True)
        assert await stores.call("drop_of", ARTICLE) is None  # it names the page again
        stores.crawl()
        copy = await stores.page(printed, CHANGED_A)
        assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, ARTICLE)

        def drop_of(key: str) -> Any:
            return records.get(key)

        records = {r: await stores.call("drop_of", r) for r in (printed, ARTICLE)}
        assert kept_name(drop_of, printed) == ARTICLE
        await stores.close()

    run(scenario())


CHANGED = [
    *HARBOUR[:2],
    *(
        "Late on Friday the council closed the bridge again after cracks were found in a pier.",
        "Divers will inspect every pier this week, and ferries return to their summer timetable.",
    ),
]


@pytest.mark.crawl
def test_a_real_crawl_of_a_site_and_its_mirror_keeps_one_history(
    http_site: SiteServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's scene with Scrapy, two hosts of one local server (127.0.0.1 and
    localhost), and what ``schedule``, ``lookup`` and ``report`` say after it."""
    article = http_site.url("news/a.html")
    mirror = article.replace("127.0.0.1", "localhost").replace("/news/", "/mirror/news/")
    http_site.pages["/news/a.html"] = ("text/html", story(HARBOUR))
    http_site.pages["/mirror/news/a.html"] = ("text/html", story(HARBOUR))
    settings = {**ONE_AT_A_TIME, "SIMHASH_RECRAWL_ENABLED": True}

    def crawl(urls: list[str], name: str) -> dict[str, Any]:
        result = run_crawl(
            tmp_path, {"requests": [{"url": u} for u in urls], "settings": settings}, name=name
        )
        assert result.errors == []
        assert "Traceback" not in result.log, result.log[-3000:]
        return {item["url"]: item["simhash"] for item in result.items}

    first = crawl([article, mirror], "first")
    assert set(first) == {article}
    body = story(CHANGED)
    http_site.pages["/news/a.html"] = ("text/html", body)
    http_site.pages["/mirror/news/a.html"] = ("text/html", body)
    second = crawl([mirror, article], "second")
    assert set(second) == {mirror, article}  # the mirror's item had gone out first
    assert second[article]["changed"] is True
    assert second[article]["renamed_from"] == mirror
    third = crawl([mirror, article], "third")
    assert set(third) == {article}
    assert third[article]["changed"] is False

    monkeypatch.chdir(tmp_path)
    common = ["--namespace", "pages", "-s", "SIMHASH_TOKENIZER=rjieba"]
    assert main(["schedule", article, "--json", *common]) == 0
    schedule = json.loads(capsys.readouterr().out)
    assert (schedule["visits"], schedule["changes"]) == (3, 1)
    assert main(["schedule", mirror, *common]) == 1  # its history is the article's
    assert f"its page's history is under {article}" in capsys.readouterr().out
    assert main(["lookup", mirror, *common]) == 0
    said = capsys.readouterr().out
    assert f"near-duplicate of {article}" in said, said
    assert main(["report", "--json", *common]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["kept"], report["dropped"]) == (1, 1)
    assert [(c["kept"], [u for u, _ in c["copies"]]) for c in report["clusters"]] == [
        (article, [mirror])
    ]


@pytest.mark.parametrize("kind", backend_params(("memory", "sqlite", "redis")))
def test_a_recrawl_store_moves_a_history_only_to_a_url_without_one(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    from scrapy_simhash.recrawl import open_recrawl_store

    with open_recrawl_store(backend_url(kind, request, tmp_path), namespace="adopt") as store:
        store.observe(MIRROR, A)
        store.observe(MIRROR, A)
        assert store.adopt(MIRROR, ARTICLE) is True
        assert store.get(MIRROR) is None
        moved = store.get(ARTICLE)
        assert (moved.url, moved.visits, moved.fingerprint) == (ARTICLE, 2, A)
        # A URL with a history of its own keeps it; the other URL's goes.
        store.observe(MIRROR, CHANGED_A)
        assert store.adopt(MIRROR, ARTICLE) is False
        assert store.get(ARTICLE).visits == 2
        assert store.get(MIRROR) is None
        assert store.adopt("https://never.example/", ARTICLE) is False
        assert store.adopt(ARTICLE, ARTICLE) is False
        assert store.get(ARTICLE) is not None
