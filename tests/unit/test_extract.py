"""Main-text extraction on small hand-written pages in realistic site templates."""

from __future__ import annotations

import difflib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash import MainText, extract_main_text
from scrapy_simhash.fingerprint import Fingerprinter

EN_ARTICLE = [
    (
        "The city council voted on Tuesday to expand the bicycle lane network by forty miles, "
        "a plan that supporters say will reduce traffic and critics call too expensive."
    ),
    (
        "Council member Rivera, who sponsored the measure, said the lanes would connect the "
        "northern suburbs with the downtown business district for the first time."
    ),
    (
        "Construction is expected to begin next spring and to last about three years, with the "
        "first segments opening along the river by the end of the summer."
    ),
    (
        "Local shop owners were divided: some expect more customers on bikes, while others fear "
        "losing the parking spaces in front of their stores."
    ),
]
EN_OTHER = [
    (
        "A rare comet will be visible to the naked eye this weekend, astronomers said, passing "
        "closer to the Earth than at any time in the last six thousand years."
    ),
    (
        "The best time to look is shortly before dawn, low on the eastern horizon, far away "
        "from city lights; binoculars will show its long, faint tail."
    ),
    (
        "Observatories across the region will open their doors to the public on Saturday night, "
        "weather permitting, and volunteers will explain what visitors are seeing."
    ),
]
ZH_ARTICLE = [
    (
        "商务部日前出台《互联网加流通行动计划》，这是今年政府工作报告提出互联网加以后，"
        "首个落实出台的专项行动计划。"
    ),
    (
        "该计划剑指电子商务领域，并提出具体发展指标：力争在一到两年内实现五大发展目标，"
        "其中包括电子商务交易额和网上零售额的大幅增长。"
    ),
    (
        "商务部新闻发言人表示，该行动计划就是要想方设法解决电商最后一公里和最后一百米的"
        "两个瓶颈问题，积极发展中小城市和农村电商。"
    ),
]
ZH_OTHER = [
    (
        "气象台今天发布暴雨蓝色预警，预计未来二十四小时内本市大部分地区将出现大到暴雨，"
        "局部地区伴有雷电和短时大风。"
    ),
    ("有关部门提醒市民减少不必要的外出，驾车出行注意避开积水路段，低洼地区的居民要做好防范准备。"),
]


def template_portal(title: str, paragraphs: list[str], *, comments: bool = True) -> str:
    """An old-style portal: div soup, link lists, sidebar, comments, cookie banner."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    comment_html = (
        '<div id="comments" class="comment-list"><h3>12 comments</h3>'
        '<div class="comment"><p>I ride to work every day and this is wonderful news for '
        "all of us who do, thank you council!</p></div>"
        '<div class="comment"><p>Another waste of taxpayer money, who asked for this, the '
        "roads are full of potholes already.</p></div></div>"
        if comments
        else ""
    )
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<title>{title} - The Daily Portal</title></head><body>
<div id="top-bar"><a href="/">Home</a> | <a href="/news">News</a> | <a href="/sport">Sport</a>
| <a href="/weather">Weather</a> | <a href="/login">Log in</a></div>
<div class="cookie-banner">We use cookies to improve your experience on our site. By continuing
to browse you agree to our use of cookies and to our privacy policy.</div>
<table width="100%"><tr><td class="left-menu"><ul><li><a href="/a">Politics</a></li>
<li><a href="/b">Business</a></li><li><a href="/c">Technology</a></li></ul></td>
<td><div class="main-column"><h1>{title}</h1><div class="byline">By Staff Reporter, 3 May</div>
<div class="story-text">{body}</div>
<div class="share-tools">Share this story: <a href="#">Facebook</a> <a href="#">Twitter</a>
</div>{comment_html}</div></td>
<td class="sidebar"><h3>Most read</h3><p>Our newsletter brings you the best of the Daily
Portal every morning, with analysis and opinion from our award-winning writers.</p>
<ul><li><a href="/1">Stocks tumble as investors fear slowdown</a></li>
<li><a href="/2">Five recipes for a quick summer dinner</a></li></ul></td></tr></table>
<div id="footer">Copyright 2024 The Daily Portal. All rights reserved. Contact us at
desk@portal.example for corrections and complaints about our reporting.</div>
</body></html>"""


