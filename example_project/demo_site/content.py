"""The demo site's stories, read from the plain-text files in ``pages/``.

Keeping the words in text files (one story per file: ``key: value`` headers, a blank line,
then paragraphs separated by blank lines) lets anyone edit the demo's articles without
touching the templates, and keeps the templates short enough to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PAGES = Path(__file__).resolve().parent / "pages"


@dataclass(frozen=True)
class Story:
    """One story: an article, the live blog, the editor's letter or the about page."""

    slug: str
    title: str
    summary: str
    paragraphs: tuple[str, ...]
    section: str = ""
    tags: tuple[str, ...] = ()
    date: str = ""
    author: str = ""
    syndicated: bool = False

    @property
    def lang(self) -> str:
        """``zh`` for the Chinese section, ``en`` otherwise (sets ``<html lang>``)."""
        return "zh" if self.section == "zh" else "en"


@dataclass(frozen=True)
class LiveEntry:
    """One timestamped entry of the live blog; ``round`` is the first round that shows it."""

    round: int
    time: str
    text: str


def read_story(path: Path) -> Story:
    """Parse one story file."""
    head, _, body = path.read_text(encoding="utf-8").partition("\n\n")
    fields: dict[str, str] = {}
    for line in head.splitlines():
        name, _, value = line.partition(":")
        fields[name.strip()] = value.strip()
    return Story(
        slug=path.stem,
        title=fields["title"],
        summary=fields.get("summary", ""),
        paragraphs=tuple(p.strip() for p in body.split("\n\n") if p.strip()),
        section=fields.get("section", ""),
        tags=tuple(t.strip() for t in fields.get("tags", "").split(",") if t.strip()),
        date=fields.get("date", ""),
        author=fields.get("author", ""),
        syndicated=fields.get("partner", "").lower() == "yes",
    )


def read_articles(pages: Path = PAGES) -> list[Story]:
    """All articles, newest first (then by slug, so the order never depends on the disk)."""
    stories = [read_story(path) for path in sorted((pages / "articles").glob("*.txt"))]
    return sorted(stories, key=lambda s: (s.date, s.slug), reverse=True)


def read_live_entries(story: Story) -> list[LiveEntry]:
    """Split the live blog's paragraphs into entries headed ``[round] HH:MM``."""
    entries = []
    for paragraph in story.paragraphs:
        header, _, text = paragraph.partition("\n")
        round_text, _, time = header.strip().partition("]")
        entries.append(LiveEntry(int(round_text.lstrip("[")), time.strip(), text.strip()))
    return entries
