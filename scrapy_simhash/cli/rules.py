"""``rules``: the URL rules learned in a namespace (SIMHASH_DUST_ENABLED), with their support,
checks passed and counterexamples."""

from __future__ import annotations

import argparse
from typing import Any

from scrapy_simhash._redis import mask_url
from scrapy_simhash.cli._target import add_store_options, require_existing, resolve


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "rules",
        parents=[common],
        help="URL rules learned from the copies a crawl found, with support and counterexamples",
        description=(
            "List the URL rewrite rules crawls with SIMHASH_DUST_ENABLED learned in a "
            "namespace: trusted (enough support and checks passed, no counterexample: "
            "requests they map to a kept page are not fetched), checking (enough support: "
            "those requests are fetched and checked until SIMHASH_DUST_MIN_CHECKS pass), "
            "learning, and dead (a counterexample was found)."
        ),
    )
    add_store_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from scrapy_simhash.dust import open_rule_store
    from scrapy_simhash.dust.book import MIN_CHECKS, MIN_SUPPORT
    from scrapy_simhash.dust.listing import format_rules
    from scrapy_simhash.settings import dust_min_checks, dust_min_support
    from scrapy_simhash.settings.names import in_setting_names

    target = resolve(args)
    require_existing(target.url)
    min_support = dust_min_support(target.settings, default=MIN_SUPPORT)
    min_checks = dust_min_checks(target.settings, default=MIN_CHECKS)
    with open_rule_store(target.url, target.namespace) as store:
        states = store.rules()
    print(f"URL rules of namespace {target.namespace!r} in {mask_url(target.index_url)}:")
    for line in format_rules(states, min_support, min_checks):
        print(in_setting_names(line))
    return 0
