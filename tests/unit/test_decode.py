"""Decoding bodies whose charset is declared, missing, or wrong."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.text.decode import _decode, _utf16_without_bom, decode_html, is_binary

ZH = "网易新闻：今年以来已有八部委为互联网发声，地方政府拥抱互联网的热情不止于会议内容。"
DE = "Grüße aus Köln: schöne Straße, für alle Bürger. Ça va très bien, déjà vu à côté."


def page(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


def test_meta_charset_is_used() -> None:
    body = page(ZH, '<meta charset="gbk">').encode("gbk")
    decoded = decode_html(body)
    assert ZH in decoded.text
    assert (decoded.encoding, decoded.source) == ("gb18030", "meta")


def test_http_equiv_declaration_is_used() -> None:
    head = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
    decoded = decode_html(page(DE, head).encode("cp1252"))
    assert DE in decoded.text
    assert decoded.source == "meta"


def test_http_header_wins_over_meta() -> None:
    body = page(DE, '<meta charset="utf-8">').encode("cp1252")
    decoded = decode_html(body, "text/html; charset=ISO-8859-1")
    assert DE in decoded.text
    assert (decoded.encoding, decoded.source) == ("cp1252", "http")


def test_gbk_without_declaration_is_detected() -> None:
    decoded = decode_html(page(ZH).encode("gbk"))
    assert ZH in decoded.text
    assert decoded.encoding == "gb18030"
    assert decoded.source == "detected"


EN = (
    "Reading about others\u2019 first-hand experiences with the product we\u2019re "
    "interested in can greatly influence our decision \u2014 as we\u2019re given an idea "
    "of the product\u2019s performance. If you\u2019re a merchant, you already know that "
    "\u201cProduct Ratings\u201d is one of Google\u2019s programs. "
)


@pytest.mark.parametrize("repeat", [1, 4, 40])
def test_undeclared_windows_1252_prose_is_read_as_windows_1252(repeat: int) -> None:
    # Curly quotes and dashes are isolated high bytes; a statistical detector reads them
    # as cp1250 or cp852 letters, which changes every word with an apostrophe.
    decoded = decode_html(page(EN * repeat).encode("cp1252"))
    assert (decoded.encoding, decoded.source) == ("cp1252", "detected")
    assert page(EN * repeat) == decoded.text


def test_utf8_declared_as_gb2312_is_read_as_utf8() -> None:
    decoded = decode_html(page(ZH, '<meta charset="gb2312">').encode("utf-8"))
    assert ZH in decoded.text
    assert decoded.encoding == "utf-8"
    assert any("declared gb18030" in note for note in decoded.notes)


def test_latin1_declared_as_utf8_is_redetected() -> None:
    decoded = decode_html(page(DE * 3, '<meta charset="utf-8">').encode("latin-1"))
    assert "Grüße aus Köln" in decoded.text
    assert "\ufffd" not in decoded.text
    assert any("declared utf-8 but decoded as" in note for note in decoded.notes)


def test_few_invalid_bytes_keep_the_declared_utf8() -> None:
    good = page(ZH * 5, '<meta charset="utf-8">').encode("utf-8")
    body = good.replace("互联网".encode(), b"\xff\xfe\xfd", 1)
    decoded = decode_html(body)
    assert decoded.encoding == "utf-8"
    assert "今年以来" in decoded.text
    assert decoded.notes == ("3 undecodable bytes replaced",)


def test_utf8_replacement_characters_in_the_page_are_not_errors() -> None:
    decoded = decode_html(page("broken \ufffd\ufffd already", '<meta charset="utf-8">').encode())
    assert decoded.source == "meta"
    assert decoded.notes == ()


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_byte_order_mark_wins(encoding: str) -> None:
    body = page(ZH, '<meta charset="iso-8859-1">').encode(encoding)
    if encoding == "utf-16-be":
        body = codecs.BOM_UTF16_BE + body
    decoded = decode_html(body)
    assert ZH in decoded.text
    assert decoded.source == "bom"
    assert not decoded.text.startswith("\ufeff")


def test_utf16_without_bom_is_recognised() -> None:
    decoded = decode_html(page(DE).encode("utf-16-le"))
    assert DE in decoded.text


def test_truncated_multibyte_character_is_not_an_error() -> None:
    body = page(ZH, '<meta charset="utf-8">').encode("utf-8")
    cut = body[: body.index("地方".encode()) + 2]
    decoded = decode_html(cut)
    assert decoded.encoding == "utf-8"
    assert decoded.notes == ()
    assert decoded.text.endswith("发声，")


def test_pure_ascii_needs_no_detection() -> None:
    decoded = decode_html(b"<p>plain</p>")
    assert (decoded.text, decoded.encoding, decoded.source) == ("<p>plain</p>", "ascii", "default")


def test_empty_body() -> None:
    decoded = decode_html(b"")
    assert (decoded.text, decoded.source, decoded.notes) == ("", "empty", ("empty body",))


@pytest.mark.parametrize(
    "body",
    [
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
        b"\x1f\x8b\x08\x00" + b"\x00" * 64,
        bytes(range(32)) * 64,
    ],
)
def test_binary_bodies_give_no_text(body: bytes) -> None:
    assert is_binary(body)
    decoded = decode_html(body)
    assert (decoded.text, decoded.source, decoded.notes) == ("", "binary", ("binary body",))


def test_text_is_not_binary() -> None:
    assert not is_binary(page(ZH).encode("gbk"))
    assert not is_binary(b"")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2048), st.one_of(st.none(), st.text(max_size=40)))
def test_any_bytes_decode_without_error(body: bytes, content_type: str | None) -> None:
    decoded = decode_html(body, content_type)
    assert isinstance(decoded.text, str)
    assert decoded.source in {"http", "bom", "meta", "detected", "default", "empty", "binary"}


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(ZH)).map("".join))
def test_undeclared_gbk_round_trips(text: str) -> None:
    # Real Chinese text, shuffled. (Degenerate GBK such as one character repeated can be
    # valid UTF-8 too, e.g. "一" = D2 BB = Cyrillic "һ"; valid UTF-8 wins such ties.)
    assert decode_html(page(text).encode("gbk")).text == page(text)


def test_utf8_bytes_are_handed_on_only_when_they_are_exactly_the_text() -> None:
    clean = page(ZH, '<meta charset="utf-8">').encode("utf-8")
    assert decode_html(clean).utf8 is clean
    ascii_body = page("plain", "").encode("ascii")
    assert decode_html(ascii_body).utf8 is ascii_body
    stray = clean.replace("网易".encode(), b"\xff", 1)
    assert decode_html(stray).utf8 is None  # a byte was replaced
    cut = clean + "新".encode()[:2]
    assert decode_html(cut).utf8 is None  # an incomplete last character was dropped
    assert decode_html(page(ZH, '<meta charset="gbk">').encode("gbk")).utf8 is None


@pytest.mark.parametrize("declared", ["", '<meta charset="utf-8">', '<meta charset="gbk">'])
def test_a_utf8_body_is_given_to_the_parser_as_it_is_and_read_as_text_when_asked(
    declared: str,
) -> None:
    """Whatever it declares, a valid UTF-8 body is not made into text to be chosen: the
    parser takes its bytes, and the text, when someone asks, is the body decoded."""
    body = page(ZH + DE, declared).encode("utf-8")
    decoded = decode_html(body)
    assert decoded.encoding == "utf-8"
    assert decoded.utf8 is body
    assert decoded.text == body.decode("utf-8")


def test_a_body_cut_inside_a_character_is_not_given_to_the_parser_as_it_is() -> None:
    body = page(ZH).encode("utf-8")[: -len("</p></body></html>") - 1]
    decoded = decode_html(body)
    assert decoded.encoding == "utf-8"
    assert decoded.utf8 is None
    assert decoded.text == body[:-2].decode("utf-8")


# Bytes that are UTF-8, or nearly: valid text with a stray byte or a character cut off.
_NEARLY_UTF8 = st.builds(
    lambda text, cut, stray: (
        (text.encode("utf-8") + stray)[: len(text.encode("utf-8")) - cut]
        if cut
        else text.encode("utf-8") + stray
    ),
    st.text(max_size=30),
    st.integers(min_value=0, max_value=3),
    st.sampled_from([b"", b"\xe4", b"\xe4\xbd", b"\xed\xa0", b"\xf4\x90", b"\xff", b"a\x80b"]),
)


@given(st.one_of(_NEARLY_UTF8, st.binary(max_size=64)))
def test_asking_only_whether_a_body_is_clean_utf8_answers_as_counting_does(body: bytes) -> None:
    """A page declaring another charset is tried as UTF-8 without counting replacements:
    the answer (none, and the text) is the one the full count gives."""
    counted = _decode(body, "utf-8")
    asked = _decode(body, "utf-8", counted=False)
    assert (asked[1] == 0) == (counted[1] == 0)
    if counted[1] == 0:
        assert asked == counted


@pytest.mark.parametrize(
    "body",
    [
        "\ufeffbody".encode("utf-16-le")[2:] * 3,
        "<html><body>ok</body></html>".encode("utf-16-le") + b"x",
        "<html><body>ok</body></html>".encode("utf-16-be")[:-1],
        b"a\x00b\x00c\x00d\x00e",  # the fewest NULs of one half of an odd length
    ],
)
def test_utf16_without_bom_is_recognised_at_any_length(body: bytes) -> None:
    """The NUL count that passes most bodies at once never passes one the halves'
    counts recognise as UTF-16 (odd lengths included)."""
    sample = body[:2048] if len(body) % 2 == 0 else body[:2047]
    even, odd = sample[0::2], sample[1::2]
    expected = (
        "utf-16-le"
        if odd.count(0) * 10 >= len(odd) * 9 and even.count(0) == 0
        else "utf-16-be"
        if even.count(0) * 10 >= len(even) * 9 and odd.count(0) == 0
        else None
    )
    assert expected is not None
    assert _utf16_without_bom(body) == expected
