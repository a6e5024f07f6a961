# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""From a page's normalised text to its hashes in C: the counting of its words and
ideographs, SimHash's votes and the signature's MinHash, over xxhash's own C code (the
header the ``xxhash`` package is built from, in ``_vendor/xxhash``).

Why it exists: these steps look at every character, feature or token of every page. In
Python each hash is a string encoded, a call and a boxed integer, and numpy's array steps
cost more to set up than a page's few hundred values take to add. Here a token is hashed
where it lies in the text's UTF-8, and the votes and minima are plain loops. The results
are the interpreted code's (``features._count_tokens``,
:mod:`scrapy_simhash._hashes_interpreted`) bit for bit: the tokens are found by the same
character classes as the regular expressions there, the weights are the same integers
(exact sums), and the bins are densified and mixed the same way
(``tests/unit/test_hashes.py`` holds them to it). Anything these loops cannot match
exactly (a text with no UTF-8 form, a weight that is not finite or too large for exact
sums) is given back to the interpreted code.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.unicode cimport (
    Py_UNICODE_ISALNUM,
    Py_UNICODE_ISSPACE,
    PyUnicode_DATA,
    PyUnicode_KIND,
    PyUnicode_READ,
    PyUnicode_WRITE,
)
from libc.math cimport fabs, isfinite, rint
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

import unicodedata

cdef extern from *:
    """
    #define XXH_INLINE_ALL
    #include "xxhash.h"
    """
    ctypedef unsigned long long XXH64_hash_t
    ctypedef struct XXH128_hash_t:
        XXH64_hash_t low64
        XXH64_hash_t high64
    XXH64_hash_t XXH3_64bits_withSeed(const void* data, size_t length, XXH64_hash_t seed)
    XXH128_hash_t XXH3_128bits_withSeed(const void* data, size_t length, XXH64_hash_t seed)

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)


#: Weights are multiplied by this and rounded (``_hashes_interpreted._FIXED_POINT``).
cdef double _FIXED_POINT = 1024.0
#: Above this a sum of weights may no longer be exact in float64, as numpy sums them.
cdef double _EXACT_SUMS = 2.0 ** 52
cdef int _BINS = 128
cdef uint64_t _VALUE_MASK = (<uint64_t>1 << 57) - 1
cdef uint64_t _EMPTY = <uint64_t>1 << 57
cdef uint64_t _GOLDEN = 0x9E3779B97F4A7C15ULL
cdef uint64_t _M1 = 0xFF51AFD7ED558CCDULL
cdef uint64_t _M2 = 0xC4CEB9FE1A85EC53ULL
cdef uint64_t _U64 = 0xFFFFFFFFFFFFFFFFULL


cdef inline uint64_t _mix(uint64_t value) noexcept:
    """MurmurHash3's 64-bit finaliser (``_hashes_interpreted._mix``)."""
    value ^= value >> 33
    value *= _M1
    value ^= value >> 33
    value *= _M2
    value ^= value >> 33
    return value


cdef inline uint64_t _rotate(uint64_t value, int by) noexcept:
    return (value << by) | (value >> (64 - by))


cdef inline bint _cjk(Py_UCS4 c) noexcept:
    """``features._CJK``: the ideographs read one by one."""
    return (
        0x3400 <= c <= 0x4DBF
        or 0x4E00 <= c <= 0x9FFF
        or 0xF900 <= c <= 0xFAFF
        or 0x20000 <= c <= 0x2EBEF
    )


cdef inline bint _alnum(Py_UCS4 c) noexcept:
    """``str.isalnum`` of one character (``\\w`` without ``_``), ASCII without a call."""
    if c < 128:
        return (
            (<Py_UCS4>'0' <= c <= <Py_UCS4>'9')
            or (<Py_UCS4>'a' <= c <= <Py_UCS4>'z')
            or (<Py_UCS4>'A' <= c <= <Py_UCS4>'Z')
        )
    return Py_UNICODE_ISALNUM(c)


cdef inline bint _space(Py_UCS4 c) noexcept:
    """``str.isspace`` of one character, ASCII and what lies above the ideographic space
    (U+3000, the last whitespace character) without a call."""
    if c < 128:
        return c == 32 or 9 <= c <= 13 or 28 <= c <= 31
    return c <= 0x3000 and Py_UNICODE_ISSPACE(c)


