"""The command line reads within bounds and checks its numbers and URLs.

``due --add /dev/zero`` grew to 9 GB looking for the end of its first line, ``simulate
--pages 50000000`` took 3.7 GB, ``fingerprint`` waited forever on a FIFO, ``simulate
--fetches-per-page-per-day nan`` printed a table of zeros and ``due --add`` queued the line
``not a url``. Messages are checked in-process (as tests/unit/test_recrawl_cli.py does); what a
command holds is measured on a real process (as tests/unit/test_cli.py runs them), whose peak
resident memory must stay under 512 MB whatever it is given.
"""

from __future__ import annotations

import gzip
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scrapy_simhash.cli import due as due_command
from scrapy_simhash.cli import fingerprint as fingerprint_command
from scrapy_simhash.cli import main
from scrapy_simhash.recrawl import open_recrawl_store

#: The most a command may hold, whatever its input.
MEMORY_LIMIT_KB = 512 * 1024

#: Runs ``python -m scrapy_simhash ARGS`` and writes its peak resident memory last on stderr.
_MEASURED = (
    "import resource, runpy, sys\n"
    "sys.argv = ['scrapy-simhash', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('scrapy_simhash', run_name='__main__')\n"
    "finally:\n"
    "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "    sys.stderr.write(f'\\npeak_kb={peak}\\n')\n"
)


def _address_space_cap() -> None:
    """A command without its bounds would take gigabytes: it fails here at 2 GiB instead."""
    cap = 2 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def measured(*args: str, stdin: object = None, timeout: float = 120) -> tuple[int, str, str, int]:
    """(exit status, stdout, stderr, peak memory in KB) of one real command."""
    result = subprocess.run(
        [sys.executable, "-c", _MEASURED, *args],
        stdin=stdin,  # type: ignore[arg-type]
        capture_output=True,
        timeout=timeout,
        check=False,
        env=dict(os.environ, PYTHONIOENCODING="utf-8"),
        preexec_fn=_address_space_cap,
    )
    err = result.stderr.decode("utf-8", "replace")
    body, _, peak = err.rpartition("peak_kb=")
    return result.returncode, result.stdout.decode("utf-8", "replace"), body, int(peak)


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'index.sqlite3'}"


def _queued(store_url: str) -> int:
    with open_recrawl_store(store_url, namespace="n") as store:
        return store.count()


# -- due --add -----------------------------------------------------------------------------------


def test_due_add_refuses_a_device_at_once(store_url: str) -> None:
    code, _, err, peak = measured("due", "--index-url", store_url, "--add", "/dev/zero", timeout=60)
    assert code == 2, err
    assert "--add /dev/zero is a device or a socket, not a file" in err
    assert not Path(store_url.removeprefix("sqlite:///")).exists()  # no store was created
    assert peak < MEMORY_LIMIT_KB, peak


def test_due_add_refuses_a_directory(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["due", "--index-url", store_url, "--add", str(tmp_path)]) == 2
    assert "is a directory, not a file" in capsys.readouterr().err


