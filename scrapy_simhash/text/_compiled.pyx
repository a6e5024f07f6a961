# cython: language_level=3, boundscheck=False, wraparound=False
"""The scoring walk's loop, the read-out and the tree's questions over lexbor's nodes,
read where selectolax's parser left them: the same steps, in the same order, as
:meth:`scrapy_simhash.text.walk._Walk.run_interpreted`, :func:`scrapy_simhash.text.readout.
_read_interpreted` and :class:`scrapy_simhash.text.tree.PureTree`, which ask selectolax's
nodes.

Why it exists: the loop runs for every element of every page, and in Python most of its
time goes to asking for an element's text, parent and attribute names, each a call that
builds objects. Here those are reads of lexbor's structures. selectolax's ``Node.mem_id``
is the address of lexbor's node; the layout of the few structures read is declared below
(lexbor 3.1's ``dom/interfaces/node.h``, ``element.h``, ``attr.h``, ``character_data.h``
and ``core/hash.h``), and lexbor's numbering of standard names is ``_lexbor_names``: no
lexbor headers or library are needed to build this. :func:`check_layout` holds the reading
to selectolax's own before the extension is used. Every sum is made in the order the
interpreted loop makes it, so both give identical frames and lines, and so identical
fingerprints (``tests/unit/test_compiled.py`` holds them to it).
"""

from cpython.unicode cimport (
    Py_UNICODE_ISALNUM,
    Py_UNICODE_ISDECIMAL,
    Py_UNICODE_ISSPACE,
    PyUnicode_1BYTE_KIND,
    PyUnicode_DATA,
    PyUnicode_DecodeUTF8,
    PyUnicode_KIND,
    PyUnicode_READ,
)
from libc.stdlib cimport calloc, free, malloc, realloc
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from libc.stdint cimport uint32_t, uint64_t, uintptr_t
from libc.string cimport memchr, memcmp, memcpy

from scrapy_simhash.text._lexbor_names import ATTRIBUTE_NAMES, TAG_NAMES
from scrapy_simhash.text.rules import (
    _BOILERPLATE_TAGS,
    _CREDIT_ANYWHERE_LETTERS,
    _CREDIT_ANYWHERE_SEQUENCES,
    _CREDIT_DATE_WORDS,
    _CREDIT_START_CHARS,
    _CREDIT_START_WORDS,
    _MAX_BYLINE_CHARS,
    _MAX_CREDIT_BYTES,
    _HIDING_ATTRIBUTES,
    _INLINE_TAGS,
    _JUDGED_ATTRIBUTES,
    _JUNK_TAGS,
    _MARK_ATTRIBUTES,
    _MARK_TAGS,
    _LARGE_SHARE,
    _LAYOUT_SUFFIX,
    _MIN_PARAGRAPH_BYTES,
    _NEGATIVE_STEMS,
    _NOT_NESTING,
    _FORMATTING,
    _NEGATIVE_WHOLE,
    _NEUTRAL_PREFIXES,
    _POSITIVE_WORDS,
    _ROLES,
    _SKIP_LINK_PREFIXES,
    _STRONG,
    _STRONG_NEGATIVE_WORDS,
    _TOKEN_ROLES,
    _hides,
    _names_role,
    _remember,
)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object)


cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    typedef struct { unsigned char *data; size_t length; } lexbor_str_t;
    typedef struct lxb_dom_node lxb_dom_node_t;
    struct lxb_dom_node {
        void *events; uintptr_t local_name; uintptr_t prefix; uintptr_t ns;
        void *owner_document; lxb_dom_node_t *next; lxb_dom_node_t *prev;
        lxb_dom_node_t *parent; lxb_dom_node_t *first_child; lxb_dom_node_t *last_child;
        void *user; int type;
    };
    typedef struct lxb_dom_attr lxb_dom_attr_t;
    typedef struct {
        lxb_dom_node_t node; uintptr_t upper_name; uintptr_t qualified_name;
        lexbor_str_t *is_value; lxb_dom_attr_t *first_attr;
    } lxb_dom_element_t;
    struct lxb_dom_attr {
        lxb_dom_node_t node; uintptr_t upper_name; uintptr_t qualified_name;
        lexbor_str_t *value; void *owner; lxb_dom_attr_t *next; lxb_dom_attr_t *prev;
    };
    typedef struct { lxb_dom_node_t node; lexbor_str_t data; } lxb_dom_character_data_t;
    typedef struct {
        union { unsigned char *long_str; unsigned char short_str[17]; } u;
        size_t length;
        void *next;
    } lexbor_hash_entry_t;
    static const unsigned char *lexbor_entry_name(const lexbor_hash_entry_t *entry) {
        return entry->length <= 16 ? entry->u.short_str : entry->u.long_str;
    }
    """
    ctypedef struct lexbor_str_t:
        unsigned char* data
        size_t length
    ctypedef struct lxb_dom_node_t:
        uintptr_t local_name
        lxb_dom_node_t* next
        lxb_dom_node_t* prev
        lxb_dom_node_t* parent
        lxb_dom_node_t* first_child
        lxb_dom_node_t* last_child
        int type
    ctypedef struct lxb_dom_attr_t:
        lxb_dom_node_t node
        lexbor_str_t* value
        lxb_dom_attr_t* next
    ctypedef struct lxb_dom_element_t:
        lxb_dom_node_t node
        lxb_dom_attr_t* first_attr
    ctypedef struct lxb_dom_character_data_t:
        lxb_dom_node_t node
        lexbor_str_t data
    ctypedef struct lexbor_hash_entry_t:
        size_t length
    const unsigned char* lexbor_entry_name(const lexbor_hash_entry_t* entry)

# lexbor's node types (LXB_DOM_NODE_TYPE_*).
cdef enum:
    _ELEMENT = 1
    _TEXT = 3


def valid_utf8(bytes data):
    """``data.decode("utf-8")`` would succeed: well-formed UTF-8 (no overlong form, no
    surrogate, nothing above U+10FFFF, no character cut at the end), checked without
    making the text. ASCII, most of a page's bytes, is passed eight bytes at a time."""
    cdef const unsigned char* start = data
    cdef Py_ssize_t size = len(data)
    cdef Py_ssize_t at = 0
    cdef unsigned char lead
    cdef unsigned char second
    cdef uint64_t word
    while at < size:
        while at + 8 <= size:
            memcpy(&word, start + at, 8)
            if word & 0x8080808080808080ULL:
                break
            at += 8
        if at >= size:
            break
        lead = start[at]
        if lead < 0x80:
            at += 1
            continue
        if lead < 0xC2 or lead > 0xF4:  # a continuation byte, an overlong lead, too high
            return False
        if lead < 0xE0:
            if at + 1 >= size or start[at + 1] & 0xC0 != 0x80:
                return False
            at += 2
            continue
        if at + 2 >= size:
            return False
        second = start[at + 1]
        if second & 0xC0 != 0x80 or start[at + 2] & 0xC0 != 0x80:
            return False
        if lead < 0xF0:
            if (lead == 0xE0 and second < 0xA0) or (lead == 0xED and second >= 0xA0):
                return False  # overlong, or a surrogate
            at += 3
            continue
        if at + 3 >= size or start[at + 3] & 0xC0 != 0x80:
            return False
        if (lead == 0xF0 and second < 0x90) or (lead == 0xF4 and second >= 0x90):
            return False  # overlong, or above U+10FFFF
        at += 4
    return True




cdef inline bint _is_name_byte(unsigned char c) noexcept:
    """A byte of a tag name (HTML's tag name state: up to whitespace, '/' or '>')."""
    return not (c == 9 or c == 10 or c == 12 or c == 13 or c == 32 or c == 47 or c == 62)


