"""Bytes per URL of everything a crawl stores, store by store and in total: Redis and SQLite.

    python3 benchmarks/state_per_url.py [--urls 100000] [--dropped 0.4] [--urls-per-host 1000]
                                        [--validators 0.0] [--backends redis,sqlite]
                                        [--claims 1000000 [--claim-rounds 300]]
                                        [--schedule 10000000]

A synthetic crawl of ``--urls`` URLs (mean ~60 bytes: article, product and listing URLs of
many hosts; a copy is its page's URL with a tracking parameter or an AMP or print path
added, or 3 in 11 with its path's start or its host changed) goes through the package's
own stores as the middleware calls them (``scrapy_simhash.verdict``,
``scrapy_simhash.glue.templates``), at the crawl's default settings (64 bits, the index's
default width and layout, namespace ``default``):

* every URL: the host's template memory counts the page as seen
  (``TemplateStore.see``), then the near-duplicate index is asked (``observe``);
* a kept page (60% by default): its index entry and band records are stored by that
  ``observe``, the host's memory learns its lines (``learn``), and its recrawl state holds
  32 observations: the state of a page fetched 32 times (computed by the package's own
  estimator, ``memory://`` store, 64 change patterns) is written by the store's backend,
  then the 33rd fetch is a real ``RecrawlStore.observe`` (history of 32, due-queue entry
  moved), optionally with an ETag and Last-Modified (``--validators``: share of pages);
* a dropped copy (``--dropped``, 40% by default; each a copy of an earlier kept page of its
  host, 1-3 bits apart): taken off the schedule (``remove``) and its drop record written
  (``record_drop``). The drop record's cap is raised to the number of copies, so every
  record is still present at the end (checked; the 30-day TTL cannot expire any here).

Hosts: ``--urls / --urls-per-host`` (1,000 by default: 100M URLs on 100,000 hosts, the
SQLite and memory stores' ``MAX_HOSTS``); each host's memory costs the same whatever its
page count, so its bytes per URL scale with 1 / URLs per host. Second looks (reads of a
host's memory on a same-host match) store nothing and are not made.

Redis: a private ``redis-server`` on a free loopback port (``tests/redis_servers.py``:
default configuration, persistence off), ``INFO memory`` ``used_memory`` growth minus
client buffers; the scripts are loaded first by a warm-up crawl in another namespace that
is then deleted. Per store: the fall of ``used_memory`` when that store's keys are deleted,
after the total is read ("other": what no store's keys give back, e.g. the keyspace's own
table). SQLite: one file holding all the stores, as a crawl's default; its size after a WAL
checkpoint (TRUNCATE); per store, the pages of its tables and indexes (``dbstat``); "other":
the schema, free pages and the rest of the file.

"per URL" divides by every URL of the crawl; "per item" by what the store keeps an item
for (index and recrawl: kept URLs; drop records: dropped URLs; template memory: hosts).
"URL text" is the mean URL length: the total counts every copy the stores keep (the
index and the recrawl state each hold a kept page's URL; a drop record the dropped URL and
its page's). Sizes and time: 100,000 URLs take a few minutes on 2 cores; 1,000,000 about
ten times that. Nothing is timed, except with ``--claims N``: N URLs are scheduled in
0.2.0's Redis layout (``_recrawl_020.py``: a hash and a sorted set keyed by URL) and in
this version's (buckets), half of them due, on one server; then ``claim(now, 100)`` is
timed in both, rounds interleaved, each claim taking 100 URLs not yet leased; then 50 more
claims of each alone give the server's time a claim (``INFO commandstats``). With
``--schedule N``, the Redis recrawl store alone is filled with N URLs by its batched
``add`` and measured (bytes per URL, claim time), with the default bucket count and with
buckets sized for N.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import redis
from _index_bench import private_redis
from scrapy.settings import Settings

from scrapy_simhash.confirm import SIGNATURE_BITS
from scrapy_simhash.fingerprint import FingerprintConfig
from scrapy_simhash.index import open_index
from scrapy_simhash.index.drops import DROP_MAX_ENTRIES
from scrapy_simhash.recrawl import PageState, RecrawlConfig, open_recrawl_store
from scrapy_simhash.settings import index_options, recrawl_config
from scrapy_simhash.storage import open_template_store
from scrapy_simhash.template import MAX_LINES, SLOTS

NAMESPACE = "default"
STORES = ("index", "recrawl", "drops", "templates")
LABELS = {
    "index": "index entry + band records",
    "recrawl": "recrawl state (32 obs.)",
    "drops": "drop records",
    "templates": "template memory",
    "other": "other",
}
#: Recrawl change patterns (each a page fetched 32 times by the real estimator).
PATTERNS = 64
#: Lines of a page: the host's template lines and the page's own.
TEMPLATE_LINES, OWN_LINES = 40, 30

_WORDS = (
    "market",
    "city",
    "report",
    "election",
    "weather",
    "season",
    "policy",
    "team",
    "health",
    "school",
    "budget",
    "river",
    "energy",
    "music",
    "film",
    "travel",
    "garden",
    "design",
    "science",
    "review",
    "guide",
    "price",
    "housing",
    "transport",
    "court",
    "police",
    "fire",
    "storm",
    "festival",
    "league",
    "final",
    "coach",
    "player",
    "startup",
    "bank",
    "rates",
    "climate",
    "water",
    "farm",
    "museum",
    "art",
    "food",
    "recipe",
)
_SECTIONS = (
    "news",
    "sport",
    "business",
    "world",
    "culture",
    "tech",
    "opinion",
    "travel",
    "local",
    "life",
)
_TLDS = ("com", "com", "com", "net", "org", "co.uk", "de", "fr", "com.au", "io")
#: How a copy's URL differs from its page's: most add to its end, some change its path's
#: start or its host (so a copy shares anything from all of its page's URL to its scheme).
_VARIANTS = (
    "{url}?utm_source=rss",
    "{url}?utm_medium=social",
    "{url}/amp",
    "{url}?print=1",
    "{url}?ref=home",
    "{url}?page=1",
    "{url}?output=amp",
    "{url}?share=twitter",
    "https://{host}/amp{path}",
    "https://{host}/print{path}",
    "https://m.{host}{path}",
)


class Fetch(NamedTuple):
    """One URL of the crawl: ``copy_of`` is the kept URL it copies (None: kept)."""

    url: str
    host: str
    fingerprint: int
    slots: tuple[int, ...]
    copy_of: str | None
    serial: int  # the kept page's number (its recrawl pattern and validators)


def check(condition: bool, problem: str) -> None:
    """Stop the benchmark when the stores do not hold what the crawl stored."""
    if not condition:
        raise SystemExit(f"state_per_url: {problem}")


def host_name(n: int) -> str:
    """A host's name, of the same length distribution whatever the number of hosts."""
    rng = random.Random(f"host-{n}")
    first, second = rng.sample(_WORDS, 2)
    return f"{first}{second}{n:04d}.{rng.choice(_TLDS)}"  # 4 digits to 10,000 hosts


