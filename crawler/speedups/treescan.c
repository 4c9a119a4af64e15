/* tree_markers: the attribute queries the page parse made with XPath, in one walk of libxml2's nodes.
 *
 * crawler.parse.markers' three XPath queries each walked the whole tree (~170 us a benchmark page together): the
 * main elements, the elements that may be a JavaScript app's root, and whether microdata or RDFa is there. This
 * walks the elements once, in document order, and gives the same elements back as lxml elements (through lxml's
 * public C API, lxml.etree_api.h: elementFactory). tests/crawler/test_speedups.py compares it with the XPath queries.
 *
 * This file holds every use of lxml's C API in the module (its import functions are static to a file): node_of is
 * also the text walk's way from an lxml element to its node.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include <libxml/tree.h>

#include "lxml.etree_api.h"
#include "speedups.h"

static int api_ready;

static int
lxml_api(void)
{
    if (!api_ready) {
        if (import_lxml__etree() < 0)
            return -1;
        api_ready = 1;
    }
    return 0;
}

static PyObject *element_type; /* lxml.etree._Element, looked up once */

xmlNode *
node_of(PyObject *element)
{
    if (lxml_api() < 0)
        return NULL;
    if (element_type == NULL) {
        PyObject *etree = PyImport_ImportModule("lxml.etree");
        if (etree == NULL)
            return NULL;
        element_type = PyObject_GetAttrString(etree, "_Element");
        Py_DECREF(etree);
        if (element_type == NULL)
            return NULL;
    }
    xmlNode *node = PyObject_TypeCheck(element, (PyTypeObject *)element_type)
                        ? ((struct LxmlElement *)element)->_c_node
                        : NULL;
    if (node == NULL || node->type != XML_ELEMENT_NODE) {
        PyErr_SetString(PyExc_TypeError, "an lxml element is expected");
        return NULL;
    }
    return node;
}

/* An attribute's value as XPath reads it, compared with `expected` (NUL-terminated): 1 equal, 0 not, -1 when the
   value holds a node other than text (NotImplementedError set). */
static int
value_is(const xmlAttr *attribute, const char *expected)
{
    size_t at = 0, length = strlen(expected);
    for (const xmlNode *child = attribute->children; child != NULL; child = child->next) {
        if (child->type != XML_TEXT_NODE) {
            PyErr_SetString(PyExc_NotImplementedError, "an attribute value that is not text: read with XPath");
            return -1;
        }
        const char *content = child->content ? (const char *)child->content : "";
        size_t piece = strlen(content);
        if (at + piece > length || memcmp(expected + at, content, piece) != 0)
            return 0;
        at += piece;
    }
    return at == length;
}

static int
named(const xmlAttr *attribute, const char *name)
{
    return attribute->ns == NULL && strcmp((const char *)attribute->name, name) == 0;
}

typedef struct {
    PyObject *root;        /* the lxml element walked from: its document makes the new elements */
    PyObject *app_root_ids; /* a tuple of str: crawler.parse.markers.APP_ROOT_IDS */
    PyObject *mains, *app_roots;
    int itemscope, typeof_;
} Scan;

static int
append_element(Scan *scan, PyObject *list, xmlNode *node)
{
    PyObject *element = (PyObject *)elementFactory(((struct LxmlElement *)scan->root)->_doc, node);
    if (element == NULL)
        return -1;
    int failed = PyList_Append(list, element);
    Py_DECREF(element);
    return failed;
}

/* One element: its markers; *role_main set when its role is "main". */
static int
visit(Scan *scan, xmlNode *node, int main_above, int role_main_above, int *role_main)
{
    int app_root = 0;
    *role_main = 0;
    for (const xmlAttr *attribute = node->properties; attribute != NULL; attribute = attribute->next) {
        if (attribute->ns != NULL)
            continue;
        if (named(attribute, "role")) {
            int is = value_is(attribute, "main");
            if (is < 0)
                return -1;
            *role_main = is;
        }
        else if (named(attribute, "id") && !app_root) {
            Py_ssize_t ids = PyTuple_GET_SIZE(scan->app_root_ids);
            for (Py_ssize_t i = 0; i < ids && !app_root; i++) {
                int is = value_is(attribute, PyUnicode_AsUTF8(PyTuple_GET_ITEM(scan->app_root_ids, i)));
                if (is < 0)
                    return -1;
                app_root = is;
            }
        }
        else if (named(attribute, "data-reactroot") || named(attribute, "ng-app"))
            app_root = 1;
        else if (named(attribute, "itemscope"))
            scan->itemscope = 1;
        else if (named(attribute, "typeof"))
            scan->typeof_ = 1;
    }
    /* //main[not(ancestor::main)] | //@role[.='main']/parent::*[not(ancestor::main)][not(ancestor::*[@role='main'])] */
    if (!main_above && (element_named(node, "main") || (*role_main && !role_main_above)) &&
        append_element(scan, scan->mains, node) < 0)
        return -1;
    if (app_root && append_element(scan, scan->app_roots, node) < 0)
        return -1;
    return 0;
}

/* What each open element is (the ancestor axis is the elements still open): a <main>, role="main". */
enum { OPEN_MAIN = 1, OPEN_ROLE_MAIN = 2 };

PyObject *
speedups_tree_markers(PyObject *module, PyObject *args)
{
    PyObject *root, *ids;
    if (!PyArg_ParseTuple(args, "OO!:tree_markers", &root, &PyTuple_Type, &ids))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ids); i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(ids, i))) {
            PyErr_SetString(PyExc_TypeError, "app root ids are str");
            return NULL;
        }
    }
    xmlNode *top = node_of(root);
    if (top == NULL)
        return NULL;
    Scan scan = {.root = root, .app_root_ids = ids, .mains = PyList_New(0), .app_roots = PyList_New(0)};
    Py_ssize_t depth = 0, capacity = 256;
    unsigned char *open = PyMem_Malloc(capacity);
    PyObject *result = NULL;
    if (scan.mains == NULL || scan.app_roots == NULL || open == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t mains_above = 0, roles_above = 0;
    Py_ssize_t closed;
    for (xmlNode *node = top; node != NULL;) {
        int role_main;
        if (visit(&scan, node, mains_above > 0, roles_above > 0, &role_main) < 0)
            goto done;
        xmlNode *next = element_after(node, top, &closed);
        if (next != NULL && next->parent == node) { /* down into it: it is open while its subtree is walked */
            if (depth == capacity) {
                unsigned char *grown = PyMem_Realloc(open, 2 * capacity);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                open = grown;
                capacity *= 2;
            }
            open[depth] = (element_named(node, "main") ? OPEN_MAIN : 0) | (role_main ? OPEN_ROLE_MAIN : 0);
            mains_above += (open[depth] & OPEN_MAIN) != 0;
            roles_above += (open[depth] & OPEN_ROLE_MAIN) != 0;
            depth++;
        }
        for (; closed > 0; closed--) { /* the ancestors left behind */
            depth--;
            mains_above -= (open[depth] & OPEN_MAIN) != 0;
            roles_above -= (open[depth] & OPEN_ROLE_MAIN) != 0;
        }
        node = next;
    }
    result = Py_BuildValue("(OOOO)", scan.mains, scan.app_roots, scan.itemscope ? Py_True : Py_False,
                           scan.typeof_ ? Py_True : Py_False);
done:
    Py_XDECREF(scan.mains);
    Py_XDECREF(scan.app_roots);
    PyMem_Free(open);
    return result;
}
