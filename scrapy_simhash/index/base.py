"""Types and rules shared by every index backend.

Each backend stores the same thing (key -> fingerprint, plus one band record per table) and
answers the same atomic question; what is shared here is the contract, the configuration
record written at creation and the mismatch check made when an index is reopened.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy_simhash.confirm import (
    CONFIRM_DISTANCE,
    NO_SIGNATURE,
    SIGNATURE_BITS,
    STORED_BITS,
    confirms,
    new_key,
)
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, IndexMismatchError
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS, DropRecord
from scrapy_simhash.index.inflight import FREE, Hold
from scrapy_simhash.index.layout import SUPPORTED_BITS, BandLayout, check_distance, choose_layout

if TYPE_CHECKING:
    from typing import Self

#: Bumped when the stored representation changes incompatibly (2: every entry carries the
#: page's signature for the second test, and the record the namespace's key; 3: the sketch
#: of the page's other lines is stored above its signature).
FORMAT_VERSION = 3


class Match(NamedTuple):
    """A stored fingerprint within the index's distance of a probe, and the signature of
    the page stored with it (:mod:`scrapy_simhash.confirm`)."""

    key: str
    fingerprint: int
    distance: int
    signature: int = NO_SIGNATURE


class Observation(NamedTuple):
    """Result of :meth:`NearDuplicateIndex.observe`.

    ``match`` is the closest fingerprint within k under another key whose signature
    confirms the page (then nothing was stored); otherwise ``stored`` is true and
    ``previous`` is the fingerprint this key had, ``previous_signature`` its signature.
    ``rejected``: candidates within k that the second test turned away. Not stored and no
    match: a claim's conflict (``previous`` is what the key holds), or a page whose very
    fingerprint a distinct page holds (a crafted twin: the page passes, unfiled).
    """

    match: Match | None
    previous: int | None
    stored: bool
    previous_signature: int | None = None
    rejected: int = 0


@dataclass(frozen=True)
class IndexStats:
    """Bucket occupancy: the figure that decides whether the layout still fits the corpus."""

    backend: str
    entries: int
    tables: int
    layout: str
    buckets: int
    largest_bucket: int
    mean_bucket: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class IndexConfig:
    """Everything an index needs besides its storage location."""

    bits: int = 64
    #: Stored fingerprints within this many bits are matches.
    max_distance: int = 3
    #: Every match within this many bits is found; matches further out (up to
    #: max_distance) only when they share a band (None = max_distance: all are found).
    exact_distance: int | None = None
    scheme: str = ""
    namespace: str = "default"
    tables: int | None = None
    expected_size: int | None = None
    ttl_secs: float | None = None
    reset: bool = False
    clock: Callable[[], float] = field(default=time.time, compare=False)
    #: The record of dropped near-duplicates is bounded by age and by count (0 = no record).
    drop_ttl_secs: float | None = DROP_TTL_SECS
    drop_max_entries: int = DROP_MAX_ENTRIES
    #: Signature bits a candidate may differ by and be confirmed (the second test).
    confirm_distance: int = CONFIRM_DISTANCE
    #: Makes the key of a namespace created by this configuration (injected in tests).
    new_key: Callable[[], int] = field(default=new_key, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.bits not in SUPPORTED_BITS:
            raise ConfigurationError(f"bits must be one of {SUPPORTED_BITS}, got {self.bits}")
        check_distance(self.bits, self.max_distance)
        if self.exact_distance is not None and not 0 <= self.exact_distance <= self.max_distance:
            raise ConfigurationError(
                f"exact_distance must be between 0 and max_distance ({self.max_distance}), "
                f"got {self.exact_distance}"
            )
        if not self.namespace or "{" in self.namespace or "}" in self.namespace:
            raise ConfigurationError(
                f"namespace must be a non-empty string without braces, got {self.namespace!r}"
            )
        if self.ttl_secs is not None and self.ttl_secs <= 0:
            raise ConfigurationError(f"ttl_secs must be positive or None, got {self.ttl_secs}")
        if self.drop_ttl_secs is not None and self.drop_ttl_secs <= 0:
            raise ConfigurationError(
                f"drop_ttl_secs must be positive or None, got {self.drop_ttl_secs}"
            )
        if self.drop_max_entries < 0:
            raise ConfigurationError(
                f"drop_max_entries must be 0 (no record) or more, got {self.drop_max_entries}"
            )
        if not 0 <= self.confirm_distance < SIGNATURE_BITS // 4:
            raise ConfigurationError(
                f"confirm_distance must be between 0 and {SIGNATURE_BITS // 4 - 1} (beyond, "
                f"pages sharing little text confirm each other), got {self.confirm_distance}"
            )

    def expired(self, seen: int, now: float) -> bool:
        """Whether an entry last seen at ``seen`` (whole seconds) has aged out at ``now``."""
        return self.ttl_secs is not None and now - seen > self.ttl_secs

    def drop_expired(self, at: int, now: float) -> bool:
        """Whether a drop record made at ``at`` (whole seconds) has aged out at ``now``."""
        return self.drop_ttl_secs is not None and now - at > self.drop_ttl_secs

    @property
    def band_distance(self) -> int:
        """The distance the band layout finds every match within.

        Bands built for k find every pair within k bits (pigeonhole) and most pairs one
        bit further: a 64-bit pair 4 bits apart escapes k=3's four bands only when each
        band holds one of the differing bits (about 1 pair in 10). Accepting those at no
        extra cost gains most of k=4's recall without its five to fifteen tables.
        """
        return self.max_distance if self.exact_distance is None else self.exact_distance

    def new_layout(self) -> BandLayout:
        """Layout for a fresh index built with this configuration."""
        return choose_layout(
            self.bits, self.band_distance, expected_size=self.expected_size, tables=self.tables
        )

    def record(self, layout: BandLayout, key: int, **extra: Any) -> str:
        """The JSON record stored with a new index; ``key`` is the namespace's key of the
        second test (:func:`key_of` reads it back)."""
        data = {
            "format": FORMAT_VERSION,
            "bits": self.bits,
            "scheme": self.scheme,
            "layout": layout.name,
            "ttl_secs": self.ttl_secs or 0,
            "confirm_key": f"{key:016x}",
            **extra,
        }
        return json.dumps(data, sort_keys=True)

    def adopt(self, stored: str, where: str) -> tuple[BandLayout, dict[str, Any]]:
        """Check a stored record against this configuration and return the stored layout
        and the record (:func:`key_of` reads the namespace's key from it).

        An index keeps the layout it was created with: reopening it with another
        ``expected_size`` is fine, but another width, fingerprint scheme or an explicit
        other table count would silently lose matches, so those raise.
        """
        try:
            data = json.loads(stored)
            layout = BandLayout.parse(int(data["bits"]), str(data["layout"]))
            if data.get("format") == FORMAT_VERSION:
                key_of(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise IndexMismatchError(
                f"{where} holds an index record this version cannot read ({exc}); "
                f"{reset_hint(self.namespace)}"
            ) from None
        fix = reset_hint(self.namespace)
        if data.get("format") != FORMAT_VERSION:
            raise IndexMismatchError(
                f"{where} was written in index format {data.get('format')}, this version "
                f"uses {FORMAT_VERSION}; {fix}"
            )
        differences = []
        if layout.bits != self.bits:
            differences.append(f"bits {layout.bits} (now {self.bits})")
        if data.get("scheme", "") != self.scheme:
            differences.append(f"fingerprint scheme {data.get('scheme')!r} (now {self.scheme!r})")
        stored_ttl = float(data.get("ttl_secs") or 0)
        if stored_ttl != float(self.ttl_secs or 0):
            # One process purging entries another keeps forever would lose its pages.
            differences.append(
                f"TTL {stored_ttl:g}s (now {float(self.ttl_secs or 0):g}s; 0 = never expire)"
            )
        if self.tables is not None and layout.tables != self.tables:
            differences.append(f"{layout.tables} tables (now {self.tables})")
        if layout.max_distance < self.band_distance:
            differences.append(
                f"layout {layout.name} finding every distance <= {layout.max_distance} "
                f"(now {self.band_distance})"
            )
        if differences:
            raise IndexMismatchError(f"{where} was created with {', '.join(differences)}; {fix}")
        return layout, data


def key_of(record: dict[str, Any]) -> int:
    """The namespace's key of the second test, from its configuration record."""
    return int(str(record["confirm_key"]), 16)


def judge(found: Iterable[Match], signature: int, limit: int) -> tuple[Match | None, int, bool]:
    """The second test over an observe's candidates: (the closest one whose signature
    confirms the page, how many it rejected, whether a rejected one has the very
    fingerprint of the page). Every backend decides with this rule, inside its atomic
    check-and-add."""
    confirmed: list[Match] = []
    rejected = 0
    twin = False
    for match in found:
        if confirms(signature, match.signature, limit, match.distance):
            confirmed.append(match)
        else:
            rejected += 1
            twin = twin or match.distance == 0
    return closest(confirmed), rejected, twin


def failure_of(where: str, action: str, exc: BaseException) -> IndexBackendError:
    """The failure of a backend that words none of its own."""
    return IndexBackendError(f"{where}: {action} failed: {type(exc).__name__}: {exc}")


def reset_hint(namespace: str) -> str:
    """The exact ways out of a mismatched index, for error messages."""
    return (
        f"to rebuild namespace {namespace!r} with the current settings, run "
        f"`scrapy simhash reset --namespace {namespace}` in the project folder (or crawl once "
        "with `reset` on; from Python: open_index(..., reset=True)); "
        "to keep it, use another `namespace`"
    )


def check_fingerprint(fingerprint: int, bits: int) -> int:
    """Reject values that are not ``bits``-bit unsigned integers (e.g. a 128-bit fingerprint
    sent to a 64-bit index), which would otherwise be silently truncated."""
    if isinstance(fingerprint, bool) or not isinstance(fingerprint, int):
        raise ConfigurationError(f"a fingerprint must be an int, got {type(fingerprint).__name__}")
    if not 0 <= fingerprint < 1 << bits:
        raise ConfigurationError(
            f"fingerprint {fingerprint:#x} does not fit in {bits} bits: open the index with "
            "the same `bits` as the fingerprinter"
        )
    return fingerprint


def check_signature(signature: int) -> int:
    """Reject what is not a signature (:mod:`scrapy_simhash.confirm`)."""
    if isinstance(signature, bool) or not isinstance(signature, int):
        raise ConfigurationError(f"a signature must be an int, got {type(signature).__name__}")
    if not 0 <= signature < 1 << STORED_BITS:
        raise ConfigurationError(f"signature {signature:#x} does not fit in {STORED_BITS} bits")
    return signature


def closest(matches: Iterable[Match]) -> Match | None:
    """The closest match, ties broken by key so every backend answers the same."""
    return min(matches, key=lambda match: (match.distance, match.key), default=None)


def ordered(matches: Iterable[Match]) -> list[Match]:
    return sorted(matches, key=lambda match: (match.distance, match.key))


def bucket_stats(
    backend: str, entries: int, layout: BandLayout, sizes: Iterable[int]
) -> IndexStats:
    counts = list(sizes)
    return IndexStats(
        backend=backend,
        entries=entries,
        tables=layout.tables,
        layout=layout.name,
        buckets=len(counts),
        largest_bucket=max(counts, default=0),
        mean_bucket=sum(counts) / len(counts) if counts else 0.0,
    )


class NearDuplicateIndex(ABC):
    """Blocking interface (CLI, scripts, the SQLite and memory backends)."""

    config: IndexConfig
    layout: BandLayout
    url: str
    #: Opening this object wrote the namespace's configuration record: the namespace did
    #: not exist in the storage (new, reset, or its data lost while nothing was open).
    created: bool = False
    #: What the storage raises when it fails: the facade every index is opened behind
    #: (:mod:`scrapy_simhash.index.facade`) says each in :meth:`failure`'s words.
    errors: tuple[type[BaseException], ...] = ()
    #: The namespace's key of the second test (:mod:`scrapy_simhash.confirm`), read from
    #: its configuration record when the index opens: pages are signed under it.
    confirm_key: int = 0

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        """What to tell the user when ``action`` failed with ``exc``: where, what, what
        to check; never a password."""
        return failure_of(type(self).__name__, action, exc)

    @property
    def creation(self) -> str | None:
        """Which creation of the namespace this object uses (a Redis record's digest, an
        SQLite namespace row), as last seen: another value later means the namespace was
        created anew meanwhile, its data lost (a Redis restarted without persistence, a
        flush) or reset. None: the backend does not tell."""
        return None

    def check_and_add(
        self, key: str, fingerprint: int, signature: int = NO_SIGNATURE
    ) -> Match | None:
        """Return the closest confirmed near-duplicate under another key, or store
        ``fingerprint``."""
        return self.observe(key, fingerprint, signature).match

    @abstractmethod
    def observe(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        """Atomically find the closest candidate within k under another key whose signature
        confirms ``signature`` (:func:`judge`), else store/replace ``key`` with both.

        A page filed without a signature confirms only another filed without one: the
        index then decides by distance alone (scripts and tests of the index itself).
        """

    def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        """Like :meth:`observe`, but a fingerprint already stored under ``key`` counts too.

        For a page that names ``key`` as its canonical URL while being fetched under
        another: a stored ``key`` within k whose signature confirms the page is its match;
        any other live entry under ``key`` is a conflict (nothing stored, ``previous`` is
        that fingerprint); otherwise the page is stored under ``key``. Backends here do it
        atomically; this default is not.
        """
        match, rejected, _ = judge(self.query(fingerprint), signature, self.config.confirm_distance)
        if match is not None:
            return Observation(match, None, False, rejected=rejected)
        stored = self.entry(key)
        if stored is not None:
            return Observation(None, stored[0], False, stored[1], rejected)
        return self.observe(key, fingerprint, signature)

    def rename(self, old: str, new: str) -> bool:
        """Move the entry of ``old`` to ``new`` (same fingerprint and signature; an entry
        under ``new`` is replaced); tell whether ``old`` was stored. Backends here do it
        atomically."""
        entry = self.entry(old)
        if entry is None:
            return False
        self.remove(old)
        self.remove(new)
        return self.observe(new, *entry).stored

    def entry(self, key: str) -> tuple[int, int] | None:
        """The live fingerprint and signature stored under ``key``."""
        fingerprint = self.get(key)
        return None if fingerprint is None else (fingerprint, NO_SIGNATURE)

    def record_drop(  # noqa: B027 (optional)
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> None:
        """Remember that ``url`` was dropped as a copy of ``kept``, their fingerprints
        ``distance`` and signatures ``apart`` bits apart (bounded by the ``drop_*``
        configuration; a later drop of ``url`` replaces the record).

        Backends registered without a record of their own keep nothing.
        """

    def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        """Atomically mark ``key``'s filing in flight for ``owner`` (a page about to be filed
        and not yet delivered), by :func:`~scrapy_simhash.index.inflight.decide`: no mark
        (FREE: one is set, unless ``create`` is false), ``owner``'s own (MINE: renewed),
        another's younger than ``lease_secs`` (BUSY: left), another's older (TAKEN: the
        caller's now). The time is the configuration's clock.

        Backends registered without marks keep none (every hold is FREE).
        """
        return Hold(FREE)

    def settle(self, key: str, owner: str) -> bool:
        """Delete ``key``'s mark if it is ``owner``'s (its page was delivered); tell
        whether it was."""
        return False

    def in_flight(self, key: str) -> tuple[str, float] | None:
        """``key``'s mark: (owner, time set or renewed), or None when none stands."""
        return None

    def drop_of(self, url: str) -> DropRecord | None:
        """The live drop record of ``url``, if it was dropped as a near-duplicate."""
        return None

    def forget_drop(self, url: str) -> None:  # noqa: B027 (optional, as record_drop)
        """Forget the drop record of ``url``: it turned out not to copy what it names."""

    def drop_count(self) -> int:
        """Drop records stored, including expired ones not yet purged."""
        return 0

    def keys(self) -> Iterator[str]:
        """Every live stored key, in no set order: one pass over the store, for reports.

        Backends registered without it say so (the report then cannot count kept pages).
        """
        raise NotImplementedError(f"{type(self).__name__} cannot list its keys")

    def drops(self) -> Iterator[DropRecord]:
        """Every live drop record, in no set order (none for a backend without a record)."""
        return iter(())

    @abstractmethod
    def query(self, fingerprint: int) -> list[Match]:
        """Every live stored fingerprint within k (the candidates, with their signatures,
        none judged), closest first (ties by key)."""

    @abstractmethod
    def get(self, key: str) -> int | None:
        """The live fingerprint stored under ``key``."""

    @abstractmethod
    def remove(self, key: str) -> bool:
        """Forget ``key``; tell whether it was stored."""

    @abstractmethod
    def clear(self) -> None:
        """Forget every entry of this namespace (the configuration record is rewritten)."""

    @abstractmethod
    def count(self) -> int:
        """Stored entries, including expired ones not yet purged."""

    @abstractmethod
    def purge_expired(self) -> int:
        """Delete entries not seen for ``ttl_secs``; return how many were deleted."""

    @abstractmethod
    def stats(self) -> IndexStats:
        """Entries and bucket occupancy (scans the buckets: not for every page)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; the object must not be used afterwards."""

    def __len__(self) -> int:
        return self.count()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncNearDuplicateIndex(ABC):
    """The same contract as coroutines, for use inside Scrapy's asyncio loop."""

    config: IndexConfig
    layout: BandLayout
    url: str
    #: See :attr:`NearDuplicateIndex.created` and :attr:`NearDuplicateIndex.creation`.
    created: bool = False
    #: See :attr:`NearDuplicateIndex.errors` and :meth:`NearDuplicateIndex.failure`.
    errors: tuple[type[BaseException], ...] = ()
    #: See :attr:`NearDuplicateIndex.confirm_key`.
    confirm_key: int = 0

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        return failure_of(type(self).__name__, action, exc)

    @property
    def creation(self) -> str | None:
        return None

    async def check_and_add(
        self, key: str, fingerprint: int, signature: int = NO_SIGNATURE
    ) -> Match | None:
        return (await self.observe(key, fingerprint, signature)).match

    @abstractmethod
    async def observe(
        self, key: str, fingerprint: int, signature: int = NO_SIGNATURE
    ) -> Observation: ...

    async def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        """See :meth:`NearDuplicateIndex.claim` (this default is not atomic)."""
        match, rejected, _ = judge(
            await self.query(fingerprint), signature, self.config.confirm_distance
        )
        if match is not None:
            return Observation(match, None, False, rejected=rejected)
        stored = await self.entry(key)
        if stored is not None:
            return Observation(None, stored[0], False, stored[1], rejected)
        return await self.observe(key, fingerprint, signature)

    async def rename(self, old: str, new: str) -> bool:
        """See :meth:`NearDuplicateIndex.rename` (this default is not atomic)."""
        entry = await self.entry(old)
        if entry is None:
            return False
        await self.remove(old)
        await self.remove(new)
        return (await self.observe(new, *entry)).stored

    async def entry(self, key: str) -> tuple[int, int] | None:
        """See :meth:`NearDuplicateIndex.entry`."""
        fingerprint = await self.get(key)
        return None if fingerprint is None else (fingerprint, NO_SIGNATURE)

    async def record_drop(  # noqa: B027
        self, url: str, kept: str, distance: int, apart: int | None = None
    ) -> None:
        """See :meth:`NearDuplicateIndex.record_drop`."""

    async def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        """See :meth:`NearDuplicateIndex.hold`."""
        return Hold(FREE)

    async def settle(self, key: str, owner: str) -> bool:
        """See :meth:`NearDuplicateIndex.settle`."""
        return False

    async def in_flight(self, key: str) -> tuple[str, float] | None:
        """See :meth:`NearDuplicateIndex.in_flight`."""
        return None

    async def drop_of(self, url: str) -> DropRecord | None:
        return None

    async def forget_drop(self, url: str) -> None:  # noqa: B027
        """See :meth:`NearDuplicateIndex.forget_drop`."""

    async def drop_count(self) -> int:
        return 0

    @abstractmethod
    async def query(self, fingerprint: int) -> list[Match]: ...

    @abstractmethod
    async def get(self, key: str) -> int | None: ...

    @abstractmethod
    async def remove(self, key: str) -> bool: ...

    @abstractmethod
    async def clear(self) -> None: ...

    @abstractmethod
    async def count(self) -> int: ...

    @abstractmethod
    async def purge_expired(self) -> int: ...

    @abstractmethod
    async def stats(self) -> IndexStats: ...

    @abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
