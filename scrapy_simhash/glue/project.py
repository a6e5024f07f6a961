"""Which settings and namespace a command line acts on: exactly those of the crawl.

A crawl reads the project's ``settings.py`` (found by ``scrapy.cfg`` in the current folder
or a parent), then the spider's ``custom_settings``, then ``-s`` options; its namespace is
``SIMHASH_NAMESPACE`` or the spider's name. Both command lines (``scrapy simhash`` and
``scrapy-simhash``) resolve them the same way here, so they inspect the state the crawl
wrote, and refuse a spider name the project does not have instead of showing an empty
namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy.settings import Settings

from scrapy_simhash import settings as simhash_settings
from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.settings import given_namespace


def spider_names(settings: Settings) -> list[str]:
    """The project's spiders (none outside a project or when its modules fail to import)."""
    if not settings.getlist("SPIDER_MODULES"):
        return []
    try:
        from scrapy.spiderloader import get_spider_loader

        return sorted(get_spider_loader(settings).list())
    except Exception:  # noqa: BLE001 (spider modules that fail to import: no list)
        return []


def crawl_settings(
    spider: str | None,
    *,
    base: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    namespace_given: bool = False,
) -> tuple[Settings, str | None]:
    """Return the settings a crawl of ``spider`` runs with, and the spider it chose.

    ``base`` is the project's settings (default: found from the current folder); without
    ``spider`` and a namespace (``namespace_given``, ``SIMHASH_NAMESPACE``) a project's
    only spider is chosen. A name the
    project does not know is an error listing the ones it does; outside a project (no
    spiders at all) the name is only used as the namespace.
    """
    if base is None:
        from scrapy.utils.project import get_project_settings

        base = get_project_settings()
    settings = base.copy()
    if overrides:
        settings.setdict(dict(overrides), priority="cmdline")
    names = spider_names(settings)
    if spider is None and not namespace_given and not given_namespace(settings):
        if len(names) > 1:
            raise ConfigurationError(
                f"this project has several spiders ({', '.join(names)}): pass --spider NAME "
                "(or --namespace NAME)"
            )
        spider = names[0] if names else None
    if spider is not None and names:
        if spider not in names:
            raise ConfigurationError(
                f"no spider named {spider!r} in this project; its spiders: {', '.join(names)}"
            )
        from scrapy.spiderloader import get_spider_loader

        get_spider_loader(settings).load(spider).update_settings(settings)
    return settings, spider


def namespace(settings: Settings, spider: str | None, explicit: str | None = None) -> str:
    """The namespace the crawl of ``spider`` writes (``explicit`` wins: --namespace)."""
    return explicit or simhash_settings.namespace(settings, spider)
