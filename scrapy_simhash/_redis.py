"""Redis connection helpers shared by every store (index, recrawl, URL rules).

One place decides how a URL becomes a client (plain, TLS, unix socket, cluster), which
exceptions mean the storage failed, and how a URL is shown in messages, so a password can
never leak through one backend's log line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from scrapy_simhash._redact import mask_url, reads_two_ways, scrub
from scrapy_simhash.exceptions import ConfigurationError

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = [
    "REDIS_SCHEMES",
    "async_client",
    "is_cluster_url",
    "mask_url",
    "redis_errors",
    "sync_client",
]

#: URL schemes served by Redis; ``+cluster`` selects the cluster client.
REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")


def redis_errors() -> tuple[type[BaseException], ...]:
    """The exceptions by which a Redis or Redis Cluster client says the storage failed:
    ``RedisError``, ``RedisClusterException`` (a cluster with no reachable node, a server
    not in cluster mode; not a RedisError) and ``OSError``. Every Redis store catches this
    one tuple."""
    from redis.exceptions import RedisClusterException, RedisError

    return (RedisError, RedisClusterException, OSError)


def is_cluster_url(url: str) -> bool:
    """Tell whether ``url`` asks for a Redis Cluster client."""
    return urlsplit(url).scheme.endswith("+cluster")


def _plain_url(url: str) -> str:
    """Strip the ``+cluster`` marker so redis-py's own URL parser accepts the URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.removesuffix("+cluster")
    return urlunsplit((scheme, parts.netloc, parts.path, parts.query, parts.fragment))


def sync_client(url: str, **options: Any) -> redis.Redis | redis.RedisCluster:
    """Build a blocking client for ``url`` (cluster when the scheme ends in ``+cluster``)."""
    import redis as redis_sync

    client: redis.Redis | redis.RedisCluster = _from_url(
        redis_sync.Redis, redis_sync.RedisCluster, url, options
    )
    return client


def async_client(url: str, **options: Any) -> redis.asyncio.Redis | redis.asyncio.RedisCluster:
    """Build an asyncio client; call it inside the running loop that will use it."""
    import redis.asyncio as redis_async

    client: redis.asyncio.Redis | redis.asyncio.RedisCluster = _from_url(
        redis_async.Redis, redis_async.RedisCluster, url, options
    )
    return client


def _from_url(single: Any, cluster: Any, url: str, options: dict[str, Any]) -> Any:
    try:
        check_userinfo(url)
        check_database(url)
        check_query(url)
        if is_cluster_url(url):
            return cluster.from_url(_plain_url(url), **options)
        return single.from_url(url, **options)
    except ValueError as exc:
        raise _bad_url(url, exc) from None


class TwoReadingsError(ValueError):
    """A URL refused by :func:`check_userinfo`; its message quotes no part of the URL."""


def check_userinfo(url: str) -> None:
    """Refuse a URL whose user name or password holds an unencoded ``/``, ``?`` or ``#``.

    urlsplit (and so redis-py) ends the host part at the first of them, so
    ``redis://:ab/cd@127.0.0.1`` names host ``""`` and port ``ab``: the connection goes
    elsewhere, without the password, and urllib's error quotes the password's first half.
    A person reads the userinfo up to the last ``@``. When the two readings differ the URL
    is refused before any library reads it, unless each ``@`` past the host part stands in
    the value of a query argument (``?password=p@ss``, which urlsplit reads as meant) and
    the host part reads.
    """
    if not reads_two_ways(url):
        return
    parts = urlsplit(url)
    start = url.find("://") + 3
    end = start + len(parts.netloc)
    query_at = url.find("?", end)
    hash_at = url.find("#", end)
    query_end = hash_at if hash_at >= 0 else len(url)
    readable = start >= 3 and 0 <= query_at < query_end
    if readable:
        try:
            parts.port  # noqa: B018 - a port that is not a number raises
        except ValueError:
            readable = False
    if readable:
        readable = "@" not in url[end:query_at] and "@" not in url[query_end:]
        for pair in url[query_at + 1 : query_end].split("&"):
            name, eq, _ = pair.partition("=")
            readable = readable and ("@" not in name) and (bool(eq) or "@" not in pair)
    if not readable:
        raise TwoReadingsError(
            "the user name or password holds a '/', '?' or '#' that is not percent-encoded "
            "(or an '@' stands past the host), so the URL reads two ways; percent-encode "
            "them in the user name and password (/ as %2F, ? as %3F, # as %23, @ as %40)"
        )


def check_database(url: str) -> None:
    """Refuse a database in the path that is not a number (``redis://host/x``).

    redis-py reads the path as the database number and, when it is not one, silently uses
    database 0: another crawl's data, or an empty index that keeps nothing it should. A
    ``unix://`` URL's path is the socket; its database is the ``?db=`` argument, which
    redis-py checks itself.
    """
    parts = urlsplit(url)
    if parts.scheme.removesuffix("+cluster") not in ("redis", "rediss"):
        return
    database = unquote(parts.path).strip("/")
    if database and not (database.isascii() and database.isdigit()):
        raise ValueError(
            f"the database {database!r} in the path is not a number (redis://host:port/0)"
        )


