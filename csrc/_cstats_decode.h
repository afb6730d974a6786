/* The field readers and the decoders of ggscope._cstats, one per layout family (included
   by _cstats.c first, after job_t).

   Why a file of its own: _cstats.c is split by job (style.md: past ~400 lines); decoding
   a block is the job every pass builds on, and it is the part ported from
   ggscope/stats/fused.py line for line.  Contract: each dec_* writes its block's values
   to out[0 : J->n] in ggml's element order and float32 operation order (no FMA
   contraction: setup.py compiles with -ffp-contract=off), reading only the block's
   bytes, the f16 table and the family's tables (whose sizes setup_job checked against
   every index a byte can give). */
#ifndef GGSCOPE_CSTATS_DECODE_H
#define GGSCOPE_CSTATS_DECODE_H

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

#endif /* GGSCOPE_CSTATS_DECODE_H */
