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

/* ------------------------------------------------------------------ field readers */

INLINE uint32_t u16(const uint8_t *b, int at, int big) {
    return (uint32_t) b[at + big] | ((uint32_t) b[at + 1 - big] << 8);
}
INLINE float f16(const uint8_t *b, int at, int big, const float *lut) { return lut[u16(b, at, big)]; }
INLINE float f32(const uint8_t *b, int at, int big) {
    uint32_t w = 0;
    for (int k = 0; k < 4; k++) w |= (uint32_t) b[at + (big ? 3 - k : k)] << (8 * k);
    float f;
    memcpy(&f, &w, 4);
    return f;
}
INLINE float scale_at(const uint8_t *b, int at, int wide, int big, const float *lut) {
    return wide ? f32(b, at, big) : f16(b, at, big, lut);
}
INLINE uint32_t u32le(const uint8_t *b, int at) {
    return (uint32_t) b[at] | ((uint32_t) b[at + 1] << 8) | ((uint32_t) b[at + 2] << 16) | ((uint32_t) b[at + 3] << 24);
}

/* ------------------------------------------------------------------ decoders, one per family
   Each writes the block's values to out[0 : block elements] in ggml's element order. */

INLINE void dec_nibbles(const job_t *J, const uint8_t *restrict b, float *restrict out, int d_at, int wide, int m_at, int qh_at,
                        int qs_at, int half, int inter, int bias, int o_at) {
    const int big = J->big;
    const float d = scale_at(b, d_at, wide, big, J->lut);
    const float m = m_at >= 0 ? scale_at(b, m_at, wide, big, J->lut) : 0.0f;
    const uint32_t qh = qh_at >= 0 ? u32le(b, qh_at) : 0;
    IVDEP
    for (int j = 0; j < half; j++) {
        const int32_t c = b[qs_at + j];
        const int p0 = inter ? 2 * j : j, p1 = inter ? 2 * j + 1 : j + half;
        int32_t c0 = c & 0xF, c1 = c >> 4;
        if (qh_at >= 0) {
            c0 |= (int32_t) ((qh >> p0) & 1) << 4;
            c1 |= (int32_t) ((qh >> p1) & 1) << 4;
        }
        float v0 = (float) (c0 - bias) * d, v1 = (float) (c1 - bias) * d;
        if (m_at >= 0) {
            v0 = v0 + m;
            v1 = v1 + m;
        }
        out[p0] = v0;
        out[p1] = v1;
    }
    if (o_at >= 0) {                    /* Q4_1_O: one outlier patched in */
        const uint32_t k = u16(b, o_at, big);
        if (k < (uint32_t) (2 * half)) out[k] = f16(b, o_at + 2, big, J->lut);
    }
}

INLINE void dec_int8(const job_t *J, const uint8_t *restrict b, float *restrict out, int d_at, int wide, int qs_at, int n) {
    const float d = scale_at(b, d_at, wide, J->big, J->lut);
    IVDEP
    for (int j = 0; j < n; j++) out[j] = (float) (int8_t) b[qs_at + j] * d;
}

INLINE void dec_crumbs(const job_t *J, const uint8_t *restrict b, float *restrict out, int d_at, int qs_at, int n, int bits, int row) {
    const float d = f16(b, d_at, J->big, J->lut);
    const int per = 8 / bits, mask = (1 << bits) - 1;
    IVDEP
    for (int j = 0; j < n; j++) {
        int byte, sh;
        if (row) {
            const int g = j / 128, r = j % 128;
            byte = 32 * g + r % 32;
            sh = bits * (r / 32);
        } else {
            byte = j / per;
            sh = bits * (j % per);
        }
        const int32_t c = ((int32_t) b[qs_at + byte] >> sh) & mask;
        out[j] = (float) (bits == 1 ? 2 * c - 1 : c - 1) * d;
    }
}

INLINE int32_t trit(uint8_t byte, int32_t pw) {     /* digit of a base-3 byte, minus 1 */
    const int32_t q = ((int32_t) byte * pw) & 0xFF;
    return ((q * 3) >> 8) - 1;
}

INLINE void dec_tq1_0(const job_t *J, const uint8_t *restrict b, float *restrict out) {
    const float d = f16(b, 52, J->big, J->lut);
    int32_t pw = 1;
    IVDEP
    for (int n = 0; n < 5; n++) {
        IVDEP
        for (int m = 0; m < 32; m++) out[32 * n + m] = (float) trit(b[m], pw) * d;
        IVDEP
        for (int m = 0; m < 16; m++) out[160 + 16 * n + m] = (float) trit(b[32 + m], pw) * d;
        if (n < 4)
            IVDEP
            for (int m = 0; m < 4; m++) out[240 + 4 * n + m] = (float) trit(b[48 + m], pw) * d;
        pw *= 3;
    }
}

INLINE void dec_q2_k(const job_t *J, const uint8_t *restrict b, float *restrict out) {
    const float d = f16(b, 80, J->big, J->lut), dmin = f16(b, 82, J->big, J->lut);
    IVDEP
    for (int g = 0; g < 16; g++) {
        const int32_t sc = b[g];
        const float dl = d * (float) (sc & 15), ml = dmin * (float) (sc >> 4);
        const int n = g / 8, j = (g / 2) % 4, l0 = 16 * (g % 2);
        IVDEP
        for (int l = l0; l < l0 + 16; l++) {
            const int32_t c = ((int32_t) b[16 + 32 * n + l] >> (2 * j)) & 3;
            out[128 * n + 32 * j + l] = (float) c * dl - ml;
        }
    }
}

INLINE void dec_q3_k(const job_t *J, const uint8_t *restrict b, float *restrict out) {
    const float d = f16(b, 108, J->big, J->lut);
    IVDEP
    for (int g = 0; g < 16; g++) {
        const int32_t low = ((int32_t) b[96 + g % 8] >> (4 * (g / 8))) & 15;
        const int32_t high = ((int32_t) b[104 + g % 4] >> (2 * (g / 4))) & 3;
        const float dl = d * (float) ((low | (high << 4)) - 32);
        const int n = g / 8, j = (g / 2) % 4, l0 = 16 * (g % 2);
        IVDEP
        for (int l = l0; l < l0 + 16; l++) {
            const int32_t c = ((int32_t) b[32 + 32 * n + l] >> (2 * j)) & 3;
            const int32_t h = ((int32_t) b[l] >> (4 * n + j)) & 1;
            out[128 * n + 32 * j + l] = (float) ((c | (h << 2)) - 4) * dl;
        }
    }
}

