/* ggscope.rules._cvocab: one pass over a string array's bytes for the vocabulary checks.

   Why: validate's loader rules ask whether two tokens have the same text (llama.cpp's
   vocabulary loader asserts id_to_token.size() == token_to_id.size()) and the values
   rules whether every string is UTF-8: in Python 57 % of validate's time on the 12 real
   vocabulary files (issue 27, item 3).  Here one walk over the file's bytes does both,
   with no per-token object, built for memory: each string's bounds, offset, UTF-8 run
   and hash (_utf8.h, _seedhash.h), the duplicates in a bucketed table fetched ahead
   (_dupfind.h).  ``gather`` copies the few thousand tokens a rule names
   (their offsets from ggscope.ksy.strings.StringArray.starts) in one call;
   ``gather_ids`` the same from their ids, finding their places in its own sum over the
   lengths (a vocabulary's special tokens: 2,400 of 102,400 in 0.03 ms, where the offsets
   through numpy took 0.3) - both in _gather.h.

   scan(buf, first, lens, lsize, rel, rsize, width, tail, dups, utf8[, budget, simd])
       -> (dup, of, bad): the layout is ggscope.ksy.strings.StringArray's (as in
   ggscope.report._cjson.join_json): ``lens`` holds n unsigned lengths of ``lsize`` bytes
   (1, 2, 4 or 8); string i's ``width``-byte prefix is at ``first + rel[i]`` (``rel``: n
   unsigned offsets of ``rsize`` bytes, 4 or 8) or, when ``rel`` is empty (rsize 0),
   right after element i-1's prefix, string and ``tail`` bytes (the first at ``first``),
   the prefix holding the string's length (either byte order: what the parser read);
   its bytes follow the prefix.
   - ``dup``, ``of``: with ``dups``, the smallest i whose bytes equal those of an earlier
     string and the index of that earlier string (its first occurrence), else -1, -1:
     what a loop filling a map from text to id in order meets first.  Bytes are compared,
     as std::string does in llama.cpp's token_to_id.
   - ``bad``: with ``utf8``, the indices of the strings that are not well-formed UTF-8
     (Python's strict codec: no overlong forms, no surrogates, nothing past U+10FFFF, no
     truncated sequence), as the bytes of int64 values in increasing order.
   - ``budget``: table buckets the duplicate search may visit in all before it turns to
     sorting (default -1: 16 per string; 0 sorts at once, n // 2 halfway - the tests'
     ways to hold every route to one answer); ``simd``: 2 (default) the widest vectors
     the CPU has, 1 at most AVX2, 0 none (SSE2 or a loop for a bucket, the scalar hash
     and UTF-8 check) - the tests' ways to every route, each giving the same answer.
   A string outside ``buf`` raises ValueError.

   UTF-8: runs of contiguous strings whose prefix and tail bytes between them are ASCII
   (a GGUF token array: 8-byte lengths below 128) are judged at once - an ASCII byte ends
   every sequence, so a run is valid exactly when each of its strings is; when a run
   fails, or in another layout, every string is judged alone.  A prefix is ASCII exactly
   when each byte of its length is below 0x80 (either byte order): no prefix is read.
   With no tail and no duplicate search (a merges array) the lengths' sum bounds the
   strings and the runs are found from the lengths alone: no byte is read but the runs'.
   Duplicates: each string's bucket fetched AHEAD strings early, its eight slots compared
   with the string's tag in one 32-byte step where the CPU has AVX2, else two 16-byte
   steps; the bucket and the tag are taken from the hash when it is, so the step that
   asks the table does no arithmetic on it.  GGUF's layout is walked in blocks of tight
   loops (_cvocab_blocks.h: 8.9 -> 4.4 ns a token on bert-bge's vocabulary), any other
   one string by string (_cvocab_walk.h).  Bucket visits are counted: past ``budget`` -
   what no seed-blind input reaches - or with 2**24 strings or more, the strings are
   sorted by their bytes instead (n log n comparisons): no input costs quadratic time.
   Memory: 6 bytes per string for the table, 4 for each string's offset (8 when the
   buffer past ``first`` spans 4 GiB) where ``rel`` does not give it; the sort 4 per
   string; 8 per string when one is not UTF-8; 48 KB more for GGUF's block walk: every
   count followed is one the file's bytes back (each string costs at least
   its prefix), and the search stops at the first duplicate. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_cvocab_blocks.h"

/* --- memory kept between calls ------------------------------------------------------------ */

/* One scan's table and offsets, kept for the next scan (the next file of a folder, of a
   server): a new block of a few MB is new pages, each faulted in at first touch - 164
   faults, 0.3 of 1.4 ms, for 102,400 tokens on this machine's VM - where the kept one is
   only cleared.  At most KEEP bytes stay between calls; a larger need is allocated and
   freed per call.  Touched only with the GIL held (scan never releases it). */
#define KEEP ((size_t) 16 << 20)
static void *KEPT;
static size_t KEPT_SIZE;

/* size bytes, not cleared: the kept block when it is large enough, else a new one - kept
   in its place when size <= KEEP, else the caller's to free (*owned) */
