/* links: what crawler.parse.page._links reads of each <a> and <area>, in one walk of libxml2's nodes.
 *
 * The Python loop made an lxml proxy of each of a page's ~40 links, read its href and rel through lxml, and joined
 * and collapsed its text (itertext, str.split) for the anchor: ~0.13 ms a benchmark page before any URL work. This
 * reads the same nodes (node_of, treescan.c) and gives, in document order, (tag, href, rel, anchor) for each: the
 * href and rel as lxml's `get` reads them (None when absent), and the anchor as _anchor_text makes it: the text
 * (an <area>'s alt) collapsed as crawler.parse.text.collapse does (" ".join(text.split())), else the collapsed alt of
 * the first <img> inside that has one, cut at `max_chars` characters. The URLs are left to Python (normalize, the
 * site's rules). tests/crawler/test_speedups.py compares it with the Python loop.
 *
 * Like the text walk it reads structs only and calls no libxml2 function; a node it does not model (an entity
 * reference, a comment or processing instruction the parser kept, an attribute value that is not plain text, text
 * that is not valid UTF-8) stops it with NotImplementedError and _links reads the page through lxml instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include <libxml/tree.h>

#include "speedups.h"

static int
unmodelled(void)
{
    PyErr_SetString(PyExc_NotImplementedError, "a node the C link reader does not model: read through lxml");
    return -1;
}

/* The attribute `name` (no namespace) of an element, as lxml's get() reads it: *value a new str, or NULL when the
   element has none. -1 with NotImplementedError on a value that is not text nodes. */
static int
attribute(const xmlNode *node, const char *name, PyObject **value)
{
    *value = NULL;
    for (const xmlAttr *at = node->properties; at != NULL; at = at->next) {
        if (at->ns != NULL || strcmp((const char *)at->name, name) != 0)
            continue;
        const xmlNode *child = at->children;
        if (child == NULL) {
            *value = PyUnicode_FromStringAndSize("", 0);
            return *value == NULL ? -1 : 0;
        }
        if (child->type != XML_TEXT_NODE || child->next != NULL)
            return unmodelled(); /* one text node is what the HTML parser makes; anything else is read by lxml */
        const char *content = child->content ? (const char *)child->content : "";
        *value = PyUnicode_DecodeUTF8(content, (Py_ssize_t)strlen(content), NULL);
        if (*value == NULL) {
            PyErr_Clear();
            return unmodelled();
        }
        return 0;
    }
    return 0;
}

/* Text collapsed as " ".join(text.split()) (whitespace as str.split() has it: Py_UNICODE_ISSPACE), written as it
   comes and cut at `max_chars` characters, as collapse(text)[:max_chars]. */
typedef struct {
    char *bytes;
    Py_ssize_t length, size, chars, max_chars;
    int in_word;
} Collapsed;

static int
room(Collapsed *out, Py_ssize_t more)
{
    return buffer_room(&out->bytes, &out->size, out->length + more, 256);
}

static int
collapse_write(Collapsed *out, const unsigned char *in, Py_ssize_t length)
{
    for (Py_ssize_t i = 0; i < length && out->chars < out->max_chars;) {
        Py_UCS4 ch;
        int width = utf8_char(in, i, length, &ch);
        if (width < 0)
            return unmodelled();
        if (Py_UNICODE_ISSPACE(ch)) {
            out->in_word = 0;
            i += width;
            continue;
        }
        if (!out->in_word && out->length) { /* one space between two words */
            if (room(out, 1) < 0)
                return -1;
            out->bytes[out->length++] = ' ';
            out->chars++;
            if (out->chars >= out->max_chars)
                break;
        }
        out->in_word = 1;
        if (room(out, width) < 0)
            return -1;
        memcpy(out->bytes + out->length, in + i, width);
        out->length += width;
        out->chars++;
        i += width;
    }
    return 0;
}

