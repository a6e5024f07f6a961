"""The compiled and the interpreted extraction agree on every page of the shared corpus.

Run by hand (not by pytest) from the repository root:

    python3 benchmarks/compiled_paths.py [--pages-only | --cases-only]

An install with a C compiler walks and reads pages out in ``scrapy_simhash/text/_compiled``
and counts and hashes them in ``scrapy_simhash/_hashes``;
one without runs the interpreted code. Both must give every page the same fingerprint, or
an index filled by one kind of install stops matching the copies the other sees. The test
suite holds the two paths to it on its own corpus and on random trees; this runs both over
every page of ``shared/data/pages`` and every file of ``shared/data/pairs/cases`` and prints
how many pages differ in any field of the page's record (texts, notes, fingerprint,
signature's evidence, signature, the line hashes of the template memory), with the first
few that do.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pages import data_dir, load_pages
from scrapy_simhash.confirm import Signer
from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter
from scrapy_simhash.text import compiled

#: One key for both paths' signatures.
_SIGNER = Signer(0x5EED_5EED_5EED_5EED)


def _record(fingerprinter: Fingerprinter, body: bytes) -> tuple[object, ...]:
    page = fingerprinter.fingerprint_page(body)
    evidence = page.evidence if page.fingerprint is not None else None
    signature = _SIGNER.sign(evidence) if evidence is not None else None
    return (
        page.fingerprint,
        page.exact,
        page.text,
        page.page_text,
        page.visible,
        page.title,
        page.notes,
        evidence,
        signature,
        list(page.line_hashes),
        list(page.main_line_hashes),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages-only", action="store_true")
    parser.add_argument("--cases-only", action="store_true")
    args = parser.parse_args()
    if not compiled.AVAILABLE:
        print("the compiled extension is not built here: pip install -e . with a C compiler")
        return 1
    corpora: dict[str, list[tuple[str, bytes]]] = {}
    if not args.cases_only:
        corpora["pages"] = [(page.id, page.body()) for page in load_pages()]
    if not args.pages_only:
        files = sorted((data_dir() / "pairs" / "cases").glob("*.html.gz"))
        corpora["cases"] = [(path.name, gzip.decompress(path.read_bytes())) for path in files]
    fingerprinter = Fingerprinter(FingerprintConfig())
    differing = 0
    for label, bodies in corpora.items():
        differ = []
        for name, body in bodies:
            fast = _record(fingerprinter, body)
            with compiled.interpreted():
                slow = _record(fingerprinter, body)
            if fast != slow:
                differ.append(name)
        differing += len(differ)
        print(f"{label}: {len(bodies)} files, {len(differ)} differ {differ[:5] or ''}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
