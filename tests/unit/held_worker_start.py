"""An extractor whose import holds a fingerprint worker's start-up until the test lets it go.

A worker imports the extractor its configuration names before it takes any page. Imported
in any process but the test's own (``SIMHASH_TEST_HOLD_OWNER``), this module opens the FIFO
``SIMHASH_TEST_HOLD_FIFO`` for reading, which blocks until the test opens it for writing: the
test decides when the worker has started, without timing anything.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from scrapy_simhash.text import MainText, extract_main_text

_FIFO = os.environ.get("SIMHASH_TEST_HOLD_FIFO")
if _FIFO and str(os.getpid()) != os.environ.get("SIMHASH_TEST_HOLD_OWNER"):
    with open(_FIFO, "rb"):
        pass


def extractor(body: Any, **kwargs: Any) -> MainText:
    """The built-in extractor, noting in which process it ran."""
    main = extract_main_text(body, **kwargs)
    return replace(main, notes=(*main.notes, f"read in process {os.getpid()}"))
