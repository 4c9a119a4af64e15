/* crawler.speedups._speedups: the functions of its C files, gathered into one module by _speedups.c. */
#ifndef SITEWARDEN_SPEEDUPS_H
#define SITEWARDEN_SPEEDUPS_H

#include <Python.h>

PyObject *speedups_minhash(PyObject *module, PyObject *args);    /* minhash.c */
PyObject *speedups_text_tags(PyObject *module, PyObject *args);  /* textwalk.c */
PyObject *speedups_text_walk(PyObject *module, PyObject *args);  /* textwalk.c */
PyObject *speedups_tree_markers(PyObject *module, PyObject *args); /* treescan.c */

/* The libxml2 node of an lxml element (lxml's public C API); NULL with TypeError set for anything else. */
struct _xmlNode *node_of(PyObject *element); /* treescan.c */

#endif
