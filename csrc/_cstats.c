/* ggscope._cstats: the statistics kernels, compiled ahead of time.

   Why: numba compiled the same loops on first use -- seconds on a fresh install, and
   about half a second to import on every one-shot command (issue 18) -- while C built
   from source at install time is ready at once and, written with explicit lanes the
   compiler vectorizes, at least as fast.  The build is optional (setup.py): without a
   compiler ggscope falls back to the numba kernels, which stay as the second engine.

   Two parts, each the counterpart of a Python module whose docstring is the contract:

   * ggscope.fused (block decoding fused with the two statistics passes): one decoder
     per layout family, ported from fused.py line for line in ggml's float32 operation
     order (no FMA contraction: setup.py compiles with -ffp-contract=off), and the two
     passes written once as macros.  The family and its constant arguments come from
     ggscope.fused_specs, the one layout table; the C side only knows the families.
   * ggscope.kernels (moments, bin_pairs, count_codes) for decoded float32 arrays and
     16-bit codes.
   * _cstats_z.h: pass two of the upstream nibble layouts, Q4_K/Q5_K, IQ4_NL/IQ4_XS, MXFP4
     and Q8_0 on AVX-512, each group of 32 values decoded once into registers (its values
     and bins from the group's code tables), its pairs counted between the groups' vector
     work; _cstats_zrange.h: pass one's block bounds of the nibble layouts, Q4_K/Q5_K and
     Q8_0 in vector lanes.  Both picked at run time where the CPU has AVX-512.

   One translation unit, split by job (style.md: past ~400 lines) into headers included
   in this order, each with its own contract: _cstats_decode.h (field readers, the
   decoders), _cstats_bounds.h (pass one's block bounds), _cstats_piece.h (the per-piece
   loops both passes share), _cstats_drivers.h (the two passes and their variants),
   _cstats_z.h (with _cstats_zcount.h and _cstats_zrange.h), _cstats_pick.h (the family
   table, the variant pick), _cstats_py.h (the fused passes' entry points); kernels.py's
   loops, count_codes (with _ccount8.h) and the module stay here.

   Every entry point releases the GIL, so ggscope.stats runs chunks on all cores. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* GCC cannot see that every decoder writes its whole block before the passes read it */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "_ctargets.h"
#define INLINE static inline __attribute__((always_inline))
/* the decoders read bytes and write floats: no store of theirs can change a byte they read */
#define IVDEP _Pragma("GCC ivdep")

#define LANES 8
#define NEG_INF_KEY ((int32_t) -0x7F800001)
#define POS_INF_KEY ((int32_t) 0x7F800000)

typedef struct {
    const uint8_t *blocks;
    Py_ssize_t nb;                    /* blocks */
    int bb, n, big;                   /* bytes and elements per block, big-endian file */
    const float *lut;                 /* f16 code -> float32 */
    const float *g1, *g2;             /* the family's tables (fused_specs.tables) */
    int g1c, g2c;                     /* their row lengths */
    int a[10];                        /* the family's constant arguments */
    float kvmax;                      /* table4: the largest |value| of its 16-value table */
    int64_t *scodes;                  /* pass one also counts each block's f16 scale code here */
    int scode_at;                     /* (the field's byte offset), unless scodes is NULL */
} job_t;

/* The f16 scale code of a block as the host reads its two bytes (what numpy's uint16
   view of the field gives ggscope.stats). */
INLINE void count_scale(const job_t *J, const uint8_t *b) {
    if (J->scodes != NULL) {
        uint16_t c;
        memcpy(&c, b + J->scode_at, 2);
        J->scodes[c] += 1;
    }
}

/* Pass one failed at block ``upto`` (a NaN or Inf): take back the scale codes it counted. */
static void uncount_scales(const job_t *J, Py_ssize_t upto) {
    for (Py_ssize_t bi = 0; J->scodes != NULL && bi <= upto && bi < J->nb; bi++) {
        uint16_t c;
        memcpy(&c, J->blocks + bi * J->bb + J->scode_at, 2);
        J->scodes[c] -= 1;
    }
}

