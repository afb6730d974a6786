/* ggscope.ksy._cscan: the exact walk over an array of length-prefixed strings.

   Why: an array of 16 M empty strings (a 134 MB GGUF) defeats the numpy scanner of
   ggscope.ksy.scan (a zero prefix is no candidate) and one Python step per element
   costs a minute.  Here the walk is a loop of a few ns per element with no allocation
   of its own, and the lengths go straight into the narrowest unsigned dtype that holds
   them, so the scan of n strings costs n bytes (short strings), never the 16 bytes a
   string that int64 starts and lengths cost (issue 23, item 6).  The build is optional
   (setup.py); ggscope.ksy.scan keeps its numpy route.

   scan(buf, start, n, width, le, limit, tail) -> (done, end, maxlen): walk element
   after element from ``start``, each a ``width``-byte length prefix (little-endian when
   ``le``), that many bytes, then ``tail`` bytes of fixed-size fields; stop before the
   first element that does not fit before ``limit``.  ``done`` elements fit, ``end`` is
   where element ``done`` starts (the end of the array when done == n), ``maxlen`` the
   longest length seen.

   lengths(buf, start, n, width, le, tail, out): the same walk over elements that
   ``scan`` found to fit, writing each length into ``out`` (a writable buffer of n
   unsigned integers of out.len / n bytes: 1, 2, 4 or 8).  ValueError if an element does
   not fit or a length does not fit the item size.

   heads(buf, first, lens, lsize, width, tail, out): over a contiguous array already
   scanned, laid out as ggscope.ksy.strings.StringArray holds it (``lens``: n lengths of
   ``lsize`` bytes, 1, 2, 4 or 8; string i's ``width``-byte prefix right after string
   i-1's bytes and ``tail`` bytes, the first at ``first``), write each string's first eight
   bytes (fewer for a shorter string, the rest zero) as a little-endian integer into
   ``out`` (n uint64): StringArray.heads, the key that finds pieces of a vocabulary by
   text without decoding them.  ValueError if a string lies outside ``buf``. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_strarray.h"

static inline uint64_t read_len(const unsigned char *p, Py_ssize_t width, int le) {
    uint64_t v = 0;
    if (le) {
        for (Py_ssize_t k = width - 1; k >= 0; k--) v = (v << 8) | p[k];
    } else {
        for (Py_ssize_t k = 0; k < width; k++) v = (v << 8) | p[k];
    }
    return v;
}

/* one step: 1 and *len set when the element at *p fits before limit */
static inline int fits(const unsigned char *src, Py_ssize_t p, Py_ssize_t width, int le, Py_ssize_t limit,
                       Py_ssize_t tail, uint64_t *len) {
    const Py_ssize_t rem = limit - p - width - tail;
    if (rem < 0) return 0;
    *len = read_len(src + p, width, le);
    return *len <= (uint64_t) rem;
}

static int check_args(Py_buffer *buf, Py_ssize_t start, Py_ssize_t n, Py_ssize_t width, Py_ssize_t limit,
                      Py_ssize_t tail) {
    if (width < 1 || width > 8 || n < 0 || tail < 0 || start < 0 || limit < 0 || limit > buf->len) {
        PyErr_SetString(PyExc_ValueError, "scan: width 1..8, n, start, tail >= 0 and limit within the buffer");
        return 0;
    }
    return 1;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, n, width, limit, tail;
    int le;
    if (!PyArg_ParseTuple(args, "y*nnnpnn", &buf, &start, &n, &width, &le, &limit, &tail)) return NULL;
    if (!check_args(&buf, start, n, width, limit, tail)) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const unsigned char *src = buf.buf;
    Py_ssize_t i = 0, p = start;
    uint64_t maxlen = 0, len = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; i < n; i++) {
        if (!fits(src, p, width, le, limit, tail, &len)) break;
        if (len > maxlen) maxlen = len;
        p += width + (Py_ssize_t) len + tail;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return Py_BuildValue("nnK", i, p, (unsigned long long) maxlen);
}

static PyObject *lengths(PyObject *self, PyObject *args) {
    Py_buffer buf, out;
    Py_ssize_t start, n, width, tail;
    int le;
    if (!PyArg_ParseTuple(args, "y*nnnpnw*", &buf, &start, &n, &width, &le, &tail, &out)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t size = n ? out.len / n : 1;
    if (!check_args(&buf, start, n, width, buf.len, tail)) goto done;
    if ((n && out.len % n) || !(size == 1 || size == 2 || size == 4 || size == 8)) {
        PyErr_SetString(PyExc_ValueError, "lengths: out holds n items of 1, 2, 4 or 8 bytes");
        goto done;
    }
    const unsigned char *src = buf.buf;
    const uint64_t top = size == 8 ? UINT64_MAX : (((uint64_t) 1) << (8 * size)) - 1;
    Py_ssize_t p = start, i = 0;
    uint64_t len = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (; i < n; i++) {
        if (!fits(src, p, width, le, buf.len, tail, &len) || len > top) {
            ok = 0;
            break;
        }
        switch (size) {
            case 1: ((uint8_t *) out.buf)[i] = (uint8_t) len; break;
            case 2: ((uint16_t *) out.buf)[i] = (uint16_t) len; break;
            case 4: ((uint32_t *) out.buf)[i] = (uint32_t) len; break;
            default: ((uint64_t *) out.buf)[i] = len;
        }
        p += width + (Py_ssize_t) len + tail;
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "lengths: element %zd does not fit", i);
        goto done;
    }
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&out);
    return res;
}

static PyObject *heads(PyObject *self, PyObject *args) {
    Py_buffer buf, lens, out;
    Py_ssize_t first, lsize, width, tail;
    if (!PyArg_ParseTuple(args, "y*ny*nnnw*", &buf, &first, &lens, &lsize, &width, &tail, &out)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t n = good_size(lsize) ? lens.len / lsize : 0;
    if (!good_size(lsize) || lens.len % lsize || width < 0 || tail < 0 || first < 0 ||
        out.len != n * (Py_ssize_t) sizeof(uint64_t)) {
        PyErr_SetString(PyExc_ValueError, "heads: lengths of 1, 2, 4 or 8 bytes, out n uint64, sizes >= 0");
        goto done;
    }
    const unsigned char *src = buf.buf;
    uint64_t *dst = out.buf;
    uint64_t p = (uint64_t) first;
    const uint64_t size = (uint64_t) buf.len;
    Py_ssize_t i = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (; i < n; i++) {
        const uint64_t len = item(lens.buf, lsize, i);
        if (p > size || (uint64_t) width > size - p || len > size - p - (uint64_t) width) {
            ok = 0;
            break;
        }
        const unsigned char *s = src + p + (uint64_t) width;
        uint64_t v = 0;
        for (int j = (len < 8 ? (int) len : 8) - 1; j >= 0; j--) v = (v << 8) | s[j];
        dst[i] = v;
        p += (uint64_t) width + len + (uint64_t) tail;
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "heads: string %zd lies outside the buffer", i);
        goto done;
    }
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&lens);
    PyBuffer_Release(&out);
    return res;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS, "Walk length-prefixed strings: (elements that fit, end offset, longest length)."},
    {"lengths", lengths, METH_VARARGS, "Write the lengths of length-prefixed strings into a narrow buffer."},
    {"heads", heads, METH_VARARGS, "Write the first eight bytes of each length-prefixed string as a uint64."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope.ksy._cscan",
                                    "The exact walk over length-prefixed strings, compiled at install time.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cscan(void) { return PyModule_Create(&MODULE); }
