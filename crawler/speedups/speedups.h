/* crawler.speedups._speedups: the functions of its C files, gathered into one module by _speedups.c. */
#ifndef SITEWARDEN_SPEEDUPS_H
#define SITEWARDEN_SPEEDUPS_H

#include <Python.h>

PyObject *speedups_minhash(PyObject *module, PyObject *args);    /* minhash.c */
PyObject *speedups_text_tags(PyObject *module, PyObject *args);  /* textwalk.c */
PyObject *speedups_text_walk(PyObject *module, PyObject *args);  /* textwalk.c */
PyObject *speedups_tree_markers(PyObject *module, PyObject *args); /* treescan.c */
PyObject *speedups_links(PyObject *module, PyObject *args);        /* links.c */

/* The libxml2 node of an lxml element (lxml's public C API); NULL with TypeError set for anything else. */
struct _xmlNode *node_of(PyObject *element); /* treescan.c */

/* What the tree walks share. They read libxml2's structs only and call no libxml2 function. */
#include <string.h>

#include <libxml/tree.h>

static inline int
node_is_text(const xmlNode *node)
{
    return node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE;
}

static inline int
node_is_xinclude(const xmlNode *node)
{
    return node->type == XML_XINCLUDE_START || node->type == XML_XINCLUDE_END;
}

/* An element without a namespace whose tag is `name` (lxml's tag "name", as root.iter("name") matches it). */
static inline int
element_named(const xmlNode *node, const char *name)
{
    return node->type == XML_ELEMENT_NODE && node->ns == NULL && node->name != NULL &&
           strcmp((const char *)node->name, name) == 0;
}

/* The first element among `node` and its next siblings, NULL when none. */
static inline xmlNode *
first_element(xmlNode *node)
{
    while (node != NULL && node->type != XML_ELEMENT_NODE)
        node = node->next;
    return node;
}

/* The element after `node` in document order within `top`'s subtree (root.iter()'s order), NULL after the last:
   its first child element, else the next element sibling of it or of its nearest ancestor below `top`. *closed:
   the ancestors left on the way (0 when it went down), for a walk that keeps a stack of the open elements. */
static inline xmlNode *
element_after(xmlNode *node, const xmlNode *top, Py_ssize_t *closed)
{
    xmlNode *child = first_element(node->children);
    *closed = 0;
    if (child != NULL)
        return child;
    for (;;) {
        if (node == top)
            return NULL;
        xmlNode *sibling = first_element(node->next);
        if (sibling != NULL)
            return sibling;
        node = node->parent;
        (*closed)++;
    }
}

/* The character starting at in[i] (of `length` bytes) into *ch, and its width in bytes; -1 when the bytes there are
   not valid UTF-8 (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
static inline int
utf8_char(const unsigned char *in, Py_ssize_t i, Py_ssize_t length, Py_UCS4 *ch)
{
    unsigned char c = in[i];
    if (c < 0x80) {
        *ch = c;
        return 1;
    }
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (extra < 0 || c > 0xF4 || i + extra >= length)
        return -1;
    Py_UCS4 value = c & (0x3F >> extra);
    for (int k = 1; k <= extra; k++) {
        if ((in[i + k] & 0xC0) != 0x80)
            return -1;
        value = (value << 6) | (in[i + k] & 0x3F);
    }
    static const Py_UCS4 least[] = {0, 0x80, 0x800, 0x10000};
    if (value < least[extra] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
        return -1;
    *ch = value;
    return extra + 1;
}

/* Room in a PyMem buffer for `needed` bytes in all, doubling from `first` bytes; -1 with MemoryError set. */
static inline int
buffer_room(char **bytes, Py_ssize_t *size, Py_ssize_t needed, Py_ssize_t first)
{
    if (needed <= *size)
        return 0;
    Py_ssize_t grown_size = *size ? *size : first;
    while (grown_size < needed)
        grown_size *= 2;
    char *grown = PyMem_Realloc(*bytes, grown_size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *bytes = grown;
    *size = grown_size;
    return 0;
}

#endif
