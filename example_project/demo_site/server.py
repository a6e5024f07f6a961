"""The demo news site, rendered from templates and served on a loopback port.

``DemoSite`` knows every URL of the site and which of them carry the same story (its ground
truth), so the demo can show not only what the crawl dropped but whether that was right.
``round`` moves the site on between crawls: the live blog gains entries, the editor's letter
only shows a new timestamp and view count, everything else stays exactly as it was.

Run ``python3 example_project/demo_site/server.py`` to browse the site yourself.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if __package__ in (None, ""):  # run as a script: make ``demo_site`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from demo_site import templates as t
from demo_site.content import PAGES, Story, read_articles, read_live_entries, read_story

if TYPE_CHECKING:
    from typing import Self

#: Port the demo serves on when it is free (``--keep-index`` needs the same URLs every run).
DEFAULT_PORT = 8931

LIVE_PATH = "/live/storm-ingrid.html"
LETTER_PATH = "/opinion/editors-letter.html"
ABOUT_PATH = "/about.html"

#: Reader comments under the partner site's copies (the partner's own text, not the story's).
COMMENTS = {
    "en": ["Good news at last.", "About time, honestly.", "Does anyone know if parking changes?"],
    "zh": ["支持！", "希望早点推广到我们区。", "写得很清楚，谢谢。"],
}


@dataclass(frozen=True)
class Page:
    status: int
    content_type: str
    body: bytes


@dataclass
class DemoSite:
    """The site's content and URL scheme; ``round`` (1, 2, ...) is the state of the world."""

    round: int = 1
    articles: list[Story] = field(default_factory=read_articles)

    def __post_init__(self) -> None:
        self.by_slug = {story.slug: story for story in self.articles}
        self.live = read_story(PAGES / "live-storm.txt")
        self.letter = read_story(PAGES / "editors-letter.txt")
        self.about = read_story(PAGES / "about.txt")

    # -- URL scheme and ground truth ----------------------------------------------------

    @staticmethod
    def article_path(story: Story) -> str:
        return f"/news/{story.slug}.html"

    def session_suffix(self, story: Story) -> str:
        """A session id in the URL, as old CMSs add for cookie-less visitors."""
        token = hashlib.sha1(f"{story.slug}:{self.round}".encode()).hexdigest()[:16]
        return f"?sid={token}" if story.lang == "zh" else f";jsessionid={token.upper()}"

    def variants(self, story: Story) -> dict[str, str]:
        """Every other URL that shows this article's text, by kind."""
        path = self.article_path(story)
        found = {
            "print": f"/print{path}",
            "amp": f"/amp{path}",
            "tracking": f"{path}?utm_source=share&utm_medium=social&utm_campaign=spring",
            "session": f"{path}{self.session_suffix(story)}",
        }
        if story.syndicated:
            found["partner"] = f"/partner/story/{story.slug}/"
        return found

    def clusters(self) -> dict[str, dict[str, str]]:
        """Ground truth: each original article path and its copies (kind -> path)."""
        return {self.article_path(s): self.variants(s) for s in self.articles}

    def sections(self) -> dict[str, list[Story]]:
        return {k: [s for s in self.articles if s.section == k] for k in t.SECTIONS}

    def tags(self) -> dict[str, list[Story]]:
        """Tag pages worth having: two or more stories, and a set no other listing shows.

        Two listings with the same stories *are* duplicates of each other; the demo keeps
        its listings distinct so that every duplicate it reports is a copy of an article.
        """
        by_tag: dict[str, list[Story]] = {}
        for story in self.articles:
            for tag in story.tags:
                by_tag.setdefault(tag, []).append(story)
        seen = {tuple(s.slug for s in stories) for stories in self.sections().values()}
        pages = {}
        for tag, stories in sorted(by_tag.items()):
            key = tuple(s.slug for s in stories)
            if len(stories) >= 2 and key not in seen:
                seen.add(key)
                pages[tag] = stories
        return pages

    def listing_paths(self) -> list[str]:
        return [
            "/",
            *(f"/section/{k}/" for k, v in self.sections().items() if v),
            *(f"/tag/{k}/" for k in self.tags()),
            "/partner/",
        ]

    def changing_pages(self) -> dict[str, str]:
        """The pages whose content depends on ``round``, and how."""
        return {
            LIVE_PATH: "gains new entries every round",
            LETTER_PATH: "only its timestamp and view counter change",
            ABOUT_PATH: "never changes",
        }

    # -- rendering ------------------------------------------------------------------------

    def render(self, target: str) -> Page:
        """Render the page at ``target`` (path plus query, as sent by the client)."""
        parts = urlsplit(target)
        path, _, params = unquote(parts.path).partition(";")  # ;jsessionid= is no resource
        visit = "session" if "jsessionid=" in params or "sid=" in parts.query else ""
        if "utm_" in parts.query:
            visit = "tracking"
        html = self._route(path, visit)
        if html is None:
            return Page(404, "text/html; charset=utf-8", b"<h1>Not found</h1>")
        if path.startswith("/print/") and 'lang="zh"' in html:
            # Like many older Chinese sites, the print view is GB18030 and says so only in
            # a <meta> tag, not in the Content-Type header.
            return Page(200, "text/html", html.encode("gb18030"))
        return Page(200, "text/html; charset=utf-8", html.encode("utf-8"))

    def _route(self, path: str, visit: str) -> str | None:
        if path == "/":
            return self._home()
        if path.startswith("/section/"):
            return self._listing_page("section", path, self.sections(), t.SECTIONS)
        if path.startswith("/tag/"):
            return self._listing_page("tag", path, self.tags(), {})
        if path == LIVE_PATH:
            return self._live()
        if path == LETTER_PATH:
            return self._letter()
        if path == ABOUT_PATH:
            partner = f'<p>Partners: <a href="/partner/">{t.PARTNER_NAME}</a></p>'
            return t.site_page(
                title=self.about.title, body=t.article_body(self.about, extra=partner)
            )
        if path == "/partner/":
            return t.partner_home([s for s in self.articles if s.syndicated])
        if path.startswith("/partner/story/"):
            return self._partner(path.removeprefix("/partner/story/").strip("/"))
        for prefix in ("/print", "/amp", ""):
            if path.startswith(f"{prefix}/news/") and path.endswith(".html"):
                story = self.by_slug.get(path.removeprefix(f"{prefix}/news/")[:-5])
                if story is None:
                    return None
                if prefix == "/print":
                    charset = "gb18030" if story.lang == "zh" else "utf-8"
                    return t.print_page(story, self.article_path(story), charset)
                if prefix == "/amp":
                    return t.amp_page(story, self.article_path(story))
                return self._article(story, visit)
        return None

    def _sidebar(self, exclude: str = "") -> str:
        return t.most_read([s for s in self.articles if s.slug != exclude][:5])

    def _home(self) -> str:
        english = [s for s in self.articles if s.lang == "en"]
        chinese = [s for s in self.articles if s.lang == "zh"]
        extra = (
            f'<section class="live"><h2><a href="{LIVE_PATH}">Live: {t.e(self.live.title)}</a>'
            f'</h2></section><p><a href="{LETTER_PATH}">{t.e(self.letter.title)}</a></p>'
        )
        tags = t._links((f"/tag/{k}/", f"#{k}") for k in self.tags())
        body = (
            extra
            + t.listing_body("Latest news", "Today's stories from the city and the coast.", english)
            + t.listing_body("中文新闻", "本报中文记者的最新报道。", chinese)
            + f'<p class="tags">Topics: {tags}</p>'
        )
        return t.site_page(title="Today's news", body=body, sidebar=self._sidebar())

    def _listing_page(
        self, kind: str, path: str, pages: dict[str, list[Story]], names: dict[str, str]
    ) -> str | None:
        key = path.removeprefix(f"/{kind}/").strip("/")
        stories = pages.get(key)
        if not stories:
            return None
        heading = names.get(key, f"Stories tagged {key}")
        intro = f"All {len(stories)} stories in {heading}."
        return t.site_page(
            title=heading,
            body=t.listing_body(heading, intro, stories),
            lang=stories[0].lang,
            sidebar=self._sidebar(),
        )

    def _article(self, story: Story, visit: str) -> str:
        """The canonical article page; ``?utm_...`` and session visits get other chrome.

        Copies are linked from here only (print, AMP, share, permalink, partner), so a
        breadth-first crawl always meets an original before its copies.
        """
        path = self.article_path(story)
        links = [
            (f"/print{path}", "Print"),
            (f"/amp{path}", "AMP version"),
            (self.variants(story)["tracking"], "Share link"),
            (self.variants(story)["session"], "Permalink"),
        ]
        if story.syndicated:
            links.append((f"/partner/story/{story.slug}/", f"Also in the {t.PARTNER_NAME}"))
        tags = t._links((f"/tag/{x}/", f"#{x}") for x in story.tags if x in self.tags())
        banner = {
            "tracking": '<div class="promo">Welcome! Subscribe to the morning briefing →</div>',
            "session": '<div class="session">Welcome back. Your session expires in 30 min.</div>',
        }.get(visit, "")
        sidebar = self._sidebar(exclude=story.slug)
        if banner:  # personalised visits see another "most read" box
            sidebar = t.most_read(list(reversed(self.articles))[:4])
        return t.site_page(
            title=story.title,
            body=t.article_body(story, tools=t._links(links, " | ") + f" {tags}"),
            lang=story.lang,
            og_type="article",
            canonical=path,
            amp=f"/amp{path}",
            sidebar=sidebar,
            banner=banner,
        )

    def _partner(self, slug: str) -> str | None:
        story = self.by_slug.get(slug)
        if story is None or not story.syndicated:
            return None
        trending = [s for s in self.articles if s.syndicated and s.slug != slug][:3]
        return t.partner_page(story, self.article_path(story), trending, COMMENTS[story.lang])

    def _live(self) -> str:
        entries = [x for x in read_live_entries(self.live) if x.round <= self.round]
        return t.site_page(
            title=self.live.title,
            body=t.live_body(self.live, entries),
            og_type="article",
            sidebar=self._sidebar(),
        )

    def _letter(self) -> str:
        """Same words every round; only the "updated" line and the view counter move on.

        The line is part of the article text, as on many sites: the main text really does
        differ between rounds, and the fingerprint must not care.
        """
        views = 1204 + 2817 * (self.round - 1)
        minute = (7 + 13 * self.round) % 60
        line = f"Updated March {self.round + 1}, 09:{minute:02d}. Read {views:,} times."
        story = replace(self.letter, paragraphs=(line, *self.letter.paragraphs))
        return t.site_page(
            title=story.title,
            body=t.article_body(story),
            og_type="article",
            sidebar=self._sidebar(),
        )


class _Handler(BaseHTTPRequestHandler):
    site: DemoSite  # set on the per-server subclass

    def do_GET(self) -> None:
        page = self.site.render(self.path)
        self.send_response(page.status)
        self.send_header("Content-Type", page.content_type)
        self.send_header("Content-Length", str(len(page.body)))
        self.end_headers()
        self.wfile.write(page.body)

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: the crawl's own log says what was fetched."""


class DemoServer:
    """Serve a ``DemoSite`` from a thread on a loopback port (a context manager).

    The index keys pages by URL, so a stable port lets ``--keep-index`` runs find what the
    previous run stored; if ``port`` is taken the server falls back to a free one.
    """

    def __init__(self, site: DemoSite | None = None, port: int = 0) -> None:
        self.site = site or DemoSite()
        handler = type("Handler", (_Handler,), {"site": self.site})
        try:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError:
            if port == 0:
                raise
            self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Serve the site in the foreground (``--round N`` shows a later state)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--round", type=int, default=1)
    args = parser.parse_args()
    server = DemoServer(DemoSite(round=args.round), port=args.port).start()
    print(f"The Lantern demo site (round {args.round}) at {server.url} — Ctrl-C to stop")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