#include "_cstats_decode.h"    /* field readers, one decoder per layout family */
#include "_cstats_bounds.h"    /* pass one's block bounds from the scales */
#include "_cstats_piece.h"     /* per-piece bins, pairs, moments, pair lanes */
#include "_cstats_drivers.h"   /* the two passes as macros, one line per variant */
#include "_cstats_z.h"         /* pass two (and, in _cstats_zrange.h, one) on AVX-512 */
#include "_cstats_pick.h"      /* the family table, the variant for a family's arguments */
#include "_cstats_py.h"        /* the fused passes' Python entry points */

/* ------------------------------------------------------------------ kernels.py's loops */

TARGETS static void moments_loop(const float *x, Py_ssize_t n, float shift, double *r) {
    double s1 = 0, s2 = 0, sa = 0;
    int64_t zeros = 0;
    for (Py_ssize_t s = 0; s < n; s += PIECE) {
        const int e = (int) (n - s < PIECE ? n - s : PIECE);
        float a1, a2, aa;
        zeros += piece_moments(x + s, e, shift, &a1, &a2, &aa);
        add_piece(x + s, e, shift, a1, a2, aa, &s1, &s2, &sa);
    }
    r[0] = s1;
    r[1] = s2;
    r[2] = sa;
    r[3] = (double) zeros;
}

static PyObject *moments(PyObject *self, PyObject *args) {
    Py_buffer x;
    double shift;
    if (!PyArg_ParseTuple(args, "y*d", &x, &shift)) return NULL;
    if (x.len % 4) {
        PyBuffer_Release(&x);
        PyErr_SetString(PyExc_ValueError, "x must be float32");
        return NULL;
    }
    double r[4];
    Py_BEGIN_ALLOW_THREADS
    moments_loop(x.buf, x.len / 4, (float) shift, r);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x);
    return Py_BuildValue("(dddL)", r[0], r[1], r[2], (long long) r[3]);
}

TARGETS static int64_t bin_pairs_loop(const float *x, Py_ssize_t n, float lo, float scale, int32_t top, int64_t *table) {
    uint8_t idx[PIECE];
    int64_t lone = 0;
    for (Py_ssize_t s = 0; s < n; s += PIECE) {
        const int e = (int) (n - s < PIECE ? n - s : PIECE);
        piece_idx(x + s, e, lo, scale, top, idx);
        count_pair_idx(idx, e, table);
        if (e % 2) {                    /* a lone last value: (value, bin 0) pair */
            table[idx[e - 1]] += 1;
            lone++;
        }
    }
    return lone;
}

static PyObject *bin_pairs(PyObject *self, PyObject *args) {
    Py_buffer x, tb;
    double lo, scale;
    int top;
    PyObject *idx;
    if (!PyArg_ParseTuple(args, "y*ddiw*O", &x, &lo, &scale, &top, &tb, &idx)) return NULL;
    PyObject *res = NULL;
    if (x.len % 4 || tb.len != 65536 * 8 || top < 0 || top > 255) {
        PyErr_SetString(PyExc_ValueError, "bin_pairs(x float32, lo, scale, top 0..255, table int64[65536], idx)");
    } else {
        int64_t lone;
        Py_BEGIN_ALLOW_THREADS
        lone = bin_pairs_loop(x.buf, x.len / 4, (float) lo, (float) scale, top, tb.buf);
        Py_END_ALLOW_THREADS
        res = PyLong_FromLongLong(lone);
    }
    PyBuffer_Release(&x);
    PyBuffer_Release(&tb);
    return res;
}

/* Repeats among a sample of the codes (kernels._repeats): decides one table or four lanes. */
#define REPEATS(T)                                                                            \
    static int64_t repeats_##T(const T *c, Py_ssize_t n, Py_ssize_t st) {                      \
        int64_t hits = 0;                                                                     \
        for (int w = 0; w < 16; w++) {                                                        \
            const Py_ssize_t s = n > 64 ? (n - 64) * w / 15 : 0;                              \
            for (Py_ssize_t i = s + 3; i < (n < s + 64 ? n : s + 64); i++) {                  \
                const T v = c[i * st];                                                        \
                hits += (v == c[(i - 1) * st]) | (v == c[(i - 2) * st]) | (v == c[(i - 3) * st]); \
            }                                                                                 \
        }                                                                                     \
        return hits;                                                                          \
    }
