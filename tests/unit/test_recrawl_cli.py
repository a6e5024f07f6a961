"""The recrawl sub-commands: due, schedule and simulate (run in-process, real stores)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from scrapy_simhash.cli import main
from scrapy_simhash.cli._target import when
from scrapy_simhash.recrawl import open_recrawl_store
from tests.conftest import Clock


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'index.sqlite3'}"


def test_due_add_list_claim(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("# seeds\nhttp://a/1\n\nhttp://a/2\n")
    assert main(["due", "--index-url", store_url, "--namespace", "n", "--add", str(urls)]) == 0
    assert "queued 2 new URL(s)" in capsys.readouterr().err
    assert main(["due", "--index-url", store_url, "--namespace", "n", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["url"] for row in listed] == ["http://a/1", "http://a/2"]
    assert (
        main(["due", "--index-url", store_url, "--namespace", "n", "--claim", "--limit", "1"]) == 0
    )
    assert capsys.readouterr().out.strip().endswith("http://a/1")
    assert main(["due", "--index-url", store_url, "--namespace", "n"]) == 0
    assert capsys.readouterr().out.strip().endswith("http://a/2")  # a/1 is leased
    assert main(["due", "--index-url", store_url, "--namespace", "other"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "no recrawl state in namespace 'other'" in err


def test_due_says_when_the_next_urls_are_due_when_none_is_due_now(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    later = time.time() + 11 * 3600
    with open_recrawl_store(store_url, namespace="n") as store:
        store.add([f"http://a/{i}" for i in range(11)], due=later)
        for _ in range(3):
            store.observe("http://a/gone", None, status=404)  # retired: never due again
    base = ["due", "--index-url", store_url, "--namespace", "n"]
    assert main(base) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"nothing due now; next 11 URLs due from {when(later)} (in 11.0h; --within 396"
    ), err
    assert main([*base, "--json"]) == 0  # stdout stays machine-readable
    out, err = capsys.readouterr()
    assert (out, err.startswith("nothing due now; next 11 URLs")) == ("", True)
    assert main([*base, "--within", "60", "--limit", "5"]) == 0
    assert capsys.readouterr().err.startswith("nothing due within 1.0m; next 5+ URLs due from")
    assert main([*base, "--within", "39700"]) == 0
    out, err = capsys.readouterr()
    assert (len(out.splitlines()), err) == (11, "")
    with open_recrawl_store(store_url, namespace="n") as store:
        for i in range(11):
            store.remove(f"http://a/{i}")
    assert main(base) == 0
    assert capsys.readouterr().err.startswith(
        "nothing due now, and none of the 1 URL(s) of namespace 'n'"
    )


def test_due_reads_store_and_namespace_from_settings(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recrawl_store(store_url, namespace="spider") as store:
        store.add(["http://b/1"])
    argv = ["due", "-s", f"SIMHASH_INDEX_URL={store_url}", "-s", "SIMHASH_NAMESPACE=spider"]
    assert main(argv) == 0
    assert "http://b/1" in capsys.readouterr().out


@pytest.mark.redis
def test_due_pushes_to_a_scrapy_redis_start_key(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recrawl_store(redis_url, namespace="shared") as store:
        store.add(["http://c/1", "http://c/2"])
    argv = [
        "due",
        "--index-url",
        redis_url,
        "--namespace",
        "shared",
        "--push-redis-key",
        "shared:start_urls",
    ]
    assert main(argv) == 0
    assert "pushed 2 URL(s)" in capsys.readouterr().err
    client = redis.Redis.from_url(redis_url)
    assert client.lrange("shared:start_urls", 0, -1) == [b"http://c/1", b"http://c/2"]
    assert main(argv) == 0  # both are leased now: nothing pushed twice
    assert client.llen("shared:start_urls") == 2
    client.close()


def test_push_needs_a_redis_target(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["due", "--index-url", store_url, "--push-redis-key", "k"]) == 2
    assert "--redis" in capsys.readouterr().err


def test_schedule_explains_one_page(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock(1_700_000_000.0)
    with open_recrawl_store(store_url, namespace="n", clock=clock) as store:
        store.observe("http://a/1", 0, etag='"x"')
        clock.now += 3600
        store.observe("http://a/1", 0xFFFF)
    assert main(["schedule", "http://a/1", "--index-url", store_url, "--namespace", "n"]) == 0
    text = capsys.readouterr().out
    assert "visits 2, changes 1" in text
    assert "X = changed): X" in text
    assert 'ETag "x"' in text
    assert (
        main(["schedule", "http://a/1", "--index-url", store_url, "--namespace", "n", "--json"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["history"] == [{"after_secs": 3600.0, "changed": True}]
    assert report["rate_per_day"] > 1.0  # one change within an hour beats the 1/day prior
    assert main(["schedule", "http://nope", "--index-url", store_url]) == 1


def test_schedule_says_why_a_url_is_not_visited(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recrawl_store(store_url, namespace="n") as store:
        store.add(["http://a/new"])
        for _ in range(3):
            store.observe("http://a/gone", None, status=404)
        store.observe("http://a/busy", None, status=503)
    base = ["--index-url", store_url, "--namespace", "n"]
    assert main(["schedule", "http://a/new", *base]) == 0
    assert "not fetched yet: queued" in capsys.readouterr().out
    assert main(["schedule", "http://a/gone", *base]) == 0
    assert 'retired after 3 "not found" answers in a row' in capsys.readouterr().out
    assert main(["schedule", "http://a/busy", *base]) == 0
    assert "1 failed fetch(es) in a row: retrying with backoff" in capsys.readouterr().out


def test_simulate_prints_policies_and_draws_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "freshness.png"
    argv = [
        "simulate",
        "--pages",
        "20",
        "--days",
        "6",
        "--warmup-days",
        "1",
        "--json",
        "--png",
        str(png),
        "--budgets",
        "0.5,2",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    results = json.loads(out)
    assert len(results) == 6
    assert len({r["fetches"] for r in results}) == 1
    assert all(0.0 <= r["freshness"] <= 1.0 for r in results)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > height > 400  # a full figure with title, axes and legend
    assert f"wrote {png}" in err
    assert "policy runs" not in err  # stderr is not a terminal: no progress bar


def test_a_budget_of_one_fetch_reads_singular() -> None:
    """The printed header and the PNG's budget label say it the same way."""
    from scrapy_simhash.cli.simulate import fetches_per_day

    assert fetches_per_day(1) == "1 fetch/page/day"
    assert fetches_per_day(1.0) == "1 fetch/page/day"
    assert fetches_per_day(0.5) == "0.5 fetches/page/day"
    assert fetches_per_day(2) == "2 fetches/page/day"


