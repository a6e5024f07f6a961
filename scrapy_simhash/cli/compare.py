"""``scrapy-simhash compare A B``: how far apart two pages are, and which test set them apart.

A crawl drops a page when both tests agree: its fingerprint is within k bits of a kept
page's (a candidate), and the second test, a keyed resemblance signature of the two own
texts, confirms it (:mod:`scrapy_simhash.confirm`). The report gives both figures, the
shingle resemblance they estimate and the chance that a namespace's key confirms the pair
(the signature is a random draw per key). ``--pairs FILE`` judges many pairs in one
process, one JSON line each: how a user checks the decision on pairs of their own.

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
    COMMAND_LINE_KEY,
    Document,
    add_distance_option,
    add_show_text_option,
    add_text_option,
    expand,
    fingerprinter_from_settings,
    load,
    max_distance,
)
from scrapy_simhash.confirm import Signer, confirms, pass_probability, score, shingles
from scrapy_simhash.fingerprint import Fingerprinter, hamming, similarity
from scrapy_simhash.settings import confirm_distance
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
    parser.add_argument("a", metavar="A", nargs="?")
    parser.add_argument("b", metavar="B", nargs="?")
    parser.add_argument(
        "--pairs",
        metavar="FILE",
        help="judge every pair of FILE ('-' for stdin): one pair a line, two paths separated "
        'by a tab, or a JSON object with "a" and "b"; prints one JSON line a pair',
    )
    add_distance_option(parser)
    parser.add_argument("--top", type=int, default=10, help="features listed per side")
    parser.add_argument(
        "--site",
        metavar="DIR",
        help="learn the pages' host template from the pages under DIR first (both A and B "
        "are taken to be of that host)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_text_option(parser)
    add_show_text_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    fingerprinter = fingerprinter_from_settings(settings)
    k = max_distance(args, settings)
    judge = Judge(fingerprinter, k, confirm_distance(settings))
    if args.pairs:
        if args.a or args.b:
            raise SystemExit("scrapy-simhash compare: give A B or --pairs FILE, not both")
        return run_pairs(judge, args)
    if not (args.a and args.b):
        raise SystemExit("scrapy-simhash compare: give two pages A B, or --pairs FILE")
    templates = None
    if args.site:
        templates = LocalMemory(fingerprinter)
        for path in expand([args.site]):
            page = load(fingerprinter, path, text=args.text).page
            if page is not None:
                templates.learn(SITE, page)
    a = load(fingerprinter, args.a, text=args.text, host=SITE, templates=templates)
    b = load(fingerprinter, args.b, text=args.text, host=SITE, templates=templates)
    report = compare(judge, a, b, top=args.top, show_text=args.show_text)
    report["template"] = (
        {"learned_from_pages": templates.pages(SITE)} if templates is not None else None
    )
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    return 1 if a.error or b.error else 0


class Judge:
    """Both tests of a crawl on two documents, under the command line's key."""

    def __init__(self, fingerprinter: Fingerprinter, k: int, limit: int) -> None:
        self.fingerprinter = fingerprinter
        self.k = k
        self.limit = limit
        self.signer = Signer(COMMAND_LINE_KEY)

    def verdict(self, a: Document, b: Document) -> dict[str, Any]:
        """The figures of both tests and which one set the pair apart (None: a copy)."""
        bits = self.fingerprinter.bits
        pa, pb = a.page, b.page
        if pa is None or pb is None or pa.fingerprint is None or pb.fingerprint is None:
            return {"distance": None, "similarity": None, "near_duplicate": None}
        distance = hamming(pa.fingerprint, pb.fingerprint)
        sa, sb = self.signer.sign(pa.evidence), self.signer.sign(pb.evidence)
        confirmed = confirms(sa, sb, self.limit)
        exact = pa.exact or pb.exact
        out: dict[str, Any] = {
            "distance": distance,
            "similarity": round(similarity(pa.fingerprint, pb.fingerprint, bits), 4),
            "k": self.k,
            "exact_digest": exact,
            "signature_distance": score(sa, sb),
            "confirm_distance": self.limit,
        }
        if not exact:
            shared = _resemblance(pa.own, pb.own)
            out["resemblance"] = round(shared, 4)
            out["confirm_probability"] = float(f"{pass_probability(shared, self.limit):.3g}")
        separated = (
            "fingerprint"
            if distance > self.k
            else None
            if confirmed
            else ("exact digest" if exact else "signature")
        )
        out.update(near_duplicate=separated is None, separated_by=separated)
        return out


