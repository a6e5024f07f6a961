"""The command line's ``dedup`` and a crawl judge the same pages alike.

One folder (a host's ordinary pages, a copy of one with an edit, the 20 articles of the
template site of :mod:`tests.crawl.test_templates` in a random order and a print copy of one) is
judged by ``scrapy simhash dedup`` and fetched, file by file in the same order, by a crawl:
every page one keeps the other keeps, and every page one drops the other drops as the copy
of the same page.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from tests.crawl.test_templates import article
from tests.scrapy_inprocess import harness, random_story


def _site(root: Path) -> list[Path]:
    """The host's files, named so that sorting them gives the order they are fetched in."""
    host = root / "news.example"
    host.mkdir()
    bodies: list[tuple[str, bytes]] = [(f"home-{n}", random_story(4000 + n)) for n in range(3)]
    edited = random_story(4001).replace(b"</body>", b"<p>Updated at noon.</p></body>")
    bodies.append(("home-1-again", edited))
    order = list(range(20))
    random.Random(11).shuffle(order)
    bodies += [(f"story-{n}", article(n)) for n in order]
    bodies.append(("story-3-print", article(3, stamp="08:05")))
    files = []
    for position, (name, body) in enumerate(bodies):
        path = host / f"{position:03d}-{name}.html"
        path.write_bytes(body)
        files.append(path)
    return files


def test_dedup_and_the_crawl_make_the_same_decisions(tmp_path: Path) -> None:
    files = _site(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "scrapy_simhash", "dedup", "--json", "--all", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    by_dedup: dict[str, str | None] = {}
    for group in report["groups"]:
        leader = Path(group["members"][0]["path"]).name
        for member in group["members"]:
            name = Path(member["path"]).name
            by_dedup[name] = None if name == leader else leader
    by_crawl: dict[str, str | None] = {}
    with harness() as crawl:
        for path in files:
            _, meta = crawl.fetch(f"http://news.example/{path.name}", path.read_bytes())
            holder = meta["duplicate_of"]
            by_crawl[path.name] = None if holder is None else holder.rsplit("/", 1)[-1]
    judged = {name: by_crawl[name] for name in by_dedup}
    assert judged == by_dedup
    # What they agree on is the right answer: the edited home page and the print copy are
    # the copies, no article is.
    assert {name for name, holder in by_crawl.items() if holder} == {
        files[3].name,
        files[-1].name,
    }
