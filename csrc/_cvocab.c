/* ggscope.rules._cvocab: one pass over a string array's bytes for the vocabulary checks.

   Why: validate's loader rules ask whether two tokens have the same text (llama.cpp's
   vocabulary loader asserts id_to_token.size() == token_to_id.size()) and the values
   rules whether every string is UTF-8.  In Python both decoded every token into a str
   and hashed it: on the 12 real vocabulary files 57 % of validate's time (issue 27,
   item 3).  Here one walk over the file's bytes does both, with no per-token object.

   scan(buf, first, lens, lsize, rel, rsize, width, tail, dups, utf8)
       -> (dup, of, bad): the layout is ggscope.ksy.strings.StringArray's (as in
   ggscope.report._cjson.join_json): ``lens`` holds n unsigned lengths of ``lsize`` bytes
   (1, 2, 4 or 8); string i's ``width``-byte prefix is at ``first + rel[i]`` (``rel``: n
   unsigned offsets of ``rsize`` bytes, 4 or 8) or, when ``rel`` is empty (rsize 0),
   right after element i-1's prefix, string and ``tail`` bytes (the first at ``first``);
   its bytes follow the prefix.
   - ``dup``, ``of``: with ``dups``, the smallest i whose bytes equal those of an earlier
     string and the index of that earlier string (its first occurrence), else -1, -1:
     what a loop filling a map from text to id in order meets first.  Bytes are compared,
     as std::string does in llama.cpp's token_to_id.
   - ``bad``: with ``utf8``, the indices of the strings that are not well-formed UTF-8
     (Python's strict codec: no overlong forms, no surrogates, nothing past U+10FFFF, no
     truncated sequence), as the bytes of int64 values in increasing order.
   A string outside ``buf`` raises ValueError.  The hash is CPython's (SipHash, seeded
   per process, as a set of str uses), so a crafted vocabulary cannot flood the table.
   Memory: 1.5 to 3 slots of 8 bytes per string (fewer than 2**32 strings) and, for a
   contiguous array, each string's offset (4 bytes; 8 when the strings span 4 GiB), plus
   8 bytes per string that is not UTF-8: every count followed is one the file's bytes
   back (each string costs at least its prefix), and the scan stops looking for
   duplicates at the first. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_strarray.h"

/* Python's strict UTF-8 decoder's verdict on one string (RFC 3629 well-formedness) */
static int utf8_ok(const unsigned char *p, uint64_t n) {
    unsigned char any = 0;                         /* all ASCII (most tokens): one OR over the bytes */
    for (uint64_t k = 0; k < n; k++) any |= p[k];
    if (!(any & 0x80)) return 1;
    uint64_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {                          /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        const unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint64_t need;
        unsigned char lo = 0x80, hi = 0xBF;        /* the range of the second byte */
        if (c < 0xC2) return 0;                    /* a continuation byte or an overlong 2-byte form */
        else if (c < 0xE0) need = 1;
        else if (c < 0xF0) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;              /* overlong */
            else if (c == 0xED) hi = 0x9F;         /* surrogates */
        } else if (c < 0xF5) {
            need = 3;
            if (c == 0xF0) lo = 0x90;              /* overlong */
            else if (c == 0xF4) hi = 0x8F;         /* past U+10FFFF */
        } else return 0;
        if (n - i - 1 < need) return 0;
        if (p[i + 1] < lo || p[i + 1] > hi) return 0;
        for (uint64_t k = 2; k <= need; k++)
            if ((p[i + k] & 0xC0) != 0x80) return 0;
        i += need + 1;
    }
    return 1;
}

