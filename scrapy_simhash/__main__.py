"""``python -m scrapy_simhash`` runs the command line."""

from __future__ import annotations

import sys

from scrapy_simhash.cli import main

sys.exit(main())
