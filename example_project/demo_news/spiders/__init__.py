"""Spiders of the demo project."""

from __future__ import annotations