cdef inline Py_ssize_t _utf8_length(Py_UCS4 c) noexcept:
    if c < 0x80:
        return 1
    if c < 0x800:
        return 2
    if c < 0x10000:
        return 3
    return 4


#: What _fold_alone answers for a character it does not fold.
cdef uint32_t _NOT_ALONE = 0x110000
# Bit n set: U+00A0 + n (_LATIN1_SIGNS) or U+2010 + n (_PUNCTUATION) folds to itself.
cdef uint64_t _LATIN1_SIGNS = 0x88c37afe
cdef uint64_t _PUNCTUATION = 0xe25008fff7d
#: Fast characters in a row that end a run handed to unicodedata (see fold).
cdef Py_ssize_t _RUN_END = 8


cdef inline uint32_t _fold_alone(uint32_t c) noexcept:
    """``unicodedata.normalize("NFKC", c).casefold()`` for the characters of most pages
    (ASCII, Latin-1 letters and signs, the common ideographs, CJK and typographic
    punctuation, the arrows and shapes of menus, full-width forms, no-break and ideographic
    spaces), each of which is a starter that no normalisation ever joins to the character
    before it; _NOT_ALONE for any other. ``tests/unit/test_hashes.py`` checks both claims
    against the running unicodedata."""
    if c < 0x80:
        return c + 32 if 0x41 <= c <= 0x5A else c
    if 0x4E00 <= c <= 0x9FFF:
        return c
    if 0xFF01 <= c <= 0xFF5E:  # full-width ASCII
        c -= 0xFEE0
        return c + 32 if 0x41 <= c <= 0x5A else c
    if 0xC0 <= c <= 0xFF:
        if c == 0xD7 or c == 0xF7 or c >= 0xE0:
            return c
        return c + 32 if c != 0xDF else _NOT_ALONE  # ß folds to "ss"
    if c == 0xA0 or c == 0x3000:
        return 0x20
    if 0xA0 < c < 0xC0:  # Latin-1 signs: those that are not a compatibility form
        return c if _LATIN1_SIGNS >> (c - 0xA0) & 1 else _NOT_ALONE
    if 0x2010 <= c <= 0x203F:  # dashes, quotes, bullets, primes, guillemets
        return c if _PUNCTUATION >> (c - 0x2010) & 1 else _NOT_ALONE
    if 0x3001 <= c <= 0x3002 or 0x3007 <= c <= 0x3013:  # CJK punctuation and brackets
        return c
    if 0x2190 <= c <= 0x2199 or c == 0x25A0 or c == 0x25B2 or c == 0x25BC or c == 0x25CF:
        return c  # arrows and shapes of menus and lists
    if c == 0x2605 or c == 0x2606 or c == 0x30FB:
        return c
    return _NOT_ALONE


