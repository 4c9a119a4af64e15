/* text_walk: crawler.parse.text._walk_text in C, over the libxml2 tree lxml built.
 *
 * The Python walk is one iterwalk over every element of the page, twice (start and end), reading el.tag, el.text
 * and el.tail through lxml proxies: ~0.25 ms a benchmark page. This reads the same libxml2 nodes directly (the
 * node of an lxml element is its `_c_node`, lxml's public C API: lxml/etree.h), splits the visible text and the
 * main text into words as crawler.words.words_of would (the Sink below) and hands the page's word streams whole
 * words a step at a time: the same words, counts and hashes as the Python walk and words_of give
 * (tests/crawler/test_speedups.py compares the two on the benchmark site's pages, generated markup and every code
 * point). node_of, from an lxml element to its node, is treescan.c's.
 *
 * It reads structs only and calls no libxml2 function (lxml links its own libxml2 statically; the headers used are
 * the ones lxml ships with itself, built against the installed lxml by `make install`). A node it does not model
 * (an entity reference, a comment or processing instruction the parser kept, an attribute value that is not plain
 * text) stops it with NotImplementedError, and page_text walks the page again in Python with fresh word streams.
 * The tree is not changed. Handing a step to a stream runs Python code (the stream's add_words), during which other
 * threads may run; the page's tree is its build's own (one build at a time a process, audits.pipeline.chunk).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include <libxml/tree.h>

#include "speedups.h"

/* The tag names of crawler.parse.text (BLOCK_TAGS, INVISIBLE_TAGS, _BOILERPLATE_TAGS) and crawler.words.CJK_RANGES,
   given once by text_tags(): one copy of each list, in Python. */
enum { BLOCK = 1, INVISIBLE = 2, BOILERPLATE = 4 };
#define TAGS_MAX 128
#define TAG_CHARS_MAX 32
static struct {
    char name[TAG_CHARS_MAX];
    int flags;
} tags[TAGS_MAX];
static int tag_count;
static PyObject *boilerplate_roles; /* a frozenset of str: _BOILERPLATE_ROLES */

static unsigned char ascii_space[128];
static char ascii_lower[128];
#define CJK_RANGES_MAX 32
static Py_UCS4 cjk_ranges[CJK_RANGES_MAX][2];
static int cjk_range_count;
static Py_UCS4 cjk_first = 0x110000;

static void
fill_ascii_tables(void)
{
    for (int c = 0; c < 128; c++) {
        ascii_space[c] = Py_UNICODE_ISSPACE((Py_UCS4)c) ? 1 : 0;
        ascii_lower[c] = (char)((c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c);
    }
}


static int
add_tags(PyObject *names, int flag)
{
    PyObject *iterator = PyObject_GetIter(names), *name;
    if (iterator == NULL)
        return -1;
    while ((name = PyIter_Next(iterator)) != NULL) {
        Py_ssize_t length;
        const char *utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &length) : NULL;
        Py_DECREF(name);
        if (utf8 == NULL || length >= TAG_CHARS_MAX) {
            Py_DECREF(iterator);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "tag names are str of fewer than 32 bytes");
            return -1;
        }
        int at = 0;
        while (at < tag_count && strcmp(tags[at].name, utf8) != 0)
            at++;
        if (at == tag_count) {
            if (tag_count == TAGS_MAX) {
                Py_DECREF(iterator);
                PyErr_SetString(PyExc_ValueError, "too many tag names");
                return -1;
            }
            memcpy(tags[at].name, utf8, length + 1);
            tags[at].flags = 0;
            tag_count++;
        }
        tags[at].flags |= flag;
    }
    Py_DECREF(iterator);
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *
speedups_text_tags(PyObject *module, PyObject *args)
{
    PyObject *block, *invisible, *boilerplate, *roles, *ranges;
    if (!PyArg_ParseTuple(args, "OOOO!O!:text_tags", &block, &invisible, &boilerplate, &PyFrozenSet_Type, &roles,
                          &PyTuple_Type, &ranges))
        return NULL;
    if (PyTuple_GET_SIZE(ranges) > CJK_RANGES_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many CJK ranges");
        return NULL;
    }
    Py_UCS4 first = 0x110000;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ranges); i++) {
        unsigned int low, high;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ranges, i), "II:a CJK range", &low, &high))
            return NULL;
        cjk_ranges[i][0] = low;
        cjk_ranges[i][1] = high;
        first = low < first ? low : first;
    }
    cjk_range_count = (int)PyTuple_GET_SIZE(ranges);
    cjk_first = first;
    fill_ascii_tables();
    tag_count = 0;
    if (add_tags(block, BLOCK) < 0 || add_tags(invisible, INVISIBLE) < 0 || add_tags(boilerplate, BOILERPLATE) < 0) {
        tag_count = 0;
        return NULL;
    }
    Py_INCREF(roles);
    Py_XSETREF(boilerplate_roles, roles);
    Py_RETURN_NONE;
}

