/* The AVX2 paths of _cggml.c's F16 and Q8_0-family products, picked at run time
   (included by _cggml.c after _cggml_q0.h).

   Why a file of its own: the portable kernels spell out ggml's lanes in C, which any
   CPU runs to the same bits but slowly; these put the same lanes in __m256 registers
   with the same fused multiply-adds, so only the speed differs.  Contract: with GCC on
   x86-64, HAVE_AVX2_PATH is defined and mm_f16_avx2, mm_q0_avx2 and mm_q0_repack_avx2
   give the bits of mm_f16_kernel, mm_q0_kernel and mm_q0_repack_kernel; have_avx2() says
   whether to use them (the CPU has AVX2 and FMA, and GGSCOPE_GGML_GENERIC is not 1: the
   tests' way to run the portable loops); elsewhere have_avx2() is 0. */
#ifndef GGSCOPE_CGGML_AVX2_H
#define GGSCOPE_CGGML_AVX2_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/* mm_f16_kernel on AVX2 registers: ggml's 16 lanes as two __m256 (lanes 0-7, 8-15),
   each lane the same fma chain; tiles of 2 weight rows by 4 activation rows. */
__attribute__((target("avx2,fma"))) static void mm_f16_avx2(const float *restrict x, const float *restrict w,
                                                            float *restrict out, int64_t T, int64_t M, int64_t K) {
    for (int64_t m0 = 0; m0 < M; m0 += 2) {
        const int64_t rm = M - m0 < 2 ? M - m0 : 2;
        for (int64_t t0 = 0; t0 < T; t0 += 4) {
            const int64_t rt = T - t0 < 4 ? T - t0 : 4;
            __m256 lo[2][4], hi[2][4];
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 4; c++) lo[r][c] = hi[r][c] = _mm256_setzero_ps();
            for (int64_t l = 0; l < K; l += 16) {
                __m256 wl[2], wh[2];
                for (int64_t r = 0; r < rm; r++) {
                    wl[r] = _mm256_loadu_ps(w + (m0 + r) * K + l);
                    wh[r] = _mm256_loadu_ps(w + (m0 + r) * K + l + 8);
                }
                for (int64_t c = 0; c < rt; c++) {
                    const __m256 xl = _mm256_loadu_ps(x + (t0 + c) * K + l);
                    const __m256 xh = _mm256_loadu_ps(x + (t0 + c) * K + l + 8);
                    for (int64_t r = 0; r < rm; r++) {
                        lo[r][c] = _mm256_fmadd_ps(wl[r], xl, lo[r][c]);
                        hi[r][c] = _mm256_fmadd_ps(wh[r], xh, hi[r][c]);
                    }
                }
            }
            for (int64_t r = 0; r < rm; r++)
                for (int64_t c = 0; c < rt; c++) {
                    float lanes[16];
                    _mm256_storeu_ps(lanes, lo[r][c]);
                    _mm256_storeu_ps(lanes + 8, hi[r][c]);
                    out[(t0 + c) * M + m0 + r] = reduce16(lanes);
                }
        }
    }
}

/* mm_q0_kernel with AVX2 integer sums: the same bits (a lane's four products summed as
   ggml's maddubs / madd do, exactly: at most 2 * 128 * 127 per pair, no saturation; the
   float lanes the same fmas), about 8 times faster than the compiler's widening of the
   generic loop. */
__attribute__((target("avx2,fma"))) static void mm_q0_avx2(const int8_t *restrict qx, const float *restrict dx,
                                                           const int8_t *restrict qw, const float *restrict dw,
                                                           float *restrict out, int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t m = 0; m < M; m++) {
        const int8_t *wq = qw + m * K;
        const float *wd = dw + m * nb;
        for (int64_t t0 = 0; t0 < T; t0 += 4) {
            const int64_t rt = T - t0 < 4 ? T - t0 : 4;
            __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
            for (int64_t b = 0; b < nb; b++) {
                const __m256i a = _mm256_loadu_si256((const __m256i *) (wq + b * 32));
                const __m256i ax = _mm256_sign_epi8(a, a);
                for (int64_t c = 0; c < rt; c++) {
                    const __m256i y = _mm256_loadu_si256((const __m256i *) (qx + (t0 + c) * K + b * 32));
                    const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(y, a)), ones);
                    const __m256 dd = _mm256_set1_ps(wd[b] * dx[(t0 + c) * nb + b]);
                    acc[c] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(dot), acc[c]);
                }
            }
            for (int64_t c = 0; c < rt; c++) {
                float lanes[8];
                _mm256_storeu_ps(lanes, acc[c]);
                out[(t0 + c) * M + m] = reduce8(lanes);
            }
        }
    }
}

/* mm_q0_repack_kernel with AVX2 integer sums, eight activation rows at a time: each
   row's 32-product block sum as one exact integer (maddubs / madd, then horizontal adds
   of the eight rows together), then per row the same scalar fma chain, run as one
   8-lane fma whose lane t is row t's chain (dxt: the activation scales [nb][T]). */
__attribute__((target("avx2,fma"))) static void mm_q0_repack_avx2(const int8_t *restrict qx,
                                                                  const float *restrict dxt,
                                                                  const int8_t *restrict qw,
                                                                  const float *restrict dw, float *restrict out,
                                                                  int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t m = 0; m < M; m++) {
        const int8_t *wq = qw + m * K;
        const float *wd = dw + m * nb;
        int64_t t0 = 0;
        for (; t0 + 8 <= T; t0 += 8) {
            __m256 acc = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                const __m256i a = _mm256_loadu_si256((const __m256i *) (wq + b * 32));
                const __m256i ax = _mm256_sign_epi8(a, a);
                __m256i d[8];
                for (int c = 0; c < 8; c++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *) (qx + (t0 + c) * K + b * 32));
                    d[c] = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(v, a)), ones);
                }
                const __m256i h01 = _mm256_hadd_epi32(d[0], d[1]), h23 = _mm256_hadd_epi32(d[2], d[3]);
                const __m256i h45 = _mm256_hadd_epi32(d[4], d[5]), h67 = _mm256_hadd_epi32(d[6], d[7]);
                const __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
                /* q0 = [r0 r1 r2 r3 | r0' r1' r2' r3'] (halves of rows 0-3), q1 the same for 4-7 */
                const __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                                                      _mm256_permute2x128_si256(q0, q1, 0x31));
                const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(wd[b]), _mm256_loadu_ps(dxt + b * T + t0));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), dd, acc);
            }
            _mm256_storeu_ps(out + m * T + t0, acc);         /* transposed: [M][T], see the caller */
        }
        for (; t0 < T; t0++) {
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const __m256i a = _mm256_loadu_si256((const __m256i *) (wq + b * 32));
                const __m256i v = _mm256_loadu_si256((const __m256i *) (qx + t0 * K + b * 32));
                const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(a, a),
                                                                           _mm256_sign_epi8(v, a)), ones);
                __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(dot), _mm256_extracti128_si256(dot, 1));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
                acc = fmaf((float) _mm_cvtsi128_si32(s4), wd[b] * dxt[b * T + t0], acc);
            }
            out[m * T + t0] = acc;
        }
    }
}
#endif

static int have_avx2(void) {
#ifdef HAVE_AVX2_PATH
    static int known = -1;
    if (known < 0) {                                /* GGSCOPE_GGML_GENERIC=1: the portable loops (tests) */
        const char *generic = getenv("GGSCOPE_GGML_GENERIC");
        __builtin_cpu_init();
        known = !(generic && generic[0] == '1') && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
#else
    return 0;
#endif
}

#endif
