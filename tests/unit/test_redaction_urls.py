"""No part of a password reaches a message, however the URL holding it is broken.

A password pasted without percent-encoding keeps its ``/``, ``#``, ``?`` or ``@``: urlsplit
then ends the host part early and urllib's errors quote the password's first half as a port
(``Port could not be cast to integer value as 'PW'``). The property test puts a generated
password (``/ # ? @ :`` between random words) in every place a URL holds one, in every Redis
scheme, and opens each store from it the way a crawl and the command line do; nothing said
may hold the password, its encodings or any of its words. Every connection goes to a dead
port on 127.0.0.1: name look-ups of anything else are refused by the test.
"""

from __future__ import annotations

import contextlib
import io
import re
import socket
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from scrapy_simhash._redact import mask_url, reads_two_ways, scrub, secrets
from scrapy_simhash.cli import main as cli_main
from scrapy_simhash.exceptions import ConfigurationError, IndexBackendError
from scrapy_simhash.index import open_index
from scrapy_simhash.recrawl import open_recrawl_store
from scrapy_simhash.storage import open_rule_store, open_template_store
from tests.redis_servers import free_port

DEAD_PORT = free_port()
HOST = f"127.0.0.1:{DEAD_PORT}"
SOCKET = "/tmp/no-such-dir-simhash/redis.sock"
SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")

#: Where a URL holds a secret; ``{S}`` is the secret as written (not encoded).
PLACES = [
    *(f"{scheme}://:{{S}}@{HOST}/0" for scheme in SCHEMES),
    *(f"{scheme}://user:{{S}}@{HOST}/0" for scheme in SCHEMES),
    *(f"{scheme}://{{S}}@{HOST}/0" for scheme in SCHEMES),
    *(f"{scheme}://{{S}}:pw@{HOST}/0" for scheme in SCHEMES),
    *(f"{scheme}://{HOST}/0?password={{S}}" for scheme in SCHEMES),
    f"redis://{HOST}/0?db=0&password={{S}}&username=user",
    f"redis://user:x@{HOST}/0?token={{S}}",
    f"unix://:{{S}}@{SOCKET}",
    f"unix://user:{{S}}@{SOCKET}?db=0",
    f"unix://{SOCKET}?password={{S}}&db=0",
]

#: A word of a secret: it starts with a capital Q, X or Z so that it is found in no message
#: by chance, and with a letter so that no parser takes it for a port number.
WORD = st.from_regex(r"[QXZ][A-Za-z0-9]{3,7}", fullmatch=True)
#: What a pasted password may hold between its words; each secret holds one of the first four.
BREAKS = ["/", "#", "?", "@", ":", "//", "?#", "@@", "/@", ":/", "&", "=", "%", ".."]


@st.composite
def broken_secrets(draw: st.DrawFn) -> str:
    """A password with unencoded URL delimiters between its words (and maybe at its ends)."""
    words = draw(st.lists(WORD, min_size=2, max_size=4))
    breaks = draw(
        st.lists(st.sampled_from(BREAKS), min_size=len(words) - 1, max_size=len(words) - 1)
    )
    breaks[draw(st.integers(0, len(breaks) - 1))] = draw(st.sampled_from(["/", "#", "?", "@"]))
    text = words[0] + "".join(b + w for b, w in zip(breaks, words[1:], strict=True))
    head = draw(st.sampled_from(["", "", "/", "@", ":", "?"]))
    tail = draw(st.sampled_from(["", "", "/", "#", ":"]))
    return head + text + tail


def words_of(secret: str) -> list[str]:
    return [w for w in re.split(r"[^A-Za-z0-9]+", secret) if len(w) >= 4]


def forms_of(secret: str) -> set[str]:
    """The secret as written, percent-encoded and decoded, and each of its words."""
    forms = {secret, quote(secret, safe=""), quote(secret), unquote(secret)}
    return {f for f in forms if f} | set(words_of(secret))


