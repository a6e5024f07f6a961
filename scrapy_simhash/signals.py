"""Signals sent by the SimHash components, for extensions, reports and demos.

Handlers receive ``request``, ``response`` and ``info`` (the dict also stored in
``response.meta["simhash"]``). They may be coroutines: the middleware waits for them.

``near_duplicate``
    A response's main text is within ``SIMHASH_MAX_DISTANCE`` bits of a page kept under another
    key; ``info["duplicate_of"]`` names it. Sent before the response is dropped.
``page_observed``
    Every considered response, after the decision (unique, duplicate, changed or not).
``known_copy_skipped``
    A request was not fetched: trusted URL rules name it a copy of a kept page
    (``SIMHASH_DUST_ENABLED``). Handlers receive ``request``, ``kept_url`` and ``rules``.
``item_dropped``
    The pipeline dropped a near-duplicate item: handlers receive ``item`` and ``info``.
"""

from __future__ import annotations

near_duplicate = object()
page_observed = object()
item_dropped = object()
known_copy_skipped = object()
