"""URL rewrite rules learned from pairs of URLs with the same content (DUST).

Bar-Yossef et al. ("Do not crawl in the DUST", WWW 2007) and Dasgupta et al. (KDD 2008)
observe that most copies on a site follow URL patterns: a tracking or session parameter,
a print or AMP path, another host name. A pair "URL A copies URL B" from the drop record is
explained by at most one rule of each kind below; a pair no such combination explains
(two unrelated URLs with the same text) teaches nothing.

Rules are per host (the host of the URL they rewrite) and written as short strings, which
is what the rule store keeps and ``scrapy simhash rules`` shows:

- ``param:NAME`` removes every ``NAME=...`` from the query (``utm_source``, ``print``);
- ``suffix:OLD>NEW`` replaces the end ``OLD`` of the path by ``NEW`` (``/amp>.html``,
  ``/index.html>/``);
- ``prefix:OLD>NEW`` replaces the start of the path (``/print>``);
- ``pathparam:NAME`` removes a ``;NAME=...`` path parameter (``;jsessionid=``);
- ``host:SCHEME://NETLOC`` moves the URL to another host (``m.`` and ``www.`` aliases).

A path rule between two non-empty strings works both ways (``/x/amp`` and ``/x.html`` name
each other); one with an empty side only removes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import parse_qsl, unquote_plus, urlsplit, urlunsplit

#: Characters at which a path rule may start or end: whole segments or extensions only,
#: so ``/a/b1`` and ``/a/b2`` never teach "replace 1 by 2".
_BOUNDARY = "/.;"
#: Longest side of a path rule (characters): longer differences are ids, not patterns.
MAX_PATH_PART = 24


class Rule(NamedTuple):
    """A rewrite rule of one host."""

    host: str
    rule: str


def rule_netloc(url: str) -> str:
    """What rules are filed under: the URL's whole network location (port and user
    included), lower-cased, so a rule learned on one origin is never used on another
    (unlike the template memory's ``template.host_of``, host name and port)."""
    return urlsplit(url).netloc.lower()


def _at_boundary(path: str, at: int) -> bool:
    return at == len(path) or path[at] in _BOUNDARY


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    while n > 0 and not (_at_boundary(a, n) and _at_boundary(b, n)):
        n -= 1
    return n


def _common_suffix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y:
            break
        n += 1
    while n > 0 and not (a[len(a) - n] in _BOUNDARY and b[len(b) - n] in _BOUNDARY):
        n -= 1
    return n


def _oriented(kind: str, old: str, new: str) -> str | None:
    """One spelling per rule: the longer side first (ties by text), never an empty old."""
    if (len(new), new) > (len(old), old):
        old, new = new, old
    if not old or len(old) > MAX_PATH_PART or ">" in old or ">" in new:
        return None
    if old.count("/") > 1 or new.count("/") > 1:
        return None  # several segments differ: ids of two pages, no pattern
    return f"{kind}:{old}>{new}"


def path_rule(a: str, b: str) -> str | None:
    """The one suffix or prefix rewrite that turns path ``a`` into ``b``, if any.

    None when the differing parts hold a digit: ``/item/1`` and ``/item/2``, or ``/page/2``
    and nothing, are ids and page numbers that name different pages, not a copy pattern
    (three soft-404 pairs would otherwise teach a host to skip every other item).
    """
    if a == b:
        return None
    p = _common_prefix(a, b)
    if p > 1:
        old, new = a[p:], b[p:]
        return None if _has_digit(old + new) else _oriented("suffix", old, new)
    s = _common_suffix(a, b)
    if s > 0:
        old, new = a[: len(a) - s], b[: len(b) - s]
        return None if _has_digit(old + new) else _oriented("prefix", old, new)
    return None


def _has_digit(text: str) -> bool:
    return any(char.isdigit() for char in text)


def _params(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)


def _name(segment: str) -> str:
    return unquote_plus(segment.partition("=")[0])


def learn(copy: str, kept: str) -> list[str]:
    """The rules (without host) that together rewrite ``copy`` into ``kept`` or back.

    Empty when the pair is not explained by one rule of each kind, or the URLs are equal.
    """
    a, b = urlsplit(copy), urlsplit(kept)
    if copy == kept or a.scheme != b.scheme or a.fragment or b.fragment:
        return []
    rules: list[str] = []
    if a.netloc.lower() != b.netloc.lower():
        rules.append(f"host:{b.scheme}://{b.netloc.lower()}")
    if a.query != b.query:
        pa, pb = _params(a.query), _params(b.query)
        if len(pa) < len(pb):
            pa, pb = pb, pa
        extra = list(pa)
        for pair in pb:
            if pair not in extra:
                return []
            extra.remove(pair)
        names = sorted({name for name, _ in extra})
        kept_names = {name for name, _ in pb}
        if not names or kept_names & set(names):
            return []
        rules.extend(f"param:{name}" for name in names)
    if a.path != b.path:
        if ";" in a.path or ";" in b.path:
            names = _path_param_rules(a.path, b.path)
            if not names:
                return []
            rules.extend(names)
        else:
            rule = path_rule(a.path, b.path)
            if rule is None:
                return []
            rules.append(rule)
    if not rules:
        return []
    # Only a combination that really maps one URL to the other (both ways for hosts: the
    # rule rewrites the copy's host into the kept one's).
    forward = set(rewrites(copy, rules))
    backward = set(rewrites(kept, [r for r in rules if not r.startswith("host:")]))
    if kept in forward or (copy in backward and not rules[0].startswith("host:")):
        return rules
    return []


def _path_params(path: str) -> tuple[str, list[str]]:
    """A path without its ``;name=value`` parameters (``;jsessionid=...``), and their names."""
    base, *params = path.split(";")
    return base, [p.partition("=")[0] for p in params if p]


def _path_param_rules(a: str, b: str) -> list[str]:
    """``pathparam:NAME`` rules when one path is the other plus ``;NAME=...`` parameters."""
    (base_a, names_a), (base_b, names_b) = _path_params(a), _path_params(b)
    if base_a != base_b or (names_a and names_b):
        return []
    return sorted(f"pathparam:{name}" for name in {*names_a, *names_b} if name)


def _strip_path_params(path: str, names: set[str]) -> str:
    base, *params = path.split(";")
    kept = [p for p in params if p and p.partition("=")[0] not in names]
    return ";".join([base, *kept])


def _apply_path(path: str, rule: str) -> list[str]:
    kind, _, body = rule.partition(":")
    old, _, new = body.partition(">")
    out = []
    if kind == "suffix":
        if path.endswith(old):
            out.append(path[: len(path) - len(old)] + new)
        if new and path.endswith(new):
            out.append(path[: len(path) - len(new)] + old)
    elif kind == "prefix":
        if path.startswith(old):
            out.append(new + path[len(old) :])
        if new and path.startswith(new):
            out.append(old + path[len(new) :])
    return out


def rewrites(url: str, rules: Iterable[str]) -> list[str]:
    """Every URL other than ``url`` the rules name as its copy, most rewritten first.

    All parameter rules and the host rule apply together; each path rule that fits adds
    its own candidate (with and without them), so the list stays short: a handful of index
    lookups per request at most.
    """
    parts = urlsplit(url)
    params = {r[6:] for r in rules if r.startswith("param:")}
    hosts = sorted(r[5:] for r in rules if r.startswith("host:"))
    paths = sorted(r for r in rules if r.startswith(("suffix:", "prefix:")))
    scheme, netloc = parts.scheme, parts.netloc
    if len(hosts) == 1:  # two aliases for one host: neither is trusted to be the name
        target = urlsplit(hosts[0])
        scheme, netloc = target.scheme, target.netloc
    query = parts.query
    if params:
        # Filter the query's own segments: re-encoding would change how the rest is spelt.
        segments = [s for s in parts.query.split("&") if s]
        query = "&".join(s for s in segments if _name(s) not in params)
    path_options: list[str] = []
    path_params = {r[10:] for r in rules if r.startswith("pathparam:")}
    if path_params and ";" in parts.path:
        stripped = _strip_path_params(parts.path, path_params)
        if stripped != parts.path:
            path_options.append(stripped)
    for rule in paths:
        for path in _apply_path(parts.path, rule):
            if path not in path_options and path.startswith("/"):
                path_options.append(path)
    out: list[str] = []
    for path in [*path_options, parts.path]:
        for q in dict.fromkeys([query, parts.query]):
            candidate = urlunsplit((scheme, netloc, path, q, ""))
            if candidate != url and candidate not in out:
                out.append(candidate)
    return out


def used_rules(url: str, other: str, rules: Iterable[str]) -> list[str]:
    """The rules among ``rules`` that took part in rewriting ``url`` into ``other``."""
    a, b = urlsplit(url), urlsplit(other)
    names = {_name(s) for s in a.query.split("&") if s}
    left = {_name(s) for s in b.query.split("&") if s}
    out = []
    for rule in rules:
        kind, _, body = rule.partition(":")
        if kind == "param":
            used = body in names and body not in left
        elif kind == "host":
            used = a.netloc != b.netloc
        elif kind == "pathparam":
            used = body in _path_params(a.path)[1] and body not in _path_params(b.path)[1]
        else:
            used = a.path != b.path and b.path in _apply_path(a.path, rule)
        if used:
            out.append(rule)
    return out


def normal(url: str, rules: Iterable[str]) -> str:
    """One name for every URL the rules relate: parameters removed, the host rule applied,
    and the first path rule that fits applied in its written direction."""
    rules = list(rules)
    parts = urlsplit(url)
    scheme, netloc, path, query = parts.scheme, parts.netloc, parts.path, parts.query
    hosts = sorted(r[5:] for r in rules if r.startswith("host:"))
    if len(hosts) == 1:
        target = urlsplit(hosts[0])
        scheme, netloc = target.scheme, target.netloc
    params = {r[6:] for r in rules if r.startswith("param:")}
    if params:
        query = "&".join(s for s in query.split("&") if s and _name(s) not in params)
    path_params = {r[10:] for r in rules if r.startswith("pathparam:")}
    if path_params:
        path = _strip_path_params(path, path_params)
    for rule in sorted(r for r in rules if r.startswith(("suffix:", "prefix:"))):
        kind, _, body = rule.partition(":")
        old, _, new = body.partition(">")
        if kind == "suffix" and path.endswith(old):
            path = path[: len(path) - len(old)] + new
            break
        if kind == "prefix" and path.startswith(old):
            path = new + path[len(old) :]
            break
    return urlunsplit((scheme, netloc, path, query, ""))