def page_id(serial: int) -> int:
    """A page's 8-digit id: distinct for 90M pages, the same length at every crawl size."""
    return 10_000_000 + serial * 7919 % 90_000_000


def page_path(rng: random.Random, serial: int) -> str:
    slug = "-".join(rng.sample(_WORDS, rng.choice((2, 2, 2, 3))))
    section, ident = rng.choice(_SECTIONS), page_id(serial)
    shape = rng.randrange(4)
    if shape == 0:
        return f"/{section}/{2015 + serial % 10}/{slug}-{ident}"
    if shape == 1:
        return f"/{section}/{slug}-{ident}.html"
    if shape == 2:
        return f"/p/{ident}/{slug}"
    return f"/{section}?id={ident}"


def crawl(urls: int, dropped: float, urls_per_host: int, seed: int = 1) -> Iterator[Fetch]:
    """The crawl's URLs in fetch order: each copy after the page it copies."""
    rng = random.Random(seed)
    copies = round(urls * dropped)
    kept_count = urls - copies
    hosts = [host_name(n) for n in range(max(1, round(urls / urls_per_host)))]
    templates = [
        tuple(random.Random(f"tpl-{n}").sample(range(SLOTS), TEMPLATE_LINES))
        for n in range(len(hosts))
    ]
    kept: list[tuple[str, str, int, int]] = []  # url, path, fingerprint, host number
    taken: set[tuple[int, int]] = set()
    made = 0
    for serial in range(kept_count):
        h = serial % len(hosts)
        path = page_path(rng, serial)
        url = f"https://{hosts[h]}{path}"
        fingerprint = rng.getrandbits(64)
        kept.append((url, path, fingerprint, h))
        yield Fetch(url, hosts[h], fingerprint, _slots(templates[h], serial), None, serial)
        while made < copies * (serial + 1) // kept_count:
            j, v = rng.randrange(serial + 1), rng.randrange(len(_VARIANTS))
            if (j, v) in taken:
                continue
            taken.add((j, v))
            made += 1
            url_j, path_j, fp_j, h_j = kept[j]
            flips = rng.sample(range(64), rng.randint(1, 3))
            fingerprint = fp_j ^ sum(1 << bit for bit in flips)
            copy = _VARIANTS[v].format(url=url_j, host=hosts[h_j], path=path_j)
            yield Fetch(copy, hosts[h_j], fingerprint, _slots(templates[h_j], j), url_j, j)


