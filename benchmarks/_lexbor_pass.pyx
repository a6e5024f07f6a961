# cython: language_level=3, boundscheck=False, wraparound=False
"""One pass over every node of a tree lexbor built, read in place through selectolax.

selectolax's ``Node.mem_id`` is the address of lexbor's node; with the layout of lexbor's
structures (lexbor 2.x as selectolax 0.3.x-1.0.x bundles it: ``dom/interfaces/node.h``,
``element.h``, ``attr.h``, ``character_data.h``) a compiled walk reads that tree with no
copy, no lexbor headers and no lexbor library of its own. This is the floor of that route's
walk: each element, its class and id, and each text's characters, once.
"""

from libc.stdint cimport uintptr_t

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
    """
    ctypedef struct lexbor_str_t:
        unsigned char* data
        size_t length
    ctypedef struct lxb_dom_node_t:
        uintptr_t local_name
        lxb_dom_node_t* next
        lxb_dom_node_t* parent
        lxb_dom_node_t* first_child
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

DEF ELEMENT = 1
DEF TEXT = 3
DEF ATTR_CLASS = 0x0b
DEF ATTR_ID = 0x21


def walk(size_t root):
    """(elements, bytes of their class and id values, characters of text) under ``root``."""
    cdef lxb_dom_node_t* top = <lxb_dom_node_t*>root
    cdef lxb_dom_node_t* node = top
    cdef lxb_dom_attr_t* attr
    cdef lxb_dom_character_data_t* text
    cdef Py_ssize_t elements = 0, named = 0, chars = 0, i
    cdef const unsigned char* data
    while node != NULL:
        if node.type == ELEMENT:
            elements += 1
            attr = (<lxb_dom_element_t*>node).first_attr
            while attr != NULL:
                if attr.value != NULL and (
                    attr.node.local_name == ATTR_CLASS or attr.node.local_name == ATTR_ID
                ):
                    named += <Py_ssize_t>attr.value.length
                attr = attr.next
        elif node.type == TEXT:
            text = <lxb_dom_character_data_t*>node
            data = text.data.data
            for i in range(<Py_ssize_t>text.data.length):
                chars += (data[i] & 0xC0) != 0x80
        if node.first_child != NULL:
            node = node.first_child
            continue
        while node != top and node.next == NULL:
            node = node.parent
        if node == top:
            break
        node = node.next
    return elements, named, chars
