"""Item pipeline: drop items whose text is a near-duplicate of an item already kept.

Use it when duplicates only show after extraction (the same article under several templates
whose boilerplate differs a lot), or when items come from sources other than HTML pages. Item
fingerprints live in their own namespace (``<namespace>:items``) so they never match pages.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals as scrapy_signals
from scrapy.exceptions import DropItem, NotConfigured

from scrapy_simhash import settings as simhash_settings
from scrapy_simhash import signals
from scrapy_simhash.exceptions import InvalidKeyError
from scrapy_simhash.glue.stores import CrawlStores
from scrapy_simhash.glue.wiring import (
    IndexErrorPolicy,
    refusing_start,
    report_lost_namespace,
    send_signal,
)
from scrapy_simhash.index.keys import index_key
from scrapy_simhash.judge import Judge
from scrapy_simhash.settings import PipelineConfig, enabled, fingerprint_config
from scrapy_simhash.verdict import DUPLICATE, INVALID_KEY

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger("scrapy_simhash.pipeline")  # the name users filter on

#: Priority in ITEM_PIPELINES used by the add-on: late, after cleaning pipelines.
PRIORITY = 800

#: Key prefix of items without a key field: each is its own entry, never looked up.
ANONYMOUS = "item:"


#: Items without any of SIMHASH_ITEM_FIELDS before the pipeline says the setting looks wrong.
FIELDS_WARN_AFTER_ITEMS = 20


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(v) for v in value)
    return str(value)


class SimhashPipeline:
    """Fingerprint configured item fields and drop near-duplicate items."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not enabled(settings):
            raise NotConfigured("SIMHASH_ENABLED is False: near-duplicate detection is off")
        self.config = PipelineConfig.from_settings(settings)
        if not self.config.text_fields:
            raise NotConfigured(
                "SIMHASH_ITEM_FIELDS is empty: set it to the item fields holding the text to "
                "compare (e.g. ['body']) to drop near-duplicate items"
            )
        from scrapy_simhash.fingerprint import Fingerprinter

        self.crawler = crawler
        self.stats = crawler.stats
        self.fingerprinter = Fingerprinter(fingerprint_config(settings))
        spider_name = getattr(crawler.spidercls, "name", None)
        self.namespace = f"{simhash_settings.namespace(settings, spider_name)}:items"
        # Items have no schedule and no canonical URLs: the step only asks the index.
        self.stores = CrawlStores.open(
            crawler,
            namespace=self.namespace,
            fingerprinter=self.fingerprinter,
            guard=self.config.guard,
            count=self._inc,
            on_lost=self._index_lost,
        )
        self.index, self.verdicts = self.stores.index, self.stores.verdicts
        self.judge = Judge(self.verdicts)  # items have no host template
        self.errors = IndexErrorPolicy(
            crawler, self.config.guard.on_error, self.config.on_mismatch, self._inc
        )
        crawler.signals.connect(self._spider_closed, signal=scrapy_signals.spider_closed)
        #: Item classes already warned about (the fingerprint field they cannot hold).
        self._no_field_warned: set[type] = set()
        #: Items whose SIMHASH_ITEM_FIELDS were all missing, and whether that was told.
        self._without_fields = 0
        self._fields_warned = False

    @classmethod
    @refusing_start
    def from_crawler(cls, crawler: Crawler) -> SimhashPipeline:
        return cls(crawler)

    async def _spider_closed(self, spider: Any = None, reason: str = "") -> None:
        await self.stores.aclose()

    def _inc(self, name: str, count: int = 1) -> None:
        self.stats.inc_value(f"simhash/items_{name}", count)

    def _index_lost(self) -> None:
        """The storage lost the items' namespace mid-crawl (see the middleware's)."""
        get = self.stats.get_value
        kept = get("simhash/items_unique", 0) + get("simhash/items_outage/indexed_later", 0)
        report_lost_namespace(
            self.crawler,
            self.config.guard.on_lost,
            url=self.stores.url,
            namespace=self.namespace,
            lost=f"the fingerprints of the items kept ({kept} of them by this crawl process) "
            "and their drop records",
            count=self._inc,
            log=logger,
        )

    def _invalid_key(self, item: Any, error: object) -> Any:
        self._inc("invalid_key")
        logger.warning("SimHash cannot check an item, passing it: %s", error)
        return item

    def _key(self, adapter: ItemAdapter) -> str:
        field = self.config.key_field
        value = adapter.get(field) if field else None
        # Without a key every item is its own entry: an identical item is then a duplicate,
        # never a "new version" of the first one.
        return index_key(str(value)) if value else f"{ANONYMOUS}{uuid.uuid4().hex}"

    def _write_fingerprint(self, adapter: ItemAdapter, item: Any, value: str) -> None:
        """Write the fingerprint field where the item can hold it; an item class without
        that field (a dataclass, an attrs class, a Scrapy Item not declaring it) keeps the
        item as it is: it is never lost for a field this package wants to write."""
        name = self.config.fingerprint_field
        assert name is not None
        try:
            adapter[name] = value
        except (KeyError, TypeError, AttributeError) as exc:
            kind = type(item)
            if kind not in self._no_field_warned:
                self._no_field_warned.add(kind)
                logger.warning(
                    "SimHash cannot write SIMHASH_ITEM_FINGERPRINT_FIELD %r to %s items "
                    "(%s): they pass without it; declare the field or set the setting to ''",
                    name,
                    kind.__name__,
                    type(exc).__name__,
                )
            self._inc("fingerprint_field_missing")

    def _count_missing_fields(self, adapter: ItemAdapter) -> None:
        """SIMHASH_ITEM_FIELDS that no item has turn dedup off: say so once."""
        if any(adapter.get(f) is not None for f in self.config.text_fields):
            self._without_fields = -1  # a field was seen: the setting names real fields
            return
        if self._without_fields < 0 or self._fields_warned:
            return
        self._without_fields += 1
        if self._without_fields >= FIELDS_WARN_AFTER_ITEMS:
            self._fields_warned = True
            logger.warning(
                "SimHash: none of the first %d items has any of SIMHASH_ITEM_FIELDS %s, so "
                "no item is compared; check the field names (item fields: %s)",
                self._without_fields,
                list(self.config.text_fields),
                sorted(adapter.keys()) or "none",
            )

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        adapter = ItemAdapter(item)
        self._inc("seen")
        self._count_missing_fields(adapter)
        text = "\n".join(_text(adapter.get(f)) for f in self.config.text_fields).strip()
        title = _text(adapter.get(self.config.title_field)) if self.config.title_field else ""
        page = self.fingerprinter.fingerprint_document(text, title)
        fp = page.fingerprint
        if fp is None:
            self._inc("no_text")
            return item
        if self.config.fingerprint_field:
            self._write_fingerprint(adapter, item, self.verdicts.hex(fp))
        try:
            key = self._key(adapter)
        except InvalidKeyError as exc:  # this item's key alone: the item passes
            return self._invalid_key(item, exc)
        # Keyed by a field, a dropped (or marked) item is worth a record for `lookup`;
        # anonymous ones not.
        verdict = await self.judge.page(
            key,
            key,
            page,
            None,
            record_drops=not key.startswith(ANONYMOUS),
            marking=not self.config.drop_duplicates,
        )
        if verdict.rejected:
            self._inc("confirm_rejected", verdict.rejected)
        if self.errors.apply(verdict, checking="an item", things="items", drop=DropItem):
            return item
        if verdict.outcome == INVALID_KEY:
            return self._invalid_key(item, verdict.error)
        if verdict.outcome != DUPLICATE:
            self._inc("unique")
            return item
        self._inc("duplicate")
        if not self.config.drop_duplicates:
            return item
        self._inc("dropped")
        info = {"key": key, "duplicate_of": verdict.duplicate_of, "distance": verdict.distance}
        await send_signal(self.crawler, signals.item_dropped, item=item, info=info)
        raise DropItem(
            f"near-duplicate of item {verdict.duplicate_of} (distance {verdict.distance})"
        )
