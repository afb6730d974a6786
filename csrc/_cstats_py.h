/* The Python entry points of the fused passes (included by _cstats.c after _cstats_pick.h,
   before kernels.py's loops and the method table).

   Why a file of its own: _cstats.c is split by job; the bindings parse the arguments,
   hold and release the buffers and check them against what the decoders can index
   (tables_ok, setup_job: a caller's mistake or a hostile block is a ValueError, never a
   read past a buffer), then run a pass with the GIL released.  Contract: fused_supports,
   fused_range, fused_bins, fused_decode, vector_bins and families are the module
   functions their comments and ggscope.stats.cstats describe, each returning a value
   or NULL with a Python exception set. */
#ifndef GGSCOPE_CSTATS_PY_H
#define GGSCOPE_CSTATS_PY_H

/* ------------------------------------------------------------------ argument handling */

typedef struct {
    Py_buffer blocks, lut, g1, g2;
    int held;
} bufs_t;

static void release(bufs_t *B) {
    if (B->held & 1) PyBuffer_Release(&B->blocks);
    if (B->held & 2) PyBuffer_Release(&B->lut);
    if (B->held & 4) PyBuffer_Release(&B->g1);
    if (B->held & 8) PyBuffer_Release(&B->g2);
    B->held = 0;
}

/* Whether g1 and g2 (in floats) hold every row the family's decoder can index: the
   indices come from the file's bytes, so the table sizes bound them. */
static int tables_ok(int fam, const job_t *J, Py_ssize_t g1, Py_ssize_t g2) {
    const int kind = J->a[0];
    Py_ssize_t r1 = 0, c1 = 0, r2 = 0, c2 = 0;  /* rows and columns needed */
    switch (fam) {
    case 8: r1 = 16, c1 = 1, r2 = kind >= 2 ? 256 : 0, c2 = 1; break;
    case 9: r1 = kind == 0 ? 256 * 128 : kind == 1 ? 512 * 128 : 1024, c1 = 8, r2 = kind == 2 ? 256 : 0, c2 = 8; break;
    case 10: r1 = kind == 0 ? 256 : 512, c1 = 4, r2 = kind == 0 ? 128 : 256, c2 = 8; break;
    case 11: r1 = 4096, c1 = 8; break;
    default: return 1;
    }
    if (fam == 8) return g1 >= r1 && g2 >= r2;      /* one row each, read by value */
    return J->g1c >= c1 && g1 >= r1 * J->g1c && (r2 == 0 || (J->g2c >= c2 && g2 >= r2 * J->g2c));
}

/* Fills J from (family, args, n, block_bytes, blocks, big, lut, g1, g1_cols, g2, g2_cols) and picks
   the family's variant (rf, bf). */
static int setup_job(PyObject *const *argv, job_t *J, bufs_t *B, int *fam, range_fn *rf, bins_fn *bf) {
    memset(J, 0, sizeof *J);
    *fam = (int) PyLong_AsLong(argv[0]);
    if (*fam == -1 && PyErr_Occurred()) return 0;
    if (*fam < 0 || *fam >= N_FAMILIES) {
        PyErr_SetString(PyExc_ValueError, "unknown decoder family");
        return 0;
    }
    PyObject *args = argv[1];
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != FAMILIES[*fam].nargs) {
        PyErr_Format(PyExc_ValueError, "%s takes %d constant arguments", FAMILIES[*fam].name, FAMILIES[*fam].nargs);
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        J->a[i] = (int) PyLong_AsLong(PyTuple_GET_ITEM(args, i));
        if (J->a[i] == -1 && PyErr_Occurred()) return 0;
    }
    J->n = (int) PyLong_AsLong(argv[2]);
    J->bb = (int) PyLong_AsLong(argv[3]);
    J->big = PyObject_IsTrue(argv[5]);
    J->g1c = (int) PyLong_AsLong(argv[8]);
    J->g2c = (int) PyLong_AsLong(argv[10]);
    if (PyErr_Occurred()) return 0;
    if (J->n <= 0 || J->n > 256 || J->n % LANES || J->bb <= 0 || J->g1c <= 0 || J->g2c <= 0 || J->big < 0) {
        PyErr_SetString(PyExc_ValueError, "bad block shape or table width");
        return 0;
    }
    if (PyObject_GetBuffer(argv[4], &B->blocks, PyBUF_C_CONTIGUOUS) < 0) return 0;
    B->held |= 1;
    if (PyObject_GetBuffer(argv[6], &B->lut, PyBUF_C_CONTIGUOUS) < 0) return 0;
    B->held |= 2;
    if (PyObject_GetBuffer(argv[7], &B->g1, PyBUF_C_CONTIGUOUS) < 0) return 0;
    B->held |= 4;
    if (PyObject_GetBuffer(argv[9], &B->g2, PyBUF_C_CONTIGUOUS) < 0) return 0;
    B->held |= 8;
    if (B->blocks.len % J->bb || B->lut.len != 65536 * 4) {
        PyErr_SetString(PyExc_ValueError, "blocks must be whole blocks and lut 65536 float32");
        return 0;
    }
    if (!tables_ok(*fam, J, B->g1.len / 4, B->g2.len / 4)) {
        PyErr_SetString(PyExc_ValueError, "the family's tables are too small for its indices");
        return 0;
    }
    J->blocks = B->blocks.buf;
    J->kvmax = 0.0f;
    if (*fam == 8)
        for (int k = 0; k < 16; k++) J->kvmax = max_nan(J->kvmax, fabsf(((const float *) B->g1.buf)[k]));
    J->nb = B->blocks.len / J->bb;
    J->lut = B->lut.buf;
    J->g1 = B->g1.buf;
    J->g2 = B->g2.buf;
    if (!pick(*fam, J, rf, bf)) {
        PyErr_SetString(PyExc_ValueError, "these family arguments have no compiled variant");
        return 0;
    }
    return 1;
}

