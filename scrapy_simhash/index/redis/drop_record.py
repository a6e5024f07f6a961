"""The drop record's calls for a blocking Redis index, plain or sharded.

Both keep the record under one codec's keys (the namespace's own tag), so the calls are
the same; each index says which codec that is.
"""

from __future__ import annotations

from typing import Any

from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.codec import _Codec, key_id


class RedisDropRecord:
    """Mixin: ``record_drop``, ``drop_of`` and ``drop_count`` over ``_drop_codec()``."""

    _client: Any
    _errors: tuple[type[BaseException], ...]

    def _drop_codec(self) -> _Codec:
        raise NotImplementedError

    def record_drop(self, url: str, kept: str, distance: int) -> None:
        check_key(url)
        codec = self._drop_codec()
        args = codec.drop_args(url, kept, distance)
        if args is None:
            return
        try:
            self._client.execute_command("EVAL", *args)
        except self._errors as exc:
            raise codec.error("record drop", exc) from exc

    def drop_of(self, url: str) -> DropRecord | None:
        codec = self._drop_codec()
        try:
            value = self._client.hget(codec.drop_keys[0], key_id(url))
        except self._errors as exc:
            raise codec.error("drop lookup", exc) from exc
        return codec.drop(url, value)

    def forget_drop(self, url: str) -> None:
        codec = self._drop_codec()
        if self.drop_of(url) is None:  # none, or another URL's under a colliding id
            return
        records, order = codec.drop_keys
        try:
            self._client.hdel(records, key_id(url))
            self._client.lrem(order, 1, key_id(url))
        except self._errors as exc:
            raise codec.error("forget drop", exc) from exc

    def drop_count(self) -> int:
        codec = self._drop_codec()
        try:
            return int(self._client.hlen(codec.drop_keys[0]))
        except self._errors as exc:
            raise codec.error("drop count", exc) from exc
