"""Hide the secrets of a storage URL, in the URL itself and in any text that may quote it.

redis-py takes a password in several spellings: userinfo with or without a user name
(``redis://user:pw@host``, ``redis://:pw@host``, percent-encoded), a ``?password=`` query
argument (the documented way for ``unix://`` sockets) and the same in ``rediss://`` and
cluster URLs. Every log line, error and command output goes through this one module, so a
spelling handled here is handled everywhere. Nothing here raises: a URL too broken to parse
(a bad port, say) still comes out masked, because a log line must never kill a crawl.

A password is often pasted without percent-encoding, and its ``/``, ``?`` or ``#`` then
ends the host part early for ``urlsplit`` (``redis://:ab/cd@host``: host ``:ab``, path
``/cd@host``) while a person reads it up to the last ``@``. Which reading is right cannot be
told, so the masking takes both: nothing between ``://`` and the last ``@`` is shown, nor
the value of a secret query argument (and what follows it in the query) in either reading,
nor a fragment. A URL that needs this is refused by ``_redis.check_userinfo`` before any
library reads it, so no library message quotes a piece of it.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, unquote_plus

MASK = "***"

#: Query arguments whose value is a secret (compared in lower case).
SECRET_PARAMS = frozenset(["password", "pass", "passwd", "pwd", "secret", "token", "auth"])

_NETLOC_END = re.compile(r"[/?#]")
#: A user name shown before ``:***``: RFC 3986 userinfo characters without ``:``.
_PLAIN_USER = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=-]*")
#: Where a library parsing a broken URL may cut it (so where a quoted piece may end).
_PIECE_SEPARATORS = re.compile(r"[/?#@:&=;\[\]\s]+")

Span = tuple[int, int]


def _start(url: str) -> int:
    """Where the authority starts: after ``scheme://``, or at 0 without one."""
    sep = url.find("://")
    return sep + 3 if sep >= 0 else 0


def _authority_end(url: str, start: int) -> int:
    """The end of the authority that begins at ``start``, as urlsplit finds it."""
    end = _NETLOC_END.search(url, start)
    return end.start() if end else len(url)


def _query_spans(url: str, netloc_end: int, last_at: int) -> list[Span]:
    """Hidden ranges of the query and fragment after an authority ending at ``netloc_end``.

    A secret argument's value is hidden with the rest of the query, since a password
    holding an unencoded ``&`` goes on in what looks like other arguments. The fragment is
    hidden: no storage reads it, and a ``#`` in an unencoded query password starts one.
    Only a fragment that starts inside the userinfo (``:pw#x@host``) after no secret
    argument is hidden up to the last ``@`` alone, so the host stays visible.
    """
    spans: list[Span] = []
    hash_at = url.find("#", netloc_end)
    end = hash_at if hash_at >= 0 else len(url)
    mark = url.find("?", netloc_end, end)
    at = mark + 1 if mark >= 0 else end
    while at < end:
        amp = url.find("&", at, end)
        pair_end = amp if amp >= 0 else end
        name, eq, value = url[at:pair_end].partition("=")
        if eq and value and unquote_plus(name).strip().lower() in SECRET_PARAMS:
            spans.append((at + len(name) + 1, end))
            break
        at = pair_end + 1
    if hash_at >= 0 and hash_at + 1 < len(url):
        clip = hash_at < last_at and not spans
        spans.append((hash_at + 1, last_at if clip else len(url)))
    return spans


def _userinfo_span(url: str) -> tuple[Span | None, bool]:
    """(the hidden range of the userinfo, whether the URL reads two ways).

    The userinfo runs from ``://`` to the last ``@``. Its user name stays visible only
    when urlsplit reads the same userinfo, the name is plain and no other ``@`` is in the
    userinfo; otherwise all of it is hidden, since a name with a ``/`` in it may be a
    password's first half, and so may what comes before the ``:`` of a pasted password
    holding an ``@`` (``redis://Qa:Qb@Qc@host`` from a password ``Qa:Qb@Qc``).
    """
    start = _start(url)
    at = url.rfind("@")
    if at < start:
        return None, False
    ambiguous = at >= _authority_end(url, start)
    userinfo = url[start:at]
    user, colon, _ = userinfo.partition(":")
    if colon and not ambiguous and "@" not in userinfo and _PLAIN_USER.fullmatch(user):
        begin = start + len(user) + 1
        return ((begin, at) if begin < at else None), False
    return ((start, at) if start < at else None), ambiguous


