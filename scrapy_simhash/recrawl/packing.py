"""The compact binary form of a page's recrawl state (72 bytes with 32 observations).

A crawl of 100M URLs keeps one state per URL, so every byte here is a gigabyte there. The
state is packed with :mod:`struct`: flags say which optional fields follow, counters are
varints, the change rate and interval are float32, and each history observation is one
byte: a changed bit and the interval since the previous comparison on a quarter-octave
log scale (from 1 s to 90 years, within 9% of the true interval; the rate estimators'
own noise at 32 observations is several times that, and freshness in the simulation moved
by less than 0.002). ``advance`` rounds rates, intervals and observations to these grids
before it uses them, so a state reads back exactly as it was written and every backend
schedules identically. States of version 1 (16-bit observations, 0.2.0) are still read. Reading is one pass
over local offsets, observations by a table of their 256 bytes (``fields``): a claim
reads a hundred states at a time.
"""

from __future__ import annotations

import email.utils
import math
import struct
from collections.abc import Iterable
from typing import Any

#: First byte of every packed state; bumped when the layout changes. 2: one byte an
#: observation; 1 (read only): two.
VERSION = 2

#: A version 2 observation: the changed bit, then the interval as 7 bits, code c meaning
#: 3600 * 2 ** ((c - 48) / 4) seconds (0: none elapsed): 1, 2, 4, 8... hours are exact.
_STEPS_PER_OCTAVE = 4
_HOUR_CODE = 48
_MAX_CODE = 0x7F
_CHANGED8 = 0x80

#: A version 1 observation's interval is a 15-bit float: 5-bit exponent, 10-bit mantissa.
_MANTISSA_BITS = 10
_EXPONENT_BIAS = 4
_MAX_EXPONENT = 31
_CHANGED = 0x8000

_FP64, _FP128, _FIRST, _LAST, _COMPARED_APART, _ETAG, _MODIFIED, _MODIFIED_RAW = (
    1 << i for i in range(8)
)
_STATUS, _DUE_APART, _MISSES, _FAILURES, _RETIRED, _HISTORY, _UNCOMPARED, _FIRST_RAW = (
    1 << i for i in range(8, 16)
)

_HEAD = struct.Struct("<BH")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")


def as_float32(value: float) -> float:
    """Round ``value`` to the nearest float32 (how rates and intervals are stored)."""
    if not math.isfinite(value) or abs(value) > 3.4e38:
        return value
    return float(_F32.unpack(_F32.pack(value))[0])


def _interval_code(secs: float) -> int:
    """Return the 7-bit code of an interval (0: none elapsed, skipped by the estimators)."""
    if not secs > 0.0:
        return 0
    if secs < 1.0:
        return 1
    if not math.isfinite(secs):
        return _MAX_CODE
    code = round(_STEPS_PER_OCTAVE * math.log2(secs / 3600.0)) + _HOUR_CODE
    return max(1, min(_MAX_CODE, code))


def _interval_secs(code: int) -> float:
    return 0.0 if code == 0 else 3600.0 * 2.0 ** ((code - _HOUR_CODE) / _STEPS_PER_OCTAVE)


def _old_interval_secs(code: int) -> float:
    """The interval of a version 1 observation's 15-bit float."""
    biased, mantissa = code >> _MANTISSA_BITS, code & ((1 << _MANTISSA_BITS) - 1)
    if biased == 0:
        return 0.0
    return math.ldexp(1.0 + mantissa / (1 << _MANTISSA_BITS), biased - _EXPONENT_BIAS)


def quantize_interval(secs: float) -> float:
    """Return ``secs`` on the history's grid (what the store keeps of an observation)."""
    return _interval_secs(_interval_code(secs))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _text(value: str) -> bytes:
    data = value.encode("utf-8", "surrogateescape")
    return _varint(len(data)) + data


def _http_date(value: str) -> int | None:
    """Return the timestamp of an IMF-fixdate that formats back identically, else None."""
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        return None
    stamp = int(parsed.timestamp())
    if not 0 <= stamp <= 0xFFFFFFFF or email.utils.formatdate(stamp, usegmt=True) != value:
        return None
    return stamp


def pack(
    *,
    fingerprint: int | None,
    first_fetch: float | None,
    last_fetch: float | None,
    last_compared: float | None,
    visits: int,
    changes: int,
    interval_secs: float,
    next_due: float,
    rate: float,
    etag: str | None,
    last_modified: str | None,
    status: int | None,
    misses: int,
    failures: int,
    retired: bool,
    history: Iterable[tuple[float, bool]],
) -> bytes:
    """Pack the fields of a page state (see :class:`~scrapy_simhash.recrawl.state.PageState`)."""
    flags = 0
    body = bytearray()
    if fingerprint is not None:
        wide = fingerprint >= 1 << 64
        flags |= _FP128 if wide else _FP64
        body += fingerprint.to_bytes(16 if wide else 8, "little")
    if last_fetch is not None:
        flags |= _LAST
        body += _F64.pack(last_fetch)
        if first_fetch is not None:
            age = last_fetch - first_fetch
            if age >= 0 and age == int(age) and last_fetch - int(age) == first_fetch:
                flags |= _FIRST
                body += _varint(int(age))
            else:
                flags |= _FIRST_RAW
                body += _F64.pack(first_fetch)
        if last_compared is None:
            flags |= _UNCOMPARED
        elif last_compared != last_fetch:
            flags |= _COMPARED_APART
            body += _F64.pack(last_compared)
    body += _varint(visits) + _varint(changes)
    body += _F32.pack(interval_secs) + _F32.pack(rate)
    if last_fetch is None or next_due != last_fetch + interval_secs:
        flags |= _DUE_APART
        body += _F64.pack(next_due)
    if status is not None:
        flags |= _STATUS
        body += _U16.pack(status)
    if misses:
        flags |= _MISSES
        body += _varint(misses)
    if failures:
        flags |= _FAILURES
        body += _varint(failures)
    if retired:
        flags |= _RETIRED
    if etag is not None:
        flags |= _ETAG
        body += _text(etag)
    if last_modified is not None:
        stamp = _http_date(last_modified)
        if stamp is None:
            flags |= _MODIFIED_RAW
            body += _text(last_modified)
        else:
            flags |= _MODIFIED
            body += _U32.pack(stamp)
    codes = bytes(_interval_code(t) | (_CHANGED8 if changed else 0) for t, changed in history)
    if codes:
        flags |= _HISTORY
        body += _varint(len(codes)) + codes
    return _HEAD.pack(VERSION, flags) + bytes(body)


