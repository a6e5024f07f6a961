"""The judge alone makes a crawl's decisions: the downloader middleware decides nothing.

Pages fed to :class:`scrapy_simhash.judge.Judge` without Scrapy, over a real in-memory
index and either template memory (the crawl's store-backed glue or the command line's
memory of one process), get the verdict a crawl puts in ``meta["simhash"]``, page for
page, and the facts the crawl counts as stats.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash.fingerprint import Fingerprinter, PageFingerprint
from scrapy_simhash.glue.templates import TemplateMemory
from scrapy_simhash.index import open_async_index
from scrapy_simhash.judge import Judge, LocalTemplates, Templates
from scrapy_simhash.settings import index_kwargs
from scrapy_simhash.storage import open_template_store
from scrapy_simhash.template import LocalMemory, host_of
from scrapy_simhash.verdict import DUPLICATE, UNCHECKED, UNIQUE, Answer, Unguarded, VerdictStep
from tests.crawl.test_dedup_agrees_with_crawl import _site
from tests.scrapy_inprocess import harness, random_story

FINGERPRINTER = Fingerprinter()
#: The stats a crawl counts from a verdict's facts, by the fact's name.
FACT_STATS = {
    "exact": "exact",
    "no_text": "no_text",
    "template_set_aside": "template/applied",
    "template_distinct": "template/kept_distinct",
}


def _pages(root: Path) -> list[tuple[str, bytes]]:
    """The folder of the dedup test, then a short page (an exact digest), its copy, and a
    page with no text at all."""
    pages = [(f"http://news.example/{path.name}", path.read_bytes()) for path in _site(root)]
    short = b"<html><title>Closed</title><body><p>The ferry does not run today.</p></body></html>"
    pages += [("http://news.example/closed", short), ("http://news.example/closed?s=1", short)]
    pages.append(("http://news.example/empty", b"<html><body></body></html>"))
    return pages


def _templates(kind: str, namespace: str) -> Templates:
    if kind == "local":
        return LocalTemplates(LocalMemory(FINGERPRINTER), host_of)
    memory = TemplateMemory(
        lambda: open_template_store("memory://", namespace),
        FINGERPRINTER,
        count=lambda name: None,
        timeout_secs=5.0,
    )
    return memory


async def _judged(pages: list[tuple[str, bytes]], kind: str) -> list[Any]:
    namespace = f"judge-alone-{kind}"
    index = await open_async_index(
        "memory://",
        **index_kwargs(
            {},
            namespace=namespace,
            bits=FINGERPRINTER.bits,
            scheme=FINGERPRINTER.scheme,
        ),
    )
    templates = _templates(kind, namespace)
    step = VerdictStep(Unguarded(index), None, bits=FINGERPRINTER.bits, change_distance=3)
    judge = Judge(step, templates)
    verdicts = []
    for url, body in pages:
        page: PageFingerprint = FINGERPRINTER.fingerprint_page(body)
        verdicts.append(await judge.page(url, url, page, Answer(200)))
    if isinstance(templates, TemplateMemory):
        await templates.aclose()
    await index.close()
    return verdicts


@pytest.mark.parametrize("kind", ["store", "local"])
def test_the_judge_alone_decides_every_page_as_the_crawl_does(tmp_path: Path, kind: str) -> None:
    pages = _pages(tmp_path)
    verdicts = asyncio.run(_judged(pages, kind))
    with harness() as crawl:
        metas = [crawl.fetch(url, body)[1] for url, body in pages]
        stats = {
            name: crawl.stat(name) or 0 for name in [*FACT_STATS.values(), "unique", "duplicate"]
        }
    assert [dict(verdict) for verdict in verdicts] == metas
    facts: Counter[str] = Counter()
    for verdict in verdicts:
        facts[verdict.outcome] += 1
        for fact, stat in FACT_STATS.items():
            facts[stat] += getattr(verdict, fact)
    assert {name: facts[name] for name in stats} == stats
    # The pages carry every kind of fact, so the comparison above says something.
    assert all(stats[name] for name in ("exact", "no_text", "template/applied", "duplicate"))


def test_url_rules_hear_of_every_page_the_index_judged_and_nothing_else() -> None:
    heard: list[tuple[str, str, int, str | None]] = []

    async def url_rules(own: str, key: str, fingerprint: int, duplicate_of: str | None) -> None:
        heard.append((own, key, fingerprint, duplicate_of))

    async def scenario() -> list[str]:
        index = await open_async_index("memory://", namespace="judge-rules", max_distance=3)
        judge = Judge(VerdictStep(Unguarded(index), None, bits=64, change_distance=3))
        body = random_story(7)
        page = FINGERPRINTER.fingerprint_page(body)
        outcomes = []
        for url, read in (
            ("http://a.example/1", page),
            ("http://a.example/1?s=1", page),
            ("http://a.example/empty", FINGERPRINTER.fingerprint_page(b"")),
            ("http://a.example/broken", None),
        ):
            verdict = await judge.page(
                url,
                url,
                read,
                None,
                url_rules=url_rules,
                reason="fingerprint failed" if read is None else None,
            )
            outcomes.append(verdict.outcome)
        await index.close()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert outcomes == [UNIQUE, DUPLICATE, UNCHECKED, UNCHECKED]
    fingerprint = FINGERPRINTER.fingerprint_page(random_story(7)).fingerprint
    assert heard == [
        ("http://a.example/1", "http://a.example/1", fingerprint, None),
        ("http://a.example/1?s=1", "http://a.example/1?s=1", fingerprint, "http://a.example/1"),
    ]
