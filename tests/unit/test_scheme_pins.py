"""Fingerprints of fixed pages are pinned to the scheme id.

An index refuses fingerprints of another scheme. That protects a crawl only if every
change that moves a fingerprint (extraction, features, weights, caps, hashing) also
changes the scheme id: when this test fails, bump ``FORMAT_VERSION`` in
``scrapy_simhash/fingerprint.py`` and store the new values here.
"""

from __future__ import annotations

from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter, to_hex

PAGES = {
    "en": (
        "<html><head><title>Bridge reopens | Valley Gazette</title></head><body>"
        "<nav><a href='/'>Home</a></nav><article><h1>Bridge reopens</h1>"
        "<p>The old river bridge reopened on Monday after eighteen months of repairs, and the "
        "first buses crossed it shortly after six in the morning.</p>"
        "<p>Engineers replaced the rusted cables, strengthened the piers and widened the "
        "footpath, which now carries a protected lane for cyclists in both directions.</p>"
        "<p>Shop owners on both banks said trade had suffered during the closure.</p>"
        "</article><footer>Copyright Valley Gazette</footer></body></html>"
    ),
    "zh": (
        "<html><head><meta charset='utf-8'><title>新桥通车</title></head><body>"
        "<div class='content'><h1>新桥通车</h1>"
        "<p>经过十八个月的维修，老河桥于周一重新开放，首班公交车在早上六点后驶过大桥。</p>"
        "<p>工程人员更换了生锈的缆索，加固了桥墩，并拓宽了人行道，两个方向都设有自行车道。</p>"
        "<p>两岸的商户表示，封闭期间生意受到了影响，如今客流正在恢复。</p>"
        "</div></body></html>"
    ),
    "mixed": (
        "<html><head><title>Release notes</title></head><body><main>"
        "<p>Version 2 of the Lantern reader adds offline mode, faster search and a new "
        "layout for long articles. 新版本支持离线阅读，搜索速度更快，长文章的版式也更清晰。</p>"
        "<p>Existing settings are kept; the first start migrates the local library, which "
        "can take a minute on large collections. 首次启动会迁移本地书库。</p>"
        "</main></body></html>"
    ),
    # Layout columns named by their ids: which of them is read moves the fingerprint.
    "columns": (
        "<html><head><title>Harbour ferries</title></head><body><div id='all'>"
        "<div id='col_2'><div><div><p>The harbour ferries will run every twenty minutes from "
        "May, the port authority said, after two new boats joined the fleet this winter.</p>"
        "<p>Tickets bought on the quay will cost the same as before, while the monthly pass "
        "for commuters becomes cheaper by a fifth.</p><p>The night service, cut during the "
        "repairs of the western pier, returns on Fridays and Saturdays.</p></div></div></div>"
        "<div id='col_3Outer'><div><div><p>Our partners: book your hotel through the portal "
        "and a share of every booking supports the club's youth teams.</p><p>Premium partners, "
        "institutional partners and federations: thank you for your support.</p></div></div></div>"
        "</div></body></html>"
    ),
    # Related posts whose teasers carry paragraph-long excerpts are not the article's wrapper.
    "related": (
        "<html><head><title>Night trains</title></head><body><main><div class='wysiwyg'>"
        + "".join(
            f"<p>Night train {n} to the coast returns in June with sleeping cars that the "
            f"railway refitted over the winter in its workshops near the old harbour.</p>"
            for n in range(12)
        )
        + "</div></main>"
        "<div id='related_posts'><ul>"
        + "".join(
            f"<li><article class='post_teaser'><h3><a href='/t{n}'>Timetables, part {n}</a></h3>"
            f"<p>Excerpt {n}: the summer timetable adds early trains to the mountains, later "
            f"trains back from the lakes, and on Sundays, when the weather allows it, a "
            f"steam train along the old valley line [...]</p></article></li>"
            for n in range(3)
        )
        + "</ul></div></body></html>"
    ),
    # A thread inside <main> is measured against <main>, whatever prose the template adds.
    "thread": (
        "<html><head><title>Ferry timetable?</title></head><body><main>"
        + "".join(
            f"<div class='{kind}'><div class='post-layout'><div class='s-prose'><p>{kind.title()} "
            f"{n}: the winter ferry leaves the north quay every forty minutes, and the last "
            f"boat back from the island is at half past nine on weekdays.</p></div></div></div>"
            for n, kind in enumerate(["question", "answer", "answer"])
        )
        + "</main><div class='more'>"
        + "".join(
            f"<div class='box'><p>Box {n}: our partners offer guided walks on the island, "
            f"bicycle hire at the harbour and a discount at the museum for ferry passengers."
            f"</p></div>"
            for n in range(6)
        )
        + "</div></body></html>"
    ),
    # Dates alone in the languages whose stop words are shipped are not text.
    "dates": (
        "<html><head><title>Neue Fähre</title></head><body><article>"
        "<p>Donnerstag, 3. Februar 2022</p><p>Die neue Fähre über den See fährt ab dem "
        "Frühjahr jede halbe Stunde, teilte die Reederei am Abend mit.</p><p>Die Fahrkarten "
        "kosten so viel wie bisher, das Monatsabonnement wird günstiger.</p>"
        "<p>04. Feb. 2022 um 14:30 Uhr</p></article></body></html>"
    ),
}

PINNED_SCHEME = "sh8-64-a78bcba7"
PINNED = {
    "en": "33302c08259419c9",
    "zh": "0b1f430891156b3b",
    "mixed": "ae3c1c1c040ac8ba",
    "columns": "f1c2640818e3e9ba",
    "related": "053d506a2d48d008",
    "thread": "f8b01f6d513f972c",
    "dates": "b8117b1e2f907dc4",
}


def test_fingerprints_of_fixed_pages_change_only_with_the_scheme() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(min_text_chars=0))
    got = {}
    for name, html in PAGES.items():
        fingerprint = fingerprinter.fingerprint_page(html.encode("utf-8")).fingerprint
        assert fingerprint is not None, name
        got[name] = to_hex(fingerprint)
    assert (fingerprinter.scheme, got) == (PINNED_SCHEME, PINNED), (
        "fingerprints or the scheme moved: if fingerprints changed, bump FORMAT_VERSION "
        "in scrapy_simhash/fingerprint.py, then pin the new scheme and values here"
    )
