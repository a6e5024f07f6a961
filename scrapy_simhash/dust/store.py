"""Where learned URL rules live: the namespace's own store, shared by every crawl process.

Per rule the store keeps its support (distinct (copy, kept) pairs, each counted once however
often it is seen again), its checks passed (distinct requests the rule would have skipped,
fetched anyway and found to copy the page it named, each counted once) and its
counterexamples (pairs of fetched URLs the rule maps together whose pages differ). A rule
with one counterexample is dead for good on its host. Support makes a rule a candidate;
only checks passed make it trusted, so a rule learned but never checked is never trusted
by a later crawl either.

Growth is bounded: a rule remembers at most :data:`MAX_PAIRS` pair digests and as many check
digests (8 bytes each, naming host, rule and pair: more is not needed to trust it), and a
namespace holds at most :data:`MAX_RULES` rules (a rule first seen beyond that is not recorded).
"""

from __future__ import annotations

import sqlite3
import struct
import threading
from abc import ABC, abstractmethod
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import xxhash

from scrapy_simhash._redis import mask_url, redis_errors, sync_client
from scrapy_simhash._runners import Runner
from scrapy_simhash._sqlite import BUSY_TIMEOUT_SECS, open_with_schema
from scrapy_simhash.exceptions import IndexBackendError

if TYPE_CHECKING:
    from typing import Self

#: Pair digests kept per rule: support counts up to here, then stays.
MAX_PAIRS = 32
#: Rules per namespace at most (all hosts together).
MAX_RULES = 10_000
#: Longest counterexample kept (characters), for `scrapy simhash rules`.
MAX_EXAMPLE = 500


class RuleState(NamedTuple):
    """What the store knows of one rule of one host."""

    host: str
    rule: str
    support: int
    counterexamples: int
    example: str
    #: Skips of the rule fetched anyway whose page copied the page the rule named.
    checks: int = 0

    def learned(self, min_support: int) -> bool:
        """Enough support and no counterexample: its skips are checked until trusted."""
        return self.counterexamples == 0 and self.support >= min_support

    def trusted(self, min_support: int, min_checks: int) -> bool:
        """Learned, and survived ``min_checks`` checks: requests it names are skipped."""
        return self.learned(min_support) and self.checks >= min_checks


def pair_digest(host: str, rule: str, copy: str, kept: str) -> int:
    """A signed 64-bit id of one supporting pair of one rule (SQLite INTEGER, Redis field)."""
    value = xxhash.xxh3_64_intdigest("\0".join((host, rule, *sorted((copy, kept)))).encode())
    return value - (1 << 64) if value >= 1 << 63 else value


def check_digest(host: str, rule: str, url: str, kept: str) -> int:
    """A signed 64-bit id of one passed check of one rule, never equal to a pair's."""
    return pair_digest(host, f"check\0{rule}", url, kept)


