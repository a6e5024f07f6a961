"""Each host's template learned from its pages: no distinct page of a template dropped.

The site: 20 articles on one template whose author bio is longer than each short article,
so the extractor reads the bio as every page's main text. Without the template memory all
20 read alike and 19 are dropped; with it, all 20 are kept in any order, and a print copy
of one of them is still dropped.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from array import array
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.fingerprint import Fingerprinter
from scrapy_simhash.reset import reset_namespace
from scrapy_simhash.storage import open_template_store
from scrapy_simhash.template import (
    COUNTER_MAX,
    EMPTY,
    HALVE_AT,
    MIN_PAGES,
    SLOTS,
    HostMemory,
    apply_template,
    host_of,
    learnable,
    second_look,
)
from scrapy_simhash.template.store import (
    HOST_BYTES,
    MemoryTemplateStore,
    RedisTemplateStore,
    SqliteTemplateStore,
)
from scrapy_simhash.text import extract_main_text
from tests.scrapy_inprocess import WORDS, harness

BIO = (
    "Ada Lindqvist has covered city politics, transport and the harbour for this paper "
    "since 2009. Before that she reported from the northern provinces for a news agency, "
    "wrote two books about the history of the ferry lines and taught reporting at the "
    "university. She lives by the canal with two cats and far too many bicycles, and "
    "answers every letter that readers send her about the buses. Her column appears on "
    "Sundays, and her newsletter on the city's budget goes out every first Monday of the "
    "month to more than twenty thousand readers across the region and beyond."
)


def article(number: int, *, stamp: str = "08:00") -> bytes:
    """A short article of its own (seeded words) beside the long shared bio."""
    rng = random.Random(number)
    text = " ".join(rng.choice(WORDS) for _ in range(40)) + "."
    return (
        f"<html><head><title>Story {number}</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/city'>City</a> <a href='/sport'>Sport</a></nav>"
        f"<div class='item'><h1>Story {number}</h1><p>Updated {stamp}</p><p>{text}</p></div>"
        f"<div class='panel'><p>{BIO}</p><p>{BIO}</p></div>"
        "<footer>Harbour Gazette, 1 Quay Street</footer></body></html>"
    ).encode()


def urls(count: int = 20) -> list[str]:
    return [f"http://news.example:8080/story/{n}.html" for n in range(count)]


def crawl(order: list[int], **settings: object) -> dict[str, dict[str, object]]:
    """Fetch the articles in ``order``, then a print copy of article 3; the meta of each."""
    seen: dict[str, dict[str, object]] = {}
    with harness(**settings) as h:
        for n in order:
            url = urls()[n]
            _, seen[url] = h.fetch(url, article(n))
        _, seen["print"] = h.fetch(urls()[3] + "?print=1", article(3, stamp="08:05"))
    return seen


def test_the_bio_is_what_one_page_reads() -> None:
    # The premise: on its own, each page's main text is the shared bio.
    main = extract_main_text(article(1)).text
    assert "Ada Lindqvist" in main
    assert main == extract_main_text(article(2)).text


def test_without_the_memory_the_articles_read_alike() -> None:
    seen = crawl(list(range(20)), SIMHASH_TEMPLATES_ENABLED=False)
    dropped = [url for url in urls() if seen[url]["duplicate_of"]]
    assert len(dropped) == 19


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_article_kept_in_any_order_and_the_print_copy_dropped(seed: int) -> None:
    order = list(range(20))
    random.Random(seed).shuffle(order)
    seen = crawl(order)
    assert [url for url in urls() if seen[url]["duplicate_of"]] == []
    assert all(seen[url]["fingerprint"] for url in urls())
    assert seen["print"]["duplicate_of"] == urls()[3]


def test_a_template_learned_by_one_process_is_used_by_another(redis_url: str) -> None:
    settings = {"SIMHASH_INDEX_URL": redis_url, "SIMHASH_NAMESPACE": "shared-template"}
    with harness(**settings) as first:
        for n in range(8):
            first.fetch(urls()[n], article(n))
    with harness(**settings) as second:
        _, meta = second.fetch(urls()[12], article(12))
        assert second.stat("template/applied") == 1
        assert meta["duplicate_of"] is None
        assert meta["fingerprint"]
    reset_namespace(redis_url, "shared-template")


def test_apply_reads_the_page_own_text_once_the_template_is_known() -> None:
    fingerprinter = Fingerprinter()
    memory = EMPTY
    for n in range(MIN_PAGES + 1):
        memory = memory.learned(learnable(fingerprinter.fingerprint_page(article(n))))
    page = fingerprinter.fingerprint_page(article(30))
    applied = apply_template(fingerprinter, page, memory.template())
    assert applied.fingerprint is not None
    assert applied.fingerprint != page.fingerprint
    assert applied.template_lines > 0
    assert any("host's template" in note for note in applied.notes)
    # A page whose main text holds no template line comes back as it was.
    other = fingerprinter.fingerprint_page(b"<p>" + BIO.replace("Ada", "Eva").encode() + b"</p>")
    assert apply_template(fingerprinter, other, memory.template()) is other


def test_host_is_name_and_port() -> None:
    assert host_of("http://News.Example:8080/a") == "news.example:8080"
    assert host_of("https://news.example/a") == "news.example"
    assert host_of("http://news.example:8080/a") != host_of("http://news.example:8081/a")


@given(st.lists(st.lists(st.integers(0, SLOTS - 1), max_size=40), max_size=30))
def test_memory_round_trips_and_counts_each_page_once(pages: list[list[int]]) -> None:
    memory = EMPTY
    for n, slots in enumerate(pages):
        memory = memory.learned(slots + slots)  # a line twice on a page counts once
        if n % 2:
            memory = memory.saw(slots)  # kept and seen counts stay apart
    assert HostMemory.from_bytes(memory.to_bytes()) == memory
    assert len(memory.to_bytes()) == HOST_BYTES
    assert memory.pages == len(pages)
    assert memory.seen_pages == len(pages) // 2
    for slot in range(SLOTS):
        assert memory.counts[slot] == sum(slot in set(s) for s in pages)
        assert memory.seen[slot] == sum(slot in set(s) for s in pages[1::2])


def test_counters_are_halved_before_they_saturate() -> None:
    """A memory at the counters' limit (saturated by an earlier version) is halved at its
    next page, its shares kept: a line on every page is still on every page."""
    full = HostMemory(COUNTER_MAX, array("H", [COUNTER_MAX] * SLOTS))
    again = full.learned([0, 1])
    assert again.pages == COUNTER_MAX // 2 + 1
    assert again.counts[0] == again.pages
    assert again.counts[2] == COUNTER_MAX // 2
    seen = HostMemory(seen_pages=HALVE_AT - 1, seen=array("H", [HALVE_AT - 1] * SLOTS))
    assert seen.saw([3]).seen_pages == HALVE_AT // 2


def test_memory_bound_holds_for_10000_hosts(tmp_path: object) -> None:
    slots = list(range(0, SLOTS, 7))
    memory = MemoryTemplateStore(max_hosts=10_000)
    for n in range(10_000):
        memory.learn(f"host{n}.example", slots)
    memory.learn("one-too-many.example", slots)
    assert memory.hosts() == 10_000
    assert memory.read("one-too-many.example") == EMPTY
    store = SqliteTemplateStore(f"{tmp_path}/t.sqlite3", "ns", max_hosts=300)
    for n in range(300):
        store.see(f"host{n}.example", slots)
    store.learn("one-too-many.example", slots)
    assert store.hosts() == 300
    assert store.read("one-too-many.example") == EMPTY
    # A host costs the same however many pages it has.
    for _ in range(50):
        store.learn("host1.example", list(range(SLOTS)))
        store.see("host1.example", list(range(SLOTS)))
    assert len(store.read("host1.example").to_bytes()) == HOST_BYTES
    assert store.clear() == 300
    assert store.hosts() == 0
    store.close()


@pytest.mark.redis
def test_redis_host_costs_a_fixed_string(redis_url: str) -> None:
    store = open_template_store(redis_url, "bound", ttl_secs=3600)
    client = redis.Redis.from_url(redis_url)
    try:
        # A host's first page is kept in a small shared record (a short page: every line);
        # its second page gives it counters of its own.
        store.see("big.example", list(range(8)))
        store.learn("big.example", list(range(8)))
        for _ in range(29):
            store.see("big.example", list(range(SLOTS)))
            store.learn("big.example", list(range(SLOTS)))
        key = "simhash:{bound}:tp:big.example"
        assert client.strlen(key) == HOST_BYTES
        assert 0 < client.ttl(key) <= 3600
        memory = store.read("big.example")
        assert memory.seen_pages == 30
        assert memory.pages == 30
        for part in (memory.seen, memory.counts):
            assert set(part[:8]) == {30}
            assert set(part[8:]) == {29}
        for n in range(10_000):
            store.learn(f"h{n}.example", [n % SLOTS])
        assert store.hosts() == 10_001
        assert store.clear() == 10_001
    finally:
        client.close()
        store.close()


# -- the command line learns per host as the crawl does ------------------------------------


def _mirror(root: Path) -> Path:
    """A mirror as wget writes one: the 20 articles of one host and a print copy."""
    host = root / "news.example"
    (host / "story").mkdir(parents=True)
    for n in range(20):
        (host / "story" / f"{n}.html").write_bytes(article(n))
    (host / "story" / "3-print.html").write_bytes(article(3, stamp="08:05"))
    return root


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy_simhash", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_dedup_learns_each_host_of_a_mirror(tmp_path: Path) -> None:
    root = _mirror(tmp_path)
    out = json.loads(_cli("dedup", "--json", str(root)).stdout)
    # The 20 articles are kept; only the print copy joins a group.
    assert out["files"] == 21
    assert out["kept"] == 20
    assert out["duplicates"] == 1
    assert out["kept"] + out["duplicates"] + len(out["skipped"]) + len(out["errors"]) == 21
    (group,) = out["groups"]
    assert {Path(m["path"]).name for m in group["members"]} == {"3.html", "3-print.html"}
    without = json.loads(_cli("dedup", "--json", "--no-templates", str(root)).stdout)
    assert without["duplicates"] == 20


def test_fingerprint_says_when_the_host_template_was_set_aside(tmp_path: Path) -> None:
    root = _mirror(tmp_path)
    lines = [json.loads(line) for line in _cli("fingerprint", str(root)).stdout.splitlines()]
    applied = [line for line in lines if line.get("template_lines")]
    assert applied, lines[:3]
    assert all("host's template" in " ".join(line["notes"]) for line in applied)
    # The first pages of the host are read before any template is known.
    assert not lines[0].get("template_lines")


def test_hosts_of_files_are_their_folders(tmp_path: Path) -> None:
    from scrapy_simhash.cli._documents import expand_hosts

    for name in ("a.example/x/1.html", "a.example/2.html", "b.example/3.html", "4.html"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("<p>x</p>")
    hosts = {Path(p).name: Path(h).name for p, h in expand_hosts([str(tmp_path)])}
    assert hosts == {
        "1.html": "a.example",
        "2.html": "a.example",
        "3.html": "b.example",
        "4.html": tmp_path.name,
    }


def test_compare_applies_the_template_learned_from_a_site(tmp_path: Path) -> None:
    root = _mirror(tmp_path)
    a, b = (str(root / "news.example" / "story" / f"{n}.html") for n in (1, 2))
    alone = json.loads(_cli("compare", "--json", a, b).stdout)
    assert alone["near_duplicate"] is True
    assert alone["template"] is None
    learned = json.loads(_cli("compare", "--json", "--site", str(root), a, b).stdout)
    assert learned["template"]["learned_from_pages"] == 21
    assert learned["a"]["template_lines"] > 0
    assert learned["near_duplicate"] is False
    text = _cli("compare", "--site", str(root), a, b).stdout
    assert "template: learned from 21 page(s)" in text
    assert "the main text is the host's template" in text


def test_a_copy_judged_while_its_original_is_judged_elsewhere_stays_a_copy() -> None:
    """Two processes: the original is seen (counted before it is judged) and indexed by
    one while the other judges its print copy; the copy brings no text of its own."""
    fingerprinter = Fingerprinter()
    original = fingerprinter.fingerprint_page(article(1))
    copy = fingerprinter.fingerprint_page(article(1, stamp="08:05"))
    memory = EMPTY.saw(learnable(original))  # process 1: seen, judged, not yet learned
    memory = memory.saw(learnable(copy))  # process 2: seen, matched the original
    look = second_look(fingerprinter, copy, memory)
    assert look is None or not look.distinct
    # A distinct page of the host in the same position brings its article: kept.
    other = fingerprinter.fingerprint_page(article(2))
    assert second_look(
        fingerprinter, other, EMPTY.saw(learnable(original)).saw(learnable(other))
    ).distinct


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_a_host_of_any_size_keeps_its_template_right(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Each part's counters are halved when its page count reaches the threshold (64 here,
    HALVE_AT in a crawl): long past it, lines on every page and on a quarter of them are
    template, a line on one page in thirty never is, and no counter saturates."""
    halve_at = 64
    store: Any
    if kind == "memory":
        store = MemoryTemplateStore(halve_at=halve_at)
    elif kind == "sqlite":
        store = SqliteTemplateStore(str(tmp_path / "t.sqlite3"), "big", halve_at=halve_at)
    else:
        store = RedisTemplateStore(request.getfixturevalue("redis_url"), "big", halve_at=halve_at)
    rng = random.Random(5)
    everywhere, fifth, rare = 7, 11, 13
    for page in range(1000):
        slots = [everywhere, *rng.sample(range(100, SLOTS), 30)]
        if page % 4 == 0:
            slots.append(fifth)
        if page % 30 == 0:
            slots.append(rare)
        store.see("big.example", slots)
        store.learn("big.example", slots)
    memory = store.read("big.example")
    store.close()
    assert memory.pages < halve_at
    assert memory.seen_pages < halve_at
    assert max(memory.counts) < halve_at
    assert max(memory.seen) < halve_at
    template = memory.template()
    assert {everywhere, fifth} <= template
    assert rare not in template
    # A part is halved with its page count: the shares survive (a fifth stays a fifth).
    assert memory.counts[everywhere] == memory.pages
    assert abs(memory.counts[fifth] / memory.pages - 0.25) < 0.1
