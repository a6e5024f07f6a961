"""The asyncio Redis index client."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from scrapy_simhash._redis import async_client, mask_url
from scrapy_simhash.index.base import (
    AsyncNearDuplicateIndex,
    IndexConfig,
    IndexStats,
    Match,
    Observation,
    check_fingerprint,
    ordered,
)
from scrapy_simhash.index.drops import DropRecord
from scrapy_simhash.index.keys import check_key
from scrapy_simhash.index.redis.codec import _DATA_KINDS, SCRIPT, _Codec, key_id
from scrapy_simhash.index.redis.connection import (
    _SCAN_BATCH,
    _no_record,
    _redis_errors,
    client_options,
    logger,
)

#: Pipelines of script calls one async index keeps in flight, and calls per pipeline.
MAX_PIPELINES = 4
MAX_BATCH = 256


class AsyncRedisIndex(AsyncNearDuplicateIndex):
    """redis.asyncio client; build it inside the running loop with :meth:`create`.

    Script calls made while others are in flight are written together as one pipeline
    (still one ``EVALSHA`` per operation, each atomic on its own): redis-py's per-command
    overhead (connection checkout, packing, one socket write and read-wakeup per command)
    costs about three times the script itself, and a pipeline shares it across the batch.
    """

    def __init__(self, url: str, config: IndexConfig, **options: Any) -> None:
        self.url = url
        self.config = config
        self._codec = _Codec(url, config)
        self._errors = _redis_errors()
        opts = client_options(options)
        client: Any = async_client(url, **opts)
        self._client = client
        self._sha = hashlib.sha1(SCRIPT.encode()).hexdigest()
        connections = int(opts["max_connections"])
        self._slots = asyncio.Semaphore(connections)
        self._pending: list[tuple[list[bytes], asyncio.Future[Any]]] = []
        self._senders = 0
        self._max_senders = max(1, min(MAX_PIPELINES, connections))
        self._tasks: set[asyncio.Task[None]] = set()
        self.layout = self._codec.layout

    @classmethod
    async def create(cls, url: str, config: IndexConfig, **options: Any) -> AsyncRedisIndex:
        index = cls(url, config, **options)
        codec = index._codec
        try:
            if config.reset:
                await index._delete(b"")
            await index._restore_record()
        except index._errors as exc:
            await index.close()
            raise codec.error("open", exc) from exc
        except BaseException:
            await index.close()
            raise
        index.layout = codec.layout
        return index

    async def _run(self, action: str, *args: Any, restored: bool = False) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((self._codec.args(action, *args), future))
        if self._senders < self._max_senders:
            self._senders += 1
            task = asyncio.create_task(self._send())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            return await future
        except self._errors as exc:
            if _no_record(exc) and not restored:
                try:
                    await self._restore_record()
                except self._errors as again:
                    raise self._codec.error(action, again) from again
                return await self._run(action, *args, restored=True)
            raise self._codec.error(action, exc) from exc

    async def _restore_record(self) -> None:
        """Async twin of :meth:`RedisIndex._restore_record`."""
        meta = self._codec.meta
        await self._client.hsetnx(meta, "config", self._codec.record())
        self._codec.adopt(await self._client.hget(meta, "config"))
        await self._client.hset(meta, "cid", self._codec.record_id)

    async def _send(self) -> None:
        """Drain the queue in pipelines of at most :data:`MAX_BATCH` script calls."""
        try:
            await asyncio.sleep(0)  # callers scheduled in this loop turn join the batch
            while self._pending:
                batch = self._pending[:MAX_BATCH]
                del self._pending[:MAX_BATCH]
                try:
                    async with self._slots:
                        replies = await self._pipeline([args for args, _ in batch])
                except BaseException as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for (_, future), reply in zip(batch, replies, strict=True):
                    if future.done():  # the caller was cancelled
                        continue
                    if isinstance(reply, Exception):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        finally:
            self._senders -= 1

    async def _pipeline(self, calls: list[list[bytes]]) -> list[Any]:
        from redis.exceptions import NoScriptError

        replies = await self._evalsha(calls)
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if missing:  # a restarted or flushed server: the script never ran, so rerun it
            await self._client.script_load(SCRIPT)
            again = await self._evalsha([calls[i] for i in missing])
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        return replies

    async def _evalsha(self, calls: list[list[bytes]]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        meta = self._codec.meta
        for args in calls:
            # execute_command: redis-py's cluster pipeline blocks the evalsha() method, but
            # every key of a call shares one hash tag, so the command routes like any other.
            pipe.execute_command("EVALSHA", self._sha, 1, meta, *args)
        return list(await pipe.execute(raise_on_error=False))

    async def observe(self, key: str, fingerprint: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        return self._codec.observation(await self._run("observe", fingerprint, key))

    async def claim(self, key: str, fingerprint: int) -> Observation:
        check_key(key)
        check_fingerprint(fingerprint, self.config.bits)
        return self._codec.observation(await self._run("claim", fingerprint, key))

    async def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        return ordered(self._codec.matches(await self._run("query", fingerprint)))

    async def rename(self, old: str, new: str) -> bool:
        check_key(new)
        return bool(await self._run("rename", 0, old, *self._codec.rename_args(new)))

    async def record_drop(self, url: str, kept: str, distance: int) -> None:
        check_key(url)
        args = self._codec.drop_args(url, kept, distance)
        if args is None:
            return
        try:
            async with self._slots:
                await self._client.execute_command("EVAL", *args)
        except self._errors as exc:
            raise self._codec.error("record drop", exc) from exc

    async def drop_of(self, url: str) -> DropRecord | None:
        try:
            value = await self._client.hget(self._codec.drop_keys[0], key_id(url))
        except self._errors as exc:
            raise self._codec.error("drop lookup", exc) from exc
        return self._codec.drop(url, value)

    async def drop_count(self) -> int:
        try:
            return int(await self._client.hlen(self._codec.drop_keys[0]))
        except self._errors as exc:
            raise self._codec.error("drop count", exc) from exc

    async def get(self, key: str) -> int | None:
        ident = key_id(key)
        try:
            bucket = await self._client.get(self._codec.entry_key(ident))
        except self._errors as exc:
            raise self._codec.error("get", exc) from exc
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
        try:
            for kind in _DATA_KINDS:
                await self._delete(kind)
            await self._client.hset(self._codec.meta, "n", 0)
        except self._errors as exc:
            raise self._codec.error("clear", exc) from exc

    async def count(self) -> int:
        try:
            return int(await self._client.hget(self._codec.meta, "n") or 0)
        except self._errors as exc:
            raise self._codec.error("count", exc) from exc

    async def purge_expired(self) -> int:
        if self.config.ttl_secs is None:
            return 0
        removed = 0
        try:
            for name in await self._names(b"e"):
                for ident in self._codec.expired_ids(await self._client.get(name)):
                    args = self._codec.args("expire", ident=ident)
                    reply = (await self._pipeline([args]))[0]
                    if isinstance(reply, Exception):
                        raise reply
                    removed += int(reply)
        except self._errors as exc:
            raise self._codec.error("purge", exc) from exc
        return removed

    async def stats(self) -> IndexStats:
        try:
            groups = [
                (name, int(await self._client.strlen(name))) for name in await self._names(b"b")
            ]
        except self._errors as exc:
            raise self._codec.error("stats", exc) from exc
        return self._codec.stats(await self.count(), groups)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            await self._client.aclose()
        except self._errors as exc:
            logger.warning("closing the Redis index %s failed: %s", mask_url(self.url), exc)
