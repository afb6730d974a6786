/* ggml-cpu's BF16 x BF16 products for _cggml.c (included there, after reduce16): the
   arithmetic of VDPBF16PS and the two orders ggml sums it in.

   Why a file of its own: _cggml.c is past the size one reads in a sitting; this part is
   self-contained (BF16 conversions, one instruction's semantics, two loops and the
   instruction itself picked at run time).  Contract: mm_bf16_kernel / mm_bf16_avx512 give
   tinyBLAS<32, __m512, __m512bh>'s bits (K % 32 == 0), vec_dot_bf16 ggml_vec_dot_bf16's;
   x and w are BF16 bits. */
#ifndef GGSCOPE_CGGML_BF16_H
#define GGSCOPE_CGGML_BF16_H

/* ---- BF16 weights: tinyBLAS<32, __m512, __m512bh> with VDPBF16PS ------------------- */

/* A float32 array of BF16 values (exact) back to its 16 bits. */
static inline uint16_t bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t) (u >> 16);
}

/* ggml_compute_fp32_to_bf16 (ggml-impl.h): round half to even, NaN made quiet */
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t) ((u >> 16) | 64);
    return (uint16_t) ((u + (0x7FFFu + ((u >> 16) & 1))) >> 16);
}

static inline float bf16_f32(uint16_t h) {
    const uint32_t u = (uint32_t) h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* VDPBF16PS's arithmetic on one lane (Intel SDM, "VDPBF16PS": per lane two fused
   multiply-adds, the odd pair first, inputs' denormals read as zero, a denormal result
   flushed to zero, round to nearest even; checked against the instruction on 32 million
   random lanes, NaN, infinities and denormals included). */
static inline float daz(float v) { return fpclassify(v) == FP_SUBNORMAL ? copysignf(0.0f, v) : v; }

static inline float dpbf16_lane(float c, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
    c = daz(c);
    c = daz(fmaf(daz(bf16_f32(a1)), daz(bf16_f32(b1)), c));
    return daz(fmaf(daz(bf16_f32(a0)), daz(bf16_f32(b0)), c));
}

/* out[t][m]: 16 lanes, lane i adding the pairs (l + 2i, l + 2i + 1) of every 32 by
   dpbf16_lane, then _mm512_reduce_add_ps; x and w BF16 bits, K % 32 == 0 */
static void mm_bf16_kernel(const uint16_t *restrict x, const uint16_t *restrict w, float *restrict out,
                           int64_t T, int64_t M, int64_t K) {
    for (int64_t m = 0; m < M; m++) {
        const uint16_t *wr = w + m * K;
        for (int64_t t = 0; t < T; t++) {
            const uint16_t *xr = x + t * K;
            float acc[16] = {0};
            for (int64_t l = 0; l < K; l += 32)
                for (int i = 0; i < 16; i++)
                    acc[i] = dpbf16_lane(acc[i], wr[l + 2 * i], wr[l + 2 * i + 1], xr[l + 2 * i], xr[l + 2 * i + 1]);
            out[t * M + m] = reduce16(acc);
        }
    }
}

/* ggml_vec_dot_bf16 (vec.cpp, __AVX512BF16__): two 16-lane accumulators over each 64
   (elements 0-31 and 32-63), each reduced and added in double, the rest as float
   products in double */
static float vec_dot_bf16(const uint16_t *restrict x, const uint16_t *restrict y, int64_t n) {
    float c1[16] = {0}, c2[16] = {0};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int l = 0; l < 16; l++) {
            c1[l] = dpbf16_lane(c1[l], x[i + 2 * l], x[i + 2 * l + 1], y[i + 2 * l], y[i + 2 * l + 1]);
            c2[l] = dpbf16_lane(c2[l], x[i + 32 + 2 * l], x[i + 33 + 2 * l], y[i + 32 + 2 * l], y[i + 33 + 2 * l]);
        }
    double sumf = 0.0;
    sumf += (double) reduce16(c1);
    sumf += (double) reduce16(c2);
    for (; i < n; i++) sumf += (double) (bf16_f32(x[i]) * bf16_f32(y[i]));
    return (float) sumf;
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 10
#include <immintrin.h>
#define HAVE_BF16_PATH 1
/* mm_bf16_kernel with the instruction itself (tiles of 4 activation rows) */
__attribute__((target("avx512f,avx512bf16"))) static void mm_bf16_avx512(const uint16_t *restrict x,
        const uint16_t *restrict w, float *restrict out, int64_t T, int64_t M, int64_t K) {
    for (int64_t m = 0; m < M; m++) {
        const uint16_t *wr = w + m * K;
        for (int64_t t0 = 0; t0 < T; t0 += 4) {
            const int64_t rt = T - t0 < 4 ? T - t0 : 4;
            __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            for (int64_t l = 0; l < K; l += 32) {
                const __m512bh a = (__m512bh) _mm512_loadu_ps((const float *) (wr + l));
                for (int64_t c = 0; c < rt; c++)
                    acc[c] = _mm512_dpbf16_ps(acc[c], a, (__m512bh) _mm512_loadu_ps((const float *) (x + (t0 + c) * K + l)));
            }
            for (int64_t c = 0; c < rt; c++) {
                float lanes[16];
                _mm512_storeu_ps(lanes, acc[c]);
                out[(t0 + c) * M + m] = reduce16(lanes);
            }
        }
    }
}

static int have_bf16(void) {
    static int known = -1;
    if (known < 0) {                                /* GGSCOPE_GGML_GENERIC=1: the portable loops (tests) */
        const char *generic = getenv("GGSCOPE_GGML_GENERIC");
        __builtin_cpu_init();
        known = !(generic && generic[0] == '1') && __builtin_cpu_supports("avx512bf16");
    }
    return known;
}
#endif

#endif
