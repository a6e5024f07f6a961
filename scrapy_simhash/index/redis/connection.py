"""How the Redis index talks to redis-py: client options and the errors it recognises."""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any

from scrapy_simhash._redis import redis_errors
from scrapy_simhash.exceptions import ConfigurationError

#: The logger of every module of this package, under the name its lines have always had.
logger = logging.getLogger("scrapy_simhash.index.redis")

_SCAN_BATCH = 1000
#: Connections per client; async callers beyond this wait for a free one instead of
#: failing with redis-py's "Too many connections".
DEFAULT_MAX_CONNECTIONS = 64


def client_options(options: dict[str, Any]) -> dict[str, Any]:
    """redis-py keyword arguments: a bounded retry so an outage surfaces in seconds.

    The options are checked first (:func:`check_options`): redis-py reads most of them only
    when it connects, and a name it does not know or a word where it wants a number would
    then fail every call as a TypeError, far from the setting that holds it.
    """
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    check_options(options)
    opts = dict(options)
    retries = int(opts.pop("retries", 3))
    opts.setdefault("max_connections", DEFAULT_MAX_CONNECTIONS)
    opts.setdefault("socket_timeout", 5.0)
    opts.setdefault("socket_connect_timeout", 5.0)
    opts.setdefault("retry", Retry(ExponentialBackoff(cap=0.5, base=0.05), retries))
    opts["decode_responses"] = False
    return opts


#: Options whose values redis-py takes as numbers: (smallest value, whole numbers only).
_NUMBERS = {
    "retries": (0, True),
    "max_connections": (1, True),
    "socket_timeout": (0, False),
    "socket_connect_timeout": (0, False),
    "health_check_interval": (0, False),
}


def check_options(options: dict[str, Any]) -> None:
    """Refuse a Redis client option redis-py does not take, or a number option that holds
    something else (``{"retries": "many"}``), with a ConfigurationError naming the option.
    The names redis-py takes are read from its own clients, connections and pools, so a
    newer redis-py's options pass."""
    unknown = sorted(name for name in options if name not in _accepted_options())
    if unknown:
        raise ConfigurationError(
            f"unknown Redis client option(s) {', '.join(map(repr, unknown))}: neither "
            "redis-py nor scrapy-simhash takes an option of that name; fix `options`"
        )
    for name, (least, whole) in _NUMBERS.items():
        if name not in options or (options[name] is None and name != "retries"):
            continue  # absent, or redis-py's own "no limit"
        value = options[name]
        number = isinstance(value, int) if whole else isinstance(value, int | float)
        if isinstance(value, bool) or not number or value < least:
            what = "a whole number" if whole else "a number of seconds"
            raise ConfigurationError(
                f"the Redis client option {name!r} must be {what} of at least {least}, got "
                f"{value!r}; fix `options`"
            )


@functools.cache
def _accepted_options() -> frozenset[str]:
    import redis
    import redis.asyncio
    import redis.asyncio.connection
    import redis.connection

    sources: list[Any] = [
        redis.Redis,
        redis.RedisCluster,
        redis.asyncio.Redis,
        redis.asyncio.RedisCluster,
        redis.connection.ConnectionPool,
        redis.asyncio.connection.ConnectionPool,
    ]
    for module in (redis.connection, redis.asyncio.connection):
        sources += [
            getattr(module, name)
            for name in (
                "AbstractConnection",
                "Connection",
                "SSLConnection",
                "UnixDomainSocketConnection",
            )
            if hasattr(module, name)
        ]
    names = {"retries"}
    for source in sources:
        try:
            parameters = inspect.signature(source.__init__).parameters.values()
        except (TypeError, ValueError):  # pragma: no cover - a C or odd signature
            continue
        names.update(
            p.name
            for p in parameters
            if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD
        )
    names.discard("self")
    return frozenset(names)


def _no_record(exc: BaseException) -> bool:
    """Whether the script refused because the configuration record is missing."""
    from redis.exceptions import ResponseError

    return isinstance(exc, ResponseError) and str(exc).startswith("NORECORD")


#: The errors every Redis store catches, defined once in :mod:`scrapy_simhash._redis`.
_redis_errors = redis_errors
