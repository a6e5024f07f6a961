"""Access to the shared corpus of real pages (``../shared/data/pages``) for benchmarks.

The corpus is never part of the repository; benchmarks say so and stop when it is absent.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|\w+")


@dataclass(frozen=True)
class Page:
    id: str
    source: str
    domain: str
    lang: str
    charset: str | None
    page_type: str | None
    path: Path
    main_path: Path | None

    def body(self) -> bytes:
        return gzip.decompress(self.path.read_bytes())

    def main_text(self) -> str | None:
        if self.main_path is None:
            return None
        return gzip.decompress(self.main_path.read_bytes()).decode("utf-8", "replace")


def data_dir() -> Path:
    return Path(os.environ.get("SIMHASH_BENCH_DATA", DEFAULT_DATA))


def load_pages() -> list[Page]:
    """The manifest's pages, or exit with a message when the corpus is not there."""
    root = data_dir()
    manifest = root / "pages" / "manifest.jsonl"
    if not manifest.exists():
        sys.exit(
            f"page corpus not found at {root} (set SIMHASH_BENCH_DATA to the folder holding "
            "pages/manifest.jsonl); this benchmark needs real pages and has nothing to measure"
        )
    pages = []
    for line in manifest.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        main = row.get("main_text_path")
        pages.append(
            Page(
                id=row["id"],
                source=row["source"],
                domain=row.get("domain") or row["id"],
                lang=row.get("lang") or "und",
                charset=row.get("charset_hint"),
                page_type=row.get("page_type"),
                path=root / row["path"],
                main_path=root / main if main else None,
            )
        )
    return pages


def tokens(text: str) -> Counter[str]:
    """Bag of tokens for overlap scores: CJK characters one by one, other words whole."""
    return Counter(_TOKEN.findall(text.lower()))


def overlap(predicted: str, truth: str) -> tuple[float, float, float]:
    """Token-level precision, recall and F1 of ``predicted`` against ``truth``."""
    got, want = tokens(predicted), tokens(truth)
    common = sum((got & want).values())
    precision = common / sum(got.values()) if got else 0.0
    recall = common / sum(want.values()) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1