/* A node's tag flags. libxml2 interns a document's names, so a page's few hundred elements have a few dozen name
   pointers: each is looked up once a walk and remembered by its address. */
#define NAME_CACHE_SLOTS 256 /* a power of two */
typedef struct {
    const xmlChar *names[NAME_CACHE_SLOTS];
    int flags[NAME_CACHE_SLOTS];
} NameCache;

static int
tag_flags(NameCache *cache, const xmlNode *node)
{
    if (node->ns != NULL || node->name == NULL)
        return 0; /* lxml's tag is "{namespace}name": in no list */
    size_t slot = ((uintptr_t)node->name >> 4) & (NAME_CACHE_SLOTS - 1);
    for (int probe = 0; probe < NAME_CACHE_SLOTS; probe++) {
        size_t at = (slot + probe) & (NAME_CACHE_SLOTS - 1);
        if (cache->names[at] == node->name)
            return cache->flags[at];
        if (cache->names[at] == NULL) {
            int flags = 0;
            for (int i = 0; i < tag_count; i++) {
                if (strcmp(tags[i].name, (const char *)node->name) == 0) {
                    flags = tags[i].flags;
                    break;
                }
            }
            cache->names[at] = node->name;
            cache->flags[at] = flags;
            return flags;
        }
    }
    /* The cache is full (a page of 256 distinct tag names): looked up without it. */
    for (int i = 0; i < tag_count; i++) {
        if (strcmp(tags[i].name, (const char *)node->name) == 0)
            return tags[i].flags;
    }
    return 0;
}

/* The words of one stream (crawler.words.words_of's, as the word stream would split them): the text's UTF-8 bytes
   read as they come, each word lower-cased and written after one space into `bytes`, counted with the CJK
   characters among them, and handed to the stream's `add_words` once `bytes` holds a step (between two words).
   Lower-casing: ASCII by table, other characters by Py_UNICODE_TOLOWER, which is str.lower() for all but two:
   U+0130 (lower-cased to two characters) and U+03A3 (final or not by its neighbours) are written as they are and
   the step is lower-cased by str.lower() (tests/crawler/test_speedups.py checks every code point). */
typedef struct {
    char *bytes;
    Py_ssize_t length, size, step;
    PyObject *add;
    Py_ssize_t count, cjk_chars, cjk_words;
    int in_word, word_has_cjk, python_lower;
} Sink;

static int
is_cjk(Py_UCS4 ch)
{
    if (ch < cjk_first)
        return 0;
    for (int i = 0; i < cjk_range_count; i++) {
        if (ch >= cjk_ranges[i][0] && ch <= cjk_ranges[i][1])
            return 1;
    }
    return 0;
}

static int
sink_room(Sink *sink, Py_ssize_t more)
{
    return buffer_room(&sink->bytes, &sink->size, sink->length + more, 4096);
}

static int
sink_flush(Sink *sink)
{
    if (sink->count == 0)
        return 0;
    PyObject *text = PyUnicode_DecodeUTF8(sink->bytes, sink->length, NULL);
    if (text != NULL && sink->python_lower)
        Py_SETREF(text, PyObject_CallMethod(text, "lower", NULL));
    PyObject *result = text == NULL ? NULL
                                    : PyObject_CallFunction(sink->add, "Onnn", text, sink->count, sink->cjk_chars,
                                                            sink->cjk_words);
    Py_XDECREF(text);
    sink->length = sink->count = sink->cjk_chars = sink->cjk_words = 0;
    sink->python_lower = 0;
    if (result == NULL)
        return -1;
    Py_DECREF(result);
    return 0;
}

