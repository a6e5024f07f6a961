"""Which containers hold the page's own content: the best-scoring one, widened through
wrappers and joined by the siblings that continue it, a thread of posts, or the one
article the page marks.

Choosing is separate from scoring because the page's own marks (``itemprop=articleBody``,
a single ``<article>``) can overrule the scores: prose outside the marked article is the
template's.
"""

from __future__ import annotations

from lxml import etree

from scrapy_simhash.text.rules import _MIN_POSTS, _SIBLING_SHARE, _THREAD_SHARE, _WRAPPER_MASS
from scrapy_simhash.text.walk import _CHARS, _LINK, _MASS, _MAX_WEIGHT, _SCORE, _final_score, _Walk


def _best(walk: _Walk) -> tuple[float, etree._Element]:
    """The candidate with the highest final score (the first of equals, in walk order).

    Candidates are tried by paragraph score, highest first, and the search stops when
    even the largest possible weight could not lift a candidate above the best so far.
    """
    frames = [walk.frame(el) for el in walk.candidates]
    order = sorted(range(len(frames)), key=lambda i: frames[i][_SCORE], reverse=True)
    best_score, best_index = float("-inf"), -1
    for i in order:
        el, frame = walk.candidates[i], frames[i]
        if best_score > 0 and frame[_SCORE] + _MAX_WEIGHT < best_score:
            break
        score = _final_score(el, frame)
        if score > best_score or (score == best_score and i < best_index):
            best_score, best_index = score, i
    return best_score, walk.candidates[best_index]


def _choose(walk: _Walk) -> tuple[list[etree._Element], bool]:
    """The containers of the page's own content, and whether only a marked article holds it.

    When the page marks one article (see _marked_article) and the best prose lies outside
    it (a site introduction, a promotion), that prose is the template's: two pages of one
    template read there would look alike. The marked article is read instead, however
    short, and the page then gets no fingerprint rather than one of its template. Nor are
    siblings outside the marked article added to a container inside it.
    """
    marked = _marked_article(walk)
    if not walk.candidates:
        return ([marked] if marked is not None else [walk.body]), marked is not None
    best, chosen = _best_container(walk, marked)
    if marked is None:
        return chosen, False
    if _contains(marked, best):
        return [el for el in chosen if _contains(marked, el)], False
    if _contains(best, marked):
        # A wrapper of the article and more: the article alone when it holds most of
        # the wrapper's prose (the rest is the template's), else the wrapper's reading.
        if walk.frame(marked)[_MASS] >= walk.frame(best)[_MASS] * _ARTICLE_SHARE:
            return [marked], False
        return chosen, False
    return [marked], True


def _best_container(
    walk: _Walk, marked: etree._Element | None
) -> tuple[etree._Element, list[etree._Element]]:
    """The best-scoring container, and it plus the siblings that continue its content
    (or the posts of its thread; ``marked`` is the page's marked article, see _thread)."""
    best_score, best = _best(walk)
    posts = _thread(best, walk, marked)
    if posts:
        return best, posts
    best = _widen(best, walk)
    parent = best.getparent()
    if parent is None or best is walk.body:
        return best, [best]
    threshold = max(10.0, best_score * _SIBLING_SHARE)
    best_mass = walk.frame(best)[_MASS]
    best_key = (best.tag, best.get("class"))
    chosen: list[etree._Element] = []
    for sibling in parent:
        if sibling is best:
            chosen.append(sibling)
            continue
        frame = walk.measured(sibling)
        if frame is None or not frame[_CHARS]:
            continue
        chars, link = frame[_CHARS], frame[_LINK]
        # Repeated units (posts of a thread, sections of one article) share tag and class.
        alike = (
            (sibling.tag, sibling.get("class")) == best_key
            and frame[_MASS] >= best_mass * 0.2
            and not _distinct_regions(best, sibling)
        )
        prose = sibling.tag == "p" and link < chars * 0.25 and chars > 80
        if alike or prose or _final_score(sibling, frame) >= threshold:
            chosen.append(sibling)
    return best, chosen


