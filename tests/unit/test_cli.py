"""The fingerprint, compare and dedup commands, run as a user would (a subprocess)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_simhash.fingerprint import Fingerprinter, from_hex, hamming

PARAGRAPHS = [
    "The city council approved a new plan for public transport on Tuesday evening.",
    "Buses will run every ten minutes on the main routes from next spring onwards.",
    "Cyclists get two protected lanes along the river between the old harbour and the park.",
    "Shop owners in the centre asked for more parking spaces during the consultation.",
    "The mayor said the budget would be reviewed again after the first full year.",
]
OTHER = [
    "A rare orchid flowered in the botanical garden greenhouse after twelve years.",
    "Gardeners kept the humidity high and fed the plant a careful mix of nutrients.",
    "Visitors queued for hours to photograph the pale yellow blossom before it faded.",
    "Botanists will collect seeds and share them with conservation partners abroad.",
]


def page(title: str, paragraphs: list[str], extra: str = "") -> str:
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return (
        f"<html><head><title>{title}</title><meta charset='utf-8'></head><body>"
        f"<nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
        f"<article><h1>{title}</h1>{body}{extra}</article><footer>Copyright</footer>"
        "</body></html>"
    )


def run(
    *args: str, stdin: bytes | None = None, tty_progress: bool = False
) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "scrapy_simhash", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


def lines(result: subprocess.CompletedProcess[bytes]) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.decode().splitlines()]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small tree: two copies of one article (one gzipped, one reworded), another
    article, a text file, a file of another type that walks must skip."""
    root = tmp_path_factory.mktemp("site")
    (root / "news").mkdir()
    (root / "news" / "a.html").write_text(page("Transport plan", PARAGRAPHS), encoding="utf-8")
    copy = page("Transport plan", PARAGRAPHS, "<p>Updated 2024-05-02 10:31, 1,024 views</p>")
    (root / "news" / "b.htm.gz").write_bytes(gzip.compress(copy.encode("utf-8")))
    (root / "garden.html").write_text(page("Orchid", OTHER), encoding="utf-8")
    (root / "notes.txt").write_text("\n".join(PARAGRAPHS), encoding="utf-8")
    (root / "style.css").write_text("body { color: red }", encoding="utf-8")
    return root


def test_fingerprint_walks_directories_in_sorted_order(site: Path) -> None:
    result = run("fingerprint", str(site))
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""  # piped: no progress bar
    rows = lines(result)
    assert [Path(str(r["path"])).relative_to(site).as_posix() for r in rows] == [
        "garden.html",
        "news/a.html",
        "news/b.htm.gz",
        "notes.txt",
    ]
    by_name = {Path(str(r["path"])).name: r for r in rows}
    assert by_name["a.html"]["title"] == "Transport plan"
    assert all(len(str(r["fingerprint"])) == 16 for r in rows)
    a, b = (from_hex(str(by_name[n]["fingerprint"])) for n in ("a.html", "b.htm.gz"))
    assert hamming(a, b) <= 3
    assert hamming(a, from_hex(str(by_name["garden.html"]["fingerprint"]))) > 10
    assert by_name["notes.txt"]["title"] == ""
    assert by_name["notes.txt"]["chars"] == len("\n".join(PARAGRAPHS))


def test_fingerprint_matches_the_library(site: Path) -> None:
    result = run("fingerprint", str(site / "notes.txt"))
    expected = Fingerprinter().fingerprint_text("\n".join(PARAGRAPHS))
    assert lines(result)[0]["fingerprint"] == format(expected, "016x")


def test_inputs_keep_command_line_order_and_stdin(site: Path) -> None:
    html = page("Orchid", OTHER).encode()
    result = run(
        "fingerprint", str(site / "news" / "a.html"), "-", str(site / "garden.html"), stdin=html
    )
    rows = lines(result)
    assert [r["path"] for r in rows] == [
        str(site / "news" / "a.html"),
        "-",
        str(site / "garden.html"),
    ]
    assert rows[1]["fingerprint"] == rows[2]["fingerprint"]


def test_gzipped_stdin_is_decompressed(site: Path) -> None:
    result = run("fingerprint", "-", stdin=gzip.compress(page("Orchid", OTHER).encode()))
    plain = run("fingerprint", str(site / "garden.html"))
    assert lines(result)[0]["fingerprint"] == lines(plain)[0]["fingerprint"]


def test_128_bits_through_settings(site: Path) -> None:
    result = run("fingerprint", "-s", "SIMHASH_BITS=128", str(site / "garden.html"))
    assert len(str(lines(result)[0]["fingerprint"])) == 32


def test_bad_setting_is_a_clear_error(site: Path) -> None:
    result = run("fingerprint", "-s", "SIMHASH_BITS=48", str(site / "garden.html"))
    assert result.returncode == 2
    assert b"SIMHASH_BITS must be 64 or 128" in result.stderr


def test_bad_inputs_each_get_an_object_and_the_walk_goes_on(tmp_path: Path) -> None:
    (tmp_path / "empty.html").write_bytes(b"")
    (tmp_path / "binary.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    (tmp_path / "invalid.html").write_bytes(
        b"<html><title>Caf\xe9</title><body><p>" + b"\xff\xfe broken \xc3 bytes " * 40 + b"</p>"
    )
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "broken.html.gz").write_bytes(gzip.compress(b"<p>x</p>" * 50)[:-12])
    (tmp_path / "ok.txt").write_text(" ".join(OTHER), encoding="utf-8")
    missing = str(tmp_path / "missing.html")
    result = run("fingerprint", str(tmp_path), missing)
    assert result.returncode == 1
    rows = {Path(str(r["path"])).name: r for r in lines(result)}
    assert list(rows) == [
        "binary.html",
        "binary.txt",
        "broken.html.gz",
        "empty.html",
        "invalid.html",
        "ok.txt",
        "missing.html",
    ]
    for name in ("binary.html", "binary.txt", "empty.html"):
        assert rows[name]["fingerprint"] is None
        assert rows[name]["reason"]
    assert rows["invalid.html"]["fingerprint"] is not None
    assert "error" in rows["broken.html.gz"]
    assert rows["missing.html"]["error"] == "No such file or directory"
    assert rows["ok.txt"]["fingerprint"] is not None


