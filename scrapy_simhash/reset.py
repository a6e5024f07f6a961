"""Clearing everything a namespace holds, in one place (pure: no Scrapy import).

``SIMHASH_INDEX_RESET`` and ``scrapy simhash reset`` both come here, so a reset can never
leave one kind of state behind: the near-duplicate index (which is rebuilt with the
current settings) with its record of dropped copies, and the recrawl schedule. A new kind
of per-namespace state adds one function to :data:`PARTS`; it then takes part in every
reset and in its report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_simhash.exceptions import IndexMismatchError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cleared:
    """One kind of state a reset cleared: ``count`` items, or a note when not countable."""

    what: str
    count: int | None
    note: str = ""

    def __str__(self) -> str:
        if self.count is None:
            return f"{self.what} ({self.note})" if self.note else self.what
        return f"{self.count} {self.what}"


#: ``(url, namespace, index options) -> what it cleared``; ``url`` None is the embedded
#: SQLite file.
ResetPart = Callable[[str | None, str, Mapping[str, Any]], list[Cleared]]


def _index(url: str | None, namespace: str, options: Mapping[str, Any]) -> list[Cleared]:
    """The fingerprints and the drop record: a backend keeps both in the namespace's index."""
    from scrapy_simhash.index import open_index

    kwargs = {**options, "namespace": namespace, "reset": False}
    counts: tuple[int | None, int | None] = (None, None)
    note = ""
    try:
        with open_index(url, **kwargs) as index:
            counts = (index.count(), index.drop_count())
    except IndexMismatchError:
        note = "built with other settings"
    # Reopening with reset=True wipes the namespace and records the current settings.
    open_index(url, **{**kwargs, "reset": True}).close()
    return [Cleared("fingerprints", counts[0], note), Cleared("drop records", counts[1], note)]


def _recrawl(url: str | None, namespace: str, options: Mapping[str, Any]) -> list[Cleared]:
    from scrapy_simhash.recrawl import open_recrawl_store

    client = dict(options.get("options") or {})  # SIMHASH_INDEX_OPTIONS, as the index's
    with open_recrawl_store(url, namespace=namespace, options=client) as store:
        count = store.count()
        store.clear()
    return [Cleared("recrawl states", count)]


def _rules(url: str | None, namespace: str, options: Mapping[str, Any]) -> list[Cleared]:
    """URL rules (SIMHASH_DUST_ENABLED); reported only when there were some."""
    from scrapy_simhash.dust import open_rule_store

    with open_rule_store(url, namespace) as store:
        count = store.clear()
    return [Cleared("URL rules", count)] if count else []


def _templates(url: str | None, namespace: str, options: Mapping[str, Any]) -> list[Cleared]:
    """The hosts' template memory; reported only when there was some."""
    from scrapy_simhash.storage import open_template_store

    store = open_template_store(url, namespace)
    try:
        count = store.clear()
    finally:
        store.close()
    return [Cleared("host templates", count)] if count else []


#: Every kind of state a namespace holds, cleared in this order.
PARTS: list[ResetPart] = [_rules, _templates, _index, _recrawl]


def reset_namespace(
    url: str | None, namespace: str, index_options: Mapping[str, Any] | None = None
) -> list[Cleared]:
    """Clear all state of ``namespace`` at ``url``; return what was cleared, part by part.

    ``index_options`` are the keyword arguments of ``open_index`` (bits, scheme, max
    distance...): the rebuilt index records them, so the next crawl accepts it.
    """
    options = dict(index_options or {})
    options.pop("url", None)
    cleared = [item for part in PARTS for item in part(url, namespace, options)]
    logger.info(
        "SimHash state of namespace %r cleared: %s", namespace, ", ".join(map(str, cleared))
    )
    return cleared
