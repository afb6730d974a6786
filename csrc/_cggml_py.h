/* The Python entry points of ggscope.forward._cggml (included by _cggml.c last, before
   its method table).

   Why a file of its own: the bindings are a job apart from the arithmetic -- they parse
   the arguments, check every buffer's length against the dimensions given (get_buf,
   dims_ok: a caller's mistake is a ValueError, never a read past a buffer), allocate the
   activations' quantized copies, release the GIL while a kernel runs and pick the AVX2
   or BF16 path.  Contract: each py_* function is the module function its comment names,
   returning None or NULL with a Python exception set. */
#ifndef GGSCOPE_CGGML_PY_H
#define GGSCOPE_CGGML_PY_H

/* ---- Python entry points ---------------------------------------------------------- */

static int get_buf(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, Py_ssize_t n, int writable, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes where %zd are needed", what, b->len, n * itemsize);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static int dims_ok(int64_t a, int64_t b, int64_t c) {
    if (a < 0 || b < 0 || c < 0 || a > (1LL << 40) || b > (1LL << 40) || c > (1LL << 40)) {
        PyErr_SetString(PyExc_ValueError, "dimensions out of range");
        return 0;
    }
    return 1;
}

/* mm_f16(x16, w, out, T, M, K, vecdot=False): x16 float32 [T, K] already F16-rounded, w
   float32 [M, K]; vecdot: ggml_vec_dot_f16's order instead of tinyBLAS's */
static PyObject *py_mm_f16(PyObject *self, PyObject *args) {
    PyObject *xo, *wo, *oo;
    long long T, M, K;
    int vecdot = 0;
    if (!PyArg_ParseTuple(args, "OOOLLL|p", &xo, &wo, &oo, &T, &M, &K, &vecdot)) return NULL;
    if (!dims_ok(T, M, K)) return NULL;
    if (K % 16 && !vecdot) return PyErr_Format(PyExc_ValueError, "mm_f16: K = %lld is not a multiple of 16", K);
    Py_buffer x, w, o;
    if (get_buf(xo, &x, 4, T * K, 0, "x") < 0) return NULL;
    if (get_buf(wo, &w, 4, M * K, 0, "w") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, T * M, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&w); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    if (vecdot) {                 /* ggml's vec_dot_f16 per element (one row, or shapes tinyBLAS refuses) */
        const float *xb = x.buf, *wb = w.buf;
        float *ob = o.buf;
        for (int64_t t = 0; t < T; t++)
            for (int64_t m = 0; m < M; m++) ob[t * M + m] = vec_dot_f16(wb + m * K, xb + t * K, K);
    } else
#ifdef HAVE_AVX2_PATH
    if (have_avx2()) mm_f16_avx2(x.buf, w.buf, o.buf, T, M, K);
    else
#endif
    mm_f16_kernel(x.buf, w.buf, o.buf, T, M, K);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x); PyBuffer_Release(&w); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* mm_bf16(x, w, out, T, M, K, vecdot=False, wbits=False): x float32 [T, K] (rounded here
   to BF16 as ggml_cpu_fp32_to_bf16 does), w float32 [M, K] holding BF16 values or, with
   wbits, the weight's stored BF16 bits (uint16 [M, K], little-endian); vecdot:
   ggml_vec_dot_bf16's order instead of tinyBLAS's */
static PyObject *py_mm_bf16(PyObject *self, PyObject *args) {
    PyObject *xo, *wo, *oo;
    long long T, M, K;
    int vecdot = 0, wbits = 0;
    if (!PyArg_ParseTuple(args, "OOOLLL|pp", &xo, &wo, &oo, &T, &M, &K, &vecdot, &wbits)) return NULL;
    if (!dims_ok(T, M, K)) return NULL;
    if (K % 32 && !vecdot) return PyErr_Format(PyExc_ValueError, "mm_bf16: K = %lld is not a multiple of 32", K);
    Py_buffer x, w, o;
    if (get_buf(xo, &x, 4, T * K, 0, "x") < 0) return NULL;
    if (get_buf(wo, &w, wbits ? 2 : 4, M * K, 0, "w") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, T * M, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&w); return NULL; }
    uint16_t *xb = malloc((size_t) (T * K + (wbits ? 0 : M * K)) * 2 + 2);
    if (!xb) { PyBuffer_Release(&x); PyBuffer_Release(&w); PyBuffer_Release(&o); return PyErr_NoMemory(); }
    const uint16_t *wb = wbits ? (const uint16_t *) w.buf : xb + T * K;
    Py_BEGIN_ALLOW_THREADS
    const float *xf = x.buf, *wf = w.buf;
    float *ob = o.buf;
    for (int64_t i = 0; i < T * K; i++) xb[i] = f32_to_bf16(xf[i]);
    if (!wbits)
        for (int64_t i = 0; i < M * K; i++) xb[T * K + i] = bf16_bits(wf[i]);
    if (vecdot) {                 /* one row, or shapes tinyBLAS refuses */
        for (int64_t t = 0; t < T; t++)
            for (int64_t m = 0; m < M; m++) ob[t * M + m] = vec_dot_bf16(wb + m * K, xb + t * K, K);
    } else