cdef inline bint _is_letter(unsigned char c) noexcept:
    return 65 <= c <= 90 or 97 <= c <= 122


# The names too_costly tells apart, compared as bytes, without objects.
cdef enum:
    _NESTING = 0
    _NOT_NESTING_KIND = 1
    _FORMATTING_KIND = 2
    _SELECT_KIND = 3
    _OPTION_KIND = 4

# Each listed name with its kind, grouped by first letter and length: the names of one
# shape lie together in _KIND_NAMES (each _KIND_WIDTH bytes, NUL-padded), from
# _KIND_FIRST[letter][length], _KIND_COUNT[letter][length] of them. "select" and "option"
# come first, so that their own kind decides over option's place in _NOT_NESTING.
cdef enum:
    _KIND_WIDTH = 16

cdef dict _KIND_OF = {}
for _name in sorted(_NOT_NESTING):
    _KIND_OF[_name] = _NOT_NESTING_KIND
for _name in sorted(_FORMATTING):
    _KIND_OF[_name] = _FORMATTING_KIND
_KIND_OF[b"select"] = _SELECT_KIND
_KIND_OF[b"option"] = _OPTION_KIND
cdef list _KIND_SORTED = sorted(_KIND_OF, key=lambda name: (name[0], len(name), name))
cdef bytes _KIND_NAMES = b"".join(name.ljust(_KIND_WIDTH, b"\0") for name in _KIND_SORTED)
cdef bytes _KIND_KINDS = bytes(_KIND_OF[name] for name in _KIND_SORTED)
cdef int _KIND_FIRST[26][17]
cdef int _KIND_COUNT[26][17]
for _index, _name in enumerate(_KIND_SORTED):
    if _KIND_COUNT[_name[0] - 97][len(_name)] == 0:
        _KIND_FIRST[_name[0] - 97][len(_name)] = _index
    _KIND_COUNT[_name[0] - 97][len(_name)] += 1


cdef int _kind(const unsigned char* name, Py_ssize_t size) noexcept:
    """The kind of a lowercased tag name of ``size`` bytes (1 to 16): _NESTING for any
    name not listed."""
    if not 97 <= name[0] <= 122:
        return _NESTING
    cdef int first = _KIND_FIRST[name[0] - 97][size]
    cdef int count = _KIND_COUNT[name[0] - 97][size]
    cdef const unsigned char* names = <const unsigned char*>PyBytes_AS_STRING(_KIND_NAMES)
    cdef const unsigned char* kinds = <const unsigned char*>PyBytes_AS_STRING(_KIND_KINDS)
    cdef int index
    for index in range(first, first + count):
        if memcmp(names + index * _KIND_WIDTH, name, size) == 0:
            return kinds[index]
    return _NESTING


def too_costly(
    bytes data, Py_ssize_t max_scanned, Py_ssize_t max_reopened, Py_ssize_t max_compared
):
    """``parse._too_costly_interpreted``: 0, or which limit the page passes (1: open
    elements looked through, 2: formatting elements opened again, 3: options compared)."""
    cdef const unsigned char* start = data
    cdef Py_ssize_t size = len(data)
    cdef Py_ssize_t depth = 0
    cdef Py_ssize_t scanned = 0
    cdef Py_ssize_t formatting = 0
    cdef Py_ssize_t reopened = 0
    cdef Py_ssize_t options = -1
    cdef Py_ssize_t compared = 0
    cdef Py_ssize_t at
    cdef Py_ssize_t name_start
    cdef Py_ssize_t end
    cdef Py_ssize_t k
    cdef Py_ssize_t length
    cdef bint closing
    cdef int kind
    cdef unsigned char c
    cdef const void* found
    cdef unsigned char lowered[16]
    found = memchr(start, b'<', <size_t>size)
    while found is not NULL:
        at = <const unsigned char*>found - start
        name_start = at + 1
        closing = name_start < size and start[name_start] == 47
        if closing:
            name_start += 1
        end = name_start
        while end < size and _is_name_byte(start[end]):
            end += 1
        if end > name_start and _is_letter(start[name_start]):
            length = end - name_start
            kind = _NESTING
            if length <= 16:
                for k in range(length):
                    c = start[name_start + k]
                    lowered[k] = c | 0x20 if 65 <= c <= 90 else c
                kind = _kind(lowered, length)
            scanned += depth
            if scanned > max_scanned:
                return 1
            if closing:
                if kind != _NOT_NESTING_KIND and kind != _OPTION_KIND and depth > 0:
                    depth -= 1
                if kind == _FORMATTING_KIND and formatting > 0:
                    formatting -= 1
                if kind == _SELECT_KIND:
                    options = -1
            else:
                found = memchr(start + end, b'>', <size_t>(size - end))
                if found is NULL:
                    return 0
                at = <const unsigned char*>found - start
                if start[at - 1] != 47:
                    if kind == _FORMATTING_KIND:
                        formatting += 1
                    else:
                        reopened += formatting
                        if reopened > max_reopened:
                            return 2
                    if kind != _NOT_NESTING_KIND and kind != _OPTION_KIND:
                        depth += 1
                if kind == _SELECT_KIND:
                    options = 0
                elif kind == _OPTION_KIND and options >= 0:
                    compared += options
                    options += 1
                    if compared > max_compared:
                        return 3
        if at + 1 >= size:
            break
        found = memchr(start + at + 1, b'<', <size_t>(size - at - 1))
    return 0


cdef inline lxb_dom_node_t* _node(uintptr_t address) noexcept:
    return <lxb_dom_node_t*>address


cdef inline lxb_dom_node_t* _element_from(lxb_dom_node_t* node) noexcept:
    """``node`` or the first element after it among its siblings; NULL when none."""
    while node is not NULL and node.type != _ELEMENT:
        node = node.next
    return node


cdef lxb_dom_node_t* _after(lxb_dom_node_t* node, lxb_dom_node_t* body) noexcept:
    """The element after ``node``'s subtree in document order within ``body``; NULL at the
    body's end (``walk._after``)."""
    cdef lxb_dom_node_t* after
    while node is not body:
        after = _element_from(node.next)
        if after is not NULL:
            return after
        node = node.parent
        if node is NULL:
            break
    return NULL


cdef inline lxb_dom_node_t* _next(lxb_dom_node_t* node, lxb_dom_node_t* body) noexcept:
    """The element after ``node``'s start in document order within ``body``."""
    cdef lxb_dom_node_t* child = _element_from(node.first_child)
    if child is not NULL:
        return child
    return _after(node, body)


cdef inline bint _blank(const unsigned char* text, size_t size) noexcept:
    """Whether ``text`` is only the ASCII characters that ``str.strip`` removes."""
    cdef size_t at
    cdef unsigned char c
    for at in range(size):
        c = text[at]
        if not (c == 32 or 9 <= c <= 13 or 28 <= c <= 31):
            return False
    return True


cdef str _stripped(lxb_dom_node_t* node):
    """The text nodes from ``node`` on, up to the first element (passing comments), joined
    and stripped of whitespace (``walk._stripped`` of ``tree.run_after``)."""
    cdef lxb_dom_node_t* first = NULL
    cdef lxb_dom_node_t* other = NULL
    cdef lxb_dom_character_data_t* text
    cdef lxb_dom_node_t* at = node
    while at is not NULL and at.type != _ELEMENT:
        if at.type == _TEXT:
            if first is NULL:
                first = at
            else:
                other = at
                break
        at = at.next
    if first is NULL:
        return ""
    if other is NULL:
        text = <lxb_dom_character_data_t*>first
        if _blank(text.data.data, text.data.length):
            return ""
        return _decoded(text).strip()
    pieces = []
    at = first
    while at is not NULL and at.type != _ELEMENT:
        if at.type == _TEXT:
            pieces.append(_decoded(<lxb_dom_character_data_t*>at))
        at = at.next
    return "".join(pieces).strip()