class RuleStore(ABC):
    """The blocking contract; :class:`scrapy_simhash.dust.AsyncRuleStore` runs it off-loop,
    or where ``runner`` says (see :class:`~scrapy_simhash._runners.StoreThread`)."""

    #: Where the crawl runs this store's calls; None: a thread of the store's own.
    runner: Runner | None = None

    @abstractmethod
    def support(self, host: str, rule: str, copy: str, kept: str) -> int:
        """Count the pair (once) for the rule; return the rule's support (0: not recorded)."""

    @abstractmethod
    def passed(self, host: str, rule: str, url: str, kept: str) -> int:
        """Count a passed check (once): ``url``, which the rule named a copy of ``kept``, was
        fetched and copies it. Return the rule's checks passed."""

    @abstractmethod
    def kill(self, host: str, rule: str, example: str) -> None:
        """Record a counterexample: the rule is not trusted on ``host`` any more."""

    @abstractmethod
    def rules(self) -> list[RuleState]:
        """Every rule of the namespace, by host then rule."""

    @abstractmethod
    def clear(self) -> int:
        """Forget every rule of the namespace; return how many there were."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class MemoryRuleStore(RuleStore):
    """Rules of one process (``memory://``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pairs: dict[tuple[str, str], set[int]] = {}
        self._checks: dict[tuple[str, str], set[int]] = {}
        self._dead: dict[tuple[str, str], tuple[int, str]] = {}

    def support(self, host: str, rule: str, copy: str, kept: str) -> int:
        with self._lock:
            pairs = self._pairs.get((host, rule))
            if pairs is None:
                if len(self._pairs) >= MAX_RULES:
                    return 0
                pairs = self._pairs[(host, rule)] = set()
            if len(pairs) < MAX_PAIRS:
                pairs.add(pair_digest(host, rule, copy, kept))
            return len(pairs)

    def passed(self, host: str, rule: str, url: str, kept: str) -> int:
        with self._lock:
            if (host, rule) not in self._pairs:
                return 0  # not a recorded rule (none are beyond MAX_RULES)
            checks = self._checks.setdefault((host, rule), set())
            if len(checks) < MAX_PAIRS:
                checks.add(check_digest(host, rule, url, kept))
            return len(checks)

    def kill(self, host: str, rule: str, example: str) -> None:
        with self._lock:
            self._pairs.setdefault((host, rule), set())
            count, first = self._dead.get((host, rule), (0, example[:MAX_EXAMPLE]))
            self._dead[(host, rule)] = (count + 1, first)

    def rules(self) -> list[RuleState]:
        with self._lock:
            return [
                RuleState(
                    host,
                    rule,
                    len(pairs),
                    *self._dead.get((host, rule), (0, "")),
                    len(self._checks.get((host, rule), ())),
                )
                for (host, rule), pairs in sorted(self._pairs.items())
            ]

    def clear(self) -> int:
        with self._lock:
            count = len(self._pairs)
            self._pairs.clear()
            self._checks.clear()
            self._dead.clear()
            return count


_SCHEMA = """
CREATE TABLE IF NOT EXISTS simhash_dust_rules (
    ns TEXT NOT NULL, host TEXT NOT NULL, rule TEXT NOT NULL,
    support INTEGER NOT NULL DEFAULT 0, counterexamples INTEGER NOT NULL DEFAULT 0,
    example TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (ns, host, rule)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS simhash_dust_pairs (
    ns TEXT NOT NULL, pair INTEGER NOT NULL, PRIMARY KEY (ns, pair)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS simhash_dust_checks (
    ns TEXT NOT NULL, host TEXT NOT NULL, rule TEXT NOT NULL,
    passed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, host, rule)
) WITHOUT ROWID
"""


def _count_once(db: sqlite3.Connection, ns: str, digest: int, count: int) -> int:
    """``count`` plus one if ``digest`` (a pair or a check) was not counted before, up to
    MAX_PAIRS: support and checks passed each count a distinct piece of evidence once."""
    if count >= MAX_PAIRS:
        return count
    added = db.execute("INSERT OR IGNORE INTO simhash_dust_pairs VALUES (?, ?)", (ns, digest))
    return count + 1 if added.rowcount else count


class SqliteRuleStore(RuleStore):
    """Three tables next to the index's in the same file (checks passed in a table of their
    own, which a file written before they were counted gains when opened), written through
    a shared connection (:class:`~scrapy_simhash._sqlite.SharedConnection`): under the
    file's one lock and checkpoints, as the index writes it, and raising ``StorageLost``
    once the file was deleted or replaced."""

    def __init__(
        self, path: str, namespace: str, *, timeout_secs: float = BUSY_TIMEOUT_SECS
    ) -> None:
        self.namespace = namespace
        self._where = path
        try:
            self.connection = open_with_schema(path, _SCHEMA, timeout_secs=timeout_secs)
        except sqlite3.Error as exc:
            raise self._error("open", exc) from exc
        self.runner = self.connection.run

    def _error(self, action: str, exc: BaseException) -> IndexBackendError:
        return IndexBackendError(f"SQLite rule store {self._where}: {action} failed: {exc}")

    def support(self, host: str, rule: str, copy: str, kept: str) -> int:
        ns = self.namespace
        try:
            with self.connection.writing() as db:
                row = db.execute(
                    "SELECT support FROM simhash_dust_rules WHERE ns=? AND host=? AND rule=?",
                    (ns, host, rule),
                ).fetchone()
                if row is None:
                    (count,) = db.execute(
                        "SELECT COUNT(*) FROM simhash_dust_rules WHERE ns=?", (ns,)
                    ).fetchone()
                    if count >= MAX_RULES:
                        return 0
                    db.execute(
                        "INSERT INTO simhash_dust_rules (ns, host, rule) VALUES (?, ?, ?)",
                        (ns, host, rule),
                    )
                    support = 0
                else:
                    support = int(row[0])
                counted = _count_once(db, ns, pair_digest(host, rule, copy, kept), support)
                if counted > support:
                    support = counted
                    db.execute(
                        "UPDATE simhash_dust_rules SET support=? WHERE ns=? AND host=? AND rule=?",
                        (support, ns, host, rule),
                    )
                return support
        except sqlite3.Error as exc:
            raise self._error("support", exc) from exc

    def passed(self, host: str, rule: str, url: str, kept: str) -> int:
        ns = self.namespace
        try:
            with self.connection.writing() as db:
                if (
                    db.execute(
                        "SELECT 1 FROM simhash_dust_rules WHERE ns=? AND host=? AND rule=?",
                        (ns, host, rule),
                    ).fetchone()
                    is None
                ):
                    return 0  # not a recorded rule (none are beyond MAX_RULES)
                row = db.execute(
                    "SELECT passed FROM simhash_dust_checks WHERE ns=? AND host=? AND rule=?",
                    (ns, host, rule),
                ).fetchone()
                passed = 0 if row is None else int(row[0])
                counted = _count_once(db, ns, check_digest(host, rule, url, kept), passed)
                if counted > passed:
                    passed = counted
                    db.execute(
                        "INSERT INTO simhash_dust_checks (ns, host, rule, passed) VALUES "
                        "(?, ?, ?, ?) ON CONFLICT (ns, host, rule) DO UPDATE SET "
                        "passed = excluded.passed",
                        (ns, host, rule, passed),
                    )
                return passed
        except sqlite3.Error as exc:
            raise self._error("passed", exc) from exc

    def kill(self, host: str, rule: str, example: str) -> None:
        try:
            with self.connection.writing() as db:
                db.execute(
                    "INSERT INTO simhash_dust_rules (ns, host, rule, counterexamples, example) "
                    "VALUES (?, ?, ?, 1, ?) ON CONFLICT (ns, host, rule) DO UPDATE SET "
                    "counterexamples = counterexamples + 1, example = CASE WHEN example = '' "
                    "THEN excluded.example ELSE example END",
                    (self.namespace, host, rule, example[:MAX_EXAMPLE]),
                )
        except sqlite3.Error as exc:
            raise self._error("kill", exc) from exc

    def rules(self) -> list[RuleState]:
        try:
            with self.connection.reading() as db:
                rows = db.execute(
                    "SELECT r.host, r.rule, r.support, r.counterexamples, r.example, "
                    "COALESCE(c.passed, 0) FROM simhash_dust_rules r LEFT JOIN "
                    "simhash_dust_checks c ON c.ns = r.ns AND c.host = r.host AND "
                    "c.rule = r.rule WHERE r.ns=? ORDER BY r.host, r.rule",
                    (self.namespace,),
                ).fetchall()
        except sqlite3.Error as exc:
            raise self._error("list", exc) from exc
        return [RuleState(*row) for row in rows]

    def clear(self) -> int:
        try:
            with self.connection.writing() as db:
                count = db.execute(
                    "DELETE FROM simhash_dust_rules WHERE ns=?", (self.namespace,)
                ).rowcount
                db.execute("DELETE FROM simhash_dust_pairs WHERE ns=?", (self.namespace,))
                db.execute("DELETE FROM simhash_dust_checks WHERE ns=?", (self.namespace,))
                return int(count)
        except sqlite3.Error as exc:
            raise self._error("clear", exc) from exc

    def close(self) -> None:
        with suppress(sqlite3.Error):
            self.connection.close()


#: KEYS: rules hash, pairs hash. ARGV: field, pair field, MAX_PAIRS, MAX_RULES.
#: Rule value: "support counterexamples example".
_SUPPORT = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
local support, dead, example = 0, 0, ''
if value then
  local a, b = string.find(value, ' ', 1, true)
  local c = string.find(value, ' ', b + 1, true)
  support = tonumber(string.sub(value, 1, a - 1))
  dead = tonumber(string.sub(value, b + 1, c - 1))
  example = string.sub(value, c + 1)
elseif redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
if support < tonumber(ARGV[3]) and redis.call('HSETNX', KEYS[2], ARGV[2], 1) == 1 then
  support = support + 1
end
redis.call('HSET', KEYS[1], ARGV[1], support .. ' ' .. dead .. ' ' .. example)
return support
"""
#: KEYS: rules hash, checks hash, pairs hash. ARGV: field, check field, MAX_PAIRS.
#: Checks value: the number passed. A rule the rules hash does not hold gains none.
_PASSED = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local passed = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if passed < tonumber(ARGV[3]) and redis.call('HSETNX', KEYS[3], ARGV[2], 1) == 1 then
  passed = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
end
return passed
"""
#: KEYS: rules hash. ARGV: field, example.
_KILL = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
local support, dead, example = 0, 0, ARGV[2]
if value then
  local a, b = string.find(value, ' ', 1, true)
  local c = string.find(value, ' ', b + 1, true)
  support = tonumber(string.sub(value, 1, a - 1))
  dead = tonumber(string.sub(value, b + 1, c - 1))
  if c < #value then example = string.sub(value, c + 1) end
end
redis.call('HSET', KEYS[1], ARGV[1], support .. ' ' .. (dead + 1) .. ' ' .. example)
return dead + 1
"""


class RedisRuleStore(RuleStore):
    """Three hashes under the namespace's hash tag (one Cluster slot, like the index): rules,
    pair and check digests, checks passed."""

    def __init__(self, url: str, namespace: str, **options: Any) -> None:
        self._url = url
        self._errors = redis_errors()
        prefix = f"simhash:{{{namespace}}}:"
        self._keys = [prefix + "ur", prefix + "up", prefix + "uc"]
        try:
            self._client: Any = sync_client(url, **options)
            self._support = self._client.register_script(_SUPPORT)
            self._kill = self._client.register_script(_KILL)
            self._passed = self._client.register_script(_PASSED)
        except self._errors as exc:
            raise self._error("open", exc) from exc

    def _error(self, action: str, exc: BaseException) -> IndexBackendError:
        return IndexBackendError(
            f"Redis rule store {mask_url(self._url)}: {action} failed: {type(exc).__name__}"
        )

    def support(self, host: str, rule: str, copy: str, kept: str) -> int:
        field = f"{host}\0{rule}"
        pair = struct.pack(">q", pair_digest(host, rule, copy, kept))  # names host and rule
        try:
            return int(self._support(keys=self._keys[:2], args=[field, pair, MAX_PAIRS, MAX_RULES]))
        except self._errors as exc:
            raise self._error("support", exc) from exc

    def passed(self, host: str, rule: str, url: str, kept: str) -> int:
        field = f"{host}\0{rule}"
        check = struct.pack(">q", check_digest(host, rule, url, kept))
        keys = [self._keys[0], self._keys[2], self._keys[1]]
        try:
            return int(self._passed(keys=keys, args=[field, check, MAX_PAIRS]))
        except self._errors as exc:
            raise self._error("passed", exc) from exc

    def kill(self, host: str, rule: str, example: str) -> None:
        try:
            self._kill(keys=self._keys[:1], args=[f"{host}\0{rule}", example[:MAX_EXAMPLE]])
        except self._errors as exc:
            raise self._error("kill", exc) from exc

    def rules(self) -> list[RuleState]:
        try:
            raw = self._client.hgetall(self._keys[0])
            checks = self._client.hgetall(self._keys[2])
        except self._errors as exc:
            raise self._error("list", exc) from exc
        out = []
        for field, value in raw.items():
            host, _, rule = field.decode("utf-8", "replace").partition("\0")
            support, dead, example = value.decode("utf-8", "replace").split(" ", 2)
            passed = int(checks.get(field, 0))
            out.append(RuleState(host, rule, int(support), int(dead), example, passed))
        return sorted(out)

    def clear(self) -> int:
        try:
            count = int(self._client.hlen(self._keys[0]))
            for key in self._keys:
                self._client.delete(key)
        except self._errors as exc:
            raise self._error("clear", exc) from exc
        return count

    def close(self) -> None:
        with suppress(*self._errors):
            self._client.close()