def template_modern(title: str, paragraphs: list[str]) -> str:
    """A modern template: semantic HTML5, hidden menus, related articles, a newsletter box."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta property="og:title" content="{title}"><title>{title} | Modern Times</title></head>
<body><header class="site-header"><a href="/">Modern Times</a><nav><a href="/x">World</a>
<a href="/y">Culture</a></nav></header>
<div class="mobile-menu" aria-hidden="true"><a href="/x">World</a> Subscribe today and save
half on your first year of unlimited digital access to Modern Times journalism.</div>
<main><article><h1>{title}</h1><div class="article-body" itemprop="articleBody">{body}
<div style="display: none">Advertisement: buy the new phone today with a special discount
for every reader of this newspaper, offer valid while stocks last.</div></div>
<section class="related-articles"><h2>Related</h2><ul><li><a href="/r1">Why cities are
rethinking cars</a></li><li><a href="/r2">The history of the bicycle in ten objects</a></li>
</ul></section></article></main>
<aside><div class="newsletter">Sign up for our newsletter to receive the most important news
of the day in your inbox every evening, free of charge and without advertising.</div></aside>
<footer><p>© Modern Times Media Group. Terms of service. Privacy. Imprint.</p></footer>
</body></html>"""


def extract(html: str | bytes, **kwargs: object) -> MainText:
    return extract_main_text(html, **kwargs)  # type: ignore[arg-type]


def ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


@pytest.mark.parametrize(
    ("title", "article"),
    [("Council expands bike lanes", EN_ARTICLE), ("商务部出台互联网加行动计划", ZH_ARTICLE)],
)
def test_same_article_in_two_templates_gives_the_same_text(title: str, article: list[str]) -> None:
    portal = extract(template_portal(title, article))
    modern = extract(template_modern(title, article))
    assert portal.text == "\n".join(article)
    assert modern.text == "\n".join(article)
    assert portal.title == modern.title == title


@pytest.mark.parametrize(
    ("first", "second"), [(EN_ARTICLE, EN_OTHER), (ZH_ARTICLE, ZH_OTHER)], ids=["en", "zh"]
)
@pytest.mark.parametrize("template", [template_portal, template_modern])
def test_template_text_is_not_shared_between_articles(
    first: list[str], second: list[str], template: object
) -> None:
    one = extract(template("One", first)).text  # type: ignore[operator]
    two = extract(template("Two", second)).text  # type: ignore[operator]
    assert set(one.splitlines()).isdisjoint(two.splitlines())
    assert ratio(one, two) < 0.3


def test_boilerplate_is_dropped() -> None:
    text = extract(template_portal("Title", EN_ARTICLE)).text
    for boilerplate in ("cookies", "Share this", "comments", "newsletter", "Copyright", "Home"):
        assert boilerplate not in text
    modern = extract(template_modern("Title", EN_ARTICLE)).text
    for boilerplate in ("Subscribe", "Advertisement", "Related", "Sign up", "Terms"):
        assert boilerplate not in modern


def test_hidden_elements_are_dropped() -> None:
    html = (
        "<html><body><article><p>" + EN_ARTICLE[0] + "</p>"
        "<p hidden>Hidden by attribute, a paragraph that no visitor can ever see here.</p>"
        '<p style="visibility:hidden">Invisible by style, a paragraph that nobody sees.</p>'
        '<p aria-hidden="true">Hidden from assistive technology and from our extractor.</p>'
        "<p>" + EN_ARTICLE[1] + "</p></article></body></html>"
    )
    assert extract(html).text == "\n".join(EN_ARTICLE[:2])


def test_inline_markup_and_tails_are_kept_in_one_line() -> None:
    html = (
        "<html><body><article><p>Budget <b>talks</b> resumed on <a href='/m'>Monday</a>, "
        "officials said<span hidden>HIDDEN</span>, after a <em>long</em> pause of several "
        "weeks in which no progress had been made at all.</p></article></body></html>"
    )
    assert extract(html).text == (
        "Budget talks resumed on Monday, officials said, after a long pause of several "
        "weeks in which no progress had been made at all."
    )


def test_nested_boilerplate_inside_the_article_is_dropped() -> None:
    inner = (
        '<div class="post-content">'
        + "".join(f"<p>{p}</p>" for p in EN_ARTICLE[:2])
        + '<div class="inline-related"><ul><li><a href="/1">Read also: another story about '
        'lanes</a></li></ul></div><div class="social-share"><span>Share on Facebook and '
        "Twitter with your friends and family today</span></div>"
        + "".join(f"<p>{p}</p>" for p in EN_ARTICLE[2:])
        + "</div>"
    )
    assert extract(f"<html><body>{inner}</body></html>").text == "\n".join(EN_ARTICLE)


