"""``scrapy simhash upgrade``: carry state an earlier release wrote over to this version's
(pure: no Scrapy import). :mod:`scrapy_simhash.old_state` says the rule every store applies
at open; here the work: the recrawl history carried over in batches of :data:`BATCH` URLs,
each its own transaction or script call (an upgrade cut short goes on where it stopped
when run again), the near-duplicate index emptied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_simhash._redact import mask_url
from scrapy_simhash.old_state import (
    SQLITE_OLD_INDEX,
    SQLITE_RECRAWL,
    SQLITE_RECRAWL_020,
    SQLITE_RECRAWL_JSON,
    columns,
    redis_index_old_state,
    tables_of,
)

logger = logging.getLogger(__name__)

#: URLs carried over per transaction (SQLite) or per script call (Redis).
BATCH = 10_000


@dataclass(frozen=True)
class Upgraded:
    """What an upgrade did: recrawl states carried over, index namespaces emptied."""

    recrawl_states: int
    indexes_emptied: tuple[str, ...]

    def __str__(self) -> str:
        parts = [f"{self.recrawl_states} recrawl states carried over"]
        if self.indexes_emptied:
            parts.append("near-duplicate index emptied (" + ", ".join(self.indexes_emptied) + ")")
        return "; ".join(parts)


Progress = Callable[[int], None]


def upgrade(
    url: str | None,
    namespace: str,
    *,
    batch: int = BATCH,
    index_options: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> Upgraded:
    """Carry the old state at ``url`` over to this version's (see the module's rule).

    SQLite (``url`` None or ``sqlite://``): the whole file, every namespace. Redis: the
    recrawl schedule of ``namespace`` (every shard of it) and the indexes of ``namespace``
    and ``namespace:items``, emptied when old with ``index_options`` (``open_index``'s
    keyword arguments, so the next crawl accepts the new record). ``options``: the Redis
    client options (the index's ``options``). ``progress`` is called with the
    states carried over so far after each batch. Nothing to upgrade is no error.
    """
    if batch < 1:
        raise ValueError("batch must be at least 1")
    report: Progress = progress or (lambda n: None)
    from scrapy_simhash._redis import REDIS_SCHEMES

    if url is not None and url.split(":", 1)[0] in REDIS_SCHEMES:
        return _upgrade_redis(
            url, namespace, batch, dict(index_options or {}), dict(options or {}), report
        )
    from scrapy_simhash.recrawl.sqlite import path_from_url

    return _upgrade_sqlite(path_from_url(url), batch, report)


def _upgrade_sqlite(path: str, batch: int, report: Progress) -> Upgraded:
    from scrapy_simhash._sqlite import BUSY_TIMEOUT_SECS, SharedConnection
    from scrapy_simhash._sqlite_origins import UrlOrigins
    from scrapy_simhash.recrawl import sqlite as rs

    connection = SharedConnection(path, timeout_secs=BUSY_TIMEOUT_SECS)
    moved = 0
    try:
        with connection.write() as db:
            tables = tables_of(db)
            if SQLITE_RECRAWL in tables and "url" in columns(db, SQLITE_RECRAWL):
                db.execute("DROP INDEX IF EXISTS simhash_recrawl_pages_due")
                db.execute(f"ALTER TABLE {SQLITE_RECRAWL} RENAME TO {SQLITE_RECRAWL_020}")
                tables.add(SQLITE_RECRAWL_020)
            if tables & {SQLITE_RECRAWL_020, SQLITE_RECRAWL_JSON}:
                rs.create_schema(db)
        origins = UrlOrigins(connection)

        def rows_020(db: Any, rows: list[Any]) -> None:
            db.executemany(rs.WRITE, [rs.row(origins, *row) for row in rows])

        def json_states(db: Any, rows: list[Any]) -> None:
            for _, name, url, due, text in rows:
                rs.write_json_state(db, origins, name, url, due, text)

        for table, selected, carry in (
            (SQLITE_RECRAWL_020, "id, ns, url, due, bucket, state", rows_020),
            (SQLITE_RECRAWL_JSON, "rowid, namespace, url, due, state", json_states),
        ):
            if table in tables:
                moved = _drain(connection, table, selected, batch, carry, moved, report)
                tables.discard(table)
        emptied: tuple[str, ...] = ()
        if SQLITE_OLD_INDEX in tables:
            with connection.write() as db:
                # Every namespace's record in the file is 0.2.0's: the next open writes anew.
                db.execute(f"DROP TABLE {SQLITE_OLD_INDEX}")
                db.execute("DROP TABLE IF EXISTS simhash_bands")
                if "simhash_drops" in tables and "shared" not in columns(db, "simhash_drops"):
                    db.execute("DROP TABLE simhash_drops")
                if "simhash_namespaces" in tables:
                    db.execute("DELETE FROM simhash_namespaces")
            emptied = ("every namespace of the file",)
    finally:
        connection.close()
    if moved or emptied:
        logger.info("SQLite file %s upgraded: %s", path, Upgraded(moved, emptied))
    return Upgraded(moved, emptied)


def _drain(
    connection: Any,
    table: str,
    columns: str,
    batch: int,
    carry: Callable[[Any, list[Any]], None],
    moved: int,
    report: Progress,
) -> int:
    """Carry ``table``'s rows over, ``batch`` at a time in the order of their key (the
    first of ``columns``), each batch one transaction that deletes what it carried (an
    upgrade cut short goes on where it stopped); drop the table once empty. Returns
    ``moved`` plus the rows carried."""
    key = columns.split(",", 1)[0]
    while True:
        with connection.write() as db:
            rows = db.execute(
                f"SELECT {columns} FROM {table} ORDER BY {key} LIMIT ?", (batch,)
            ).fetchall()
            if not rows:
                db.execute(f"DROP TABLE {table}")
                return moved
            carry(db, rows)
            db.executemany(f"DELETE FROM {table} WHERE {key} = ?", [(row[0],) for row in rows])
        moved += len(rows)
        report(moved)


def _upgrade_redis(
    url: str,
    namespace: str,
    batch: int,
    index_options: dict[str, Any],
    options: dict[str, Any],
    report: Progress,
) -> Upgraded:
    from scrapy_simhash._redis import shard_namespace
    from scrapy_simhash.recrawl import redisstore as rr

    client = _client(url, options)
    moved = 0
    try:
        raw = client.get(rr.shards_key(namespace))
        shards = int(raw) if raw else 1
        names = (
            [namespace]
            if shards == 1
            else [shard_namespace(namespace, i, shards) for i in range(shards)]
        )
        for name in names:
            moved = rr.carry_over(client, name, batch, moved, report)
    finally:
        client.close()
    emptied = tuple(
        name
        for name in (namespace, f"{namespace}:items")
        if _empty_old_redis_index(url, name, index_options, options)
    )
    if moved or emptied:
        logger.info(
            "namespace %r of %s upgraded: %s", namespace, mask_url(url), Upgraded(moved, emptied)
        )
    return Upgraded(moved, emptied)


def _client(url: str, options: Mapping[str, Any]) -> Any:
    """A blocking client with the index's client options (the index's ``options``)."""
    from scrapy_simhash._redis import sync_client
    from scrapy_simhash.index.redis import client_options

    return sync_client(url, **client_options({k: v for k, v in options.items() if k != "shards"}))


def _empty_old_redis_index(
    url: str, namespace: str, index_options: dict[str, Any], options: dict[str, Any]
) -> bool:
    """Empty the index of ``namespace`` when its record is an old layout's; whether it was."""
    import json

    from scrapy_simhash.index import open_index

    client = _client(url, options)
    try:
        stored = client.hget(f"simhash:{{{namespace}}}:m", "config")
    finally:
        client.close()
    try:
        record = json.loads(stored) if stored else None
    except ValueError:
        record = None
    if not isinstance(record, dict) or redis_index_old_state(record) is None:
        return False
    open_index(url, **{**index_options, "namespace": namespace, "reset": True}).close()
    return True
