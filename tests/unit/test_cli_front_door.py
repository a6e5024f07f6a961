"""What a new user meets at the command line: each command's own help under ``scrapy
simhash``, hints that are true, a reset of a shared namespace that asks first, the text a
page was read as, Redis URLs whose parameters are read as written, and a radius the index
cannot serve refused (the crawls that meet these: tests/crawl/test_front_door_crawls.py)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scrapy_simhash.cli import command_names, main
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store
from tests.scrapy_runner import REPO


def scrapy_simhash(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy simhash ARGS`` as a user types it, in ``cwd`` (no project there)."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "simhash", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_every_command_prints_its_own_help_under_scrapy_simhash(tmp_path: Path) -> None:
    """Scrapy answers ``--help`` itself with its generic help unless the command takes
    it over: each command's usage line and options are printed, as by scrapy-simhash."""
    names = command_names()
    assert "due" in names
    for name in names:
        done = scrapy_simhash(tmp_path, name, "--help")
        assert done.returncode == 0, (name, done.stderr)
        assert done.stdout.startswith(f"usage: scrapy simhash {name} "), (name, done.stdout)
        assert "Global Options" not in done.stdout  # not Scrapy's generic help
    due = scrapy_simhash(tmp_path, "due", "--within", "60", "-h")
    assert "--push-redis-key KEY" in due.stdout
    top = scrapy_simhash(tmp_path, "--help")
    assert top.returncode == 0
    assert top.stdout.startswith("usage: scrapy simhash ")
    assert all(name in top.stdout for name in names)