def test_forum_thread_made_of_comments_keeps_the_posts() -> None:
    posts = "".join(
        f'<li class="comment"><div class="comment-body"><p>{p}</p></div></li>' for p in EN_ARTICLE
    )
    html = (
        '<html><body><div class="nav"><a href="/">Forum</a></div>'
        f'<ol class="comments">{posts}</ol></body></html>'
    )
    assert extract(html).text == "\n".join(EN_ARTICLE)


def _post(text: str) -> str:
    return f'<div class="post-layout"><div class="s-prose js-post-body"><p>{text}</p></div></div>'


def test_question_and_answers_under_different_parents_are_one_thread() -> None:
    question, *answers = EN_ARTICLE
    html = (
        '<html><body><div class="topbar"><a href="/">Q&amp;A</a></div><div id="mainbar">'
        f'<div id="question" class="question">{_post(question)}</div>'
        '<div id="answers"><h2>3 Answers</h2>'
        + "".join(f'<div class="answer">{_post(answer)}</div>' for answer in answers)
        + '</div></div><div class="sidebar"><p>Hot network questions and other links '
        "that are not part of this thread at all.</p></div></body></html>"
    )
    assert extract(html).text == "\n".join(EN_ARTICLE)


def test_thread_inside_the_marked_article_is_measured_against_the_article() -> None:
    """Whether repeated blocks hold most of the page's prose is asked of the article the
    page marks (<main>) when they are inside it: the same thread in a template with more
    unmarked prose around it (a host's own boxes) is still read whole."""
    question, *answers = EN_ARTICLE
    thread = (
        f'<div id="question" class="question">{_post(question)}</div><div id="answers">'
        + "".join(f'<div class="answer">{_post(answer)}</div>' for answer in answers)
        + "</div>"
    )
    boxes = "".join(f'<div class="box"><p>{p}</p><p>{p}</p></div>' for p in EN_OTHER)
    bare = f"<html><body><main>{thread}</main></body></html>"
    hosted = (
        f"<html><body><main>{thread}</main><div class='more'>{boxes}{boxes}</div></body></html>"
    )
    assert extract(bare).text == "\n".join(EN_ARTICLE)
    assert extract(hosted).text == "\n".join(EN_ARTICLE)


def test_content_column_named_after_its_layout_is_content() -> None:
    menu = "".join(
        f'<li><a href="/{n}">Department number {n} of the store</a></li>' for n in range(40)
    )
    article = "".join(f"<p>{p}</p>" for p in EN_ARTICLE)
    html = (
        f'<html><body><nav><ul class="menu">{menu}</ul></nav><div class="row">'
        f'<section class="col-sm-9 sidebar-first-only">{article}</section>'
        '<aside class="col-sm-3"><p>Opening hours of the shop.</p></aside></div></body></html>'
    )
    assert extract(html).text == "\n".join(EN_ARTICLE)


def test_wrapper_named_like_boilerplate_is_kept_when_it_holds_the_page() -> None:
    body = "".join(f"<p>{p}</p>" for p in EN_ARTICLE)
    html = (
        '<html><body><div class="m-advertisement-off-canvas--pusher"><div class="story">'
        f"{body}</div></div><div class='footer'>Small print about the company.</div>"
        "</body></html>"
    )
    assert extract(html).text == "\n".join(EN_ARTICLE)


def test_chinese_page_with_br_separated_text_in_gbk_without_declaration() -> None:
    html = (
        "<html><head><title>商务部出台行动计划_网易新闻</title></head><body>"
        '<div class="nav"><a href="/">首页</a> <a href="/n">新闻</a></div>'
        '<div id="endText">' + "<br><br>".join(ZH_ARTICLE) + "</div>"
        '<div class="footer">网易公司版权所有</div></body></html>'
    )
    main = extract(html.encode("gbk"))
    assert main.encoding == "gb18030"
    assert main.text == "\n".join(ZH_ARTICLE)
    assert main.title == "商务部出台行动计划"


def test_wrongly_declared_charset_still_gives_readable_text() -> None:
    html = template_portal("商务部出台互联网加行动计划", ZH_ARTICLE).replace(
        'charset="utf-8"', 'charset="gb2312"'
    )
    main = extract(html.encode("utf-8"))
    assert main.text == "\n".join(ZH_ARTICLE)
    assert any("decoded as utf-8" in note for note in main.notes)


