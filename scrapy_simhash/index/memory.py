"""``memory://``: a real in-process index (tests, one-off scripts, single-process crawls).

Nothing survives the process; a lock makes observe() atomic across threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from scrapy_simhash.confirm import NO_SIGNATURE
from scrapy_simhash.index.base import (
    IndexConfig,
    IndexStats,
    Match,
    NearDuplicateIndex,
    Observation,
    bucket_stats,
    check_fingerprint,
    check_signature,
    judge,
    ordered,
)
from scrapy_simhash.index.drops import DropRecord, MemoryDrops
from scrapy_simhash.index.inflight import Hold, MemoryFilings, check_lease, check_owner
from scrapy_simhash.index.keys import check_key


class MemoryIndex(NearDuplicateIndex):
    """Dicts of band key -> {key: fingerprint}, one per table; entries key -> (fingerprint,
    last seen, signature)."""

    def __init__(self, url: str, config: IndexConfig) -> None:
        self.url = url
        self.config = config
        self.layout = config.new_layout()
        self.confirm_key = config.new_key()
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[int, int, int]] = {}
        self._tables: list[dict[int, dict[str, int]]] = [{} for _ in self.layout.masks]
        self._pairs = tuple(zip(self._tables, self.layout.masks, strict=True))
        self._largest = (1 << config.bits) - 1
        self._ttl = config.ttl_secs is not None
        self._clock = config.clock
        self._drops = MemoryDrops(config.drop_ttl_secs, config.drop_max_entries)
        self._filings = MemoryFilings()

    def _candidates(self, fingerprint: int, exclude: str | None, now: float) -> list[Match]:
        """Live matches within k except ``exclude``; expired ones met on the way are dropped.

        The hot path of every observe: plain loops over (table, mask) pairs, no per-table
        allocation, the expiry lookup only for the rare candidate within k.
        """
        limit = self.config.max_distance
        found: dict[str, Match] = {}
        expired: list[str] = []
        for table, mask in self._pairs:
            bucket = table.get(fingerprint & mask)
            if bucket:
                for key, other in bucket.items():
                    distance = (fingerprint ^ other).bit_count()
                    if distance <= limit and key != exclude and key not in found:
                        entry = self._entries[key]
                        if self._ttl and self.config.expired(entry[1], now):
                            expired.append(key)
                        else:
                            found[key] = Match(key, other, distance, entry[2])
        for key in expired:
            self._unlink(key)
        return list(found.values())

    def _unlink(self, key: str) -> int | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        fingerprint = entry[0]
        for table, mask in self._pairs:
            band = fingerprint & mask
            bucket = table[band]
            del bucket[key]
            if not bucket:
                del table[band]
        return fingerprint

    def observe(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._observe(key, fingerprint, signature, claim=False)

    def claim(self, key: str, fingerprint: int, signature: int = NO_SIGNATURE) -> Observation:
        return self._observe(key, fingerprint, signature, claim=True)

    def _observe(self, key: str, fingerprint: int, signature: int, *, claim: bool) -> Observation:
        if type(key) is not str or not key or not key.isascii():
            check_key(key)
        if type(fingerprint) is not int or not 0 <= fingerprint <= self._largest:
            check_fingerprint(fingerprint, self.config.bits)
        check_signature(signature)
        now = self._clock()
        with self._lock:
            found = self._candidates(fingerprint, None if claim else key, now)
            match, rejected, twin = judge(found, signature, self.config.confirm_distance)
            if match is not None:
                return Observation(match, None, False, rejected=rejected)
            old = self._entries.get(key)
            if old is not None and self._ttl and self.config.expired(old[1], now):
                old = None
            if claim and old is not None:
                return Observation(None, old[0], False, old[2], rejected)
            if twin:  # a distinct page holds this very fingerprint: the page passes unfiled
                return Observation(None, None if old is None else old[0], False, None, rejected)
            previous = previous_signature = None
            if old is not None:
                previous, previous_signature = old[0], old[2]
            held = self._entries.get(key)
            if held is not None and held[0] != fingerprint:
                self._unlink(key)
            if key not in self._entries:
                for table, mask in self._pairs:
                    band = fingerprint & mask
                    bucket = table.get(band)
                    if bucket is None:
                        table[band] = {key: fingerprint}
                    else:
                        bucket[key] = fingerprint
            self._entries[key] = (fingerprint, int(now), signature)
            return Observation(None, previous, True, previous_signature, rejected)

    def query(self, fingerprint: int) -> list[Match]:
        check_fingerprint(fingerprint, self.config.bits)
        now = self.config.clock()
        with self._lock:
            return ordered(self._candidates(fingerprint, None, now))

    def get(self, key: str) -> int | None:
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> tuple[int, int] | None:
        now = self.config.clock()
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or self.config.expired(entry[1], now):
            return None
        return entry[0], entry[2]

    def remove(self, key: str) -> bool:
        with self._lock:
            return self._unlink(key) is not None

    def rename(self, old: str, new: str) -> bool:
        check_key(new)
        with self._lock:
            entry = self._entries.get(old)
            if entry is None:
                return False
            self._unlink(new)
            self._unlink(old)
            for table, mask in self._pairs:
                band = entry[0] & mask
                table.setdefault(band, {})[new] = entry[0]
            self._entries[new] = entry
            return True

    def record_drop(self, url: str, kept: str, distance: int, apart: int | None = None) -> None:
        check_key(url)
        with self._lock:
            self._drops.record(url, kept, distance, self._clock(), apart)

    def drop_of(self, url: str) -> DropRecord | None:
        with self._lock:
            return self._drops.get(url, self._clock())

    def forget_drop(self, url: str) -> None:
        with self._lock:
            self._drops.forget(url)

    def drop_count(self) -> int:
        return len(self._drops)

    def hold(self, key: str, owner: str, lease_secs: float, *, create: bool = True) -> Hold:
        check_key(key)
        check_owner(owner)
        check_lease(lease_secs)
        with self._lock:
            return self._filings.hold(key, owner, lease_secs, self._clock(), create=create)

    def settle(self, key: str, owner: str) -> bool:
        with self._lock:
            return self._filings.settle(key, owner)

    def in_flight(self, key: str) -> tuple[str, float] | None:
        with self._lock:
            return self._filings.marks.get(key)

    def keys(self) -> Iterator[str]:
        now = self._clock()
        with self._lock:
            entries = list(self._entries.items())
        return (key for key, (_, seen, _) in entries if not self.config.expired(seen, now))

    def drops(self) -> Iterator[DropRecord]:
        with self._lock:
            return self._drops.live(self._clock())

    def clear(self) -> None:
        with self._lock:
            self._drops.clear()
            self._filings.marks.clear()
            self._entries.clear()
            for table in self._tables:
                table.clear()

    def count(self) -> int:
        return len(self._entries)

    def purge_expired(self) -> int:
        now = self.config.clock()
        with self._lock:
            stale = [
                k for k, (_, seen, _) in self._entries.items() if self.config.expired(seen, now)
            ]
            for key in stale:
                self._unlink(key)
        return len(stale)

    def stats(self) -> IndexStats:
        with self._lock:
            sizes = [len(bucket) for table in self._tables for bucket in table.values()]
            return bucket_stats("memory", len(self._entries), self.layout, sizes)

    def close(self) -> None:
        """Nothing to release; the data goes with the object."""