static void *scratch(size_t size, int *owned) {
    *owned = 0;
    if (size <= KEPT_SIZE) return KEPT;
    void *p = malloc(size);
    if (p == NULL || size > KEEP) {
        *owned = p != NULL;
        return p;
    }
    free(KEPT);
    KEPT = p;
    KEPT_SIZE = size;
    return p;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, rl;
    Py_ssize_t first, lsize, rsize, width, tail, budget = -1;
    int dups, utf8, simd = 2;
    if (!PyArg_ParseTuple(args, "y*ny*ny*nnnpp|ni", &buf, &first, &ln, &lsize, &rl, &rsize, &width, &tail,
                          &dups, &utf8, &budget, &simd))
        return NULL;
    PyObject *res = NULL;
    int64_t *badv = NULL;
    void *mem = NULL;                              /* a block scratch did not keep */
    int owned = 0;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0;
    Walk w = {.src = buf.buf, .size = (uint64_t) buf.len, .first = (uint64_t) first, .width = (uint64_t) width,
              .tail = (uint64_t) tail, .lens = ln.buf, .rel = rl.buf, .lsize = lsize, .rsize = rsize, .n = n,
              .dup = -1, .of = -1, .utf8 = utf8 && n, .outside = -1};
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || width < 0 || tail < 0 || first < 0 || budget < -1 || simd < 0 || simd > 2) {
        PyErr_SetString(PyExc_ValueError, "scan(buf, first, lens, lsize, rel, rsize, width >= 0, tail >= 0, dups, "
                                          "utf8[, budget >= -1, simd 0..2])");
        goto done;
    }
    UTF8_LEVEL = simd;                             /* this call's (the GIL is held throughout) */
    dups = dups && n > 1;
    if (dups && (uint64_t) n >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "scan: 2**32 strings or more");
        goto done;
    }
    if (dups && !rsize)                            /* each string's offset from first */
        w.wide = (uint64_t) buf.len - (uint64_t) (first < buf.len ? first : buf.len) >= UINT32_MAX;
    const size_t offs_bytes = dups && !rsize ? (size_t) n * (w.wide ? 8 : 4) : 0;
    size_t table_bytes = 0;
    if (dups && budget != 0 && (uint64_t) n < (1u << 24) - 1) {
        /* slots: (index + 1) in the low ibits, the hash's tag above; 0 is empty */
        int ibits = 1;
        while (((uint64_t) 1 << ibits) <= (uint64_t) n) ibits++;
        w.imask = (uint32_t) (((uint64_t) 1 << ibits) - 1);
        w.slots = ((uint64_t) n + (uint64_t) n / 2) / BUCKET + 1;        /* buckets: at most 2/3 full */
        w.allowed = budget < 0 ? 16 * (uint64_t) n : (uint64_t) budget;
        table_bytes = (size_t) w.slots * BUCKET * sizeof(uint32_t);
    }
    /* GGUF's layout with a table to fill: the block walk, and its buffers (_cvocab_blocks.h) */
    const size_t work_bytes = table_bytes && width == 8 && !rsize && !tail ? BLOCK_WORK * sizeof(uint64_t) : 0;
    if (offs_bytes || table_bytes) {               /* the table (32-byte aligned, cleared), the offsets, the work */
        char *base = scratch(table_bytes + offs_bytes + work_bytes + 64, &owned);
        if (base == NULL) goto nomem;
        if (owned) mem = base;
        char *at = (char *) (((uintptr_t) base + 31) & ~(uintptr_t) 31);          /* a bucket in one line */
        if (table_bytes) {
            w.table = memset(at, 0, table_bytes);
            at += table_bytes;
        }
        if (offs_bytes) w.offs = at;
        if (work_bytes) w.work = (uint64_t *) (((uintptr_t) at + offs_bytes + 31) & ~(uintptr_t) 31);
    }
    if (dups && !table_bytes) w.sort = 1;          /* budget 0, or 2**24 strings: sort at once */
    const int alone = w.utf8 && !dups && !rsize && !tail && width;
    const uint64_t total = alone ? lens_sum(ln.buf, lsize, 0, n) : 0;     /* all strings' bytes; past 2**64: refused */
    if (alone && (uint64_t) first <= w.size && (uint64_t) n <= (w.size - (uint64_t) first) / (uint64_t) width
        && total <= w.size - (uint64_t) first - (uint64_t) n * (uint64_t) width) {
        /* UTF-8 alone of strings back to back, every one inside: no byte read but the runs' */
        w.ok = utf8_runs(w.src, (uint64_t) first, ln.buf, lsize, 0, n, (uint64_t) width);
    } else {
        walk_any(&w, simd);
    }
    if (w.outside >= 0) {
        PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", w.outside);
        goto done;
    }
    if (w.sort) {
        w.dup = w.of = -1;
        if (first_dup_sorted(w.src, w.first, ln.buf, lsize, rsize ? rl.buf : w.offs, rsize ? rsize : w.wide ? 8 : 4,
                             w.width, n, &w.dup, &w.of))
            goto nomem;
    }
    Py_ssize_t nbad = 0;
    if (w.utf8 && !w.ok) {                         /* string by string */
        if ((badv = malloc(sizeof(int64_t) * (size_t) n)) == NULL) goto nomem;
        uint64_t at = w.first;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t s = rsize ? w.first + item(rl.buf, rsize, i) : at, l = item(ln.buf, lsize, i);
            at = s + w.width + l + w.tail;
            if (!utf8_ok(w.src + s + w.width, l)) badv[nbad++] = i;
        }
    }
    PyObject *bad = PyBytes_FromStringAndSize((const char *) badv, (Py_ssize_t) (nbad * (Py_ssize_t) sizeof(int64_t)));
    if (bad != NULL) res = Py_BuildValue("nnN", w.dup, w.of, bad);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(mem);
    free(badv);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    return res;
}

static PyMethodDef METHODS[] = {
    {"gather", gather, METH_VARARGS, "Strings at given offsets, joined by newlines."},
    {"gather_ids", gather_ids, METH_VARARGS, "Strings of a contiguous array by ascending ids, joined by newlines."},
    {"scan", scan, METH_VARARGS, "The first duplicate string and the strings that are not UTF-8."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cvocab",
                                    "Vocabulary checks over a string array's bytes, compiled at install time.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cvocab(void) {
    hash_seed();
    return PyModule_Create(&MODULE);
}
