"""What an index stores as a page's key: valid text of bounded length.

A key is usually the page URL, which a hostile or broken site can make a megabyte long;
stored as it is, one such URL would cost a megabyte in the entry, every band row (SQLite)
and the recrawl history. Keys longer than :data:`MAX_KEY_CHARS` are stored as their first
:data:`KEPT_CHARS` characters followed by a 128-bit hash of the whole key, so two long URLs
that differ only at the end remain two keys. A key that is not valid Unicode (a lone
surrogate from a broken ``simhash_key``) cannot be stored by any backend; it is refused
with :class:`~scrapy_simhash.exceptions.InvalidKeyError`, for that one call only.
"""

from __future__ import annotations

import xxhash

from scrapy_simhash.exceptions import InvalidKeyError

#: Longest key stored as it is (characters).
MAX_KEY_CHARS = 2048
#: Characters of a longer key kept readable before its hash.
KEPT_CHARS = 2000
HASH_MARK = "#simhash-xxh128:"


def check_key(key: str) -> str:
    """Reject keys no backend can store: not a str, empty, or not encodable as UTF-8."""
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"an index key must be a non-empty str, got {key!r:.80}")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidKeyError(
            f"an index key must be valid Unicode text: {exc.reason} at position {exc.start} "
            f"of {key!r:.80}"
        ) from None
    return key


def index_key(key: str) -> str:
    """The form of ``key`` an index stores: checked, and hashed beyond MAX_KEY_CHARS."""
    check_key(key)
    if len(key) <= MAX_KEY_CHARS:
        return key
    digest = xxhash.xxh3_128_hexdigest(key.encode("utf-8"))
    return f"{key[:KEPT_CHARS]}{HASH_MARK}{digest}"