cdef inline str _decoded(lxb_dom_character_data_t* text):
    """A text node's text, any byte lexbor passed through that is not UTF-8 read as U+FFFD
    (as selectolax reads it)."""
    return PyUnicode_DecodeUTF8(<const char*>text.data.data, text.data.length, "replace")


#: Slots of a _Names table: a page has a few dozen distinct tag and attribute names.
cdef enum:
    _NAME_SLOTS = 256


# What the walk and the read-out ask of a name, answered once per distinct name: the sets
# of rules.py it is in.
cdef enum:
    _BOILERPLATE_TAG = 1
    _INLINE_TAG = 2
    _MARK_TAG = 4
    _JUDGED_NAME = 8
    _HIDING_NAME = 16
    _MARK_NAME = 32
    _JUNK_TAG = 64


# Each set of rules.py a name can be in, with its bit.
cdef tuple _FLAG_SETS = (
    (frozenset(_JUNK_TAGS), _JUNK_TAG),
    (_BOILERPLATE_TAGS, _BOILERPLATE_TAG),
    (_INLINE_TAGS, _INLINE_TAG),
    (_MARK_TAGS, _MARK_TAG),
    (_JUDGED_ATTRIBUTES, _JUDGED_NAME),
    (_HIDING_ATTRIBUTES, _HIDING_NAME),
    (_MARK_ATTRIBUTES, _MARK_NAME),
)


cdef int _flags_of(name) except -1:
    """The sets of rules.py that hold ``name`` (a tag or an attribute name), as bits."""
    cdef int flags = 0
    for names, bit in _FLAG_SETS:
        if name in names:
            flags |= bit
    return flags


# lexbor's standard names with their bits, by number: one tuple for tags, one for attributes.
cdef tuple _STANDARD_TAGS = tuple((name, _flags_of(name)) for name in TAG_NAMES)
cdef tuple _STANDARD_ATTRIBUTES = tuple((name, _flags_of(name)) for name in ATTRIBUTE_NAMES)


cdef struct _NameSlot:
    uintptr_t name
    PyObject* text
    int flags


cdef class _Names:
    """The Python strings of one tree's element or attribute names, by lexbor's number for
    the name: a standard name's from ``_lexbor_names``, any other's read once from the
    entry that number points at (one entry per name and document, and nothing is freed
    while a walk or a read-out runs). Each distinct name is decoded and looked up in the
    sets once, not once per element (a page has a thousand elements and a few dozen
    names)."""

    # An extension type's C fields start zeroed: every slot empty, none used.
    cdef _NameSlot slots[_NAME_SLOTS]
    cdef Py_ssize_t used
    cdef list kept  # the strings the slots point to
    cdef tuple standard

    def __cinit__(self, tuple standard):
        self.kept = []
        self.standard = standard

    cdef object decoded(self, uintptr_t name, int* flags):
        """The name as a string; its bits (_flags_of) in ``flags``."""
        cdef size_t slot
        cdef const lexbor_hash_entry_t* entry
        cdef const unsigned char* data
        if name < <uintptr_t>len(self.standard):
            pair = <tuple>self.standard[name]
            flags[0] = pair[1]
            return pair[0]
        slot = (name >> 3) % _NAME_SLOTS
        while self.slots[slot].name != 0:
            if self.slots[slot].name == name:
                flags[0] = self.slots[slot].flags
                return <object>self.slots[slot].text
            slot = (slot + 1) % _NAME_SLOTS
        entry = <const lexbor_hash_entry_t*>name
        data = lexbor_entry_name(entry)
        text = PyUnicode_DecodeUTF8(<const char*>data, entry.length, "replace")
        flags[0] = _flags_of(text)
        if 2 * self.used < _NAME_SLOTS:  # a table half full stays quick to probe
            self.kept.append(text)
            self.slots[slot].name = name
            self.slots[slot].text = <PyObject*>text
            self.slots[slot].flags = flags[0]
            self.used += 1
        return text


cdef inline object _tag(lxb_dom_node_t* node, _Names names, int* flags):
    """An element's tag, its bits in ``flags``."""
    return names.decoded(node.local_name, flags)


cdef list _attribute_names(lxb_dom_node_t* node, _Names names):
    """The names of the element's attributes, in document order."""
    cdef lxb_dom_attr_t* attribute = (<lxb_dom_element_t*>node).first_attr
    cdef int flags
    result = []
    while attribute is not NULL:
        result.append(names.decoded(attribute.node.local_name, &flags))
        attribute = attribute.next
    return result


cdef int _attribute_flags(lxb_dom_node_t* node, _Names names) except -1:
    """The bits (_flags_of) of the element's attribute names together, without making
    the list of them."""
    cdef lxb_dom_attr_t* attribute = (<lxb_dom_element_t*>node).first_attr
    cdef int flags
    cdef int together = 0
    while attribute is not NULL:
        names.decoded(attribute.node.local_name, &flags)
        together |= flags
        attribute = attribute.next
    return together


cdef object _attribute(lxb_dom_node_t* node, str name, _Names names):
    """The value of the element's attribute ``name`` ('' for one without a value), None
    when it has none of that name."""
    cdef lxb_dom_attr_t* attribute = (<lxb_dom_element_t*>node).first_attr
    cdef int flags
    while attribute is not NULL:
        if names.decoded(attribute.node.local_name, &flags) == name:
            if attribute.value is NULL:
                return ""
            return PyUnicode_DecodeUTF8(
                <const char*>attribute.value.data, attribute.value.length, "replace"
            )
        attribute = attribute.next
    return None


cdef inline Py_ssize_t _characters(const unsigned char* byte, Py_ssize_t size) noexcept:
    """The characters of ``size`` bytes of UTF-8: its bytes that are not continuation
    bytes, counted eight at a time (a page's text is most of its bytes)."""
    cdef Py_ssize_t count = size
    cdef Py_ssize_t at = 0
    cdef uint64_t word
    while at + 8 <= size:
        memcpy(&word, byte + at, 8)
        # A continuation byte is 10xxxxxx: its high bit set and the next one clear. Each
        # byte's flag moved to its low bit, the multiplication sums them in the top byte.
        word = (word & ~(word << 1) & 0x8080808080808080ULL) >> 7
        if word:
            count -= <Py_ssize_t>((word * 0x0101010101010101ULL) >> 56)
        at += 8
    while at < size:
        if byte[at] & 0xC0 == 0x80:
            count -= 1
        at += 1
    return count


