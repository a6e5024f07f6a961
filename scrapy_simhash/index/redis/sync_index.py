"""The blocking Redis index client."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from scrapy_simhash._redis import mask_url, sync_client
from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.index.base import (
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
    check_fingerprint,
    check_signature,
    ordered,
)
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.codec import _DATA_KINDS, SCRIPT, _Codec, key_id
from scrapy_simhash.index.redis.connection import (
    _SCAN_BATCH,
    _no_record,
    _redis_errors,
    client_options,
    logger,
)
from scrapy_simhash.index.redis.drop_record import RedisDropRecord


class RedisIndex(RedisDropRecord, NearDuplicateIndex):
    """Blocking client (CLI, scripts, benchmarks)."""

    def __init__(self, url: str, config: IndexConfig, **options: Any) -> None:
        self.url = url
        self.config = config
        self._codec = _Codec(url, config)
        self.errors = _redis_errors()
        try:
            client: Any = sync_client(url, **client_options(options))
            self._client = client
            self._script = self._client.register_script(SCRIPT)
            if config.reset:
                self._delete(b"")
            self.created = self._restore_record()
        except self.errors as exc:
            raise self._codec.error("open", exc) from exc
        self.layout = self._codec.layout

    def _run(self, action: str, *args: Any, **named: Any) -> Any:
        try:
            return self._script(
                keys=[self._codec.meta], args=self._codec.args(action, *args, **named)
            )
        except self.errors as exc:
            if not _no_record(exc):
                raise
            self._restore_record()
            return self._script(
                keys=[self._codec.meta], args=self._codec.args(action, *args, **named)
            )

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        return self._codec.error(action, exc)

    def _restore_record(self) -> bool:
        """Write this index's record (at creation, or back after the server lost it, with
        the namespace's key the pages were signed under), or adopt the one in place and its
        key: IndexMismatchError if that one differs. True when it was written (there was
        none)."""
        meta = self._codec.meta
        written = bool(self._client.hsetnx(meta, "config", self._codec.record()))
        self._codec.adopt(self._client.hget(meta, "config"))
        self._client.hset(meta, "cid", self._codec.record_id)
        self.confirm_key = self._codec.key or 0
        return written

    @property
    def creation(self) -> str | None:
        """The digest of the record in place (written anew, it differs: see the codec)."""
        return self._codec.record_id.decode() or None

    def observe(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._check("observe", key, fingerprint, signature)

    def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._check("claim", key, fingerprint, signature)

    def _check(self, mode: str, key: str, fingerprint: int, signature: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        check_signature(signature)
        return self._codec.observation(self._run(mode, fingerprint, key, signature=signature))

    def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        return ordered(self._codec.matches(self._run("query", fingerprint)))

    def rename(self, old: str, new: str) -> bool:
        check_key(new)
        return bool(self._run("rename", 0, old, *self._codec.rename_args(new)))

    def _drop_codec(self) -> _Codec:
        return self._codec

    def keys(self) -> Iterator[str]:
        now, prefix = self.config.clock(), self._codec.prefix
        for name in list(self._keys(b"e")):
            # One transaction: a crawl writing meanwhile cannot shift texts against entries
            # (both keys carry the namespace's hash tag: one slot on a cluster).
            pipe = self._client.pipeline(transaction=True)
            pipe.get(name)
            pipe.lrange(prefix + b"u" + name[len(prefix) + 1 :], 0, -1)
            bucket, texts = pipe.execute()
            for (_, _, seen, _), text in zip(self._codec.entries(bucket), texts, strict=False):
                if not self.config.expired(seen, now):
                    yield text.decode("utf-8", "surrogatepass")

    def get(self, key: str) -> int | None:
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> tuple[int, int] | None:
        ident = key_id(key)
        bucket = self._client.get(self._codec.entry_key(ident))
        return self._codec.entry(bucket, ident)

    def remove(self, key: str) -> bool:
        return bool(self._run("remove", 0, key))

    def _keys(self, kind: bytes) -> Iterable[bytes]:
        return self._client.scan_iter(match=self._codec.pattern(kind), count=_SCAN_BATCH)  # type: ignore[no-any-return]

    def _delete(self, kind: bytes) -> None:
        batch: list[bytes] = []
        for name in self._keys(kind):
            if name != self._codec.meta or not kind:
                batch.append(name)
            if len(batch) >= _SCAN_BATCH:
                self._client.delete(*batch)
                batch.clear()
        if batch:
            self._client.delete(*batch)

    def clear(self) -> None:
        for kind in _DATA_KINDS:
            self._delete(kind)
        self._client.hset(self._codec.meta, "n", 0)

    def count(self) -> int:
        return int(self._client.hget(self._codec.meta, "n") or 0)

    def purge_expired(self) -> int:
        if self.config.ttl_secs is None:
            return 0
        removed = 0
        for name in list(self._keys(b"e")):
            for ident in self._codec.expired_ids(self._client.get(name)):
                removed += int(
                    self._script(
                        keys=[self._codec.meta],
                        args=self._codec.args("expire", ident=ident),
                    )
                )
        return removed

    def stats(self) -> IndexStats:
        names = list(self._keys(b"b"))
        lengths: list[int] = []
        for start in range(0, len(names), _SCAN_BATCH):
            pipe = self._client.pipeline(transaction=False)
            for name in names[start : start + _SCAN_BATCH]:
                pipe.strlen(name)
            lengths.extend(pipe.execute())
        return self._codec.stats(self.count(), zip(names, lengths, strict=True))

    def close(self) -> None:
        try:
            self._client.close()
        except self.errors as exc:
            logger.warning("closing the Redis index %s failed: %s", mask_url(self.url), exc)
