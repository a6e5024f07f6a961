"""The asyncio Redis index client."""

from __future__ import annotations

from typing import Any

from scrapy_simhash._redis import async_client, mask_url
from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.exceptions import IndexBackendError
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexConfig,
    IndexStats,
    Match,
    Observation,
    check_fingerprint,
    check_signature,
    ordered,
)
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.inflight import Hold
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.batcher import ScriptBatcher
from scrapy_simhash.index.redis.codec import _DATA_KINDS, _Codec, key_id
from scrapy_simhash.index.redis.connection import (
    _SCAN_BATCH,
    _no_record,
    _redis_errors,
    client_options,
    logger,
)
from scrapy_simhash.index.redis.drop_record import FORGET_SCRIPT


class AsyncRedisIndex(AsyncNearDuplicateIndex):
    """redis.asyncio client; build it inside the running loop with :meth:`create`.

    Script calls made while others are in flight are written together as one pipeline
    (see :mod:`.batcher`).
    """

    def __init__(self, url: str, config: IndexConfig, **options: Any) -> None:
        self.url = url
        self.config = config
        self._codec = _Codec(url, config)
        self.errors = _redis_errors()
        opts = client_options(options)
        client: Any = async_client(url, **opts)
        self._client = client
        self._batcher = ScriptBatcher(client, self._codec.meta, int(opts["max_connections"]))
        self.layout = self._codec.layout

    @classmethod
    async def create(cls, url: str, config: IndexConfig, **options: Any) -> AsyncRedisIndex:
        index = cls(url, config, **options)
        codec = index._codec
        try:
            if config.reset:
                await index._delete(b"")
            index.created = await index._restore_record()
        except index.errors as exc:
            await index.close()
            raise codec.error("open", exc) from exc
        except BaseException:
            await index.close()
            raise
        index.layout = codec.layout
        return index

    async def _run(self, action: str, *args: Any, restored: bool = False, **named: Any) -> Any:
        try:
            return await self._batcher.call(self._codec.args(action, *args, **named))
        except self.errors as exc:
            if not _no_record(exc) or restored:
                raise
            await self._restore_record()
            return await self._run(action, *args, restored=True, **named)

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        return self._codec.error(action, exc)

    async def _restore_record(self) -> bool:
        """Async twin of :meth:`RedisIndex._restore_record`."""
        meta = self._codec.meta
        written = bool(await self._client.hsetnx(meta, "config", self._codec.record()))
        self._codec.adopt(await self._client.hget(meta, "config"))
        await self._client.hset(meta, "cid", self._codec.record_id)
        self.confirm_key = self._codec.key or 0
        return written

    @property
    def creation(self) -> str | None:
        """The digest of the record in place (written anew, it differs: see the codec)."""
        return self._codec.record_id.decode() or None

    async def observe(
        self, key: str, fingerprint: int, signature: int = NO_SIGNATURE
    ) -> Observation:
        return await self._check("observe", key, fingerprint, signature)

    async def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return await self._check("claim", key, fingerprint, signature)

    async def _check(self, mode: str, key: str, fingerprint: int, signature: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        check_signature(signature)
        reply = await self._run(mode, fingerprint, key, signature=signature)
        return self._codec.observation(reply)

    async def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        return ordered(self._codec.matches(await self._run("query", fingerprint)))

    async def rename(self, old: str, new: str) -> bool:
        check_key(new)
        return bool(await self._run("rename", 0, old, *self._codec.rename_args(new)))

    async def record_drop(
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> None:
        check_key(url)
        args = self._codec.drop_args(url, kept, distance, apart)
        if args is None:
            return
        async with self._batcher.slots:
            await self._client.execute_command("EVAL", *args)

    async def drop_of(self, url: str) -> DropRecord | None:
        value = await self._client.hget(self._codec.drop_keys[0], key_id(url))
        return self._codec.drop(url, value)

    async def forget_drop(self, url: str) -> None:
        records = self._codec.drop_keys[0]
        value = await self._client.hget(records, key_id(url))
        if self._codec.drop(url, value) is not None:  # not a colliding id's record
            await self._client.execute_command(
                "EVAL", FORGET_SCRIPT, 1, records, key_id(url), value
            )

    async def drop_count(self) -> int:
        return int(await self._client.hlen(self._codec.drop_keys[0]))

    async def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        check_key(key)
        args = self._codec.hold_args(key, owner, lease_secs, create=create)
        async with self._batcher.slots:
            reply = await self._client.execute_command("EVAL", *args)
        return self._codec.hold_reply(reply)

    async def settle(self, key: str, owner: str) -> bool:
        args = self._codec.settle_args(key, owner)
        async with self._batcher.slots:
            return bool(await self._client.execute_command("EVAL", *args))

    async def in_flight(self, key: str) -> tuple[str, float] | None:
        value = await self._client.hget(
            self._codec.in_flight_key, key.encode("utf-8", "surrogatepass")
        )
        return self._codec.mark(value)

    async def get(self, key: str) -> int | None:
        entry = await self.entry(key)
        return None if entry is None else entry[0]

    async def entry(self, key: str) -> tuple[int, int] | None:
        ident = key_id(key)
        bucket = await self._client.get(self._codec.entry_key(ident))
        return self._codec.entry(bucket, ident)

    async def remove(self, key: str) -> bool:
        return bool(await self._run("remove", 0, key))

    async def _names(self, kind: bytes) -> list[bytes]:
        return [
            name
            async for name in self._client.scan_iter(
                match=self._codec.pattern(kind), count=_SCAN_BATCH
            )
        ]

    async def _delete(self, kind: bytes) -> None:
        names = await self._names(kind)
        for start in range(0, len(names), _SCAN_BATCH):
            await self._client.delete(*names[start : start + _SCAN_BATCH])

    async def clear(self) -> None:
        for kind in _DATA_KINDS:
            await self._delete(kind)
        await self._client.hset(self._codec.meta, "n", 0)

    async def count(self) -> int:
        return int(await self._client.hget(self._codec.meta, "n") or 0)

    async def purge_expired(self) -> int:
        if self.config.ttl_secs is None:
            return 0
        removed = 0
        for name in await self._names(b"e"):
            for ident in self._codec.expired_ids(await self._client.get(name)):
                args = self._codec.args("expire", ident=ident)
                reply = (await self._batcher.pipeline([args]))[0]
                if isinstance(reply, Exception):
                    raise reply
                removed += int(reply)
        return removed

    async def stats(self) -> IndexStats:
        groups = [(name, int(await self._client.strlen(name))) for name in await self._names(b"b")]
        return self._codec.stats(await self.count(), groups)

    async def close(self) -> None:
        await self._batcher.close()
        try:
            await self._client.aclose()
        except self.errors as exc:
            logger.warning("closing the Redis index %s failed: %s", mask_url(self.url), exc)
