"""Scrapy add-on: ``ADDONS = {"scrapy_simhash.Addon": 0}`` turns everything on.

It installs the downloader middleware (priority 540), the spider middleware that drops the
items of near-duplicates passed only for their links (50, when
``SIMHASH_FOLLOW_DUPLICATE_LINKS`` is on) and the item pipeline (800, when
``SIMHASH_ITEM_FIELDS`` is set) unless the project lists them itself, and sets defaults at "addon" priority, so ``settings.py``, spider
``custom_settings`` and ``-s`` still win. With no configuration the index is an embedded
SQLite file in the project's ``.scrapy/`` directory and near-duplicates are pages within 4 bits
(9 of 128 with ``SIMHASH_BITS = 128``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from scrapy_simhash.settings import (
    enabled,
    filing_lease_secs,
    follows_duplicate_links,
    item_fields,
)

if TYPE_CHECKING:
    from scrapy.settings import Settings

#: Defaults the add-on applies; anything set elsewhere overrides them.
DEFAULTS: dict[str, object] = {
    "SIMHASH_DROP_DUPLICATES": True,
    "SIMHASH_ON_INDEX_ERROR": "pass",
}


class Addon:
    """Enable the SimHash middleware and pipeline with sound defaults."""

    def update_settings(self, settings: Settings) -> None:
        """Install the components and defaults; a setting that cannot be read refuses the
        crawl in one line (see :func:`~scrapy_simhash.glue.wiring.refuse_start`)."""
        from scrapy_simhash.exceptions import ConfigurationError
        from scrapy_simhash.glue.wiring import refuse_start

        try:
            self._update_settings(settings)
        except ConfigurationError as exc:
            refuse_start(exc)
            raise

    def _update_settings(self, settings: Settings) -> None:
        if not enabled(settings):
            raise NotConfigured("SIMHASH_ENABLED is False: near-duplicate detection is off")
        from scrapy_simhash.glue.follow import PRIORITY as SPIDER_MW_PRIORITY
        from scrapy_simhash.glue.follow import SimhashSpiderMiddleware
        from scrapy_simhash.glue.middleware import PRIORITY as MIDDLEWARE_PRIORITY
        from scrapy_simhash.glue.middleware import SimhashDownloaderMiddleware

        for name, value in DEFAULTS.items():
            settings.set(name, value, priority="addon")
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", SimhashDownloaderMiddleware, MIDDLEWARE_PRIORITY
        )
        # Each disables itself (NotConfigured, logged) without its setting; installed only
        # with it, neither is logged as disabled in every crawl, nor wraps the spider's output.
        if follows_duplicate_links(settings) or filing_lease_secs(settings) > 0:
            settings.setdefault_in_component_priority_dict(
                "SPIDER_MIDDLEWARES", SimhashSpiderMiddleware, SPIDER_MW_PRIORITY
            )
        if item_fields(settings):
            # Imported only here: itemadapter loads pydantic (60 modules) when it is there.
            from scrapy_simhash.glue.pipeline import PRIORITY as PIPELINE_PRIORITY
            from scrapy_simhash.glue.pipeline import SimhashPipeline

            settings.setdefault_in_component_priority_dict(
                "ITEM_PIPELINES", SimhashPipeline, PIPELINE_PRIORITY
            )
