"""The recrawl store's Redis layout of 0.2.0, kept only to time it beside today's.

One hash URL -> packed state and one sorted set URL -> queue time per namespace; a claim
is one script over the sorted set. Reads and writes what 0.2.0 did (the package itself
now refuses such a namespace), so ``state_per_url.py --claims`` times both formats on the
same server in one run.
"""

from __future__ import annotations

from typing import Any

import redis

from scrapy_simhash.recrawl.backend import rate_bucket
from scrapy_simhash.recrawl.state import PageState

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
            (PageState.from_bytes(url.decode(), blob), float(score))
            for url, blob, score in zip(raw[::3], raw[1::3], raw[2::3], strict=True)
        ]

    def close(self) -> None:
        self._client.close()