static PyObject *fused_supports(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3) {
        PyErr_SetString(PyExc_TypeError, "fused_supports(family, args, n)");
        return NULL;
    }
    job_t J;
    memset(&J, 0, sizeof J);
    const long fam = PyLong_AsLong(argv[0]);
    if (fam == -1 && PyErr_Occurred()) return NULL;
    if (fam < 0 || fam >= N_FAMILIES || !PyTuple_Check(argv[1]) || PyTuple_GET_SIZE(argv[1]) != FAMILIES[fam].nargs)
        Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argv[1]); i++) {
        J.a[i] = (int) PyLong_AsLong(PyTuple_GET_ITEM(argv[1], i));
        if (J.a[i] == -1 && PyErr_Occurred()) return NULL;
    }
    J.n = (int) PyLong_AsLong(argv[2]);
    if (PyErr_Occurred()) return NULL;
    range_fn rf;
    bins_fn bf;
    return PyBool_FromLong(J.n > 0 && J.n <= 256 && J.n % LANES == 0 && pick((int) fam, &J, &rf, &bf));
}

static PyObject *fused_range(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 11 && argc != 13) {
        PyErr_SetString(PyExc_TypeError, "fused_range(family, args, n, block_bytes, blocks, big, lut, g1, g1_cols, g2, "
                                         "g2_cols[, scale_table, scale_at])");
        return NULL;
    }
    job_t J;
    bufs_t B = {.held = 0};
    Py_buffer tb;
    int fam, have_table = 0;
    range_fn rf;
    bins_fn bf;
    if (!setup_job(argv, &J, &B, &fam, &rf, &bf)) goto fail;
    if (argc == 13 && argv[11] != Py_None) {
        const long at = PyLong_AsLong(argv[12]);
        if (at == -1 && PyErr_Occurred()) goto fail;
        if (PyObject_GetBuffer(argv[11], &tb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto fail;
        have_table = 1;
        if (tb.len != 65536 * 8 || at < 0 || at + 2 > J.bb) {
            PyErr_SetString(PyExc_ValueError, "scale_table must be 65536 int64 and scale_at a field inside the block");
            goto fail;
        }
        J.scodes = tb.buf;
        J.scode_at = (int) at;
    }
    range_t R = {0, 0, 0, 0};
    Py_BEGIN_ALLOW_THREADS
    rf(&J, &R);
    Py_END_ALLOW_THREADS
    if (have_table) PyBuffer_Release(&tb);
    release(&B);
    return Py_BuildValue("(dddi)", R.lo, R.hi, R.total, R.ok);
fail:
    if (have_table) PyBuffer_Release(&tb);
    release(&B);
    return NULL;
}

static PyObject *fused_bins(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 16 && argc != 17) {
        PyErr_SetString(PyExc_TypeError, "fused_bins(family, args, n, block_bytes, blocks, big, lut, g1, g1_cols, g2, "
                                         "g2_cols, lo, scale, top, shift, table[, lanes])");
        return NULL;
    }
    job_t J;
    bufs_t B = {.held = 0};
    Py_buffer tb, lb;
    int fam, have_table = 0, have_lanes = 0;
    range_fn rf;
    bins_fn bf;
    binargs_t BA;
    BA.lanes = NULL;
    if (!setup_job(argv, &J, &B, &fam, &rf, &bf)) goto fail;
    BA.lo = (float) PyFloat_AsDouble(argv[11]);
    BA.scale = (float) PyFloat_AsDouble(argv[12]);
    BA.top = (int32_t) PyLong_AsLong(argv[13]);
    BA.shift = (float) PyFloat_AsDouble(argv[14]);
    if (PyErr_Occurred()) goto fail;
    if (BA.top < 0 || BA.top > 255) {
        PyErr_SetString(PyExc_ValueError, "top must be in 0..255");
        goto fail;
    }
    if (PyObject_GetBuffer(argv[15], &tb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto fail;
    have_table = 1;
    if (tb.len != 65536 * 8) {
        PyErr_SetString(PyExc_ValueError, "table must be 65536 int64");
        goto fail;
    }
    BA.table = tb.buf;
    if (argc == 17 && argv[16] != Py_None) {
        if (PyObject_GetBuffer(argv[16], &lb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto fail;
        have_lanes = 1;
        if (lb.len < (Py_ssize_t) sizeof(lanes_t)) {
            PyErr_SetString(PyExc_ValueError, "lanes must hold LANES_BYTES zeroed bytes");
            goto fail;
        }
        BA.lanes = lb.buf;
    }
    bins_t R = {0, 0, 0, 0};
    Py_BEGIN_ALLOW_THREADS
    bf(&J, &BA, &R);
    Py_END_ALLOW_THREADS
    if (have_lanes) PyBuffer_Release(&lb);
    PyBuffer_Release(&tb);
    release(&B);
    return Py_BuildValue("(dddL)", R.s1, R.s2, R.sa, (long long) R.zeros);
fail:
    if (have_lanes) PyBuffer_Release(&lb);
    if (have_table) PyBuffer_Release(&tb);
    release(&B);
    return NULL;
}

/* fused_decode(family, args, n, block_bytes, blocks, big, lut, g1, g1_cols, g2, g2_cols, out):
   every block's values into out (float32, C-contiguous, at least blocks x n), bit for bit
   the numpy codec's (ggscope.quant); the GIL is released while it runs. */
static PyObject *fused_decode(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 12) {
        PyErr_SetString(PyExc_TypeError, "fused_decode(family, args, n, block_bytes, blocks, big, lut, g1, g1_cols, "
                                         "g2, g2_cols, out)");
        return NULL;
    }
    job_t J;
    bufs_t B = {.held = 0};
    Py_buffer ob;
    int fam;
    range_fn rf;
    bins_fn bf;
    if (!setup_job(argv, &J, &B, &fam, &rf, &bf)) goto fail;
    const decode_fn df = picked_decode;
    if (PyObject_GetBuffer(argv[11], &ob, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) goto fail;
    if (ob.itemsize != 4 || ob.format == NULL || strcmp(ob.format, "f") != 0
        || ob.len / 4 < (Py_ssize_t) J.nb * J.n) {
        PyBuffer_Release(&ob);
        PyErr_SetString(PyExc_ValueError, "out must be float32 with room for every element of the blocks");
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    df(&J, ob.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ob);
    release(&B);
    Py_RETURN_NONE;
fail:
    release(&B);
    return NULL;
}

/* vector_bins([on]): whether pass two runs on the AVX-512 drivers (_cstats_z.h); with an
   argument, turns them on or off first (tests compare them with the portable drivers). */
static PyObject *vector_bins(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc > 1) {
        PyErr_SetString(PyExc_TypeError, "vector_bins([on])");
        return NULL;
    }
    if (argc == 1) {
        const int on = PyObject_IsTrue(argv[0]);
        if (on < 0) return NULL;
        z_enabled = on;
    }
#ifdef HAVE_Z
    return PyBool_FromLong(z_enabled && z_cpu());
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *families(PyObject *self, PyObject *unused) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (int i = 0; i < N_FAMILIES; i++) {
        PyObject *v = PyLong_FromLong(i);
        if (v == NULL || PyDict_SetItemString(d, FAMILIES[i].name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

#endif /* GGSCOPE_CSTATS_PY_H */