INLINE void k4_scale(const uint8_t *b, int j, float d, float dmin, float *dl, float *ml) {
    int32_t sc, m;                      /* ggml's get_scale_min_k4 */
    if (j < 4) {
        sc = b[4 + j] & 63;
        m = b[8 + j] & 63;
    } else {
        sc = (b[8 + j] & 0xF) | ((b[j] >> 6) << 4);
        m = (b[8 + j] >> 4) | ((b[4 + j] >> 6) << 4);
    }
    *dl = d * (float) sc;
    *ml = dmin * (float) m;
}

INLINE void dec_q45_k(const job_t *J, const uint8_t *restrict b, float *restrict out, int qs_at, int five) {
    const float d = f16(b, 0, J->big, J->lut), dmin = f16(b, 2, J->big, J->lut);
    IVDEP
    for (int g = 0; g < 8; g++) {
        float dl, ml;
        k4_scale(b, g, d, dmin, &dl, &ml);
        const int at = qs_at + 32 * (g / 2), sh = 4 * (g % 2);
        IVDEP
        for (int l = 0; l < 32; l++) {
            int32_t c = ((int32_t) b[at + l] >> sh) & 0xF;
            if (five) c |= (((int32_t) b[16 + l] >> g) & 1) << 4;
            out[32 * g + l] = (float) c * dl - ml;
        }
    }
}

INLINE void dec_q6_k(const job_t *J, const uint8_t *restrict b, float *restrict out) {
    const float d = f16(b, 208, J->big, J->lut);
    IVDEP
    for (int g = 0; g < 16; g++) {
        const float dl = d * (float) (int8_t) b[192 + g];
        const int n = g / 8, k = (g / 2) % 4, l0 = 16 * (g % 2);
        const int ql = 64 * n + 32 * (k & 1), qh = 128 + 32 * n;
        IVDEP
        for (int l = l0; l < l0 + 16; l++) {
            const int32_t c = (((int32_t) b[ql + l] >> (4 * (k >> 1))) & 0xF) | ((((int32_t) b[qh + l] >> (2 * k)) & 3) << 4);
            out[128 * n + 32 * k + l] = (float) (c - 32) * dl;
        }
    }
}

/* dec_table4's group ``ib``: its scale, and in ``*at`` where its nibbles start (mode 0
   IQ4_NL, 1 IQ4_XS, 2 and 3 the byte-scaled tables); the AVX-512 pass reads the same */
