"""``scrapy-simhash compare A B``: how far apart two pages are, and why.

Two files alone teach no template (a host's needs 4 pages): ``--site DIR`` first learns the
template of the host from the pages under DIR, as a crawl would have, and each side then
says whether its main text was the template and was read by its other text instead.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from scrapy_simhash.cli import settings_from_args
from scrapy_simhash.cli._documents import (
    Document,
    add_distance_option,
    add_text_option,
    expand,
    fingerprinter_from_settings,
    load,
    max_distance,
)
from scrapy_simhash.fingerprint import Fingerprinter, hamming, similarity
from scrapy_simhash.template import LocalMemory

#: The one host of a comparison with --site.
SITE = "site"


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "compare",
        parents=[common],
        help="Hamming distance of two pages and the features that set them apart",
        description=(
            "Fingerprint two pages (files or '-') as a crawl would and explain their "
            "distance with the heaviest features only one of them has."
        ),
    )
    parser.add_argument("a", metavar="A")
    parser.add_argument("b", metavar="B")
    add_distance_option(parser)
    parser.add_argument("--top", type=int, default=10, help="features listed per side")
    parser.add_argument(
        "--site", metavar="DIR",
        help="learn the pages' host template from the pages under DIR first (both A and B "
             "are taken to be of that host)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_text_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    fingerprinter = fingerprinter_from_settings(settings)
    k = max_distance(args, settings)
    templates = None
    if args.site:
        templates = LocalMemory(fingerprinter)
        for path in expand([args.site]):
            page = load(fingerprinter, path, text=args.text).page
            if page is not None:
                templates.learn(SITE, page)
    a = load(fingerprinter, args.a, text=args.text, host=SITE, templates=templates)
    b = load(fingerprinter, args.b, text=args.text, host=SITE, templates=templates)
    report = compare(fingerprinter, a, b, k=k, top=args.top)
    report["template"] = (
        {"learned_from_pages": templates.pages(SITE)} if templates is not None else None
    )
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    return 1 if a.error or b.error else 0


def compare(
    fingerprinter: Fingerprinter, a: Document, b: Document, *, k: int, top: int
) -> dict[str, Any]:
    """Distance, similarity and the heaviest one-sided features, as a JSON-ready dict."""
    bits = fingerprinter.bits
    report: dict[str, Any] = {"a": a.as_json(bits), "b": b.as_json(bits), "bits": bits}
    pa, pb = a.page, b.page
    if pa is None or pb is None or pa.fingerprint is None or pb.fingerprint is None:
        report.update(distance=None, similarity=None, near_duplicate=None)
        return report
    distance = hamming(pa.fingerprint, pb.fingerprint)
    report.update(
        distance=distance,
        similarity=round(similarity(pa.fingerprint, pb.fingerprint, bits), 4),
        near_duplicate=distance <= k,
        k=k,
    )
    features_a = fingerprinter.features(a.text, pa.title)
    features_b = fingerprinter.features(b.text, pb.title)
    report["only_a"] = _heaviest(features_a, features_b, top)
    report["only_b"] = _heaviest(features_b, features_a, top)
    return report


def _heaviest(
    mine: dict[str, float], theirs: dict[str, float], top: int
) -> list[tuple[str, float]]:
    own = [(name, weight) for name, weight in mine.items() if name not in theirs]
    own.sort(key=lambda item: (-item[1], item[0]))
    return [(name, round(weight, 2)) for name, weight in own[:top]]


def render(report: dict[str, Any]) -> str:
    lines = []
    for side in ("a", "b"):
        doc = report[side]
        state = doc.get("fingerprint") or doc.get("error") or doc.get("reason")
        lines.append(f"{side.upper()}: {doc['path']}  {state}")
        if doc.get("title"):
            lines.append(f"   title: {doc['title']}  ({doc['chars']} chars)")
        if doc.get("template_lines"):
            lines.append(
                f"   template: the main text is the host's template; read by the page's "
                f"other text ({doc['template_lines']} template line(s) set aside)"
            )
    template = report.get("template")
    lines.append(
        "template: none applied (no --site given; two files teach no template)"
        if template is None
        else f"template: learned from {template['learned_from_pages']} page(s) under --site"
    )
    if report["distance"] is None:
        lines.append("no distance: a page has no fingerprint")
        return "\n".join(lines)
    verdict = "near-duplicates" if report["near_duplicate"] else "different"
    lines.append(
        f"distance {report['distance']} of {report['bits']} bits, similarity "
        f"{report['similarity']:.1%}: {verdict} at k={report['k']}"
    )
    for side in ("a", "b"):
        words = ", ".join(f"{name} ({weight:g})" for name, weight in report[f"only_{side}"])
        lines.append(f"only in {side.upper()}: {words or '(nothing)'}")
    return "\n".join(lines)
