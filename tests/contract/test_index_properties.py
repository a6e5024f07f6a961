"""Property tests: band invariants, exact recall against brute force, and a state machine
comparing memory, SQLite and Redis with a brute-force model."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.index import (
    BandLayout,
    Match,
    Observation,
    choose_layout,
    open_index,
    split_bands,
)
from scrapy_simhash.index.layout import candidate_layouts
from tests.conftest import backend_params, backend_url

fingerprints = st.integers(min_value=0, max_value=(1 << 64) - 1)


@given(bits=st.sampled_from([64, 128]), blocks=st.integers(1, 64))
def test_split_bands_tiles_the_fingerprint(bits: int, blocks: int) -> None:
    bands = split_bands(bits, blocks)
    assert len(bands) == blocks
    widths = [width for _, width in bands]
    assert sum(widths) == bits
    assert max(widths) - min(widths) <= 1
    covered = 0
    for offset, width in bands:
        mask = ((1 << width) - 1) << offset
        assert covered & mask == 0
        covered |= mask
    assert covered == (1 << bits) - 1


def test_split_bands_rejects_impossible_cuts() -> None:
    with pytest.raises(ConfigurationError):
        split_bands(64, 65)
    with pytest.raises(ConfigurationError):
        split_bands(64, 0)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(0, 8),
    extra=st.integers(0, 3),
    base=fingerprints,
    data=st.data(),
)
def test_any_pair_within_k_shares_a_table_key(k: int, extra: int, base: int, data: Any) -> None:
    layouts = candidate_layouts(64, k)
    layout = layouts[min(extra, len(layouts) - 1)]
    assert layout.max_distance == k
    assert layout.tables == math.comb(layout.blocks, layout.keyed)
    positions = data.draw(st.lists(st.integers(0, 63), max_size=k, unique=True))
    other = base
    for position in positions:
        other ^= 1 << position
    shared = [a == b for a, b in zip(layout.keys(base), layout.keys(other), strict=True)]
    assert any(shared)


def test_layout_choice_follows_the_corpus_size() -> None:
    assert choose_layout(64, 3).name == "4x1"
    assert choose_layout(64, 3, expected_size=10_000).name == "4x1"
    # The basic layout serves a million pages (fewer band records in Redis); 5x2 beyond.
    assert choose_layout(64, 3, expected_size=1_000_000).name == "4x1"
    assert choose_layout(64, 3, expected_size=2_000_000).name == "5x2"
    assert choose_layout(64, 3, expected_size=10_000_000).name == "5x2"
    assert choose_layout(64, 3, tables=20).name == "6x3"
    with pytest.raises(ConfigurationError, match="choose one of: 4, 10, 20, 35"):
        choose_layout(64, 3, tables=7)
    with pytest.raises(ConfigurationError, match="max_distance"):
        choose_layout(64, 32)
    assert BandLayout.parse(64, "5x2") == BandLayout(64, 5, 2)
    with pytest.raises(ConfigurationError, match="BLOCKSxKEYED"):
        BandLayout.parse(64, "five")


@st.composite
def planted(draw: Any) -> tuple[int, list[int], int]:
    """Random fingerprints plus neighbours of a probe at every distance 0..k+1."""
    k = draw(st.integers(0, 6))
    seed = draw(st.integers(0, 2**32))
    rng = random.Random(seed)
    probe = rng.getrandbits(64)
    stored = [rng.getrandbits(64) for _ in range(draw(st.integers(0, 40)))]
    for distance in range(k + 2):
        value = probe
        for position in rng.sample(range(64), distance):
            value ^= 1 << position
        stored.append(value)
    return k, stored, probe


@settings(max_examples=40, deadline=None)
@given(case=planted(), tables=st.integers(0, 2))
def test_query_recall_is_exact(case: tuple[int, list[int], int], tables: int) -> None:
    k, stored, probe = case
    layout = candidate_layouts(64, k)[min(tables, len(candidate_layouts(64, k)) - 1)]
    with open_index("memory://", max_distance=k, tables=layout.tables) as index:
        expected = []
        for i, value in enumerate(stored):
            key = f"k{i:03d}"
            # observe() refuses near-duplicates; query() must still see all it stored.
            if index.observe(key, value).stored:
                expected.append((key, value))
        brute = sorted(
            (Match(key, value, (value ^ probe).bit_count()) for key, value in expected),
            key=lambda m: (m.distance, m.key),
        )
        assert index.query(probe) == [m for m in brute if m.distance <= k]


class IndexModel(RuleBasedStateMachine):
    """Brute-force model of the contract: a dict key -> fingerprint."""

    url = "memory://"
    options: ClassVar[dict[str, Any]] = {}
    keys = Bundle("keys")

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, int] = {}
        self.index: Any = None

    @initialize()
    def open(self) -> None:
        self.index = open_index(
            self.url, max_distance=3, namespace="model", reset=True, **self.options
        )

    def teardown(self) -> None:
        if self.index is not None:
            self.index.close()

    def _brute(self, fingerprint: int, exclude: str | None) -> list[Match]:
        matches = [
            Match(key, value, (value ^ fingerprint).bit_count())
            for key, value in self.model.items()
            if key != exclude and (value ^ fingerprint).bit_count() <= 3
        ]
        return sorted(matches, key=lambda m: (m.distance, m.key))

    @rule(target=keys, key=st.sampled_from([f"https://s.example/{i}" for i in range(8)]))
    def new_key(self, key: str) -> str:
        return key

    @rule(key=keys, fingerprint=fingerprints)
    def add(self, key: str, fingerprint: int) -> None:
        self._observe(key, fingerprint)

    @rule(key=keys, base=keys, flips=st.lists(st.integers(0, 63), max_size=5))
    def add_near(self, key: str, base: str, flips: list[int]) -> None:
        fingerprint = self.model.get(base, 0)
        for position in flips:
            fingerprint ^= 1 << position
        self._observe(key, fingerprint)

    def _observe(self, key: str, fingerprint: int) -> None:
        matches = self._brute(fingerprint, key)
        observed = self.index.observe(key, fingerprint)
        if matches:
            assert observed.match == matches[0]
            assert not observed.stored
        else:
            assert observed.match is None
            assert observed.previous == self.model.get(key)
            self.model[key] = fingerprint

    @rule(key=keys, base=keys, flips=st.lists(st.integers(0, 63), max_size=5))
    def claim(self, key: str, base: str, flips: list[int]) -> None:
        fingerprint = self.model.get(base, 0)
        for position in flips:
            fingerprint ^= 1 << position
        matches = self._brute(fingerprint, None)  # the claimed key's own entry counts
        observed = self.index.claim(key, fingerprint)
        if matches:
            assert observed == Observation(matches[0], None, False)
        elif key in self.model:
            assert observed == Observation(None, self.model[key], False, NO_SIGNATURE)
        else:
            assert observed == Observation(None, None, True)
            self.model[key] = fingerprint

    @rule(old=keys, new=keys)
    def rename(self, old: str, new: str) -> None:
        assert self.index.rename(old, new) == (old in self.model)
        if old in self.model:
            fingerprint = self.model.pop(old)
            self.model.pop(new, None)
            self.model[new] = fingerprint

    @rule(key=keys)
    def remove(self, key: str) -> None:
        assert self.index.remove(key) == (key in self.model)
        self.model.pop(key, None)

    @rule(fingerprint=fingerprints)
    def query_random(self, fingerprint: int) -> None:
        assert self.index.query(fingerprint) == self._brute(fingerprint, None)

    @rule(key=keys, flips=st.lists(st.integers(0, 63), max_size=5))
    def query_near(self, key: str, flips: list[int]) -> None:
        fingerprint = self.model.get(key, 0)
        for position in flips:
            fingerprint ^= 1 << position
        assert self.index.query(fingerprint) == self._brute(fingerprint, None)

    @invariant()
    def same_content(self) -> None:
        if self.index is not None:
            assert len(self.index) == len(self.model)
            for key in itertools.islice(self.model, 3):
                assert self.index.get(key) == self.model[key]


_STATEFUL = settings(
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("kind", backend_params())
def test_every_backend_matches_the_model(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    class BackendModel(IndexModel):
        url = backend_url(kind, request, tmp_path)
        options: ClassVar[dict[str, Any]] = {"shards": 6} if kind == "sharded" else {}

    BackendModel.TestCase.settings = _STATEFUL
    BackendModel.TestCase().runTest()


@pytest.mark.redis
def test_redis_in_one_group_matches_the_model(redis_url: str) -> None:
    # expected_size=1 puts every band record of a table in one sorted group and every
    # entry in one bucket, so replacements and removals splice inside shared strings.
    class RedisModel(IndexModel):
        url = redis_url
        options: ClassVar[dict[str, Any]] = {"expected_size": 1}

    RedisModel.TestCase.settings = _STATEFUL
    RedisModel.TestCase().runTest()


@pytest.mark.redis
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=planted(), tables=st.integers(0, 2), grouped=st.booleans())
def test_redis_query_recall_is_exact(
    redis_url: str, case: tuple[int, list[int], int], tables: int, grouped: bool
) -> None:
    """Band groups hold many band values, sorted: the binary search must still find every
    stored neighbour (expected_size=1 packs each table into a single group)."""
    k, stored, probe = case
    layouts = candidate_layouts(64, k)
    layout = layouts[min(tables, len(layouts) - 1)]
    with open_index(
        redis_url,
        max_distance=k,
        tables=layout.tables,
        expected_size=1 if grouped else None,
        namespace="recall",
        reset=True,
    ) as index:
        expected = []
        for i, value in enumerate(stored):
            if index.observe(f"k{i:03d}", value).stored:
                expected.append((f"k{i:03d}", value))
        brute = sorted(
            (Match(key, value, (value ^ probe).bit_count()) for key, value in expected),
            key=lambda m: (m.distance, m.key),
        )
        assert index.query(probe) == [m for m in brute if m.distance <= k]
        assert len(index) == len(expected)


_URL_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)


@pytest.mark.parametrize("kind", backend_params(("memory", "sqlite", "redis")))
def test_drop_records_read_back_what_was_recorded(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """SQLite keeps a kept URL after what it shares with the dropped one: any pair, sharing
    anything from nothing to all of either, must read back exactly, one by one and listed."""
    url = backend_url(kind, request, tmp_path)

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        pairs=st.lists(
            st.tuples(_URL_TEXT, _URL_TEXT, st.integers(0, 64), st.none() | st.integers(0, 127)),
            max_size=8,
        )
    )
    def check(pairs: list[tuple[str, str, int, int | None]]) -> None:
        with open_index(url, namespace="drops", reset=True) as index:
            expected: dict[str, tuple[str, int, int | None]] = {}
            for dropped, kept, distance, apart in pairs:
                for copy in (dropped, dropped + kept, kept + dropped):
                    index.record_drop(copy, kept, distance, apart)
                    expected[copy] = (kept, distance, apart)
            for copy, (kept, distance, apart) in expected.items():
                record = index.drop_of(copy)
                assert record is not None
                assert (record.kept, record.distance, record.apart) == (kept, distance, apart)
            listed = {r.url: (r.kept, r.distance, r.apart) for r in index.drops()}
            assert listed == expected

    check()