cdef class Counts:
    """The text lengths of one tree's elements by node address, for :func:`subtree_chars`:
    a table of C integers (open addressing), as a page's hundreds of entries cost a dict
    of Python integers more than the counting itself."""

    cdef size_t* keys  # node addresses; 0 marks an empty slot
    cdef Py_ssize_t* values
    cdef size_t mask  # slots - 1, a power of two less one
    cdef Py_ssize_t used

    def __cinit__(self):
        self._allocate(64)

    def __dealloc__(self):
        free(self.keys)
        free(self.values)

    def __len__(self):
        return self.used

    cdef int _allocate(self, size_t slots) except -1:
        """Empty tables of ``slots`` slots in place of the current ones (kept if it fails)."""
        cdef size_t* keys = <size_t*>calloc(slots, sizeof(size_t))
        cdef Py_ssize_t* values = <Py_ssize_t*>malloc(slots * sizeof(Py_ssize_t))
        if keys is NULL or values is NULL:
            free(keys)
            free(values)
            raise MemoryError()
        self.keys = keys
        self.values = values
        self.mask = slots - 1
        return 0

    cdef inline size_t _slot(self, size_t key) noexcept:
        cdef size_t slot = ((key >> 4) * 0x9E3779B97F4A7C15ULL) & self.mask
        while self.keys[slot] != 0 and self.keys[slot] != key:
            slot = (slot + 1) & self.mask
        return slot

    cdef Py_ssize_t get(self, size_t key) noexcept:
        """The count under ``key``; -1 when there is none."""
        cdef size_t slot = self._slot(key)
        return self.values[slot] if self.keys[slot] == key else -1

    cdef int put(self, size_t key, Py_ssize_t value) except -1:
        cdef size_t* keys = self.keys
        cdef Py_ssize_t* values = self.values
        cdef size_t slots = self.mask + 1
        cdef size_t at
        cdef size_t slot
        if 2 * (self.used + 1) > slots:  # half full at most: probes stay short
            self._allocate(2 * slots)
            for at in range(slots):
                if keys[at] != 0:
                    slot = self._slot(keys[at])
                    self.keys[slot] = keys[at]
                    self.values[slot] = values[at]
            free(keys)
            free(values)
        slot = self._slot(key)
        if self.keys[slot] == 0:
            self.used += 1
        self.keys[slot] = key
        self.values[slot] = value
        return 0



def subtree_chars(uintptr_t el, Counts counted):
    """``len(tree.text_content(el))``: the characters of every text node under ``el``,
    counted in their UTF-8 without making the text.

    The walk asks this of elements nested in one another (a wrapper, then a menu inside
    it), so one count of a subtree keeps the count of each of its elements that has
    attributes in ``counted`` (by node address, for this tree only) and later questions
    about them are answered from there: the counting stays linear in the page.
    """
    return _subtree_chars(_node(el), counted)


cdef Py_ssize_t _subtree_chars(lxb_dom_node_t* top, Counts counted) except -1:
    cdef Py_ssize_t found = counted.get(<size_t>top)
    if found >= 0:
        return found
    cdef Py_ssize_t depth = 0
    cdef Py_ssize_t capacity = 64
    cdef Py_ssize_t* sums = <Py_ssize_t*>malloc(capacity * sizeof(Py_ssize_t))
    cdef Py_ssize_t* grown
    cdef Py_ssize_t total
    cdef lxb_dom_node_t* current = top
    cdef lxb_dom_node_t* node = top.first_child
    cdef lxb_dom_character_data_t* text
    if sums is NULL:
        raise MemoryError()
    sums[0] = 0
    try:
        while True:
            if node is NULL:  # the end of current: its sum is complete
                total = sums[depth]
                if (<lxb_dom_element_t*>current).first_attr is not NULL or current is top:
                    counted.put(<size_t>current, total)
                if depth == 0:
                    return total
                depth -= 1
                sums[depth] += total
                node = current.next
                current = current.parent
            elif node.type == _TEXT:
                text = <lxb_dom_character_data_t*>node
                sums[depth] += _characters(text.data.data, text.data.length)
                node = node.next
            elif node.type == _ELEMENT and node.first_child is not NULL:
                depth += 1
                if depth == capacity:
                    capacity *= 2
                    grown = <Py_ssize_t*>realloc(sums, capacity * sizeof(Py_ssize_t))
                    if grown is NULL:
                        raise MemoryError()
                    sums = grown
                sums[depth] = 0
                current = node
                node = node.first_child
            else:
                node = node.next
    finally:
        free(sums)


cdef str _text_content(lxb_dom_node_t* top):
    """Every text node's text under ``top``, in document order (``PureTree.text_content``)."""
    cdef lxb_dom_node_t* node = top.first_child
    cdef lxb_dom_character_data_t* text
    pieces = []
    while node is not NULL:
        if node.type == _TEXT:
            pieces.append(_decoded(<lxb_dom_character_data_t*>node))
        elif node.type == _ELEMENT and node.first_child is not NULL:
            node = node.first_child
            continue
        while node.next is NULL:
            node = node.parent
            if node is NULL or node is top:
                return "".join(pieces)
        node = node.next
    return "".join(pieces)


cdef class LexborTree:
    """A page's tree read in place (see :class:`scrapy_simhash.text.tree.Tree`): each
    element is its node's address, which selectolax calls ``mem_id``."""

    cdef readonly object parser  # holds the document the addresses point into
    cdef readonly uintptr_t root
    cdef readonly uintptr_t body
    cdef _Names tags
    cdef _Names attributes

    def __cinit__(self, parser):
        self.parser = parser
        self.root = parser.root.mem_id
        body = parser.body or parser.root
        self.body = body.mem_id
        self.tags = _Names(_STANDARD_TAGS)
        self.attributes = _Names(_STANDARD_ATTRIBUTES)

    def tag(self, uintptr_t n):
        cdef int flags
        return _tag(_node(n), self.tags, &flags)

    def get(self, uintptr_t n, str name):
        return _attribute(_node(n), name, self.attributes)

    def parent(self, uintptr_t n):
        cdef lxb_dom_node_t* parent = _node(n).parent
        if parent is NULL or parent.type != _ELEMENT:
            return None
        return <uintptr_t>parent

    def children(self, uintptr_t n):
        cdef lxb_dom_node_t* child = _element_from(_node(n).first_child)
        found = []
        while child is not NULL:
            found.append(<uintptr_t>child)
            child = _element_from(child.next)
        return found

    def text_content(self, uintptr_t n):
        return _text_content(_node(n))

    def descendants(self, uintptr_t n, frozenset tags):
        cdef lxb_dom_node_t* top = _node(n)
        cdef lxb_dom_node_t* node = _element_from(top.first_child)
        cdef int flags
        cdef bytes wanted = _standard_tags_in(tags)
        cdef const unsigned char* standard = wanted
        cdef uintptr_t count = len(wanted)
        found = []
        while node is not NULL:
            if node.local_name < count:
                if standard[node.local_name]:
                    found.append(<uintptr_t>node)
            elif _tag(node, self.tags, &flags) in tags:
                found.append(<uintptr_t>node)
            node = _next(node, top)
        return found


# For each set of tags asked for, which of lexbor's standard tag numbers it holds: a page's
# elements are then matched by number, not by a string looked up in the set (the callers
# ask for one or two sets, each a constant).
cdef dict _STANDARD_TAGS_IN = {}


cdef bytes _standard_tags_in(frozenset tags):
    cdef PyObject* known = PyDict_GetItem(_STANDARD_TAGS_IN, tags)
    if known is not NULL:
        return <bytes>known
    wanted = bytes(name in tags for name, _ in _STANDARD_TAGS)
    if len(_STANDARD_TAGS_IN) < 64:
        _STANDARD_TAGS_IN[tags] = wanted
    return wanted


cdef void _unlink(lxb_dom_node_t* node) noexcept:
    """Take ``node`` out of the tree, as lexbor's ``lxb_dom_node_remove_wo_events`` does
    (the node stays in the document's memory, which lexbor frees with the document)."""
    if node.parent is not NULL:
        if node.parent.first_child is node:
            node.parent.first_child = node.next
        if node.parent.last_child is node:
            node.parent.last_child = node.prev
    if node.next is not NULL:
        node.next.prev = node.prev
    if node.prev is not NULL:
        node.prev.next = node.next
    node.parent = NULL
    node.next = NULL
    node.prev = NULL


