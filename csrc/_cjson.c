/* ggscope._cjson: a string array of a file as the JSON text of a list, in one pass.

   Why: ``ggscope info --json`` writes the vocabulary arrays of a model (hundreds of
   thousands of strings) and issue 18 holds it to three times the cost of opening the
   file.  In numpy the text took a mask, a compress, a scatter of separators and three
   scans for characters JSON must escape -- about two thirds of the command's time on a
   Llama-3 header.  Here each string is copied once and checked as it is copied.  The
   build is optional (setup.py); ggscope.report.jsonable keeps the numpy route.

   join_json(buf, first, lens, lsize, rel, rsize, width, tail) -> bytes | None: the
   strings of a ggscope.ksy.strings.StringArray as ``["s0", "s1", ...]``.  ``lens``: n
   unsigned lengths of ``lsize`` bytes (1, 2, 4 or 8).  String i's prefix is at ``first +
   rel[i]`` (``rel``: n unsigned offsets of ``rsize`` bytes, 4 or 8) or, when ``rel`` is
   empty (rsize 0), right after element i-1's prefix, string and ``tail`` bytes (the
   first at ``first``); its bytes follow its ``width``-byte prefix.  None when a string
   holds a byte JSON would escape (below 0x20, '"' or '\\') -- the caller then takes
   the general route.  UTF-8 validity is the caller's check (it decodes the result).  A
   string outside ``buf`` raises ValueError.  No array of n positions is made. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_strarray.h"

static PyObject *join_json(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, rl;
    Py_ssize_t first, lsize, rsize, width, tail;
    if (!PyArg_ParseTuple(args, "y*ny*ny*nnn", &buf, &first, &ln, &lsize, &rl, &rsize, &width, &tail)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0;
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || width < 0 || tail < 0 || first < 0) {
        PyErr_SetString(PyExc_ValueError, "join_json(buf, first, lens, lsize, rel, rsize, width >= 0, tail >= 0)");
        goto done;
    }
    /* the size first, checking every string lies inside the buffer */
    Py_ssize_t total = 2 + (n ? 4 * n - 2 : 0);     /* [ ] and '"' + '", "' between */
    {
        uint64_t p = (uint64_t) first;
        const uint64_t size = (uint64_t) buf.len;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : p, l = item(ln.buf, lsize, i);
            if (s > size || (uint64_t) width > size - s || l > size - s - (uint64_t) width) {
                PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", i);
                goto done;
            }
            total += (Py_ssize_t) l;
            p = s + (uint64_t) width + l + (uint64_t) tail;
        }
    }
    res = PyBytes_FromStringAndSize(NULL, total);
    if (res == NULL) goto done;
    {
        char *o = PyBytes_AS_STRING(res);
        const unsigned char *src = buf.buf;
        int bad = 0;
        Py_BEGIN_ALLOW_THREADS
        uint64_t at = (uint64_t) first;
        *o++ = '[';
        for (Py_ssize_t i = 0; i < n && !bad; i++) {
            if (i) {
                memcpy(o, "\", \"", 4);
                o += 4;
            } else {
                *o++ = '"';
            }
            const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : at;
            const uint64_t l = item(ln.buf, lsize, i);
            const unsigned char *p = src + s + width;
            unsigned char flag = 0;
            for (uint64_t j = 0; j < l; j++) {
                const unsigned char c = p[j];
                flag |= (c < 0x20) | (c == '"') | (c == '\\');
                o[j] = (char) c;
            }
            bad = flag;
            o += l;
            at = s + (uint64_t) width + l + (uint64_t) tail;
        }
        if (n) *o++ = '"';
        *o++ = ']';
        Py_END_ALLOW_THREADS
        if (bad) {
            Py_DECREF(res);
            res = Py_None;
            Py_INCREF(res);
        }
    }
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    return res;
}

static PyMethodDef METHODS[] = {
    {"join_json", join_json, METH_VARARGS, "A string array as the JSON text of a list, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cjson",
                                    "String arrays as JSON text, compiled at install time.", -1, METHODS};

PyMODINIT_FUNC PyInit__cjson(void) { return PyModule_Create(&MODULE); }