static int
stop_unmodelled(void)
{
    PyErr_SetString(PyExc_NotImplementedError, "a node the C walk does not model: walked in Python");
    return -1;
}

static int
sink_write(Sink *sink, const char *text, Py_ssize_t length)
{
    /* At most one separator and four bytes a character of it: room for the worst case, once. */
    if (sink_room(sink, 2 * length + 4) < 0)
        return -1;
    /* The sink's fields in locals for the loop: a store through `out` (a char pointer) may alias any of them, so
       the compiler would reload each after every byte written. */
    const unsigned char *in = (const unsigned char *)text;
    char *out = sink->bytes;
    Py_ssize_t at = sink->length, count = sink->count, cjk_chars = sink->cjk_chars, cjk_words = sink->cjk_words;
    int in_word = sink->in_word, word_has_cjk = sink->word_has_cjk, python_lower = sink->python_lower;
    for (Py_ssize_t i = 0; i < length; i++) {
        unsigned char c = in[i];
        if (c < 0x80) {
            if (ascii_space[c]) {
                in_word = 0;
                continue;
            }
            if (!in_word) { /* a word's first byte: one space after the words before it (in this step) */
                if (at)
                    out[at++] = ' ';
                count++;
                in_word = 1;
                word_has_cjk = 0;
            }
            out[at++] = ascii_lower[c];
            continue;
        }
        /* A character past ASCII: libxml2's text is valid UTF-8; anything else goes to the Python walk. */
        Py_UCS4 ch;
        int width = utf8_char(in, i, length, &ch);
        if (width < 0)
            return stop_unmodelled();
        i += width - 1;
        if (Py_UNICODE_ISSPACE(ch)) {
            in_word = 0;
            continue;
        }
        if (!in_word) {
            if (at)
                out[at++] = ' ';
            count++;
            in_word = 1;
            word_has_cjk = 0;
        }
        if (ch >= cjk_first && is_cjk(ch)) {
            cjk_chars++;
            if (!word_has_cjk) {
                word_has_cjk = 1;
                cjk_words++;
            }
        }
        int special = ch == 0x130 || ch == 0x3A3;
        Py_UCS4 lower = special ? ch : Py_UNICODE_TOLOWER(ch);
        python_lower |= special;
        if (lower < 0x80)
            out[at++] = (char)lower;
        else if (lower < 0x800) {
            out[at++] = (char)(0xC0 | (lower >> 6));
            out[at++] = (char)(0x80 | (lower & 0x3F));
        }
        else if (lower < 0x10000) {
            out[at++] = (char)(0xE0 | (lower >> 12));
            out[at++] = (char)(0x80 | ((lower >> 6) & 0x3F));
            out[at++] = (char)(0x80 | (lower & 0x3F));
        }
        else {
            out[at++] = (char)(0xF0 | (lower >> 18));
            out[at++] = (char)(0x80 | ((lower >> 12) & 0x3F));
            out[at++] = (char)(0x80 | ((lower >> 6) & 0x3F));
            out[at++] = (char)(0x80 | (lower & 0x3F));
        }
    }
    sink->length = at;
    sink->count = count;
    sink->cjk_chars = cjk_chars;
    sink->cjk_words = cjk_words;
    sink->in_word = in_word;
    sink->word_has_cjk = word_has_cjk;
    sink->python_lower = python_lower;
    return 0;
}

typedef struct {
    Sink visible, main;
    int with_main;     /* the main text is walked too */
    int in_main;       /* the pieces now are main text */
    int by_boilerplate; /* no <main>: the main text is all but nav, header, footer, aside (by tag or role) */
    const xmlNode *main_off_at; /* the boilerplate element whose subtree the main text leaves out */
    xmlNode **mains;
    Py_ssize_t main_count;
    NameCache names;
} Walk;