REPEATS(uint8_t)
REPEATS(uint16_t)

#define COUNT(T, C)                                                                                        \
    static void count_##T##_##C(const T *c, Py_ssize_t n, Py_ssize_t st, C *t0, C *t1, C *t2, C *t3) {       \
        if (t1 == NULL && st == 1) { /* the common case: no stride multiply, the data asked for ahead */  \
            Py_ssize_t i = 0;                                                                              \
            const Py_ssize_t line = 64 / sizeof(T);                                                        \
            for (; i + line <= n; i += line) {                                                             \
                __builtin_prefetch(c + i + 16 * line, 0, 3);                                               \
                for (Py_ssize_t k = 0; k < line; k++) t0[c[i + k]] += 1;                                   \
            }                                                                                              \
            for (; i < n; i++) t0[c[i]] += 1;                                                              \
            return;                                                                                        \
        }                                                                                                  \
        if (t1 == NULL) {                                                                                  \
            for (Py_ssize_t i = 0; i < n; i++) t0[c[i * st]] += 1;                                         \
            return;                                                                                        \
        }                                                                                                  \
        const Py_ssize_t m = n & ~(Py_ssize_t) 3;                                                          \
        for (Py_ssize_t i = 0; i < m; i += 4) {                                                            \
            if (st == 1 && (i & 31) == 0) __builtin_prefetch(c + i + 1024, 0, 3);                           \
            t0[c[i * st]] += 1;                                                                            \
            t1[c[(i + 1) * st]] += 1;                                                                      \
            t2[c[(i + 2) * st]] += 1;                                                                      \
            t3[c[(i + 3) * st]] += 1;                                                                      \
        }                                                                                                  \
        for (Py_ssize_t i = m; i < n; i++) t0[c[i * st]] += 1;                                             \
    }
COUNT(uint8_t, int32_t)
COUNT(uint8_t, int64_t)
COUNT(uint16_t, int32_t)
COUNT(uint16_t, int64_t)

#include "_ccount8.h"
#define COUNT8_MIN ((Py_ssize_t) 1 << 16) /* fewer codes: the flush's scan of 64 KiB costs more than it saves */
#define COUNT8_SPARES 4                   /* byte tables kept between calls: one per thread of two streams */

/* Byte tables between calls, always zeroed (count8 clears what it counted): taking one
   instead of calloc's 64 KiB per call.  Only touched with the GIL held. */
static uint8_t *count8_spare[COUNT8_SPARES];
static int count8_spares;
/* The block length the last call over spread codes ended with: the next call (the next
   window of the same tensor, most often) starts with it instead of looking at its data
   in a small first block again.  Only a speed hint -- any value counts exactly. */
static Py_ssize_t count8_hint;

static uint8_t *count8_take(void) {
    return count8_spares ? count8_spare[--count8_spares] : calloc(65536, 1);
}

static void count8_give(uint8_t *u) {
    if (u != NULL && count8_spares < COUNT8_SPARES)
        count8_spare[count8_spares++] = u;
    else
        free(u);
}

/* count_codes(codes, counts): codes a 1-D uint8/uint16 buffer with any stride, counts a
   C-contiguous int32/int64 (lanes, size) array with size above every code.  Contiguous
   16-bit codes without many repeats, at least COUNT8_MIN of them, are counted through
   byte counters (_ccount8.h); the counts are the same. */