def test_huge_page_is_truncated_not_loaded_whole(tmp_path: Path) -> None:
    paragraph = "<p>" + " ".join(OTHER) + "</p>\n"
    body = page("Big", [], paragraph * (20_000_000 // len(paragraph) + 1))
    path = tmp_path / "huge.html"
    path.write_text(body, encoding="utf-8")
    assert path.stat().st_size > 20_000_000
    result = run("fingerprint", "-s", "SIMHASH_MAX_BODY_BYTES=1000000", str(path))
    assert result.returncode == 0, result.stderr
    row = lines(result)[0]
    assert row["fingerprint"] is not None
    assert 0 < int(str(row["chars"])) < 1_000_000
    assert "truncat" in json.dumps(row.get("notes"))


def test_compare_explains_the_difference(site: Path) -> None:
    result = run("compare", str(site / "news" / "a.html"), str(site / "garden.html"))
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "different: set apart by the " in text
    assert "second test: signatures " in text
    assert "only in A: " in text
    only_a = text.split("only in A: ")[1].splitlines()[0]
    only_b = text.split("only in B: ")[1].splitlines()[0]
    assert {"council", "buses"} & set(only_a.replace(",", " ").split())
    assert {"orchid", "gardeners", "botanists"} & set(only_b.replace(",", " ").split())


def test_compare_json_of_near_duplicates(site: Path) -> None:
    result = run(
        "compare", "--json", str(site / "news" / "a.html"), str(site / "news" / "b.htm.gz")
    )
    report = json.loads(result.stdout)
    assert report["near_duplicate"] is True
    # The copy differs only by an "Updated <date>, <n> views" line, which extraction drops.
    assert report["distance"] == 0
    assert report["similarity"] == 1.0
    assert report["only_a"] == report["only_b"] == []


def test_threshold_comes_from_settings_unless_k_is_given(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("\n".join(PARAGRAPHS), encoding="utf-8")
    (tmp_path / "b.txt").write_text("\n".join(PARAGRAPHS[:3] + OTHER[:2]), encoding="utf-8")
    pages = (str(tmp_path / "a.txt"), str(tmp_path / "b.txt"))
    distance = json.loads(run("compare", "--json", *pages).stdout)["distance"]
    assert 0 < distance <= 31  # a setting holds at most 31 (half of 64 bits)
    at = json.loads(
        run("compare", "--json", "-s", f"SIMHASH_MAX_DISTANCE={distance}", *pages).stdout
    )
    # A candidate at k = distance; the second test then decides (these share 3 paragraphs).
    assert (at["k"], at["separated_by"]) in ((distance, None), (distance, "signature"))
    overridden = json.loads(
        run("compare", "--json", "-s", f"SIMHASH_MAX_DISTANCE={distance}", "-k", "0", *pages).stdout
    )
    assert (overridden["k"], overridden["near_duplicate"]) == (0, False)
    assert overridden["separated_by"] == "fingerprint"


def test_compare_with_an_unreadable_side(site: Path) -> None:
    result = run("compare", str(site / "news" / "a.html"), str(site / "nope.html"))
    assert result.returncode == 1
    assert "no distance" in result.stdout.decode()


def test_dedup_groups_near_duplicates(site: Path) -> None:
    result = run("dedup", "--json", str(site))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    groups = [[Path(m["path"]).name for m in g["members"]] for g in report["groups"]]
    # notes.txt holds the article's text without its page: the same text, so a copy.
    assert groups == [["a.html", "b.htm.gz", "notes.txt"]]
    assert report["unique"] == 1
    assert report["duplicates"] == 2
    assert result.stderr == b""  # no progress bar when stderr is not a terminal


def test_dedup_k_follows_the_distance_and_table_lists_all(site: Path) -> None:
    a, b = (
        from_hex(str(lines(run("fingerprint", str(site / "news" / n)))[0]["fingerprint"]))
        for n in ("a.html", "b.htm.gz")
    )
    distance = hamming(a, b)
    paths = [str(site / "news"), str(site / "garden.html")]
    at = run("dedup", "-k", str(distance), "--all", *paths).stdout.decode()
    if distance > 0:
        below = run("dedup", "-k", str(distance - 1), "--all", *paths).stdout.decode()
        assert below.count("group ") == 3
    assert at.count("group ") == 2
    assert f"d={distance:<3} {site / 'news' / 'b.htm.gz'}" in at
    assert "3 files: 2 kept (1 with near-duplicates, 1 unique), 1 dropped as near-duplicates" in at


def test_dedup_progress_bar_on_request(site: Path) -> None:
    result = run("dedup", "--progress", str(site))
    assert b"4/4" in result.stderr
    assert b"files" in result.stderr


def test_commands_do_not_import_scrapy(site: Path) -> None:
    code = (
        "import sys\n"
        "from scrapy_simhash.cli import main\n"
        f"main(['dedup', {str(site)!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"
