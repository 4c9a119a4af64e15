/* minhash: the MinHash minima of a page's main text in one pass of C.
 *
 * minhash(text_utf8, word_orders, pair_orders) gives exactly the minima audits.checks.content.text_signature's numpy
 * code gives for the "w3:" scheme (that code stays as the fallback where no C compiler built this module, and
 * tests/crawler/test_speedups.py holds the two to each other on random and hostile text). The numpy code made a
 * dozen passes over arrays of the text's ~35,000 bytes and sorted its 5,000 words twice (0.45 ms a benchmark page);
 * this walks the bytes once and counts occurrences in a hash table (0.15 ms). Plain C and the CPython API.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "speedups.h"

/* --- minhash -------------------------------------------------------------------------------------------------- */

/* audits.checks.content's constants of the "w3:" scheme; a change there is a change here (and of the prefix). */
#define WORD_HASH_BASE 0x100000001B3ULL
#define TOKEN_MULTIPLIER_1 0x9E3779B97F4A7C15ULL
#define TOKEN_MULTIPLIER_2 0xC2B2AE3D27D4EB4FULL
#define TEXT_START 0x243F6A8885A308D3ULL
#define PAIR_MULTIPLIER 0xFF51AFD7ED558CCDULL
#define SIGNED_TEXT_MAX_BYTES (256 * 1024)

static inline uint64_t
fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

/* Occurrences of each hash seen so far: open addressing in a power-of-two table kept at most half full. The table
   outlives a call (a slot is in use when its `call` is the current call's number: nothing to clear), and grows as
   distinct values come: a table allocated at each call, ~256 KB for a 5,000-word page's pairs, went past malloc's
   mmap threshold and was page-faulted afresh every time (half the call's CPU). Used with the GIL held only, as the
   whole of minhash is. */
typedef struct {
    uint64_t key;
    uint32_t count;
    uint32_t call;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
    size_t used;
    uint32_t call;
} Counter;

#define COUNTER_FIRST_SLOTS 4096
/* A table grown past this (a hostile page of 100,000 distinct words) is freed after its call, not kept. */
#define COUNTER_KEPT_SLOTS_MAX 65536

static Counter word_counter, pair_counter;

static void
counter_free(Counter *counter)
{
    PyMem_Free(counter->slots);
    counter->slots = NULL;
    counter->mask = 0;
}

