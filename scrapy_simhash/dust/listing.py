"""The rules of a namespace as people read them (``scrapy simhash rules``,
``scrapy-simhash rules``)."""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_simhash.dust.store import RuleState


def status(state: RuleState, min_support: int) -> str:
    if state.counterexamples:
        return "dead"
    return "trusted" if state.support >= min_support else "learning"


def format_rules(states: Iterable[RuleState], min_support: int) -> list[str]:
    """One line per rule (status, support, counterexamples, host, rule, first counterexample),
    trusted rules first; an explanation when there are none."""
    order = {"trusted": 0, "learning": 1, "dead": 2}
    rows = sorted(states, key=lambda s: (order[status(s, min_support)], s.host, -s.support, s.rule))
    if not rows:
        return ["no URL rules (learned only with SIMHASH_DUST_ENABLED = True)"]
    lines = [f"{'status':<9}{'support':>8}{'counter':>8}  host  rule"]
    for s in rows:
        line = f"{status(s, min_support):<9}{s.support:>8}{s.counterexamples:>8}  {s.host}  {s.rule}"
        if s.example:
            line += f"  ({s.example})"
        lines.append(line)
    return lines
