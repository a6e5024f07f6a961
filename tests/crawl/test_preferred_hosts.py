"""A mirror does not win the race (issue 37, item 3): SIMHASH_PREFERRED_HOSTS.

With a preference set, a page is named by the preferred host's URL even when its mirror
arrives first: that URL takes the entry over and reaches the spider; the mirror's item had
gone out already (said in the README), and the mirror is recorded as filed under it. Verdict
steps over every backend, the middleware in-process, and real crawls in one process and in
two sharing Redis, with ``lookup`` and ``report`` read afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_simhash.canonical import check_hosts, host_preferred, host_rank
from scrapy_simhash.cli import main
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index.drops import FILED, kept_name
from scrapy_simhash.verdict import DUPLICATE, UNIQUE
from tests.conftest import backend_params, backend_url
from tests.naming_stores import NEAR_A, A, Stores, run
from tests.scrapy_inprocess import HARBOUR, harness, story
from tests.scrapy_runner import ONE_AT_A_TIME, run_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

pytest_plugins = ["tests.http_site"]

SITE = "https://www.example.com/about.html"
MIRROR = "https://mirror.example.net/about.html"
HOSTS = ("example.com",)


def test_hosts_are_ranked_best_first_and_a_name_covers_its_subdomains() -> None:
    hosts = check_hosts(["Example.COM.", " mirror.example.net "])
    assert hosts == ("example.com", "mirror.example.net")
    assert [host_rank(u, hosts) for u in (SITE, MIRROR, "https://other.org/")] == [0, 1, 2]
    assert host_rank("https://notexample.com/", hosts) == 2  # a suffix is no subdomain
    assert host_preferred(SITE, MIRROR, hosts) is True
    assert host_preferred(MIRROR, SITE, hosts) is False
    assert host_preferred(SITE, "https://example.com/x", hosts) is None  # the same rank
    assert host_preferred(SITE, MIRROR, ()) is None
    for wrong in ("https://example.com", "example.com/news", "example.com:8080", ".example.com"):
        with pytest.raises(ConfigurationError, match="`prefer_hosts`"):
            check_hosts([wrong])


@pytest.fixture(params=backend_params(("memory", "sqlite", "redis", "sharded")))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def test_the_preferred_host_takes_the_page_over_from_a_mirror_that_came_first(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url, hosts=HOSTS)
        assert (await stores.page(MIRROR, A)).outcome == UNIQUE  # delivered: unavoidable
        await stores.page(MIRROR, A)  # fetched again: a visit, its history grows
        site = await stores.page(SITE, NEAR_A)
        assert (site.outcome, site.key, site.renamed_from) == (UNIQUE, SITE, MIRROR)
        # Its history is the mirror's (one page, one history), yet no change is said of a
        # URL reaching the spider for the first time.
        assert (site.changed, site.change_distance) == (None, None)
        assert await stores.call("get", SITE) == NEAR_A
        assert await stores.call("get", MIRROR) is None
        record = await stores.call("drop_of", MIRROR)
        assert (record.kept, record.distance) == (SITE, FILED)
        assert (await stores.state(SITE)).visits == 3
        assert await stores.state(MIRROR) is None
        # Further copies, on the mirror or not, are the site's copies.
        copy = await stores.page("https://mirror.example.net/about.html?ref=1", A)
        assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, SITE)

        # The next crawl: the mirror first is a copy at once; the site's URL a visit.
        stores.crawl()
        again = await stores.page(MIRROR, A)
        assert (again.outcome, again.duplicate_of) == (DUPLICATE, SITE)
        visit = await stores.page(SITE, NEAR_A)
        assert (visit.outcome, visit.changed, visit.renamed_from) == (UNIQUE, False, None)

        def drop_of(key: str) -> Any:
            return records[key]

        records = {k: await stores.call("drop_of", k) for k in (MIRROR, SITE)}
        assert kept_name(drop_of, MIRROR) == SITE
        await stores.close()

    run(scenario())


def test_a_mirror_never_takes_the_page_from_the_preferred_host(url: str) -> None:
    async def scenario() -> None:
        stores = Stores(url, hosts=HOSTS)
        await stores.page(SITE, A)
        copy = await stores.page(MIRROR, NEAR_A)
        assert (copy.outcome, copy.duplicate_of) == (DUPLICATE, SITE)
        # Unlisted hosts among themselves: the first keeps the page, as without a preference.
        other = "https://copies.example.org/about.html"
        stores.crawl()
        assert (await stores.page(MIRROR, A ^ 0xFFFF_0000_0000)).outcome == UNIQUE
        late = await stores.page(other, A ^ 0xFFFF_0000_0001)
        assert (late.outcome, late.duplicate_of) == (DUPLICATE, MIRROR)
        await stores.close()

    run(scenario())


def test_the_takeover_holds_across_processes(url: str) -> None:
    """The mirror filed by one process, the preferred URL by another with no memory of it:
    the decision rests on the URLs and the index alone."""

    async def scenario() -> None:
        stores = Stores(url, hosts=HOSTS)
        first, second = stores.crawl(), stores.crawl()
        await stores.page(MIRROR, A, first)
        site = await stores.page(SITE, NEAR_A, second)
        assert (site.outcome, site.renamed_from) == (UNIQUE, MIRROR)
        late = await stores.page("https://mirror.example.net/about.html?s=2", A, first)
        assert (late.outcome, late.duplicate_of) == (DUPLICATE, SITE)
        await stores.close()

    run(scenario())


def test_the_middleware_passes_the_preferred_page_and_its_meta_says_what_it_took_over() -> None:
    body = story(HARBOUR)
    with harness(SIMHASH_PREFERRED_HOSTS="www.example.com") as h:
        _, mirror_meta = h.fetch(MIRROR, body)
        site, site_meta = h.fetch(SITE, body)
        assert mirror_meta["key"] == MIRROR
        assert not isinstance(site, Exception), site
        assert (site_meta["key"], site_meta["renamed_from"]) == (SITE, MIRROR)
        assert site_meta["duplicate_of"] is None
        assert (h.stat("unique"), h.stat("duplicate")) == (2, None)
        assert h.index("count") == 1
        assert h.index("get", SITE) is not None


def _crawl(tmp_path: Path, urls: list[str], settings: dict[str, Any], name: str) -> set[str]:
    result = run_crawl(
        tmp_path, {"requests": [{"url": u} for u in urls], "settings": settings}, name=name
    )
    assert result.errors == []
    assert "Traceback" not in result.log, result.log[-3000:]
    return {item["url"] for item in result.items}


def _lookup_and_report(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    common: list[str],
    site: str,
    mirror: str,
    *,
    dropped: bool,
) -> None:
    """What ``lookup`` and ``report`` say: the mirror filed under the site's URL (it reached
    the spider), or, once fetched again, dropped as its copy."""
    monkeypatch.chdir(tmp_path)
    assert main(["lookup", mirror, *common]) == 0
    said = capsys.readouterr().out
    if dropped:
        assert f"{mirror}: near-duplicate of {site} " in said, said
    else:
        assert (
            f"its page filed under {site}, on a preferred host (SIMHASH_PREFERRED_HOSTS)" in said
        ), said
    assert main(["lookup", site, *common]) == 0
    assert capsys.readouterr().out.strip().count("\n") == 0  # its fingerprint, no record
    assert main(["report", "--json", *common]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["kept"], report["dropped"], report["filed"]) == (1, int(dropped), 1 - dropped)
    hosts = {host: (kept, dropped) for host, kept, dropped in report["hosts"]}
    assert hosts[site.split("/")[2]] == (1, 0)
    assert [c["kept"] for c in report["clusters"]] == ([site] if dropped else [])


@pytest.mark.crawl
def test_a_real_crawl_names_the_page_by_the_preferred_host(
    http_site: SiteServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site = http_site.url("about.html")
    mirror = site.replace("127.0.0.1", "localhost").replace("/about", "/mirror/about")
    for path in ("/about.html", "/mirror/about.html"):
        http_site.pages[path] = ("text/html", story(HARBOUR))
    settings = {**ONE_AT_A_TIME, "SIMHASH_PREFERRED_HOSTS": "127.0.0.1"}
    common = [
        "--namespace",
        "pages",
        "-s",
        "SIMHASH_TOKENIZER=rjieba",
        "-s",
        "SIMHASH_PREFERRED_HOSTS=127.0.0.1",
    ]
    assert _crawl(tmp_path, [mirror, site], settings, "first") == {mirror, site}
    _lookup_and_report(tmp_path, monkeypatch, capsys, common, site, mirror, dropped=False)
    assert _crawl(tmp_path, [mirror, site], settings, "second") == {site}
    _lookup_and_report(tmp_path, monkeypatch, capsys, common, site, mirror, dropped=True)


@pytest.mark.crawl
@pytest.mark.redis
def test_two_processes_sharing_redis_name_the_page_by_the_preferred_host(
    http_site: SiteServer,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One process crawls the mirror, another the site afterwards: the second has no memory
    of the first, only the shared index."""
    site = http_site.url("about.html")
    mirror = site.replace("127.0.0.1", "localhost").replace("/about", "/mirror/about")
    for path in ("/about.html", "/mirror/about.html"):
        http_site.pages[path] = ("text/html", story(HARBOUR))
    settings = {
        **ONE_AT_A_TIME,
        "SIMHASH_PREFERRED_HOSTS": ["127.0.0.1"],
        "SIMHASH_INDEX_URL": redis_url,
        "SIMHASH_NAMESPACE": "shared",
    }
    common = [
        "--namespace",
        "shared",
        "-s",
        "SIMHASH_TOKENIZER=rjieba",
        "-s",
        f"SIMHASH_INDEX_URL={redis_url}",
        "-s",
        "SIMHASH_PREFERRED_HOSTS=127.0.0.1",
    ]
    assert _crawl(tmp_path / "a", [mirror], settings, "mirror") == {mirror}
    assert _crawl(tmp_path / "b", [site], settings, "site") == {site}
    _lookup_and_report(tmp_path, monkeypatch, capsys, common, site, mirror, dropped=False)
    assert _crawl(tmp_path / "a", [mirror], settings, "mirror-again") == set()
    _lookup_and_report(tmp_path, monkeypatch, capsys, common, site, mirror, dropped=True)
