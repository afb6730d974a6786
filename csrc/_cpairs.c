/* ggscope._cpairs: the sums behind ``diff``'s error metrics, compiled ahead of time.

   Why: ggscope.diff_sums compiled its numba loops on the first ``ggscope diff`` --
   seconds on a fresh install, and numba's import (about half a second) on every run
   (issue 18: every command starting at once).  The same pass built by the C compiler
   at install time is ready at once.  The build is optional (setup.py): without a
   compiler ggscope.diff_sums keeps its numba loops, which stay as the second engine.

   The contract is ggscope.diff_sums' docstring.  One pass over L1-sized pieces: each
   piece goes first through a loop whose float64 sums may be reassociated (so the
   compiler vectorizes it) and which also takes max |b-a| as an integer max of the bit
   patterns of |b-a| (exact, vectorizable, and never fooled by a NaN: a NaN's pattern
   lies above every finite one).  That max also proves the piece finite: a NaN or Inf
   in a pair makes b-a NaN or Inf (float32 values never overflow a float64 difference;
   a float64 overflow of two finite values also fails the proof, and the exact loop
   then decides).  A piece that is not proved finite is summed again by the plain loop
   that leaves non-finite pairs out and counts them -- numba's _masked_sums.

   Sums are float64 over the four dtype pairs (float32 or float64 on each side, as
   ``dequantize`` gives them); the entry point releases the GIL, so ggscope.diff's
   threads run chunks on all cores. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_ctargets.h"
/* Only the float64 sums of a piece may be reassociated (REASSOC, as numba's fastmath
   loop was): they are the sums of a piece in any order.  NaN and Inf keep their meaning
   (no finite-math), which the proof of finiteness relies on. */

#define INF_BITS ((int64_t) 0x7FF0000000000000LL)

typedef struct {
    double aa, bb, ab, dd, mx;
    int64_t n, bad, mismatch;
} sums_t;

/* The fast loop over one piece: adds the piece's sums to S; returns 0 (S untouched)
   when the piece is not proved finite.  Four pairs of streams (quarters of the piece)
   would not help: the loop is bound by memory, not by the latency of its adds. */
#define FAST(NAME, TX, TY)                                                                            \
    TARGETS REASSOC static int fast_##NAME(const TX *restrict x, const TY *restrict y, int e,         \
                                            sums_t *S) {                                             \
        double aa = 0.0, bb = 0.0, ab = 0.0, dd = 0.0;                                               \
        int64_t mk = 0;                                                                              \
        for (int j = 0; j < e; j++) {                                                                \
            const double a = (double) x[j], b = (double) y[j], d = b - a, t = fabs(d);               \
            int64_t k;                                                                               \
            memcpy(&k, &t, 8);                                                                       \
            aa += a * a;                                                                             \
            bb += b * b;                                                                             \
            ab += a * b;                                                                             \
            dd += d * d;                                                                             \
            mk = k > mk ? k : mk;                                                                    \
        }                                                                                            \
        if (mk >= INF_BITS) return 0;                                                                \
        double m;                                                                                    \
        memcpy(&m, &mk, 8);                                                                          \
        S->aa += aa;                                                                                 \
        S->bb += bb;                                                                                 \
        S->ab += ab;                                                                                 \
        S->dd += dd;                                                                                 \
        S->mx = m > S->mx ? m : S->mx;                                                               \
        S->n += e;                                                                                   \
        return 1;                                                                                    \
    }

/* The exact loop (numba's _masked_sums): pairs with a NaN or Inf are left out of the
   sums and counted; a mismatch is a pair that is not the same NaN/Inf on both sides. */
