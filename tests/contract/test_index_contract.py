"""One contract, every backend: memory, SQLite, Redis and Redis Cluster, sync and async."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.confirm import NO_SIGNATURE, SIGNATURE_BITS, sketch_of
from scrapy_simhash.exceptions import ConfigurationError, IndexMismatchError
from scrapy_simhash.index import Match, Observation, open_index
from scrapy_simhash.index.inflight import BUSY, FREE, MINE, TAKEN, Hold
from tests.conftest import MODES, PERSISTENT, Clock, backend_params, backend_url
from tests.index_helpers import at_distance, flip, opener


@pytest.fixture(params=backend_params(modes=MODES))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    backend, mode = request.param
    url = backend_url(backend, request, tmp_path)
    open_ = opener(url, mode == "async")
    opened: list[Any] = []

    def make_index(**kwargs: Any) -> Any:
        if backend == "sharded":
            kwargs.setdefault("shards", 6)
        index = open_(**kwargs)
        opened.append(index)
        return index

    make_index.backend = backend  # type: ignore[attr-defined]
    yield make_index
    for index in opened:
        index.close()


@pytest.fixture
def persistent(make: Callable[..., Any]) -> Callable[..., Any]:
    if make.backend not in PERSISTENT:  # type: ignore[attr-defined]
        pytest.fail("fixture misuse")  # never reached: tests below filter on the backend
    return make


def test_first_page_is_stored_and_a_near_duplicate_is_reported(make: Callable[..., Any]) -> None:
    index = make()
    fp = 0x0123_4567_89AB_CDEF
    assert index.observe("https://a.example/1", fp) == Observation(None, None, True)
    observed = index.observe("https://b.example/1", flip(fp, 0, 17, 63))
    assert observed == Observation(Match("https://a.example/1", fp, 3), None, False)
    # Nothing was stored for the duplicate.
    assert index.get("https://b.example/1") is None
    assert len(index) == 1
    assert index.check_and_add("https://c.example/1", flip(fp, 1, 2, 3, 4)) is None
    assert index.check_and_add("https://d.example/1", fp) == Match("https://a.example/1", fp, 0)
    assert len(index) == 2


def test_matches_beyond_the_exact_distance_are_found_when_they_share_a_band(
    make: Callable[..., Any],
) -> None:
    """Bands for k=3 (four 16-bit bands) with matches accepted up to 4 bits."""
    index = make(max_distance=4, exact_distance=3)
    assert index.layout.name == "4x1"
    fp = 0x0123_4567_89AB_CDEF
    index.observe("kept", fp)
    # 4 bits, all in the first band: the other three bands are equal, so it is found.
    assert index.check_and_add("near", flip(fp, 0, 1, 2, 3)) == Match("kept", fp, 4)
    # 4 bits, one in each band: no band is equal, so it is not found (the documented miss).
    assert index.check_and_add("spread", flip(fp, 0, 16, 32, 48)) is None
    # 5 bits are never a match, even within one band.
    assert index.check_and_add("far", flip(fp, 0, 1, 2, 3, 4)) is None
    # Within the exact distance every pair is found, wherever its bits are.
    assert index.check_and_add("exact", flip(fp, 1, 17, 33)) == Match("kept", fp, 3)


def test_readding_a_key_replaces_its_fingerprint(make: Callable[..., Any]) -> None:
    index = make()
    old = 0xFFFF_0000_FFFF_0000
    new = 0x0F0F_0F0F_0F0F_0F0F
    assert index.observe("k", old).stored
    # The same key never matches itself, however close the new fingerprint is.
    assert index.observe("k", flip(old, 5)) == Observation(None, old, True, NO_SIGNATURE)
    assert index.observe("k", new) == Observation(None, flip(old, 5), True, NO_SIGNATURE)
    assert index.get("k") == new
    assert len(index) == 1
    # The old band entries are gone: the old fingerprint no longer finds anything.
    assert index.query(old) == []
    assert index.query(flip(new, 9)) == [Match("k", new, 1)]
    assert index.observe("k", new) == Observation(None, new, True, NO_SIGNATURE)
    assert len(index) == 1


def test_observe_picks_the_closest_match_and_breaks_ties_by_key(make: Callable[..., Any]) -> None:
    index = make()
    probe = 0xDEAD_BEEF_0BAD_F00D
    # Stored pages are pairwise further than k apart, each within k of the probe.
    stored = {
        "b": flip(probe, 0, 1, 2),
        "a": flip(probe, 20, 21, 22),
        "z": flip(probe, 50, 51),
        "y": flip(probe, 40, 41),
    }
    for key, fp in stored.items():
        assert index.observe(key, fp).stored, key
    assert index.query(probe) == [
        Match("y", stored["y"], 2),
        Match("z", stored["z"], 2),
        Match("a", stored["a"], 3),
        Match("b", stored["b"], 3),
    ]
    assert index.observe("new", probe).match == Match("y", stored["y"], 2)
    index.remove("y")
    assert index.observe("new", probe).match == Match("z", stored["z"], 2)
    assert index.query(flip(probe, 0, 1, 2, 3, 4, 5, 6)) == []


def test_get_remove_clear_and_count(make: Callable[..., Any]) -> None:
    index = make()
    rng = random.Random(7)
    fps = {f"https://site.example/{i}": rng.getrandbits(64) for i in range(30)}
    for key, fp in fps.items():
        index.observe(key, fp)
    assert len(index) == index.count() == 30
    assert index.get("https://site.example/3") == fps["https://site.example/3"]
    assert index.get("missing") is None
    assert index.remove("https://site.example/3") is True
    assert index.remove("https://site.example/3") is False
    assert index.query(fps["https://site.example/3"]) == []
    assert len(index) == 29
    index.clear()
    assert len(index) == 0
    assert all(index.query(fp) == [] for fp in fps.values())
    # Usable after clear.
    assert index.observe("again", 42).stored
    assert len(index) == 1


def test_unicode_keys_round_trip(make: Callable[..., Any]) -> None:
    index = make()
    key = "https://例子.测试/新闻?id=1&q=ü"
    index.observe(key, 99)
    assert index.observe("other", 99).match == Match(key, 99, 0)


def test_stats_describe_the_buckets(make: Callable[..., Any]) -> None:
    index = make()
    empty = index.stats()
    assert (empty.entries, empty.buckets, empty.largest_bucket) == (0, 0, 0)
    index.observe("a", 0)
    index.observe("b", (1 << 64) - 1)
    # "c" shares its three high 16-bit bands with "a" and its low band with "b".
    index.observe("c", 0xFFFF)
    stats = index.stats()
    assert stats.entries == 3
    assert stats.tables == 4
    assert stats.layout == "4x1"
    assert stats.buckets == 8
    assert stats.largest_bucket == 2
    assert stats.mean_bucket == pytest.approx(12 / 8)


def test_entries_age_out_after_ttl(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(ttl_secs=100, clock=clock)
    index.observe("old", 1000)
    clock.now += 50
    assert index.observe("dup", 1001).match == Match("old", 1000, 1)
    index.observe("fresh", 1 << 40)
    clock.now += 51  # "old" was last seen 101 s ago; "fresh" 51 s ago
    assert index.get("old") is None
    assert index.query(1000) == []
    assert index.get("fresh") == 1 << 40
    assert index.observe("dup", 1001) == Observation(None, None, True)
    assert index.observe("fresh", 1 << 40) == Observation(
        None, 1 << 40, True, NO_SIGNATURE
    )  # seen again
    clock.now += 60
    index.observe("fresh", 1 << 40)
    clock.now += 50  # "dup" was stored 110 s ago, "fresh" seen 50 s ago
    assert index.get("fresh") == 1 << 40
    assert index.get("dup") is None
    assert len(index) == 2  # expired entries count until purged
    assert index.purge_expired() == 1  # "dup"; "old" was dropped when "dup" met it
    assert len(index) == 1
    assert index.purge_expired() == 0


def test_re_observing_an_expired_key_reports_no_previous(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(ttl_secs=10, clock=clock)
    index.observe("k", 5)
    clock.now += 11
    assert index.observe("k", 5) == Observation(None, None, True)
    assert index.get("k") == 5
    assert len(index) == 1


def test_wide_fingerprints_and_other_distances(make: Callable[..., Any]) -> None:
    index = make(bits=128, max_distance=6, namespace="wide")
    rng = random.Random(3)
    base = rng.getrandbits(128)
    index.observe("base", base)
    near = at_distance(rng, base, 6, bits=128)
    far = at_distance(rng, base, 7, bits=128)
    assert index.observe("near", near).match == Match("base", base, 6)
    assert index.observe("far", far).stored
    assert index.layout.tables == 7
    with pytest.raises(ConfigurationError, match="does not fit in 128 bits"):
        index.observe("x", 1 << 128)


def test_namespaces_are_separate(make: Callable[..., Any]) -> None:
    one = make(namespace="site-one")
    two = make(namespace="site-two")
    one.observe("a", 123)
    assert two.observe("b", 123).stored
    assert one.query(123) == [Match("a", 123, 0)]
    assert two.query(123) == [Match("b", 123, 0)]
    two.clear()
    assert one.get("a") == 123


def test_bad_fingerprints_and_keys_are_rejected(make: Callable[..., Any]) -> None:
    index = make()
    with pytest.raises(ConfigurationError, match="64 bits"):
        index.observe("k", 1 << 64)
    with pytest.raises(ConfigurationError, match="64 bits"):
        index.observe("k", -1)
    with pytest.raises(ConfigurationError, match="int"):
        index.observe("k", "0xff")
    with pytest.raises(ConfigurationError, match="key"):
        index.observe("", 1)
    assert len(index) == 0


def test_reopening_with_another_configuration_raises(make: Callable[..., Any]) -> None:
    if make.backend not in PERSISTENT:  # type: ignore[attr-defined]
        index = make(scheme="s1")
        assert make(scheme="s2").observe("a", 1).stored  # memory:// never persists
        return
    index = make(scheme="s1")
    index.observe("a", 77)
    with pytest.raises(IndexMismatchError, match=r"scheme 's1' \(now 's2'\).*another `namespace`"):
        make(scheme="s2")
    with pytest.raises(IndexMismatchError, match="bits 64"):
        make(scheme="s1", bits=128)
    with pytest.raises(IndexMismatchError, match="4 tables"):
        make(scheme="s1", tables=10)
    with pytest.raises(IndexMismatchError, match="every distance <= 3"):
        make(scheme="s1", max_distance=4)
    # Accepting 4 bits on bands built for 3 is what the stored layout serves.
    assert make(scheme="s1", max_distance=4, exact_distance=3).layout.name == "4x1"
    # A different size hint keeps the stored layout; a smaller k is served by it too.
    again = make(scheme="s1", expected_size=10_000_000, max_distance=2)
    assert again.layout.name == "4x1"
    assert again.get("a") == 77
    assert again.query(flip(77, 1, 2, 3)) == []  # k = 2 for this handle
    # reset=True rebuilds the namespace with the new configuration.
    fresh = make(scheme="s2", tables=10, reset=True)
    assert fresh.layout.name == "5x2"
    assert len(fresh) == 0
    assert fresh.observe("b", 77).stored


def test_unknown_url_scheme_lists_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"memory://.*redis\+cluster://.*sqlite://"):
        open_index("mongodb://user:secret@host/db")
    with pytest.raises(ConfigurationError) as info:
        open_index("mongodb://user:secret@host/db")
    assert "secret" not in str(info.value)


# -- claims: a page naming another URL as its canonical one -------------------------------------


def test_claiming_a_key_matches_its_own_entry_and_refuses_a_different_one(
    make: Callable[..., Any],
) -> None:
    index = make()
    fp = 0x0123_4567_89AB_CDEF
    # Nothing under the key yet: the claim stores the page there.
    assert index.claim("https://a.example/story", fp) == Observation(None, None, True)
    assert index.get("https://a.example/story") == fp
    # A copy claiming the same key finds the stored page, itself included.
    near = flip(fp, 3, 9)
    assert index.claim("https://a.example/story", near) == Observation(
        Match("https://a.example/story", fp, 2), None, False
    )
    # Far from what the key holds: a conflict, nothing replaced.
    far = fp ^ 0xFFFF_FFFF
    assert index.claim("https://a.example/story", far) == Observation(None, fp, False, NO_SIGNATURE)
    assert index.get("https://a.example/story") == fp
    # Another key within k is a match too, as with observe.
    assert index.claim("https://a.example/other", near).match == Match(
        "https://a.example/story", fp, 2
    )
    assert len(index) == 1


def test_an_expired_entry_does_not_hold_a_claimed_key(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(ttl_secs=10, clock=clock)
    index.observe("k", 5)
    clock.now += 11
    assert index.claim("k", 1 << 50) == Observation(None, None, True)
    assert index.get("k") == 1 << 50


# -- the record of dropped near-duplicates ------------------------------------------------------


def test_drop_records_say_what_a_dropped_url_copies(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(clock=clock)
    assert index.drop_of("https://a.example/print/1") is None
    index.record_drop("https://a.example/print/1", "https://a.example/1", 2, 13)
    record = index.drop_of("https://a.example/print/1")
    assert record == ("https://a.example/print/1", "https://a.example/1", 2, int(clock.now), 13)
    assert (record.kept, record.distance, record.apart) == ("https://a.example/1", 2, 13)
    # Dropped again: the newer record replaces the old one.
    clock.now += 5
    index.record_drop("https://a.example/print/1", "https://a.example/2", 0)
    assert index.drop_of("https://a.example/print/1") == (
        "https://a.example/print/1",
        "https://a.example/2",
        0,
        int(clock.now),
        None,
    )
    key = "https://例子.测试/新闻?id=1&q=ü"
    index.record_drop(key, "https://例子.测试/原文", 3)
    assert index.drop_of(key).kept == "https://例子.测试/原文"
    assert index.drop_count() == 2
    # Drop records are not index entries: nothing matches, nothing counts.
    assert len(index) == 0
    index.clear()
    assert index.drop_count() == 0
    assert index.drop_of(key) is None


def test_a_drop_record_found_wrong_is_forgotten_alone(make: Callable[..., Any]) -> None:
    index = make()
    index.record_drop("https://a.example/2", "https://a.example/1", 0)
    index.record_drop("https://a.example/print/1", "https://a.example/1", 1)
    index.forget_drop("https://a.example/2")
    index.forget_drop("https://a.example/never-dropped")
    assert index.drop_of("https://a.example/2") is None
    assert index.drop_of("https://a.example/print/1").kept == "https://a.example/1"
    assert index.drop_count() == 1
    index.record_drop("https://a.example/2", "https://a.example/3", 2)
    assert index.drop_of("https://a.example/2").kept == "https://a.example/3"
    assert index.drop_count() == 2


def test_drop_records_are_bounded_by_count_oldest_first(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(clock=clock, drop_max_entries=5)
    for i in range(12):
        clock.now += 1
        index.record_drop(f"https://a.example/copy/{i}", "https://a.example/orig", 1)
    # SQLite trims in batches of max/16 (here every record); all backends end at the cap.
    assert index.drop_count() == 5
    assert [index.drop_of(f"https://a.example/copy/{i}") is None for i in range(12)] == [
        True
    ] * 7 + [False] * 5


def test_drop_records_expire(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(clock=clock, drop_ttl_secs=100)
    index.record_drop("old", "kept", 1)
    clock.now += 60
    index.record_drop("young", "kept", 1)
    clock.now += 50  # "old" is 110 s old, "young" 50 s
    assert index.drop_of("old") is None
    assert index.drop_of("young") is not None
    # New records sweep expired ones away (SQLite every 1024 records, the others at once).
    for i in range(1030):
        index.record_drop(f"new-{i}", "kept", 1)
    assert index.drop_count() == 1031


def test_drop_records_can_be_turned_off(make: Callable[..., Any]) -> None:
    index = make(drop_max_entries=0)
    index.record_drop("copy", "kept", 1)
    assert index.drop_of("copy") is None
    assert index.drop_count() == 0


def test_drop_records_of_namespaces_are_separate(make: Callable[..., Any]) -> None:
    one = make(namespace="site-one")
    two = make(namespace="site-two")
    one.record_drop("copy", "kept-one", 1)
    assert two.drop_of("copy") is None
    two.record_drop("copy", "kept-two", 2)
    assert one.drop_of("copy").kept == "kept-one"
    two.clear()
    assert one.drop_of("copy").kept == "kept-one"


def test_drop_records_persist_until_a_reset(make: Callable[..., Any]) -> None:
    make().record_drop("copy", "kept", 1)
    if make.backend not in PERSISTENT:  # type: ignore[attr-defined]
        assert make().drop_of("copy") is None  # memory:// keeps nothing between handles
        return
    assert make().drop_of("copy") == ("copy", "kept", 1, make().drop_of("copy").at, None)
    assert make(reset=True).drop_of("copy") is None


def test_rename_moves_an_entry_to_another_key(make: Callable[..., Any]) -> None:
    clock = Clock()
    index = make(clock=clock)
    fp = 0x0F0F_F0F0_1234_5678
    index.observe("https://a.example/print/1", fp)
    index.observe("https://a.example/other", 0xFFFF_0000_0000_FFFF)
    index.observe("stale", 0xAAAA_AAAA_5555_5555)
    assert index.rename("https://a.example/print/1", "https://a.example/1") is True
    assert index.get("https://a.example/print/1") is None
    assert index.get("https://a.example/1") == fp
    assert index.query(flip(fp, 1)) == [Match("https://a.example/1", fp, 1)]
    assert index.observe("copy", flip(fp, 2)).match == Match("https://a.example/1", fp, 1)
    # A page under the new key is replaced, and a missing old key renames nothing.
    assert index.rename("https://a.example/1", "stale") is True
    assert index.query(0xAAAA_AAAA_5555_5555) == []
    assert index.get("stale") == fp
    assert index.rename("missing", "anything") is False
    assert index.rename("missing", "stale") is False  # nothing moved, nothing lost
    assert index.get("stale") == fp
    assert len(index) == 2
    # A renamed entry is removed like any other: its band records go too.
    assert index.remove("stale") is True
    assert index.query(fp) == []
    # Many renames through every entry bucket keep the index whole.
    rng = random.Random(5)
    fps = {f"k{i}": rng.getrandbits(64) for i in range(40)}
    for key, value in fps.items():
        index.observe(key, value)
    for key in fps:
        assert index.rename(key, f"renamed-{key}")
    assert all(index.get(f"renamed-{key}") == value for key, value in fps.items())
    assert all(index.query(value)[0].key == f"renamed-{key}" for key, value in fps.items())
    assert len(index) == 41


@pytest.mark.parametrize("backend", backend_params())
def test_keys_and_drop_records_can_be_listed(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """What a report reads: every live key and every live drop record, one pass each."""
    clock = Clock()
    url = backend_url(backend, request, tmp_path)
    with open_index(url, clock=clock, ttl_secs=100, drop_ttl_secs=100) as index:
        assert list(index.keys()) == []
        assert list(index.drops()) == []
        rng = random.Random(7)
        kept = {f"https://a.example/{i}": rng.getrandbits(64) for i in range(2500)}
        kept["https://例子.测试/新闻?q=ü"] = rng.getrandbits(64)
        for key, fingerprint in kept.items():
            index.observe(key, fingerprint)
        index.record_drop("https://a.example/print/1", "https://a.example/1", 2)
        clock.now += 60
        index.observe("https://a.example/late", rng.getrandbits(64))
        index.record_drop("https://a.example/print/2", "https://a.example/2", 0)
        assert sorted(index.keys()) == sorted([*kept, "https://a.example/late"])
        assert sorted(index.drops()) == [
            ("https://a.example/print/1", "https://a.example/1", 2, int(clock.now - 60), None),
            ("https://a.example/print/2", "https://a.example/2", 0, int(clock.now), None),
        ]
        clock.now += 50  # the first batch and the first record have aged out
        assert list(index.keys()) == ["https://a.example/late"]
        assert [r.url for r in index.drops()] == ["https://a.example/print/2"]


# -- the second test (every drop confirmed) -----------------------------------------------

NEAR = 0x5555_0000_AAAA_0000_5555_0000_AAAA_0000  # a near signature (bit 0 clear)


def _signature(*bits: int) -> int:
    """NEAR with ``bits`` flipped (bit 0, the exact-digest mark, is never one of them)."""
    return flip(NEAR, *bits)


def test_a_candidate_is_a_copy_only_when_its_signature_confirms_it(
    make: Callable[..., Any],
) -> None:
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0x0123_4567_89AB_CDEF
    assert index.observe("kept", fp, NEAR).stored
    # Within the radius, signatures 20 bits apart: confirmed, a copy.
    close = _signature(*range(1, 21))
    assert index.observe("copy", flip(fp, 1, 2), close) == Observation(
        Match("kept", fp, 2, NEAR), None, False
    )
    assert index.get("copy") is None
    # 21 bits apart: the candidate is rejected, the page is filed beside it.
    far = _signature(*range(1, 22))
    observed = index.observe("distinct", flip(fp, 1, 2), far)
    assert observed == Observation(None, None, True, None, 1)
    assert index.entry("distinct") == (flip(fp, 1, 2), far)
    # A third page confirmed by the second, not the first, copies the second even though
    # the first is as close: the rejected candidate is counted.
    third = index.observe("third", flip(fp, 1, 2, 40), far)
    assert third.match == Match("distinct", flip(fp, 1, 2), 1, far)
    assert third.rejected == 1


def test_the_closest_confirmed_candidate_wins_over_a_closer_rejected_one(
    make: Callable[..., Any],
) -> None:
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0xDEAD_BEEF_0BAD_F00D
    other = _signature(*range(30, 60))
    index.observe("near-but-distinct", flip(fp, 0), other)
    index.observe("farther-copy", flip(fp, 1, 2, 3), NEAR)
    observed = index.observe("probe", fp, _signature(5))
    assert observed.match == Match("farther-copy", flip(fp, 1, 2, 3), 3, NEAR)
    assert observed.rejected == 1
    # query lists every candidate with its signature, unjudged.
    assert index.query(fp) == [
        Match("near-but-distinct", flip(fp, 0), 1, other),
        Match("farther-copy", flip(fp, 1, 2, 3), 3, NEAR),
    ]


def test_a_distinct_page_with_the_very_fingerprint_of_another_passes_unfiled(
    make: Callable[..., Any],
) -> None:
    """A crafted twin (same fingerprint, other text) is never a copy, and never displaces
    the page it imitates."""
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0x0F0F_0F0F_F0F0_F0F0
    index.observe("victim", fp, NEAR)
    crafted = _signature(*range(1, 64))
    assert index.observe("crafted", fp, crafted) == Observation(None, None, False, None, 1)
    assert index.get("crafted") is None
    assert index.entry("victim") == (fp, NEAR)
    # The victim's own copies are still found.
    assert index.observe("victim-copy", fp, _signature(3)).match == Match("victim", fp, 0, NEAR)


def test_short_pages_confirm_only_short_pages_at_the_same_digest(
    make: Callable[..., Any],
) -> None:
    """A short page's fingerprint is a digest of its own text and title, its signature (bit
    0 set) one of its whole text: a copy has the same digest and a signature within
    SHORT_PAGE_DISTANCE (10) bits."""
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0x1111_2222_3333_4444
    page = _signature(7) | 1
    index.observe("brief", fp, page)
    # The same digest, whole texts 11 bits apart: another page (unfiled: its twin holds it).
    assert index.observe("other-brief", fp, flip(page, *range(1, 12))) == Observation(
        None, None, False, None, 1
    )
    # Another digest one bit away (another text), the same whole text: not a copy.
    assert index.observe("near-digest", flip(fp, 9), page).match is None
    # A long page whose near signature equals the short page's but for the mark: never.
    assert index.observe("long-page", flip(fp, 10, 11), page ^ 1).match is None
    copy = index.observe("print-brief", fp, flip(page, *range(1, 11)))
    assert copy.match == Match("brief", fp, 0, page)
    assert copy.rejected == 2


def test_a_claim_on_a_key_holding_a_distinct_page_is_a_conflict(
    make: Callable[..., Any],
) -> None:
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0x0123_4567_89AB_CDEF
    held = _signature(*range(1, 40))
    index.observe("https://a.example/canonical", fp, held)
    claimed = index.claim("https://a.example/canonical", flip(fp, 2), NEAR)
    assert claimed == Observation(None, fp, False, held, 1)
    assert index.claim("https://a.example/canonical", flip(fp, 2), held).match == Match(
        "https://a.example/canonical", fp, 1, held
    )


def test_signatures_are_kept_when_a_key_is_seen_again_or_renamed(
    make: Callable[..., Any],
) -> None:
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0x0123_4567_89AB_CDEF
    index.observe("old-name", fp, NEAR)
    assert index.observe("old-name", flip(fp, 3), _signature(9)) == Observation(
        None, fp, True, NEAR
    )
    assert index.rename("old-name", "new-name")
    assert index.entry("new-name") == (flip(fp, 3), _signature(9))
    assert index.entry("old-name") is None


def test_the_namespace_key_is_kept_in_the_namespace(
    make: Callable[..., Any],
) -> None:
    first = make(namespace="keyed-a")
    assert 0 <= first.confirm_key < 1 << 64
    other = make(namespace="keyed-b")
    assert other.confirm_key != first.confirm_key
    if make.backend in PERSISTENT:  # type: ignore[attr-defined]
        again = make(namespace="keyed-a")
        assert again.confirm_key == first.confirm_key
        reset = make(namespace="keyed-a", reset=True)
        assert reset.confirm_key != first.confirm_key


def test_a_key_is_made_by_the_injected_source() -> None:
    keys = iter([0xABCD, 0x1234])
    index = open_index("memory://", new_key=lambda: next(keys))
    assert index.confirm_key == 0xABCD


# -- filings in flight (index/inflight.py) ---------------------------------------------------


def test_a_filing_in_flight_is_held_renewed_and_settled_by_its_owner(
    make: Callable[..., Any],
) -> None:
    clock = Clock()
    index = make(clock=clock)
    assert index.in_flight("page") is None
    assert index.hold("page", "a:1", 1.0) == Hold(FREE)
    assert index.in_flight("page") == ("a:1", clock.now)
    clock.now += 0.5
    assert index.hold("page", "a:1", 1.0) == Hold(MINE, "a:1", 0.5)  # renewed
    assert index.in_flight("page") == ("a:1", clock.now)
    assert not index.settle("page", "b:1")  # another owner's: left
    assert index.in_flight("page") == ("a:1", clock.now)
    assert index.settle("page", "a:1")
    assert index.in_flight("page") is None
    assert not index.settle("page", "a:1")


def test_a_young_filing_of_another_owner_is_busy_an_old_one_is_taken(
    make: Callable[..., Any],
) -> None:
    clock = Clock()
    index = make(clock=clock)
    index.hold("page", "a:1", 1.0)
    clock.now += 0.75
    assert index.hold("page", "b:1", 1.0) == Hold(BUSY, "a:1", 0.75)
    assert index.in_flight("page") == ("a:1", clock.now - 0.75)  # untouched
    clock.now += 0.25  # one lease since a:1 last held it
    assert index.hold("page", "b:1", 1.0) == Hold(TAKEN, "a:1", 1.0)
    assert index.in_flight("page") == ("b:1", clock.now)
    # The owner that was taken for dead finds it held by another.
    assert index.hold("page", "a:1", 1.0) == Hold(BUSY, "b:1", 0.0)
    assert not index.settle("page", "a:1")
    assert index.in_flight("page") == ("b:1", clock.now)


def test_a_hold_that_only_takes_stale_filings_sets_no_mark_on_a_settled_key(
    make: Callable[..., Any],
) -> None:
    clock = Clock()
    index = make(clock=clock)
    assert index.hold("settled", "b:1", 1.0, create=False) == Hold(FREE)
    assert index.in_flight("settled") is None
    index.hold("dead", "a:1", 1.0)
    clock.now += 5
    assert index.hold("dead", "b:1", 1.0, create=False) == Hold(TAKEN, "a:1", 5.0)
    assert index.in_flight("dead") == ("b:1", clock.now)


def test_filings_in_flight_are_apart_from_the_entries_and_go_with_the_namespace(
    make: Callable[..., Any],
) -> None:
    index = make()
    other = make(namespace="other-flight")
    fp = 0x0123_4567_89AB_CDEF
    index.hold("https://a.example/1", "a:1", 60.0)
    assert index.get("https://a.example/1") is None  # a mark is no entry
    assert len(index) == 0
    assert other.in_flight("https://a.example/1") is None
    assert index.observe("https://a.example/1", fp).stored
    assert index.in_flight("https://a.example/1") is not None
    index.clear()
    assert index.in_flight("https://a.example/1") is None


@pytest.mark.parametrize("owner", ["", "a|b", "x" * 201])
def test_an_owner_that_cannot_be_stored_is_refused(make: Callable[..., Any], owner: str) -> None:
    index = make()
    with pytest.raises(ConfigurationError):
        index.hold("page", owner, 1.0)
    with pytest.raises(ConfigurationError):
        index.hold("page", "a:1", 0.0)


def test_a_page_s_sketch_is_kept_above_its_signature_and_never_judged(
    make: Callable[..., Any],
) -> None:
    """The sketch of a page's other lines (confirm.SKETCH_BITS above the signature) comes
    back with the page's match, seen again or renamed, and takes no part in the test."""
    index = make(max_distance=8, exact_distance=3, confirm_distance=20)
    fp = 0x0123_4567_89AB_CDEF
    sketch = 0xFEDC_BA98_7654_3211 << SIGNATURE_BITS
    assert index.observe("kept", fp, NEAR | sketch).stored
    other_sketch = 0x1111_2222_3333_4445 << SIGNATURE_BITS
    observed = index.observe("copy", flip(fp, 1), _signature(3) | other_sketch)
    assert observed.match == Match("kept", fp, 1, NEAR | sketch)
    assert sketch_of(observed.match.signature) == sketch >> SIGNATURE_BITS
    # Signatures 21 bits apart stay apart whatever the sketches.
    assert index.observe("far", flip(fp, 2), _signature(*range(1, 22)) | sketch).stored
    assert index.rename("kept", "renamed")
    assert index.entry("renamed") == (fp, NEAR | sketch)
    assert [m.signature for m in index.query(fp) if m.key == "renamed"] == [NEAR | sketch]