INLINE float table4_scale(const job_t *J, const uint8_t *restrict b, int mode, int ib, int *at) {
    if (mode == 0) {
        *at = 2;
        return f16(b, 0, J->big, J->lut);
    }
    if (mode == 1) {
        const uint32_t h = u16(b, 2, J->big);
        const int32_t low = ((int32_t) b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
        *at = 8 + 16 * ib;
        return f16(b, 0, J->big, J->lut) * (float) ((int32_t) (low | (((h >> (2 * ib)) & 3) << 4)) - 32);
    }
    if (mode == 2) {
        *at = 1;
        return J->g2[b[0]];
    }
    *at = 4 + 8 * ib;
    return J->g2[b[ib]];
}

INLINE void dec_table4(const job_t *J, const uint8_t *restrict b, float *restrict out, int mode, int groups, int span) {
    const int half = span / 2;
    const float *kv = J->g1;
    IVDEP
    for (int ib = 0; ib < groups; ib++) {
        int at;
        const float dl = table4_scale(J, b, mode, ib, &at);
        IVDEP
        for (int j = 0; j < half; j++) {
            const uint8_t c = b[at + j];
            out[span * ib + j] = dl * kv[c & 0xF];
            out[span * ib + half + j] = dl * kv[c >> 4];
        }
    }
}

INLINE void put8(float *restrict out, float db, const float *restrict row) {
    IVDEP
    for (int k = 0; k < 8; k++) out[k] = db * row[k];
}

INLINE void dec_iq2(const job_t *J, const uint8_t *restrict b, float *restrict out, int kind) {
    const int big = J->big;
    const float d = f16(b, 0, big, J->lut);
    const float *g1 = J->g1, *g2 = J->g2;
    const int c1 = J->g1c, c2 = J->g2c;
    IVDEP
    for (int ib = 0; ib < 8; ib++) {
        if (kind == 0) {
            const int64_t w0 = (int64_t) u16(b, 2 + 8 * ib, big) | ((int64_t) u16(b, 4 + 8 * ib, big) << 16);
            const int64_t w1 = (int64_t) u16(b, 6 + 8 * ib, big) | ((int64_t) u16(b, 8 + 8 * ib, big) << 16);
            const float db = d * (0.5f + (float) (w1 >> 28)) * 0.25f;
            IVDEP
            for (int l = 0; l < 4; l++)
                put8(out + 32 * ib + 8 * l, db, g1 + c1 * ((((w0 >> (8 * l)) & 0xFF) << 7) | ((w1 >> (7 * l)) & 0x7F)));
        } else {
            const int32_t sc = b[(kind == 1 ? 66 : 74) + ib];
            IVDEP
            for (int l = 0; l < 4; l++) {
                const float db = d * (0.5f + (float) ((sc >> (4 * (l / 2))) & 0xF)) * 0.25f;
                if (kind == 1) {
                    const uint32_t q = u16(b, 2 + 8 * ib + 2 * l, big);
                    put8(out + 32 * ib + 8 * l, db, g1 + c1 * (((q & 0x1FF) << 7) | (q >> 9)));
                } else {
                    const int32_t gi = (int32_t) b[2 + 4 * ib + l] | ((((int32_t) b[66 + ib] >> (2 * l)) & 3) << 8);
                    const uint8_t s = b[34 + 4 * ib + l];
                    IVDEP
                    for (int k = 0; k < 8; k++) out[32 * ib + 8 * l + k] = db * (g1[c1 * gi + k] * g2[c2 * s + k]);
                }
            }
        }
    }
}

INLINE void dec_iq3(const job_t *J, const uint8_t *restrict b, float *restrict out, int kind) {
    const float d = f16(b, 0, J->big, J->lut);
    const float *g1 = J->g1, *g2 = J->g2;
    const int c1 = J->g1c, c2 = J->g2c;
    IVDEP
    for (int ib = 0; ib < 8; ib++) {
        int64_t w = 0;
        float db;
        if (kind == 0) {
            w = (int64_t) u32le(b, 66 + 4 * ib);
            db = d * (0.5f + (float) (w >> 28)) * 0.5f;
        } else {
            const int32_t nib = ((int32_t) b[106 + ib / 2] >> (4 * (ib % 2))) & 0xF;
            db = d * (float) (1 + 2 * nib);
        }
        IVDEP
        for (int l = 0; l < 4; l++) {
            IVDEP
            for (int e = 0; e < 2; e++) {
                const int k8 = 2 * l + e;
                int32_t gi, srow;
                if (kind == 0) {
                    gi = b[2 + 8 * ib + k8];
                    srow = (int32_t) ((w >> (7 * l)) & 0x7F);
                } else {
                    gi = (int32_t) b[2 + 8 * ib + k8] | ((((int32_t) b[66 + ib] >> k8) & 1) << 8);
                    srow = b[74 + 4 * ib + l];
                }
                IVDEP
                for (int k = 0; k < 4; k++)
                    out[32 * ib + 8 * l + 4 * e + k] = db * (g1[c1 * gi + k] * g2[c2 * srow + 4 * e + k]);
            }
        }
    }
}

INLINE void dec_iq1(const job_t *J, const uint8_t *restrict b, float *restrict out, int kind) {
    const int big = J->big;
    const float *g1 = J->g1;
    const int c1 = J->g1c;
    float d;
    if (kind == 0) {
        d = f16(b, 0, big, J->lut);
    } else {                            /* IQ1_M: the f16 scale spread over four words' top nibbles */
        const uint32_t s0 = u16(b, 48, 0), s1 = u16(b, 50, 0), s2 = u16(b, 52, 0), s3 = u16(b, 54, 0);
        d = J->lut[(s0 >> 12) | ((s1 >> 8) & 0xF0) | ((s2 >> 4) & 0xF00) | (s3 & 0xF000)];
    }
    IVDEP
    for (int ib = 0; ib < 8; ib++) {
        uint32_t qh = 0;
        float dl = 0.0f;
        if (kind == 0) {
            qh = u16(b, 34 + 2 * ib, big);
            dl = d * (float) (2 * ((qh >> 12) & 7) + 1);
        }
        IVDEP
        for (int l = 0; l < 4; l++) {
            int32_t ti;
            if (kind == 0) {
                ti = (int32_t) b[2 + 4 * ib + l] | (int32_t) (((qh >> (3 * l)) & 7) << 8) | (int32_t) (((qh >> 15) & 1) << 11);
            } else {
                const int32_t nib = ((int32_t) b[32 + 2 * ib + l / 2] >> (4 * (l % 2))) & 0xF;
                ti = (int32_t) b[4 * ib + l] | ((nib & 7) << 8) | ((nib >> 3) << 11);
                const uint32_t word = u16(b, 48 + 2 * (ib / 2), 0);
                dl = d * (float) (2 * ((word >> (6 * (ib % 2) + 3 * (l / 2))) & 7) + 1);
            }
            put8(out + 32 * ib + 8 * l, dl, g1 + c1 * ti);
        }
    }
}

/* ------------------------------------------------------------------ block bounds
   An upper bound of |x| over a block, from its scales alone (ggscope.scale_range's idea,
   per block): pass one decodes only the blocks whose bound could move the running min or
   max -- on a realistic tensor a few per chunk.  Each bound evaluates the decoder's own
   float32 products with the largest code, and rounding is monotone, so no decoded value
   exceeds it; a NaN or infinite bound (a damaged scale) makes the block decode, where
   the non-finite value is seen. */

/* Signed bounds [L, U] of a block's values.  Plain (branch-free) min and max; the sum
   ``acc`` of every extreme turns NaN or infinite when one of them is, and then the
   bounds are NaN, which makes the block decode. */
INLINE float fmin2(float a, float b) { return a < b ? a : b; }
INLINE float fmax2(float a, float b) { return a > b ? a : b; }
INLINE int finitef32(float v) { return v - v == 0.0f; }
INLINE float max_nan(float a, float v) { return v > a || v != v ? v : a; }   /* NaN wins */

INLINE void settle(float lo, float hi, float acc, float *L, float *U) {
    *L = finitef32(acc) ? lo : NAN;
    *U = finitef32(acc) ? hi : NAN;
}

INLINE void span_nibbles(const job_t *J, const uint8_t *b, int d_at, int wide, int m_at, int qh_at, int bias,
                         int o_at, float *L, float *U) {
    const float d = scale_at(b, d_at, wide, J->big, J->lut);
    const float m = m_at >= 0 ? scale_at(b, m_at, wide, J->big, J->lut) : 0.0f;
    const int top = qh_at >= 0 ? 31 : 15;
    const float e0 = (float) (0 - bias) * d, e1 = (float) (top - bias) * d;   /* the extreme codes */
    float lo = fmin2(e0, e1), hi = fmax2(e0, e1), acc = e0 + e1;
    if (m_at >= 0) {
        lo = lo + m;
        hi = hi + m;
        acc += lo + hi;
    }
    if (o_at >= 0) {                    /* Q4_1_O: the outlier's own value */
        const float v = f16(b, o_at + 2, J->big, J->lut);
        lo = fmin2(lo, v);
        hi = fmax2(hi, v);
        acc += v;
    }
    settle(lo, hi, acc, L, U);
}

INLINE void sym(float B, float *L, float *U) { settle(-B, B, B, L, U); }

INLINE void span_int8(const job_t *J, const uint8_t *b, int d_at, int wide, float *L, float *U) {
    sym(128.0f * fabsf(scale_at(b, d_at, wide, J->big, J->lut)), L, U);
}

INLINE void span_q2_k(const job_t *J, const uint8_t *b, float *L, float *U) {
    const float d = f16(b, 80, J->big, J->lut), dmin = f16(b, 82, J->big, J->lut);
    float lo = INFINITY, hi = -INFINITY, acc = d + dmin;
    for (int g = 0; g < 16; g++) {
        const int32_t sc = b[g];
        const float dl = d * (float) (sc & 15), ml = dmin * (float) (sc >> 4);
        const float e0 = 0.0f * dl - ml, e1 = 3.0f * dl - ml;
        lo = fmin2(lo, fmin2(e0, e1));
        hi = fmax2(hi, fmax2(e0, e1));
    }
    settle(lo, hi, acc, L, U);
}

INLINE void span_q3_k(const job_t *J, const uint8_t *b, float *L, float *U) {
    const float d = f16(b, 108, J->big, J->lut);
    int32_t big = 0;
    for (int g = 0; g < 16; g++) {
        const int32_t low = ((int32_t) b[96 + g % 8] >> (4 * (g / 8))) & 15;
        const int32_t high = ((int32_t) b[104 + g % 4] >> (2 * (g / 4))) & 3;
        const int32_t v = (low | (high << 4)) - 32, a = v < 0 ? -v : v;
        big = a > big ? a : big;
    }
    sym(4.0f * fabsf(d * (float) big), L, U);
}

INLINE void span_q45_k(const job_t *J, const uint8_t *b, int five, float *L, float *U) {
    const float d = f16(b, 0, J->big, J->lut), dmin = f16(b, 2, J->big, J->lut);
    const float top = five ? 31.0f : 15.0f;
    float lo = INFINITY, hi = -INFINITY;
    for (int g = 0; g < 8; g++) {
        float dl, ml;
        k4_scale(b, g, d, dmin, &dl, &ml);
        const float e0 = 0.0f * dl - ml, e1 = top * dl - ml;
        lo = fmin2(lo, fmin2(e0, e1));
        hi = fmax2(hi, fmax2(e0, e1));
    }
    settle(lo, hi, d + dmin, L, U);
}

INLINE void span_q6_k(const job_t *J, const uint8_t *b, float *L, float *U) {
    const float d = f16(b, 208, J->big, J->lut);
    int32_t big = 0;
    for (int g = 0; g < 16; g++) {
        const int32_t v = (int8_t) b[192 + g], a = v < 0 ? -v : v;
        big = a > big ? a : big;
    }
    sym(32.0f * fabsf(d * (float) big), L, U);
}

INLINE void span_table4(const job_t *J, const uint8_t *b, int mode, int groups, float *L, float *U) {
    if (mode == 0) {
        sym(J->kvmax * fabsf(f16(b, 0, J->big, J->lut)), L, U);
        return;
    }
    if (mode == 2) {
        sym(J->kvmax * fabsf(J->g2[b[0]]), L, U);
        return;
    }
    float B = 0.0f, acc = 0.0f;
    for (int ib = 0; ib < groups; ib++) {
        float dl;
        if (mode == 1) {
            const uint32_t h = u16(b, 2, J->big);
            const int32_t low = ((int32_t) b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
            dl = f16(b, 0, J->big, J->lut) * (float) ((int32_t) (low | (((h >> (2 * ib)) & 3) << 4)) - 32);
        } else {
            dl = J->g2[b[ib]];
        }
        B = fmax2(B, J->kvmax * fabsf(dl));
        acc += dl;
    }
    settle(-B, B, acc + B, L, U);
}

/* ------------------------------------------------------------------ the two passes, written once */

INLINE int32_t fbits(float v) {
    int32_t i;
    memcpy(&i, &v, 4);
    return i;
}

INLINE int32_t order_key(int32_t bits) { return bits ^ ((bits >> 31) & 0x7FFFFFFF); }

INLINE float key_value(int32_t k) {
    const int32_t bits = k ^ ((k >> 31) & 0x7FFFFFFF);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Each loop below does one thing, so the compiler vectorizes it; each runs over one
   L1-resident piece.  Only the float sums may be reassociated (as numba's fastmath
   kernels were): they are the sums of a piece in any order, while the bin index keeps
   the exact float32 formula -- hence separate, out-of-line functions with their own
   optimization flags (REASSOC, _ctargets.h). */



TARGETS __attribute__((noinline)) static void piece_idx(const float *restrict x, int e, float lo, float scale,
                                                         int32_t top, uint8_t *restrict idx) {
    for (int j = 0; j < e; j++) {
        int32_t t = (int32_t) ((x[j] - lo) * scale);
        t = t < top ? t : top;
        idx[j] = (uint8_t) (t > 0 ? t : 0);
    }
}

/* With at most SMALL_BINS bins: pair indices b0 | b1 << 6, ready for counting (one load
   per pair instead of two, a shift and an or).  A pair is value k and value k + e/2 of
   the piece -- two straight streams, so no lane shuffles -- which counts the same
   histogram: the table is folded over both of its axes. */
TARGETS __attribute__((noinline)) static void piece_pairs(const float *restrict x, int e, float lo, float scale,
                                                           int32_t top, uint16_t *restrict pairs) {
    const int h = e / 2;
    const float *restrict y = x + h;
    for (int j = 0; j < h; j++) {
        int32_t t0 = (int32_t) ((x[j] - lo) * scale), t1 = (int32_t) ((y[j] - lo) * scale);
        t0 = t0 < top ? t0 : top;
        t1 = t1 < top ? t1 : top;
        t0 = t0 > 0 ? t0 : 0;
        t1 = t1 > 0 ? t1 : 0;
        pairs[j] = (uint16_t) (t0 | (t1 << 6));
    }
}

/* Four straight streams (quarters of the piece), each with its own accumulators: the
   compiler vectorizes each, and the four additions chains overlap instead of each vector
   add waiting for the one before (one chain was measured latency-bound, 0.1 ns per
   element). */
#define MOMENT(v, A1, A2, AA, Z)      \
    do {                              \
        const float dv = (v) - shift; \
        A1 += dv;                     \
        A2 += dv * dv;                \
        AA += fabsf(v);               \
        Z += (v) == 0.0f;             \
    } while (0)

TARGETS REASSOC static int32_t piece_moments(const float *restrict x, int e, float shift, float *r1, float *r2, float *ra) {
    float a10 = 0, a11 = 0, a12 = 0, a13 = 0, a20 = 0, a21 = 0, a22 = 0, a23 = 0, aa0 = 0, aa1 = 0, aa2 = 0, aa3 = 0;
    int32_t z0 = 0, z1 = 0, z2 = 0, z3 = 0;
    const int q = e / 4;
    const float *restrict x1 = x + q, *restrict x2 = x + 2 * q, *restrict x3 = x + 3 * q;
    for (int j = 0; j < q; j++) {
        MOMENT(x[j], a10, a20, aa0, z0);
        MOMENT(x1[j], a11, a21, aa1, z1);
        MOMENT(x2[j], a12, a22, aa2, z2);
        MOMENT(x3[j], a13, a23, aa3, z3);
    }
    for (int j = 4 * q; j < e; j++) MOMENT(x[j], a10, a20, aa0, z0);
    *r1 = (a10 + a11) + (a12 + a13);
    *r2 = (a20 + a21) + (a22 + a23);
    *ra = (aa0 + aa1) + (aa2 + aa3);
    return z0 + z1 + z2 + z3;
}
#undef MOMENT

/* The same sums in float64, for a piece whose float32 sums overflowed (finite values
   beyond about 1e19 square past float32's range): the result stays finite where it can. */
static void piece_moments_wide(const float *x, int e, float shift, double *r) {
    double a1 = 0.0, a2 = 0.0, aa = 0.0;
    for (int j = 0; j < e; j++) {
        const double dv = (double) x[j] - (double) shift;
        a1 += dv;
        a2 += dv * dv;
        aa += fabs((double) x[j]);
    }
    r[0] = a1;
    r[1] = a2;
    r[2] = aa;
}

/* Adds a piece's float32 sums to the running float64 ones, or its float64 sums when a
   float32 one overflowed. */
INLINE void add_piece(const float *x, int e, float shift, float a1, float a2, float aa, double *s1, double *s2,
                      double *sa) {
    if (finitef32(a1) && finitef32(a2) && finitef32(aa)) {
        *s1 += a1;
        *s2 += a2;
        *sa += aa;
    } else {
        double r[3];
        piece_moments_wide(x, e, shift, r);
        *s1 += r[0];
        *s2 += r[1];
        *sa += r[2];
    }
}


/* Min and max order keys and the float32 sum of x[0:e]. */
TARGETS REASSOC static void piece_range(const float *restrict x, int e, int32_t *lo, int32_t *hi, float *sum) {
    int32_t mn = 0x7FFFFFFF, mx = (int32_t) 0x80000000;
    float s = 0.0f;
    for (int j = 0; j < e; j++) {
        const int32_t k = order_key(fbits(x[j]));
        mn = k < mn ? k : mn;
        mx = k > mx ? k : mx;
        s += x[j];
    }
    *lo = mn;
    *hi = mx;
    *sum = s;
}

/* Bins (kernels.bin_pairs' float32 formula) into idx, and the moments of x[0:e]. */
INLINE void piece_bins(const float *restrict x, int e, float lo, float scale, int32_t top, float shift, uint8_t *restrict idx,
                       float *r1, float *r2, float *ra, int32_t *rz) {
    piece_idx(x, e, lo, scale, top, idx);
    *rz = piece_moments(x, e, shift, r1, r2, ra);
}

INLINE void count_pair_idx(const uint8_t *idx, int e, int64_t *table) {
    for (int j = 0; j + 1 < e; j += 2) table[(uint32_t) idx[j] | ((uint32_t) idx[j + 1] << 8)] += 1;
}

/* With at most 64 bins (ggscope's default) the pairs are counted in two interleaved
   tables of 64 x 64 uint32 (32 KiB, scratch of the calling thread: ggscope.cstats keeps
   one per thread, freed with it) instead of one int64[65536]: on a
   bell-shaped tensor most pairs hit the same few counters, and with one table each
   increment waits for the store of the one before (measured: the counting was 3/4 of
   pass two).  flush_lanes adds them into the caller's table layout. */
#define SMALL_BINS 64
/* Lanes each 64 bytes longer than a power of two: at a power-of-two distance a
   counter and its twin in the next lane share their low 12 address bits, and the CPU's
   store-to-load check (4K aliasing) serialises them again (measured on Intel: 4 padded
   lanes 0.51 ns per Q4_K element, 4 unpadded 0.53, 8 unpadded 0.59).  Two lanes, not
   four: on AMD Zen 4 a stream of normal pairs counts at 0.31 ns per pair in two, 0.37
   in four, and a constant one at 0.31 against 0.46 (one lane: 0.29 and 0.56); pass two
   of Q8_0 1.07x faster. */
#define PAIR_LANES 2
#define LANE_PAD 16
typedef uint32_t lanes_t[PAIR_LANES][SMALL_BINS * SMALL_BINS + LANE_PAD];

typedef struct {
    float lo, scale, shift;
    int32_t top;
    int64_t *table;
    lanes_t *lanes;                   /* the caller's zeroed scratch (left zeroed), or NULL */
} binargs_t;

INLINE void count_pair_lanes(const uint16_t *restrict pairs, int m, lanes_t *restrict c) {
    int j = 0;
    for (; j + PAIR_LANES <= m; j += PAIR_LANES)
        for (int l = 0; l < PAIR_LANES; l++) (*c)[l][pairs[j + l]] += 1;
    for (; j < m; j++) (*c)[0][pairs[j]] += 1;
}

static void flush_lanes(lanes_t *c, int64_t *table) {
    for (int k = 0; k < SMALL_BINS * SMALL_BINS; k++) {
        uint64_t v = 0;
        for (int l = 0; l < PAIR_LANES; l++) v += (*c)[l][k];
        if (v) table[(k & (SMALL_BINS - 1)) | ((k / SMALL_BINS) << 8)] += (int64_t) v;
    }
    memset(c, 0, sizeof *c);
}

/* Asks for the next piece's blocks while this one is decoded: the hardware prefetcher
   alone keeps up with a plain copy, not with a loop doing this much per byte
   (measured: 0.18 ns per element on a cached Q8_0 chunk, 0.36 streamed from memory). */
INLINE void prefetch_next(const job_t *J, Py_ssize_t start, int per) {
    if (start >= J->nb) return;
    const Py_ssize_t stop = start + per < J->nb ? start + per : J->nb;
    const char *at = (const char *) J->blocks + start * J->bb, *last = (const char *) J->blocks + stop * J->bb;
    for (; at < last; at += 64) __builtin_prefetch(at, 0, 3);
}

typedef struct {
    double lo, hi, total;
    int ok;
} range_t;
typedef struct {
    double s1, s2, sa;
    int64_t zeros;
} bins_t;


/* One pair of drivers per decoder variant.  N: elements per block (a constant where the
   variant fixes it, so the decoder's loops unroll and vectorize).  Blocks decode into an
   L1 piece; a piece is whole blocks, so its length is a multiple of LANES (setup_job
   refuses other block sizes). */
#define RANGE_FULL(NAME, N, DECODE)                                                                     \
    TARGETS static void range_##NAME(const job_t *J, range_t *R) {                                   \
        const int n = (N);                                                                           \
        const int per = PIECE / n > 0 ? PIECE / n : 1;                                               \
        float out[PIECE + 256] __attribute__((aligned(64)));                                        \
        int32_t lo = 0x7FFFFFFF, hi = (int32_t) 0x80000000;                                          \
        double total = 0.0;                                                                          \
        for (Py_ssize_t p = 0; p < J->nb; p += per) {                                                \
            const Py_ssize_t end = p + per < J->nb ? p + per : J->nb;                                \
            int e = 0;                                                                               \
            prefetch_next(J, end, per);                                                              \
            for (Py_ssize_t bi = p; bi < end; bi++, e += n) {                                        \
                const uint8_t *restrict b = J->blocks + bi * J->bb;                                         \
                float *restrict o = out + e;                                                                \
                count_scale(J, b);                                                                   \
                DECODE;                                                                              \
            }                                                                                        \
            int32_t mn = 0x7FFFFFFF, mx = (int32_t) 0x80000000;                                      \
            float s;                                                                                 \
            piece_range(out, e, &mn, &mx, &s);                                                       \
            if (mn <= NEG_INF_KEY || mx >= POS_INF_KEY) {                                            \
                uncount_scales(J, end - 1);                                                          \
                R->ok = 0;                                                                           \
                return;                                                                              \
            }                                                                                        \
            lo = mn < lo ? mn : lo;                                                                  \
            hi = mx > hi ? mx : hi;                                                                  \
            total += s;                                                                              \
        }                                                                                            \
        R->lo = key_value(lo);                                                                       \
        R->hi = key_value(hi);                                                                       \
        R->total = total;                                                                            \
        R->ok = J->nb > 0;                                                                           \
    }

#define BINS(NAME, N, DECODE)                                                                        \
    TARGETS static void bins_##NAME(const job_t *J, const binargs_t *A, bins_t *R) {                 \
        const int n = (N);                                                                           \
        const int per = PIECE / n > 0 ? PIECE / n : 1;                                               \
        float out[PIECE + 256] __attribute__((aligned(64)));                                        \
        uint8_t idx[PIECE + 256] __attribute__((aligned(64)));                                      \
        uint16_t pairs[(PIECE + 256) / 2] __attribute__((aligned(64)));                             \
        double s1 = 0.0, s2 = 0.0, sa = 0.0;                                                         \
        int64_t zeros = 0, pending = 0;                                                              \
        const int small = A->top < SMALL_BINS;                                                       \
        lanes_t *lanes = small ? A->lanes : NULL;                                                    \
        for (Py_ssize_t p = 0; p < J->nb; p += per) {                                                \
            const Py_ssize_t end = p + per < J->nb ? p + per : J->nb;                                \
            int e = 0;                                                                               \
            prefetch_next(J, end, per);                                                              \
            for (Py_ssize_t bi = p; bi < end; bi++, e += n) {                                        \
                const uint8_t *restrict b = J->blocks + bi * J->bb;                                         \
                float *restrict o = out + e;                                                                \
                DECODE;                                                                              \
            }                                                                                        \
            float a1, a2, aa;                                                                        \
            int32_t z;                                                                               \
            if (lanes != NULL) {                                                                     \
                piece_pairs(out, e, A->lo, A->scale, A->top, pairs);                                 \
                z = piece_moments(out, e, A->shift, &a1, &a2, &aa);                                  \
            } else {                                                                                 \
                piece_bins(out, e, A->lo, A->scale, A->top, A->shift, idx, &a1, &a2, &aa, &z);      \
            }                                                                                        \
            if (lanes != NULL) {                                                                     \
                count_pair_lanes(pairs, e / 2, lanes);                                               \
                if ((pending += e) > (1 << 30)) {                                                    \
                    flush_lanes(lanes, A->table);                                                    \
                    pending = 0;                                                                     \
                }                                                                                    \
            } else {                                                                                 \
                count_pair_idx(idx, e, A->table);                                                    \
            }                                                                                        \
            add_piece(out, e, A->shift, a1, a2, aa, &s1, &s2, &sa);                                  \
            zeros += z;                                                                              \
        }                                                                                            \
        if (lanes != NULL) {                                                                         \
            flush_lanes(lanes, A->table);                                                            \
        }                                                                                            \
        R->s1 = s1;                                                                                  \
        R->s2 = s2;                                                                                  \
        R->sa = sa;                                                                                  \
        R->zeros = zeros;                                                                            \
    }

/* Pass one with block bounds (SPAN, a statement setting L and U from J and b): blocks that cannot
   move the range are skipped undecoded, so there is no sum (total NaN; ggscope.stats
   then centres pass two on the middle of the range).  RANGE_BOUND_AS names the function and
   its target attributes (_cstats_z.h builds AVX-512 ones). */
/* A block pass one could not skip, decoded into out: its range folded into [lo, hi] (order
   keys) and [flo, fhi] (their values); 0 when it holds a NaN or Inf, its scale codes counted
   so far (blocks 0..upto) taken back.  Shared by RANGE_BOUND and _cstats_zrange.h. */
INLINE int fold_block_range(const job_t *J, const float *out, int n, Py_ssize_t upto, int32_t *lo, int32_t *hi,
                            float *flo, float *fhi) {
    int32_t mn, mx;
    float s;
    piece_range(out, n, &mn, &mx, &s);
    if (mn <= NEG_INF_KEY || mx >= POS_INF_KEY) {
        uncount_scales(J, upto);
        return 0;
    }
    *lo = mn < *lo ? mn : *lo;
    *hi = mx > *hi ? mx : *hi;
    *flo = key_value(*lo);
    *fhi = key_value(*hi);
    return 1;
}

/* The result of a pass one with block bounds: the range of its order keys, and no sum
   (total NaN: ggscope.stats centres pass two on sampled blocks instead). */
INLINE void bounds_result(const job_t *J, range_t *R, int32_t lo, int32_t hi) {
    R->lo = key_value(lo);
    R->hi = key_value(hi);
    R->total = NAN;
    R->ok = J->nb > 0;
}

#define RANGE_BOUND(NAME, N, DECODE, SPAN) RANGE_BOUND_AS(TARGETS, rangeb_##NAME, N, DECODE, SPAN)
#define RANGE_BOUND_AS(ATTR, FN, N, DECODE, SPAN)                                                   \
    ATTR static void FN(const job_t *J, range_t *R) {                                                \
        const int n = (N);                                                                           \
        const int per = PIECE / n > 0 ? PIECE / n : 1;                                               \
        float out[256] __attribute__((aligned(64)));                                                 \
        int32_t lo = 0x7FFFFFFF, hi = (int32_t) 0x80000000;                                          \
        float flo = INFINITY, fhi = -INFINITY;                                                       \
        for (Py_ssize_t p = 0; p < J->nb; p += per) {                                                \
            const Py_ssize_t end = p + per < J->nb ? p + per : J->nb;                                \
            prefetch_next(J, end, per);                                                              \
            for (Py_ssize_t bi = p; bi < end; bi++) {                                                \
                const uint8_t *restrict b = J->blocks + bi * J->bb;                                  \
                float L, U;                                                                          \
                count_scale(J, b);                                                                   \
                SPAN;                                                                                \
                if (L >= flo && U <= fhi) continue; /* false for NaN */                              \
                float *restrict o = out;                                                             \
                DECODE;                                                                              \
                if (!fold_block_range(J, out, n, bi, &lo, &hi, &flo, &fhi)) {                        \
                    R->ok = 0;                                                                       \
                    return;                                                                          \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
        bounds_result(J, R, lo, hi);                                                                 \
    }

/* Pass two of TQ1_0 by counting: a block's 256 values are -d, 0 and +d, so counting
   its trits gives its histogram and moments exactly, with three bin computations
   instead of 256 -- and without the counter collisions of a histogram whose values
   fall into three bins (the pair counting ran at half its usual speed there).  Counts
   go into the pair table as (b, b) pairs, the odd ones paired across bins: the fold
   over both axes gives the same bin counts. */
INLINE void tq1_0_trits(const uint8_t *restrict b, int8_t *restrict t) {
    int32_t pw = 1;
    for (int n = 0; n < 5; n++) {
        IVDEP
        for (int m = 0; m < 32; m++) t[32 * n + m] = (int8_t) trit(b[m], pw);
        IVDEP
        for (int m = 0; m < 16; m++) t[160 + 16 * n + m] = (int8_t) trit(b[32 + m], pw);
        if (n < 4)
            for (int m = 0; m < 4; m++) t[240 + 4 * n + m] = (int8_t) trit(b[48 + m], pw);
        pw *= 3;
    }
}

TARGETS static void bins_tq1_0_counts(const job_t *J, const binargs_t *A, bins_t *R) {
    int64_t cnt[256] = {0};
    double s1 = 0.0, s2 = 0.0, sa = 0.0;
    int64_t zeros = 0;
    int8_t t[256] __attribute__((aligned(64)));
    for (Py_ssize_t bi = 0; bi < J->nb; bi++) {
        const uint8_t *restrict b = J->blocks + bi * J->bb;
        if ((bi & 7) == 0) prefetch_next(J, bi + 8, 8);
        tq1_0_trits(b, t);
        int32_t sum = 0, sq = 0;
        for (int j = 0; j < 256; j++) {
            sum += t[j];
            sq += t[j] * t[j];
        }
        const int64_t np_ = (sq + sum) / 2, nm = (sq - sum) / 2, n0 = 256 - sq;
        const float d = f16(b, 52, J->big, J->lut);
        const float v[3] = {(float) -1 * d, (float) 0 * d, (float) 1 * d};
        const int64_t c[3] = {nm, n0, np_};
        for (int k = 0; k < 3; k++) {
            int32_t x = (int32_t) ((v[k] - A->lo) * A->scale);
            x = x < A->top ? x : A->top;
            cnt[x > 0 ? x : 0] += c[k];
            const double dv = (double) (v[k] - A->shift);
            s1 += dv * (double) c[k];
            s2 += dv * dv * (double) c[k];
            sa += fabs((double) v[k]) * (double) c[k];
            zeros += v[k] == 0.0f ? c[k] : 0;
        }
    }
    int odd = -1;
    for (int k = 0; k < 256; k++) {
        A->table[k + 256 * k] += cnt[k] / 2;
        if (cnt[k] % 2) {
            if (odd < 0) {
                odd = k;
            } else {
                A->table[odd + 256 * k] += 1;
                odd = -1;
            }
        }
    }
    R->s1 = s1;
    R->s2 = s2;
    R->sa = sa;
    R->zeros = zeros;
}

/* Decoding alone, every block into ``dst`` (J->nb * n floats): what ``diff`` compares.  The
   last block goes through a padded buffer, as every block of the drivers above does (a
   decoder may write its lanes past the block's n values; the next block overwrites them). */
#define DECODE_TO(NAME, N, DECODE)                                                                   \
    TARGETS static void decto_##NAME(const job_t *J, float *restrict dst) {                          \
        const int n = (N);                                                                           \
        float last[512] __attribute__((aligned(64)));                                               \
        for (Py_ssize_t bi = 0; bi < J->nb; bi++) {                                                  \
            const uint8_t *restrict b = J->blocks + bi * J->bb;                                      \
            float *restrict o = bi + 1 < J->nb ? dst + bi * n : last;                                \
            DECODE;                                                                                  \
            if (o == last) memcpy(dst + bi * n, last, (size_t) n * sizeof(float));                   \
        }                                                                                            \
    }

/* One line per decoder variant: the block bound pass one uses when it has one
   (BOUNDED), else a pass one that decodes every block and sums (DECODED). */
#define DECODED(NAME, N, DECODE) RANGE_FULL(NAME, N, DECODE) BINS(NAME, N, DECODE) DECODE_TO(NAME, N, DECODE)
#define BOUNDED(NAME, N, DECODE, SPAN) RANGE_BOUND(NAME, N, DECODE, SPAN) BINS(NAME, N, DECODE) \
    DECODE_TO(NAME, N, DECODE)
#define A(i) (J->a[i])
/* nibbles: d_at, wide, m_at, qh_at, qs_at, half, interleaved, bias, outlier_at.  The
   four upstream layouts (plain halves, f16 scale, no outlier) get variants of their own. */
DECODED(nib, J->n, dec_nibbles(J, b, o, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8)))
BOUNDED(nib_00, 32, dec_nibbles(J, b, o, A(0), 0, -1, -1, A(4), 16, 0, A(7), -1),
        span_nibbles(J, b, A(0), 0, -1, -1, A(7), -1, &L, &U))
BOUNDED(nib_10, 32, dec_nibbles(J, b, o, A(0), 0, A(2), -1, A(4), 16, 0, A(7), -1),
        span_nibbles(J, b, A(0), 0, A(2), -1, A(7), -1, &L, &U))
BOUNDED(nib_01, 32, dec_nibbles(J, b, o, A(0), 0, -1, A(3), A(4), 16, 0, A(7), -1),
        span_nibbles(J, b, A(0), 0, -1, A(3), A(7), -1, &L, &U))
BOUNDED(nib_11, 32, dec_nibbles(J, b, o, A(0), 0, A(2), A(3), A(4), 16, 0, A(7), -1),
        span_nibbles(J, b, A(0), 0, A(2), A(3), A(7), -1, &L, &U))
/* int8: d_at, wide, qs_at, n */
BOUNDED(int8, J->n, dec_int8(J, b, o, A(0), A(1), A(2), A(3)), span_int8(J, b, A(0), A(1), &L, &U))
BOUNDED(int8_32, 32, dec_int8(J, b, o, A(0), 0, A(2), 32), span_int8(J, b, A(0), 0, &L, &U))
/* crumbs: d_at, qs_at, n, bits, row */
DECODED(crumbs, J->n, dec_crumbs(J, b, o, A(0), A(1), A(2), A(3), A(4)))
RANGE_BOUND(tq1_0, 256, dec_tq1_0(J, b, o), sym(fabsf(f16(b, 52, J->big, J->lut)), &L, &U))
DECODE_TO(tq1_0, 256, dec_tq1_0(J, b, o))
BOUNDED(q2_k, 256, dec_q2_k(J, b, o), span_q2_k(J, b, &L, &U))
BOUNDED(q3_k, 256, dec_q3_k(J, b, o), span_q3_k(J, b, &L, &U))
BOUNDED(q4_k, 256, dec_q45_k(J, b, o, 16, 0), span_q45_k(J, b, 0, &L, &U))
BOUNDED(q5_k, 256, dec_q45_k(J, b, o, 48, 1), span_q45_k(J, b, 1, &L, &U))
BOUNDED(q6_k, 256, dec_q6_k(J, b, o), span_q6_k(J, b, &L, &U))
/* table4: mode, groups, span */
BOUNDED(table4_0, J->n, dec_table4(J, b, o, 0, A(1), A(2)), span_table4(J, b, 0, A(1), &L, &U))
BOUNDED(table4_1, J->n, dec_table4(J, b, o, 1, A(1), A(2)), span_table4(J, b, 1, A(1), &L, &U))
BOUNDED(table4_2, J->n, dec_table4(J, b, o, 2, A(1), A(2)), span_table4(J, b, 2, A(1), &L, &U))
BOUNDED(table4_3, J->n, dec_table4(J, b, o, 3, A(1), A(2)), span_table4(J, b, 3, A(1), &L, &U))
DECODED(iq2_0, 256, dec_iq2(J, b, o, 0))
DECODED(iq2_1, 256, dec_iq2(J, b, o, 1))
DECODED(iq2_2, 256, dec_iq2(J, b, o, 2))
DECODED(iq3_0, 256, dec_iq3(J, b, o, 0))
DECODED(iq3_1, 256, dec_iq3(J, b, o, 1))
DECODED(iq1_0, 256, dec_iq1(J, b, o, 0))
DECODED(iq1_1, 256, dec_iq1(J, b, o, 1))
#undef A
#include "_cstats_z.h"

typedef void (*range_fn)(const job_t *, range_t *);
typedef void (*bins_fn)(const job_t *, const binargs_t *, bins_t *);
typedef void (*decode_fn)(const job_t *, float *);
/* pick's third answer: the variant's decode-only driver (one slot: pick runs with the GIL held) */
static decode_fn picked_decode;

/* The families by the names fused_specs gives their decoders, and how many constant
   arguments each takes. */
static const struct {
    const char *name;
    int nargs;
} FAMILIES[] = {
    {"_dec_nibbles", 9}, {"_dec_int8", 4}, {"_dec_crumbs", 5}, {"_dec_tq1_0", 0}, {"_dec_q2_k", 0}, {"_dec_q3_k", 0},
    {"_dec_q45_k", 2},  {"_dec_q6_k", 0}, {"_dec_table4", 3}, {"_dec_iq2", 1},   {"_dec_iq3", 1},  {"_dec_iq1", 1},
};
#define N_FAMILIES ((int) (sizeof FAMILIES / sizeof FAMILIES[0]))

/* The variant for a family and its arguments, or 0 when the arguments are not ones
   this engine knows (the caller then uses the other engine). */
static int pick(int fam, const job_t *J, range_fn *rf, bins_fn *bf) {
#define USE(NAME)                    \
    do {                             \
        *rf = range_##NAME;          \
        *bf = z_bins(#NAME, bins_##NAME); \
        picked_decode = decto_##NAME; \
        return 1;                    \
    } while (0)
#define USEB(NAME)                   \
    do {                             \
        *rf = z_range(#NAME, rangeb_##NAME); \
        *bf = z_bins(#NAME, bins_##NAME); \
        picked_decode = decto_##NAME; \
        return 1;                    \
    } while (0)
    const int *a = J->a;
    switch (fam) {
    case 0:
        if (a[1] == 0 && a[5] == 16 && a[6] == 0 && a[8] < 0 && J->n == 32) {
            if (a[2] < 0 && a[3] < 0) USEB(nib_00);
            if (a[2] >= 0 && a[3] < 0) USEB(nib_10);
            if (a[2] < 0 && a[3] >= 0) USEB(nib_01);
            USEB(nib_11);
        }
        if (J->n != 2 * a[5]) return 0;
        USE(nib);
    case 1:
        if (J->n != a[3]) return 0;
        if (a[1] == 0 && a[3] == 32) USEB(int8_32);
        USEB(int8);
    case 2:
        if (J->n != a[2] || (a[3] != 1 && a[3] != 2) || (a[4] && J->n % 128)) return 0;
        USE(crumbs);
    case 3:
        if (J->n != 256) return 0;
        *rf = rangeb_tq1_0;
        *bf = bins_tq1_0_counts;
        picked_decode = decto_tq1_0;
        return 1;
    case 4: if (J->n != 256) return 0; USEB(q2_k);
    case 5: if (J->n != 256) return 0; USEB(q3_k);
    case 6:
        if (J->n != 256) return 0;
        if (a[0] == 16 && a[1] == 0) USEB(q4_k);
        if (a[0] == 48 && a[1] == 1) USEB(q5_k);
        return 0;
    case 7: if (J->n != 256) return 0; USEB(q6_k);
    case 8:
        if (J->n != a[1] * a[2] || a[2] % 2 || a[1] <= 0) return 0;
        switch (a[0]) {
        case 0: USEB(table4_0);
        case 1: USEB(table4_1);
        case 2: USEB(table4_2);
        case 3: USEB(table4_3);
        }
        return 0;
    case 9:
        if (J->n != 256 || a[0] < 0 || a[0] > 2) return 0;
        if (a[0] == 0) USE(iq2_0);
        if (a[0] == 1) USE(iq2_1);
        USE(iq2_2);
    case 10:
        if (J->n != 256 || a[0] < 0 || a[0] > 1) return 0;
        if (a[0] == 0) USE(iq3_0);
        USE(iq3_1);
    case 11:
        if (J->n != 256 || a[0] < 0 || a[0] > 1) return 0;
        if (a[0] == 0) USE(iq1_0);
        USE(iq1_1);
    }
    return 0;
#undef USE
#undef USEB
}

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
