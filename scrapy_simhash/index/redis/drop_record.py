"""The drop record's calls for a blocking Redis index, plain or sharded.

Both keep the record under one codec's keys (the namespace's own tag), so the calls are
the same; each index says which codec that is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy_simhash.index.base import IndexConfig
from scrapy_simhash.index.drops import DropRecord, unpack_record
from scrapy_simhash.index.inflight import Hold
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.codec import _Codec, key_id
from scrapy_simhash.index.redis.connection import _SCAN_BATCH

#: Delete a drop record if it is still the one read (a newer record of the URL stays). Its
#: id stays in the order list: the trim treats a missing record as expired and skips it.
FORGET_SCRIPT = (
    "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
    "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0"
)


class RedisDropRecord:
    """Mixin: ``record_drop``, ``drop_of``, ``forget_drop``, ``drops`` and ``drop_count``
    over ``_drop_codec()``, and the filings in flight (``hold``, ``settle``,
    ``in_flight``) under the same tag."""

    _client: Any
    errors: tuple[type[BaseException], ...]
    config: IndexConfig

    def _drop_codec(self) -> _Codec:
        raise NotImplementedError

    def record_drop(self, url: str, kept: str, distance: int, apart: int | None = None) -> None:
        check_key(url)
        codec = self._drop_codec()
        args = codec.drop_args(url, kept, distance, apart)
        if args is None:
            return
        self._client.execute_command("EVAL", *args)

    def drop_of(self, url: str) -> DropRecord | None:
        codec = self._drop_codec()
        value = self._client.hget(codec.drop_keys[0], key_id(url))
        return codec.drop(url, value)

    def forget_drop(self, url: str) -> None:
        codec = self._drop_codec()
        records = codec.drop_keys[0]
        value = self._client.hget(records, key_id(url))
        if codec.drop(url, value) is not None:  # not another URL's under a colliding id
            self._client.execute_command("EVAL", FORGET_SCRIPT, 1, records, key_id(url), value)

    def drops(self) -> Iterator[DropRecord]:
        codec = self._drop_codec()
        now = self.config.clock()
        for _, value in self._client.hscan_iter(codec.drop_keys[0], count=_SCAN_BATCH):
            record = unpack_record(value)
            if not self.config.drop_expired(record.at, now):
                yield record

    def drop_count(self) -> int:
        codec = self._drop_codec()
        return int(self._client.hlen(codec.drop_keys[0]))

    def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        check_key(key)
        codec = self._drop_codec()
        args = codec.hold_args(key, owner, lease_secs, create=create)
        return codec.hold_reply(self._client.execute_command("EVAL", *args))

    def settle(self, key: str, owner: str) -> bool:
        codec = self._drop_codec()
        return bool(self._client.execute_command("EVAL", *codec.settle_args(key, owner)))

    def in_flight(self, key: str) -> tuple[str, float] | None:
        codec = self._drop_codec()
        return codec.mark(
            self._client.hget(codec.in_flight_key, key.encode("utf-8", "surrogatepass"))
        )