#ifdef HAVE_BF16_PATH
    if (have_bf16()) mm_bf16_avx512(xb, wb, ob, T, M, K);
    else
#endif
    mm_bf16_kernel(xb, wb, ob, T, M, K);
    Py_END_ALLOW_THREADS
    free(xb);
    PyBuffer_Release(&x); PyBuffer_Release(&w); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* quantize(x, q, d, n): quantize_row_q8_0 of float32 [n] into int8 [n] and float32 [n/32] */
static PyObject *py_quantize(PyObject *self, PyObject *args) {
    PyObject *xo, *qo, *dob;
    long long n;
    if (!PyArg_ParseTuple(args, "OOOL", &xo, &qo, &dob, &n)) return NULL;
    if (!dims_ok(n, 0, 0)) return NULL;
    if (n % 32) return PyErr_Format(PyExc_ValueError, "quantize: %lld is not a multiple of 32", n);
    Py_buffer x, q, d;
    if (get_buf(xo, &x, 4, n, 0, "x") < 0) return NULL;
    if (get_buf(qo, &q, 1, n, 1, "q") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(dob, &d, 4, n / 32, 1, "d") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&q); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    quantize_q8_0(x.buf, q.buf, d.buf, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x); PyBuffer_Release(&q); PyBuffer_Release(&d);
    Py_RETURN_NONE;
}

/* mm_q1(x, raw, type, out, T, M, K): x float32 [T, K] (quantized to Q8_1 here), raw the
   weight's Q4_1 (type 3) or Q5_1 (type 7) blocks, [M, K/32] of them */
static PyObject *py_mm_q1(PyObject *self, PyObject *args) {
    PyObject *xo, *ro, *oo;
    int type;
    long long T, M, K;
    if (!PyArg_ParseTuple(args, "OOiOLLL", &xo, &ro, &type, &oo, &T, &M, &K)) return NULL;
    if (!dims_ok(T, M, K)) return NULL;
    if (type != 3 && type != 7)
        return PyErr_Format(PyExc_ValueError, "mm_q1: ggml type %d is neither Q4_1 nor Q5_1", type);
    if (K % 32) return PyErr_Format(PyExc_ValueError, "mm_q1: K = %lld is not whole 32-blocks", K);
    const int64_t nb = K / 32, bs = type == 3 ? 20 : 24;
    Py_buffer x, r, o;
    if (get_buf(xo, &x, 4, T * K, 0, "x") < 0) return NULL;
    if (get_buf(ro, &r, 1, M * nb * bs, 0, "blocks") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, T * M, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&r); return NULL; }
    int8_t *qx = malloc((size_t) (T * K + M * K) + 1);
    float *fx = malloc((size_t) (2 * T * nb + 2 * M * nb) * sizeof(float) + 4);
    if (!qx || !fx) {
        free(qx); free(fx);
        PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
        return PyErr_NoMemory();
    }
    uint8_t *qw = (uint8_t *) qx + T * K;
    float *dx = fx, *sx = fx + T * nb, *dw = fx + 2 * T * nb, *mw = dw + M * nb;
    Py_BEGIN_ALLOW_THREADS
    quantize_q8_0(x.buf, qx, dx, T * K);                 /* quantize_row_q8_1: the same q and d */
    for (int64_t b = 0; b < T * nb; b++) {               /* its s: fp16(d * sum(q)) */
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) sum += qx[b * 32 + i];
        const float *xb = (const float *) x.buf + b * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
        sx[b] = f16_to_f32(f32_to_f16((amax / 127.f) * (float) sum));
    }
    unpack_q1(r.buf, type, qw, dw, mw, M * nb);
    mm_q1_kernel(qx, dx, sx, qw, dw, mw, o.buf, T, M, K);
    Py_END_ALLOW_THREADS
    free(qx); free(fx);
    PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* mm_q0(x, raw, type, out, T, M, K, repack=False): x float32 [T, K] (quantized here), raw
   the weight's blocks of ggml type 8 (Q8_0), 2 (Q4_0), 6 (Q5_0) or 20 (IQ4_NL), [M, K/32]
   of them; repack: the order of ggml's repacked kernels instead of tinyBLAS_Q0_AVX's */