static int
see(Walk *walk, const char *bytes, Py_ssize_t length)
{
    if (sink_write(&walk->visible, bytes, length) < 0)
        return -1;
    if (walk->in_main && sink_write(&walk->main, bytes, length) < 0)
        return -1;
    /* A step handed over between two words only: a word may go on in the next node ("a<b>b</b>"). */
    if (walk->visible.length >= walk->visible.step && !walk->visible.in_word && sink_flush(&walk->visible) < 0)
        return -1;
    if (walk->main.length >= walk->main.step && !walk->main.in_word && sink_flush(&walk->main) < 0)
        return -1;
    return 0;
}

/* lxml's _collectText: the text nodes from `node` on (XInclude markers skipped) up to the first other node. */
static int
see_text_run(Walk *walk, const xmlNode *node)
{
    for (; node != NULL; node = node->next) {
        if (node_is_xinclude(node))
            continue;
        if (!node_is_text(node))
            break;
        if (node->content != NULL && node->content[0] && see(walk, (const char *)node->content,
                                                             (Py_ssize_t)strlen((const char *)node->content)) < 0)
            return -1;
    }
    return 0;
}

/* The first element from `node` on among its siblings, NULL when none; -1 (an exception set) on a node that is
   neither an element, text nor an XInclude marker. */
static int
next_element(const xmlNode *node, xmlNode **found)
{
    for (; node != NULL; node = node->next) {
        if (node->type == XML_ELEMENT_NODE) {
            *found = (xmlNode *)node;
            return 0;
        }
        if (!node_is_text(node) && !node_is_xinclude(node))
            return stop_unmodelled();
    }
    *found = NULL;
    return 0;
}

static int
is_main_start(const Walk *walk, const xmlNode *node)
{
    for (Py_ssize_t i = 0; i < walk->main_count; i++) {
        if (walk->mains[i] == node)
            return 1;
    }
    return 0;
}

/* crawler.parse.text._boilerplate for an element that is not boilerplate by its tag: its role attribute, stripped
   and lower-cased as Python does, among _BOILERPLATE_ROLES. */
static int
boilerplate_role(const xmlNode *node)
{
    for (const xmlAttr *attribute = node->properties; attribute != NULL; attribute = attribute->next) {
        if (attribute->ns != NULL || strcmp((const char *)attribute->name, "role") != 0)
            continue;
        /* The value: its text nodes (an entity reference among them is not modelled). */
        PyObject *pieces = PyList_New(0);
        if (pieces == NULL)
            return -1;
        for (const xmlNode *child = attribute->children; child != NULL; child = child->next) {
            if (child->type != XML_TEXT_NODE) {
                Py_DECREF(pieces);
                return stop_unmodelled();
            }
            PyObject *piece = PyUnicode_DecodeUTF8((const char *)child->content,
                                                   child->content ? (Py_ssize_t)strlen((const char *)child->content) : 0,
                                                   NULL);
            if (piece == NULL || PyList_Append(pieces, piece) < 0) {
                Py_XDECREF(piece);
                Py_DECREF(pieces);
                return -1;
            }
            Py_DECREF(piece);
        }
        PyObject *empty = PyUnicode_FromStringAndSize("", 0);
        PyObject *value = empty ? PyUnicode_Join(empty, pieces) : NULL;
        Py_XDECREF(empty);
        Py_DECREF(pieces);
        if (value == NULL)
            return -1;
        PyObject *stripped = PyObject_CallMethod(value, "strip", NULL);
        Py_DECREF(value);
        PyObject *lowered = stripped ? PyObject_CallMethod(stripped, "lower", NULL) : NULL;
        Py_XDECREF(stripped);
        if (lowered == NULL)
            return -1;
        int found = PySet_Contains(boilerplate_roles, lowered);
        Py_DECREF(lowered);
        return found;
    }
    return 0;
}