def fold(str text):
    """``features.normalize``: NFKC, then casefold.

    unicodedata normalises a whole text again as soon as one character of it is not
    normalised, and in Chinese text every full-width comma is one. Here each character of
    _fold_alone is folded where it stands, and only the runs of other characters go to
    unicodedata, each with the character before it (the one a combining mark would join):
    no character of _fold_alone joins what comes before it, so the text splits before
    each of them without changing what NFKC makes of it, and casefold maps characters
    one by one. A run ends at _RUN_END folded characters in a row, so that words of
    another script separated by spaces go to unicodedata together rather than one call a
    word."""
    cdef Py_ssize_t size = len(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    # In the text's own width: a character folded alone is never wider than it was.
    cdef void* out = PyMem_Malloc(max(size, 1) * kind)
    if out is NULL:
        raise MemoryError()
    cdef Py_ssize_t filled = 0
    cdef Py_ssize_t at = 0
    cdef Py_ssize_t start
    cdef Py_ssize_t end
    cdef Py_ssize_t fast
    cdef uint32_t folded
    pieces = []
    try:
        while at < size:
            folded = _fold_alone(PyUnicode_READ(kind, data, at))
            if folded != _NOT_ALONE:
                PyUnicode_WRITE(kind, out, filled, folded)
                filled += 1
                at += 1
                continue
            # A run of characters that unicodedata must fold, from the one before it.
            start = at - 1 if filled else at
            if filled:
                filled -= 1
            end = at + 1
            fast = 0
            while end < size and fast < _RUN_END:
                fast = fast + 1 if _fold_alone(PyUnicode_READ(kind, data, end)) != _NOT_ALONE else 0
                end += 1
            end -= fast
            if filled:
                pieces.append(PyUnicode_FromKindAndData(kind, out, filled))
                filled = 0
            pieces.append(unicodedata.normalize("NFKC", text[start:end]).casefold())
            at = end
        if not pieces:
            return PyUnicode_FromKindAndData(kind, out, filled)
        if filled:
            pieces.append(PyUnicode_FromKindAndData(kind, out, filled))
        return "".join(pieces)
    finally:
        PyMem_Free(out)


def own_lines(str folded, str folded_title):
    """``"\\n".join(fingerprint._own_lines(text, title, folded, fold=True))`` given
    ``folded_title`` (the title folded, its whitespace runs single spaces): the lines of
    ``folded`` with text that the title does not hold. A line's length with its whitespace
    runs as single spaces is counted here; only a line short enough to be inside the title
    is made into that string, and ``folded`` itself is returned when every line stays."""
    cdef Py_ssize_t size = len(folded)
    cdef Py_ssize_t limit = len(folded_title)
    cdef Py_ssize_t start = 0
    cdef Py_ssize_t at = 0
    cdef Py_ssize_t length
    cdef bint in_word
    cdef bint all_kept = True
    cdef Py_UCS4 c
    cdef int kind = PyUnicode_KIND(folded)
    cdef void* data = PyUnicode_DATA(folded)
    kept = []
    while start <= size:
        # The line from start to at, and its length with whitespace runs as single spaces.
        length = -1
        in_word = False
        at = start
        while at < size:
            c = PyUnicode_READ(kind, data, at)
            if c == 10:
                break
            if _space(c):
                in_word = False
            else:
                if not in_word:
                    length += 1
                    in_word = True
                length += 1
            at += 1
        if length > 0 and (
            length > limit or " ".join(folded[start:at].split()) not in folded_title
        ):
            kept.append(folded[start:at])
        else:
            all_kept = False
        start = at + 1
    return folded if all_kept else "\n".join(kept)


def line_hashes(str text, str folded):
    """``sketch.line_hashes`` given ``folded``, ``normalize(text)`` with as many lines: for
    each line of ``text`` that is not blank, xxh3-64 of the UTF-8 of its folded line with
    whitespace runs as single spaces, as 8-byte integers in native order; NotImplemented
    when a folded line has no UTF-8 form (a lone surrogate)."""
    cdef int text_kind = PyUnicode_KIND(text)
    cdef void* text_data = PyUnicode_DATA(text)
    cdef int kind = PyUnicode_KIND(folded)
    cdef void* data = PyUnicode_DATA(folded)
    cdef Py_ssize_t text_size = len(text)
    cdef Py_ssize_t size = len(folded)
    cdef Py_ssize_t text_at = 0
    cdef Py_ssize_t at = 0
    cdef Py_ssize_t start
    cdef Py_ssize_t index
    cdef Py_ssize_t used
    cdef Py_ssize_t room = 0
    cdef Py_ssize_t count = 0
    cdef bint blank
    cdef bint spaced
    cdef Py_UCS4 c
    cdef unsigned char* line = NULL
    cdef unsigned char* grown
    cdef uint64_t* hashes = <uint64_t*>PyMem_Malloc((folded.count("\n") + 1) * sizeof(uint64_t))
    if hashes is NULL:
        raise MemoryError()
    try:
        while text_at <= text_size:
            blank = True
            while text_at < text_size:
                c = PyUnicode_READ(text_kind, text_data, text_at)
                text_at += 1
                if c == 10:
                    break
                if blank and not _space(c):
                    blank = False
            else:
                text_at += 1  # past the end: the last line is read
            start = at
            while at < size and PyUnicode_READ(kind, data, at) != 10:
                at += 1
            if not blank:
                if 4 * (at - start) + 1 > room:
                    room = 4 * (at - start) + 1
                    grown = <unsigned char*>PyMem_Realloc(line, room)
                    if grown is NULL:
                        raise MemoryError()
                    line = grown
                used = 0
                spaced = True  # at the start: no space before the first word
                for index in range(start, at):
                    c = PyUnicode_READ(kind, data, index)
                    if _space(c):
                        spaced = True
                        continue
                    if 0xD800 <= c <= 0xDFFF:
                        return NotImplemented
                    if spaced and used:
                        line[used] = 32
                        used += 1
                    spaced = False
                    used += _put_utf8(line + used, c)
                hashes[count] = XXH3_64bits_withSeed(line, used, 0)
                count += 1
            at += 1
        return PyBytes_FromStringAndSize(<char*>hashes, count * sizeof(uint64_t))
    finally:
        PyMem_Free(line)
        PyMem_Free(hashes)


cdef inline Py_ssize_t _put_utf8(unsigned char* out, uint32_t c) noexcept:
    """Write ``c`` in UTF-8 (not a surrogate); its length."""
    if c < 0x80:
        out[0] = c
        return 1
    if c < 0x800:
        out[0] = 0xC0 | (c >> 6)
        out[1] = 0x80 | (c & 0x3F)
        return 2
    if c < 0x10000:
        out[0] = 0xE0 | (c >> 12)
        out[1] = 0x80 | ((c >> 6) & 0x3F)
        out[2] = 0x80 | (c & 0x3F)
        return 3
    out[0] = 0xF0 | (c >> 18)
    out[1] = 0x80 | ((c >> 12) & 0x3F)
    out[2] = 0x80 | ((c >> 6) & 0x3F)
    out[3] = 0x80 | (c & 0x3F)
    return 4


def count_tokens(str folded):
    """``Counter(_CJK_CHAR.findall(folded))`` and ``Counter(_NON_CJK_WORD.findall(folded))``
    (:mod:`scrapy_simhash.features`) as two dicts in the same order: the ideographs one by
    one, and the runs of other letters and digits.

    A page has thousands of tokens and a few hundred distinct ones. Each token is counted
    where it lies in the text (_Tally), and a string is made once for each distinct token
    rather than once for each token."""
    cdef int kind = PyUnicode_KIND(folded)
    cdef const char* data = <const char*>PyUnicode_DATA(folded)
    cdef Py_ssize_t size = len(folded)
    cdef Py_ssize_t at
    cdef Py_ssize_t start = -1
    cdef Py_UCS4 c
    cdef _Tally chars
    cdef _Tally words
    _tally_open(&chars)
    _tally_open(&words)
    try:
        for at in range(size):
            c = PyUnicode_READ(kind, data, at)
            if _cjk(c):
                if start >= 0:
                    _tally_add(&words, data, kind, start, at - start)
                    start = -1
                _tally_add(&chars, data, kind, at, 1)
            elif _alnum(c):
                if start < 0:
                    start = at
            elif start >= 0:
                _tally_add(&words, data, kind, start, at - start)
                start = -1
        if start >= 0:
            _tally_add(&words, data, kind, start, size - start)
        return _tally_dict(&chars, folded), _tally_dict(&words, folded)
    finally:
        _tally_close(&chars)
        _tally_close(&words)


cdef struct _Counted:
    uint64_t hashed
    Py_ssize_t start
    Py_ssize_t length
    Py_ssize_t count


# Counts of the distinct substrings of one text, in the order each first occurs, and an
# open-addressing table of indices into that list (0: an empty slot), at most half full.
cdef struct _Tally:
    _Counted* counted
    Py_ssize_t used
    Py_ssize_t room
    Py_ssize_t* slots
    Py_ssize_t mask


cdef void _tally_open(_Tally* tally) noexcept:
    tally.counted = NULL
    tally.used = 0
    tally.room = 0
    tally.slots = NULL
    tally.mask = -1


cdef void _tally_close(_Tally* tally) noexcept:
    PyMem_Free(tally.counted)
    PyMem_Free(tally.slots)


cdef int _tally_grow(_Tally* tally) except -1:
    """Twice the room (256 at first), every substring counted so far placed again."""
    cdef Py_ssize_t room = max(2 * tally.room, 256)
    cdef Py_ssize_t mask = 2 * room - 1
    cdef _Counted* counted = <_Counted*>PyMem_Malloc(room * sizeof(_Counted))
    cdef Py_ssize_t* slots = <Py_ssize_t*>PyMem_Malloc((mask + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t index
    cdef Py_ssize_t slot
    if counted is NULL or slots is NULL:
        PyMem_Free(counted)
        PyMem_Free(slots)
        raise MemoryError()
    memset(slots, 0, (mask + 1) * sizeof(Py_ssize_t))
    if tally.used:
        memcpy(counted, tally.counted, tally.used * sizeof(_Counted))
    for index in range(tally.used):
        slot = counted[index].hashed & mask
        while slots[slot]:
            slot = (slot + 1) & mask
        slots[slot] = index + 1
    _tally_close(tally)
    tally.counted, tally.slots, tally.room, tally.mask = counted, slots, room, mask
    return 0


cdef int _tally_add(
    _Tally* tally, const char* data, int kind, Py_ssize_t start, Py_ssize_t length
) except -1:
    """One more of the substring of ``length`` characters at ``start``."""
    cdef const char* token = data + start * kind
    cdef size_t size = length * kind
    cdef uint64_t hashed = XXH3_64bits_withSeed(token, size, 0)
    cdef Py_ssize_t slot
    cdef _Counted* seen
    if tally.used == tally.room:
        _tally_grow(tally)
    slot = hashed & tally.mask
    while tally.slots[slot]:
        seen = &tally.counted[tally.slots[slot] - 1]
        if (
            seen.hashed == hashed
            and seen.length == length
            and memcmp(data + seen.start * kind, token, size) == 0
        ):
            seen.count += 1
            return 0
        slot = (slot + 1) & tally.mask
    tally.counted[tally.used] = _Counted(hashed, start, length, 1)
    tally.used += 1
    tally.slots[slot] = tally.used
    return 0


cdef dict _tally_dict(_Tally* tally, str text):
    """The counts as a dict of the substrings of ``text``, in order of first occurrence."""
    cdef dict counts = {}
    cdef Py_ssize_t index
    cdef _Counted* seen
    for index in range(tally.used):
        seen = &tally.counted[index]
        counts[text[seen.start : seen.start + seen.length]] = seen.count
    return counts


cdef struct _Shingles:
    # The last two tokens' hashes, the tokens seen, and each bin's least shingle value.
    uint64_t before_last
    uint64_t last
    Py_ssize_t tokens
    uint64_t key
    uint64_t mins[128]


cdef inline void _keep(_Shingles* state, uint64_t hashed) noexcept:
    cdef int slot = <int>(hashed >> 57)
    cdef uint64_t value = hashed & _VALUE_MASK
    if value < state.mins[slot]:
        state.mins[slot] = value


cdef inline void _token(_Shingles* state, const char* start, Py_ssize_t length) noexcept:
    """One token's hash under the key; from the third token on, the shingle ending here."""
    cdef uint64_t hashed = XXH3_64bits_withSeed(start, <size_t>length, state.key)
    if state.tokens >= 2:
        _keep(
            state,
            _mix(state.before_last ^ _rotate(state.last, 21) ^ _rotate(hashed, 42)),
        )
    state.before_last = state.last
    state.last = hashed
    state.tokens += 1


def minhash(str folded, key):
    """The interpreted ``confirm._minhash(folded, key)``: the one-permutation MinHash of the
    3-shingles of ``folded``'s tokens (``confirm.tokens``), bit 0 clear; None when it has
    no token; NotImplemented when the text has no UTF-8 form (a lone surrogate), which the
    interpreted code then answers."""
    cdef Py_ssize_t size = 0
    cdef const char* utf8
    try:
        utf8 = PyUnicode_AsUTF8AndSize(folded, &size)
    except UnicodeEncodeError:
        return NotImplemented
    cdef _Shingles state
    cdef int slot
    for slot in range(_BINS):
        state.mins[slot] = _EMPTY
    state.tokens = 0
    state.before_last = 0
    state.last = 0
    state.key = <uint64_t>(key & _U64)
    cdef bint ideographs = False
    cdef Py_UCS4 c
    for c in folded:
        if _cjk(c):
            ideographs = True
            break
    # Tokens: words between whitespace (str.split); with ideographs, each ideograph alone
    # and the runs of other letters and digits (confirm._TOKEN).
    cdef Py_ssize_t at = 0  # the UTF-8 offset of c
    cdef Py_ssize_t start = -1  # the UTF-8 offset of the open token's start (-1: none)
    cdef bint inside
    for c in folded:
        if ideographs:
            if _cjk(c):
                if start >= 0:
                    _token(&state, utf8 + start, at - start)
                    start = -1
                _token(&state, utf8 + at, _utf8_length(c))
                at += _utf8_length(c)
                continue
            inside = _alnum(c)
        else:
            inside = not _space(c)
        if inside:
            if start < 0:
                start = at
        elif start >= 0:
            _token(&state, utf8 + start, at - start)
            start = -1
        at += _utf8_length(c)
    if start >= 0:
        _token(&state, utf8 + start, at - start)
    if state.tokens == 0:
        return None
    if state.tokens < 3:  # fewer tokens than a shingle: the tokens themselves
        if state.tokens == 2:
            _keep(&state, state.before_last)
        _keep(&state, state.last)
    return _bits(state.mins)


cdef object _bits(uint64_t* mins):
    """The signature of the bins' minima: an empty bin borrows the next filled bin's
    minimum (circularly), each bin gives one bit of its minimum mixed with its salt, bin 0
    the most significant; bit 0 (the exact-digest mark) clear."""
    cdef uint64_t high = 0
    cdef uint64_t low = 0
    cdef uint64_t value
    cdef uint64_t bit
    cdef int slot
    cdef int source
    for slot in range(_BINS):
        source = slot
        while mins[source % _BINS] == _EMPTY:
            source += 1
        value = mins[source % _BINS]
        bit = _mix(value ^ (<uint64_t>(slot + 1) * _GOLDEN)) & 1
        if slot < 64:
            high |= bit << (63 - slot)
        else:
            low |= bit << (127 - slot)
    low &= ~(<uint64_t>1)
    return (<object>high << 64) | <object>low


cdef inline void _vote(int64_t* votes, uint64_t hashed, int64_t weight) noexcept:
    """Add ``weight`` to the votes of the bits set in ``hashed``, the most significant
    first (no branch: the bits of a hash are a coin toss each)."""
    cdef int bit
    for bit in range(64):
        votes[bit] += weight & -<int64_t>((hashed >> (63 - bit)) & 1)


def simhash(dict features, int bits, seed):
    """``_hashes_interpreted.simhash(features, bits, seed)``: each feature's xxh3 digest
    votes on every bit with its weight in fixed point; None when there are none or their
    weights sum to nothing; NotImplemented when a name has no UTF-8 form or a weight is not
    finite or large enough to make sums inexact, which the interpreted code then answers."""
    if not features:
        return None
    if bits != 64 and bits != 128:
        return NotImplemented
    cdef uint64_t seed64 = <uint64_t>(seed & _U64)
    cdef int64_t votes[128]
    cdef int64_t total = 0
    cdef double magnitude = 0.0
    cdef double weight
    cdef int64_t fixed
    cdef Py_ssize_t size
    cdef const char* utf8
    cdef XXH128_hash_t wide
    cdef uint64_t high = 0
    cdef uint64_t low = 0
    cdef int bit
    for bit in range(128):
        votes[bit] = 0
    for name, value in features.items():
        if type(name) is not str:
            return NotImplemented
        try:
            weight = rint(<double>value * _FIXED_POINT)
        except (TypeError, ValueError):  # numpy reads more kinds of number than this
            return NotImplemented
        magnitude += fabs(weight)
        if not isfinite(weight) or magnitude >= _EXACT_SUMS:
            return NotImplemented
        try:
            utf8 = PyUnicode_AsUTF8AndSize(name, &size)
        except UnicodeEncodeError:
            return NotImplemented
        fixed = <int64_t>weight
        total += fixed
        if bits == 64:
            _vote(votes, XXH3_64bits_withSeed(utf8, <size_t>size, seed64), fixed)
        else:
            wide = XXH3_128bits_withSeed(utf8, <size_t>size, seed64)
            _vote(votes, wide.high64, fixed)
            _vote(votes + 64, wide.low64, fixed)
    if total <= 0:
        return None
    # A bit is set where its votes outweigh half the total: 2 * votes > total, exactly.
    for bit in range(64):
        if 2 * votes[bit] > total:
            high |= (<uint64_t>1) << (63 - bit)
    if bits == 64:
        return <object>high
    for bit in range(64):
        if 2 * votes[64 + bit] > total:
            low |= (<uint64_t>1) << (63 - bit)
    return (<object>high << 64) | <object>low


def counter_total(const unsigned short[::1] counts):
    """The sum of a host's 16-bit counters (``template._above_load``)."""
    cdef int64_t total = 0
    cdef Py_ssize_t i
    for i in range(counts.shape[0]):
        total += counts[i]
    return total


def counters_at_least(const unsigned short[::1] counts, double least):
    """The buckets whose counter is ``least`` or more, in order (``HostMemory.template``)."""
    cdef list found = []
    cdef Py_ssize_t i
    for i in range(counts.shape[0]):
        if counts[i] >= least:
            found.append(i)
    return found
