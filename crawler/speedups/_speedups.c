/* crawler.speedups._speedups: the crawl's hottest loops in C, one module (crawler/speedups/__init__.py says what
 * each stands for and what runs where it was not built). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "speedups.h"

static PyMethodDef speedups_methods[] = {
    {"minhash", speedups_minhash, METH_VARARGS,
     "minhash(text_utf8, word_orders, pair_orders) -> bytes of little-endian uint32 minima (words, then pairs) of "
     "a text of words joined by one space: audits.checks.content.text_signature."},
    {"text_tags", speedups_text_tags, METH_VARARGS,
     "text_tags(block, invisible, boilerplate, boilerplate_roles): crawler.parse.text's tag lists, given once."},
    {"text_walk", speedups_text_walk, METH_VARARGS,
     "text_walk(root, mains, visible_add, main_add, step): crawler.parse.text._walk_text; NotImplementedError on "
     "a node it does not model."},
    {"tree_markers", speedups_tree_markers, METH_VARARGS,
     "tree_markers(root, app_root_ids) -> (mains, app_root_candidates, has_itemscope, has_typeof): "
     "crawler.parse.markers' XPath queries in one walk; NotImplementedError on an attribute value it does not model."},
    {"links", speedups_links, METH_VARARGS,
     "links(root, max_chars) -> [(tag, href, rel, anchor)] of every <a> and <area> in document order: what "
     "crawler.parse.page._links reads of them; NotImplementedError on a node it does not model."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_speedups",
    .m_doc = "The crawl's hottest loops in C (crawler.speedups).",
    .m_size = -1,
    .m_methods = speedups_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&speedups_module);
}