def test_claiming_with_within_says_what_within_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--within lists only: a claim that finds nothing due says so, and the listing it
    points to does list the URLs."""
    url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    later = time.time() + 5 * 3600
    with open_recrawl_store(url, namespace="n") as store:
        store.add([f"http://a.test/{i}" for i in range(3)], due=later)
    base = ["due", "--index-url", url, "--namespace", "n"]
    assert main([*base, "--claim", "--within", "100000"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "--within is ignored with --claim" in err
    assert "none can be claimed before then; 'due --within 18000' without --claim lists them" in err
    assert main([*base, "--within", "18000"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


@pytest.mark.redis
def test_resetting_a_shared_redis_namespace_asks_first(redis_url: str) -> None:
    """No terminal: refused with the reason and the way (--yes). On a terminal: asked,
    and only "y" resets it."""
    from scrapy_simhash.fingerprint import Fingerprinter
    from scrapy_simhash.settings import fingerprint_config

    # The command rebuilds the namespace with the settings' fingerprint scheme.
    options = {"namespace": "shop", "scheme": Fingerprinter(fingerprint_config({})).scheme}

    def fill() -> None:
        with open_index(redis_url, **options) as index:
            index.observe("https://shop.test/a", 0x1234)

    def held() -> int:
        with open_index(redis_url, **options) as index:
            return len(index)

    fill()
    command = [
        sys.executable,
        "-m",
        "scrapy_simhash",
        "reset",
        "--index-url",
        redis_url,
        "--namespace",
        "shop",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    piped = subprocess.run(
        command,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
        env=env,
    )
    assert piped.returncode == 2
    assert "reset: not done: namespace 'shop' of redis://" in piped.stderr
    assert "is shared by every crawler process using that Redis" in piped.stderr
    assert "pass --yes to reset it" in piped.stderr
    assert held() == 1
    for answer, code, left in ((b"n\n", 2, 1), (b"y\n", 0, 0)):
        said = _on_a_terminal(command, answer, env)
        assert b"namespace 'shop' of redis://" in said
        assert b"Reset it? [y/N]" in said
        assert held() == left, said
        if code == 0:
            assert b"cleared" in said
        fill()
    yes = subprocess.run(
        [*command, "--yes"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
        env=env,
    )
    assert yes.returncode == 0, yes.stderr
    assert held() == 0


def _on_a_terminal(command: list[str], answer: bytes, env: dict[str, str]) -> bytes:
    """Run ``command`` on a pseudo-terminal, type ``answer`` once it asks; its output."""
    import pty

    controller, terminal = pty.openpty()
    proc = subprocess.Popen(command, stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    said = b""
    typed = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            said += chunk
        if not typed and b"[y/N]" in said:
            os.write(controller, answer)
            typed = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(timeout=30)
    os.close(controller)
    return said


PAGE = (
    "<html><head><title>Tram line vote</title></head><body>"
    "<nav><a href='/'>Home</a> <a href='/news'>News</a> <a href='/sport'>Sport</a></nav>"
    "<article><h1>Tram line vote</h1>"
    "<p>The city council voted on Tuesday to extend the northern tram line by four stops, "
    "ending a debate that had lasted three years and split the ruling coalition.</p>"
    "<p>Construction is expected to begin next spring and to take two years; the cost is "
    "shared between the city and the regional transport authority.</p></article>"
    "<section class='comments'><p>Comment: finally! I have waited for this for ages and "
    "ages and ages.</p></section></body></html>"
)


def test_show_text_prints_what_a_page_was_read_as(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "tram.html"
    page.write_text(PAGE)
    assert main(["fingerprint", "--show-text", str(page)]) == 0
    line = json.loads(capsys.readouterr().out)
    assert "extend the northern tram line by four stops" in line["text"]
    assert "Construction is expected" in line["text"]
    assert "Sport" not in line["text"]  # navigation left out
    assert "waited for this" not in line["text"]  # comments left out
    assert "extend the northern tram line" in line["own_text"]
    assert main(["fingerprint", str(page)]) == 0
    assert "text" not in json.loads(capsys.readouterr().out)
    assert main(["compare", "--show-text", str(page), str(page)]) == 0
    out = capsys.readouterr().out
    assert out.count("   main text read:") == 2
    assert "   | The city council voted on Tuesday to extend the northern tram line" in out
    assert main(["compare", "--show-text", "--json", str(page), str(page)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["a"]["text"] == report["b"]["text"] == line["text"]


def test_a_redis_url_with_an_unknown_parameter_is_refused_naming_the_known_ones() -> None:
    for url in (
        "redis://127.0.0.1:1/0?foo",
        "redis://127.0.0.1:1/0?socket_timeot=5",
        "redis+cluster://127.0.0.1:1/0?db=0&foo=1",
    ):
        with pytest.raises(ConfigurationError) as refused:
            open_index(url, namespace="n")
        message = str(refused.value)
        assert "unknown query parameter" in message, message
        assert "socket_timeout" in message  # the known ones
        assert "password" in message


@pytest.mark.redis
def test_a_redis_url_with_known_parameters_is_read(redis_url: str) -> None:
    joined = "&" if "?" in redis_url else "?"
    with open_index(
        f"{redis_url}{joined}socket_timeout=5&client_name=crawl", namespace="n"
    ) as index:
        index.observe("https://a.test/", 0x1)
        assert len(index) == 1


# -- a candidate radius the index cannot serve ----------------------------------------------


def test_the_layouts_recall_is_what_the_index_finds() -> None:
    """band_recall against a real index: pairs of random fingerprints d bits apart (the
    bits at random positions), found by the 4x1 layout as often as it says."""
    import random

    from scrapy_simhash.index.layout import BandLayout, band_recall

    layout = BandLayout(64, 4, 1)
    assert band_recall(layout, 3) == 1.0
    assert round(band_recall(layout, 4), 2) == 0.90  # the README's figures
    assert round(band_recall(layout, 8), 2) == 0.33
    rng = random.Random(7)
    pairs = 1500
    for distance in (6, 8):
        found = 0
        with open_index("memory://", max_distance=distance, exact_distance=3) as index:
            for number in range(pairs):
                fingerprint = rng.getrandbits(64)
                index.observe(f"https://a.test/{number}", fingerprint)
                flipped = fingerprint
                for bit in rng.sample(range(64), distance):
                    flipped ^= 1 << bit
                found += any(m.key == f"https://a.test/{number}" for m in index.query(flipped))
        assert abs(found / pairs - band_recall(layout, distance)) < 0.04, (distance, found)


def test_a_radius_beyond_the_stated_recall_is_refused_naming_the_largest_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scrapy_simhash.index.layout import BandLayout, served_distance
    from scrapy_simhash.settings import index_options

    assert served_distance(BandLayout(64, 4, 1)) == 13
    with pytest.raises(ConfigurationError) as refused:
        index_options({"SIMHASH_MAX_DISTANCE": "20"})
    message = str(refused.value)
    assert "SIMHASH_MAX_DISTANCE = 20 is more than the index can serve" in message
    assert "0.3% of the time" in message
    assert "Set SIMHASH_MAX_DISTANCE to 13 or less" in message
    assert index_options({"SIMHASH_MAX_DISTANCE": "13"})["max_distance"] == 13
    assert index_options({})["max_distance"] == 8  # the defaults are served
    assert index_options({"SIMHASH_BITS": "128"})["max_distance"] == 16
    # A layout of more tables serves more; a huge expected size lowers the default only.
    wide = {"SIMHASH_MAX_DISTANCE": "20", "SIMHASH_INDEX_EXACT_DISTANCE": "8"}
    assert index_options(wide)["max_distance"] == 20
    assert index_options({"SIMHASH_INDEX_EXPECTED_PAGES": "1000000000"})["max_distance"] == 7
    # The command line says it as the crawl would.
    url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    open_index(url, namespace="n").close()
    assert (
        main(["stats", "--index-url", url, "--namespace", "n", "-s", "SIMHASH_MAX_DISTANCE=20"])
        == 2
    )
    assert "Set SIMHASH_MAX_DISTANCE to 13 or less" in capsys.readouterr().err
