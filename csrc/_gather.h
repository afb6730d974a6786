/* Strings of an array copied out by position for csrc/_cvocab.c: ``gather`` by their
   offsets, ``gather_ids`` by their ids (places found by its own sum over the lengths),
   and that sum, ``lens_sum``, which the scan's UTF-8 pass shares.

   Why apart: _cvocab.c's scan walks every string once for the whole-array checks; what
   a rule asks of a few thousand named strings (a vocabulary's special tokens) is a read
   of its own, with its own bounds - every string it copies checked inside the buffer.

   The layout is ggscope.ksy.strings.StringArray's (_strarray.h); both gathers return the
   strings joined by newlines, as bytes, and raise ValueError for a string outside the
   buffer (gather_ids also for an id out of range or out of order).  Memory: the strings
   returned, and 8 bytes per id given. */
#ifndef GGSCOPE_GATHER_H
#define GGSCOPE_GATHER_H
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_strarray.h"

/* the sum of lens[lo..hi) (hi > lo), saturated at UINT64_MAX: 1- and 2-byte lengths in a
   plain (vectorised) sum, which cannot wrap */
static uint64_t lens_sum(const void *lens, Py_ssize_t lsize, Py_ssize_t lo, Py_ssize_t hi) {
    uint64_t total = 0;
    if (lsize == 1) {
        const uint8_t *l = lens;
        for (Py_ssize_t i = lo; i < hi; i++) total += l[i];
    } else if (lsize == 2) {
        const uint16_t *l = lens;
        for (Py_ssize_t i = lo; i < hi; i++) total += l[i];
    } else {
        for (Py_ssize_t i = lo; i < hi; i++) {
            const uint64_t l = item(lens, lsize, i);
            total = total + l < total ? UINT64_MAX : total + l;
        }
    }
    return total;
}

/* gather(buf, starts, lens, width) -> bytes: the strings whose prefixes are at ``starts``
   (int64) with ``lens`` (int64) bytes after a ``width``-byte prefix, each followed by a
   newline but the last.  A string outside ``buf`` raises ValueError. */
static PyObject *gather(PyObject *self, PyObject *args) {
    Py_buffer buf, st, ln;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &buf, &st, &ln, &width)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t k = st.len / 8;
    const int64_t *s = st.buf, *l = ln.buf;
    uint64_t total = 0;
    if (st.len % 8 || ln.len != st.len || width < 0) {
        PyErr_SetString(PyExc_ValueError, "gather(buf, starts, lens, width >= 0): one int64 length per start");
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        if (s[j] < 0 || l[j] < 0 || (uint64_t) s[j] > (uint64_t) buf.len
            || (uint64_t) width + (uint64_t) l[j] > (uint64_t) buf.len - (uint64_t) s[j]) {
            PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", j);
            goto done;
        }
        total += (uint64_t) l[j] + (j > 0);
    }
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t) total);
    if (res == NULL) goto done;
    char *out = PyBytes_AS_STRING(res);
    for (Py_ssize_t j = 0; j < k; j++) {
        if (j) *out++ = '\n';
        memcpy(out, (const char *) buf.buf + s[j] + width, (size_t) l[j]);
        out += l[j];
    }
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&st);
    PyBuffer_Release(&ln);
    return res;
}

/* gather_ids(buf, first, lens, lsize, width, tail, ids) -> bytes: gather's answer for the
   strings ``ids`` (int64, ascending, repeats allowed) of a contiguous array laid out as
   scan's with ``rel`` empty, their places found by one sum over the lengths up to the
   last id - no offsets made for the others.  An id out of range or out of order, or a
   string outside ``buf``, raises ValueError. */
static PyObject *gather_ids(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, ix;
    Py_ssize_t first, lsize, width, tail;
    if (!PyArg_ParseTuple(args, "y*ny*nnny*", &buf, &first, &ln, &lsize, &width, &tail, &ix)) return NULL;
    PyObject *res = NULL;
    uint64_t *at = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0, k = ix.len / 8;
    const int64_t *ids = ix.buf;
    const uint64_t size = (uint64_t) buf.len;
    if (!good_size(lsize) || ln.len % lsize || ix.len % 8 || width < 0 || tail < 0 || first < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "gather_ids(buf, first >= 0, lens, lsize, width >= 0, tail >= 0, ids): int64 ids");
        goto done;
    }
    if ((at = malloc(sizeof(uint64_t) * (size_t) (k ? k : 1))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const uint64_t step = (uint64_t) width + (uint64_t) tail;          /* both below 2**63 */
    uint64_t pos = (uint64_t) first, total = 0;
    Py_ssize_t i = 0;                                                  /* pos: where string i starts */
    for (Py_ssize_t j = 0; j < k; j++) {
        const int64_t id = ids[j];
        if (id < 0 || id >= n || (j && id < ids[j - 1])) {
            PyErr_Format(PyExc_ValueError, "gather_ids: id %zd of %zd is out of range or out of order", j, k);
            goto done;
        }
        if (id > i) {                              /* past strings i..id-1: their prefixes, bytes and tails */
            const uint64_t skip = lens_sum(ln.buf, lsize, i, (Py_ssize_t) id), cnt = (uint64_t) (id - i);
            if (pos > size || skip > size - pos || (step && cnt > (size - pos - skip) / step)) {
                PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", (Py_ssize_t) id);
                goto done;
            }
            pos += skip + cnt * step;
            i = (Py_ssize_t) id;
        }
        const uint64_t l = item(ln.buf, lsize, i);
        if (pos > size || (uint64_t) width > size - pos || l > size - pos - (uint64_t) width) {
            PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", (Py_ssize_t) id);
            goto done;
        }
        at[j] = pos + (uint64_t) width;
        if (l + 1 > (uint64_t) PY_SSIZE_T_MAX - total) {           /* one string asked for again and again */
            PyErr_NoMemory();
            goto done;
        }
        total += l + (j > 0);
    }
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t) total);
    if (res == NULL) goto done;
    char *out = PyBytes_AS_STRING(res);
    for (Py_ssize_t j = 0; j < k; j++) {
        const uint64_t l = item(ln.buf, lsize, (Py_ssize_t) ids[j]);
        if (j) *out++ = '\n';
        memcpy(out, (const char *) buf.buf + at[j], (size_t) l);
        out += l;
    }
done:
    free(at);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ln);
    PyBuffer_Release(&ix);
    return res;
}

#endif
