"""Filings in flight: a page filed in the index but not yet delivered to a spider.

A crawl process files a page (the index's atomic observe) before its callback has run; killed
in between, it would leave an entry that makes every later copy a drop while no callback
anywhere received the page. So a page about to be filed is first *held*: a mark (owner,
time) under its key in a small structure apart from the index, renewed while its callback
runs and deleted once the page is delivered (:meth:`settle`). A copy that meets the filing
of a held key asks the mark: younger than the lease, the holder is alive and the copy waits;
older, the holder died and the copy takes the page over (the mark becomes the copy's).

Only pages in flight have a mark: a settled page costs nothing here. Every backend keeps
the marks with the same rule (:func:`decide`), inside one atomic step.
"""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple

from scrapy_simhash.exceptions import ConfigurationError

#: No mark stood on the key: one is set now (unless the caller only takes stale marks).
FREE = "free"
#: The caller's own mark: renewed.
MINE = "mine"
#: Another owner's mark younger than the lease: left as it is (its holder is alive).
BUSY = "busy"
#: Another owner's mark older than the lease (its holder died): the caller's now.
TAKEN = "taken"
STATES = (FREE, MINE, BUSY, TAKEN)

#: The Redis script of the three calls (one hash per namespace, field = key).
SCRIPT = resources.files("scrapy_simhash.resources").joinpath("simhash_inflight.lua").read_text()


class Hold(NamedTuple):
    """What :meth:`~scrapy_simhash.index.base.NearDuplicateIndex.hold` found: the state
    (:data:`FREE`, :data:`MINE`, :data:`BUSY`, :data:`TAKEN`), the owner of the mark it
    met ("" for none) and that mark's age in seconds."""

    state: str
    owner: str = ""
    age: float = 0.0


def check_owner(owner: str) -> str:
    """An owner is a short printable token without ``|`` (the Redis value's separator)."""
    if type(owner) is not str or not owner or "|" in owner or len(owner) > 200:
        raise ConfigurationError(
            f"a filing owner must be a short non-empty string without '|', got {owner!r:.80}"
        )
    return owner


def check_lease(lease_secs: float) -> float:
    """A lease is a positive number of seconds."""
    if not lease_secs > 0:
        raise ConfigurationError(f"a filing lease must be positive, got {lease_secs!r}")
    return float(lease_secs)


def decide(
    mark: tuple[str, float] | None, owner: str, now: float, lease_secs: float
) -> tuple[Hold, bool]:
    """The rule every backend applies: the hold's answer for a key whose mark is ``mark``
    (owner, since), and whether the caller's mark is to be written."""
    if mark is None:
        return Hold(FREE), True
    other, since = mark
    age = now - since
    if other == owner:
        return Hold(MINE, other, age), True
    if age < lease_secs:
        return Hold(BUSY, other, age), False
    return Hold(TAKEN, other, age), True


class MemoryFilings:
    """The marks of the memory backend (the caller holds its lock)."""

    def __init__(self) -> None:
        self.marks: dict[str, tuple[str, float]] = {}

    def hold(self, key: str, owner: str, lease_secs: float, now: float, *, create: bool) -> Hold:
        found, write = decide(self.marks.get(key), owner, now, lease_secs)
        if write and (create or found.state != FREE):
            self.marks[key] = (owner, now)
        return found

    def settle(self, key: str, owner: str) -> bool:
        mark = self.marks.get(key)
        if mark is None or mark[0] != owner:
            return False
        del self.marks[key]
        return True
