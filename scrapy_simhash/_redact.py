"""Hide the secrets of a storage URL, in the URL itself and in any text that may quote it.

redis-py takes a password in several spellings: userinfo with or without a user name
(``redis://user:pw@host``, ``redis://:pw@host``, percent-encoded), a ``?password=`` query
argument (the documented way for ``unix://`` sockets) and the same in ``rediss://`` and
cluster URLs. Every log line, error and command output goes through this one module, so a
spelling handled here is handled everywhere. Nothing here raises: a URL too broken to parse
(a bad port, say) still comes out masked, because a log line must never kill a crawl.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, unquote_plus

MASK = "***"

#: Query arguments whose value is a secret (compared in lower case).
SECRET_PARAMS = frozenset(["password", "pass", "passwd", "pwd", "secret", "token", "auth"])

_NETLOC_END = re.compile(r"[/?#]")


def _parts(url: str) -> tuple[str, str, str, str]:
    """(scheme and "//", netloc, path, query-and-fragment) split the way urlsplit does,
    without validating anything (no port parsing)."""
    head, sep, rest = url.partition("://")
    if not sep:
        head, rest = "", url
    else:
        head += sep
    end = _NETLOC_END.search(rest)
    netloc, tail = (rest[: end.start()], rest[end.start() :]) if end else (rest, "")
    path, mark, query = tail.partition("?")
    return head, netloc, path, mark + query


def _userinfo_password(netloc: str) -> str | None:
    userinfo, at, _ = netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return None
    return userinfo.split(":", 1)[1]


def _query_secrets(query: str) -> list[str]:
    query = query.lstrip("?").split("#", 1)[0]
    found = []
    for pair in query.split("&"):
        name, eq, value = pair.partition("=")
        if eq and unquote_plus(name).strip().lower() in SECRET_PARAMS and value:
            found.append(value)
    return found


def mask_url(url: str) -> str:
    """``url`` with every password replaced by ``***``; user names and hosts stay visible."""
    try:
        head, netloc, path, query = _parts(url)
        if _userinfo_password(netloc) is not None:
            userinfo, _, host = netloc.rpartition("@")
            netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
        if query:
            fragment = ""
            if "#" in query:
                query, fragment = query.split("#", 1)
                fragment = "#" + fragment
            pairs = []
            for pair in query.lstrip("?").split("&"):
                name, eq, value = pair.partition("=")
                if eq and value and unquote_plus(name).strip().lower() in SECRET_PARAMS:
                    pair = f"{name}={MASK}"
                pairs.append(pair)
            query = "?" + "&".join(pairs) + fragment
        return head + netloc + path + query
    except Exception:  # noqa: BLE001 - masking must never be what fails
        return "<unparseable URL>"


def secrets(url: str) -> set[str]:
    """Every spelling of the passwords in ``url``: as written, decoded and re-encoded."""
    try:
        _, netloc, _, query = _parts(url)
    except Exception:  # noqa: BLE001
        return set()
    raw = _query_secrets(query)
    password = _userinfo_password(netloc)
    if password is not None:
        raw.append(password)
    found: set[str] = set()
    for value in raw:
        for form in (value, unquote(value), unquote_plus(value)):
            if form:
                found.update((form, quote(form, safe=""), quote(form)))
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
    text = re.escape(secret)
    if len(secret) >= SHORT_SECRET:
        return text
    before = r"(?<!\w)" if secret[0].isalnum() or secret[0] == "_" else ""
    after = r"(?!\w)" if secret[-1].isalnum() or secret[-1] == "_" else ""
    return before + text + after

