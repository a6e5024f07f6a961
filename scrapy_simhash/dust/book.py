"""The crawl process's view of the learned rules: which to trust, what to check, what to undo.

Pure bookkeeping between the rule store (shared by every process) and the Scrapy glue:

- the rules of each host as last read from the store (or just learned here): **learned**
  with enough support, **trusted** once they also survived enough checks. A request a
  learned rule names a copy of is fetched anyway and checked until the rule is trusted:
  three copies that happen to follow a pattern do not make it safe to skip the next URL of
  that pattern, which on a small site may well be a page of its own;
- **checks**: a fetched URL that a rule maps to another URL is a test of the rule. If the
  other URL's page is known, the two fingerprints decide at once; if not, the test waits
  (bounded) until that URL is fetched;
- **skips**: every request skipped under some rules is remembered with them, so that when
  one of those rules dies (a counterexample here or in another process) the request can be
  scheduled again: a unique page is never lost to a rule that turned out wrong. Only a
  bounded number are remembered; beyond that nothing more is skipped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, NamedTuple, TypeVar

from scrapy_simhash.dust.rules import Rule, normal, rewrites, rule_netloc, used_rules
from scrapy_simhash.dust.store import RuleState

T = TypeVar("T")

#: Distinct (copy, kept) pairs a rule needs before it is learned (SIMHASH_DUST_MIN_SUPPORT).
MIN_SUPPORT = 3
#: Skips of a learned rule, per host, fetched and checked (each passing) before it is trusted
#: to skip unchecked (SIMHASH_DUST_MIN_CHECKS).
MIN_CHECKS = 5
#: Checks waiting for the other URL's page, at most.
MAX_PENDING = 10_000
#: Skipped requests remembered for re-queueing, at most (then nothing more is skipped).
MAX_SKIPPED = 100_000
#: Kept URLs remembered to find the copies rules can only name backwards (``/a.html`` when
#: ``/a.html?print=1`` was kept: the value of ``print`` cannot be guessed), at most.
MAX_KEPT = 100_000


class Check(NamedTuple):
    """``url`` (fingerprint ``fingerprint``) is mapped to ``other`` by ``rules``."""

    url: str
    fingerprint: int
    other: str
    rules: tuple[Rule, ...]


class RuleBook(Generic[T]):
    """Rules of every host seen, pending checks, and the requests skipped under each rule."""

    def __init__(
        self,
        min_support: int,
        *,
        min_checks: int = MIN_CHECKS,
        max_pending: int = MAX_PENDING,
        max_skipped: int = MAX_SKIPPED,
    ) -> None:
        self.min_support = min_support
        self.min_checks = min_checks
        self.max_pending = max_pending
        self.max_skipped = max_skipped
        self._support: dict[Rule, int] = {}
        self._checks: dict[Rule, int] = {}
        self._dead: set[Rule] = set()
        self._by_host: dict[str, set[str]] = {}
        self._pending: OrderedDict[str, list[Check]] = OrderedDict()
        self._skipped: dict[Rule, dict[int, T]] = {}
        self._skips: dict[int, tuple[T, tuple[Rule, ...]]] = {}
        self._next_skip = 0
        self._kept: dict[str, dict[str, None]] = {}
        self._kept_count = 0
        self._normals: dict[str, tuple[list[str], dict[str, str]]] = {}

    # -- what is known -----------------------------------------------------------------------

    def supported(self, rule: Rule, support: int) -> None:
        """The store's support of ``rule`` (it only grows)."""
        self._by_host.setdefault(rule.host, set()).add(rule.rule)
        self._support[rule] = max(support, self._support.get(rule, 0))

    def checked(self, rule: Rule, passed: int) -> None:
        """The store's count of checks ``rule`` passed (it only grows)."""
        self._checks[rule] = max(passed, self._checks.get(rule, 0))

    def load(self, states: Iterable[RuleState]) -> list[T]:
        """Adopt the store's rules; return the skipped requests of rules that died there."""
        died: list[Rule] = []
        for state in states:
            rule = Rule(state.host, state.rule)
            self.supported(rule, state.support)
            self.checked(rule, state.checks)
            if state.counterexamples and rule not in self._dead:
                died.append(rule)
        return self.died(died)

    def died(self, rules: Iterable[Rule]) -> list[T]:
        """Mark ``rules`` dead; return the requests skipped under any of them (forgotten)."""
        out: list[T] = []
        for rule in rules:
            self._dead.add(rule)
            for skip_id in list(self._skipped.pop(rule, {})):
                entry = self._skips.pop(skip_id, None)
                if entry is None:
                    continue
                item, under = entry
                for other in under:
                    self._skipped.get(other, {}).pop(skip_id, None)
                out.append(item)
        return out

    def is_dead(self, rule: Rule) -> bool:
        return rule in self._dead

    def alive(self, host: str) -> list[str]:
        """Rules of ``host`` without a counterexample, trusted or not yet."""
        return sorted(r for r in self._by_host.get(host, ()) if Rule(host, r) not in self._dead)

    def learned(self, host: str) -> list[str]:
        """Rules of ``host`` with enough support and no counterexample: the requests they
        name copies of are skipped once trusted, and checked until then."""
        return [
            r for r in self.alive(host) if self._support.get(Rule(host, r), 0) >= self.min_support
        ]

    def trusted(self, host: str) -> list[str]:
        """Learned rules of ``host`` that also survived enough checks."""
        return [r for r in self.learned(host) if self.is_trusted(Rule(host, r))]

    def is_trusted(self, rule: Rule) -> bool:
        return (
            rule not in self._dead
            and self._support.get(rule, 0) >= self.min_support
            and self._checks.get(rule, 0) >= self.min_checks
        )

    def checks_passed(self, rule: Rule) -> int:
        return self._checks.get(rule, 0)

    # -- skipping ------------------------------------------------------------------------------

    def kept(self, url: str) -> None:
        """A page kept under ``url`` in this process (for :meth:`candidates`)."""
        host = rule_netloc(url)
        urls = self._kept.setdefault(host, {})
        if url in urls or self._kept_count >= MAX_KEPT:
            return
        urls[url] = None
        self._kept_count += 1
        built = self._normals.get(host)
        if built is not None:
            built[1].setdefault(normal(url, built[0]), url)

    def _kept_by_normal(self, host: str, rules: list[str]) -> dict[str, str]:
        built = self._normals.get(host)
        if built is None or built[0] != rules:
            by_normal: dict[str, str] = {}
            for url in self._kept.get(host, ()):
                by_normal.setdefault(normal(url, rules), url)
            built = self._normals[host] = (rules, by_normal)
        return built[1]

    def candidates(self, url: str) -> list[tuple[str, tuple[Rule, ...]]]:
        """URLs the learned rules name as copies of ``url``, each with the rules used:
        rewrites of ``url``, then a kept URL of the same normal form. A candidate whose
        rules are not all trusted is a request to check, not to skip."""
        host = rule_netloc(url)
        rules = self.learned(host)
        if not rules:
            return []
        out = []
        for other in rewrites(url, rules):
            used = tuple(Rule(host, r) for r in used_rules(url, other, rules))
            if used:
                out.append((other, used))
        name = normal(url, rules)
        kept = self._kept_by_normal(host, rules).get(name)
        if kept is not None and kept != url and all(o != kept for o, _ in out):
            names = {*used_rules(url, name, rules), *used_rules(kept, name, rules)}
            if names:
                out.append((kept, tuple(Rule(host, r) for r in sorted(names))))
        return out

    def can_skip(self) -> bool:
        return len(self._skips) < self.max_skipped

    def skipped(self, item: T, rules: tuple[Rule, ...]) -> bool:
        """Remember a request skipped under ``rules``; False (do not skip) when full or
        when one of the rules died meanwhile."""
        if not self.can_skip() or any(rule in self._dead for rule in rules):
            return False
        skip_id = self._next_skip
        self._next_skip += 1
        self._skips[skip_id] = (item, rules)
        for rule in rules:
            self._skipped.setdefault(rule, {})[skip_id] = item
        return True

    @property
    def skipped_count(self) -> int:
        return len(self._skips)

    # -- checks --------------------------------------------------------------------------------

    def checks(self, url: str, fingerprint: int) -> list[Check]:
        """Tests of every live rule of the host by the fetched ``url``: each rule alone, and
        the learned rules together (what a skip would have used)."""
        host = rule_netloc(url)
        out: list[Check] = []
        seen: set[tuple[str, tuple[Rule, ...]]] = set()
        for rule in self.alive(host):
            for other in rewrites(url, [rule]):
                key = (other, (Rule(host, rule),))
                if key not in seen:
                    seen.add(key)
                    out.append(Check(url, fingerprint, *key))
        for other, used in self.candidates(url):
            if (other, used) not in seen:
                seen.add((other, used))
                out.append(Check(url, fingerprint, other, used))
        return out

    def wait(self, check: Check) -> None:
        """Keep ``check`` until ``check.other`` is fetched (the oldest go first when full)."""
        waiting = self._pending.setdefault(check.other, [])
        if check not in waiting:
            waiting.append(check)
        self._pending.move_to_end(check.other)
        while len(self._pending) > self.max_pending:
            self._pending.popitem(last=False)

    def waiting_for(self, url: str) -> list[Check]:
        """The checks that waited for ``url``'s page (forgotten once returned)."""
        return self._pending.pop(url, [])
