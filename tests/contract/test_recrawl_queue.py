"""The due queue under concurrent crawler processes: each URL is leased to one of them.

Every claimer is a separate OS process with its own connection (as separate Scrapy
processes would be), all started at once against a real Redis or a shared SQLite file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_simhash.recrawl import open_recrawl_store
from tests.conftest import Clock, backend_params, backend_url

_CLAIMER = """
import json, sys
from scrapy_simhash.recrawl import open_recrawl_store
url, now, batch, observe_every = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
claimed = []
with open_recrawl_store(url, namespace="q", clock=lambda: now) as store:
    store.count()  # connected
    print("ready", flush=True)
    sys.stdin.readline()  # start together: the test releases every process at once
    while batch_urls := [d.url for d in store.claim_due(batch, lease_secs=600)]:
        claimed += batch_urls
        for u in batch_urls:
            if observe_every and int(u.rsplit("/", 1)[1]) % observe_every == 0:
                store.observe(u, 1)  # this fetch completed: its lease ends
print(json.dumps(claimed))
"""

NOW = 1_000_000.0
URLS = [f"http://site/{i}" for i in range(300)]
PROCESSES = 3


def _claim_concurrently(url: str, now: float, observe_every: int) -> list[list[str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIMER, url, repr(now), "3", str(observe_every)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    results = []
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        assert proc.wait(timeout=120) == 0, err
        results.append(json.loads(out))
    return results


@pytest.fixture(params=backend_params(["sqlite", "redis"]))  # the stores processes can share
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def test_concurrent_claims_hand_out_each_url_once_and_leases_expire(queue_url: str) -> None:
    with open_recrawl_store(queue_url, namespace="q", clock=Clock(NOW)) as store:
        store.add(URLS)

    first = _claim_concurrently(queue_url, NOW, observe_every=3)
    claimed = [u for batch in first for u in batch]
    assert sorted(claimed) == sorted(URLS)  # every URL once: no duplicates, none lost
    if queue_url.startswith("redis"):
        # The processes really interleaved. (SQLite's busy handler backs off, so there one
        # process may legitimately win every round; the no-duplicate check is what counts.)
        assert sum(1 for batch in first if batch) >= 2

    # Nothing is due while the leases run.
    with open_recrawl_store(queue_url, namespace="q", clock=Clock(NOW + 599)) as store:
        assert store.claim_due(len(URLS)) == []

    # After expiry, the URLs whose fetch never completed come back, once each; the
    # observed ones wait for their computed next visit instead.
    second = [u for batch in _claim_concurrently(queue_url, NOW + 601, 0) for u in batch]
    unfinished = [u for u in URLS if int(u.rsplit("/", 1)[1]) % 3 != 0]
    assert sorted(second) == sorted(unfinished)
