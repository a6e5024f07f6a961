"""Main-text extraction: the part of a page that is the page's own content.

Near-duplicate detection lives or dies here. Pages of one site share their navigation,
footer, sidebars and banners; fingerprinting the whole page makes two different articles
of one site look alike, and the same article on two sites look different. So the page is
reduced to its main text before anything is hashed:

1. obvious non-content is dropped by tag (scripts, styles, nav, aside, footer, forms'
   controls), by visibility (``hidden``, ``aria-hidden``, ``display:none``), by ARIA role
   and by class/id names that templates use for boilerplate (comments, share bars,
   related links, cookie banners...);
2. one walk over the remaining tree measures every element (text length, link text
   length) and scores text blocks in the readability fashion: each paragraph credits its
   parent and grandparent, so the element that directly holds most of the prose wins,
   discounted by its link density and nudged by semantic hints (``<article>``,
   ``itemprop=articleBody``, content-like class names);
3. the best container and its qualifying siblings are read out line by line, skipping
   link lists and the headline (the title is returned on its own).

Everything is a single pass of cheap per-element work over the tree lexbor parses by the
HTML5 rules (through selectolax), read in place by the compiled walk; no step looks at
individual characters in Python.

Each step is a module of its own: ``rules`` (the vocabularies and thresholds), ``decode``
(bytes to text), ``parse`` (text to a repaired tree, its cost bounded), ``tree`` (what is
asked of it), ``walk`` (measuring and scoring),
``choose`` (the containers of the content), ``readout`` (their text and the title), and
``extract`` (the steps in order).
"""

from __future__ import annotations

from scrapy_simhash.text.extract import MainText, extract_main_text

__all__ = ["MainText", "extract_main_text"]
