"""Which containers hold the page's own content: the best-scoring one, widened through
wrappers and joined by the siblings that continue it, a thread of posts, or the one
article the page marks.

Choosing is separate from scoring because the page's own marks (``itemprop=articleBody``,
a single ``<article>``) can overrule the scores: prose outside the marked article is the
template's.
"""

from __future__ import annotations

from scrapy_simhash.text.rules import _MIN_POSTS, _SIBLING_SHARE, _THREAD_SHARE, _WRAPPER_MASS
from scrapy_simhash.text.tree import Tree
from scrapy_simhash.text.walk import _CHARS, _LINK, _MASS, _MAX_WEIGHT, _SCORE, _final_score, _Walk


def _best(walk: _Walk) -> tuple[float, int]:
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
        score = _final_score(walk.tree, el, frame)
        if score > best_score or (score == best_score and i < best_index):
            best_score, best_index = score, i
    return best_score, walk.candidates[best_index]


def _choose(walk: _Walk) -> tuple[list[int], bool]:
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
    tree = walk.tree
    if _contains(tree, marked, best):
        return [el for el in chosen if _contains(tree, marked, el)], False
    if _contains(tree, best, marked):
        # A wrapper of the article and more: the article alone when it holds most of
        # the wrapper's prose (the rest is the template's), else the wrapper's reading.
        if walk.frame(marked)[_MASS] >= walk.frame(best)[_MASS] * _ARTICLE_SHARE:
            return [marked], False
        return chosen, False
    return [marked], True


def _best_container(walk: _Walk, marked: int | None) -> tuple[int, list[int]]:
    """The best-scoring container, and it plus the siblings that continue its content
    (or the posts of its thread; ``marked`` is the page's marked article, see _thread)."""
    best_score, best = _best(walk)
    posts = _thread(best, walk, marked)
    if posts:
        return best, posts
    best = _widen(best, walk)
    tree = walk.tree
    parent = tree.parent(best)
    if parent is None or best == walk.body:
        return best, [best]
    threshold = max(10.0, best_score * _SIBLING_SHARE)
    best_mass = walk.frame(best)[_MASS]
    best_key = (tree.tag(best), tree.get(best, "class"))
    chosen: list[int] = []
    for sibling in tree.children(parent):
        if sibling == best:
            chosen.append(sibling)
            continue
        frame = walk.measured(sibling)
        if frame is None or not frame[_CHARS]:
            continue
        chars, link = frame[_CHARS], frame[_LINK]
        # Repeated units (posts of a thread, sections of one article) share tag and class.
        tag = tree.tag(sibling)
        alike = (
            (tag, tree.get(sibling, "class")) == best_key
            and frame[_MASS] >= best_mass * 0.2
            and not _distinct_regions(tree, best, sibling)
        )
        prose = tag == "p" and link < chars * 0.25 and chars > 80
        if alike or prose or _final_score(tree, sibling, frame) >= threshold:
            chosen.append(sibling)
    return best, chosen


_DIGITS = str.maketrans("", "", "0123456789")


def _distinct_regions(tree: Tree, a: int, b: int) -> bool:
    """Whether two classless divs are named as different regions of a layout by their
    ids ("col_2" beside "col_3Outer"), not as repeated units ("post-12", "post-13")."""
    if tree.tag(a) != "div" or tree.get(a, "class") is not None:
        return False
    first, second = tree.get(a, "id"), tree.get(b, "id")
    if not first or not second:
        return False
    return first.translate(_DIGITS) != second.translate(_DIGITS)


# The share of a wrapper's paragraph mass that makes the marked article inside it the content.
_ARTICLE_SHARE = 0.5


def _marked_article(walk: _Walk) -> int | None:
    """The one element the page marks as its article (itemprop=articleBody, <article>,
    <main> or role=main, most specific first), when it marks exactly one of the most
    specific kind it uses, and that element was not dropped as boilerplate and holds a
    paragraph; else None (listings mark every teaser <article>; some themes wrap only the
    headline or nothing in <main>).

    The walk collected the elements that may carry a mark (see _MARK_TAGS), in page order.
    """
    tree = walk.tree
    kinds: tuple[list[int], ...] = ([], [], [])
    for el in walk.marks:
        tag = tree.tag(el)
        if tree.get(el, "itemprop") == "articleBody":
            kinds[0].append(el)
        if tag == "article":
            kinds[1].append(el)
        if tag == "main" or tree.get(el, "role") == "main":
            kinds[2].append(el)
    for found in kinds:
        if len(found) == 1 and walk.frame(found[0])[_MASS] > 0:
            return found[0]
        if found:
            return None
    return None


def _contains(tree: Tree, outer: int, inner: int) -> bool:
    """Whether ``inner`` is ``outer`` or inside it."""
    return inner == outer or outer in _ancestors(tree, inner)


def _ancestors(tree: Tree, el: int) -> list[int]:
    """The elements ``el`` lies in, nearest first."""
    found = []
    parent = tree.parent(el)
    while parent is not None:
        found.append(parent)
        parent = tree.parent(parent)
    return found


def _thread(best: int, walk: _Walk, marked: int | None) -> list[int]:
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
    tree = walk.tree
    cls = tree.get(best, "class")
    if not cls or best == walk.body:
        return []
    tag = tree.tag(best)
    page = marked if marked is not None and _contains(tree, marked, best) else walk.body
    # Candidates hold paragraphs and come in page order (for blocks that do not nest).
    posts = [el for el in walk.candidates if tree.tag(el) == tag and tree.get(el, "class") == cls]
    if page != walk.body:
        posts = [el for el in posts if _contains(tree, page, el)]
    if len(posts) < _MIN_POSTS:
        return []
    chosen = set(posts)
    posts = [el for el in posts if chosen.isdisjoint(_ancestors(tree, el))]
    # Repeated blocks that hold little of the page's prose are a carousel or teasers.
    if sum(walk.frame(el)[_MASS] for el in posts) < walk.frame(page)[_MASS] * _THREAD_SHARE:
        return []
    return posts


def _widen(best: int, walk: _Walk) -> int:
    """Climb through wrappers that add no prose of their own.

    On a forum thread the best element is one post's body inside its list item; the list
    item is the unit whose siblings (the other posts) continue the content.
    """
    while best != walk.body:
        parent = walk.tree.parent(best)
        if parent is None or parent == walk.body:
            break
        frame = walk.measured(parent)
        if frame is None or frame[_MASS] > walk.frame(best)[_MASS] * _WRAPPER_MASS:
            break
        best = parent
    return best