def strip_junk(LexborTree tree):
    """``parse._strip_junk``: every element of _JUNK_TAGS taken out, with what it holds."""
    cdef lxb_dom_node_t* top = _node(tree.root)
    cdef lxb_dom_node_t* node
    cdef lxb_dom_node_t* after
    cdef int flags
    _tag(top, tree.tags, &flags)
    if flags & _JUNK_TAG:
        return
    node = _next(top, top)
    while node is not NULL:
        _tag(node, tree.tags, &flags)
        if flags & _JUNK_TAG:
            after = _after(node, top)
            _unlink(node)
            node = after
        else:
            node = _next(node, top)


cdef inline bint _small(Py_ssize_t chars, lxb_dom_node_t* body, Counts counted) except -1:
    """``_Walk._small``: whether ``chars`` characters are a share of the body's text small
    enough to drop."""
    return chars < _subtree_chars(body, counted) * _SMALL_SHARE


cdef double _SMALL_SHARE = _LARGE_SHARE
# walk.py's, bound when the first walk runs (walk.py imports this module).
cdef object _holds_article = None
cdef Py_ssize_t _PARAGRAPH_CHARS = 0


cdef int _role(lxb_dom_node_t* node, _Names names) except? -9:
    """``_names_role`` of the element, its attributes read from the node."""
    cls = _attribute(node, "class", names)
    ident = _attribute(node, "id", names)
    if ident is None:
        if cls is None:
            return 0
        text = cls
    else:
        text = ident if cls is None else f"{cls} {ident}"
    cdef PyObject* cached = PyDict_GetItem(_ROLES, text)
    if cached is not NULL:
        return <object>cached
    return _remember(_ROLES, text, class_role(text.lower()))


cdef bint _hidden(lxb_dom_node_t* node, _Names names) except -1:
    """``rules._hides`` of an element that has a hiding attribute, read from the node."""
    return _hides(
        _attribute(node, "hidden", names),
        _attribute(node, "aria-hidden", names),
        _attribute(node, "style", names),
        _attribute(node, "role", names),
    )


cdef object _named_boilerplate(
    lxb_dom_node_t* node, object tree, _Names names, lxb_dom_node_t* body, Counts counted
):
    """``_Walk.named_boilerplate``, read from the node."""
    if _attribute(node, "itemprop", names) == "articleBody":
        return False
    cdef Py_ssize_t chars = _subtree_chars(node, counted)
    if not _small(chars, body, counted):
        return None
    if chars < _PARAGRAPH_CHARS:
        return True
    return (not _holds_article(tree, <uintptr_t>node)) or None


cdef void _count_tail(lxb_dom_node_t* node, list top) except *:
    """The text after ``node`` (its tail) is its parent's: counted and kept in ``top``."""
    tail = _stripped(node.next)
    if tail:
        top[0] += len(tail)
        top[5].append(tail)


cdef void _score_paragraph(list own, list frame, list stack) except *:
    """``walk._score_paragraph``: a block's own text, when it is a paragraph, credited to
    its parent and grandparent. Its UTF-8 length and its commas and full stops are counted
    over the pieces, not a joined and encoded copy; the score's sum is made in the
    interpreted code's order (the same float). A piece with no UTF-8 form (a lone
    surrogate, where the interpreted code raises) is left to the interpreted code."""
    cdef Py_ssize_t size = len(own) - 1  # the spaces joining the pieces
    cdef Py_ssize_t commas = 0
    cdef Py_ssize_t wide_commas = 0
    cdef Py_ssize_t stops = 0
    cdef Py_UCS4 c
    cdef str piece
    for piece in own:
        for c in piece:
            if c < 0x80:
                size += 1
                if c == 44:  # ,
                    commas += 1
            elif c < 0x800:
                size += 2
            elif c < 0x10000:
                if 0xD800 <= c <= 0xDFFF:
                    from scrapy_simhash.text.walk import _score_paragraph as interpreted

                    interpreted(own, frame, stack)
                    return
                size += 3
                if c == 0xFF0C:  # ，
                    wide_commas += 1
                elif c == 0x3002:  # 。
                    stops += 1
            else:
                size += 4
    if size < _MIN_PARAGRAPH_BYTES:
        return
    cdef double score = 1.0
    score += commas
    score += wide_commas
    score += stops
    score += min(size / 100.0, 3.0)
    frame[3] += score
    stack[len(stack) - 1][2] += score
    if len(stack) > 1:
        stack[len(stack) - 2][2] += score / 2


def run(walk):
    """Fill ``walk``'s stats, candidates, dropped elements and marks (see ``_Walk.run``),
    each element by its node's address."""
    cdef LexborTree tree = walk.tree
    cdef lxb_dom_node_t* body = _node(tree.body)
    cdef lxb_dom_node_t* node
    cdef lxb_dom_node_t* top_node = body
    cdef lxb_dom_node_t* parent
    cdef lxb_dom_node_t* ended
    cdef list frame
    cdef list top
    cdef list block
    cdef Py_ssize_t chars
    cdef dict stats = walk.stats
    cdef list candidates = walk.candidates
    cdef list dropped = walk.dropped
    cdef list marks = walk.marks
    cdef int tag_flags
    cdef int attribute_flags
    cdef Py_ssize_t min_paragraph = _MIN_PARAGRAPH_BYTES
    cdef _Names tags = tree.tags
    cdef _Names attributes = tree.attributes
    cdef Counts counted = walk._counted
    global _holds_article, _PARAGRAPH_CHARS
    if _holds_article is None:  # walk.py imports this module: its names are read here
        from scrapy_simhash.text.walk import _ARTICLE_PARAGRAPH_CHARS, _holds_article
        _PARAGRAPH_CHARS = _ARTICLE_PARAGRAPH_CHARS

    own = []
    root = [0, 0, 0.0, 0.0, own, own, False, <uintptr_t>body, _tag(body, tags, &tag_flags)]
    cdef list stack = [root]
    top = root
    text = _stripped(body.first_child)
    if text:
        root[0] += len(text)
        own.append(text)
    node = _next(body, body)  # the body itself is never judged
    while True:
        parent = body if node is NULL else node.parent
        while top_node is not parent:
            # The end of the top element: its subtree is over.
            frame = stack.pop()
            top = stack[len(stack) - 1]
            top_node = _node(top[7])
            own = frame[4]
            if own and 4 * frame[0] + len(own) >= min_paragraph:
                _score_paragraph(own, frame, stack)
            ended = _node(frame[7])
            if frame[2]:
                candidates.append(frame[7])
            chars = frame[0]
            top[0] += chars
            top[1] += chars if frame[8] == "a" else frame[1]
            top[3] += frame[3]
            _count_tail(ended, top)
        if node is NULL:
            break
        guarded = top[6]
        verdict = False
        key = <uintptr_t>node
        tag = _tag(node, tags, &tag_flags)
        attribute_flags = _attribute_flags(node, attributes)
        if tag_flags & _BOILERPLATE_TAG or attribute_flags & _JUDGED_NAME:
            # Boilerplate by tag, by a hiding attribute or by class/id names, read from the
            # node (``_Walk.run_interpreted``).
            if tag_flags & _BOILERPLATE_TAG or (
                attribute_flags & _HIDING_NAME and _hidden(node, attributes)
            ):
                verdict = _small(_subtree_chars(node, counted), body, counted) or None
            elif not guarded and _role(node, attributes) < 0:
                verdict = _named_boilerplate(node, tree, attributes, body, counted)
            if verdict:
                dropped.append(key)
            elif verdict is None:
                guarded = True
        if verdict:
            # Its subtree is passed over; it ends at once, and its tail counts.
            _count_tail(node, top)
            node = _after(node, body)
            continue
        text = _stripped(node.first_child)
        chars = len(text)
        if tag_flags & _INLINE_TAG:
            block = top[5]
            frame = [chars, 0, 0.0, 0.0, None, block, guarded, key, tag]
        else:
            block = []
            PyObject_GC_UnTrack(block)
            frame = [chars, 0, 0.0, 0.0, block, block, guarded, key, tag]
        # Frames and blocks hold numbers, strings and blocks: they make no cycles, and the
        # cyclic collector, which runs every 700 new containers, need not look at them.
        PyObject_GC_UnTrack(frame)
        if chars:
            block.append(text)
        stack.append(frame)
        top = frame
        top_node = node
        stats[key] = frame
        if tag_flags & _MARK_TAG or attribute_flags & _MARK_NAME:
            marks.append(key)
        node = _next(node, body)
    # The body's end: its tail is not part of it.
    stats[<uintptr_t>body] = root
    if root[2]:
        candidates.append(<uintptr_t>body)


