"""The rules of a namespace as people read them (``scrapy simhash rules``,
``scrapy-simhash rules``)."""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_simhash.dust.book import MIN_CHECKS
from scrapy_simhash.dust.store import RuleState


def status(state: RuleState, min_support: int, min_checks: int = MIN_CHECKS) -> str:
    """dead (a counterexample), trusted (requests it names copies of are skipped), checking
    (learned: those requests are fetched and checked), learning (too little support)."""
    if state.counterexamples:
        return "dead"
    if state.trusted(min_support, min_checks):
        return "trusted"
    return "checking" if state.learned(min_support) else "learning"


def format_rules(
    states: Iterable[RuleState], min_support: int, min_checks: int = MIN_CHECKS
) -> list[str]:
    """One line per rule (status, support, checks passed, counterexamples, host, rule, first
    counterexample), trusted rules first; an explanation when there are none."""
    order = {"trusted": 0, "checking": 1, "learning": 2, "dead": 3}

    def state_of(s: RuleState) -> str:
        return status(s, min_support, min_checks)

    rows = sorted(states, key=lambda s: (order[state_of(s)], s.host, -s.support, s.rule))
    if not rows:
        return ["no URL rules (a crawl learns them only with `dust_enabled` on)"]
    lines = [f"{'status':<9}{'support':>8}{'checked':>8}{'counter':>8}  host  rule"]
    for s in rows:
        line = (
            f"{state_of(s):<9}{s.support:>8}{s.checks:>8}{s.counterexamples:>8}  {s.host}  {s.rule}"
        )
        if s.example:
            line += f"  ({s.example})"
        lines.append(line)
    return lines