def test_due_add_of_an_endless_line_on_stdin_stops_at_its_bound(store_url: str) -> None:
    with open("/dev/zero", "rb") as zeros:
        code, _, err, peak = measured("due", "--index-url", store_url, "--add", "-", stdin=zeros)
    assert code == 2, err
    assert "--add standard input: line 1 is longer than 8,192 bytes" in err
    assert peak < MEMORY_LIMIT_KB, peak


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not a url", "it is not an absolute http:// or https:// URL"),
        ("/relative/path", "it is not an absolute http:// or https:// URL"),
        ("ftp://files.example/a", "it is not an absolute http:// or https:// URL"),
        ("javascript:alert(1)", "it is not an absolute http:// or https:// URL"),
        ("https://", "it names no host"),
        ("http:///path", "it names no host"),
        ("https://a.example:port/", "it cannot be read"),
        ("https://[::1/", "it cannot be read"),
        ("https://a.example/two words", "it holds a space or a control character"),
        ("https://a.example/\x07bell", "it holds a space or a control character"),
    ],
)
def test_due_add_names_the_line_that_is_no_url_and_queues_nothing(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, problem: str
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# seeds\nhttps://a.example/1\n\n{line}\nhttps://a.example/2\n")
    assert main(["due", "--index-url", store_url, "--namespace", "n", "--add", str(urls)]) == 2
    err = capsys.readouterr().err
    assert f"--add {urls}: line 4 " in err, err
    assert problem in err, err
    assert "nothing was queued" in err
    assert not Path(store_url.removeprefix("sqlite:///")).exists()


def test_due_add_says_no_password_of_a_refused_line(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("https://bob:Qs3cretQ@a.example:port/\n")
    assert main(["due", "--index-url", store_url, "--add", str(urls)]) == 2
    err = capsys.readouterr().err
    assert "line 1" in err
    assert "Qs3cretQ" not in err


def test_due_add_reads_comments_crlf_and_utf8(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_bytes(
        "# seeds\r\nhttps://a.example/1\r\n\r\n  https://a.example/2  \nhttp://a/3\n"
        "https://b.example/caf\u00e9\n".encode()
    )
    assert main(["due", "--index-url", store_url, "--namespace", "n", "--add", str(urls)]) == 0
    assert "queued 4 new URL(s)" in capsys.readouterr().err
    assert _queued(store_url) == 4


def test_due_add_refuses_text_that_is_not_utf8(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_bytes(b"https://a.example/1\nhttps://a.example/\xff\n")
    assert main(["due", "--index-url", store_url, "--add", str(urls)]) == 2
    assert "line 2 is not UTF-8 text" in capsys.readouterr().err


def test_due_add_reads_a_pipe(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A named pipe is read (a shell's ``<(...)`` is one), under the same bounds."""
    fifo = tmp_path / "urls.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as pipe:
            pipe.write("https://a.example/1\nhttps://a.example/2\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert main(["due", "--index-url", store_url, "--namespace", "n", "--add", str(fifo)]) == 0
    writer.join(10)
    assert "queued 2 new URL(s)" in capsys.readouterr().err


def test_due_add_caps_what_it_reads_and_holds(
    store_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"https://a.example/{i}\n" for i in range(50)))
    monkeypatch.setattr(due_command, "MAX_ADD_URLS", 10)
    assert main(["due", "--index-url", store_url, "--add", str(urls)]) == 2
    assert "more than 10 URLs; split the file" in capsys.readouterr().err
    monkeypatch.setattr(due_command, "MAX_ADD_URLS", 1000)
    monkeypatch.setattr(due_command, "MAX_ADD_BYTES", 300)
    assert main(["due", "--index-url", store_url, "--add", str(urls)]) == 2
    assert f"--add {urls}: more than 300 bytes; split it" in capsys.readouterr().err
    assert not Path(store_url.removeprefix("sqlite:///")).exists()


def test_due_add_queues_in_batches(
    store_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(due_command, "_ADD_BATCH", 7)
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"https://a.example/{i}\n" for i in range(30)))
    assert main(["due", "--index-url", store_url, "--namespace", "n", "--add", str(urls)]) == 0
    assert "queued 30 new URL(s)" in capsys.readouterr().err
    assert _queued(store_url) == 30


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--within", "nan", "--within must be a number of seconds between 0 and"),
        ("--within", "inf", "--within must be a number of seconds between 0 and"),
        ("--within", "-5", "--within must be a number of seconds between 0 and"),
        ("--lease-secs", "nan", "--lease-secs must be a number of seconds above 0"),
        ("--lease-secs", "0", "--lease-secs must be a number of seconds above 0"),
        ("--lease-secs", "1e300", "--lease-secs must be a number of seconds above 0"),
        ("--limit", "0", "--limit must be between 1 and 100,000"),
        ("--limit", "1000000000", "--limit must be between 1 and 100,000"),
    ],
)
def test_due_refuses_numbers_it_cannot_use(
    store_url: str, capsys: pytest.CaptureFixture[str], option: str, value: str, said: str
) -> None:
    assert main(["due", "--index-url", store_url, "--claim", option, value]) == 2
    err = capsys.readouterr().err
    assert said in err, err
    assert "got " in err


# -- simulate ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--fetches-per-page-per-day", "nan"], "--fetches-per-page-per-day must be a number"),
        (["--fetches-per-page-per-day", "inf"], "--fetches-per-page-per-day must be a number"),
        (
            ["--fetches-per-page-per-day", "0"],
            "--fetches-per-page-per-day must be a number above 0",
        ),
        (["--fetches-per-page-per-day", "5000"], "at most 1440 (a minute apart"),
        (["--days", "nan"], "--days must be a number above 0"),
        (["--days", "inf"], "--days must be a number above 0 and at most 3650"),
        (["--warmup-days", "nan"], "--warmup-days must be a number"),
        (["--days", "5", "--warmup-days", "5"], "must be longer than --warmup-days"),
        (["--trivial-fraction", "nan"], "--trivial-fraction must be a number at least 0"),
        (["--trivial-fraction", "1.5"], "at most 1 (a share of the pages)"),
        (["--trivial-per-day", "-1"], "--trivial-per-day must be a number at least 0"),
        (["--trivial-per-day", "inf"], "--trivial-per-day must be a number"),
        (["--pages", "0"], "--pages must be between 1 and 100,000"),
        (["--png", "x.png", "--budgets", "1,nan"], "each of --budgets must be a number above 0"),
        (["--png", "x.png", "--budgets", "1,1e9"], "each of --budgets must be a number"),
        (
            ["--png", "x.png", "--budgets", ",".join(str(i) for i in range(1, 20))],
            "--budgets takes at most 12 budgets",
        ),
    ],
)
def test_simulate_refuses_numbers_it_cannot_use(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert main(["simulate", *args]) == 2
    out, err = capsys.readouterr()
    assert said in err, err
    assert out == ""  # nothing was simulated: no table of zeros


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--pages", "50000000"], "--pages must be between 1 and 100,000"),
        (
            ["--days", "60", "--trivial-per-day", "1440", "--trivial-fraction", "1"],
            "it is refused above 400 MiB: lower --pages, --days, --trivial-per-day",
        ),
        (["--rates-file", "/dev/zero"], "--rates-file /dev/zero is a device or a socket"),
    ],
)
def test_simulate_refuses_what_it_could_not_hold_before_drawing_it(
    args: list[str], said: str
) -> None:
    code, out, err, peak = measured("simulate", *args, timeout=60)
    assert code == 2, err
    assert said in err, err
    assert out == ""
    assert peak < MEMORY_LIMIT_KB, peak


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("0.5\nnan\n", "--rates-file {path}: line 2 must be a number at least 0"),
        ("0.5\n# note\n\ninf 3\n", "--rates-file {path}: line 4 must be a number"),
        ("0.5\nfast\n", "--rates-file {path}: line 2 ('fast') is not a number of changes per day"),
        ("0.5\n-1\n", "--rates-file {path}: line 2 must be a number at least 0"),
        ("1e9\n", "--rates-file {path}: line 1 must be a number at least 0 and at most 1440"),
        ("# only a comment\n", "--rates-file {path}: expected one rate >= 0 per line"),
        ("1" * 5000 + "\n", "--rates-file {path}: line 1 is longer than 1,024 bytes"),
    ],
)
def test_simulate_names_the_bad_line_of_a_rates_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, said: str
) -> None:
    rates = tmp_path / "rates.txt"
    rates.write_text(content)
    assert main(["simulate", "--rates-file", str(rates)]) == 2
    err = capsys.readouterr().err
    assert said.format(path=rates) in err, err


