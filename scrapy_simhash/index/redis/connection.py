"""How the Redis index talks to redis-py: client options and the errors it recognises."""

from __future__ import annotations

import logging
from typing import Any

#: The logger of every module of this package, under the name its lines have always had.
logger = logging.getLogger("scrapy_simhash.index.redis")

_SCAN_BATCH = 1000
#: Connections per client; async callers beyond this wait for a free one instead of
#: failing with redis-py's "Too many connections".
DEFAULT_MAX_CONNECTIONS = 64


def client_options(options: dict[str, Any]) -> dict[str, Any]:
    """redis-py keyword arguments: a bounded retry so an outage surfaces in seconds."""
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    opts = dict(options)
    retries = int(opts.pop("retries", 3))
    opts.setdefault("max_connections", DEFAULT_MAX_CONNECTIONS)
    opts.setdefault("socket_timeout", 5.0)
    opts.setdefault("socket_connect_timeout", 5.0)
    opts.setdefault("retry", Retry(ExponentialBackoff(cap=0.5, base=0.05), retries))
    opts["decode_responses"] = False
    return opts


def _no_record(exc: BaseException) -> bool:
    """Whether the script refused because the configuration record is missing."""
    from redis.exceptions import ResponseError

    return isinstance(exc, ResponseError) and str(exc).startswith("NORECORD")


def _redis_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisClusterException, RedisError

    return (RedisError, RedisClusterException, OSError)

