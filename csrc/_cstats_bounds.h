/* Pass one's block bounds (included by _cstats.c after _cstats_decode.h).

   Why a file of its own: _cstats.c is split by job; bounding a block from its scales
   is what lets pass one skip most blocks undecoded, a job apart from decoding them.
   Contract: span_FAMILY(J, b, ..., &L, &U) sets [L, U] to signed bounds no decoded
   value of the block passes -- the decoder's own float32 products with the largest
   code -- or to NaN when a scale is not finite, so the block is decoded and its
   non-finite value seen. */
#ifndef GGSCOPE_CSTATS_BOUNDS_H
#define GGSCOPE_CSTATS_BOUNDS_H

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

#endif /* GGSCOPE_CSTATS_BOUNDS_H */