static PyObject *py_mm_q0(PyObject *self, PyObject *args) {
    PyObject *xo, *ro, *oo;
    int type, repack = 0;
    long long T, M, K;
    if (!PyArg_ParseTuple(args, "OOiOLLL|p", &xo, &ro, &type, &oo, &T, &M, &K, &repack)) return NULL;
    if (!dims_ok(T, M, K)) return NULL;
    if (!q0_block_bytes(type))
        return PyErr_Format(PyExc_ValueError, "mm_q0: ggml type %d is not a Q8_0-product type", type);
    if (K % 32) return PyErr_Format(PyExc_ValueError, "mm_q0: K = %lld is not whole 32-blocks", K);
    const int64_t nb = K / 32, bs = q0_block_bytes(type);
    Py_buffer x, r, o;
    if (get_buf(xo, &x, 4, T * K, 0, "x") < 0) return NULL;
    if (get_buf(ro, &r, 1, M * nb * bs, 0, "blocks") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, T * M, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&r); return NULL; }
    int8_t *qx = malloc((size_t) (T * K + M * K) + 1);
    float *dx = malloc((size_t) (T * nb + M * nb) * sizeof(float) + 4);
    if (!qx || !dx) {
        free(qx); free(dx);
        PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
        return PyErr_NoMemory();
    }
    int8_t *qw = qx + T * K;
    float *dw = dx + T * nb;
    float *tmp = repack ? malloc((size_t) (T * nb + T * M) * sizeof(float) + 4) : NULL;
    Py_BEGIN_ALLOW_THREADS
    quantize_q8_0(x.buf, qx, dx, T * K);
    unpack_q0(r.buf, type, qw, dw, M * nb);
#ifdef HAVE_AVX2_PATH
    if (have_avx2() && repack && tmp) {
        /* activation scales transposed to [nb][T], the output computed as [M][T] */
        float *dxt = tmp, *outt = tmp + T * nb;
        for (int64_t t = 0; t < T; t++)
            for (int64_t b = 0; b < nb; b++) dxt[b * T + t] = dx[t * nb + b];
        mm_q0_repack_avx2(qx, dxt, qw, dw, outt, T, M, K);
        float *ob = o.buf;
        for (int64_t t = 0; t < T; t++)
            for (int64_t m = 0; m < M; m++) ob[t * M + m] = outt[m * T + t];
    } else if (have_avx2() && !repack) {
        mm_q0_avx2(qx, dx, qw, dw, o.buf, T, M, K);
    } else
#endif
    if (repack) mm_q0_repack_kernel(qx, dx, qw, dw, o.buf, T, M, K);
    else mm_q0_kernel(qx, dx, qw, dw, o.buf, T, M, K);
    Py_END_ALLOW_THREADS
    free(tmp); free(qx); free(dx);
    PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* fa_tiled(q, k, v, mask, out, T, H, S, Hkv, D, Dv, scale, softcap, onerow=False):
   q [T, H, D], k [S, Hkv, D], v [S, Hkv, Dv], mask [T, S], out [T, H, Dv], all float32;
   query head h reads key/value head h / (H / Hkv) */