def test_simulate_caps_the_pages_of_a_rates_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy_simhash.cli import simulate as simulate_command

    monkeypatch.setattr(simulate_command, "MAX_PAGES", 3)
    rates = tmp_path / "rates.txt"
    rates.write_text("1\n2\n3\n4\n")
    assert main(["simulate", "--rates-file", str(rates)]) == 2
    assert "more than 3 rates" in capsys.readouterr().err


# -- fingerprint ---------------------------------------------------------------------------------

PAGE = (
    "<html><head><title>Transport</title></head><body><article>"
    + "".join(
        f"<p>The city council approved plan number {i} for public transport on Tuesday.</p>"
        for i in range(20)
    )
    + "</article></body></html>"
)


def test_fingerprint_of_a_fifo_or_a_device_says_so_and_does_not_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    page = tmp_path / "page.html"
    page.write_text(PAGE)
    code, out, err, _ = measured("fingerprint", str(fifo), "/dev/zero", str(page), timeout=60)
    assert code == 1, err
    lines = out.splitlines()
    assert len(lines) == 3
    assert '"error": "not a regular file but a FIFO (named pipe)' in lines[0]
    assert '"error": "not a regular file but a device or a socket' in lines[1]
    assert '"fingerprint": "' in lines[2]
    assert '"error"' not in lines[2]