def test_mojibake_with_c1_characters_reads_like_its_windows_1252_copy() -> None:
    # "’" once decoded as Latin-1 leaves "â\x80\x99" in a UTF-8 page; re-encoded as
    # windows-1252 the C1 characters become &#128; and &#153;, which HTML reads as "€™".
    article = [p.replace("said", "\u00e2\u0080\u0099said") for p in EN_ARTICLE]
    html = template_modern("Bike lanes \u00e2\u0080\u0099approved", article)
    original = extract(html.encode("utf-8"))
    copy = extract(html.replace('charset="utf-8"', "").encode("cp1252", "xmlcharrefreplace"))
    assert copy.encoding == "cp1252"
    assert original.text == copy.text
    assert original.title == copy.title == "Bike lanes \u00e2\u20ac\u2122approved"
    assert "\u00e2\u20ac\u2122said" in original.text


def test_streamed_segments_are_read_in_the_place_of_their_template() -> None:
    # React streaming: the server sends the article's end later, hidden, at the end of
    # the body; a script moves it into the template's place.
    first, second, third, fourth = (f"<p>{p}</p>" for p in EN_ARTICLE)
    html = (
        "<html><body><nav><a href='/'>Home</a></nav><article>"
        f"{first}<template id='B:0'></template><div class='skeleton'></div>{fourth}</article>"
        f"<footer>Small print</footer><div hidden id='S:0'>{second}{third}</div> "
        "<script>$RC('B:0','S:0')</script>"
        f"<div hidden id='S:7'><p>{EN_OTHER[0]}</p></div></body></html>"
    )
    lines = extract(html).text.split("\n")
    assert lines[:2] == EN_ARTICLE[:2]
    assert EN_ARTICLE[2] in lines
    assert lines.index(EN_ARTICLE[2]) < lines.index(EN_ARTICLE[3])
    assert EN_OTHER[0] not in lines  # a segment without a template is never shown


def test_meta_named_wrapper_of_a_product_description_is_content() -> None:
    # "meta" names both a post's date-and-author line and a shop's description column;
    # the dates and bylines in it are dropped as credit lines, the description stays.
    html = (
        "<html><body><nav><a href='/'>Home</a> <a href='/shop'>Shop</a></nav>"
        "<div class='entry-meta'><span class='posted-on'>March 3, 2024</span> "
        "<span class='byline'>by <a href='/a'>Jane</a></span></div>"
        "<div class='product-meta'><h2>Monday meditation</h2><p>$39.00 every month</p>"
        f"<div class='product-description'><p>{EN_ARTICLE[0]}</p><p>{EN_ARTICLE[1]}</p></div>"
        "</div><footer>"
        + " ".join(f"<a href='/{i}'>Link {i}</a>" for i in range(40))
        + "<p>"
        + EN_OTHER[0]
        + "</p></footer></body></html>"
    )
    assert extract(html).text.split("\n")[-2:] == EN_ARTICLE[:2]
    assert "March 3" not in extract(html).text


def test_skip_link_is_dropped() -> None:
    article = "".join(f"<p>{p}</p>" for p in EN_ARTICLE)
    html = (
        "<html><body><a class='skip-link screen-reader-text' href='#content'>Skip to content</a>"
        f"<div id='content' class='site-content'>{article}</div></body></html>"
    )
    assert extract(html).text == "\n".join(EN_ARTICLE)


def test_title_suffix_and_h1() -> None:
    html = "<html><head><title>Budget deal reached | Example News</title></head><body></body>"
    assert extract(html).title == "Budget deal reached"
    html = "<title>Home</title><h1>Budget deal reached</h1><p>x</p>"
    assert extract(html).title == "Home"
    html = "<title>Example News - Budget deal reached</title><h1>Budget deal reached</h1>"
    assert extract(html).title == "Budget deal reached"


def test_plain_text_and_fragments() -> None:
    assert extract("just some words").text == "just some words"
    assert extract(b"<p>one</p><p>two</p>").text == "one\ntwo"


