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

from scrapy_simhash import signals
from scrapy_simhash._settings import get_bool
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError, InvalidKeyError
from scrapy_simhash.glue import config
from scrapy_simhash.glue.config import PipelineConfig
from scrapy_simhash.glue.guard import BackendUnavailable
from scrapy_simhash.glue.wiring import (
    guarded_index,
    index_kwargs,
    record_drop,
    report_unusable_index,
    send_signal,
    validate_index,
)
from scrapy_simhash.index.keys import index_key

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger("scrapy_simhash.pipeline")  # the name users filter on

#: Priority in ITEM_PIPELINES used by the add-on: late, after cleaning pipelines.
PRIORITY = 800

#: Key prefix of items without a key field: each is its own entry, never looked up.
ANONYMOUS = "item:"


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
        if not get_bool(settings, "SIMHASH_ENABLED", True):
            raise NotConfigured("SIMHASH_ENABLED is False: near-duplicate detection is off")
        self.config = PipelineConfig.from_settings(settings)
        if not self.config.text_fields:
            raise NotConfigured(
                "SIMHASH_ITEM_FIELDS is empty: set it to the item fields holding the text to "
                "compare (e.g. ['body']) to drop near-duplicate items"
            )
        from scrapy_simhash.fingerprint import FingerprintConfig, Fingerprinter, to_hex

        self._to_hex = to_hex
        self.crawler = crawler
        self.stats = crawler.stats
        self.fingerprinter = Fingerprinter(FingerprintConfig.from_settings(settings))
        spider_name = getattr(crawler.spidercls, "name", None)
        self.namespace = f"{config.namespace(settings, spider_name)}:items"
        url = config.index_url(settings)
        kwargs = index_kwargs(
            settings,
            namespace=self.namespace,
            bits=self.fingerprinter.bits,
            scheme=self.fingerprinter.scheme,
        )
        validate_index(url, kwargs)
        self.index = guarded_index(url, kwargs, self.config.guard, lambda: self._inc("index_error"))
        self._unusable_reported = False
        crawler.signals.connect(self._spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashPipeline:
        return cls(crawler)

    async def _spider_closed(self, spider: Any = None, reason: str = "") -> None:
        await self.index.aclose()

    def _inc(self, name: str) -> None:
        self.stats.inc_value(f"simhash/items_{name}")

    def _key(self, adapter: ItemAdapter) -> str:
        field = self.config.key_field
        value = adapter.get(field) if field else None
        # Without a key every item is its own entry: an identical item is then a duplicate,
        # never a "new version" of the first one.
        return index_key(str(value)) if value else f"{ANONYMOUS}{uuid.uuid4().hex}"

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        adapter = ItemAdapter(item)
        self._inc("seen")
        text = "\n".join(_text(adapter.get(f)) for f in self.config.text_fields).strip()
        title = _text(adapter.get(self.config.title_field)) if self.config.title_field else ""
        fp = self.fingerprinter.fingerprint_text(text, title)
        if fp is None:
            self._inc("no_text")
            return item
        if self.config.fingerprint_field:
            adapter[self.config.fingerprint_field] = self._to_hex(fp, self.fingerprinter.bits)
        try:
            key = self._key(adapter)
            observation = await self.index.call(lambda index: index.observe(key, fp))
        except BackendUnavailable as exc:
            return self._index_failed(item, str(exc))
        except InvalidKeyError as exc:  # this item's key alone: the item passes
            self._inc("invalid_key")
            logger.warning("SimHash cannot check an item, passing it: %s", exc)
            return item
        except ConfigurationError as exc:
            self._inc("index_unusable")
            if not self._unusable_reported:
                self._unusable_reported = True
                report_unusable_index(self.crawler, self.config.on_mismatch, exc)
            return item
        match = observation.match
        if match is None:
            self._inc("unique")
            return item
        self._inc("duplicate")
        info = {"key": key, "duplicate_of": match.key, "distance": match.distance}
        if not self.config.drop_duplicates:
            return item
        self._inc("dropped")
        if not key.startswith(ANONYMOUS):  # keyed by a field: worth a lookup later
            await record_drop(self.index, key, match.key, match.distance)
        await send_signal(self.crawler, signals.item_dropped, item=item, info=info)
        raise DropItem(f"near-duplicate of item {match.key} (distance {match.distance})")

    def _index_failed(self, item: Any, error: str) -> Any:
        policy = self.config.guard.on_error
        if policy == "drop":
            self._inc("dropped")
            raise DropItem(f"SimHash index unavailable ({error}); SIMHASH_ON_INDEX_ERROR=drop")
        if policy == "raise":
            raise IndexBackendError(
                f"SimHash index unavailable while checking an item: {error} "
                "(set SIMHASH_ON_INDEX_ERROR=pass to let items through)"
            )
        return item