def test_fingerprint_reads_an_endless_stdin_only_as_far_as_a_page() -> None:
    with open("/dev/zero", "rb") as zeros:
        code, out, err, peak = measured("fingerprint", "-", stdin=zeros, timeout=60)
    assert code == 0, err
    assert "truncated to 5000000 bytes" in out
    assert peak < MEMORY_LIMIT_KB, peak


def test_fingerprint_reads_a_gzip_bomb_on_stdin_only_as_far_as_a_page(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as stream:
        block = b"<p>" + b"a " * 4096 + b"</p>"
        for _ in range(100 * 1024 * 1024 // len(block)):
            stream.write(block)
    with open(bomb, "rb") as source:
        code, out, err, peak = measured("fingerprint", "-", stdin=source, timeout=120)
    assert code == 0, err
    assert "truncated to 5000000 bytes" in out
    assert peak < MEMORY_LIMIT_KB, peak


def test_fingerprint_keeps_a_page_to_the_default_limit_whatever_the_setting(
    tmp_path: Path,
) -> None:
    """SIMHASH_MAX_BODY_BYTES=0 (no limit in a crawl) is read as the default, and said:
    5 MB of tiny elements already take about 450 MB to extract."""
    page = tmp_path / "tags.html"
    page.write_text("<html><body>" + "<p>a</p>" * (12 * 1024 * 1024 // 8) + "</body></html>")
    code, out, err, peak = measured(
        "fingerprint", "-s", "SIMHASH_MAX_BODY_BYTES=0", str(page), timeout=120
    )
    assert "SIMHASH_MAX_BODY_BYTES=0 (no limit) is read as 5000000" in err
    assert "truncated to 5000000 bytes" in out, (code, err)
    assert peak < MEMORY_LIMIT_KB, peak


def test_fingerprint_refuses_more_files_than_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fingerprint_command, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"p{i}.html").write_text(PAGE)
    assert main(["fingerprint", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert "more than 3 files to fingerprint" in err
    assert out == ""


def test_fingerprint_learns_at_most_max_hosts_templates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy_simhash.template import LocalMemory

    learned: list[str] = []
    real = LocalMemory.learn

    def learn(self: LocalMemory, host: str, page: object) -> None:
        learned.append(host)
        real(self, host, page)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalMemory, "learn", learn)
    monkeypatch.setattr(fingerprint_command, "MAX_HOSTS", 2)
    for host in ("a.example", "b.example", "c.example"):
        (tmp_path / host).mkdir()
        for i in range(2):
            (tmp_path / host / f"p{i}.html").write_text(PAGE)
    assert main(["fingerprint", str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 6
    assert sorted(set(learned)) == [str(tmp_path / "a.example"), str(tmp_path / "b.example")]