def _slots(template: tuple[int, ...], serial: int) -> tuple[int, ...]:
    own = random.Random(serial).sample(range(SLOTS), OWN_LINES)
    return tuple(dict.fromkeys(template + tuple(own)))[:MAX_LINES]


def patterns(config: RecrawlConfig, validators: bool) -> list[PageState]:
    """States of pages fetched 32 times when due, through the package's estimator."""
    out = []
    for p in range(PATTERNS):
        rng = random.Random(f"pattern-{p}")
        now = [1_700_000_000.0 + rng.uniform(0, 86400)]
        store = open_recrawl_store("memory://", config=config, clock=lambda now=now: now[0])
        fingerprint, change = rng.getrandbits(64), (p + 0.5) / PATTERNS
        for visit in range(32):
            if rng.random() < change:
                fingerprint ^= (1 << 64) - 1 >> rng.randrange(40)
            extra: dict[str, Any] = {}
            if validators:
                extra = {
                    "etag": f'"{rng.getrandbits(48):x}-{visit:x}"',
                    "last_modified": "Tue, 14 May 2024 08:12:31 GMT",
                }
            store.observe("https://pattern.test/", fingerprint, **extra)
            state = store.get("https://pattern.test/")
            assert state is not None
            now[0] = state.next_due + rng.uniform(0, 3600)
        check(state.visits == 32 and len(state.history) == 31, f"pattern {p}: {state}")
        out.append(state)
    return out


@dataclasses.dataclass
class Filled:
    kept: int = 0
    dropped: int = 0
    hosts: int = 0
    url_bytes: int = 0
    kept_url_bytes: int = 0


def signature_of(fetch: Any, signatures: dict[str, int]) -> int:
    """A page's signature of the second test, as a crawl stores it (16 bytes): a kept page
    draws its own; a copy has its page's with a few bits flipped."""
    rng = random.Random(fetch.serial)
    if fetch.copy_of is None:
        return rng.getrandbits(SIGNATURE_BITS) & ~1
    flips = sum(1 << bit for bit in rng.sample(range(1, SIGNATURE_BITS), 3))
    return signatures[fetch.copy_of] ^ flips