#: Query parameters a Redis URL may carry: those redis-py reads from a URL (it parses
#: these) and the text options of its connections (credentials, client name, TLS files).
#: Anything else redis-py would pass on silently or drop (``?foo`` without a value).
URL_PARAMETERS = frozenset(
    {
        "db",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_read_size",
        "socket_keepalive",
        "retry_on_timeout",
        "max_connections",
        "health_check_interval",
        "timeout",
        "protocol",
        "password",
        "username",
        "client_name",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_path",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_password",
        "ssl_ciphers",
        "ssl_check_hostname",
        "ssl_min_version",
    }
)


def check_query(url: str) -> None:
    """Refuse a query parameter the connection does not take (``redis://host/0?foo``,
    a misspelt ``?socket_timeot=5``): redis-py drops one without a value and hands the
    others to the connection, which fails later, far from the setting; the message names
    the parameters a URL may carry."""
    from urllib.parse import parse_qsl

    query = urlsplit(url).query
    if not query:
        return
    pairs = parse_qsl(query, keep_blank_values=True)
    unknown = sorted({name for name, _ in pairs if name not in URL_PARAMETERS})
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ValueError(
            f"unknown query parameter(s) {names}: a Redis URL takes "
            f"{', '.join(sorted(URL_PARAMETERS))}"
        )


def _bad_url(url: str, exc: ValueError) -> ConfigurationError:
    """A URL that cannot be read: redis-py's own ValueError (a port that is not a number),
    a database that is not a number or a broken IPv6 address."""
    # Our own message quotes nothing of the URL: scrubbing it would mask its words.
    detail = str(exc) if isinstance(exc, TwoReadingsError) else scrub(str(exc), url)
    return ConfigurationError(f"invalid Redis URL {mask_url(url)}: {detail.rstrip('.')}; fix `url`")


#: Hash slots of a Redis Cluster.
_SLOTS = 16384
#: The largest number of shards a namespace is spread over (index and recrawl state).
MAX_SHARDS = 1024


def shard_namespace(namespace: str, shard: int, shards: int) -> str:
    """The namespace of shard ``shard``: its hash tag falls in the ``shard``-th of
    ``shards`` equal slot ranges, so shards spread one per master of an evenly sliced
    cluster instead of colliding by chance."""
    from redis.crc import key_slot

    n = 0
    while True:
        name = f"{namespace}:s{shard}of{shards}.{n}"
        if key_slot(f"{{{name}}}".encode()) * shards // _SLOTS == shard:
            return name
        n += 1


# -- what the server may evict ------------------------------------------------------------------


@dataclass(frozen=True)
class NodeMemory:
    """What one Redis server says of its memory: ``maxmemory`` (bytes, 0: no limit), its
    ``maxmemory-policy`` and the keys it evicted since it started (None: not told)."""

    node: str
    maxmemory: int
    policy: str
    evicted: int | None = None

    def evicts(self, *, ttl_keys: bool) -> bool:
        """Whether the server may evict keys of a namespace: with a memory limit, any key
        under an ``allkeys-*`` policy, keys with a TTL under a ``volatile-*`` one
        (``ttl_keys``: the namespace has some)."""
        if self.maxmemory <= 0:
            return False
        return self.policy.startswith("allkeys-") or (
            ttl_keys and self.policy.startswith("volatile-")
        )

    def describe(self) -> str:
        return f"maxmemory-policy {self.policy}, maxmemory {_size(self.maxmemory)} on {self.node}"


class MemoryUnknown(Exception):
    """Neither ``CONFIG GET`` nor ``INFO`` is allowed (a managed Redis that renames or
    forbids them): what the server may evict cannot be read."""


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:g} {unit}" if unit == "bytes" else f"{value:.4g} {unit}"
        value /= 1024
    return f"{count} bytes"  # pragma: no cover


def _nodes(client: Any) -> list[tuple[str, Any]]:
    """(name, plain client) of each server that holds keys: the primaries of a cluster."""
    primaries = getattr(client, "get_primaries", None)
    if primaries is None:
        kwargs = client.connection_pool.connection_kwargs
        where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
        return [(str(where), client)]
    return [(node.name, node.redis_connection) for node in primaries()]


def read_memory(client: Any, *, config: bool = True) -> tuple[list[NodeMemory], str | None]:
    """Each server's memory limit, policy and evicted keys, and why ``CONFIG GET`` could
    not be used (None when it was, or not tried: ``config`` False).

    ``CONFIG GET`` is the server's configuration itself; a managed Redis often renames or
    forbids it but still answers ``INFO``, whose ``memory`` section says the same. Raises
    :class:`MemoryUnknown` when neither answers; connection errors propagate.
    """
    import redis

    refused: str | None = None
    found: list[NodeMemory] = []
    for name, node in _nodes(client):
        limit: tuple[int, str] | None = None
        if config and refused is None:
            try:
                values = node.config_get("maxmemory*")
                limit = int(values["maxmemory"]), str(values["maxmemory-policy"])
            except (redis.ResponseError, KeyError, ValueError) as exc:
                refused = str(exc) or type(exc).__name__
        try:
            memory = node.info("memory")
            stats = node.info("stats")
        except redis.ResponseError as exc:
            if limit is None:
                raise MemoryUnknown(f"CONFIG GET: {refused or 'not tried'}; INFO: {exc}") from None
            found.append(NodeMemory(name, *limit))
            continue
        if limit is None:
            limit = int(memory.get("maxmemory", 0)), str(memory.get("maxmemory_policy", ""))
        evicted = stats.get("evicted_keys")
        found.append(NodeMemory(name, *limit, None if evicted is None else int(evicted)))
    return found, refused
