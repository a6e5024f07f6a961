"""HTML templates of the demo site: the main site, its print and AMP views, and a partner site.

Each template wraps the same story text in deliberately different surroundings (navigation,
sidebars, banners, comments, scripts), because that is what defeats byte- or URL-level
duplicate detection on real news sites while the main text stays the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from demo_site.content import LiveEntry, Story

SITE_NAME = "The Lantern"
PARTNER_NAME = "Harbour Post"

SECTIONS = {
    "city": "City",
    "science": "Science",
    "business": "Business",
    "culture": "Culture",
    "sport": "Sport",
    "zh": "中文",
}


_STYLE = """
body{font-family:Georgia,serif;margin:0;color:#222}
header.site{background:#12263a;color:#fff;padding:12px 24px}
header.site a{color:#fde68a;margin-right:14px}
main{display:flex;gap:32px;padding:24px}
article{max-width:680px}
aside{width:260px;font-size:14px;border-left:1px solid #ddd;padding-left:16px}
footer{font-size:12px;color:#666;padding:24px;border-top:1px solid #ddd}
"""


def e(text: str) -> str:
    """Escape text for HTML (short name: the templates use it on every value)."""
    return escape(text, quote=True)


def paragraphs(story: Story) -> str:
    return "\n".join(f"<p>{e(p)}</p>" for p in story.paragraphs)


#: The partner's house style: American spelling.
SPELLING = {
    "harbour": "harbor",
    "centre": "center",
    "organisers": "organizers",
    "kilometre": "kilometer",
}


def retypeset(text: str) -> str:
    """What the partner's CMS does to a copy: house spelling and curly apostrophes.

    Copies are rarely byte-identical in their main text; the index matches near, not equal,
    fingerprints because of edits like these.
    """
    for british, american in SPELLING.items():
        text = text.replace(british, american)
    return text.replace("'", "\u2019")


def partner_paragraphs(story: Story) -> str:
    return "\n".join(f"<p>{e(retypeset(p))}</p>" for p in story.paragraphs)


def _links(items: Iterable[tuple[str, str]], sep: str = "\n") -> str:
    return sep.join(f'<a href="{e(href)}">{e(text)}</a>' for href, text in items)


def site_page(
    *,
    title: str,
    body: str,
    lang: str = "en",
    og_type: str = "website",
    canonical: str = "",
    amp: str = "",
    sidebar: str = "",
    banner: str = "",
) -> str:
    """The main site's chrome: header with sections, optional banner, sidebar and footer."""
    nav = _links([("/", "Home"), *((f"/section/{k}/", v) for k, v in SECTIONS.items())])
    head_links = ""
    if canonical:
        head_links += f'<link rel="canonical" href="{e(canonical)}">\n'
    if amp:
        head_links += f'<link rel="amphtml" href="{e(amp)}">\n'
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<title>{e(title)} | {SITE_NAME}</title>
<meta property="og:type" content="{og_type}">
<meta property="og:title" content="{e(title)}">
{head_links}<style>{_STYLE}</style>
<script>window.dataLayer=window.dataLayer||[];dataLayer.push({{"page":"{e(title)}"}});</script>
</head>
<body>
<header class="site"><strong>{SITE_NAME}</strong>
<nav>{nav}</nav>
<form action="/search"><input name="q" placeholder="Search the archive"></form>
</header>
{banner}
<main>
{body}
<aside>{sidebar}</aside>
</main>
<footer>
<p>&copy; 2026 {SITE_NAME}, an independent newsroom. <a href="/about.html">About us</a>.
Stories marked as syndicated are republished by our partner, the {PARTNER_NAME}.</p>
<p>Cookies help us count readers. By continuing you accept our cookie policy.</p>
</footer>
</body>
</html>
"""


def most_read(stories: list[Story]) -> str:
    """The "Most read" sidebar box: boilerplate that differs from page to page."""
    items = "".join(f'<li><a href="/news/{s.slug}.html">{e(s.title)}</a></li>' for s in stories)
    return (
        f"<h3>Most read</h3><ol>{items}</ol><h3>Newsletter</h3><p>The morning briefing, free.</p>"
    )


def byline(story: Story) -> str:
    return f'<p class="byline">By {e(story.author)} · {e(story.date)}</p>' if story.author else ""


def article_body(story: Story, tools: str = "", extra: str = "") -> str:
    standfirst = f'<p class="standfirst"><strong>{e(story.summary)}</strong></p>'
    return f"""<article>
<h1>{e(story.title)}</h1>
{byline(story)}
{standfirst}
{paragraphs(story)}
{extra}
<div class="tools">{tools}</div>
</article>"""


def print_page(story: Story, url: str, charset: str = "utf-8") -> str:
    """The print view: no navigation, no sidebar, a "printed from" line and a bare footer."""
    return f"""<!DOCTYPE html>
<html lang="{story.lang}">
<head><meta http-equiv="Content-Type" content="text/html; charset={charset}"><title>{e(story.title)}</title>
<meta property="og:type" content="article">
<link rel="canonical" href="{e(url)}">
<style>body{{font:12pt Times,serif;margin:2cm}} .noprint{{display:none}}</style></head>
<body onload="window.print()">
<header class="printhead">{SITE_NAME} · printed from {e(url)}</header>
<h1>{e(story.title)}</h1>
<div class="meta">{e(story.author)}, {e(story.date)}</div>
<p><b>{e(story.summary)}</b></p>
{paragraphs(story)}
<footer class="printfoot">All rights reserved. Reproduction requires permission.</footer>
</body>
</html>
"""


def amp_page(story: Story, canonical: str) -> str:
    """The AMP view: its own boilerplate, amp-* elements and a compact header."""
    return f"""<!doctype html>
<html ⚡ lang="{story.lang}">
<head>
<meta charset="utf-8">
<title>{e(story.title)}</title>
<meta property="og:type" content="article">
<link rel="canonical" href="{e(canonical)}">
<meta name="viewport" content="width=device-width">
<script async src="https://cdn.ampproject.org/v0.js"></script>
<style amp-boilerplate>body{{visibility:hidden}}</style>
<style amp-custom>h1{{font-size:22px}} .amp-bar{{background:#12263a;color:#fff}}</style>
</head>
<body>
<div class="amp-bar"><a href="/">{SITE_NAME}</a> <a href="{e(canonical)}">Full site</a></div>
<amp-img src="/static/{story.slug}.jpg" width="600" height="340" layout="responsive"></amp-img>
<h1>{e(story.title)}</h1>
<p class="amp-byline">{e(story.author)} — {e(story.date)}</p>
<p class="amp-dek">{e(story.summary)}</p>
{paragraphs(story)}
<amp-analytics type="googleanalytics"></amp-analytics>
<p class="amp-foot">Read more stories on <a href="/">{SITE_NAME}</a>.</p>
</body>
</html>
"""


def partner_page(story: Story, original: str, trending: list[Story], comments: list[str]) -> str:
    """The partner site's template: other header, sidebar, a credit line and reader comments."""
    trend = "".join(
        f'<li><a href="/partner/story/{s.slug}/">{e(s.title)}</a></li>' for s in trending
    )
    comment_html = "".join(
        f'<li class="comment"><b>reader{i + 1}</b> {e(text)}</li>'
        for i, text in enumerate(comments)
    )
    return f"""<!DOCTYPE html>
<html lang="{story.lang}">
<head><meta charset="utf-8"><title>{e(story.title)} - {PARTNER_NAME}</title>
<meta property="og:type" content="article">
<link rel="canonical" href="{e(original)}">
<style>.wrap{{display:grid;grid-template-columns:1fr 300px}} .ph{{background:#7f1d1d;color:#fff}}</style>
</head>
<body>
<div class="ph"><h2><a href="/partner/">{PARTNER_NAME}</a></h2>
<ul class="menu"><li><a href="/partner/">Front page</a></li><li>Weather</li><li>Jobs</li></ul></div>
<div class="wrap">
<div class="story">
<header><span class="kicker">Syndicated</span>
<h1>{e(story.title)}</h1></header>
<h2 class="dek">{e(story.summary)}</h2>
{partner_paragraphs(story)}
<footer class="credit">This story was first published by {SITE_NAME}.
<a href="{e(original)}">Read the original</a>.</footer>
<section class="comments"><h3>Comments ({len(comments)})</h3><ul>{comment_html}</ul></section>
</div>
<div class="rail"><h3>Trending on {PARTNER_NAME}</h3><ul>{trend}</ul>
<div class="ad">Advertisement</div></div>
</div>
<div class="pf">{PARTNER_NAME} · Harbour Media Group · Terms · Privacy</div>
</body>
</html>
"""


def partner_home(stories: list[Story]) -> str:
    items = "".join(
        f'<li><a href="/partner/story/{s.slug}/">{e(s.title)}</a><p>{e(s.summary)}</p></li>'
        for s in stories
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{PARTNER_NAME}</title></head>
<body><div class="ph"><h2>{PARTNER_NAME}</h2></div>
<h1>Stories from our partners</h1><ul class="list">{items}</ul>
<div class="pf">{PARTNER_NAME} · Harbour Media Group</div></body></html>
"""


def listing_body(heading: str, intro: str, stories: list[Story]) -> str:
    """A section or tag page: one teaser per story (title, date, standfirst)."""
    items = "\n".join(
        f'<li><h2><a href="/news/{s.slug}.html">{e(s.title)}</a></h2>'
        f"<p>{e(s.date)} · {e(s.author)}</p><p>{e(s.summary)}</p></li>"
        for s in stories
    )
    return (
        f'<section><h1>{e(heading)}</h1><p>{e(intro)}</p><ul class="teasers">{items}</ul></section>'
    )


def live_body(story: Story, entries: list[LiveEntry]) -> str:
    """The live blog, newest entry first, as live blogs are."""
    blocks = "\n".join(
        f'<div class="entry"><h3>{e(x.time)}</h3><p>{e(x.text)}</p></div>'
        for x in reversed(entries)
    )
    return f"""<article>
<h1>{e(story.title)}</h1>
<p class="standfirst"><strong>{e(story.summary)}</strong></p>
<p class="live-meta">{len(entries)} updates · latest at {e(entries[-1].time)}</p>
{blocks}
</article>"""