@contextlib.contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Refuse name look-ups of anything but the dead loopback port.

    A URL that reads two ways may name its password's first word as the host; the test
    must never send a look-up or a connection anywhere but 127.0.0.1.
    """
    real = socket.getaddrinfo
    refused: list[str] = []

    def guarded(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name in ("127.0.0.1", "localhost", "::1") and str(port) == str(DEAD_PORT):
            return real(host, port, *args, **kwargs)
        refused.append(f"{name}:{port}")
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with mock.patch("socket.getaddrinfo", guarded):
        yield refused


def everything_said(url: str, tmp: Path) -> str:
    """Errors (with tracebacks) and command output of every store opened from ``url``."""
    said = [mask_url(url)]

    def attempt(step: Callable[[], object]) -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - whatever it is, its text is checked
            said.append("".join(traceback.format_exception(exc)))

    def close(opened: Any) -> None:
        opened.close()

    with loopback_only():
        attempt(lambda: close(open_index(url, options={"retries": 0})))
        attempt(lambda: open_recrawl_store(url).count())
        attempt(lambda: open_rule_store(url, "ns").rules())
        attempt(lambda: open_template_store(url, "ns").hosts())
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            attempt(
                lambda: cli_main(
                    ["due", "--index-url", url, "-s", 'SIMHASH_INDEX_OPTIONS={"retries": 0}']
                )
            )
            store = f"sqlite:///{tmp / 'recrawl.db'}"
            (tmp / "urls.txt").write_text("https://example.com/a\n")
            attempt(lambda: cli_main(["due", "--index-url", store, "--add", str(tmp / "urls.txt")]))
            attempt(
                lambda: cli_main(
                    ["due", "--index-url", store, "--push-redis-key", "k", "--redis", url]
                )
            )
        said += [out.getvalue(), err.getvalue()]
    return "\n".join(said)


_BASELINE: list[str] = []


def baseline(tmp: Path) -> str:
    """What is said for a URL in every place with a secret found nowhere else."""
    if not _BASELINE:
        _BASELINE.append(
            "\n".join(
                everything_said(place.replace("{S}", "Zq9sentinelQ/Xsentinel"), tmp)
                for place in PLACES
            )
        )
    return _BASELINE[0]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=broken_secrets(), place=st.sampled_from(PLACES))
@example(secret="PWsecret/..#999", place="redis://:{S}@127.0.0.1:6498/0")
@example(secret="Qabc?Xdef", place=f"redis://:{{S}}@{HOST}/0")
@example(secret="Qabc#Xdef", place=f"redis://{HOST}/0?password={{S}}")
@example(secret="Qabc@Xdef", place=f"redis://{HOST}/0?password={{S}}")
@example(secret="Qabc/Xdef:Zghi", place=f"rediss://{{S}}@{HOST}/0")
def test_no_word_of_a_broken_password_is_ever_said(secret: str, place: str, tmp_path: Path) -> None:
    forms = forms_of(secret)
    assume(not any(form in baseline(tmp_path) for form in forms))
    url = place.replace("{S}", secret)
    said = everything_said(url, tmp_path)
    assert "***" in said
    for form in forms:
        assert form not in said, (form, url, said[:3000])


@settings(max_examples=300)
@given(secret=broken_secrets(), place=st.sampled_from(PLACES))
@example(secret="Q000:Q000@Q000", place=f"redis://{{S}}@{HOST}/0")
def test_the_redaction_functions_say_no_word_of_it(secret: str, place: str) -> None:
    """mask_url and scrub, on a message quoting the URL and the password in any spelling."""
    url = place.replace("{S}", secret)
    masked = mask_url(url)
    message = (
        f"Error connecting to {url}: AUTH {secret} ({quote(secret, safe='')}) failed; "
        f"url was {url!r}"
    )
    cleaned = scrub(message, url)
    for form in forms_of(secret):
        assert form not in masked, (form, url, masked)
        assert form not in cleaned, (form, url, cleaned)
    assert secrets(url)


@pytest.mark.parametrize("place", PLACES)
def test_nothing_between_the_scheme_and_the_last_at_is_shown(place: str) -> None:
    url = place.replace("{S}", "Qalpha/Qbeta?Qgamma#Qdelta@Qeps:Qzeta")
    start, last_at = url.index("://") + 3, url.rindex("@")
    masked = mask_url(url)
    assert masked.startswith(url[:start] + "***"), masked
    for word in re.findall(r"\w+", url[start:last_at]):
        assert word in ("user", "x") or word not in masked, (word, masked)
    for word in ("Qalpha", "Qbeta", "Qgamma", "Qdelta", "Qeps", "Qzeta"):
        assert word not in masked, (word, masked)


def test_the_reported_url_says_nothing_of_its_password() -> None:
    """The message of the report: the password's first half was quoted as the port."""
    url = "redis://:PWsecret/..#999@127.0.0.1:6498/0"
    with pytest.raises(ConfigurationError) as caught:
        open_index(url)
    message = str(caught.value)
    assert message.startswith("invalid Redis URL redis://***@127.0.0.1:6498/0: ")
    assert "percent-encode" in message
    for word in ("PWsecret", "999", "..#", "Port could not be cast"):
        assert word not in message


