"""Real crawls sharing a real Redis: the index, recrawl observations, outages, several processes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store
from tests.conftest import backend_params, backend_url
from tests.redis_servers import RedisServer
from tests.scrapy_runner import CrawlResult, finish_crawl, run_crawl, start_crawl

if TYPE_CHECKING:
    from tests.http_site import SiteServer

# The local site's fixtures (http_site, http_site_server).
pytest_plugins = ["tests.http_site"]

pytestmark = [pytest.mark.crawl, pytest.mark.redis]

BASE = {
    "ADDONS": {"scrapy_simhash.Addon": 0},
    "CONCURRENT_REQUESTS": 1,
    "SIMHASH_WORKERS": 0,
    "SIMHASH_TOKENIZER": "rjieba",
}


def requests(site: SiteServer, pages: list[str]) -> list[dict[str, Any]]:
    return [{"url": site.url(p)} for p in pages]


def no_errors(result: CrawlResult) -> None:
    assert result.errors == []
    assert "Traceback" not in result.log, result.log[-3000:]
    assert result.stats.get("finish_reason") == "finished"


def test_redis_index_and_change_observations(
    http_site: SiteServer, redis_url: str, tmp_path: Path
) -> None:
    settings = {**BASE, "SIMHASH_INDEX_URL": redis_url, "SIMHASH_NAMESPACE": "news"}
    pages = ["harbour.html", "harbour-copy.html", "switch.html", "etag/telescope.html"]
    first = run_crawl(tmp_path, {"requests": requests(http_site, pages), "settings": settings})
    no_errors(first)
    assert first.urls() == {http_site.url(p) for p in pages} - {http_site.url("harbour-copy.html")}
    assert not (tmp_path / ".scrapy").exists()  # nothing went to the embedded store

    scheme = Fingerprinter(FingerprintConfig(tokenizer="rjieba")).scheme
    with open_index(redis_url, namespace="news", scheme=scheme) as index:
        assert len(index) == 3
        assert index.get(http_site.url("harbour-copy.html")) is None

    # Second visit: the switchable page changed, the harbour page did not (its callback is
    # skipped), and the telescope page answers 304 to its ETag.
    http_site.version = 2
    telescope = (http_site.site_dir / "telescope.html").read_bytes()
    etag = '"' + hashlib.sha1(telescope).hexdigest()[:16] + '"'
    second_requests = [
        *requests(http_site, ["switch.html", "harbour.html"]),
        {
            "url": http_site.url("etag/telescope.html"),
            "headers": {"If-None-Match": etag},
            "meta": {"handle_httpstatus_list": [304]},
        },
    ]
    second = run_crawl(
        tmp_path,
        {"requests": second_requests, "settings": {**settings, "SIMHASH_SKIP_UNCHANGED": True}},
        name="second",
    )
    no_errors(second)
    by_url = {item["url"]: item for item in second.items}
    assert set(by_url) == {http_site.url("switch.html"), http_site.url("etag/telescope.html")}
    switch = by_url[http_site.url("switch.html")]["simhash"]
    assert switch["changed"] is True
    assert switch["change_distance"] > 3
    assert by_url[http_site.url("etag/telescope.html")]["status"] == 304
    stats = second.simhash_stats()
    assert stats["simhash/changed"] == 1
    assert stats["simhash/unchanged"] == 2  # harbour, and the telescope's 304
    assert stats["simhash/recrawl/not_modified"] == 1
    assert stats["simhash/skipped_unchanged"] == 1

    with open_recrawl_store(redis_url, namespace="news") as store:
        switch_state = store.get(http_site.url("switch.html"))
        assert switch_state is not None
        assert (switch_state.visits, switch_state.changes) == (2, 1)
        telescope_state = store.get(http_site.url("etag/telescope.html"))
        assert telescope_state is not None
        assert telescope_state.visits == 2
        assert telescope_state.status == 304


def test_crawl_survives_redis_going_away(
    http_site: SiteServer, own_redis: RedisServer, tmp_path: Path
) -> None:
    password = "s3cret-Pa55"

    def protect() -> None:
        client = redis.Redis.from_url(own_redis.url)
        client.config_set("requirepass", password)
        client.close()

    def restart() -> None:
        own_redis.start()
        protect()

    protect()
    url = f"redis://:{password}@127.0.0.1:{own_redis.port}/0"
    # Redis stops right when telescope.html is requested and is back for school.html.
    http_site.hooks["/telescope.html"] = own_redis.stop
    http_site.hooks["/school.html"] = restart
    pages = [
        "harbour.html",
        "orchard.html",
        "telescope.html",  # index down from here ...
        "harbour-copy.html",  # ... so this duplicate passes rather than being dropped
        "library.html",  # ... up to here
        "school.html",
        "school-gbk.html",  # index back: dropped as a duplicate of school.html
    ]
    settings = {
        **BASE,
        "SIMHASH_INDEX_URL": url,
        "SIMHASH_INDEX_RETRY_AFTER_SECS": 0,
        "SIMHASH_INDEX_TIMEOUT_SECS": 5,
        "SIMHASH_RECRAWL_ENABLED": False,
    }
    result = run_crawl(tmp_path, {"requests": requests(http_site, pages), "settings": settings})
    assert result.errors == []
    assert result.stats["finish_reason"] == "finished"
    assert result.urls() == {http_site.url(p) for p in pages} - {http_site.url("school-gbk.html")}
    by_url = {item["url"]: item["simhash"] for item in result.items}
    assert by_url[http_site.url("harbour-copy.html")]["reason"].startswith("index unavailable")
    stats = result.simhash_stats()
    assert stats["simhash/index_error"] == 3
    assert stats["simhash/dropped"] == 1
    # One line when the outage starts per thing the crawl does without (the template
    # memory, asked first, then the index), without a traceback, then quiet; recovery is
    # announced once; no password anywhere.
    guard_error = "[scrapy_simhash.glue.guard] ERROR: SimHash index at redis://:***@"
    assert result.log.count(guard_error) == 1
    lines = [
        line.split("ERROR: ", 1)[1]
        for line in result.log.splitlines()
        if "[scrapy_simhash.glue.guard] ERROR: " in line
    ]
    assert [line.split(" at ")[0] for line in lines] == [
        "SimHash template store",
        "SimHash index",
    ], lines
    assert "Traceback" not in result.log
    assert result.log.count("is reachable again after") == 1
    assert password not in result.log


@pytest.mark.parametrize("on_error", ["drop", "raise"])
def test_index_error_policies(http_site: SiteServer, tmp_path: Path, on_error: str) -> None:
    # A port where nothing listens: every index call fails fast.
    dead = RedisServer(tmp_path / "never-started").url
    settings = {
        **BASE,
        "SIMHASH_INDEX_URL": dead,
        "SIMHASH_ON_INDEX_ERROR": on_error,
        "SIMHASH_RECRAWL_ENABLED": False,
        "SIMHASH_INDEX_RETRY_AFTER_SECS": 60,
        "SIMHASH_INDEX_START_UNREACHABLE": True,
    }
    pages = ["harbour.html", "orchard.html"]
    result = run_crawl(tmp_path, {"requests": requests(http_site, pages), "settings": settings})
    assert result.errors == []
    assert result.items == []
    assert "not reachable at start-up" in result.log
    assert result.stats["simhash/index_error"] == 2
    if on_error == "raise":
        assert "SIMHASH_ON_INDEX_ERROR=pass to let pages through" in result.log
    else:
        assert result.stats["simhash/dropped"] == 2


@pytest.mark.parametrize("index", backend_params(["redis", "sharded"]))
def test_several_processes_share_one_crawl_with_scrapy_redis(
    http_site: SiteServer,
    redis_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    index: str,
) -> None:
    """The scheduler's queue on one Redis; the index there too, or one namespace sharded
    over a 6-master cluster (SIMHASH_INDEX_SHARDS=6)."""
    index_settings: dict[str, Any] = {"SIMHASH_INDEX_URL": redis_url}
    if index == "sharded":
        index_settings = {
            "SIMHASH_INDEX_URL": backend_url(index, request, tmp_path),
            "SIMHASH_INDEX_SHARDS": 6,
        }
    clusters = [
        ["harbour.html", "harbour-copy.html", "v/1/harbour.html", "v/2/harbour-copy.html"],
        ["orchard.html", "orchard-print.html", "v/3/orchard.html"],
        ["school.html", "school-gbk.html", "v/4/school.html"],
        ["telescope.html", "broken.html"],
        ["library.html"],
        ["switch.html"],
    ]
    urls = [http_site.url(p) for cluster in clusters for p in cluster]
    key = "shared:start_urls"
    client = redis.Redis.from_url(redis_url)
    client.rpush(key, *urls)
    client.close()
    settings = {
        **BASE,
        "CONCURRENT_REQUESTS": 2,
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 1,
        **index_settings,
    }
    spec = {"spider": "redis", "redis_key": key, "settings": settings}
    running = [start_crawl(tmp_path, spec, name=f"worker{i}") for i in range(2)]
    results = [finish_crawl(*proc) for proc in running]
    for result in results:
        assert result.errors == []
        assert result.stats["finish_reason"] == "finished"
    kept = [item["url"] for result in results for item in result.items]
    # Exactly one page of each near-duplicate cluster, each URL fetched once overall.
    assert len(kept) == len(set(kept)) == len(clusters)
    for cluster in clusters:
        assert sum(http_site.url(p) in kept for p in cluster) == 1
    assert sum(r.stats.get("simhash/pages", 0) for r in results) == len(urls)
    assert sum(r.stats.get("simhash/dropped", 0) for r in results) == len(urls) - len(clusters)
    if index == "sharded":  # the kept pages live in the shards' hash tags, one per master
        cluster_client = redis.RedisCluster.from_url(
            index_settings["SIMHASH_INDEX_URL"].replace("redis+cluster", "redis")
        )
        tags = {name.split(b"}")[0] for name in cluster_client.scan_iter(match=b"simhash:{*:s*")}
        recrawl = set(cluster_client.scan_iter(match=b"simhash:recrawl:*"))
        cluster_client.close()
        assert len(tags) == 6
        # The recrawl state is spread by URL too: under the namespace's own tag only the
        # record of the shard count.
        own = {name for name in recrawl if name.startswith(b"simhash:recrawl:{shared}")}
        assert own == {b"simhash:recrawl:{shared}:shards"}
        assert len({name.split(b"}")[0] for name in recrawl - own}) > 1


@pytest.mark.cluster
def test_redis_cluster_index(http_site: SiteServer, redis_cluster_url: str, tmp_path: Path) -> None:
    settings = {**BASE, "SIMHASH_INDEX_URL": redis_cluster_url}
    pages = ["harbour.html", "harbour-copy.html", "orchard.html", "orchard-print.html"]
    result = run_crawl(tmp_path, {"requests": requests(http_site, pages), "settings": settings})
    no_errors(result)
    assert result.urls() == {http_site.url("harbour.html"), http_site.url("orchard.html")}
    assert result.stats["simhash/dropped"] == 2
    assert "redis+cluster://127.0.0.1" in result.log
