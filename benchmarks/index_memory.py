"""Redis memory per indexed page (INFO used_memory delta), beside datasketch MinHashLSH.

    python3 benchmarks/index_memory.py [--sizes 100000,1000000] [--lsh 10000]

k=3, 64-bit fingerprints, synthetic random fingerprints and URL-like keys (~54 bytes), each
run on a fresh private redis-server, the index opened with expected_size = pages. "without
keys" subtracts the bytes of the key strings, which the index stores once per page (so
matches can name the page). Client buffers and the script cache are not counted.
"""

from __future__ import annotations

import argparse
import time

import redis
from _index_bench import pages, private_redis

from scrapy_simhash.index import open_index
from scrapy_simhash.index.redis.codec import SCRIPT


def used_memory(client: redis.Redis) -> int:
    """Server memory minus client buffers (the bulk load's pipelined replies are not index)."""
    info = client.info("memory")
    return int(info["used_memory"]) - int(info.get("mem_clients_normal", 0))


def breakdown(client: redis.Redis, prefix: bytes, pages: int) -> dict[str, float]:
    """MEMORY USAGE per page by key kind (b = band groups, e = entries, u = key texts)."""
    sizes: dict[str, float] = {}
    names = list(client.scan_iter(match=prefix + b"*", count=5000))
    for start in range(0, len(names), 5000):
        pipe = client.pipeline(transaction=False)
        for name in names[start : start + 5000]:
            pipe.memory_usage(name, samples=0)
        for name, size in zip(names[start : start + 5000], pipe.execute(), strict=True):
            kind = chr(name[len(prefix)])
            sizes[kind] = sizes.get(kind, 0.0) + size / pages
    return sizes


def simhash_index(size: int, tables: int, batch: int = 2000) -> dict[str, float]:
    with private_redis() as server:
        client = redis.Redis.from_url(server.url)
        with open_index(server.url, max_distance=3, expected_size=size, tables=tables) as index:
            index.observe("warm-up", 0)  # the script cache is not per page
            index.remove("warm-up")
            before = used_memory(client)
            script = client.register_script(SCRIPT)
            codec = index.backend._codec  # bulk load: the same script call, pipelined
            key_bytes = 0
            started = time.perf_counter()
            pipe = client.pipeline(transaction=False)
            for n, (key, fp) in enumerate(pages(size), 1):
                key_bytes += len(key)
                script(keys=[codec.meta], args=codec.args("observe", fp, key), client=pipe)
                if n % batch == 0:
                    pipe.execute()
            pipe.execute()
            elapsed = time.perf_counter() - started
            stored = len(index)
            delta = used_memory(client) - before
            layout = index.layout.name
            kinds = breakdown(client, index.backend._codec.prefix, stored)
        client.close()
    return {
        "pages": size,
        "stored": stored,
        "layout": layout,
        "bytes_per_page": delta / stored,
        "bytes_per_page_without_keys": (delta - key_bytes) / stored,
        "load_secs": elapsed,
        "kinds": kinds,
    }


def datasketch_lsh(size: int) -> dict[str, float]:
    from datasketch import MinHash, MinHashLSH

    with private_redis() as server:
        client = redis.Redis.from_url(server.url)
        before = used_memory(client)
        lsh = MinHashLSH(
            threshold=0.9,
            num_perm=64,
            storage_config={
                "type": "redis",
                "basename": b"bench",
                "redis": {"host": "127.0.0.1", "port": server.port},
            },
        )
        started = time.perf_counter()
        with lsh.insertion_session(buffer_size=1000) as session:
            for key, fp in pages(size):
                minhash = MinHash(num_perm=64, seed=1)
                minhash.update_batch([fp.to_bytes(8, "big")[i : i + 2] for i in range(0, 8, 2)])
                session.insert(key, minhash)
        elapsed = time.perf_counter() - started
        delta = used_memory(client) - before
        client.close()
    return {"pages": size, "bytes_per_page": delta / size, "load_secs": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--lsh", type=int, default=10000, help="pages for datasketch (slow)")
    parser.add_argument("--tables", type=int, default=4, help="4 = basic k+1 layout")
    args = parser.parse_args()
    lsh = datasketch_lsh(args.lsh)
    print(
        f"datasketch MinHashLSH (redis, 64 perm, b/r auto) at {lsh['pages']:,} pages: "
        f"{lsh['bytes_per_page']:.0f} B/page ({lsh['load_secs']:.1f}s)"
    )
    print(
        f"{'pages':>10} {'layout':>6} {'B/page':>8} {'B/page w/o keys':>16} "
        f"{'vs LSH':>7} {'target<=100':>11} {'load s':>7}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        r = simhash_index(size, args.tables)
        print(
            f"{r['pages']:>10,} {r['layout']:>6} {r['bytes_per_page']:>8.1f} "
            f"{r['bytes_per_page_without_keys']:>16.1f} "
            f"{r['bytes_per_page'] / lsh['bytes_per_page']:>7.2f} "
            f"{'met' if r['bytes_per_page_without_keys'] <= 100 else 'missed':>11} "
            f"{r['load_secs']:>7.1f}"
        )
        print(
            "           MEMORY USAGE per page by kind: "
            + ", ".join(f"{kind} {value:.1f}" for kind, value in sorted(r["kinds"].items()))
            + "  (b band groups, e entry records, u key texts, m meta)"
        )


if __name__ == "__main__":
    main()