cdef class _Line:
    """The line being read out, as UTF-8 with its whitespace runs already single spaces
    and none at its ends: what ``" ".join("".join(pieces).split())`` makes of its text
    pieces, made without a Python string for each piece."""

    cdef char* data
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef bint space  # whitespace read since the last character kept

    def __dealloc__(self):
        free(self.data)

    cdef int add(self, const unsigned char* text, Py_ssize_t n) except -1:
        """Read ``n`` bytes of UTF-8 into the line. Whitespace is what ``str.split`` splits
        on (``Py_UNICODE_ISSPACE``), decoded from the bytes where they are not ASCII."""
        cdef Py_ssize_t at = 0
        cdef Py_ssize_t width
        cdef unsigned char lead
        cdef Py_UCS4 code
        cdef char* grown
        if self.size + n + 1 > self.capacity:  # a space and the text at most
            self.capacity = max(2 * self.capacity, self.size + n + 1, 256)
            grown = <char*>realloc(self.data, self.capacity)
            if grown is NULL:
                raise MemoryError()
            self.data = grown
        while at < n:
            lead = text[at]
            if lead < 0x80:
                if lead == 32 or 9 <= lead <= 13 or 28 <= lead <= 31:
                    self.space = True
                    at += 1
                    continue
                width = 1
            else:
                width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
                if at + width > n:  # cut short: kept as it is, for the decoder to refuse
                    width = n - at
                    code = 0
                elif width == 2:
                    code = (lead & 0x1F) << 6 | (text[at + 1] & 0x3F)
                elif width == 3:
                    code = (lead & 0x0F) << 12 | (text[at + 1] & 0x3F) << 6 | (text[at + 2] & 0x3F)
                else:
                    code = 0  # no character above U+FFFF is whitespace
                if width >= 2 and Py_UNICODE_ISSPACE(code):
                    self.space = True
                    at += width
                    continue
            if self.space and self.size:
                self.data[self.size] = 32
                self.size += 1
            self.space = False
            memcpy(self.data + self.size, text + at, width)
            self.size += width
            at += width
        return 0


cdef lxb_dom_node_t* _read_run(lxb_dom_node_t* first, _Line current) except? NULL:
    """Read the text nodes from ``first`` on, up to the first element (passing comments),
    into ``current``; that element (NULL: none)."""
    cdef lxb_dom_character_data_t* text
    while first is not NULL and first.type != _ELEMENT:
        if first.type == _TEXT:
            text = <lxb_dom_character_data_t*>first
            current.add(text.data.data, text.data.length)
        first = first.next
    return first


cdef void _flush(_Line current, list lines) except *:
    """End the current line (nothing when it holds no character)."""
    if current.size:
        lines.append(PyUnicode_DecodeUTF8(current.data, current.size, NULL))
    current.size = 0
    current.space = False


def read(
    LexborTree tree,
    containers,
    dict stats,
    double link_density,
    bint links_only,
    dense_max_chars,
    skip,
):
    """The lines of ``containers`` (see ``readout._lines``), in document order; ``stats``
    are a compiled walk's (keyed by node address)."""
    cdef list lines = []
    cdef _Line current = _Line()
    cdef set skipped = set(skip)
    cdef int flags
    cdef bint any_size = dense_max_chars is None
    cdef Py_ssize_t dense_max = 0 if any_size else dense_max_chars
    cdef lxb_dom_node_t* container
    cdef lxb_dom_node_t* node
    cdef lxb_dom_node_t* child
    cdef bint ending
    cdef Py_ssize_t chars
    cdef _Names names = tree.tags
    for address in containers:
        container = _node(address)
        node = container
        ending = False
        while True:
            tag = _tag(node, names, &flags)
            if not ending:
                # The start of node: read into it, or pass its subtree over (its end
                # still comes).
                frame = stats.get(<uintptr_t>node)
                child = NULL
                if frame is None or <uintptr_t>node in skipped:
                    pass
                elif links_only and (
                    flags & _BOILERPLATE_TAG or _role(node, tree.attributes) < 0
                ):
                    pass
                else:
                    enter = True
                    if not flags & _INLINE_TAG:
                        _flush(current, lines)
                        chars = frame[0]
                        if tag == "h1" or (
                            chars
                            and frame[1] > chars * link_density
                            and (any_size or chars <= dense_max)
                        ):
                            enter = False
                    if enter:
                        child = _read_run(node.first_child, current)
                if child is not NULL:
                    node = child
                    continue
            # The end of node.
            if not flags & _INLINE_TAG or tag == "br":
                _flush(current, lines)
            if node is container:
                break
            child = _read_run(node.next, current)
            if child is not NULL:
                node = child
                ending = False
            else:
                node = node.parent
                ending = True
        _flush(current, lines)
    return "\n".join(lines)


_LAYOUT_SAMPLE = (
    "<!doctype html><html><head><title>t</title><meta name=x content=y></head><body>"
    "lead <!-- c --> text<div class='a b' id=main hidden data-x='1' aria-hidden=true"
    " role=main itemprop=articleBody style='display:none'>h\u00e9llo<p>one</p>two"
    "<my-widget-with-a-long-name>w</my-widget-with-a-long-name><x-y>s</x-y></div>"
    + "".join(
        f"<{name}>{name}</{name}>" for name in TAG_NAMES if name.isalpha() and name != "plaintext"
    )
    + "<span "
    + " ".join(f"{name}=v{index}" for index, name in enumerate(ATTRIBUTE_NAMES) if name.isalpha())
    + ">end</span></body></html>"
)


def check_layout():
    """None when this module reads selectolax's trees as selectolax does (each element's
    tag and attributes, each text, in document order, over a page that uses every standard
    name); else what differs. A lexbor with another layout or numbering is refused here
    rather than misread."""
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError as exc:
        return f"selectolax cannot be imported: {exc}"
    parser = LexborHTMLParser(_LAYOUT_SAMPLE.encode())
    tree = LexborTree(parser)
    cdef lxb_dom_node_t* top = _node(parser.root.mem_id)
    cdef lxb_dom_node_t* node = top
    seen = []
    for found in parser.root.traverse(include_text=True):
        if found.is_text_node:
            seen.append(("#text", found.text_content))
        elif found.is_element_node:
            seen.append((found.tag, sorted((k, v or "") for k, v in found.attributes.items())))
    read_here = []
    cdef lxb_dom_character_data_t* text
    while node is not NULL:
        if node.type == _TEXT:
            text = <lxb_dom_character_data_t*>node
            read_here.append(("#text", _decoded(text)))
        elif node.type == _ELEMENT:
            address = <uintptr_t>node
            read_here.append(
                (tree.tag(address), sorted(
                    (name, tree.get(address, name))
                    for name in _attribute_names(node, tree.attributes)
                ))
            )
        if node.first_child is not NULL:
            node = node.first_child
            continue
        while node is not top and node.next is NULL:
            node = node.parent
        if node is top:
            break
        node = node.next
    if read_here != seen:
        import selectolax

        for index, (mine, theirs) in enumerate(zip(read_here, seen)):
            if mine != theirs:
                return f"selectolax {selectolax.__version__}: node {index} read {mine!r}, is {theirs!r}"
        return f"selectolax {selectolax.__version__}: {len(read_here)} nodes read, {len(seen)} there"
    return None