def _resemblance(a: str, b: str) -> float:
    """The exact shingle resemblance that signatures estimate (Jaccard of the sets)."""
    sa, sb = shingles(a), shingles(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def run_pairs(judge: Judge, args: argparse.Namespace) -> int:
    """One JSON line per pair of ``--pairs``; each file is read once."""
    import sys

    loaded: dict[str, Document] = {}

    def document(path: str) -> Document:
        if path not in loaded:
            loaded[path] = load(judge.fingerprinter, path, text=args.text)
        return loaded[path]

    source = sys.stdin if args.pairs == "-" else open(args.pairs, encoding="utf-8")  # noqa: SIM115
    failed = False
    with source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            pair = _pair(line)
            if pair is None:
                print(json.dumps({"line": number, "error": 'not two paths nor {"a", "b"}'}))
                failed = True
                continue
            a, b = document(pair[0]), document(pair[1])
            row: dict[str, Any] = {"a": pair[0], "b": pair[1], **judge.verdict(a, b)}
            errors = [doc.error for doc in (a, b) if doc.error]
            if errors:
                row["error"] = "; ".join(errors)
                failed = True
            print(json.dumps(row, ensure_ascii=False))
    return 1 if failed else 0


def _pair(line: str) -> tuple[str, str] | None:
    text = line.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return None
        a, b = (data.get("a"), data.get("b")) if isinstance(data, dict) else (None, None)
        return (a, b) if isinstance(a, str) and isinstance(b, str) else None
    parts = text.split("\t") if "\t" in text else text.split()
    return (parts[0], parts[1]) if len(parts) == 2 else None


def compare(
    judge: Judge, a: Document, b: Document, *, top: int, show_text: bool = False
) -> dict[str, Any]:
    """Both tests' figures and the heaviest one-sided features, as a JSON-ready dict
    (``show_text``: with the text each page was read as)."""
    fingerprinter = judge.fingerprinter
    bits = fingerprinter.bits
    report: dict[str, Any] = {
        "a": a.as_json(bits, show_text=show_text),
        "b": b.as_json(bits, show_text=show_text),
        "bits": bits,
    }
    report.update(judge.verdict(a, b))
    pa, pb = a.page, b.page
    if pa is None or pb is None or report["distance"] is None:
        return report
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
        if "text" in doc:
            lines.append("   main text read:")
            lines.extend(f"   | {line}" for line in doc["text"].splitlines() or [""])
            lines.append("   own text the fingerprint and the second test read (normalised):")
            lines.extend(f"   | {line}" for line in doc["own_text"].splitlines() or [""])
    template = report.get("template")
    lines.append(
        "template: none applied (no --site given; two files teach no template)"
        if template is None
        else f"template: learned from {template['learned_from_pages']} page(s) under --site"
    )
    if report["distance"] is None:
        lines.append("no distance: a page has no fingerprint")
        return "\n".join(lines)
    lines.append(
        f"fingerprints: distance {report['distance']} of {report['bits']} bits, similarity "
        f"{report['similarity']:.1%}: "
        + ("a candidate" if report["distance"] <= report["k"] else "not a candidate")
        + f" at k={report['k']}"
    )
    if report["exact_digest"]:
        lines.append(
            "second test: a page too short for a fingerprint is a copy only of an exact "
            "copy of its own text and title: "
            + ("the same" if report["near_duplicate"] else "not the same")
        )
    else:
        lines.append(
            f"second test: signatures {report['signature_distance']} bits apart (confirmed "
            f"within {report['confirm_distance']}); shingle resemblance "
            f"{report['resemblance']:.1%}, confirmed under {report['confirm_probability']:.1%} "
            "of namespace keys"
        )
    verdict = (
        "near-duplicates: the later one is dropped"
        if report["near_duplicate"]
        else f"different: set apart by the {report['separated_by']}"
    )
    lines.append(verdict)
    for side in ("a", "b"):
        words = ", ".join(f"{name} ({weight:g})" for name, weight in report[f"only_{side}"])
        lines.append(f"only in {side.upper()}: {words or '(nothing)'}")
    return "\n".join(lines)
