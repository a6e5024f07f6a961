"""The recrawl store's Redis layout of 0.2.0, kept only to time it beside today's.

One hash URL -> packed state and one sorted set URL -> queue time per namespace; a claim
is one script over the sorted set. Reads and writes what 0.2.0 did (the package itself
now refuses such a namespace), so ``state_per_url.py --claims`` times both formats on the
same server in one run. Its client decodes a claim's states as 0.2.0 did (``_unpack``: 0.2.0's
decoder, reading today's one-byte observations, into ``PageState(**fields)``), so the
package's faster decoder does not make 0.2.0's figure faster than 0.2.0 was.
"""

from __future__ import annotations

import email.utils
import struct
from typing import Any

import redis

from scrapy_simhash.recrawl import packing
from scrapy_simhash.recrawl.backend import rate_bucket
from scrapy_simhash.recrawl.state import PageState

_F32, _F64, _U16, _U32 = (struct.Struct(f) for f in ("<f", "<d", "<H", "<I"))

_ADD = """
local added = 0
for i = 1, #ARGV, 4 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[i + 2], ARGV[i])
    if ARGV[i + 3] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[i + 3], 1) end
    added = added + 1
  end
end
return added
"""

_CLAIM = """
local urls = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
local out = {}
for i = 1, #urls, 2 do
  redis.call('ZADD', KEYS[2], ARGV[3], urls[i])
  out[#out + 1] = urls[i]
  out[#out + 1] = redis.call('HGET', KEYS[1], urls[i]) or ''
  out[#out + 1] = urls[i + 1]
end
return out
"""


class OldRedisBackend:
    """0.2.0's blocking backend, reduced to what the timing uses: add and claim."""

    def __init__(self, url: str, namespace: str) -> None:
        self._client: Any = redis.Redis.from_url(url)
        prefix = f"simhash:recrawl:{{{namespace}}}"
        self._keys = [f"{prefix}:state", f"{prefix}:due", f"{prefix}:hist"]
        self._add = self._client.register_script(_ADD)
        self._claim = self._client.register_script(_CLAIM)

    def add(self, states: list[PageState]) -> int:
        args: list[Any] = []
        for s in states:
            bucket = rate_bucket(s.rate)
            args += [s.url, s.to_bytes(), repr(s.next_due), "" if bucket is None else bucket]
        return int(self._add(keys=self._keys, args=args))

    def claim(self, now: float, limit: int, lease_until: float) -> list[tuple[PageState, float]]:
        raw = self._claim(keys=self._keys, args=[repr(now), limit, repr(lease_until)])
        return [
            (PageState(url=url.decode(), **_unpack(blob)), float(score))
            for url, blob, score in zip(raw[::3], raw[1::3], raw[2::3], strict=True)
        ]

    def close(self) -> None:
        self._client.close()


class _Reader:
    """0.2.0's reader of a packed state, field by field."""

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


def _unpack(data: bytes) -> dict[str, Any]:
    """0.2.0's decoder (its observations were two bytes, computed each; today's are one)."""
    p = packing
    _, flags = struct.unpack_from("<BH", data)
    r = _Reader(data)
    r.pos = 3
    fields: dict[str, Any] = {}
    fingerprint = None
    if flags & (p._FP64 | p._FP128):
        fingerprint = int.from_bytes(r.raw(16 if flags & p._FP128 else 8), "little")
    fields["fingerprint"] = fingerprint
    last_fetch = first_fetch = last_compared = None
    if flags & p._LAST:
        last_fetch = r.take(_F64)
        last_compared = last_fetch
        if flags & p._FIRST:
            first_fetch = last_fetch - r.varint()
        elif flags & p._FIRST_RAW:
            first_fetch = r.take(_F64)
        if flags & p._UNCOMPARED:
            last_compared = None
        elif flags & p._COMPARED_APART:
            last_compared = r.take(_F64)
    fields.update(first_fetch=first_fetch, last_fetch=last_fetch, last_compared=last_compared)
    fields["visits"] = r.varint()
    fields["changes"] = r.varint()
    interval = r.take(_F32)
    fields["interval_secs"] = interval
    fields["rate"] = r.take(_F32)
    fields["next_due"] = r.take(_F64) if flags & p._DUE_APART else (last_fetch or 0.0) + interval
    fields["status"] = int(r.take(_U16)) if flags & p._STATUS else None
    fields["misses"] = r.varint() if flags & p._MISSES else 0
    fields["failures"] = r.varint() if flags & p._FAILURES else 0
    fields["retired"] = bool(flags & p._RETIRED)
    fields["etag"] = r.text() if flags & p._ETAG else None
    modified = None
    if flags & p._MODIFIED:
        modified = email.utils.formatdate(r.take(_U32), usegmt=True)
    elif flags & p._MODIFIED_RAW:
        modified = r.text()
    fields["last_modified"] = modified
    history: tuple[tuple[float, bool], ...] = ()
    if flags & p._HISTORY:
        count = r.varint()
        history = tuple(
            (p._interval_secs(c & p._MAX_CODE), bool(c & p._CHANGED8)) for c in r.raw(count)
        )
    fields["history"] = history
    return fields
