"""Scrapy project crawling the bundled demo news site with scrapy-simhash enabled."""

from __future__ import annotations