def fill(url: str, args: argparse.Namespace, namespace: str = NAMESPACE) -> Filled:
    """Run the crawl's store calls on the storage at ``url``; check what it holds after."""
    settings = Settings()
    fingerprints = FingerprintConfig()
    options = index_options(settings)
    options.update(
        namespace=namespace,
        bits=fingerprints.bits,
        scheme=fingerprints.scheme,
        drop_max_entries=max(DROP_MAX_ENTRIES, round(args.urls * args.dropped)),
    )
    options.pop("url")
    config = recrawl_config(settings)
    plain, valid = patterns(config, False), patterns(config, True)
    now = [0.0]
    filled = Filled()
    hosts: set[str] = set()
    sample: list[str] = []  # kept URLs whose state is checked at the end
    signatures: dict[str, int] = {}  # each kept page's, which its copies nearly share
    index = open_index(url, **options)
    recrawl = open_recrawl_store(url, namespace=namespace, config=config, clock=lambda: now[0])
    templates = open_template_store(url, namespace)
    try:
        for fetch in crawl(args.urls, args.dropped, args.urls_per_host):
            filled.url_bytes += len(fetch.url.encode())
            hosts.add(fetch.host)
            templates.see(fetch.host, fetch.slots)
            signature = signature_of(fetch, signatures)
            seen = index.observe(fetch.url, fetch.fingerprint, signature)
            if fetch.copy_of is None:
                signatures[fetch.url] = signature
                check(seen.match is None, f"{fetch.url}: kept page matched {seen.match}")
                templates.learn(fetch.host, fetch.slots)
                with_validators = (fetch.serial * 0.618034) % 1 < args.validators
                pattern = (valid if with_validators else plain)[fetch.serial % PATTERNS]
                recrawl._backend.add(
                    [dataclasses.replace(pattern, url=fetch.url, fingerprint=fetch.fingerprint)]
                )
                now[0] = pattern.next_due + (fetch.serial % 3600)
                extra: dict[str, Any] = {}
                if with_validators:
                    extra = {
                        "etag": f'"{fetch.fingerprint:x}"',
                        "last_modified": "Wed, 15 May 2024 10:02:11 GMT",
                    }
                recrawl.observe(fetch.url, fetch.fingerprint, **extra)
                filled.kept += 1
                filled.kept_url_bytes += len(fetch.url.encode())
                if len(sample) < 100:
                    sample.append(fetch.url)
            else:
                match = seen.match
                check(
                    match is not None and match.key == fetch.copy_of,
                    f"{fetch.url}: copy of {fetch.copy_of} matched {match}",
                )
                assert match is not None
                recrawl.remove(fetch.url)
                index.record_drop(fetch.url, match.key, match.distance)
                filled.dropped += 1
        filled.hosts = len(hosts)
        for kept in sample:
            state = recrawl.get(kept)
            check(state is not None and len(state.history) == 32, f"{kept}: {state}")
        check(len(index) == filled.kept, f"index holds {len(index)} pages: {filled}")
        check(index.drop_count() == filled.dropped, f"{index.drop_count()} drop records: {filled}")
        check(recrawl.count() == filled.kept, f"recrawl store holds {recrawl.count()}: {filled}")
        check(templates.hosts() == filled.hosts, f"{templates.hosts()} hosts: {filled}")
    finally:
        index.close()
        recrawl.close()
        templates.close()
    return filled


# -- Redis --------------------------------------------------------------------------------


def used_memory(client: redis.Redis) -> int:
    info = client.info("memory")
    return int(info["used_memory"]) - int(info.get("mem_clients_normal", 0))


def redis_store_of(key: bytes, namespace: str = NAMESPACE) -> str:
    prefix = f"simhash:{{{namespace}}}:".encode()
    if key.startswith(f"simhash:recrawl:{{{namespace}}}:".encode()):
        return "recrawl"
    if key.startswith(prefix + b"tp:"):
        return "templates"
    if key in (prefix + b"d", prefix + b"q"):
        return "drops"
    if key.startswith(prefix):
        return "index"
    return "other"


def _delete(client: redis.Redis, keys: list[bytes]) -> None:
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])


def redis_figures(args: argparse.Namespace) -> tuple[Filled, int, dict[str, int]]:
    with private_redis() as server:
        client = redis.Redis.from_url(server.url)
        warm = argparse.Namespace(**{**vars(args), "urls": 50})
        fill(server.url, warm, namespace="warm-up")  # loads every script the crawl uses
        _delete(client, list(client.scan_iter(match="*{warm-up}*", count=1000)))
        before = used_memory(client)
        filled = fill(server.url, args)
        total = used_memory(client) - before
        groups: dict[str, list[bytes]] = {}
        for key in client.scan_iter(count=1000):
            groups.setdefault(redis_store_of(key), []).append(key)
        parts: dict[str, int] = {}
        for store in STORES:
            held = used_memory(client)
            _delete(client, groups.get(store, []))
            parts[store] = held - used_memory(client)
        parts["other"] = total - sum(parts.values())
        client.close()
    return filled, total, parts


# -- SQLite -------------------------------------------------------------------------------


def sqlite_store_of(table: str) -> str:
    if table.startswith("simhash_recrawl_"):
        return "recrawl"
    if table.startswith("simhash_template"):
        return "templates"
    if table == "simhash_drops":
        return "drops"
    if table.startswith("simhash_"):
        return "index"
    return "other"