static PyObject *py_fa_tiled(PyObject *self, PyObject *args) {
    PyObject *qo, *ko, *vo, *mo, *oo;
    long long T, H, S, Hkv, D, Dv;
    float scale, softcap;
    int onerow = 0;
    if (!PyArg_ParseTuple(args, "OOOOOLLLLLLff|p", &qo, &ko, &vo, &mo, &oo, &T, &H, &S, &Hkv, &D, &Dv, &scale,
                          &softcap, &onerow))
        return NULL;
    if (!dims_ok(T, H, S) || !dims_ok(Hkv, D, Dv)) return NULL;
    if (softcap != 0.0f) scale /= softcap;         /* as ops.cpp does before either path */
    if (Hkv < 1 || H % Hkv) return PyErr_Format(PyExc_ValueError, "fa_tiled: %lld heads over %lld kv heads", H, Hkv);
    Py_buffer q, k, v, m, o;
    if (get_buf(qo, &q, 4, T * H * D, 0, "q") < 0) return NULL;
    if (get_buf(ko, &k, 4, S * Hkv * D, 0, "k") < 0) { PyBuffer_Release(&q); return NULL; }
    if (get_buf(vo, &v, 4, S * Hkv * Dv, 0, "v") < 0) { PyBuffer_Release(&q); PyBuffer_Release(&k); return NULL; }
    if (get_buf(mo, &m, 4, T * S, 0, "mask") < 0) {
        PyBuffer_Release(&q); PyBuffer_Release(&k); PyBuffer_Release(&v); return NULL;
    }
    if (get_buf(oo, &o, 4, T * H * Dv, 1, "out") < 0) {
        PyBuffer_Release(&q); PyBuffer_Release(&k); PyBuffer_Release(&v); PyBuffer_Release(&m); return NULL;
    }
    const int64_t g = H / Hkv;
    float kq[FA_TILE];
    float *qh = onerow ? malloc((size_t) D * sizeof(float) + 4) : NULL;
    if (onerow && !qh) {
        PyBuffer_Release(&q); PyBuffer_Release(&k); PyBuffer_Release(&v); PyBuffer_Release(&m); PyBuffer_Release(&o);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) {
            const float *qr = (const float *) q.buf + (t * H + h) * D, *kr = (const float *) k.buf + (h / g) * D;
            const float *vr = (const float *) v.buf + (h / g) * Dv, *mr = (const float *) m.buf + t * S;
            float *orow = (float *) o.buf + (t * H + h) * Dv;
            if (onerow) fa_onerow(qr, kr, vr, mr, orow, S, D, Dv, Hkv * D, Hkv * Dv, scale, softcap, qh);
            else fa_row(qr, kr, vr, mr, orow, S, D, Dv, Hkv * D, Hkv * Dv, scale, softcap, kq);
        }
    Py_END_ALLOW_THREADS
    free(qh);
    PyBuffer_Release(&q); PyBuffer_Release(&k); PyBuffer_Release(&v); PyBuffer_Release(&m); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* rope_cache(pos, cos, sin, T, half, n_dims, base, freq_scale, freq_factors or None,
   ext_factor, corr0, corr1, attn_factor): pos int32 [T], cos / sin float32 [T, half] */
static PyObject *py_rope_cache(PyObject *self, PyObject *args) {
    PyObject *po, *co, *so, *fo;
    long long T, half;
    int n_dims;
    float base, fs, ext, c0, c1, af;
    if (!PyArg_ParseTuple(args, "OOOLLiffOffff", &po, &co, &so, &T, &half, &n_dims, &base, &fs, &fo, &ext, &c0,
                          &c1, &af))
        return NULL;
    if (!dims_ok(T, half, n_dims)) return NULL;
    if (n_dims <= 0) return PyErr_Format(PyExc_ValueError, "rope_cache: n_dims %d", n_dims);
    Py_buffer p, c, sn, f;
    int has_f = fo != Py_None;
    if (get_buf(po, &p, 4, T, 0, "pos") < 0) return NULL;
    if (get_buf(co, &c, 4, T * half, 1, "cos") < 0) { PyBuffer_Release(&p); return NULL; }
    if (get_buf(so, &sn, 4, T * half, 1, "sin") < 0) { PyBuffer_Release(&p); PyBuffer_Release(&c); return NULL; }
    if (has_f && get_buf(fo, &f, 4, half, 0, "freq_factors") < 0) {
        PyBuffer_Release(&p); PyBuffer_Release(&c); PyBuffer_Release(&sn); return NULL;
    }
    rope_cache(p.buf, T, half, n_dims, base, fs, has_f ? f.buf : NULL, ext, c0, c1, af, c.buf, sn.buf);
    if (has_f) PyBuffer_Release(&f);
    PyBuffer_Release(&p); PyBuffer_Release(&c); PyBuffer_Release(&sn);
    Py_RETURN_NONE;
}

/* swiglu(x, g, out, rows, n): float32 [rows, n] each */
static PyObject *py_swiglu(PyObject *self, PyObject *args) {
    PyObject *xo, *go, *oo;
    long long rows, n;
    if (!PyArg_ParseTuple(args, "OOOLL", &xo, &go, &oo, &rows, &n)) return NULL;
    if (!dims_ok(rows, n, 0)) return NULL;
    Py_buffer x, g, o;
    if (get_buf(xo, &x, 4, rows * n, 0, "x") < 0) return NULL;
    if (get_buf(go, &g, 4, rows * n, 0, "g") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, rows * n, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&g); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    swiglu_rows(x.buf, g.buf, o.buf, rows, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x); PyBuffer_Release(&g); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* mm_q4k(x, raw, out, T, M, K): x float32 [T, K] (quantized to Q8_K here), raw the
   weight's Q4_K blocks, [M, K/256] of them (144 bytes each) */
static PyObject *py_mm_q4k(PyObject *self, PyObject *args) {
    PyObject *xo, *ro, *oo;
    long long T, M, K;
    int type = 12;
    if (!PyArg_ParseTuple(args, "OOOLLL|i", &xo, &ro, &oo, &T, &M, &K, &type)) return NULL;
    if (type != 12 && type != 10) return PyErr_Format(PyExc_ValueError, "mm_q4k: type %d is not Q4_K or Q2_K", type);
    if (!dims_ok(T, M, K)) return NULL;
    if (K % 256) return PyErr_Format(PyExc_ValueError, "mm_q4k: K = %lld is not whole 256-blocks", K);
    const int64_t nb = K / 256;
    Py_buffer x, r, o;
    if (get_buf(xo, &x, 4, T * K, 0, "x") < 0) return NULL;
    if (get_buf(ro, &r, 1, M * nb * (type == 12 ? 144 : 84), 0, "blocks") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, T * M, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&r); return NULL; }
    int8_t *qx = malloc((size_t) (T * K) + 1);
    float *dx = malloc((size_t) (T * nb) * sizeof(float) + 4);
    if (!qx || !dx) {
        free(qx); free(dx);
        PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
        return PyErr_NoMemory();
    }
    int32_t bsums[16];
    Py_BEGIN_ALLOW_THREADS
    /* whole groups of 4 rows: ggml_quantize_mat_q8_K_4x8; the rows left: quantize_row_q8_K */
    for (int64_t t = 0; t < T; t++) {
        const float *xr = (const float *) x.buf + t * K;
        if (t < T - T % 4) quantize_q8_k(xr, qx + t * K, dx + t * nb, K);
        else
            for (int64_t b = 0; b < nb; b++)
                quantize_q8_k_ref(xr + b * 256, qx + t * K + b * 256, dx + t * nb + b, bsums, 256);
    }
    if (type == 12) mm_q4k_kernel(qx, dx, r.buf, o.buf, T, M, K);
    else mm_q2k_kernel(qx, dx, r.buf, o.buf, T, M, K);
    Py_END_ALLOW_THREADS
    free(qx); free(dx);
    PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

/* mm_ktiled(x, raw, type, out, T, M, K, vecdot=False; vecdot: Q6_K's / Q5_K's vec_dot
   instead of the tiled path): x float32 [T, K] (quantized to Q8_K here), raw
   the weight's blocks of ggml type 11 (Q3_K), 12 (Q4_K), 13 (Q5_K) or 14 (Q6_K) */
static PyObject *py_mm_ktiled(PyObject *self, PyObject *args) {
    PyObject *xo, *ro, *oo;
    int type, vecdot = 0;
    long long T, M, K;
    if (!PyArg_ParseTuple(args, "OOiOLLL|p", &xo, &ro, &type, &oo, &T, &M, &K, &vecdot)) return NULL;
    if (!dims_ok(T, M, K)) return NULL;
    if (!kquant_bytes(type)) return PyErr_Format(PyExc_ValueError, "mm_ktiled: ggml type %d is not a K type", type);
    if (vecdot && type != 14 && type != 13 && type != 23) return PyErr_Format(PyExc_ValueError, "mm_ktiled: no vec_dot for type %d", type);
    if (K % 256) return PyErr_Format(PyExc_ValueError, "mm_ktiled: K = %lld is not whole 256-blocks", K);
    const int64_t nb = K / 256;
    Py_buffer x, r, o;
    if (get_buf(xo, &x, 4, T * K, 0, "x") < 0) return NULL;
    if (get_buf(ro, &r, 1, M * nb * kquant_bytes(type), 0, "blocks") < 0) { PyBuffer_Release(&x); return NULL; }
    if (get_buf(oo, &o, 4, T * M, 1, "out") < 0) { PyBuffer_Release(&x); PyBuffer_Release(&r); return NULL; }
    int8_t *qx = malloc((size_t) (T * K) + 1);
    float *dx = malloc((size_t) (T * nb) * sizeof(float) + 4);
    int32_t *bs = malloc((size_t) (T * nb * 16) * sizeof(int32_t) + 4);
    if (!qx || !dx || !bs) {
        free(qx); free(dx); free(bs);
        PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    quantize_q8_k_ref(x.buf, qx, dx, bs, T * K);
    if (vecdot) vec_dot_k_rows(qx, dx, bs, r.buf, type, o.buf, T, M, K);
    else mm_ktiled_kernel(qx, dx, bs, r.buf, type, o.buf, T, M, K);
    Py_END_ALLOW_THREADS
    free(qx); free(dx); free(bs);
    PyBuffer_Release(&x); PyBuffer_Release(&r); PyBuffer_Release(&o);
    Py_RETURN_NONE;
}

#endif
