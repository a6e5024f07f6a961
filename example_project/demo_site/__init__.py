"""The Lantern: a small news site, bundled with the demo, with all the copies real sites have."""

from __future__ import annotations