def sqlite_figures(args: argparse.Namespace) -> tuple[Filled, int, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="simhash-bench-") as workdir:
        path = Path(workdir) / "crawl.sqlite3"
        filled = fill(f"sqlite:///{path}", args)
        db = sqlite3.connect(path)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            total = path.stat().st_size
            tables = dict(db.execute("SELECT name, tbl_name FROM sqlite_schema"))
            parts = dict.fromkeys(STORES, 0)
            table_sizes = db.execute(
                "SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name"
            ).fetchall()
            print(f"SQLite tables at {args.urls:,} URLs, B per URL: pages, of them payload, unused")
            for name, size, payload, unused in table_sizes:
                store = sqlite_store_of(tables.get(name, name))
                parts[store] = parts.get(store, 0) + int(size)
                if size > 4096:
                    print(
                        f"  {name:<36}{size / args.urls:>8.1f}{payload / args.urls:>8.1f}"
                        f"{unused / args.urls:>8.1f}"
                    )
        finally:
            db.close()
    parts["other"] = total - sum(parts[s] for s in STORES)
    return filled, total, parts


# -- claim time -------------------------------------------------------------------------


def scheduled(urls: int, urls_per_host: int) -> Iterator[list[PageState]]:
    """States of ``urls`` URLs with 32 observations each, queued over a day (half due at
    noon), a thousand at a time, as the claim timings add them."""
    plain = patterns(recrawl_config(Settings()), False)
    rng = random.Random(7)
    batch: list[PageState] = []
    for fetch in crawl(urls, 0.0, urls_per_host):
        batch.append(
            dataclasses.replace(
                plain[fetch.serial % PATTERNS],
                url=fetch.url,
                fingerprint=fetch.fingerprint,
                next_due=rng.uniform(0, 86400.0),
            )
        )
        if len(batch) == 1000 or fetch.serial == urls - 1:
            yield batch
            batch = []


def claim_figures(args: argparse.Namespace) -> None:
    """Time ``claim(now, 100)`` on ``--claims`` scheduled URLs in 0.2.0's layout and
    today's, on one server, rounds interleaved; half the URLs are due."""
    from _recrawl_020 import OldRedisBackend

    from scrapy_simhash.recrawl.redisstore import RedisBackend

    with private_redis() as server:
        backends = {
            "0.2.0 (hash + sorted set)": OldRedisBackend(server.url, "old"),
            "this version (buckets)": RedisBackend(server.url, "new"),
        }
        for batch in scheduled(args.claims, args.urls_per_host):
            for backend in backends.values():
                backend.add(batch)
        times: dict[str, list[float]] = {name: [] for name in backends}
        for _ in range(args.claim_rounds):
            for name, backend in backends.items():
                started = time.perf_counter()
                claimed = backend.claim(43200.0, 100, 1e9)
                times[name].append(time.perf_counter() - started)
                check(len(claimed) == 100, f"{name}: claimed {len(claimed)}")
        server_ms = {name: server_time(server.url, backend) for name, backend in backends.items()}
        for backend in backends.values():
            backend.close()
    print(
        f"\nclaim of 100 due URLs among {args.claims:,} scheduled (half due), "
        f"{args.claim_rounds} rounds each, interleaved, one client round trip included:"
    )
    medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
    for name, t in times.items():
        print(
            f"  {name:<28} median {medians[name]:.2f} ms, mean {statistics.mean(t) * 1000:.2f} ms"
            f" (server {server_ms[name]:.2f} ms a claim)"
        )
    old, new = medians.values()
    print(f"  ratio this version / 0.2.0: {new / old:.2f}")


def server_time(url: str, backend: Any, claims: int = 50) -> float:
    """The server's time a ``claim(now, 100)`` (``INFO commandstats``, its script call),
    over ``claims`` more claims after the timed rounds, this layout's alone."""
    client = redis.Redis.from_url(url)
    client.config_resetstat()
    for _ in range(claims):
        check(len(backend.claim(43200.0, 100, 1e9)) == 100, "claimed fewer than 100")
    stats = client.info("commandstats")
    client.close()
    return (
        sum(stats.get(f"cmdstat_{cmd}", {}).get("usec", 0) for cmd in ("evalsha", "eval"))
        / claims
        / 1000
    )


