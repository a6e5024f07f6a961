"""Script calls of one async Redis index, written to the server in pipelines.

Script calls made while others are in flight are written together as one pipeline (still
one ``EVALSHA`` per operation, each atomic on its own): redis-py's per-command overhead
(connection checkout, packing, one socket write and read-wakeup per command) costs about
three times the script itself, and a pipeline shares it across the batch.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from scrapy_simhash.index.redis.codec import SCRIPT

#: Pipelines of script calls one async index keeps in flight, and calls per pipeline.
MAX_PIPELINES = 4
MAX_BATCH = 256


class ScriptBatcher:
    """Queues ``simhash_index.lua`` calls on the key ``meta`` of a redis.asyncio client.

    ``slots`` bounds the connections in use (at most ``connections``): callers beyond it
    wait for a free one instead of failing with redis-py's "Too many connections".
    """

    def __init__(self, client: Any, meta: bytes, connections: int) -> None:
        self._client = client
        self._meta = meta
        self._sha = hashlib.sha1(SCRIPT.encode()).hexdigest()
        self.slots = asyncio.Semaphore(connections)
        self._pending: list[tuple[list[bytes], asyncio.Future[Any]]] = []
        self._senders = 0
        self._max_senders = max(1, min(MAX_PIPELINES, connections))
        self._tasks: set[asyncio.Task[None]] = set()

    async def call(self, args: list[bytes]) -> Any:
        """The reply of one script call; its error is raised."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((args, future))
        if self._senders < self._max_senders:
            self._senders += 1
            task = asyncio.create_task(self._send())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await future

    async def _send(self) -> None:
        """Drain the queue in pipelines of at most :data:`MAX_BATCH` script calls."""
        try:
            await asyncio.sleep(0)  # callers scheduled in this loop turn join the batch
            while self._pending:
                batch = self._pending[:MAX_BATCH]
                del self._pending[:MAX_BATCH]
                try:
                    async with self.slots:
                        replies = await self.pipeline([args for args, _ in batch])
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

    async def pipeline(self, calls: list[list[bytes]]) -> list[Any]:
        """The replies of ``calls`` sent as one pipeline (errors as values)."""
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
        meta = self._meta
        for args in calls:
            # execute_command: redis-py's cluster pipeline blocks the evalsha() method, but
            # every key of a call shares one hash tag, so the command routes like any other.
            pipe.execute_command("EVALSHA", self._sha, 1, meta, *args)
        return list(await pipe.execute(raise_on_error=False))

    async def close(self) -> None:
        """Wait for the pipelines in flight."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
