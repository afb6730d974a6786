/* The conversions and horizontal sums every kernel of _cggml.c shares, and the F16
   product (included by _cggml.c first, after _ctargets.h).

   Why a file of its own: _cggml.c is split by job (style.md: past ~400 lines); these
   are the pieces the other parts build on.  Contract: f32_to_f16 / f16_to_f32 give
   ggml's GGML_CPU_FP32_TO_FP16 / FP16_TO_FP32 bits; reduce16 GCC's _mm512_reduce_add_ps
   and reduce8 sgemm.cpp's hsum(__m256) over lanes in memory; mm_f16_kernel the portable
   tinyBLAS<16> order (see _cggml.c's comment; mm_f16_avx2 in _cggml_avx2.h is the same
   bits on AVX2 registers). */
#ifndef GGSCOPE_CGGML_F16_H
#define GGSCOPE_CGGML_F16_H

/* ---- conversions ------------------------------------------------------------------ */

/* fp32 -> fp16 bits, round half to even (F16C _cvtss_sh(x, 0), ggml's GGML_CPU_FP32_TO_FP16) */
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return (uint16_t) (sign | 0x7C00u | (a > 0x7F800000u ? 0x200u | ((a >> 13) & 0x3FFu) : 0));
    if (a >= 0x477FF000u) return (uint16_t) (sign | 0x7C00u);          /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                               /* fp16 subnormal or zero */
        if (a < 0x33000000u) return (uint16_t) sign;                     /* below half the smallest */
        const uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - e;                                  /* 14 + (113 - e) - 1 */
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t) (sign | r);
    }
    uint32_t r = a - 0x38000000u;                                        /* rebias 127 -> 15 */
    const uint32_t rem = r & 0x1FFFu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
    return (uint16_t) (sign | r);
}

static float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, x;
    if (e == 0x1Fu) x = sign | 0x7F800000u | (m << 13);
    else if (e) x = sign | ((e + 112u) << 23) | (m << 13);
    else if (!m) x = sign;
    else {                                                               /* subnormal: normalise */
        e = 113;
        while (!(m & 0x400u)) { m <<= 1; e--; }
        x = sign | (e << 23) | ((m & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* GCC's _mm512_reduce_add_ps: (upper 256 + lower 256), (upper 128 + lower 128), then
   (t0 + t2) + (t1 + t3) */
static inline float reduce16(const float *a) {
    float t3[8], t6[4];
    for (int i = 0; i < 8; i++) t3[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) t6[i] = t3[i + 4] + t3[i];
    return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}

/* sgemm.cpp hsum(__m256): (upper 128 + lower 128), then (s0 + s2) + (s1 + s3) */
static inline float reduce8(const float *a) {
    float s[4];
    for (int i = 0; i < 4; i++) s[i] = a[i + 4] + a[i];
    return (s[0] + s[2]) + (s[1] + s[3]);
}

/* ---- F16 weights: tinyBLAS<16> over F16-rounded activations ------------------------ */

/* out[t][m] = sum_k w[m][k] * x[t][k]; w holds F16 values as float32 (exact), x the
   activations already rounded to F16 (ggml_cpu_fp32_to_fp16). K % 16 == 0. */
TARGETS static void mm_f16_kernel(const float *restrict x, const float *restrict w, float *restrict out,
                                  int64_t T, int64_t M, int64_t K) {
    for (int64_t m0 = 0; m0 < M; m0 += 4) {
        const int64_t rm = M - m0 < 4 ? M - m0 : 4;
        for (int64_t t = 0; t < T; t++) {
            float acc[4][16];
            memset(acc, 0, sizeof acc);
            const float *xr = x + t * K;
            for (int64_t l = 0; l < K; l += 16) {
                for (int64_t r = 0; r < rm; r++) {
                    const float *wr = w + (m0 + r) * K + l;
                    for (int i = 0; i < 16; i++) acc[r][i] = fmaf(wr[i], xr[l + i], acc[r][i]);
                }
            }
            for (int64_t r = 0; r < rm; r++) out[t * M + m0 + r] = reduce16(acc[r]);
        }
    }
}

#endif