def schedule_figures(args: argparse.Namespace) -> None:
    """The Redis recrawl store alone at ``--schedule`` URLs (each with 32 observations,
    queued over a day): bytes per URL and ``claim(now, 100)`` time, with the bucket count
    of a namespace created without ``SIMHASH_INDEX_EXPECTED_PAGES`` and with one sized for
    the URLs. Fills by the backend's batched ``add``, not as a crawl does (which the other
    figures do, at ~1.8 ms a URL), so ten million URLs take minutes."""
    from scrapy_simhash.recrawl.redisstore import RedisBackend, bucket_bits

    print(
        f"\nrecrawl state alone, Redis (used_memory growth), {args.schedule:,} URLs, "
        "32 observations each:"
    )
    for label, expected in (("default bucket count", None), ("sized buckets", args.schedule)):
        bits = bucket_bits(expected)
        with private_redis() as server:
            client = redis.Redis.from_url(server.url)
            backend = RedisBackend(server.url, "sched", bits=bits)
            backend.add([])  # the script loaded before the baseline
            backend.count()
            before, url_bytes = used_memory(client), 0
            for batch in scheduled(args.schedule, args.urls_per_host):
                url_bytes += sum(len(state.url.encode()) for state in batch)
                backend.add(batch)
            grown = used_memory(client) - before
            check(backend.count() == args.schedule, "every URL scheduled")
            times = []
            for _ in range(args.claim_rounds):
                started = time.perf_counter()
                claimed = backend.claim(43200.0, 100, 1e9)
                times.append(time.perf_counter() - started)
                check(len(claimed) == 100, f"claimed {len(claimed)}")
            backend.close()
            client.close()
        print(
            f"  {label:<22} 2^{bits} buckets (~{args.schedule >> bits} URLs each): "
            f"{grown / args.schedule:.1f} B per URL (URL text {url_bytes / args.schedule:.1f}); "
            f"claim(100) median {statistics.median(times) * 1000:.2f} ms"
        )


# -- report -------------------------------------------------------------------------------


def report(
    name: str, target: int, filled: Filled, total: int, parts: dict[str, int], urls: int
) -> None:
    items = {
        "index": filled.kept,
        "recrawl": filled.kept,
        "drops": filled.dropped,
        "templates": filled.hosts,
    }
    kinds = {"index": "kept URL", "recrawl": "kept URL", "drops": "drop", "templates": "host"}
    url_len = filled.url_bytes / urls
    kept_len = filled.kept_url_bytes / max(1, filled.kept)
    copy_len = (filled.url_bytes - filled.kept_url_bytes) / max(1, filled.dropped)
    print(
        f"\n{name}: {urls:,} URLs ({filled.kept:,} kept, {filled.dropped:,} dropped copies, "
        f"{filled.hosts:,} hosts), mean URL {url_len:.1f} B (kept {kept_len:.1f}, "
        f"copies {copy_len:.1f})"
    )
    print(f"  {'store':<28}{'B per URL':>10}{'B per item':>12}  item")
    for store in (*STORES, "other"):
        per_item = ""
        if items.get(store):
            per_item = f"{parts[store] / items[store]:>12,.1f}  {kinds[store]}"
        print(f"  {LABELS[store]:<28}{parts[store] / urls:>10.1f}{per_item}")
    per_url = total / urls
    verdict = "met" if per_url <= target else "missed"
    print(f"  {'total':<28}{per_url:>10.1f}  target <= {target} B per URL: {verdict}")
    print(
        f"  {'  of it, the URL text once':<28}{url_len:>10.1f}  the stores' other copies "
        f"and data: {per_url - url_len:.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--dropped", type=float, default=0.4, help="share of dropped copies")
    parser.add_argument("--urls-per-host", type=int, default=1000)
    parser.add_argument(
        "--validators",
        type=float,
        default=0.0,
        help="share of kept pages whose server sends ETag and Last-Modified",
    )
    parser.add_argument("--backends", default="redis,sqlite")
    parser.add_argument(
        "--claims",
        type=int,
        default=0,
        help="also time claims on this many scheduled URLs, old and new layout",
    )
    parser.add_argument("--claim-rounds", type=int, default=300)
    parser.add_argument(
        "--schedule",
        type=int,
        default=0,
        help="also measure the Redis recrawl store alone at this many URLs",
    )
    args = parser.parse_args()
    measures: dict[str, tuple[str, int, Callable[..., Any]]] = {
        "redis": ("Redis (used_memory growth)", 300, redis_figures),
        "sqlite": ("SQLite (file size after a checkpoint)", 250, sqlite_figures),
    }
    if args.claims:
        claim_figures(args)
    if args.schedule:
        schedule_figures(args)
    for backend in filter(None, args.backends.split(",")):
        name, target, measure = measures[backend]
        filled, total, parts = measure(args)
        report(name, target, filled, total, parts, args.urls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
