# cython: language_level=3, boundscheck=False, wraparound=False
"""The scoring walk's loop and the read-out over libxml2's nodes: the same steps, in the
same order, as :meth:`scrapy_simhash.text.walk._Walk.run_interpreted` and
:func:`scrapy_simhash.text.readout._read_interpreted`.

Why it exists: the loop runs for every element of every page, and in Python most of its
time goes to asking lxml's proxies for an element's text, tail, parent and attribute names,
each a call that builds objects. Here those are reads of the C tree; an element object is
made only for the few elements looked at again (candidates, marks, the judged), and the
judgements of elements with class, id or hiding attributes are the interpreted ones. Every sum is made in
the order the interpreted loop makes it, so both give identical frames and lines, and so
identical fingerprints (``tests/unit/test_compiled.py`` holds them to it).
"""

from cpython.unicode cimport (
    Py_UNICODE_ISALNUM,
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
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memchr, memcpy, strcmp, strlen
from lxml.includes cimport tree
from lxml.includes.etreepublic cimport _Document, _Element, elementFactory, import_lxml__etree

from scrapy_simhash.text.rules import (
    _BOILERPLATE_TAGS,
    _HIDING_ATTRIBUTES,
    _INLINE_TAGS,
    _JUDGED_ATTRIBUTES,
    _MARK_ATTRIBUTES,
    _MARK_TAGS,
    _LARGE_SHARE,
    _LAYOUT_SUFFIX,
    _MIN_PARAGRAPH_BYTES,
    _NEGATIVE_STEMS,
    _NEGATIVE_WHOLE,
    _NEUTRAL_PREFIXES,
    _POSITIVE_WORDS,
    _ROLES,
    _SKIP_LINK_PREFIXES,
    _STRONG,
    _STRONG_NEGATIVE_WORDS,
    _TOKEN_ROLES,
    _hides,
    _is_hidden,
    _names_role,
    _remember,
)

import_lxml__etree()


cdef inline bint _letter(unsigned char c, char lower) noexcept:
    """Whether ``c`` is the ASCII letter ``lower`` in either case."""
    return c | 0x20 == lower


cdef Py_ssize_t _closing_root_end(const unsigned char* data, Py_ssize_t at, Py_ssize_t size) noexcept:
    """Where a closing body or html tag that starts at ``at`` (a '<') ends; -1 when none
    starts there (``parse._CLOSING_ROOT``: any case, whitespace before its '>')."""
    if size - at < 7 or data[at + 1] != b'/':
        return -1
    cdef const unsigned char* name = data + at + 2
    if not (
        _letter(name[0], b'b') and _letter(name[1], b'o') and _letter(name[2], b'd')
        and _letter(name[3], b'y')
    ) and not (
        _letter(name[0], b'h') and _letter(name[1], b't') and _letter(name[2], b'm')
        and _letter(name[3], b'l')
    ):
        return -1
    at += 6
    while at < size and (data[at] == 32 or 9 <= data[at] <= 13):  # re's \s in bytes
        at += 1
    if at < size and data[at] == b'>':
        return at + 1
    return -1


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


def without_closing_roots(bytes data):
    """``parse._CLOSING_ROOT.sub(b"", data)``: every closing body and html tag taken out
    (see ``parse._parse``), found by memchr rather than by a regular expression trying a
    match at each '<', and the rest copied once (a page is hundreds of kilobytes: each
    copy costs fresh pages); ``data`` itself when it has none."""
    cdef const unsigned char* start = data
    cdef Py_ssize_t size = len(data)
    cdef Py_ssize_t at = 0
    cdef Py_ssize_t end
    cdef Py_ssize_t removed = 0
    cdef const void* found
    spans = []  # start and end of each tag taken out
    while at < size:
        found = memchr(start + at, b'<', <size_t>(size - at))
        if found is NULL:
            break
        at = <const unsigned char*>found - start
        end = _closing_root_end(start, at, size)
        if end < 0:
            at += 1
            continue
        spans += (at, end)
        removed += end - at
        at = end
    if not spans:
        return data
    result = PyBytes_FromStringAndSize(NULL, size - removed)
    cdef char* out = PyBytes_AS_STRING(result)
    cdef Py_ssize_t kept = 0
    cdef Py_ssize_t index
    for index in range(0, len(spans), 2):
        at = spans[index]
        memcpy(out, start + kept, at - kept)
        out += at - kept
        kept = spans[index + 1]
    memcpy(out, start + kept, size - kept)
    return result


cdef inline bint _element_like(tree.xmlNode* node) noexcept:
    """What lxml's iterators yield: elements, comments, entity references, PIs."""
    return (
        node.type == tree.XML_ELEMENT_NODE
        or node.type == tree.XML_COMMENT_NODE
        or node.type == tree.XML_ENTITY_REF_NODE
        or node.type == tree.XML_PI_NODE
    )


cdef inline tree.xmlNode* _element_from(tree.xmlNode* node) noexcept:
    while node is not NULL and not _element_like(node):
        node = node.next
    return node


cdef tree.xmlNode* _after(tree.xmlNode* node, tree.xmlNode* body) noexcept:
    """The node after ``node``'s subtree in document order within ``body``; NULL at the
    body's end (``walk._following``)."""
    cdef tree.xmlNode* after
    while node is not body:
        after = _element_from(node.next)
        if after is not NULL:
            return after
        node = node.parent
        if node is NULL:
            break
    return NULL


cdef inline tree.xmlNode* _next(tree.xmlNode* node, tree.xmlNode* body) noexcept:
    """The next node of ``body.iter()`` (lxml does not enter entity references)."""
    cdef tree.xmlNode* child = NULL
    if node.type != tree.XML_ENTITY_REF_NODE:
        child = _element_from(node.children)
    if child is not NULL:
        return child
    return _after(node, body)


cdef inline tree.xmlNode* _text_node(tree.xmlNode* node) noexcept:
    """``node`` when it is text, passing XInclude marks; NULL otherwise (lxml's rule)."""
    while node is not NULL:
        if node.type == tree.XML_TEXT_NODE or node.type == tree.XML_CDATA_SECTION_NODE:
            return node
        if node.type != tree.XML_XINCLUDE_START and node.type != tree.XML_XINCLUDE_END:
            return NULL
        node = node.next
    return NULL


cdef inline const char* _content(tree.xmlNode* node) noexcept:
    """A text node's content ('' for none)."""
    if node.content is NULL:
        return b""
    return <const char*>node.content


cdef bytes _joined(tree.xmlNode* first):
    """The content of ``first`` and the text nodes that follow it, as lxml joins them."""
    pieces = []
    while first is not NULL:
        pieces.append(<bytes>_content(first))
        first = _text_node(first.next)
    return b"".join(pieces)


cdef inline bint _blank(const char* text) noexcept:
    """Whether ``text`` is only the ASCII characters that ``str.strip`` removes."""
    cdef unsigned char c
    while True:
        c = <unsigned char>text[0]
        if c == 0:
            return True
        if not (c == 32 or 9 <= c <= 13 or 28 <= c <= 31):
            return False
        text += 1


cdef str _stripped(tree.xmlNode* node):
    """lxml's ``text`` (``node``: the first child) or ``tail`` (``node``: the next sibling)
    stripped of whitespace; '' when there is none."""
    cdef tree.xmlNode* first = _text_node(node)
    if first is NULL:
        return ""
    cdef const char* content = _content(first)
    if _text_node(first.next) is NULL:
        if _blank(content):
            return ""
        return PyUnicode_DecodeUTF8(content, strlen(content), NULL).strip()
    return _joined(first).decode("utf-8").strip()


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


# Each set of rules.py a name can be in, with its bit.
cdef tuple _FLAG_SETS = (
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


cdef struct _NameSlot:
    const tree.xmlChar* name
    PyObject* text
    int flags


cdef class _Names:
    """The Python strings of one tree's element and attribute names, by the address of
    the name: libxml2 keeps one copy of each name in its document's dictionary, and nothing
    is freed while a walk or a read-out runs, so one address is one name. Each distinct
    name is decoded and looked up in the sets once, not once per element (a page has a
    thousand elements and a few dozen names)."""

    # An extension type's C fields start zeroed: every slot empty, none used.
    cdef _NameSlot slots[_NAME_SLOTS]
    cdef Py_ssize_t used
    cdef list kept  # the strings the slots point to

    def __cinit__(self):
        self.kept = []

    cdef object decoded(self, const tree.xmlChar* name, int* flags):
        """The name as a string; its bits (_flags_of) in ``flags``."""
        cdef size_t slot = (<size_t>name >> 3) % _NAME_SLOTS
        while self.slots[slot].name is not NULL:
            if self.slots[slot].name == name:
                flags[0] = self.slots[slot].flags
                return <object>self.slots[slot].text
            slot = (slot + 1) % _NAME_SLOTS
        text = PyUnicode_DecodeUTF8(<const char*>name, strlen(<const char*>name), NULL)
        flags[0] = _flags_of(text)
        if 2 * self.used < _NAME_SLOTS:  # a table half full stays quick to probe
            self.kept.append(text)
            self.slots[slot].name = name
            self.slots[slot].text = <PyObject*>text
            self.slots[slot].flags = flags[0]
            self.used += 1
        return text


cdef object _name(const tree.xmlChar* name, tree.xmlNs* ns, _Names names, int* flags):
    """An element's tag or an attribute's name as lxml gives it, its bits in ``flags``;
    None when namespaced (the proxy is asked then)."""
    if ns is not NULL and ns.href is not NULL:
        return None
    return names.decoded(name, flags)


cdef inline object _tag(tree.xmlNode* node, _Document doc, _Names names, int* flags):
    """``el.tag`` of an element, its bits in ``flags``; its element object made only when
    it is namespaced."""
    tag = _name(node.name, node.ns, names, flags)
    if tag is None:
        tag = elementFactory(doc, node).tag
        flags[0] = _flags_of(tag)
    return tag


cdef list _attribute_names(tree.xmlNode* node, _Document doc, _Names names):
    """``el.keys()``: the names of the element's attributes, in document order."""
    cdef tree.xmlAttr* attribute = node.properties
    cdef int flags
    result = []
    while attribute is not NULL:
        if attribute.type == tree.XML_ATTRIBUTE_NODE:
            name = _name(attribute.name, attribute.ns, names, &flags)
            if name is None:
                return elementFactory(doc, node).keys()
            result.append(name)
        attribute = attribute.next
    return result


cdef int _attribute_flags(tree.xmlNode* node, _Document doc, _Names names) except -1:
    """The bits (_flags_of) of the element's attribute names together, without making
    the list of them."""
    cdef tree.xmlAttr* attribute = node.properties
    cdef int flags
    cdef int together = 0
    while attribute is not NULL:
        if attribute.type == tree.XML_ATTRIBUTE_NODE:
            if _name(attribute.name, attribute.ns, names, &flags) is None:
                together = 0
                for name in elementFactory(doc, node).keys():
                    together |= _flags_of(name)
                return together
            together |= flags
        attribute = attribute.next
    return together


cdef inline Py_ssize_t _characters(const unsigned char* byte) noexcept:
    """The characters of NUL-terminated UTF-8: its bytes that are not continuation bytes,
    counted eight at a time (a page's text is most of its bytes)."""
    if byte is NULL:
        return 0
    cdef Py_ssize_t size = strlen(<const char*>byte)
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


def subtree_chars(_Element el, Counts counted):
    """``len(_text_content(el))``: the characters of every text node under ``el`` (what
    lxml's text serialisation concatenates), counted in their UTF-8 without making the text.

    The walk asks this of elements nested in one another (a wrapper, then a menu inside
    it), so one count of a subtree keeps the count of each of its elements that has
    attributes in ``counted`` (by node address, for this tree only) and later questions
    about them are answered from there: the counting stays linear in the page.
    """
    return _subtree_chars(el._c_node, counted)


cdef Py_ssize_t _subtree_chars(tree.xmlNode* top, Counts counted) except -1:
    cdef Py_ssize_t found = counted.get(<size_t>top)
    if found >= 0:
        return found
    cdef Py_ssize_t depth = 0
    cdef Py_ssize_t capacity = 64
    cdef Py_ssize_t* sums = <Py_ssize_t*>malloc(capacity * sizeof(Py_ssize_t))
    cdef Py_ssize_t* grown
    cdef Py_ssize_t total
    cdef tree.xmlNode* current = top
    cdef tree.xmlNode* node = top.children
    if sums is NULL:
        raise MemoryError()
    sums[0] = 0
    try:
        while True:
            if node is NULL:  # the end of current: its sum is complete
                total = sums[depth]
                if current.properties is not NULL or current is top:
                    counted.put(<size_t>current, total)
                if depth == 0:
                    return total
                depth -= 1
                sums[depth] += total
                node = current.next
                current = current.parent
            elif node.type == tree.XML_TEXT_NODE or node.type == tree.XML_CDATA_SECTION_NODE:
                sums[depth] += _characters(<const unsigned char*>node.content)
                node = node.next
            elif node.type == tree.XML_ELEMENT_NODE and node.children is not NULL:
                depth += 1
                if depth == capacity:
                    capacity *= 2
                    grown = <Py_ssize_t*>realloc(sums, capacity * sizeof(Py_ssize_t))
                    if grown is NULL:
                        raise MemoryError()
                    sums = grown
                sums[depth] = 0
                current = node
                node = node.children
            else:
                node = node.next
    finally:
        free(sums)


cdef object _NOT_PLAIN = object()


cdef object _attribute(tree.xmlNode* node, const char* name):
    """``el.get(name)`` for an attribute without namespace; _NOT_PLAIN when its value is
    not one text node (the proxy is asked then)."""
    cdef tree.xmlAttr* attribute = node.properties
    cdef tree.xmlNode* value
    while attribute is not NULL:
        if attribute.ns is NULL and strcmp(<const char*>attribute.name, name) == 0:
            value = attribute.children
            if value is NULL:
                return ""
            if value.next is NULL and (
                value.type == tree.XML_TEXT_NODE or value.type == tree.XML_CDATA_SECTION_NODE
            ):
                return PyUnicode_DecodeUTF8(_content(value), strlen(_content(value)), NULL)
            return _NOT_PLAIN
        attribute = attribute.next
    return None


cdef int _role(tree.xmlNode* node, _Document doc) except? -9:
    """``_names_role(el)``, the attributes read from the node."""
    cls = _attribute(node, "class")
    ident = _attribute(node, "id")
    if cls is _NOT_PLAIN or ident is _NOT_PLAIN:
        return _names_role(elementFactory(doc, node))
    if ident is None:
        if cls is None:
            return 0
        names = cls
    else:
        names = ident if cls is None else f"{cls} {ident}"
    cdef PyObject* cached = PyDict_GetItem(_ROLES, names)
    if cached is not NULL:
        return <object>cached
    return _remember(_ROLES, names, class_role(names.lower()))


cdef bint _hidden(tree.xmlNode* node, _Document doc, _Names names) except -1:
    """``rules._is_hidden`` of an element that has a hiding attribute, read from the node."""
    hidden = _attribute(node, "hidden")
    aria = _attribute(node, "aria-hidden")
    style = _attribute(node, "style")
    role = _attribute(node, "role")
    if hidden is _NOT_PLAIN or aria is _NOT_PLAIN or style is _NOT_PLAIN or role is _NOT_PLAIN:
        return _is_hidden(elementFactory(doc, node), _attribute_names(node, doc, names))
    return _hides(hidden, aria, style, role)


cdef inline bint _small(Py_ssize_t chars, tree.xmlNode* body, Counts counted) except -1:
    """``_Walk._small``: whether ``chars`` characters are a share of the body's text small
    enough to drop."""
    return chars < _subtree_chars(body, counted) * _SMALL_SHARE


cdef double _SMALL_SHARE = _LARGE_SHARE
# walk.py's, bound when the first walk runs (walk.py imports this module).
cdef object _holds_article = None
cdef Py_ssize_t _PARAGRAPH_CHARS = 0


cdef object _named_boilerplate(
    tree.xmlNode* node, _Document doc, tree.xmlNode* body, Counts counted
):
    """``_Walk.named_boilerplate``, read from the node; its element object made only to
    count its paragraphs."""
    itemprop = _attribute(node, "itemprop")
    if itemprop is _NOT_PLAIN:
        itemprop = elementFactory(doc, node).get("itemprop")
    if itemprop == "articleBody":
        return False
    cdef Py_ssize_t chars = _subtree_chars(node, counted)
    if not _small(chars, body, counted):
        return None
    if chars < _PARAGRAPH_CHARS:
        return True
    return (not _holds_article(elementFactory(doc, node))) or None


def address(_Element el):
    """The key of ``el``'s frame in a compiled walk's stats: its node's address."""
    return <size_t>el._c_node


cdef void _count_tail(tree.xmlNode* node, list top) except *:
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
    """Fill ``walk``'s stats, candidates, dropped elements and marks (see ``_Walk.run``).

    The stats are keyed by node address, and a frame's element is that address: the
    elements looked at later (candidates, marks, the judged) get element objects, the
    others (most of a page) never do.
    """
    cdef _Element body_proxy = walk.body
    cdef _Document doc = body_proxy._doc
    cdef tree.xmlNode* body = body_proxy._c_node
    cdef tree.xmlNode* node
    cdef tree.xmlNode* top_node = body
    cdef tree.xmlNode* parent
    cdef tree.xmlNode* ended
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
    cdef _Names names = _Names()
    cdef Counts counted = walk._counted
    global _holds_article, _PARAGRAPH_CHARS
    if _holds_article is None:  # walk.py imports this module: its names are read here
        from scrapy_simhash.text.walk import _ARTICLE_PARAGRAPH_CHARS, _holds_article
        _PARAGRAPH_CHARS = _ARTICLE_PARAGRAPH_CHARS

    own = []
    root = [0, 0, 0.0, 0.0, own, own, False, <size_t>body, body_proxy.tag]
    cdef list stack = [root]
    top = root
    text = _stripped(body.children)
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
            top_node = <tree.xmlNode*><size_t>top[7]
            own = frame[4]
            if own and 4 * frame[0] + len(own) >= min_paragraph:
                _score_paragraph(own, frame, stack)
            ended = <tree.xmlNode*><size_t>frame[7]
            if frame[2]:
                candidates.append(elementFactory(doc, ended))
            chars = frame[0]
            top[0] += chars
            top[1] += chars if frame[8] == "a" else frame[1]
            top[3] += frame[3]
            _count_tail(ended, top)
        if node is NULL:
            break
        guarded = top[6]
        el = None
        verdict = False
        if node.type != tree.XML_ELEMENT_NODE:
            verdict = True  # an entity or other non-element node: passed over
        else:
            tag = _tag(node, doc, names, &tag_flags)
            attribute_flags = (
                0 if node.properties is NULL else _attribute_flags(node, doc, names)
            )
            if tag_flags & _BOILERPLATE_TAG or attribute_flags & _JUDGED_NAME:
                # _Walk.is_boilerplate, read from the node.
                if tag_flags & _BOILERPLATE_TAG or (
                    attribute_flags & _HIDING_NAME and _hidden(node, doc, names)
                ):
                    verdict = _small(_subtree_chars(node, counted), body, counted) or None
                elif not guarded and _role(node, doc) < 0:
                    verdict = _named_boilerplate(node, doc, body, counted)
                if verdict:
                    el = elementFactory(doc, node)
                    dropped.append(el)
                elif verdict is None:
                    guarded = True
        if verdict:
            # Its subtree is passed over; it ends at once, and its tail counts.
            _count_tail(node, top)
            node = _after(node, body)
            continue
        key = <size_t>node
        text = _stripped(node.children)
        chars = len(text)
        if tag_flags & _INLINE_TAG:
            block = top[5]
            frame = [chars, 0, 0.0, 0.0, None, block, guarded, key, tag]
        else:
            block = []
            frame = [chars, 0, 0.0, 0.0, block, block, guarded, key, tag]
        if chars:
            block.append(text)
        stack.append(frame)
        top = frame
        top_node = node
        stats[key] = frame
        if tag_flags & _MARK_TAG or attribute_flags & _MARK_NAME:
            marks.append(elementFactory(doc, node) if el is None else el)
        node = _next(node, body)
    # The body's end: its tail is not part of it.
    stats[<size_t>body] = root
    if root[2]:
        candidates.append(body_proxy)


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

    cdef int add(self, const unsigned char* text) except -1:
        """Read NUL-terminated UTF-8 into the line. Whitespace is what ``str.split`` splits
        on (``Py_UNICODE_ISSPACE``), decoded from the bytes where they are not ASCII."""
        cdef Py_ssize_t n = strlen(<const char*>text)
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


cdef inline tree.xmlNode* _element_after(tree.xmlNode* node) noexcept:
    while node is not NULL and node.type != tree.XML_ELEMENT_NODE:
        node = node.next
    return node


cdef tree.xmlNode* _read_run(tree.xmlNode* first, _Line current) except? NULL:
    """Read the text nodes from ``first`` on (lxml's text of an element, or its tail) into
    ``current``; the element after them (NULL: none)."""
    cdef tree.xmlNode* text = _text_node(first)
    while text is not NULL:
        current.add(<const unsigned char*>_content(text))
        text = _text_node(text.next)
    return _element_after(first)


cdef void _flush(_Line current, list lines) except *:
    """End the current line (nothing when it holds no character)."""
    if current.size:
        lines.append(PyUnicode_DecodeUTF8(current.data, current.size, NULL))
    current.size = 0
    current.space = False


def read(
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
    cdef set skipped = {<size_t>(<_Element>el)._c_node for el in skip}
    cdef int flags
    cdef bint any_size = dense_max_chars is None
    cdef Py_ssize_t dense_max = 0 if any_size else dense_max_chars
    cdef _Element container_proxy
    cdef _Document doc
    cdef tree.xmlNode* container
    cdef tree.xmlNode* node
    cdef tree.xmlNode* child
    cdef bint ending
    cdef Py_ssize_t chars
    cdef _Names names = _Names()
    names_role = _names_role
    for container_proxy in containers:
        doc = container_proxy._doc
        container = container_proxy._c_node
        node = container
        ending = False
        while True:
            if not ending:
                # The start of node: read into it, or pass its subtree over (its end
                # still comes).
                frame = stats.get(<size_t>node)
                tag = _tag(node, doc, names, &flags)
                child = NULL
                if frame is None or <size_t>node in skipped:
                    pass
                elif links_only and (
                    flags & _BOILERPLATE_TAG or names_role(elementFactory(doc, node)) < 0
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
                        child = _read_run(node.children, current)
                if child is not NULL:
                    node = child
                    continue
            # The end of node.
            tag = _tag(node, doc, names, &flags)
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
