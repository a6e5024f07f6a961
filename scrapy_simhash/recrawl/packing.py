"""The compact binary form of a page's recrawl state (72 bytes with 32 observations).

A crawl of 100M URLs keeps one state per URL, so every byte here is a gigabyte there. The
state is packed with :mod:`struct`: flags say which optional fields follow, counters are
varints, the change rate and interval are float32, and each history observation is one
byte: a changed bit and the interval since the previous comparison on a quarter-octave
log scale (from 1 s to 90 years, within 9% of the true interval; the rate estimators'
own noise at 32 observations is several times that, and freshness in the simulation moved
by less than 0.002). ``advance`` rounds rates, intervals and observations to these grids
before it uses them, so a state reads back exactly as it was written and every backend
schedules identically. States of version 1 (16-bit observations, 0.2.0) are still read.
"""

from __future__ import annotations

import email.utils
import math
import struct
from collections.abc import Iterable

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


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: struct.Struct) -> float:
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return float(value)

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + size]
        if len(chunk) != size:
            raise ValueError("truncated recrawl state")
        self.pos += size
        return chunk

    def varint(self) -> int:
        shift = value = 0
        while True:
            byte = self.raw(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def text(self) -> str:
        return self.raw(self.varint()).decode("utf-8", "surrogateescape")


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


def unpack(data: bytes) -> dict[str, object]:
    """Return the fields :func:`pack` was given, by name."""
    if not data or data[0] not in (1, VERSION):
        raise ValueError(f"unknown recrawl state version {data[:1]!r}")
    _, flags = _HEAD.unpack_from(data)
    r = _Reader(data)
    r.pos = _HEAD.size
    fields: dict[str, object] = {}
    fingerprint = None
    if flags & (_FP64 | _FP128):
        fingerprint = int.from_bytes(r.raw(16 if flags & _FP128 else 8), "little")
    fields["fingerprint"] = fingerprint
    last_fetch = first_fetch = last_compared = None
    if flags & _LAST:
        last_fetch = r.take(_F64)
        last_compared = last_fetch
        if flags & _FIRST:
            first_fetch = last_fetch - r.varint()
        elif flags & _FIRST_RAW:
            first_fetch = r.take(_F64)
        if flags & _UNCOMPARED:
            last_compared = None
        elif flags & _COMPARED_APART:
            last_compared = r.take(_F64)
    fields.update(first_fetch=first_fetch, last_fetch=last_fetch, last_compared=last_compared)
    fields["visits"] = r.varint()
    fields["changes"] = r.varint()
    interval = r.take(_F32)
    fields["interval_secs"] = interval
    fields["rate"] = r.take(_F32)
    fields["next_due"] = (
        r.take(_F64) if flags & _DUE_APART else (last_fetch or 0.0) + interval
    )
    fields["status"] = int(r.take(_U16)) if flags & _STATUS else None
    fields["misses"] = r.varint() if flags & _MISSES else 0
    fields["failures"] = r.varint() if flags & _FAILURES else 0
    fields["retired"] = bool(flags & _RETIRED)
    fields["etag"] = r.text() if flags & _ETAG else None
    modified = None
    if flags & _MODIFIED:
        modified = email.utils.formatdate(r.take(_U32), usegmt=True)
    elif flags & _MODIFIED_RAW:
        modified = r.text()
    fields["last_modified"] = modified
    history: tuple[tuple[float, bool], ...] = ()
    if flags & _HISTORY:
        count = r.varint()
        if data[0] == 1:
            words = struct.unpack_from(f"<{count}H", r.raw(2 * count))
            history = tuple(
                (_old_interval_secs(w & ~_CHANGED), bool(w & _CHANGED)) for w in words
            )
        else:
            history = tuple(
                (_interval_secs(c & _MAX_CODE), bool(c & _CHANGED8)) for c in r.raw(count)
            )
    fields["history"] = history
    return fields