static int
counter_alloc(Counter *counter, size_t size)
{
    counter->slots = PyMem_Calloc(size, sizeof(Slot));
    if (counter->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    counter->mask = size - 1;
    counter->used = 0;
    counter->call = 1;
    return 0;
}

/* Begin a call: the table emptied by moving on to the next call number. */
static int
counter_start(Counter *counter)
{
    if (counter->slots == NULL)
        return counter_alloc(counter, COUNTER_FIRST_SLOTS);
    counter->used = 0;
    if (++counter->call == 0) { /* wrapped: slots marked with an old number might read as current */
        memset(counter->slots, 0, (counter->mask + 1) * sizeof(Slot));
        counter->call = 1;
    }
    return 0;
}

static void
counter_end(Counter *counter)
{
    if (counter->mask + 1 > COUNTER_KEPT_SLOTS_MAX)
        counter_free(counter);
}

static inline Slot *
counter_find(const Counter *counter, uint64_t key)
{
    size_t at = (size_t)key & counter->mask; /* keys are fmix64 outputs: their low bits are already mixed */
    while (counter->slots[at].call == counter->call && counter->slots[at].key != key)
        at = (at + 1) & counter->mask;
    return &counter->slots[at];
}

static int
counter_grow(Counter *counter)
{
    Counter bigger;
    if (counter_alloc(&bigger, 2 * (counter->mask + 1)) < 0)
        return -1;
    for (size_t at = 0; at <= counter->mask; at++) {
        Slot *slot = &counter->slots[at];
        if (slot->call == counter->call) {
            Slot *moved = counter_find(&bigger, slot->key);
            *moved = *slot;
            moved->call = bigger.call;
        }
    }
    bigger.used = counter->used;
    counter_free(counter);
    *counter = bigger;
    return 0;
}

/* This occurrence's number (1 for the first) of `key`, 0 when memory ran out (an exception is set). */
static inline uint64_t
counter_add(Counter *counter, uint64_t key)
{
    Slot *slot = counter_find(counter, key);
    if (slot->call == counter->call)
        return ++slot->count;
    if (2 * (counter->used + 1) > counter->mask + 1) {
        if (counter_grow(counter) < 0)
            return 0;
        slot = counter_find(counter, key);
    }
    counter->used++;
    slot->key = key;
    slot->call = counter->call;
    return slot->count = 1;
}

/* The k-th occurrence of a value is its own token (content._occurrence_tokens); each offers its low 32 bits to
   the bin its top bits name (content._bin_minima). */
static inline void
offer(uint32_t *minima, uint8_t *filled, int shift, uint64_t value, uint64_t occurrence)
{
    uint64_t token = fmix64((value * TOKEN_MULTIPLIER_1) ^ (occurrence * TOKEN_MULTIPLIER_2));
    size_t bin = (size_t)(token >> shift);
    uint32_t low = (uint32_t)token;
    if (!filled[bin] || low < minima[bin])
        minima[bin] = low;
    filled[bin] = 1;
}

/* An empty bin takes the value of the first bin in its order that one fell in (optimal densification). */
static void
densify(uint32_t *minima, const uint8_t *filled, Py_ssize_t bins, const Py_buffer *orders)
{
    const int64_t *order = orders->buf;
    for (Py_ssize_t bin = 0; bin < bins; bin++) {
        if (filled[bin])
            continue;
        for (Py_ssize_t j = 0; j < bins; j++) {
            int64_t from = order[bin * bins + j];
            if (from >= 0 && from < bins && filled[from]) { /* a filled bin's own minimum: no chain through another borrowed value */
                minima[bin] = minima[from];
                break;
            }
        }
    }
}

static int
bins_shift(Py_ssize_t bins)
{
    int bits = 0;
    while (((Py_ssize_t)1 << bits) < bins)
        bits++;
    return 64 - bits;
}

/* A bins x bins array of int64 bin numbers, C order (content._borrow_orders), bins a power of two. */
static int
get_orders(PyObject *array, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(array, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    Py_ssize_t bins = view->ndim == 2 ? view->shape[0] : 0;
    if (view->itemsize != 8 || strchr("lq", view->format[0]) == NULL || view->format[1] ||
        bins < 2 || view->shape[1] != bins || (bins & (bins - 1))) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: a square int64 array of a power-of-two size (at least 2) is expected", name);
        return -1;
    }
    return 0;
}

PyObject *
speedups_minhash(PyObject *module, PyObject *args)
{
    Py_buffer text;
    PyObject *word_array, *pair_array;
    if (!PyArg_ParseTuple(args, "y*OO:minhash", &text, &word_array, &pair_array))
        return NULL;
    Py_buffer word_orders, pair_orders;
    if (get_orders(word_array, &word_orders, "word_orders") < 0) {
        PyBuffer_Release(&text);
        return NULL;
    }
    if (get_orders(pair_array, &pair_orders, "pair_orders") < 0) {
        PyBuffer_Release(&word_orders);
        PyBuffer_Release(&text);
        return NULL;
    }
    PyObject *result = NULL, *values = NULL;
    Counter *words = &word_counter, *pairs = &pair_counter;
    uint8_t *filled = NULL;
    Py_ssize_t word_bins = word_orders.shape[0], pair_bins = pair_orders.shape[0];
    int word_shift = bins_shift(word_bins), pair_shift = bins_shift(pair_bins);

    const unsigned char *raw = text.buf;
    Py_ssize_t size = text.len;
    if (size > SIGNED_TEXT_MAX_BYTES) { /* whole words only */
        size = SIGNED_TEXT_MAX_BYTES;
        while (size > 0 && raw[size - 1] != ' ')
            size--;
        if (size > 0)
            size--; /* the space itself */
    }
    if (counter_start(words) < 0 || counter_start(pairs) < 0)
        goto done;
    values = PyBytes_FromStringAndSize(NULL, (word_bins + pair_bins) * 4);
    if (values == NULL)
        goto done;
    uint32_t *word_minima = (uint32_t *)PyBytes_AS_STRING(values), *pair_minima = word_minima + word_bins;
    memset(word_minima, 0xFF, (word_bins + pair_bins) * 4); /* a bin nothing fell in nor lent to: the numpy code's */
    filled = PyMem_Calloc(word_bins + pair_bins, 1);
    if (filled == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Each word a polynomial hash of its bytes (sum of byte * B^j), mixed: content._word_hashes. */
    uint64_t before = TEXT_START, hash = 0, power = 1;
    for (Py_ssize_t i = 0; i <= size; i++) {
        if (i == size || raw[i] == ' ') {
            uint64_t word = fmix64(hash), pair = fmix64((before * PAIR_MULTIPLIER) ^ word);
            uint64_t word_occurrence = counter_add(words, word), pair_occurrence = counter_add(pairs, pair);
            if (!word_occurrence || !pair_occurrence)
                goto done;
            offer(word_minima, filled, word_shift, word, word_occurrence);
            offer(pair_minima, filled + word_bins, pair_shift, pair, pair_occurrence);
            before = word;
            hash = 0;
            power = 1;
            continue;
        }
        hash += (uint64_t)raw[i] * power;
        power *= WORD_HASH_BASE;
    }
    densify(word_minima, filled, word_bins, &word_orders);
    densify(pair_minima, filled + word_bins, pair_bins, &pair_orders);
#if PY_BIG_ENDIAN
    for (Py_ssize_t i = 0; i < word_bins + pair_bins; i++) {
        uint32_t v = word_minima[i];
        word_minima[i] = (v >> 24) | ((v >> 8) & 0xFF00) | ((v << 8) & 0xFF0000) | (v << 24);
    }
#endif
    result = values;
    values = NULL;
done:
    Py_XDECREF(values);
    counter_end(words);
    counter_end(pairs);
    PyMem_Free(filled);
    PyBuffer_Release(&text);
    PyBuffer_Release(&word_orders);
    PyBuffer_Release(&pair_orders);
    return result;
}

