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

from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, IndexMismatchError
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES, DROP_TTL_SECS, DropRecord
from scrapy_simhash.index.layout import SUPPORTED_BITS, BandLayout, check_distance, choose_layout

if TYPE_CHECKING:
    from typing_extensions import Self

#: Bumped when the stored representation changes incompatibly.
FORMAT_VERSION = 1


class Match(NamedTuple):
    """A stored fingerprint within the index's distance of a probe."""

    key: str
    fingerprint: int
    distance: int


class Observation(NamedTuple):
    """Result of :meth:`NearDuplicateIndex.observe`.

    ``match`` is the closest fingerprint within k under another key (then nothing was
    stored); otherwise ``stored`` is true and ``previous`` is the fingerprint this key had.
    """

    match: Match | None
    previous: int | None
    stored: bool


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

    def record(self, layout: BandLayout, **extra: Any) -> str:
        """The JSON record stored with a new index."""
        data = {
            "format": FORMAT_VERSION,
            "bits": self.bits,
            "scheme": self.scheme,
            "layout": layout.name,
            "ttl_secs": self.ttl_secs or 0,
            **extra,
        }
        return json.dumps(data, sort_keys=True)

    def adopt(self, stored: str, where: str) -> tuple[BandLayout, dict[str, Any]]:
        """Check a stored record against this configuration and return the stored layout.

        An index keeps the layout it was created with: reopening it with another
        ``expected_size`` is fine, but another width, fingerprint scheme or an explicit
        other table count would silently lose matches, so those raise.
        """
        try:
            data = json.loads(stored)
            layout = BandLayout.parse(int(data["bits"]), str(data["layout"]))
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
            raise IndexMismatchError(
                f"{where} was created with {', '.join(differences)}; {fix}"
            )
        return layout, data


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
        raise ConfigurationError(
            f"a fingerprint must be an int, got {type(fingerprint).__name__}"
        )
    if not 0 <= fingerprint < 1 << bits:
        raise ConfigurationError(
            f"fingerprint {fingerprint:#x} does not fit in {bits} bits: open the index with "
            "the same `bits` as the fingerprinter"
        )
    return fingerprint


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

    def check_and_add(self, key: str, fingerprint: int) -> Match | None:
        """Return the closest near-duplicate under another key, or store ``fingerprint``."""
        return self.observe(key, fingerprint).match

    @abstractmethod
    def observe(self, key: str, fingerprint: int) -> Observation:
        """Atomically find the closest match under another key, else store/replace ``key``."""

    def claim(self, key: str, fingerprint: int) -> Observation:
        """Like :meth:`observe`, but a fingerprint already stored under ``key`` counts too.

        For a page that names ``key`` as its canonical URL while being fetched under
        another: a stored ``key`` within k is its match; a stored ``key`` further away is a
        conflict (nothing stored, ``previous`` is that fingerprint); otherwise the page is
        stored under ``key``. Backends here do it atomically; this default is not.
        """
        match = closest(self.query(fingerprint))
        if match is not None:
            return Observation(match, None, False)
        stored = self.get(key)
        if stored is not None:
            return Observation(None, stored, False)
        return self.observe(key, fingerprint)

    def rename(self, old: str, new: str) -> bool:
        """Move the entry of ``old`` to ``new`` (same fingerprint; an entry under ``new`` is
        replaced); tell whether ``old`` was stored. Backends here do it atomically."""
        fingerprint = self.get(old)
        if fingerprint is None:
            return False
        self.remove(old)
        self.remove(new)
        return self.observe(new, fingerprint).stored

    def record_drop(self, url: str, kept: str, distance: int) -> None:  # noqa: B027 (optional)
        """Remember that ``url`` was dropped as a copy of ``kept`` (bounded by the
        ``drop_*`` configuration; a later drop of ``url`` replaces the record).

        Backends registered without a record of their own keep nothing.
        """

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
        """Every live stored fingerprint within k, closest first (ties by key)."""

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

    def failure(self, action: str, exc: BaseException) -> IndexBackendError:
        return failure_of(type(self).__name__, action, exc)

    @property
    def creation(self) -> str | None:
        return None

    async def check_and_add(self, key: str, fingerprint: int) -> Match | None:
        return (await self.observe(key, fingerprint)).match

    @abstractmethod
    async def observe(self, key: str, fingerprint: int) -> Observation: ...

    async def claim(self, key: str, fingerprint: int) -> Observation:
        """See :meth:`NearDuplicateIndex.claim` (this default is not atomic)."""
        match = closest(await self.query(fingerprint))
        if match is not None:
            return Observation(match, None, False)
        stored = await self.get(key)
        if stored is not None:
            return Observation(None, stored, False)
        return await self.observe(key, fingerprint)

    async def rename(self, old: str, new: str) -> bool:
        """See :meth:`NearDuplicateIndex.rename` (this default is not atomic)."""
        fingerprint = await self.get(old)
        if fingerprint is None:
            return False
        await self.remove(old)
        await self.remove(new)
        return (await self.observe(new, fingerprint)).stored

    async def record_drop(self, url: str, kept: str, distance: int) -> None:  # noqa: B027
        """See :meth:`NearDuplicateIndex.record_drop`."""

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