/* The text of `element`'s subtree (not its tail), as itertext() joins it, into `out`. */
static int
collapse_subtree(Collapsed *out, const xmlNode *element)
{
    const xmlNode *node = element->children;
    while (node != NULL) {
        if (node_is_text(node)) {
            if (node->content != NULL &&
                collapse_write(out, node->content, (Py_ssize_t)strlen((const char *)node->content)) < 0)
                return -1;
        }
        else if (node->type == XML_ELEMENT_NODE) {
            if (node->children != NULL) {
                node = node->children;
                continue;
            }
        }
        else if (!node_is_xinclude(node))
            return unmodelled();
        while (node->next == NULL) { /* up to the next sibling of an ancestor inside `element` */
            node = node->parent;
            if (node == element)
                return 0;
        }
        node = node->next;
    }
    return 0;
}

/* An attribute's value collapsed into `out` (nothing when absent). */
static int
collapse_attribute(Collapsed *out, const xmlNode *node, const char *name)
{
    PyObject *value;
    if (attribute(node, name, &value) < 0)
        return -1;
    if (value == NULL)
        return 0;
    Py_ssize_t length;
    const char *utf8 = PyUnicode_AsUTF8AndSize(value, &length);
    int failed = utf8 == NULL ? -1 : collapse_write(out, (const unsigned char *)utf8, length);
    Py_DECREF(value);
    return failed;
}

/* _anchor_text: the collapsed text (an <area>'s alt), else the collapsed alt of the first <img> inside with one. */
static PyObject *
anchor_of(const xmlNode *element, int area, Py_ssize_t max_chars)
{
    Collapsed out = {.max_chars = max_chars};
    PyObject *anchor = NULL;
    if ((area ? collapse_attribute(&out, element, "alt") : collapse_subtree(&out, element)) < 0)
        goto done;
    /* The elements inside in document order (element.iter("img")), until an image's alt gives text. */
    xmlNode *top = (xmlNode *)element;
    Py_ssize_t closed;
    for (xmlNode *node = element_after(top, top, &closed); node != NULL && out.length == 0;
         node = element_after(node, top, &closed)) {
        if (element_named(node, "img") && collapse_attribute(&out, node, "alt") < 0)
            goto done;
    }
    anchor = PyUnicode_DecodeUTF8(out.bytes ? out.bytes : "", out.length, NULL);
done:
    PyMem_Free(out.bytes);
    return anchor;
}

static PyObject *tag_a, *tag_area; /* "a" and "area", made once */

/* One link element's (tag, href, rel, anchor), appended to `found`. */
static int
add_link(PyObject *found, const xmlNode *node, int area, Py_ssize_t max_chars)
{
    PyObject *href = NULL, *rel = NULL, *anchor = NULL, *item = NULL;
    int failed = -1;
    if (attribute(node, "href", &href) < 0 || attribute(node, "rel", &rel) < 0)
        goto done;
    anchor = anchor_of(node, area, max_chars);
    if (anchor == NULL)
        goto done;
    item = PyTuple_Pack(4, area ? tag_area : tag_a, href ? href : Py_None, rel ? rel : Py_None, anchor);
    if (item != NULL)
        failed = PyList_Append(found, item);
done:
    Py_XDECREF(href);
    Py_XDECREF(rel);
    Py_XDECREF(anchor);
    Py_XDECREF(item);
    return failed;
}

PyObject *
speedups_links(PyObject *module, PyObject *args)
{
    PyObject *root;
    Py_ssize_t max_chars;
    if (!PyArg_ParseTuple(args, "On:links", &root, &max_chars))
        return NULL;
    if (max_chars < 0) {
        PyErr_SetString(PyExc_ValueError, "max_chars is not negative");
        return NULL;
    }
    if (tag_a == NULL && ((tag_a = PyUnicode_InternFromString("a")) == NULL ||
                          (tag_area = PyUnicode_InternFromString("area")) == NULL))
        return NULL;
    xmlNode *top = node_of(root);
    if (top == NULL)
        return NULL;
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    /* Every element from `top` on in document order, as root.iter("a", "area") yields them. */
    Py_ssize_t closed;
    for (xmlNode *node = top; node != NULL; node = element_after(node, top, &closed)) {
        int area = element_named(node, "area");
        if ((area || element_named(node, "a")) && add_link(found, node, area, max_chars) < 0) {
            Py_DECREF(found);
            return NULL;
        }
    }
    return found;
}