@pytest.mark.parametrize(
    ("body", "note"),
    [
        (b"", "empty body"),
        (b"   \n\t ", "no HTML content"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "binary body"),
        (b"<html><body><nav><a href='/'>Home</a></nav></body></html>", "no main text found"),
    ],
)
def test_inputs_without_text_are_explained(body: bytes, note: str) -> None:
    main = extract(body)
    assert main.text == ""
    assert note in main.notes


def test_invalid_bytes_and_broken_html() -> None:
    body = (
        b"<html><body><div><p>"
        + ("café crème brûlée à la carte, " * 20).encode()
        + b"\xff\xfe broken <b>markup <i>never closed<p>more"
    )
    main = extract(body)
    assert "café crème" in main.text
    assert main.notes == ("2 undecodable bytes replaced",)
    assert "never closed" in main.text


def test_huge_page_is_truncated_with_a_note() -> None:
    paragraph = "<div class='row'><p>" + EN_ARTICLE[0] + "</p></div>\n"
    body = ("<html><body>" + paragraph * (20_000_000 // len(paragraph))).encode()
    assert len(body) >= 19_000_000
    started = time.perf_counter()
    main = extract(body, max_bytes=1_000_000)
    elapsed = time.perf_counter() - started
    assert "truncated to 1000000 bytes" in main.notes
    assert EN_ARTICLE[0] in main.text
    assert elapsed < 5


def test_deeply_nested_markup_does_not_fail() -> None:
    html = "<div>" * 5000 + "<p>" + EN_ARTICLE[0] + "</p>" + "</div>" * 5000
    main = extract(html)
    assert isinstance(main.text, str)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=3000))
def test_arbitrary_bytes_never_raise(body: bytes) -> None:
    main = extract_main_text(body)
    assert isinstance(main.text, str)
    assert isinstance(main.title, str)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<div>",
                "</div>",
                "<p>",
                "</p>",
                "<a href=x>",
                "</a>",
                "<nav>",
                "<article>",
                "<script>",
                "</script>",
                "<br>",
                "<!--",
                "-->",
                "<span hidden>",
                "</span>",
                "text ",
                "更多文字，",
                "&amp;",
                "<table><tr><td>",
                "<title>",
                "</title>",
            ]
        ),
        max_size=60,
    )
)
def test_arbitrary_markup_never_raises(parts: list[str]) -> None:
    main = extract_main_text("".join(parts))
    assert "<" not in main.text or "&lt;" not in main.text


def test_content_after_a_stray_closing_html_tag_is_kept() -> None:
    # An included header fragment that ends the document early, as on real portals.
    html = (
        "<html><body><div class='header'><a href='/'>Home</a></div></html>"
        "<div class='content'>" + "".join(f"<p>{p}</p>" for p in EN_ARTICLE) + "</div>"
        "</body><div class='after'><p>" + EN_OTHER[0] + "</p></div></html>"
    )
    text = extract(html).text
    assert text.splitlines()[:4] == EN_ARTICLE


def test_script_hook_class_names_do_not_mark_boilerplate() -> None:
    article = "".join(f"<p>{p}</p>" for p in ZH_ARTICLE)
    html = (
        "<html><body><div class='nav'><a href='/'>首页</a></div><div class='left'>"
        f"<div id='artical_real' class='js_img_share_area'>{article}</div></div>"
        "<div class='sidebar'><p>" + ZH_OTHER[0] + "</p></div></body></html>"
    )
    assert extract(html).text == "\n".join(ZH_ARTICLE)


def test_page_without_a_prose_container_falls_back_to_its_non_boilerplate_text() -> None:
    items = [
        ("Trail Runner 2", "Lightweight shoe with a grippy outsole, $129.95 (312 reviews)"),
        ("Summit Pack 40", "Forty litre pack with a rain cover, $189.00 (87 reviews)"),
        ("Camp Stove Mini", "Folding gas stove that boils a litre in 3 minutes, $54.95"),
        ("Down Vest", "Packable 800-fill down vest, recycled shell, $149.00 (41 reviews)"),
    ]
    cards = "".join(f"<div class='card'><h3>{n}</h3><span>{d}</span></div>" for n, d in items)
    html = (
        "<html><body><nav><a href='/'>Shop</a><a href='/sale'>Sale</a></nav>"
        "<div class='intro'><p>Gear for every season, tested by our members.</p></div>"
        f"<div class='grid'>{cards}</div><footer>© Outdoor Co-op</footer></body></html>"
    )
    main = extract(html)
    for name, description in items:
        assert name in main.text
        assert description in main.text
    assert "Sale" not in main.text
    assert "Co-op" not in main.text
    assert any("non-boilerplate" in note for note in main.notes)