/* An element's "start": 1 to walk its children, 0 to skip its subtree (invisible), -1 on error. */
static int
start(Walk *walk, const xmlNode *node)
{
    int flags = tag_flags(&walk->names, node);
    if (flags & INVISIBLE)
        return 0;
    if (walk->with_main) {
        if (!walk->in_main) {
            if (is_main_start(walk, node))
                walk->in_main = 1; /* the main element's own space and text are main text */
        }
        else if (walk->by_boilerplate) {
            int boilerplate = (flags & BOILERPLATE) ? 1 : boilerplate_role(node);
            if (boilerplate < 0)
                return -1;
            if (boilerplate) {
                walk->in_main = 0;
                walk->main_off_at = node;
            }
        }
    }
    if ((flags & BLOCK) && see(walk, " ", 1) < 0)
        return -1;
    if (see_text_run(walk, node->children) < 0)
        return -1;
    return 1;
}

static int
end(Walk *walk, const xmlNode *node, const xmlNode *root)
{
    int flags = tag_flags(&walk->names, node);
    if (walk->with_main && node == walk->main_off_at) {
        walk->in_main = 1; /* the boilerplate's closing space and tail are main text */
        walk->main_off_at = NULL;
    }
    if ((flags & BLOCK) && see(walk, " ", 1) < 0)
        return -1;
    if (walk->with_main && walk->in_main && !walk->by_boilerplate && is_main_start(walk, node)) {
        /* The end of one main element: a space, and its tail is not main text. */
        if (sink_write(&walk->main, " ", 1) < 0)
            return -1;
        walk->in_main = 0;
    }
    if (node != root && see_text_run(walk, node->next) < 0)
        return -1;
    return 0;
}

static int
walk_tree(Walk *walk, xmlNode *root)
{
    xmlNode *node = root;
    for (;;) {
        int descend = start(walk, node);
        if (descend < 0)
            return -1;
        xmlNode *child = NULL;
        if (descend && next_element(node->children, &child) < 0)
            return -1;
        if (child != NULL) {
            node = child;
            continue;
        }
        /* No child to walk: the element ends, then each ancestor whose last child it was. */
        for (;;) {
            if (end(walk, node, root) < 0)
                return -1;
            if (node == root)
                return 0;
            xmlNode *sibling;
            if (next_element(node->next, &sibling) < 0)
                return -1;
            if (sibling != NULL) {
                node = sibling;
                break;
            }
            node = node->parent;
        }
    }
}

PyObject *
speedups_text_walk(PyObject *module, PyObject *args)
{
    PyObject *root_element, *mains, *visible_add, *main_add;
    Py_ssize_t step;
    if (!PyArg_ParseTuple(args, "OO!OOn:text_walk", &root_element, &PyTuple_Type, &mains, &visible_add, &main_add,
                          &step))
        return NULL;
    if (boilerplate_roles == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "text_tags() has not been called");
        return NULL;
    }
    xmlNode *root = node_of(root_element);
    if (root == NULL)
        return NULL;
    Walk *walk = PyMem_Calloc(1, sizeof(Walk));
    if (walk == NULL)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    walk->visible = (Sink){.step = step > 0 ? step : 1, .add = visible_add};
    walk->main = (Sink){.step = step > 0 ? step : 1, .add = main_add};
    walk->with_main = main_add != Py_None;
    walk->main_count = PyTuple_GET_SIZE(mains);
    walk->by_boilerplate = walk->with_main && walk->main_count == 0;
    walk->in_main = walk->by_boilerplate;
    walk->mains = PyMem_Calloc(walk->main_count ? walk->main_count : 1, sizeof(xmlNode *));
    if (walk->mains == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < walk->main_count; i++) {
        walk->mains[i] = node_of(PyTuple_GET_ITEM(mains, i));
        if (walk->mains[i] == NULL)
            goto done;
    }
    if (walk_tree(walk, root) < 0)
        goto done;
    if (walk->by_boilerplate && sink_write(&walk->main, " ", 1) < 0)
        goto done;
    if (sink_flush(&walk->visible) < 0 || (walk->with_main && sink_flush(&walk->main) < 0))
        goto done;
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(walk->visible.bytes);
    PyMem_Free(walk->main.bytes);
    PyMem_Free(walk->mains);
    PyMem_Free(walk);
    return result;
}
