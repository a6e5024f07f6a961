"""A page's recrawl state packed into bytes: every field read back exactly, observations
kept within nine percent in one byte, 0.2.0's packing read (the stores' contract is in
tests/contract/test_recrawl_store.py)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.recrawl import PageState
from scrapy_simhash.recrawl.packing import FIELDS, as_float32, quantize_interval

HOUR = 3600.0
DAY = 86400.0


@pytest.mark.parametrize("secs", [0.0, 0.1, 1.0, 59.0, HOUR, 1.5 * DAY, 7 * DAY, 400 * DAY])
def test_observation_intervals_are_kept_within_nine_percent(secs: float) -> None:
    """One byte an observation: a quarter-octave grid, so within 2 ** (1/8) - 1 of the
    interval, hours doubling from one exact."""
    kept = quantize_interval(secs)
    assert kept == quantize_interval(kept)  # on the grid: reads back as written
    if secs >= 1.1:
        assert kept == pytest.approx(secs, rel=2 ** (1 / 8) - 1)
    assert [quantize_interval(h * HOUR) for h in (1, 2, 4, 8)] == [
        HOUR,
        2 * HOUR,
        4 * HOUR,
        8 * HOUR,
    ]


def test_states_packed_by_0_2_0_are_read() -> None:
    """Two bytes an observation in 0.2.0 (version 1): read as written, rewritten in one."""
    old = bytes.fromhex(
        "012d213412000000000000000000000084bc40a03803010000e145acc52737c800032265220208bf083f"
    )
    state = PageState.from_bytes("https://a.test/", old)
    assert (state.fingerprint, state.visits, state.changes, state.status) == (0x1234, 3, 1, 200)
    assert (state.first_fetch, state.last_fetch, state.next_due) == (100.0, 7300.0, 14500.0)
    assert state.etag == '"e"'
    assert state.history == ((HOUR, True), (HOUR, False))
    again = state.to_bytes()
    assert again[0] == 2
    assert len(again) == len(old) - 2
    assert PageState.from_bytes("https://a.test/", again) == state


_FLOATS = st.floats(min_value=0, max_value=4e9, allow_nan=False)
_TEXT = st.text(max_size=40)


@given(
    fingerprint=st.one_of(st.none(), st.integers(0, 2**64 - 1), st.integers(2**64, 2**128 - 1)),
    times=st.tuples(_FLOATS, _FLOATS, _FLOATS) | st.none(),
    due=_FLOATS | st.just(math.inf),
    counts=st.tuples(*(st.integers(0, 10**6) for _ in range(4))),
    floats=st.tuples(_FLOATS, st.floats(0, 1e3, allow_nan=False)),
    etag=st.none() | _TEXT,
    modified=st.none() | _TEXT | st.just("Tue, 14 May 2024 08:12:31 GMT"),
    status=st.none() | st.integers(0, 999),
    retired=st.booleans(),
    history=st.lists(st.tuples(_FLOATS, st.booleans()), max_size=40),
)
@settings(max_examples=300, deadline=None)
def test_packed_state_reads_back_exactly(
    fingerprint: int | None,
    times: tuple[float, float, float] | None,
    due: float,
    counts: tuple[int, int, int, int],
    floats: tuple[float, float],
    etag: str | None,
    modified: str | None,
    status: int | None,
    retired: bool,
    history: list[tuple[float, bool]],
) -> None:
    first, last, compared = times or (None, None, None)
    state = PageState(
        url="u",
        fingerprint=fingerprint,
        first_fetch=first,
        last_fetch=last,
        last_compared=compared,
        visits=counts[0],
        changes=counts[1],
        interval_secs=as_float32(floats[0]),
        next_due=due,
        rate=as_float32(floats[1]),
        etag=etag,
        last_modified=modified,
        status=status,
        history=tuple((quantize_interval(t), c) for t, c in history),
        misses=counts[2],
        failures=counts[3],
        retired=retired,
    )
    assert PageState.from_bytes("u", state.to_bytes()) == state


def test_packed_fields_are_read_in_the_order_of_the_state() -> None:
    """``from_bytes`` sets the fields ``packing.fields`` reads by position."""
    assert ("url", *FIELDS) == tuple(f.name for f in dataclasses.fields(PageState))
    state = PageState(url="u", fingerprint=7, visits=3, etag="e", status=304, misses=1)
    assert vars(PageState.from_bytes("u", state.to_bytes())) == vars(state)
