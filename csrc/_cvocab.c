/* ggscope.rules._cvocab: one pass over a string array's bytes for the vocabulary checks.

   Why: validate's loader rules ask whether two tokens have the same text (llama.cpp's
   vocabulary loader asserts id_to_token.size() == token_to_id.size()) and the values
   rules whether every string is UTF-8: in Python 57 % of validate's time on the 12 real
   vocabulary files (issue 27, item 3).  Here one walk over the file's bytes does both,
   with no per-token object, built for memory: UTF-8 in vectorised runs (_utf8.h), the
   duplicates in a compact table fetched ahead (hash: _seedhash.h).  ``starts`` and
   ``gather`` read the few thousand tokens a rule names without an offset per token.

   scan(buf, first, lens, lsize, rel, rsize, width, tail, dups, utf8[, budget])
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
   - ``budget``: table probes allowed per string before the duplicate search turns to
     sorting (default 16; 0 sorts at once - the tests' way to hold both routes to one
     answer).
   A string outside ``buf`` raises ValueError.

   UTF-8: runs of contiguous strings whose prefix and tail bytes between them are ASCII
   (a GGUF token array: 8-byte lengths below 128) are judged at once - an ASCII byte ends
   every sequence, so a run is valid exactly when each of its strings is; a run that
   fails, or another layout, is judged string by string.
   Duplicates: an open-addressed table of 4-byte slots (index and hash tag) at most 2/3
   full, each slot fetched AHEAD strings early.  Probes are counted: past ``budget`` per
   string - what no seed-blind input reaches - or with 2**24 strings or more, the strings
   are sorted by their bytes instead (n log n comparisons): no input costs quadratic time.
   Memory: 6 bytes per string for the table, 4 for each string's offset (8 when the
   strings span 4 GiB) where ``rel`` does not give it; the sort 4 per string; 8 per string
   that is not UTF-8: every count followed is one the file's bytes back (each string costs
   at least its prefix), and the search stops at the first duplicate. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_seedhash.h"
#include "_strarray.h"
#include "_utf8.h"

/* --- the sort (past the probe budget, or 2**24 strings) ----------------------------------- */

/* qsort's comparison has no context argument in C11: the array being sorted, set by
   first_dup_sorted while it holds the GIL (nothing here releases it). */
static struct {
    const unsigned char *src;
    const void *lens, *offs;
    Py_ssize_t lsize, osize;
    uint64_t first, width;
} S;


static int by_bytes(const void *pa, const void *pb) {
    const uint32_t i = *(const uint32_t *) pa, j = *(const uint32_t *) pb;
    const uint64_t li = item(S.lens, S.lsize, i), lj = item(S.lens, S.lsize, j);
    const int c = memcmp(S.src + S.first + item(S.offs, S.osize, i) + S.width,
                         S.src + S.first + item(S.offs, S.osize, j) + S.width, (size_t) (li < lj ? li : lj));
    if (c) return c;
    if (li != lj) return li < lj ? -1 : 1;
    return i < j ? -1 : i > j;                     /* equal strings in index order */
}

/* the first duplicate by sorting the indices by (bytes, index): in each run of equal
   strings the first is the earliest and the second the first to repeat it; the answer is
   the run whose second index is smallest.  Returns 0, or -1 when out of memory. */
static int first_dup_sorted(const unsigned char *src, uint64_t first, const void *lens, Py_ssize_t lsize,
                            const void *offs, Py_ssize_t osize, uint64_t width, Py_ssize_t n, Py_ssize_t *dup,
                            Py_ssize_t *of) {
    uint32_t *order = malloc(sizeof(uint32_t) * (size_t) n);
    if (order == NULL) return -1;
    for (Py_ssize_t i = 0; i < n; i++) order[i] = (uint32_t) i;
    S.src = src, S.lens = lens, S.offs = offs, S.lsize = lsize, S.osize = osize, S.first = first, S.width = width;
    qsort(order, (size_t) n, sizeof(uint32_t), by_bytes);
    *dup = *of = -1;
    for (Py_ssize_t k = 1; k < n; k++) {
        const uint32_t i = order[k - 1], j = order[k];
        const uint64_t l = item(lens, lsize, i);
        if (item(lens, lsize, j) != l || memcmp(src + first + item(offs, osize, i) + width,
                                                 src + first + item(offs, osize, j) + width, (size_t) l))
            continue;
        Py_ssize_t head = k - 1;                   /* k starts or continues a run: find its head */
        while (head > 0) {
            const uint32_t h = order[head - 1];
            if (item(lens, lsize, h) != l || memcmp(src + first + item(offs, osize, h) + width,
                                                     src + first + item(offs, osize, i) + width, (size_t) l))
                break;
            head--;
        }
        if (head == k - 1 && (*dup < 0 || (Py_ssize_t) j < *dup)) {     /* the run's second */
            *dup = j;
            *of = order[head];
        }
    }
    free(order);
    return 0;
}