# The role words of class tokens by their first letter (``rules._ROLE_WORD``): at each place
# of a token only the few words starting with its letter are compared.
cdef tuple _by_letter(words):
    buckets = [[] for _ in range(26)]
    for word in words:
        if not ("a" <= word[:1] <= "z" and word.isascii()):
            raise ValueError(f"a role word must be ASCII and start with a-z: {word!r}")
        buckets[ord(word[0]) - 97].append(word.encode("ascii"))
    return tuple(tuple(bucket) for bucket in buckets)


cdef tuple _STEMS = _by_letter(_NEGATIVE_STEMS)
cdef tuple _WHOLE = _by_letter(_NEGATIVE_WHOLE)
cdef tuple _POSITIVE = _by_letter(_POSITIVE_WORDS)


cdef inline bint _word_at(int kind, void* data, Py_ssize_t n, Py_ssize_t at, bytes word):
    cdef const unsigned char* letters = <const unsigned char*>PyBytes_AS_STRING(word)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(word)
    cdef Py_ssize_t k
    if at + size > n:
        return False
    for k in range(size):
        if <uint32_t>PyUnicode_READ(kind, data, at + k) != letters[k]:
            return False
    return True


cdef inline tuple _bucket(tuple words, int kind, void* data, Py_ssize_t at):
    cdef uint32_t letter = PyUnicode_READ(kind, data, at)
    if letter < 97 or letter > 122:
        return ()
    return <tuple>words[letter - 97]


cdef inline bint _ends_word(int kind, void* data, Py_ssize_t n, Py_ssize_t at):
    """``(?=$|[_-])`` at ``at``: ``$`` is the end or a newline that ends the token."""
    cdef uint32_t c
    if at == n:
        return True
    c = PyUnicode_READ(kind, data, at)
    return c == 95 or c == 45 or (c == 10 and at == n - 1)


cdef bint _negative_words_at(int kind, void* data, Py_ssize_t n, Py_ssize_t at):
    cdef bytes word
    cdef Py_ssize_t end
    if at >= n:
        return False
    for word in _bucket(_STEMS, kind, data, at):
        if _word_at(kind, data, n, at, word):
            # \w* then the lookahead: any place along the run of word characters (an
            # underscore, the one of them the lookahead takes, has ended it already).
            end = at + len(word)
            while (
                not _ends_word(kind, data, n, end)
                and end < n
                and Py_UNICODE_ISALNUM(<Py_UCS4>PyUnicode_READ(kind, data, end))
            ):
                end += 1
            if _ends_word(kind, data, n, end):
                return True
    for word in _bucket(_WHOLE, kind, data, at):
        if _word_at(kind, data, n, at, word) and _ends_word(kind, data, n, at + len(word)):
            return True
    return False


def role_word(str token):
    """``rules._role_word``: -1 or +1 by the token's first role word, 0 for none, found as
    ``_ROLE_WORD.search`` finds it (the leftmost place where a word starts; there, a
    boilerplate word before a content word)."""
    return _role_word(token)


cdef int _role_word(str token) except? -9:
    cdef int kind = PyUnicode_KIND(token)
    cdef void* data = PyUnicode_DATA(token)
    cdef Py_ssize_t n = len(token)
    cdef Py_ssize_t at
    cdef uint32_t c
    cdef bytes word
    for at in range(n + 1):
        if at == 0 and _negative_words_at(kind, data, n, 0):
            return -1
        if at < n:
            c = PyUnicode_READ(kind, data, at)
            if (c == 95 or c == 45) and _negative_words_at(kind, data, n, at + 1):
                return -1
            for word in _bucket(_POSITIVE, kind, data, at):
                if _word_at(kind, data, n, at, word):
                    return 1
    return 0


# -- class and id names (``rules._class_role``) --------------------------------------------

cdef int _STRONG_ROLE = _STRONG


cdef int _token_role(str token) except? -9:
    """``rules._token_role``."""
    if token.startswith(_SKIP_LINK_PREFIXES):
        return _STRONG_ROLE
    if token.startswith(_NEUTRAL_PREFIXES) or token.endswith(_LAYOUT_SUFFIX):
        return 0
    cdef Py_ssize_t modifier = token.find("--")
    if modifier >= 0:
        token = token[:modifier]
    cdef int role = _role_word(token)
    if role < 0:
        for word in _STRONG_NEGATIVE_WORDS:
            if word in token:
                return _STRONG_ROLE
    return role


def class_role(str names):
    """``rules._class_role``: -1, +1 or 0 for lower-case class/id names, each new token
    judged here and remembered in the same cache."""
    cdef bint negative = False
    cdef bint positive = False
    cdef int role
    cdef PyObject* cached
    for token in names.split():
        cached = PyDict_GetItem(_TOKEN_ROLES, token)
        if cached is NULL:
            role = _remember(_TOKEN_ROLES, token, _token_role(token))
        else:
            role = <object>cached
        if role == _STRONG_ROLE:
            return -1
        if role < 0:
            negative = True
        elif role > 0:
            positive = True
    if positive:
        return 1
    return -1 if negative else 0