def test_bem_modifiers_do_not_mark_boilerplate() -> None:
    article = "".join(f"<p>{p}</p>" for p in EN_ARTICLE)
    html = (
        "<html><body><nav><a href='/'>Home</a></nav><div class='page'>"
        f"<article class='node node--type-newsletter-article'>{article}</article>"
        "<div class='newsletter-signup'><p>" + EN_OTHER[0] + "</p></div></div></body></html>"
    )
    assert extract(html).text == "\n".join(EN_ARTICLE)


@pytest.mark.parametrize(
    "credit",
    [
        "本文来源：华尔街见闻 责任编辑：NF058",
        "来源：新华网",
        "2015-06-25 10:45:52 0人参与评论",
        "分享到：",
        "By Staff Reporter",
        "Updated: December 31, 2024",
        "主办单位：山西医科大学 版权所有",
        "地址：太原市新建南路56号 邮编：030001",
        "© 2024 Example Media. All rights reserved.",
        "March 4, 2025",
        "Tue, 4 Mar 2025 at 9:02 AM EST",
        "Jonah Reyes, 2026-03-08",
        "记者 张三 2026-03-08 10:31",
        "Ada Lim | 8 March 2026",
        "Donnerstag, 3. Februar 2022",
        "03. Feb. 2022 um 14:30 Uhr",
        "Von Max Mustermann, 3. Februar 2022",
        "1er février 2024",
        "4 mars 2025 à 10h30",
        "12 de marzo de 2024, 10:31",
        "12 de março de 2024",
        "12 maggio 2024",
        "12 maart 2024",
    ],
)
def test_byline_and_credit_lines_are_dropped(credit: str) -> None:
    for article in (EN_ARTICLE, ZH_ARTICLE):
        body = "".join(f"<p>{p}</p>" for p in article)
        html = f"<html><body><article><p>{credit}</p>{body}<p>{credit}</p></article></body></html>"
        assert extract(html).text == "\n".join(article)


def test_prose_that_starts_like_a_credit_is_kept() -> None:
    lines = [
        "2024年3月5日 国务院总理李强在人民大会堂作政府工作报告，报告指出经济运行总体回升向好。",
        "By the time the council voted, most members of the public had already gone home.",
        "March 2025 saw more rain in the city than any month since records began.",
        "The council met on 2026-03-08 to vote on the tram line.",
        "Sunday, 2026-03-08. Rain later.",
        "Am 3. Februar 2022 wurde der Vertrag unterzeichnet, sagte der Sprecher.",
        "Mai 2022 war der wärmste Monat seit Beginn der Aufzeichnungen in der Stadt.",
        *EN_ARTICLE,
    ]
    html = "<html><body><article>" + "".join(f"<p>{p}</p>" for p in lines) + "</article></body>"
    assert extract(html).text == "\n".join(lines)


def test_byte_order_marks_and_their_mojibake_are_not_text() -> None:
    page = b"<html><body><p>Real words here.</p></body></html>\n<p>\xff\xfe\x00<p>\xef\xbb\xbfmore"
    main = extract_main_text(page, content_type="text/html; charset=windows-1252")
    assert "\u00ff\u00fe" not in main.text
    assert "\u00ef\u00bb\u00bf" not in main.text
    assert "Real words here." in main.text


def test_teasers_named_like_posts_do_not_win_over_the_article() -> None:
    """A content-like name (<article class="post_teaser">) lifts only containers of prose."""
    story = "".join(
        f"<p>Paragraph {n} of the report on the river harbour, its ferries, its cranes "
        f"and the people who work there through the winter months.</p>"
        for n in range(6)
    )
    teasers = "".join(
        f"<li><article class='post_teaser'><p>Teaser {n}: summer sale and the newest "
        f"dresses of the season, picked for you by our editors.</p></article></li>"
        for n in range(3)
    )
    page = (
        f"<html><body><main><section><div class='wysiwyg'>{story}</div></section></main>"
        f"<div><ul>{teasers}</ul></div></body></html>"
    )
    main = extract_main_text(page.encode())
    assert "river harbour" in main.text
    assert "Teaser" not in main.text