static PyObject *count_codes(PyObject *self, PyObject *args) {
    PyObject *co, *ct;
    if (!PyArg_ParseTuple(args, "OO", &co, &ct)) return NULL;
    Py_buffer c, t;
    if (PyObject_GetBuffer(co, &c, PyBUF_STRIDED_RO | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(ct, &t, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&c);
        return NULL;
    }
    PyObject *res = NULL;
    const int ci = (int) c.itemsize, ti = (int) t.itemsize;
    if (c.ndim != 1 || (ci != 1 && ci != 2) || c.strides[0] % ci || t.ndim != 2 || (ti != 4 && ti != 8)
        || t.shape[1] < (ci == 1 ? 256 : 65536)) {
        PyErr_SetString(PyExc_ValueError, "count_codes(codes uint8/uint16 1-D, counts int32/int64 (lanes, size))");
        goto done;
    }
    {
        const Py_ssize_t n = c.shape[0], st = c.strides[0] / ci, size = t.shape[1];
        const int lanes = t.shape[0] >= 4 && (ci == 1 ? repeats_uint8_t(c.buf, n, st) : repeats_uint16_t(c.buf, n, st)) >= 64;
        char *base = t.buf;
        const Py_ssize_t row = size * ti;
        uint8_t *u8 = ci == 2 && !lanes && st == 1 && n >= COUNT8_MIN ? count8_take() : NULL;
        const Py_ssize_t start = count8_hint;
        Py_ssize_t next = start;
        Py_BEGIN_ALLOW_THREADS
        if (u8 != NULL && ti == 4)
            next = count8_int32_t(c.buf, n, u8, (int32_t *) base, start);
        else if (u8 != NULL)
            next = count8_int64_t(c.buf, n, u8, (int64_t *) base, start);
        else if (ci == 1 && ti == 4)
            count_uint8_t_int32_t(c.buf, n, st, (int32_t *) base, lanes ? (int32_t *) (base + row) : NULL,
                                  (int32_t *) (base + 2 * row), (int32_t *) (base + 3 * row));
        else if (ci == 1)
            count_uint8_t_int64_t(c.buf, n, st, (int64_t *) base, lanes ? (int64_t *) (base + row) : NULL,
                                  (int64_t *) (base + 2 * row), (int64_t *) (base + 3 * row));
        else if (ti == 4)
            count_uint16_t_int32_t(c.buf, n, st, (int32_t *) base, lanes ? (int32_t *) (base + row) : NULL,
                                   (int32_t *) (base + 2 * row), (int32_t *) (base + 3 * row));
        else
            count_uint16_t_int64_t(c.buf, n, st, (int64_t *) base, lanes ? (int64_t *) (base + row) : NULL,
                                   (int64_t *) (base + 2 * row), (int64_t *) (base + 3 * row));
        Py_END_ALLOW_THREADS
        count8_give(u8);
        count8_hint = next;
        Py_INCREF(Py_None);
        res = Py_None;
    }
done:
    PyBuffer_Release(&c);
    PyBuffer_Release(&t);
    return res;
}

static PyMethodDef METHODS[] = {
    {"fused_range", (PyCFunction) (void (*)(void)) fused_range, METH_FASTCALL,
     "Pass one over whole blocks: (min, max, sum, ok)."},
    {"fused_bins", (PyCFunction) (void (*)(void)) fused_bins, METH_FASTCALL,
     "Pass two over whole blocks: (s1, s2, abs_sum, zeros); pairs of bins counted into table."},
    {"fused_decode", (PyCFunction) (void (*)(void)) fused_decode, METH_FASTCALL,
     "fused_decode(family, args, n, block_bytes, blocks, big, lut, g1, g1_cols, g2, g2_cols, out): decode every block"},
    {"fused_supports", (PyCFunction) (void (*)(void)) fused_supports, METH_FASTCALL,
     "Whether a family and its constant arguments have a compiled variant."},
    {"families", families, METH_NOARGS, "Decoder family name -> id."},
    {"vector_bins", (PyCFunction) (void (*)(void)) vector_bins, METH_FASTCALL,
     "vector_bins([on]): whether pass two uses the AVX-512 drivers; turns them on or off first when given."},
    {"moments", moments, METH_VARARGS, "kernels.moments"},
    {"bin_pairs", bin_pairs, METH_VARARGS, "kernels.bin_pairs"},
    {"count_codes", count_codes, METH_VARARGS, "kernels.count_codes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cstats",
                                    "ggscope's statistics kernels, compiled at install time.", -1, METHODS};

PyMODINIT_FUNC PyInit__cstats(void) {
    PyObject *m = PyModule_Create(&MODULE);
    if (m != NULL && (PyModule_AddIntConstant(m, "PIECE", PIECE) < 0
                      || PyModule_AddIntConstant(m, "LANES_BYTES", (long) sizeof(lanes_t)) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