def has_c1_or_mark(str text):
    """``readout._C1_OR_MARK.search(text) is not None``: whether ``text`` holds a C1
    character or a character of a byte-order mark (a page's text is thousands of
    characters, and the regular expression engine tests a class at each)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef const unsigned char* narrow = <const unsigned char*>data
    cdef Py_ssize_t n = len(text)
    cdef Py_ssize_t at
    cdef uint32_t c
    if kind == PyUnicode_1BYTE_KIND:
        for at in range(n):
            c = narrow[at]
            if c >= 0x80 and (c <= 0x9F or c == 0xEF or c == 0xFE or c == 0xFF):
                return True
        return False
    for at in range(n):
        c = PyUnicode_READ(kind, data, at)
        if (0x80 <= c <= 0x9F) or c == 0xEF or c == 0xFE or c == 0xFF or c == 0xFEFF:
            return True
    return False


# The characters of _CREDIT_START_CHARS and _CREDIT_ANYWHERE_LETTERS in C arrays, each with
# a 64-bit filter of their low bits: most characters are passed by one test of a bit.
cdef Py_UCS4 _START_CHAR_CODES[64]
cdef Py_UCS4 _ANYWHERE_CHAR_CODES[64]
cdef int _START_CHAR_COUNT = len(_CREDIT_START_CHARS)
cdef int _ANYWHERE_CHAR_COUNT = len(_CREDIT_ANYWHERE_LETTERS)
cdef uint64_t _START_CHAR_FILTER = 0
cdef uint64_t _ANYWHERE_CHAR_FILTER = 0
for _n, _char in enumerate(_CREDIT_START_CHARS):
    _START_CHAR_CODES[_n] = ord(_char)
    _START_CHAR_FILTER |= (<uint64_t>1) << (ord(_char) & 63)
for _n, _char in enumerate(_CREDIT_ANYWHERE_LETTERS):
    _ANYWHERE_CHAR_CODES[_n] = ord(_char)
    _ANYWHERE_CHAR_FILTER |= (<uint64_t>1) << (ord(_char) & 63)


cdef uint64_t _code(str letters):
    """ASCII letters as one number, a byte each, the last in the lowest byte."""
    cdef uint64_t code = 0
    for letter in letters:
        code = (code << 8) | ord(letter)
    return code


# The three-letter starts of lines (the credit words', then the dates'), and the sequences
# of _CREDIT_ANYWHERE_SEQUENCES (at most eight letters), each as one number.
cdef list _STARTS = [_code(word) for word in _CREDIT_START_WORDS + _CREDIT_DATE_WORDS]
cdef int _START_COUNT = len(_STARTS)
cdef int _CREDIT_WORD_COUNT = len(_CREDIT_START_WORDS)
cdef uint64_t _START_CODES[64]
for _n, _number in enumerate(_STARTS):
    _START_CODES[_n] = _number
cdef int _SEQUENCE_COUNT = len(_CREDIT_ANYWHERE_SEQUENCES)
cdef uint64_t _SEQUENCE_CODES[8]
cdef uint64_t _SEQUENCE_MASKS[8]
for _n, _sequence in enumerate(_CREDIT_ANYWHERE_SEQUENCES):
    _SEQUENCE_CODES[_n] = _code(_sequence)
    _SEQUENCE_MASKS[_n] = ~(<uint64_t>0) >> (64 - 8 * len(_sequence))
cdef Py_ssize_t _CREDIT_CHARS = _MAX_CREDIT_BYTES  # a character is at least a byte
cdef Py_ssize_t _BYLINE_CHARS = _MAX_BYLINE_CHARS


cdef inline bint _one_of(Py_UCS4 c, uint64_t filter, Py_UCS4* codes, int count) noexcept:
    cdef int n
    if not (filter >> (<uint32_t>c & 63)) & 1:
        return False
    for n in range(count):
        if codes[n] == c:
            return True
    return False


cdef inline bint _ideograph(Py_UCS4 c) noexcept:
    """Whether ``c`` is in the two blocks of CJK ideographs every character of which is a
    letter (a word character, not a digit), as Python's Unicode tables say: the others
    hold symbols or unassigned code points, which are not."""
    return 0x4E00 <= c <= 0x9FFF or 0x3400 <= c <= 0x4DBF


# What a line's start says of it (see _CREDIT_START_CHARS).
cdef enum:
    _NO_START = 0
    _CREDIT_START = 1  # may match _CREDIT_START as it is
    _DATE_START = 2  # may match it if the line holds four digits in a row


cdef inline int _word_start(uint64_t word, int kept) noexcept:
    """What a line whose first word starts with ``kept`` lower-case ASCII letters (at most
    three, ``word``) may be."""
    cdef int n
    if kept >= 2 and word >> (8 * (kept - 2)) == 0x6279:  # "by"
        return _CREDIT_START
    if kept == 3:
        for n in range(_START_COUNT):
            if _START_CODES[n] == word:
                return _CREDIT_START if n < _CREDIT_WORD_COUNT else _DATE_START
    return _NO_START


cdef enum:
    _BEFORE_WORD = 0
    _IN_WORD = 1
    _DECIDED = 2


def credit_lines(str text):
    """The numbers of the lines of ``text`` (split at "\n") that ``readout._is_credit``
    may take for credit lines, in one pass over the text: those of at most
    _MAX_CREDIT_BYTES characters whose start may match _CREDIT_START (see
    _CREDIT_START_CHARS), that hold what _CREDIT_ANYWHERE needs, or that hold four digits
    in a row within _MAX_BYLINE_CHARS. Regular expressions tried on every line were a
    tenth of a page's time, and most lines fail all three here."""
    cdef list found = []
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t size = len(text)
    cdef Py_ssize_t at = 0
    cdef Py_ssize_t line = 0
    cdef Py_ssize_t chars = 0
    cdef Py_ssize_t digits = 0
    cdef int state = _BEFORE_WORD
    cdef int kept = 0
    cdef int start = _NO_START
    cdef int n
    cdef bint anywhere = False
    cdef bint year = False
    cdef bint decimal
    cdef bint word_character
    cdef uint64_t word = 0
    # The line's last eight characters, a byte each: ASCII in lower case, "ſ" as "s" and
    # any other character beyond ASCII as 0x80 (see _CREDIT_ANYWHERE_SEQUENCES).
    cdef uint64_t recent = 0
    cdef Py_UCS4 c
    cdef Py_UCS4 lowered
    cdef const char* newline
    while at <= size:
        c = PyUnicode_READ(kind, data, at) if at < size else 10
        at += 1
        if c == 10:  # the line's end
            if state == _IN_WORD:
                start = _word_start(word, kept)
            if chars <= _CREDIT_CHARS and (
                start == _CREDIT_START
                or (start == _DATE_START and year)
                or anywhere
                or (year and chars <= _BYLINE_CHARS)
            ):
                found.append(line)
            line += 1
            chars = digits = kept = 0
            state = _BEFORE_WORD
            start = _NO_START
            anywhere = year = False
            word = recent = 0
            continue
        chars += 1
        if chars > _CREDIT_CHARS:  # too long to be a credit: on to the line's end
            if kind == PyUnicode_1BYTE_KIND:
                newline = <const char*>memchr(<const char*>data + at, 10, size - at)
                at = size if newline is NULL else newline - <const char*>data
            else:
                while at < size and PyUnicode_READ(kind, data, at) != 10:
                    at += 1
            continue
        if c < 0x80:
            decimal = 48 <= c <= 57
            lowered = <Py_UCS4>(<uint32_t>c + 32) if 65 <= c <= 90 else c
            word_character = decimal or 97 <= lowered <= 122 or c == 95  # "_" is one
        elif _ideograph(c):  # a letter, never a digit: the common case asks nothing
            decimal = False
            lowered = 0x80  # no ASCII letter
            word_character = True
            if _one_of(c, _ANYWHERE_CHAR_FILTER, _ANYWHERE_CHAR_CODES, _ANYWHERE_CHAR_COUNT):
                anywhere = True
        else:
            decimal = Py_UNICODE_ISDECIMAL(c)
            # "ſ" is an "s" to the pattern; no other character beyond ASCII is a letter
            # of the sequences in any case.
            lowered = 115 if c == 0x17F else 0x80
            word_character = state != _DECIDED and Py_UNICODE_ISALNUM(c)
            if _one_of(c, _ANYWHERE_CHAR_FILTER, _ANYWHERE_CHAR_CODES, _ANYWHERE_CHAR_COUNT):
                anywhere = True
        if decimal:
            digits += 1
            if digits >= 4:
                year = True
        else:
            digits = 0
        recent = (recent << 8) | <uint32_t>lowered
        for n in range(_SEQUENCE_COUNT):
            if recent & _SEQUENCE_MASKS[n] == _SEQUENCE_CODES[n]:
                anywhere = True
        if state == _DECIDED:
            continue
        if not word_character:
            if state == _IN_WORD:
                start = _word_start(word, kept)
                state = _DECIDED
            continue
        if state == _BEFORE_WORD:
            state = _DECIDED
            if decimal:
                start = _DATE_START
            elif c >= 0x80:
                start = _CREDIT_START if not _ideograph(c) or _one_of(
                    c, _START_CHAR_FILTER, _START_CHAR_CODES, _START_CHAR_COUNT
                ) else _NO_START
            elif 97 <= lowered <= 122:
                word = lowered
                kept = 1
                state = _IN_WORD
        elif c >= 0x80:  # may match an ASCII letter in any case ("ſ", the Kelvin sign)
            start = _CREDIT_START
            state = _DECIDED
        elif 97 <= lowered <= 122:
            word = (word << 8) | <uint32_t>lowered
            kept += 1
            if kept == 3:
                start = _word_start(word, kept)
                state = _DECIDED
        else:
            start = _word_start(word, kept)
            state = _DECIDED
    return found