#: What a version 2 observation's byte stands for, ``(interval, changed)``, by byte: a
#: history is read by table, 32 observations in one pass.
_OBSERVATIONS = tuple((_interval_secs(c & _MAX_CODE), bool(c & _CHANGED8)) for c in range(256))
#: The names of :func:`fields`, in order (a page state's fields after its URL).
FIELDS = (
    "fingerprint",
    "first_fetch",
    "last_fetch",
    "last_compared",
    "visits",
    "changes",
    "interval_secs",
    "next_due",
    "rate",
    "etag",
    "last_modified",
    "status",
    "history",
    "misses",
    "failures",
    "retired",
)
_F64_AT, _F32_AT, _U16_AT, _U32_AT = (s.unpack_from for s in (_F64, _F32, _U16, _U32))
_U64_AT = struct.Struct("<Q").unpack_from


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _chunk(data: bytes, pos: int, size: int) -> bytes:
    chunk = data[pos : pos + size]
    if len(chunk) != size:
        raise ValueError("truncated recrawl state")
    return chunk


def fields(data: bytes) -> tuple[Any, ...]:
    """The fields :func:`pack` was given, in the order of :data:`FIELDS`.

    Read in one pass with local offsets (a claim decodes a hundred states at a time)."""
    if not data or data[0] not in (1, VERSION):
        raise ValueError(f"unknown recrawl state version {data[:1]!r}")
    try:
        return _fields(data)
    except (IndexError, struct.error):  # a field past the end
        raise ValueError("truncated recrawl state") from None


def _fields(data: bytes) -> tuple[Any, ...]:
    flags = data[1] | data[2] << 8
    pos = 3
    fingerprint = last_fetch = first_fetch = last_compared = None
    if flags & _FP128:
        fingerprint = int.from_bytes(_chunk(data, pos, 16), "little")
        pos += 16
    elif flags & _FP64:
        (fingerprint,) = _U64_AT(data, pos)
        pos += 8
    if flags & _LAST:
        (last_fetch,) = _F64_AT(data, pos)
        pos += 8
        last_compared = last_fetch
        if flags & _FIRST:
            age, pos = _varint_at(data, pos)
            first_fetch = last_fetch - age
        elif flags & _FIRST_RAW:
            (first_fetch,) = _F64_AT(data, pos)
            pos += 8
        if flags & _UNCOMPARED:
            last_compared = None
        elif flags & _COMPARED_APART:
            (last_compared,) = _F64_AT(data, pos)
            pos += 8
    visits = data[pos]  # a varint, most often of one byte
    if visits < 0x80:
        pos += 1
    else:
        visits, pos = _varint_at(data, pos)
    changes = data[pos]
    if changes < 0x80:
        pos += 1
    else:
        changes, pos = _varint_at(data, pos)
    (interval,) = _F32_AT(data, pos)
    (rate,) = _F32_AT(data, pos + 4)
    pos += 8
    if flags & _DUE_APART:
        (next_due,) = _F64_AT(data, pos)
        pos += 8
    else:
        next_due = (last_fetch or 0.0) + interval
    status: int | None = None
    misses = failures = 0
    etag = modified = None
    if flags & _STATUS:
        (status,) = _U16_AT(data, pos)
        pos += 2
    if flags & _MISSES:
        misses, pos = _varint_at(data, pos)
    if flags & _FAILURES:
        failures, pos = _varint_at(data, pos)
    if flags & _ETAG:
        size, pos = _varint_at(data, pos)
        etag = _chunk(data, pos, size).decode("utf-8", "surrogateescape")
        pos += size
    if flags & _MODIFIED:
        (stamp,) = _U32_AT(data, pos)
        pos += 4
        modified = email.utils.formatdate(stamp, usegmt=True)
    elif flags & _MODIFIED_RAW:
        size, pos = _varint_at(data, pos)
        modified = _chunk(data, pos, size).decode("utf-8", "surrogateescape")
        pos += size
    history: tuple[tuple[float, bool], ...] = ()
    if flags & _HISTORY:
        count = data[pos]
        if count < 0x80:
            pos += 1
        else:
            count, pos = _varint_at(data, pos)
        if data[0] == 1:
            words = struct.unpack_from(f"<{count}H", _chunk(data, pos, 2 * count))
            history = tuple((_old_interval_secs(w & ~_CHANGED), bool(w & _CHANGED)) for w in words)
        else:
            history = tuple(map(_OBSERVATIONS.__getitem__, _chunk(data, pos, count)))
    return (
        fingerprint,
        first_fetch,
        last_fetch,
        last_compared,
        visits,
        changes,
        interval,
        next_due,
        rate,
        etag,
        modified,
        status,
        history,
        misses,
        failures,
        bool(flags & _RETIRED),
    )


def unpack(data: bytes) -> dict[str, object]:
    """Return the fields :func:`pack` was given, by name."""
    return dict(zip(FIELDS, fields(data), strict=True))