#define MASKED(NAME, TX, TY)                                                                          \
    static void masked_##NAME(const TX *x, const TY *y, int e, sums_t *S) {                           \
        for (int j = 0; j < e; j++) {                                                                \
            const double a = (double) x[j], b = (double) y[j];                                       \
            if (isfinite(a) && isfinite(b)) {                                                        \
                const double d = b - a, t = fabs(d);                                                 \
                S->aa += a * a;                                                                      \
                S->bb += b * b;                                                                      \
                S->ab += a * b;                                                                      \
                S->dd += d * d;                                                                      \
                S->mx = t > S->mx ? t : S->mx;                                                       \
                S->n += 1;                                                                           \
            } else {                                                                                 \
                S->bad += 1;                                                                         \
                if (!((isnan(a) && isnan(b)) || a == b)) S->mismatch += 1;                           \
            }                                                                                        \
        }                                                                                            \
    }

#define PAIRS(NAME, TX, TY)                                                                           \
    FAST(NAME, TX, TY)                                                                                \
    MASKED(NAME, TX, TY)                                                                              \
    static void pairs_##NAME(const void *xv, const void *yv, Py_ssize_t n, sums_t *S) {              \
        const TX *x = xv;                                                                            \
        const TY *y = yv;                                                                            \
        for (Py_ssize_t s = 0; s < n; s += PIECE) {                                                  \
            const int e = (int) (n - s < PIECE ? n - s : PIECE);                                     \
            if (!fast_##NAME(x + s, y + s, e, S)) masked_##NAME(x + s, y + s, e, S);                  \
        }                                                                                            \
    }

PAIRS(ff, float, float)
PAIRS(fd, float, double)
PAIRS(df, double, float)
PAIRS(dd, double, double)

/* 4 for native float32, 8 for native float64, else 0. */
static int float_kind(const Py_buffer *b) {
    const char *f = b->format;
    if (f == NULL) return 0;
    if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>')) f++;
    if (f[0] == 'f' && f[1] == '\0' && b->itemsize == 4) return 4;
    if (f[0] == 'd' && f[1] == '\0' && b->itemsize == 8) return 8;
    return 0;
}

/* pair_sums(x, y) -> (aa, bb, ab, dd, max_abs, n_finite, n_nonfinite, n_mismatch) for
   two C-contiguous native float32/float64 buffers of one length. */
static PyObject *pair_sums(PyObject *self, PyObject *args) {
    PyObject *xo, *yo;
    if (!PyArg_ParseTuple(args, "OO", &xo, &yo)) return NULL;
    Py_buffer x, y;
    if (PyObject_GetBuffer(xo, &x, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(yo, &y, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&x);
        return NULL;
    }
    PyObject *res = NULL;
    const int kx = float_kind(&x), ky = float_kind(&y);
    if (kx == 0 || ky == 0) {
        PyErr_SetString(PyExc_TypeError, "pair_sums(x, y): x and y must be native float32 or float64");
    } else if (x.len / kx != y.len / ky) {
        PyErr_Format(PyExc_ValueError, "chunks differ in length: %zd and %zd", x.len / kx, y.len / ky);
    } else {
        const Py_ssize_t n = x.len / kx;
        sums_t S = {0};
        Py_BEGIN_ALLOW_THREADS
        if (kx == 4 && ky == 4) pairs_ff(x.buf, y.buf, n, &S);
        else if (kx == 4) pairs_fd(x.buf, y.buf, n, &S);
        else if (ky == 4) pairs_df(x.buf, y.buf, n, &S);
        else pairs_dd(x.buf, y.buf, n, &S);
        Py_END_ALLOW_THREADS
        res = Py_BuildValue("(dddddLLL)", S.aa, S.bb, S.ab, S.dd, S.mx, (long long) S.n, (long long) S.bad,
                            (long long) S.mismatch);
    }
    PyBuffer_Release(&x);
    PyBuffer_Release(&y);
    return res;
}

static PyMethodDef METHODS[] = {
    {"pair_sums", pair_sums, METH_VARARGS,
     "diff_sums.pair_sums: (aa, bb, ab, dd, max_abs, n_finite, n_nonfinite, n_mismatch)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cpairs",
                                    "ggscope diff's pair sums, compiled at install time.", -1, METHODS};

PyMODINIT_FUNC PyInit__cpairs(void) { return PyModule_Create(&MODULE); }