_DIGITS = str.maketrans("", "", "0123456789")


def _distinct_regions(a: etree._Element, b: etree._Element) -> bool:
    """Whether two classless divs are named as different regions of a layout by their
    ids ("col_2" beside "col_3Outer"), not as repeated units ("post-12", "post-13")."""
    if a.tag != "div" or a.get("class") is not None:
        return False
    first, second = a.get("id"), b.get("id")
    if not first or not second:
        return False
    return first.translate(_DIGITS) != second.translate(_DIGITS)


# The share of a wrapper's paragraph mass that makes the marked article inside it the content.
_ARTICLE_SHARE = 0.5


def _marked_article(walk: _Walk) -> etree._Element | None:
    """The one element the page marks as its article (itemprop=articleBody, <article>,
    <main> or role=main, most specific first), when it marks exactly one of the most
    specific kind it uses, and that element was not dropped as boilerplate and holds a
    paragraph; else None (listings mark every teaser <article>; some themes wrap only the
    headline or nothing in <main>).

    The walk collected the elements that may carry a mark (see _MARK_TAGS), in page order.
    """
    kinds: tuple[list[etree._Element], ...] = ([], [], [])
    for el in walk.marks:
        tag = el.tag
        if el.get("itemprop") == "articleBody":
            kinds[0].append(el)
        if tag == "article":
            kinds[1].append(el)
        if tag == "main" or el.get("role") == "main":
            kinds[2].append(el)
    for found in kinds:
        if len(found) == 1 and walk.frame(found[0])[_MASS] > 0:
            return found[0]
        if found:
            return None
    return None


def _contains(outer: etree._Element, inner: etree._Element) -> bool:
    """Whether ``inner`` is ``outer`` or inside it."""
    return inner is outer or any(x is outer for x in inner.iterancestors())


def _thread(
    best: etree._Element, walk: _Walk, marked: etree._Element | None
) -> list[etree._Element]:
    """The posts of a thread, when ``best`` is one of at least _MIN_POSTS prose blocks
    with its tag and class that hold most of the page's prose; else nothing.

    The page's prose is its marked article's when ``best`` lies inside one: the prose a
    template leaves around the article (a host's boxes, undropped widgets) varies from
    template to template, and the same thread must be read whole in each.

    Forums and Q&A sites render each post's text in one kind of block, but not always
    under one parent (a question and its answers, a topic and its replies): the thread is
    every block of that kind, in page order. Blocks inside another are quotes, read out
    with the block that quotes them.
    """
    cls = best.get("class")
    if not cls or best is walk.body:
        return []
    tag = best.tag
    page = marked if marked is not None and _contains(marked, best) else walk.body
    # Candidates hold paragraphs and come in page order (for blocks that do not nest).
    posts = [el for el in walk.candidates if el.tag == tag and el.get("class") == cls]
    if page is not walk.body:
        posts = [el for el in posts if _contains(page, el)]
    if len(posts) < _MIN_POSTS:
        return []
    chosen = set(posts)
    posts = [el for el in posts if not any(a in chosen for a in el.iterancestors())]
    # Repeated blocks that hold little of the page's prose are a carousel or teasers.
    if sum(walk.frame(el)[_MASS] for el in posts) < walk.frame(page)[_MASS] * _THREAD_SHARE:
        return []
    return posts


def _widen(best: etree._Element, walk: _Walk) -> etree._Element:
    """Climb through wrappers that add no prose of their own.

    On a forum thread the best element is one post's body inside its list item; the list
    item is the unit whose siblings (the other posts) continue the content.
    """
    while best is not walk.body:
        parent = best.getparent()
        if parent is None or parent is walk.body:
            break
        frame = walk.measured(parent)
        if frame is None or frame[_MASS] > walk.frame(best)[_MASS] * _WRAPPER_MASS:
            break
        best = parent
    return best
