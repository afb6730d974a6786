/* ggscope._cjson: a string array of a file as the JSON text of a list, in one pass.

   Why: ``ggscope info --json`` writes the vocabulary arrays of a model (hundreds of
   thousands of strings) and issue 18 holds it to three times the cost of opening the
   file.  In numpy the text took a mask, a compress, a scatter of separators and three
   scans for characters JSON must escape -- about two thirds of the command's time on a
   Llama-3 header.  Here each string is copied once and checked as it is copied.  The
   build is optional (setup.py); ggscope.report.jsonable keeps the numpy route.

   join_json(buf, starts, lens, width) -> bytes | None: ``["s0", "s1", ...]`` where
   string i is ``buf[starts[i] + width : ... + lens[i]]`` (starts, lens: int64 buffers of
   one length), or None when a string holds a byte JSON would escape (below 0x20, '"' or
   '\\') -- the caller then takes the general route.  UTF-8 validity is the caller's
   check (it decodes the result).  A string outside ``buf`` raises ValueError. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *join_json(PyObject *self, PyObject *args) {
    Py_buffer buf, st, ln;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &buf, &st, &ln, &width)) return NULL;
    PyObject *res = NULL;
    const int64_t *starts = st.buf, *lens = ln.buf;
    const Py_ssize_t n = st.len / 8;
    if (st.len % 8 || ln.len != st.len || width < 0) {
        PyErr_SetString(PyExc_ValueError, "join_json(buf, starts int64, lens int64 of one length, width >= 0)");
        goto done;
    }
    /* the size first, checking every string lies inside the buffer */
    Py_ssize_t total = 2 + (n ? 4 * n - 2 : 0);     /* [ ] and '"' + '", "' between */
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t s = starts[i], l = lens[i];
        if (s < 0 || l < 0 || s > buf.len - width || l > buf.len - width - s) {
            PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", i);
            goto done;
        }
        total += (Py_ssize_t) l;
    }
    res = PyBytes_FromStringAndSize(NULL, total);
    if (res == NULL) goto done;
    {
        char *o = PyBytes_AS_STRING(res);
        const unsigned char *src = buf.buf;
        int bad = 0;
        Py_BEGIN_ALLOW_THREADS
        *o++ = '[';
        for (Py_ssize_t i = 0; i < n && !bad; i++) {
            if (i) {
                memcpy(o, "\", \"", 4);
                o += 4;
            } else {
                *o++ = '"';
            }
            const unsigned char *p = src + starts[i] + width;
            const int64_t l = lens[i];
            unsigned char flag = 0;
            for (int64_t j = 0; j < l; j++) {
                const unsigned char c = p[j];
                flag |= (c < 0x20) | (c == '"') | (c == '\\');
                o[j] = (char) c;
            }
            bad = flag;
            o += l;
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
    PyBuffer_Release(&st);
    PyBuffer_Release(&ln);
    return res;
}

static PyMethodDef METHODS[] = {
    {"join_json", join_json, METH_VARARGS, "A string array as the JSON text of a list, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cjson",
                                    "String arrays as JSON text, compiled at install time.", -1, METHODS};

PyMODINIT_FUNC PyInit__cjson(void) { return PyModule_Create(&MODULE); }
