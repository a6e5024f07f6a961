"""Canonical URLs: what a page declares, and which declarations are believed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.canonical import (
    declared_canonical,
    header_canonical,
    html_canonical,
    same_site,
    site_of,
)

PAGE = "https://news.example.com/print/story.html?utm_source=x"


def test_link_tags_in_the_head_are_read_in_any_attribute_order_and_quoting() -> None:
    assert html_canonical('<head><link rel="canonical" href="/story.html"></head>') == (
        "/story.html"
    )
    assert html_canonical("<HEAD><LINK HREF='/a?x=1&amp;y=2' REL='Canonical'/>") == "/a?x=1&y=2"
    assert html_canonical("<link rel=canonical href=/bare>") == "/bare"
    assert html_canonical('<link rel="alternate canonical" href="/multi">') == "/multi"
    assert html_canonical('<link rel="amphtml" href="/amp"><link rel="canonical" href="/c">') == (
        "/c"
    )
    # Not a declaration: other rels, empty href, links in the body.
    assert html_canonical('<link rel="amphtml" href="/amp">') is None
    assert html_canonical('<link rel="canonical" href="">') is None
    assert html_canonical('<head></head><body><link rel="canonical" href="/late">') is None
    assert html_canonical("") is None
    # Written with character references, the rel still says canonical.
    assert html_canonical('<link rel="&#99;anonical" href="/ref">') == "/ref"
    # Tags that cannot say canonical are skipped unread, those with references are read.
    preloads = (
        '<link rel="preload" href="/s.css?v=1">' * 25
        + '<link rel="preload" href="/s.css?a=1&amp;b=2">' * 25
    )
    assert html_canonical(f'<head>{preloads}<link rel="canonical" href="/after"></head>') == (
        "/after"
    )


def test_link_headers_name_the_canonical_url() -> None:
    assert header_canonical(['<https://a.example/x>; rel="canonical"']) == "https://a.example/x"
    assert (
        header_canonical(
            ["</style.css>; rel=preload; as=style, <https://a.example/y>; rel=canonical"]
        )
        == "https://a.example/y"
    )
    assert (
        header_canonical(
            ['<https://a.example/z>; rel="alternate"'],
        )
        is None
    )
    assert header_canonical([]) is None


def test_declarations_resolve_against_the_page_and_stay_on_its_site() -> None:
    doc = '<head><link rel="canonical" href="/story.html#top"></head>'
    assert declared_canonical(PAGE, document=doc) == "https://news.example.com/story.html"
    # Another subdomain of the same site is fine; another site is not.
    other_sub = '<link rel="canonical" href="https://www.example.com/story.html">'
    assert declared_canonical(PAGE, document=other_sub) == "https://www.example.com/story.html"
    elsewhere = '<link rel="canonical" href="https://evil.example.net/story.html">'
    assert declared_canonical(PAGE, document=elsewhere) is None
    assert declared_canonical(PAGE, document='<link rel="canonical" href="ftp://x/y">') is None
    # Page and header agree: believed; disagree: neither is.
    header = ['<https://news.example.com/story.html>; rel="canonical"']
    assert declared_canonical(PAGE, link_headers=header) == "https://news.example.com/story.html"
    assert declared_canonical(PAGE, document=doc, link_headers=header) == (
        "https://news.example.com/story.html"
    )
    other = ['<https://news.example.com/other.html>; rel="canonical"']
    assert declared_canonical(PAGE, document=doc, link_headers=other) is None
    assert declared_canonical(PAGE) is None


def test_registrable_domains_without_a_suffix_list() -> None:
    assert site_of("www.bbc.co.uk") == "bbc.co.uk"
    assert site_of("news.example.com") == "example.com"
    assert site_of("Example.COM.") == "example.com"
    assert site_of("alice.github.io") == "alice.github.io"
    assert site_of("127.0.0.1") == "127.0.0.1"
    assert site_of("localhost") == "localhost"
    assert same_site("http://a.bbc.co.uk/x", "https://www.bbc.co.uk:8443/y")
    assert not same_site("http://bbc.co.uk/x", "http://itv.co.uk/y")
    assert not same_site("https://alice.github.io/", "https://bob.github.io/")
    assert not same_site("http://10.0.0.1/", "http://10.0.0.2/")
    assert same_site("http://127.0.0.1:8931/a", "http://127.0.0.1:9000/b")
    assert not same_site("not a url", "http://a.example/")


hosts = st.from_regex(r"[a-z]{1,6}(\.[a-z]{1,6}){0,3}", fullmatch=True)


@given(hosts, hosts, st.text(alphabet="abc/?=&#.", max_size=20))
def test_a_believed_canonical_is_always_on_the_pages_site(
    page: str, target: str, path: str
) -> None:
    page_url = f"https://{page}/p"
    doc = f'<link rel="canonical" href="https://{target}/{path}">'
    found = declared_canonical(page_url, document=doc)
    assert found is None or same_site(page_url, found)
    assert found is None or "#" not in found
    assert same_site(page_url, f"https://{target}/") == same_site(f"https://{target}/", page_url)
