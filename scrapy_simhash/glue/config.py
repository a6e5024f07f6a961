"""Where the embedded index lives in a Scrapy project, and the index URL a crawl uses.

Everything else about settings is in :mod:`scrapy_simhash.settings`; only the default
index location needs Scrapy (the project's data dir, found from ``scrapy.cfg``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from scrapy_simhash import settings as simhash_settings

#: File name of the embedded index inside the project data dir (``.scrapy/``).
DEFAULT_INDEX_FILE = "simhash/index.sqlite3"


def default_index_url(*, create: bool = True) -> str:
    """Embedded SQLite index in the project data dir (found from ``scrapy.cfg`` in this
    folder or a parent), its directory created on demand: never by a read-only command."""
    if create:
        from scrapy.utils.project import data_path

        path = os.path.abspath(data_path(DEFAULT_INDEX_FILE))
        os.makedirs(os.path.dirname(path), exist_ok=True)
    else:
        path = os.path.abspath(os.path.join(_data_dir(), DEFAULT_INDEX_FILE))
    return f"sqlite:///{path}"


def _data_dir() -> str:
    """Scrapy's project data dir (``project_data_dir``) without creating it."""
    from scrapy.utils.conf import closest_scrapy_cfg, get_config
    from scrapy.utils.project import inside_project

    if not inside_project():
        return ".scrapy"
    cfg = get_config()
    if cfg.has_option("datadir", "default"):
        return str(cfg.get("datadir", "default"))
    found = closest_scrapy_cfg()
    return os.path.join(os.path.dirname(found), ".scrapy") if found else ".scrapy"


def index_url(settings: Mapping[str, Any], *, create: bool = True) -> str:
    """The index URL a crawl in this project uses (``SIMHASH_INDEX_URL`` or the default)."""
    return simhash_settings.index_url(settings) or default_index_url(create=create)