#define GET(a, wide, i) ((wide) ? ((const uint64_t *) (a))[i] : (uint64_t) ((const uint32_t *) (a))[i])
#define PUT(a, wide, i, v) \
    do { if (wide) ((uint64_t *) (a))[i] = (v); else ((uint32_t *) (a))[i] = (uint32_t) (v); } while (0)

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, rl;
    Py_ssize_t first, lsize, rsize, width, tail;
    int dups, utf8;
    if (!PyArg_ParseTuple(args, "y*ny*ny*nnnpp", &buf, &first, &ln, &lsize, &rl, &rsize, &width, &tail,
                          &dups, &utf8))
        return NULL;
    PyObject *res = NULL;
    void *table = NULL, *offs = NULL;
    int64_t *badv = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0;
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || width < 0 || tail < 0 || first < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "scan(buf, first, lens, lsize, rel, rsize, width >= 0, tail >= 0, dups, utf8)");
        goto done;
    }
    const unsigned char *src = buf.buf;
    const uint64_t size = (uint64_t) buf.len;
    /* every string inside the buffer; how far the last one lies from the first */
    uint64_t span = 0;
    {
        uint64_t p = (uint64_t) first;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : p, l = item(ln.buf, lsize, i);
            if (s > size || (uint64_t) width > size - s || l > size - s - (uint64_t) width) {
                PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", i);
                goto done;
            }
            if (s - (uint64_t) first > span) span = s - (uint64_t) first;
            p = s + (uint64_t) width + l + (uint64_t) tail;
        }
    }
    /* the table: 8-byte slots of (index + 1) below and the hash's top 32 bits above, 0
       empty, at least 1.5 per string; the strings' offsets from first (for a contiguous
       array: a placed one has them in rel) */
    const int wide_o = span >= UINT32_MAX;
    uint64_t slots = 1;
    if (dups && n > 1) {
        if ((uint64_t) n >= UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "scan: 2**32 strings or more");
            goto done;
        }
        while (slots < (uint64_t) n + (uint64_t) n / 2 + 1) slots <<= 1;
        table = calloc(slots, 8);
        if (!rsize) offs = malloc((size_t) n * (wide_o ? 8 : 4));
        if (table == NULL || (!rsize && offs == NULL)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (utf8 && n) {
        badv = malloc(sizeof(int64_t) * (size_t) n);
        if (badv == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_ssize_t nbad = 0, dup = -1, of = -1;
    {
        const uint64_t mask = slots - 1;
        uint64_t at = (uint64_t) first;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : at;
            const uint64_t l = item(ln.buf, lsize, i);
            const unsigned char *p = src + s + width;
            at = s + (uint64_t) width + l + (uint64_t) tail;
            if (badv != NULL && !utf8_ok(p, l)) badv[nbad++] = i;
            if (table == NULL || dup >= 0) {
                if (badv == NULL) break;
                continue;
            }
            if (offs != NULL) PUT(offs, wide_o, i, s - (uint64_t) first);
            const uint64_t h = (uint64_t) _Py_HashBytes(p, (Py_ssize_t) l) ^ (l * 0x9E3779B97F4A7C15ULL);
            const uint64_t tag = h & 0xFFFFFFFF00000000ULL;
            uint64_t *slot = table;
            for (uint64_t k = h & mask;; k = (k + 1) & mask) {
                const uint64_t v = slot[k];
                if (v == 0) {
                    slot[k] = tag | ((uint64_t) i + 1);
                    break;
                }
                if ((v & 0xFFFFFFFF00000000ULL) != tag) continue;
                const Py_ssize_t j = (Py_ssize_t) (v & 0xFFFFFFFFULL) - 1;
                if (item(ln.buf, lsize, j) != l) continue;
                const uint64_t o = (uint64_t) first + (rsize ? item(rl.buf, rsize, j) : GET(offs, wide_o, j));
                if (memcmp(src + o + width, p, (size_t) l) == 0) {
                    dup = i;
                    of = j;
                    break;
                }
            }
        }
    }
    PyObject *bad = PyBytes_FromStringAndSize((const char *) badv, (Py_ssize_t) (nbad * (Py_ssize_t) sizeof(int64_t)));
    if (bad != NULL) res = Py_BuildValue("nnN", dup, of, bad);
done:
    free(table);
    free(offs);
    free(badv);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    return res;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS, "The first duplicate string and the strings that are not UTF-8."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cvocab",
                                    "Vocabulary checks over a string array's bytes, compiled at install time.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cvocab(void) { return PyModule_Create(&MODULE); }