@pytest.mark.parametrize(
    "url",
    [
        f"redis://{HOST}/0?password=p@ss-word",
        f"redis://user:pw@{HOST}/0?password=Qa@b&db=0",
        f"unix://{SOCKET}?password=p@ss-word&db=0",
        f"redis://:p@ss@word@{HOST}/0",
    ],
)
def test_an_at_sign_where_urlsplit_reads_it_as_meant_is_not_refused(url: str) -> None:
    """``@`` in a query argument's value, or several in the userinfo, read one way by
    urlsplit and redis-py: the store is tried (the port is dead), not refused."""
    with loopback_only(), pytest.raises(IndexBackendError) as caught:
        open_recrawl_store(url).count()
    message = str(caught.value)
    assert "reads two ways" not in message
    for word in ("ss-word", "p@ss", "Qa@b", "word@"):
        assert word not in message


def test_plain_user_names_stay_visible() -> None:
    assert mask_url("redis://bob:pw@db.example:6379/0") == "redis://bob:***@db.example:6379/0"
    assert mask_url("redis://:pw@db.example/0") == "redis://:***@db.example/0"
    assert not reads_two_ways("redis://bob:p@w@db.example/0")
    # A name with an "@" (or alone, without a password) may be a password: hidden.
    assert mask_url("redis://bob@x:pw@db.example/0") == "redis://***@db.example/0"
    assert mask_url("redis://Qsecret@db.example/0") == "redis://***@db.example/0"
    assert mask_url("redis://db.example/0#frag") == "redis://db.example/0#***"
    assert mask_url("redis://db.example/0?db=1&password=a&b=c") == (
        "redis://db.example/0?db=1&password=***"
    )


# -- leaks outside the Redis URL path ------------------------------------------------------------


@pytest.mark.parametrize("userinfo", [":Qsec/Xret", ":Qsec#Xret", "Qsecret", "user:Qsecret"])
def test_sqlite_urls_with_userinfo_say_nothing_of_it(userinfo: str, tmp_path: Path) -> None:
    url = f"sqlite://{userinfo}@/{tmp_path}/index.db"
    said = everything_said(url, tmp_path)
    for form in forms_of(userinfo.lstrip(":")) - {"user"}:
        assert form not in said, (form, said)


def test_a_netloc_urllib_refuses_is_not_quoted() -> None:
    url = f"redis://:Qsec\uff03Xret@{HOST}/0"  # a full-width "#" that NFKC turns into "#"
    with pytest.raises(ConfigurationError) as caught:
        open_index(url)
    assert "Qsec" not in str(caught.value)