def test_related_posts_with_long_excerpts_are_not_kept_as_an_article_wrapper() -> None:
    """A boilerplate-named element holding several long paragraphs is kept as a wrapper of
    the article named after a widget, except for sections that are never the article:
    comments, and related posts, whose teasers carry excerpts as long as paragraphs."""
    story = "".join(f"<p>{text}</p>" for text in EN_ARTICLE + EN_OTHER)
    excerpts = "".join(
        f"<li><article class='post_teaser'><h3><a href='/p{n}'>Summer sale, part {n}</a></h3>"
        f"<p>Excerpt {n}: the newest dresses of the season are here, picked for you by our "
        f"editors, and with a little luck you can still find the best pieces of the summer "
        f"before they are gone for the year [...]</p></article></li>"
        for n in range(3)
    )
    template = (
        "<html><body><main><section><div class='wysiwyg'>{story}</div></section></main>"
        "{related}</body></html>"
    )
    page = template.format(
        story=story, related=f"<div id='related_posts'><ul>{excerpts}</ul></div>"
    )
    bare = template.format(story=story, related="")
    main = extract_main_text(page.encode())
    assert "Excerpt" not in main.text
    assert main.text == extract_main_text(bare.encode()).text


def test_a_page_of_links_only_has_no_text_of_its_own() -> None:
    """An index or catalogue page has no prose: its link texts read alike from page to page
    of a listing, so they decide nothing (a listing dropped as a copy would end discovery)."""

    def catalogue(subject: str, titles: list[str]) -> bytes:
        links = "".join(f"<li><a href='/b/{n}'>{t}</a></li>" for n, t in enumerate(titles))
        return (
            f"<html><body><nav><a href='/'>Home</a> <a href='/browse'>Browse</a></nav>"
            f"<h2>{subject}</h2><ul>{links}</ul></body></html>"
        ).encode()

    hinges = catalogue(
        "Hardware", [f"Catalogue of brass hinges and locks, volume {n}" for n in range(12)]
    )
    main = extract_main_text(hinges)
    assert main.text == ""
    assert "only link lists: no text of its own" in main.notes
    page = Fingerprinter().fingerprint_page(hinges)
    assert page.fingerprint is None
    assert "only link lists" in " ".join(page.notes)
    nav_only = (
        b"<html><body><nav><a href='/'>Home</a> <a href='/x'>Browse all</a></nav></body></html>"
    )
    assert extract_main_text(nav_only).text == ""


def test_the_extractor_is_public_and_its_log_names_are_kept() -> None:
    """``scrapy_simhash.extract_main_text`` is the documented path (0.1.0's
    ``scrapy_simhash.extract`` module is gone); log names users filter on are kept."""
    import importlib

    import scrapy_simhash
    import scrapy_simhash.text
    import scrapy_simhash.text.decode
    import scrapy_simhash.text.extract

    assert scrapy_simhash.extract_main_text is scrapy_simhash.text.extract_main_text
    assert scrapy_simhash.MainText is scrapy_simhash.text.MainText
    for gone in ("scrapy_simhash.extract", "scrapy_simhash.decode"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(gone)
    assert scrapy_simhash.text.extract.logger.name == "scrapy_simhash.extract"
    assert scrapy_simhash.text.decode.logger.name == "scrapy_simhash.decode"


def test_layout_columns_named_by_their_ids_are_not_read_as_one_article() -> None:
    """A syndicated article in a classless layout column (div#col_2) beside another column
    of the host's own prose (div#col_3Outer, a partner box): the columns share tag and
    class (none), yet their ids name different regions. Repeated units whose ids differ
    only by a number (div#part-1, div#part-2) still continue each other."""
    story = "".join(f"<p>{text}</p>" for text in EN_ARTICLE)
    partners = "".join(f"<p>{text}</p>" for text in EN_OTHER[:2])
    page = (
        f"<html><body><div id='all'><div id='col_2'><div><div>{story}</div></div></div>"
        f"<div id='col_3Outer'><div><div>{partners}</div></div></div></div></body></html>"
    )
    main = extract_main_text(page.encode())
    assert "bicycle lane" in main.text
    assert "comet" not in main.text
    parts = "".join(
        f"<div id='part-{n}'><div><p>{a}</p><p>{b}</p></div></div>"
        for n, (a, b) in enumerate([EN_ARTICLE[:2], EN_ARTICLE[2:]], 1)
    )
    main = extract_main_text(f"<html><body><div id='all'>{parts}</div></body></html>".encode())
    assert "bicycle lane" in main.text
    assert "parking spaces" in main.text