def test_simulate_answers_quickly_at_its_defaults_and_explains_its_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    assert main(["simulate"]) == 0
    elapsed = time.monotonic() - started
    assert elapsed < 15, elapsed  # about 2 s; a loaded machine gets a wide margin
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "200 pages, 30 days (10 warm-up), 1 fetch/page/day, seed 0"
    assert lines[1].split() == [
        "policy",
        "fetch/page/day",
        "freshness",
        "ratio",
        "age",
        "(h)",
        "wasted",
        "missed",
    ]
    assert lines[8].startswith("optimum (true rates)")
    legend = "\n".join(
        lines[lines.index("columns (measured after the warm-up, over all pages):") :]
    )
    for column in ("fetch/page/day", "freshness", "ratio", "age (h)", "wasted", "missed"):
        assert f"\n  {column} " in legend, column
    for row in ("optimum (true rates)", "simhash (ours)", "exact digest"):
        assert f"\n  {row} " in legend, row
    assert "its age is by\n" in legend
    assert "far the worst, by design" in legend
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    help_text = capsys.readouterr().out
    assert "share of fetches that found no substantive change" in help_text
    assert "the freshness optimum (Cho & Garcia-Molina) computed from the true" in help_text
    assert "(default 200)" in help_text


def test_simulate_reads_rates_and_rejects_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rates = tmp_path / "rates.txt"
    rates.write_text("# changes per day\n0.5\n2\n8\n")
    assert main(["simulate", "--rates-file", str(rates), "--days", "5", "--warmup-days", "1"]) == 0
    assert "3 pages" in capsys.readouterr().out
    rates.write_text("-1\n")
    assert main(["simulate", "--rates-file", str(rates)]) == 2
    assert main(["simulate", "--days", "1", "--warmup-days", "2"]) == 2
    assert main(["simulate", "-s", "SIMHASH_RECRAWL_POLICY=bogus"]) == 2


def test_recrawl_core_and_commands_do_not_import_scrapy() -> None:
    code = (
        "import sys\n"
        "import scrapy_simhash.recrawl, scrapy_simhash.recrawl.simulate\n"
        "import scrapy_simhash.recrawl.redisstore, scrapy_simhash.recrawl.sqlite\n"
        "import scrapy_simhash.cli.due, scrapy_simhash.cli.schedule, scrapy_simhash.cli.simulate\n"
        "print('scrapy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
