"""The whole decision on one fetched page: its host's template, the index, the URL rules.

Why one place: the steps around the verdict step (:mod:`scrapy_simhash.verdict`) carry
guarantees of their own, and each copy of them drifted. The template memory must count a
page as seen before the page is judged (a page judged at the same time in another process
then finds it), a same-host match must be looked at again before it is acted on, and only
a kept page that is no revisit may teach its host's template (:attr:`Verdict.
teaches_template`); the URL rules learn from every page the index judged. The crawl's
downloader middleware and item pipeline and ``scrapy-simhash dedup`` all ask a
:class:`Judge`, and turn its :class:`~scrapy_simhash.verdict.Verdict` into what they do
(Scrapy's actions, stats and signals; groups of files): none of them orders a step.

The template memory is reached through one protocol (:class:`Templates`): the crawl's
shared store (``glue.templates.TemplateMemory``) and the command line's memory of one
process (:class:`LocalTemplates`) answer the same four questions, so a folder judged by
``dedup`` and fetched by a crawl gets the same decisions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from scrapy_simhash.confirm import sketch_of
from scrapy_simhash.verdict import DUPLICATE, UNIQUE, Answer, Verdict, VerdictStep

if TYPE_CHECKING:
    from scrapy_simhash.fingerprint import PageFingerprint
    from scrapy_simhash.index.base import Match
    from scrapy_simhash.template import LocalMemory, SecondLook

#: The URL-rule hook: ``(own URL, key the page was judged under, its fingerprint, the URL
#: it copies or None)``, awaited for every page the index judged (a kept page or a copy).
UrlRules = Callable[[str, str, int, str | None], Awaitable[None]]


class Templates(Protocol):
    """A host template memory as the judge asks it, per page in this order: ``apply``,
    ``see``, maybe ``second_look``, maybe ``learn``. ``url`` is the page's own URL (or
    the name standing for it); the memory tells hosts apart."""

    async def apply(self, url: str, page: PageFingerprint) -> PageFingerprint:
        """``page`` with its host's template set aside (the same object when none is)."""
        ...

    async def see(self, url: str, page: PageFingerprint) -> None:
        """Count the page as fetched, before it is judged."""
        ...

    async def second_look(self, url: str, page: PageFingerprint, match: Match) -> SecondLook | None:
        """Whether a match stands (None) or what the page is (a match on another host
        stands: only the page's own host's memory can tell it apart)."""
        ...

    async def learn(self, url: str, page: PageFingerprint) -> None:
        """Count a kept page's lines as its host's."""
        ...


class LocalTemplates:
    """:class:`~scrapy_simhash.template.LocalMemory` behind the judge's protocol, for
    files judged in one process: ``host`` names the host a page's name stands for (on the
    command line, the folder a file was found in)."""

    def __init__(self, memory: LocalMemory, host: Callable[[str], str]) -> None:
        self.memory = memory
        self.host = host

    async def apply(self, url: str, page: PageFingerprint) -> PageFingerprint:
        return self.memory.apply(self.host(url), page)

    async def see(self, url: str, page: PageFingerprint) -> None:
        self.memory.see(self.host(url), page)

    async def second_look(self, url: str, page: PageFingerprint, match: Match) -> SecondLook | None:
        host = self.host(url)
        if self.host(match.key) != host:
            return None
        return self.memory.second_look(host, page, sketch_of(match.signature), match.fingerprint)

    async def learn(self, url: str, page: PageFingerprint) -> None:
        self.memory.learn(self.host(url), page)


def no_fingerprint(page: PageFingerprint) -> str:
    """Why a page has no SimHash fingerprint, with the extractor's notes."""
    notes = "; ".join(page.notes)
    return f"{page.reason or 'no text'}" + (f" ({notes})" if notes else "")


class Judge:
    """A page's fingerprint in, one :class:`Verdict` out, every step ordered here."""

    def __init__(self, verdicts: VerdictStep, templates: Templates | None = None) -> None:
        """``templates`` None: each page is judged on its own text alone."""
        self.verdicts = verdicts
        self.templates = templates

    async def page(
        self,
        key: str,
        own: str,
        page: PageFingerprint | None,
        answer: Answer | None,
        *,
        reason: str | None = None,
        record_drops: bool = True,
        marking: bool = False,
        owner: str | None = None,
        url_rules: UrlRules | None = None,
    ) -> Verdict:
        """The verdict on ``page``, fetched from ``own`` and keyed ``key``
        (:meth:`VerdictStep.page` says what ``answer``, ``record_drops``, ``marking`` and
        ``owner`` mean). ``page`` None: it could not be read, for ``reason``; a page without a
        fingerprint, or with an exact digest, is said why. ``url_rules``: told of every
        page the index judged (a copy teaches them a pair, a kept page tests them)."""
        if page is not None and reason is None and (page.fingerprint is None or page.exact):
            reason = no_fingerprint(page)
        templates = self.templates
        set_aside = distinct = False
        look_again = None
        if page is not None and templates is not None:
            applied = await templates.apply(own, page)
            set_aside = applied is not page
            page = applied
            if page.fingerprint is None and reason is None:
                reason = no_fingerprint(page)
            await templates.see(own, page)
            seen = page

            async def look_again(match: Any) -> Any:
                nonlocal distinct
                look = await templates.second_look(own, seen, match)
                distinct = distinct or (look is not None and look.distinct)
                return look

        fingerprint = page.fingerprint if page is not None else None
        verdict = await self.verdicts.page(
            key,
            own,
            fingerprint,
            answer,
            reason=reason,
            record_drops=record_drops,
            marking=marking,
            look_again=look_again,
            evidence=page.evidence if page is not None else None,
            owner=owner,
        )
        checked = verdict.outcome in (UNIQUE, DUPLICATE)
        verdict = verdict.but(
            exact=page is not None and page.exact and checked,
            no_text=page is not None and fingerprint is None,
            template_set_aside=set_aside,
            template_distinct=distinct,
            page=page,
        )
        try:
            if templates is not None and page is not None and verdict.teaches_template:
                await templates.learn(own, page)
            if url_rules is not None and fingerprint is not None and checked:
                await url_rules(own, str(verdict.key), fingerprint, verdict.duplicate_of)
        except BaseException:
            # Held in flight for a delivery the caller will never hear of now.
            filings = self.verdicts.filings
            if owner is not None and verdict.outcome == UNIQUE and filings is not None:
                await filings.release(owner)
            raise
        return verdict