/* --- the scan ------------------------------------------------------------------------------ */

#define AHEAD 8                                    /* strings hashed (and slots fetched) ahead */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch((p), 1)
#else
#define PREFETCH(p) ((void) (p))
#endif

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, rl;
    Py_ssize_t first, lsize, rsize, width, tail, budget = 16;
    int dups, utf8;
    if (!PyArg_ParseTuple(args, "y*ny*ny*nnnpp|n", &buf, &first, &ln, &lsize, &rl, &rsize, &width, &tail,
                          &dups, &utf8, &budget))
        return NULL;
    PyObject *res = NULL;
    uint32_t *table = NULL;
    void *offs = NULL;
    int64_t *badv = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0;
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || width < 0 || tail < 0 || first < 0 || budget < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "scan(buf, first, lens, lsize, rel, rsize, width >= 0, tail >= 0, dups, utf8[, budget >= 0])");
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
    Py_ssize_t nbad = 0, dup = -1, of = -1;
    /* UTF-8: runs of strings at once - each run from a string's first byte to a later
       string's last, with only ASCII prefix and tail bytes between them - and string by
       string only when a run fails */
    if (utf8 && n) {
        int ok = 1;
        if (rsize || width + tail == 0) {
            ok = 0;
        } else {
            uint64_t at = (uint64_t) first, run = 0, run_end = 0;
            int open = 0, tail_clean = 1;
            for (Py_ssize_t i = 0; i < n && ok; i++) {
                const uint64_t s = at, l = item(ln.buf, lsize, i);
                int clean = tail_clean;
                if (width == 8) {
                    clean = clean && !(r8(src + s) & 0x8080808080808080ULL);
                } else {
                    for (Py_ssize_t k = 0; k < width; k++) clean = clean && !(src[s + k] & 0x80);
                }
                if (open && !clean) {                          /* close the run before string i */
                    ok = utf8_span(src + run, run_end - run);
                    open = 0;
                }
                if (!open) {
                    run = s + (uint64_t) width;
                    open = 1;
                }
                run_end = s + (uint64_t) width + l;
                at = run_end + (uint64_t) tail;
                tail_clean = 1;
                if ((uint64_t) tail > size - run_end) {
                    tail_clean = 0;                            /* past the buffer: not read */
                } else {
                    for (Py_ssize_t k = 0; k < tail; k++) tail_clean = tail_clean && !(src[run_end + k] & 0x80);
                }
            }
            if (ok && open) ok = utf8_span(src + run, run_end - run);
        }
        if (!ok) {
            badv = malloc(sizeof(int64_t) * (size_t) n);
            if (badv == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            uint64_t at = (uint64_t) first;
            for (Py_ssize_t i = 0; i < n; i++) {
                const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : at;
                const uint64_t l = item(ln.buf, lsize, i);
                at = s + (uint64_t) width + l + (uint64_t) tail;
                if (!utf8_ok(src + s + width, l)) badv[nbad++] = i;
            }
        }
    }
    if (dups && n > 1) {
        if ((uint64_t) n >= UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "scan: 2**32 strings or more");
            goto done;
        }
        /* each string's offset from first: rel's, or computed here for a contiguous array */
        const int wide = rsize ? rsize == 8 : span >= UINT32_MAX;
        const void *where = rsize ? rl.buf : NULL;
        const Py_ssize_t osize = rsize ? rsize : wide ? 8 : 4;
        if (!rsize) {
            offs = malloc((size_t) n * (wide ? 8 : 4));
            if (offs == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            where = offs;
        }
        int sorted_after = 0;
        const int by_table = budget > 0 && (uint64_t) n < (1u << 24) - 1;
        if (by_table) {
            /* slots: (index + 1) in the low ibits, the hash's tag above; 0 is empty */
            int ibits = 1;
            while (((uint64_t) 1 << ibits) <= (uint64_t) n) ibits++;
            const uint32_t imask = (uint32_t) (((uint64_t) 1 << ibits) - 1);
            const uint64_t slots = (uint64_t) n + (uint64_t) n / 2 + 1;
            table = calloc((size_t) slots, sizeof(uint32_t));
            if (table == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            uint64_t ring[AHEAD], probes = 0;
            const uint64_t allowed = (uint64_t) budget * (uint64_t) n;
            uint64_t at = (uint64_t) first;
            Py_ssize_t hashed = 0;
            /* hash string k (in order), note its offset, fetch its slot */
#define HASH_NEXT()                                                                                          \
            do {                                                                                             \
                const uint64_t s_ = rsize ? (uint64_t) first + item(rl.buf, rsize, hashed) : at;             \
                const uint64_t l_ = item(ln.buf, lsize, hashed);                                             \
                if (!rsize) {                                                                                \
                    if (wide) ((uint64_t *) offs)[hashed] = s_ - (uint64_t) first;                           \
                    else ((uint32_t *) offs)[hashed] = (uint32_t) (s_ - (uint64_t) first);                   \
                    at = s_ + (uint64_t) width + l_ + (uint64_t) tail;                                       \
                }                                                                                            \
                const uint64_t h_ = hash_bytes(src + s_ + width, l_);                                        \
                ring[hashed % AHEAD] = h_;                                                                   \
                PREFETCH(table + (((h_ >> 32) * slots) >> 32));                                              \
                hashed++;                                                                                    \
            } while (0)
            while (hashed < n && hashed < AHEAD) HASH_NEXT();
            for (Py_ssize_t i = 0; i < n; i++) {
                const uint64_t h = ring[i % AHEAD];
                if (hashed < n) HASH_NEXT();
                const uint32_t tag = (uint32_t) h & ~imask;
                const uint64_t l = item(ln.buf, lsize, i);
                const unsigned char *p = src + first + item(where, osize, i) + width;
                uint64_t k = ((h >> 32) * slots) >> 32;
                for (;;) {
                    const uint32_t v = table[k];
                    if (v == 0) {
                        table[k] = tag | (uint32_t) (i + 1);
                        break;
                    }
                    if (++probes > allowed) break;
                    if ((v & ~imask) == tag) {
                        const uint32_t j = (v & imask) - 1;
                        if (item(ln.buf, lsize, j) == l
                            && memcmp(src + first + item(where, osize, j) + width, p, (size_t) l) == 0) {
                            dup = i;
                            of = j;
                            break;
                        }
                    }
                    if (++k == slots) k = 0;
                }
                if (dup >= 0 || probes > allowed) break;
            }
#undef HASH_NEXT
            if (probes > allowed) {                /* the hash met an input it spreads badly: sort */
                sorted_after = 1;
                dup = of = -1;
                for (; hashed < n && !rsize; hashed++) {
                    const uint64_t l = item(ln.buf, lsize, hashed);
                    if (wide) ((uint64_t *) offs)[hashed] = at - (uint64_t) first;
                    else ((uint32_t *) offs)[hashed] = (uint32_t) (at - (uint64_t) first);
                    at += (uint64_t) width + l + (uint64_t) tail;
                }
            }
        } else if (!rsize) {
            uint64_t at = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (wide) ((uint64_t *) offs)[i] = at;
                else ((uint32_t *) offs)[i] = (uint32_t) at;
                at += (uint64_t) width + item(ln.buf, lsize, i) + (uint64_t) tail;
            }
        }
        if (!by_table || sorted_after) {
            if (first_dup_sorted(src, (uint64_t) first, ln.buf, lsize, where, osize, (uint64_t) width, n, &dup,
                                 &of)) {
                PyErr_NoMemory();
                goto done;
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

/* starts(first, lens, lsize, rel, rsize, width, tail, ids) -> bytes: the absolute offset
   of the prefix of each string ``ids`` names (int64, nondecreasing, each below n), as
   int64 bytes - one walk over the lengths up to the last id, no array of every offset.
   Reads no string byte. */
static PyObject *starts(PyObject *self, PyObject *args) {
    Py_buffer ln, rl, ids;
    Py_ssize_t first, lsize, rsize, width, tail;
    if (!PyArg_ParseTuple(args, "ny*ny*nnny*", &first, &ln, &lsize, &rl, &rsize, &width, &tail, &ids)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0, k = ids.len / 8;
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || ids.len % 8 || width < 0 || tail < 0 || first < 0) {
        PyErr_SetString(PyExc_ValueError, "starts(first, lens, lsize, rel, rsize, width >= 0, tail >= 0, ids)");
        goto done;
    }
    res = PyBytes_FromStringAndSize(NULL, k * 8);
    if (res == NULL) goto done;
    int64_t *out = (int64_t *) PyBytes_AS_STRING(res);
    const int64_t *want = ids.buf;
    uint64_t at = (uint64_t) first;
    Py_ssize_t i = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        if (want[j] < 0 || want[j] >= n || (j && want[j] < want[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "starts: ids must be nondecreasing indices of the array");
            Py_CLEAR(res);
            goto done;
        }
        if (rsize) {
            out[j] = (int64_t) ((uint64_t) first + item(rl.buf, rsize, want[j]));
            continue;
        }
        for (; i < want[j]; i++) at += (uint64_t) width + item(ln.buf, lsize, i) + (uint64_t) tail;
        out[j] = (int64_t) at;
    }
done:
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    PyBuffer_Release(&ids);
    return res;
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

static PyMethodDef METHODS[] = {
    {"gather", gather, METH_VARARGS, "Strings at given offsets, joined by newlines."},
    {"scan", scan, METH_VARARGS, "The first duplicate string and the strings that are not UTF-8."},
    {"starts", starts, METH_VARARGS, "The offsets of the prefixes of the strings at sorted indices."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cvocab",
                                    "Vocabulary checks over a string array's bytes, compiled at install time.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cvocab(void) {
    hash_seed();
    return PyModule_Create(&MODULE);
}
