"""The command lines act on the state a crawl of the chosen spider wrote, and nothing else.

A real Scrapy project is laid out in a temporary folder (``scrapy.cfg``, a settings module,
two spiders, one with ``custom_settings``); the commands run in-process from a subfolder,
as a user would, and read what the recrawl store and index hold.
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_simhash.cli import main
from scrapy_simhash.glue.commands import SimhashCommand
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store

SPIDERS = """
import scrapy

class News(scrapy.Spider):
    name = "news"
    custom_settings = {"SIMHASH_NAMESPACE": "gazette"}

class Blog(scrapy.Spider):
    name = "blog"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A two-spider project; the test runs in its ``docs/`` subfolder."""
    module = f"proj_{uuid.uuid4().hex[:8]}"  # fresh module names: nothing cached between tests
    package = tmp_path / module
    (package / "spiders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(
        f"SPIDER_MODULES = ['{module}.spiders']\nSIMHASH_TOKENIZER = 'rjieba'\n"
    )
    (package / "spiders" / "__init__.py").write_text(SPIDERS)
    (tmp_path / "scrapy.cfg").write_text(f"[settings]\ndefault = {module}.settings\n")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")
    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "unset")  # restored (unset) after the test
    monkeypatch.delenv("SCRAPY_SETTINGS_MODULE")
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


def state_file(project: Path) -> Path:
    return project / ".scrapy" / "simhash" / "index.sqlite3"


def test_read_only_commands_never_create_a_store(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["due", "--spider", "news"]) == 2
    assert main(["schedule", "http://x/1", "--spider", "news"]) == 2
    err = capsys.readouterr().err
    assert f"no SimHash state at {state_file(project)}" in err
    assert not (project / ".scrapy").exists()
    assert not (project / "docs" / ".scrapy").exists()


def test_due_and_schedule_use_the_spiders_settings_and_namespace(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{state_file(project)}"
    with open_recrawl_store(url, namespace="gazette") as store:  # what a crawl of news wrote
        store.add(["http://news/1"])
        store.observe("http://news/2", 1)
    assert main(["due", "--spider", "news"]) == 0
    assert capsys.readouterr().out.strip().endswith("http://news/1")
    assert main(["schedule", "http://news/2", "--spider", "news"]) == 0
    assert "visits 1" in capsys.readouterr().out
    # The other spider has its own namespace, empty: said, not silently printed as nothing.
    assert main(["due", "--spider", "blog"]) == 1
    assert "no recrawl state in namespace 'blog'" in capsys.readouterr().err
    assert main(["due", "--spider", "nope"]) == 2
    assert "no spider named 'nope' in this project; its spiders: blog, news" in (
        capsys.readouterr().err
    )
    assert main(["due"]) == 2
    assert "several spiders (blog, news)" in capsys.readouterr().err


def simhash_command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from scrapy.utils.project import get_project_settings

    cmd = SimhashCommand()
    cmd.settings = get_project_settings()
    cmd.settings.setdict(SimhashCommand.default_settings, priority="command")
    parser = argparse.ArgumentParser()
    cmd.add_options(parser)
    opts, positional = parser.parse_known_args(list(args))
    cmd.process_options(positional, opts)
    capsys.readouterr()
    cmd.run(positional, opts)
    out, err = capsys.readouterr()
    return int(cmd.exitcode), out + err


def test_scrapy_simhash_reads_custom_settings_and_resets_everything(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = simhash_command(capsys, "stats", "--spider", "news")
    assert code == 2
    assert "no SimHash state" in out
    assert not state_file(project).exists()
    url = f"sqlite:///{state_file(project)}"
    from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter

    scheme = Fingerprinter(FingerprintConfig(tokenizer="rjieba")).scheme
    with open_index(url, namespace="gazette", scheme=scheme) as index:
        index.observe("http://news/1", 0x1234)
        index.observe("http://news/2", 0xFFFF_0000_0000)
        index.record_drop("http://news/1?print", "http://news/1", 0)
    with open_recrawl_store(url, namespace="gazette") as store:
        store.observe("http://news/1", 0x1234)
    code, out = simhash_command(capsys, "stats", "--spider", "news")
    assert (code, out.splitlines()[:5]) == (
        0,
        [
            (
                f"namespace 'gazette' of sqlite:///{state_file(project)}, over all crawls (one "
                "crawl's own counts: the closing 'SimHash:' line of its log)"
            ),
            "  pages kept                        2   (one fingerprint each in the index)",
            (
                "  near-duplicates dropped           1   (URLs dropped when last fetched: 'lookup "
                "URL' says of what)"
            ),
            "  URLs scheduled for recrawl        1",
            "  due now                           0",
        ],
    )
    for internal in ("buckets", "largest_bucket", "layout", "mean_bucket", "tables", "entries"):
        assert internal not in out
    code, out = simhash_command(capsys, "stats", "--spider", "news", "--verbose")
    assert (code, out.splitlines()[5]) == (0, "index internals")
    assert "  layout                          4x1   (blocks the bits are cut into x blocks" in out
    # The same command as scrapy-simhash, with the spider's settings (its namespace).
    code, out = simhash_command(capsys, "report", "--spider", "news")
    assert code == 0
    assert "namespace 'gazette'" in out
    assert "3 pages fingerprinted: 2 kept, 1 dropped" in out
    assert "1. http://news/1  1 copy" in out
    code, out = simhash_command(capsys, "stats", "--spider", "nope")
    assert code == 2
    assert "no spider named 'nope'" in out
    code, out = simhash_command(capsys, "reset", "--spider", "news")
    assert code == 0
    assert "cleared 2 fingerprints" in out
    assert "cleared 1 drop records" in out
    assert "cleared 1 recrawl states" in out
    with open_recrawl_store(url, namespace="gazette") as store:
        assert len(store) == 0
    code, out = simhash_command(capsys, "stats", "--spider", "news")
    assert re.search(r"^  pages kept +0 ", out, re.MULTILINE)
    assert re.search(r"^  near-duplicates dropped +0 ", out, re.MULTILINE)
    assert re.search(r"^  URLs scheduled for recrawl +0 +\(none recorded\)$", out, re.MULTILINE)


def test_mismatched_index_names_the_command_that_resets_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{state_file(project)}"
    open_index(url, namespace="gazette", scheme="another tokenizer").close()
    code, out = simhash_command(capsys, "stats", "--spider", "news")
    assert code == 2
    assert "`scrapy simhash reset --namespace gazette`" in out
    code, out = simhash_command(capsys, "reset", "--namespace", "gazette")
    assert "cleared fingerprints (built with other settings)" in out
    assert simhash_command(capsys, "stats", "--spider", "news")[0] == 0


def test_plain_settings_object_has_no_project(tmp_path: Path) -> None:
    from scrapy_simhash.glue.project import crawl_settings

    settings, spider = crawl_settings("pages", base=Settings({"SIMHASH_NAMESPACE": "x"}))
    assert spider == "pages"  # outside a project the name is only a namespace
    assert settings["SIMHASH_NAMESPACE"] == "x"


def test_lookup_tells_never_fetched_from_fetched_without_a_fingerprint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The middleware writes the stores (in-process); lookup reads them and says which."""
    from scrapy.http import HtmlResponse

    from tests.scrapy_inprocess import HARBOUR, harness, story

    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    site = "https://news.example.com"
    with harness(SIMHASH_INDEX_URL=url) as h:
        kept, _ = h.fetch(f"{site}/harbour.html", story(HARBOUR))
        short, info = h.fetch(f"{site}/brief.html", story([]))  # nothing but its headline
        gone, _ = h.fetch(f"{site}/gone.html", b"<html>no</html>", status=404)
    assert isinstance(kept, HtmlResponse)
    assert isinstance(short, HtmlResponse)
    assert info["fingerprint"] is None
    assert "no main text" in info["reason"]
    assert gone.status == 404
    base = ["--index-url", url, "--namespace", "inprocess"]

    def lookup(page: str) -> tuple[int, str]:
        code = main(["lookup", f"{site}/{page}", *base])
        return code, capsys.readouterr().out

    code, out = lookup("harbour.html")
    assert code == 0
    assert out.startswith(f"{site}/harbour.html: ")
    code, out = lookup("never.html")
    assert code == 1
    assert out.startswith(f"{site}/never.html: not in the index: never fetched by a crawl of ")
    code, out = lookup("brief.html")
    assert code == 1
    assert out.startswith(f"{site}/brief.html: not in the index: fetched 1 time(s), last ")
    assert "with status 200, but never fingerprinted: no text of its own" in out
    assert "The store does not record which" in out
    code, out = lookup("gone.html")
    assert code == 1
    assert "with status 404: no page came back, so nothing to fingerprint" in out