def _hidden(url: str) -> tuple[list[Span], bool]:
    """(the merged ranges of ``url`` never shown, whether the URL reads two ways)."""
    userinfo, ambiguous = _userinfo_span(url)
    spans = [userinfo] if userinfo else []
    start = _start(url)
    at = url.rfind("@")
    ends = {_authority_end(url, start)}
    if at >= start:
        ends.add(_authority_end(url, at + 1))
    for end in ends:
        spans += _query_spans(url, end, at)
    merged: list[Span] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged, ambiguous


def reads_two_ways(url: str) -> bool:
    """Whether the last ``@`` of ``url`` lies past where urlsplit ends its host part: a
    user name or password with an unencoded ``/``, ``?`` or ``#``, or an ``@`` in a path,
    query or fragment."""
    try:
        return _userinfo_span(url)[1]
    except Exception:  # noqa: BLE001 - a question about a URL must not raise
        return True


def mask_url(url: str) -> str:
    """``url`` with every password replaced by ``***``; plain user names and hosts stay
    visible (see the module's docstring for what counts as a password)."""
    try:
        spans, _ = _hidden(url)
        shown: list[str] = []
        at = 0
        for begin, end in spans:
            shown += [url[at:begin], MASK]
            at = end
        shown.append(url[at:])
        return "".join(shown)
    except Exception:  # noqa: BLE001 - masking must never be what fails
        return "<unparseable URL>"


def _forms(value: str) -> set[str]:
    """``value`` as written, decoded and re-encoded: the ways a message may quote it."""
    found: set[str] = set()
    for form in (value, unquote(value), unquote_plus(value)):
        if form:
            found.update((form, quote(form, safe=""), quote(form)))
    return found


def secrets(url: str) -> set[str]:
    """Every spelling of the hidden parts of ``url`` (see :func:`mask_url`).

    Each piece between the characters where a parser may cut a hidden part is one too:
    urllib quotes a port or a host that is a password's first half, and redis-py reads a
    query password up to an unencoded ``&``.
    """
    try:
        spans, _ = _hidden(url)
    except Exception:  # noqa: BLE001
        return set()
    found: set[str] = set()
    for begin, end in spans:
        value = url[begin:end]
        user, _, password = value.partition(":")
        for part in (value, user, password):
            found |= _forms(part)
        for piece in _PIECE_SEPARATORS.split(value):
            if len(piece) >= 2 and any(c.isalnum() for c in piece):
                found |= _forms(piece)
    return found


def scrub(text: str, *urls: str | None) -> str:
    """Remove the passwords of ``urls`` from ``text`` (exception messages can quote URLs).

    Each URL is first replaced whole by its masked form; then any other occurrence of a
    password is replaced. A short password is replaced only where it stands as a word of
    its own: turning "connecting" into "conn***cting" would reveal it.
    """
    try:
        found: set[str] = set()
        for url in urls:
            if not url:
                continue
            if url in text:
                text = text.replace(url, mask_url(url))
            found |= secrets(url)
        for secret in sorted(found, key=len, reverse=True):
            text = re.sub(_pattern(secret), MASK, text)
        return text
    except Exception:  # noqa: BLE001 - a message that cannot be cleaned is not shown
        return "<message hidden: it could not be cleaned of passwords>"


#: Passwords shorter than this are masked only as whole words (see scrub).
SHORT_SECRET = 8


def _pattern(secret: str) -> str:
    """A short secret matches as a word: between non-word characters, or next to a
    percent-escape (``Q1%2FQ2`` quotes ``Q1/Q2`` encoded, its words included)."""
    text = re.escape(secret)
    if len(secret) >= SHORT_SECRET:
        return text
    before = r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2}))" if secret[0].isalnum() or secret[0] == "_" else ""
    after = r"(?:(?!\w)|(?=%[0-9A-Fa-f]{2}))" if secret[-1].isalnum() or secret[-1] == "_" else ""
    return before + text + after
