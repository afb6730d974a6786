/* ggscope.forward._cggml: ggml-cpu's matrix products and flash attention, each output
   element summed in the order llama.cpp's CPU backend sums it.

   Why: gemma-3-270m's KL-divergence report moves by 1-3 % with any 1e-7 change
   upstream (llama.cpp's own two attention paths differ by 2.5 % in PPL(Q)), so
   reproducing llama-perplexity's figures takes every product bit for bit -- the lanes,
   the fused multiply-adds and the horizontal sums -- and numpy cannot do that fast.

   Which build each order matches: llama.cpp as vendored in llama-cpp-python 0.3.36,
   ggml-cpu compiled with GGML_LLAMAFILE=ON for an x86-64 with AVX-512F and FMA (the
   GGML_NATIVE build of the machine the fixtures were recorded on), by GCC:

   * mm_f16: ggml/src/ggml-cpu/llamafile/sgemm.cpp tinyBLAS<16, __m512, __m512,
     ggml_fp16_t, ggml_fp16_t, float>, which ggml_compute_forward_mul_mat takes for an F16
     weight once the activations are converted to F16, with at least 2 rows, k % 16 == 0
     and rows % 4 == 0: 16 float lanes, lane i summing elements l + i by fma over the
     row, then GCC's _mm512_reduce_add_ps (halves, quarters, then (t0+t2)+(t1+t3)).
     (An AVX2-only build uses 8 lanes: not this order.)
   * mm_q0: sgemm.cpp tinyBLAS_Q0_AVX<block_q8_0 | q4_0 | q5_0 | iq4_nl, block_q8_0> (any
     AVX / AVX2 / AVX-512 build): per 32-block, 8 lanes each holding the exact integer
     sum of 4 neighbouring products, lane += fp32(d_w)*fp32(d_x) * that sum by fma,
     then hsum(__m256) = ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).  The activations are
     quantize_row_q8_0 of ggml-cpu/arch/x86/quants.c: d = amax/127, q =
     round-half-even(x * (127/amax)), d stored as fp16.
   * mm_q0 with repack: a Q4_0 / IQ4_NL weight whose rows are a multiple of 8 is not multiplied by
     tinyBLAS on an AVX2 / AVX-512 CPU: llama.cpp loads it into ggml-cpu's CPU_REPACK
     buffer (block_q4_0x8), whose kernels (arch/x86/repack.cpp gemm/gemv_q4_b32_8x8_q8_0
     _lut_avx) sum each 32-block as one integer and add float(sum) * (d_w * d_x) by fma,
     block after block.  (An ARM build repacks differently; a build without AVX2 not.)
   * mm_q1: Q4_1 / Q5_1, which sgemm does not take: vec_dot_q4_1_q8_1 / _q5_1_q8_1 (see
     the kernel's comment; AVX2 builds).
   * mm_q4k: Q4_K of rows % 8 == 0, repacked on AVX2 (repack.cpp ggml_gemm_q4_K_8x8_q8_K),
     and (type 10) Q2_K of rows % 8 == 0, repacked on AVX-512 (ggml_gemm / gemv_q2_K_8x8_q8_K):
     see the kernels' comments.
   * mm_ktiled: Q3_K .. Q6_K (Q4_K of other rows) and IQ4_XS, ggml-cpu's tiled K-quant
     path (tiled/tiled.cpp, the VNNI microkernel) for at least 8 activation rows; Q6_K,
     Q5_K and IQ4_XS of fewer rows: arch/x86/quants.c ggml_vec_dot_*_q8_K.  Q3_K's and
     Q4_K's vec_dot, Q2_K not repacked and the other i-quants have no kernel here.
   * mm_bf16 (csrc/_cggml_bf16.h): BF16 weights, sgemm.cpp tinyBLAS<32, __m512,
     __m512bh> (a build with AVX512-BF16: 16 lanes, each VDPBF16PS over pairs, then _mm512_reduce_add_ps) for at
     least 2 rows, k % 32 == 0 and rows % 4 == 0, else vec.cpp ggml_vec_dot_bf16; the
     instruction itself where the CPU has it, else a loop with its exact arithmetic.  (An
     AVX-512F build without BF16 uses tinyBLAS<16> over float32: not this order.)
   * fa_tiled: ggml-cpu/ops.cpp ggml_compute_forward_flash_attn_ext_tiled (q F32, k/v
     F16 or F32, >= GGML_FA_TILE_Q = 64 query rows), per query row: scores over tiles of
     GGML_FA_TILE_KV = 64 keys, each a sequential fma over the head dimension
     (simd-gemm.h), the online softmax with ggml_v_expf (AVX-512) and its 16-lane sums
     accumulated in double (vec.cpp ggml_vec_soft_max_f32), the rescale by expf(Mold -
     Mnew), the value sums as sequential fmas over the keys, then 1/S.

   Machines other than x86-64 with AVX-512 run ggml-cpu paths of other orders; these
   kernels still compute the order above (the lanes are spelled out in C: any compiler,
   any CPU gives the same bits, target_clones only makes it faster).  Inputs are
   C-contiguous buffers whose lengths are checked against the dimensions given; the
   GIL is released while the kernels run.  Built with -ffp-contract=off (setup.py):
   every fused multiply-add here is an explicit fmaf (or, in the AVX2 paths picked at run
   time, _mm256_fmadd_ps on the same lanes), nothing else is fused. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_ctargets.h"

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

#include "_cggml_bf16.h"

/* ---- Q8_0 / Q4_0 weights: tinyBLAS_Q0_AVX over Q8_0 activations -------------------- */

/* quantize_row_q8_0 (x86): n % 32 == 0; q int8, d the fp16 scale as float */
TARGETS static void quantize_q8_0(const float *restrict x, int8_t *restrict q, float *restrict d, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + b * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) {
            const float a = fabsf(xb[i]);
            amax = a > amax ? a : amax;
        }
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        d[b] = f16_to_f32(f32_to_f16(amax / 127.f));
        for (int i = 0; i < 32; i++) q[b * 32 + i] = (int8_t) (int) rintf(xb[i] * id);
    }
}

/* A weight's blocks as int8 values and float scales: type 8 = Q8_0 (34-byte blocks:
   fp16 d, 32 int8), 2 = Q4_0 (18-byte blocks: fp16 d, 16 bytes whose low nibbles are
   elements 0-15 and high nibbles 16-31, each minus 8). */
static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static const int8_t KVALUES_IQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static int q0_block_bytes(int type) {
    switch (type) {
    case 8: return 34;                               /* Q8_0 */
    case 2: return 18;                               /* Q4_0 */
    case 6: return 22;                               /* Q5_0 */
    case 20: return 18;                              /* IQ4_NL */
    default: return 0;
    }
}

/* A weight's blocks as int8 values and float scales (ggml-common.h layouts; each value
   as sgemm.cpp's load() gives it): Q8_0 32 int8; Q4_0 low nibbles are elements 0-15,
   high nibbles 16-31, minus 8; Q5_0 the same with bit i of qh as element i's fifth bit,
   minus 16; IQ4_NL the nibbles through kvalues_iq4nl. */
static void unpack_q0(const uint8_t *raw, int type, int8_t *q, float *d, int64_t nblocks) {
    const int bs = q0_block_bytes(type);
    for (int64_t b = 0; b < nblocks; b++) {
        const uint8_t *p = raw + b * bs;
        int8_t *o = q + b * 32;
        d[b] = f16_to_f32((uint16_t) (p[0] | (p[1] << 8)));
        if (type == 8) {
            memcpy(o, p + 2, 32);
        } else if (type == 6) {
            const uint32_t qh = le32(p + 2);
            for (int i = 0; i < 16; i++) {
                o[i] = (int8_t) (((p[6 + i] & 0x0F) | (((qh >> i) & 1) << 4)) - 16);
                o[16 + i] = (int8_t) (((p[6 + i] >> 4) | (((qh >> (i + 16)) & 1) << 4)) - 16);
            }
        } else {
            for (int i = 0; i < 16; i++) {
                const int lo = p[2 + i] & 0x0F, hi = p[2 + i] >> 4;
                o[i] = (int8_t) (type == 20 ? KVALUES_IQ4NL[lo] : lo - 8);
                o[16 + i] = (int8_t) (type == 20 ? KVALUES_IQ4NL[hi] : hi - 8);
            }
        }
    }
}

TARGETS static void mm_q0_kernel(const int8_t *restrict qx, const float *restrict dx, const int8_t *restrict qw,
                                 const float *restrict dw, float *restrict out, int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 32;
    for (int64_t m = 0; m < M; m++) {
        const int8_t *wq = qw + m * K;
        const float *wd = dw + m * nb;
        for (int64_t t0 = 0; t0 < T; t0 += 4) {
            const int64_t rt = T - t0 < 4 ? T - t0 : 4;
            float acc[4][8];
            memset(acc, 0, sizeof acc);
            for (int64_t b = 0; b < nb; b++) {
                const int8_t *a = wq + b * 32;
                for (int64_t c = 0; c < rt; c++) {
                    const int8_t *y = qx + (t0 + c) * K + b * 32;
                    const float dd = wd[b] * dx[(t0 + c) * nb + b];
                    int32_t s[8];
                    for (int j = 0; j < 8; j++)
                        s[j] = a[4 * j] * y[4 * j] + a[4 * j + 1] * y[4 * j + 1] + a[4 * j + 2] * y[4 * j + 2]
                               + a[4 * j + 3] * y[4 * j + 3];
                    for (int j = 0; j < 8; j++) acc[c][j] = fmaf(dd, (float) s[j], acc[c][j]);
                }
            }
            for (int64_t c = 0; c < rt; c++) out[(t0 + c) * M + m] = reduce8(acc[c]);
        }
    }
}

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

/* Q4_1 / Q5_1 weights: no sgemm kernel, so ggml_vec_dot_q4_1_q8_1 / _q5_1_q8_1
   (arch/x86/quants.c, AVX2 with VNNI) for every row, against quantize_row_q8_1's blocks
   (q as Q8_0's, s = fp16(d * sum(q))): per block 8 lanes of 4 unsigned-by-signed
   products, lane += float(sum) * (d_x * d_y) by fma, summs = fma(m_x, s_y, summs) (the
   compiler contracts `summs += m*s`: vfmadd231ss in the oracle's libggml-cpu), result
   hsum_float_8(lanes) + summs.  type 3 = Q4_1 (20-byte blocks: d, m, 16 bytes of
   nibbles), 7 = Q5_1 (24: d, m, qh, 16 bytes). */
static void unpack_q1(const uint8_t *raw, int type, uint8_t *q, float *d, float *m, int64_t nblocks) {
    const int bs = type == 3 ? 20 : 24, off = type == 3 ? 4 : 8;
    for (int64_t b = 0; b < nblocks; b++) {
        const uint8_t *p = raw + b * bs;
        uint8_t *o = q + b * 32;
        d[b] = f16_to_f32((uint16_t) (p[0] | (p[1] << 8)));
        m[b] = f16_to_f32((uint16_t) (p[2] | (p[3] << 8)));
        uint32_t qh = 0;
        if (type == 7) qh = le32(p + 4);
        for (int i = 0; i < 16; i++) {
            o[i] = (uint8_t) ((p[off + i] & 0x0F) | (((qh >> i) & 1) << 4));
            o[16 + i] = (uint8_t) ((p[off + i] >> 4) | (((qh >> (i + 16)) & 1) << 4));
        }
    }
}

TARGETS static void mm_q1_kernel(const int8_t *restrict qx, const float *restrict dx, const float *restrict sx,
                                 const uint8_t *restrict qw, const float *restrict dw, const float *restrict mw,
                                 float *restrict out, int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 32;
    for (int64_t m = 0; m < M; m++)
        for (int64_t t = 0; t < T; t++) {
            float acc[8] = {0}, summs = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *a = qw + m * K + b * 32;
                const int8_t *y = qx + t * K + b * 32;
                summs = fmaf(mw[m * nb + b], sx[t * nb + b], summs);
                const float dd = dw[m * nb + b] * dx[t * nb + b];
                for (int j = 0; j < 8; j++) {
                    const int32_t s = a[4 * j] * y[4 * j] + a[4 * j + 1] * y[4 * j + 1] + a[4 * j + 2] * y[4 * j + 2]
                                      + a[4 * j + 3] * y[4 * j + 3];
                    acc[j] = fmaf((float) s, dd, acc[j]);
                }
            }
            out[t * M + m] = reduce8(acc) + summs;
        }
}

/* ggml-cpu/arch/x86/repack.cpp gemm_q4_b32_8x8_q8_0_lut_avx / gemv_..._lut_avx (the
   CPU_REPACK buffer ggml-cpu moves a Q4_0 weight of rows % 8 == 0 into on an AVX2 or
   AVX-512 CPU, repack.cpp ggml_repack_get_optimal_repack_type): each element's 32
   products summed as one exact integer per block, then acc += float(sum) *
   (d_w * d_x) by fma, block after block; no horizontal sum. */
TARGETS static void mm_q0_repack_kernel(const int8_t *restrict qx, const float *restrict dx,
                                        const int8_t *restrict qw, const float *restrict dw, float *restrict out,
                                        int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 32;
    for (int64_t m = 0; m < M; m++) {
        const int8_t *wq = qw + m * K;
        const float *wd = dw + m * nb;
        for (int64_t t = 0; t < T; t++) {
            const int8_t *y = qx + t * K;
            const float *yd = dx + t * nb;
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                int32_t s = 0;
                for (int i = 0; i < 32; i++) s += wq[b * 32 + i] * y[b * 32 + i];
                acc = fmaf((float) s, wd[b] * yd[b], acc);
            }
            out[t * M + m] = acc;
        }
    }
}

/* ---- Q4_K weights, repacked: arch/x86/repack.cpp ggml_gemm_q4_K_8x8_q8_K / gemv (a Q4_K
   weight of rows % 8 == 0 goes to the CPU_REPACK buffer as block_q4_Kx8 on AVX2) against
   ggml_quantize_mat_q8_K_4x8's Q8_K rows.  Per 256-superblock and per pair of 32-element
   sub-blocks: i = sum(q_w q_x over the first 32) * sc0 + (over the second) * sc1, exact;
   acc = fma(float(i), d_w * d_x, acc); the mins likewise from the activations' 16-element
   sums: acc_min = fma(float(bsum0 * m0 + bsum1 * m1), dmin_w * d_x, acc_min); the element
   is acc - acc_min.  The rows after whole groups of 4 go through the gemv, which adds the
   integers of the whole superblock before its one fma. */

/* ggml_quantize_mat_q8_K_4x8 (AVX2) of one row: per 256 block, amax = max |x|; iscale =
   -127/amax when a positive element reaches amax, else 127/amax; q = round-half-even(x *
   iscale); d = 1/iscale. */
static void quantize_q8_k(const float *x, int8_t *q, float *d, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++) {
        const float *xb = x + b * 256;
        float amax = 0.0f;
        for (int i = 0; i < 256; i++) amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
        int positive = 0;
        for (int i = 0; i < 256; i++) positive |= xb[i] == amax;
        float iscale = amax != 0.0f ? 127.f / amax : 0.0f;
        if (positive && amax != 0.0f) iscale = -127.f / amax;
        d[b] = amax != 0.0f ? 1 / iscale : 0.0f;
        for (int i = 0; i < 256; i++) {
            float v = rintf(xb[i] * iscale);
            v = v > 127.f ? 127.f : (v < -128.f ? -128.f : v);
            q[b * 256 + i] = (int8_t) v;
        }
    }
}

static void scale_min_k4(const uint8_t *s, int32_t *sc, int32_t *mn) {   /* get_scale_min_k4 */
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = s[j] & 63;
            mn[j] = s[j + 4] & 63;
        } else {
            sc[j] = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
            mn[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
    }
}

/* block_q4_K (144 bytes): fp16 d, fp16 dmin, 12 bytes of 6-bit scales and mins
   (get_scale_min_k4), 128 bytes of nibbles: elements 64c + l are the low nibbles of
   qs[32c + l], 64c + 32 + l the high ones. */
static void unpack_q4k(const uint8_t *p, uint8_t *q, float *d, float *dmin, int32_t *sc, int32_t *mn) {
    *d = f16_to_f32((uint16_t) (p[0] | (p[1] << 8)));
    *dmin = f16_to_f32((uint16_t) (p[2] | (p[3] << 8)));
    const uint8_t *qs = p + 16;
    scale_min_k4(p + 4, sc, mn);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = qs[32 * c + l] & 0xF;
            q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
        }
}

TARGETS static void mm_q4k_kernel(const int8_t *restrict qx, const float *restrict dx, const uint8_t *restrict raw,
                                  float *restrict out, int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 256;
    uint8_t q[256];
    int32_t sc[8], mn[8];
    float dw, dmw;
    float *acc = malloc((size_t) T * 2 * sizeof(float) + 8);
    if (!acc) return;
    for (int64_t m = 0; m < M; m++) {
        for (int64_t t = 0; t < 2 * T; t++) acc[t] = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            unpack_q4k(raw + (m * nb + b) * 144, q, &dw, &dmw, sc, mn);
            for (int64_t t = 0; t < T; t++) {
                const int8_t *y = qx + t * K + b * 256;
                const float xd = dx[t * nb + b];
                const int gemv = t >= T - T % 4;       /* the rows after whole groups of 4 */
                int32_t gi = 0, gim = 0;
                for (int sb = 0; sb < 4; sb++) {
                    int32_t i0 = 0, i1 = 0, s0 = 0, s1 = 0;
                    for (int l = 0; l < 32; l++) {
                        i0 += q[64 * sb + l] * y[64 * sb + l];
                        i1 += q[64 * sb + 32 + l] * y[64 * sb + 32 + l];
                        s0 += y[64 * sb + l];
                        s1 += y[64 * sb + 32 + l];
                    }
                    const int32_t i = i0 * sc[2 * sb] + i1 * sc[2 * sb + 1];
                    const int32_t im = s0 * mn[2 * sb] + s1 * mn[2 * sb + 1];
                    if (gemv) {                           /* ggml_gemv_q4_K_8x8_q8_K: per superblock */
                        gi += i, gim += im;
                        continue;
                    }
                    acc[2 * t] = fmaf((float) i, dw * xd, acc[2 * t]);
                    acc[2 * t + 1] = fmaf((float) im, dmw * xd, acc[2 * t + 1]);
                }
                if (gemv) {
                    acc[2 * t] = fmaf((float) gi, dw * xd, acc[2 * t]);
                    acc[2 * t + 1] = fmaf((float) gim, dmw * xd, acc[2 * t + 1]);
                }
            }
        }
        for (int64_t t = 0; t < T; t++) out[t * M + m] = acc[2 * t] - acc[2 * t + 1];
    }
    free(acc);
}

/* ---- Q2_K weights, repacked on AVX-512 (repack.cpp: rows % 8 == 0 -> block_q2_Kx8,
   arch/x86/repack.cpp ggml_gemm_q2_K_8x8_q8_K / ggml_gemv_q2_K_8x8_q8_K).  Per 16-element
   sub-block s the exact sum(code * q_x) times its 4-bit scale, the 4-bit min times the
   activations' 16-element sum; the gemm (whole groups of 4 activation rows) adds them
   over each 128-element half: acc = fma(float(i), d_w * d_x, acc), acc_min likewise with
   dmin_w * d_x; the gemv (the rows left) over the whole superblock; the element is
   acc - acc_min.  block_q2_K (84 bytes): scales[16] (low nibble scale, high nibble min),
   qs[64], fp16 d, fp16 dmin; element 128n + 32j + 16h + l is bits 2j of qs[32n + 16h + l],
   sub-block 8n + 2j + h (dequantize_row_q2_K). */
TARGETS static void mm_q2k_kernel(const int8_t *restrict qx, const float *restrict dx, const uint8_t *restrict raw,
                                  float *restrict out, int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 256, T4 = T - T % 4;
    uint8_t q[256];
    for (int64_t m = 0; m < M; m++) {
        for (int64_t t = 0; t < T; t++) {
            float acc = 0.0f, accm = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *p = raw + (m * nb + b) * 84;
                const float dw = f16_to_f32((uint16_t) (p[80] | (p[81] << 8)));
                const float dmw = f16_to_f32((uint16_t) (p[82] | (p[83] << 8)));
                for (int n = 0; n < 2; n++)
                    for (int j = 0; j < 4; j++)
                        for (int l = 0; l < 32; l++) q[128 * n + 32 * j + l] = (p[16 + 32 * n + l] >> (2 * j)) & 3;
                const int8_t *y = qx + t * K + b * 256;
                const float xd = dx[t * nb + b];
                int32_t i = 0, im = 0;
                for (int s = 0; s < 16; s++) {
                    int32_t dot = 0, bsum = 0;
                    for (int l = 0; l < 16; l++) {
                        dot += q[16 * s + l] * y[16 * s + l];
                        bsum += y[16 * s + l];
                    }
                    i += dot * (p[s] & 0xF);
                    im += bsum * (p[s] >> 4);
                    if (t < T4 ? (s % 8 == 7) : (s == 15)) {      /* gemm: per half; gemv: per superblock */
                        acc = fmaf((float) i, dw * xd, acc);
                        accm = fmaf((float) im, dmw * xd, accm);
                        i = im = 0;
                    }
                }
            }
            out[t * M + m] = acc - accm;
        }
    }
}

/* ---- Q3_K / Q4_K / Q5_K / Q6_K weights, ggml-cpu's tiled K-quant path
   (ggml-cpu/tiled/tiled.cpp, taken for at least 8 activation rows when the weight is not
   repacked; the VNNI microkernel of tiled-kernel.cpp) against quantize_row_q8_K's rows
   (ggml-quants.c quantize_row_q8_K_ref: the first element of largest |x| sets iscale =
   -127/x, q = round-half-even(x * iscale) capped at 127, d = 1/iscale, and 16-element
   sums).  Per 256-superblock, all in exact integers: s1 = sum over sub-blocks of
   scale * (sum(code * q) - BIAS * bsum), s2 = sum of min * bsum; then result = d_w *
   float(s1), result = fma(-dmin_w, float(s2), result) where the type has mins, and the
   element = fma(result, d_x, element), superblock after superblock (the VNNI microkernel
   writes add(acc, mul(result, d_x)), which GCC's default -ffp-contract=fast fuses: one
   superblock (K = 256) cannot tell, gemma-3-270m's K = 1024 and 2048 do).
   codes are unsigned (Q6_K: 6 bits, BIAS 32; Q5_K: 5, Q4_K: 4, with mins; Q3_K: 3 bits,
   BIAS 4; IQ4_XS: kvalues_iq4nl + 128, BIAS 128, 6-bit scales - 32 per 32, no min). */
typedef struct {
    uint8_t code[256];
    int32_t scale[16], min[16];                     /* per sub-block (16 or 32 elements) */
    float d, dmin;
    int sub, bias, has_min, bytes;
} kblock_t;

static int kquant_bytes(int type) {
    switch (type) {
    case 11: return 110;                             /* Q3_K */
    case 12: return 144;                             /* Q4_K */
    case 13: return 176;                             /* Q5_K */
    case 14: return 210;                             /* Q6_K */
    case 23: return 136;                             /* IQ4_XS */
    default: return 0;
    }
}


static void unpack_kquant(const uint8_t *p, int type, kblock_t *k) {
    if (type == 23) {            /* IQ4_XS: d, scales_h, scales_l[4], qs[128]; codes kvalues + 128 */
        k->has_min = 0, k->bias = 128, k->sub = 32, k->dmin = 0.0f;
        k->d = f16_to_f32((uint16_t) (p[0] | (p[1] << 8)));
        const uint32_t sh = (uint32_t) (p[2] | (p[3] << 8));
        for (int s = 0; s < 8; s++) {
            k->scale[s] = (int32_t) (((p[4 + s / 2] >> 4 * (s % 2)) & 0xF) | (((sh >> 2 * s) & 3) << 4)) - 32;
            k->min[s] = 0;
            for (int j = 0; j < 16; j++) {               /* dequantize_row_iq4_xs's element order */
                const uint8_t b = p[8 + 16 * s + j];
                k->code[32 * s + j] = (uint8_t) (KVALUES_IQ4NL[b & 0xF] + 128);
                k->code[32 * s + 16 + j] = (uint8_t) (KVALUES_IQ4NL[b >> 4] + 128);
            }
        }
        return;
    }
    k->has_min = type == 12 || type == 13;
    k->bias = type == 14 ? 32 : (type == 11 ? 4 : 0);
    k->sub = (type == 12 || type == 13) ? 32 : 16;
    k->dmin = 0.0f;
    if (type == 12 || type == 13) {
        k->d = f16_to_f32((uint16_t) (p[0] | (p[1] << 8)));
        k->dmin = f16_to_f32((uint16_t) (p[2] | (p[3] << 8)));
        scale_min_k4(p + 4, k->scale, k->min);
        const uint8_t *qh = p + 16, *ql = p + (type == 13 ? 48 : 16);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                const uint8_t b = ql[32 * c + l];
                k->code[64 * c + l] = (uint8_t) ((b & 0xF) | (type == 13 ? ((qh[l] >> (2 * c)) & 1) << 4 : 0));
                k->code[64 * c + 32 + l] = (uint8_t) ((b >> 4) | (type == 13 ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0));
            }
    } else if (type == 14) {
        const uint8_t *ql = p, *qh = p + 128;
        const int8_t *sc = (const int8_t *) (p + 192);
        k->d = f16_to_f32((uint16_t) (p[208] | (p[209] << 8)));
        for (int i = 0; i < 16; i++) k->scale[i] = sc[i];
        for (int n = 0; n < 2; n++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *a = ql + 64 * n, *h = qh + 32 * n;
                k->code[128 * n + l] = (uint8_t) ((a[l] & 0xF) | (((h[l] >> 0) & 3) << 4));
                k->code[128 * n + 32 + l] = (uint8_t) ((a[l + 32] & 0xF) | (((h[l] >> 2) & 3) << 4));
                k->code[128 * n + 64 + l] = (uint8_t) ((a[l] >> 4) | (((h[l] >> 4) & 3) << 4));
                k->code[128 * n + 96 + l] = (uint8_t) ((a[l + 32] >> 4) | (((h[l] >> 6) & 3) << 4));
            }
    } else {                                         /* Q3_K: hmask[32], qs[64], scales[12], d */
        const uint8_t *hm = p, *q = p + 32;
        k->d = f16_to_f32((uint16_t) (p[108] | (p[109] << 8)));
        uint32_t aux[4];
        memcpy(aux, p + 96, 12);
        const uint32_t tmp = aux[2];
        aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
        aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
        aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
        aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
        const int8_t *scales = (const int8_t *) aux;
        for (int i = 0; i < 16; i++) k->scale[i] = scales[i] - 32;
        for (int n = 0; n < 2; n++)
            for (int j = 0; j < 4; j++) {
                const uint8_t m = (uint8_t) (1u << (4 * n + j));
                for (int l = 0; l < 16; l++) {
                    k->code[128 * n + 32 * j + l] = (uint8_t) (((q[32 * n + l] >> (2 * j)) & 3) + ((hm[l] & m) ? 4 : 0));
                    k->code[128 * n + 32 * j + 16 + l] =
                        (uint8_t) (((q[32 * n + l + 16] >> (2 * j)) & 3) + ((hm[l + 16] & m) ? 4 : 0));
                }
            }
    }
}

/* quantize_row_q8_K_ref: q [256 per block], d, bsums [16 per block] */
static void quantize_q8_k_ref(const float *x, int8_t *q, float *d, int32_t *bsums, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++) {
        const float *xb = x + b * 256;
        float max = 0.0f, amax = 0.0f;
        for (int i = 0; i < 256; i++) {
            const float ax = fabsf(xb[i]);
            if (ax > amax) { amax = ax; max = xb[i]; }
        }
        if (amax == 0.0f) {
            d[b] = 0.0f;
            memset(q + b * 256, 0, 256);
        } else {
            const float iscale = -127.f / max;
            for (int i = 0; i < 256; i++) {
                const int v = (int) rintf(iscale * xb[i]);
                q[b * 256 + i] = (int8_t) (v < 127 ? v : 127);
            }
            d[b] = 1 / iscale;
        }
        for (int g = 0; g < 16; g++) {
            int32_t sum = 0;
            for (int i = 0; i < 16; i++) sum += q[b * 256 + 16 * g + i];
            bsums[b * 16 + g] = sum;
        }
    }
}

/* Q6_K / Q5_K / IQ4_XS with fewer than 8 activation rows: arch/x86/quants.c
   ggml_vec_dot_q6_K_q8_K, _q5_K_q8_K and _iq4_xs_q8_K (AVX2; IQ4_XS's signed values by
   the sign trick, the same exact pairs) against quantize_row_q8_K (= _ref).  Per superblock
   8 int32 lanes: lane k holds, over the eight 32-element chunks, scale(sub-block) * the 4
   products at 4k..4k+3 of the chunk (maddubs then madd by the scales); Q6_K's lane minus
   32 * (bsum[2k] sc[2k] + bsum[2k+1] sc[2k+1]); then lane = fma(d_x * d_w, float(lane),
   lane).  Q5_K's mins apart: summs = fma(-d_x * dmin_w, float(sum_j min_j * (bsum[2j] +
   bsum[2j+1])), summs) (GCC fuses `summs += dmin * int`).  The element is
   hsum_float_8 (= reduce8) of the lanes, + summs for Q5_K. */
static void vec_dot_k_rows(const int8_t *restrict qx, const float *restrict dx, const int32_t *restrict bs,
                           const uint8_t *restrict raw, int type, float *restrict out, int64_t T, int64_t M,
                           int64_t K) {
    const int64_t nb = K / 256;
    const int bytes = kquant_bytes(type), signed0 = type == 23 ? 128 : 0;   /* IQ4_XS: kvalues + 128 */
    kblock_t kb;
    for (int64_t m = 0; m < M; m++)
        for (int64_t t = 0; t < T; t++) {
            float acc[8] = {0}, summs = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                unpack_kquant(raw + (m * nb + b) * bytes, type, &kb);    /* unsigned codes, scales */
                const int8_t *y = qx + t * K + b * 256;
                const int32_t *bsum = bs + (t * nb + b) * 16;
                int32_t lane[8] = {0};
                for (int c = 0; c < 8; c++)
                    for (int k = 0; k < 8; k++) {
                        int32_t dot = 0;
                        for (int i = 0; i < 4; i++) dot += (kb.code[32 * c + 4 * k + i] - signed0) * y[32 * c + 4 * k + i];
                        lane[k] += kb.scale[(32 * c + 4 * k) / kb.sub] * dot;
                    }
                const float d = dx[t * nb + b] * kb.d;
                if (type == 13) {
                    int32_t mins = 0;
                    for (int j = 0; j < 8; j++) mins += kb.min[j] * (bsum[2 * j] + bsum[2 * j + 1]);
                    summs = fmaf(-dx[t * nb + b] * kb.dmin, (float) mins, summs);
                }
                for (int k = 0; k < 8; k++) {
                    if (type == 14)
                        lane[k] -= 32 * (bsum[2 * k] * kb.scale[2 * k] + bsum[2 * k + 1] * kb.scale[2 * k + 1]);
                    acc[k] = fmaf(d, (float) lane[k], acc[k]);
                }
            }
            out[t * M + m] = type == 13 ? reduce8(acc) + summs : reduce8(acc);
        }
}

TARGETS static void mm_ktiled_kernel(const int8_t *restrict qx, const float *restrict dx,
                                     const int32_t *restrict bs, const uint8_t *restrict raw, int type,
                                     float *restrict out, int64_t T, int64_t M, int64_t K) {
    const int64_t nb = K / 256;
    const int bytes = kquant_bytes(type);
    kblock_t kb;
    float *acc = malloc((size_t) T * sizeof(float) + 4);
    if (!acc) return;
    for (int64_t m = 0; m < M; m++) {
        for (int64_t t = 0; t < T; t++) acc[t] = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            unpack_kquant(raw + (m * nb + b) * bytes, type, &kb);
            const int ns = 256 / kb.sub, per = kb.sub / 16;
            for (int64_t t = 0; t < T; t++) {
                const int8_t *y = qx + t * K + b * 256;
                const int32_t *bsum = bs + (t * nb + b) * 16;
                int32_t s1 = 0, s2 = 0;
                for (int sidx = 0; sidx < ns; sidx++) {
                    int32_t raw_sum = 0, bsum_s = 0;
                    for (int i = 0; i < kb.sub; i++) raw_sum += kb.code[sidx * kb.sub + i] * y[sidx * kb.sub + i];
                    for (int u = 0; u < per; u++) bsum_s += bsum[sidx * per + u];
                    s1 += kb.scale[sidx] * (raw_sum - kb.bias * bsum_s);
                    s2 += kb.min[sidx] * bsum_s;
                }
                float result = kb.d * (float) s1;
                if (kb.has_min) result = fmaf(-kb.dmin, (float) s2, result);
                acc[t] = fmaf(result, dx[t * nb + b], acc[t]);
            }
        }
        for (int64_t t = 0; t < T; t++) out[t * M + m] = acc[t];
    }
    free(acc);
}

/* ---- flash attention, ggml-cpu's tiled path --------------------------------------- */

/* ggml_v_expf (vec.h, the AVX-512 version), one lane */
static inline float v_expf(float x) {
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    if (fabsf(n) > 192.0f || isnan(n)) {
        if (isnan(n)) return n;
        return n <= 0.0f ? 0.0f : INFINITY;
    }
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(j, (int) n);                       /* _mm512_scalef_ps(j, n), n integral */
}

/* ggml_vec_swiglu_f32 (vec.cpp, AVX-512): silu(x) * g, silu by ggml_v_silu = x / (1 +
   ggml_v_expf(0 - x)) in groups of 16, the rest of a row by ggml_silu_f32 = x / (1.0f +
   expf(-x)) with the C library's expf. */
TARGETS static void swiglu_rows(const float *restrict x, const float *restrict g, float *restrict y, int64_t rows,
                                int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *gr = g + r * n;
        float *yr = y + r * n;
        const int64_t nv = n - n % 16;                 /* the 16-lane groups */
        for (int64_t i = 0; i < nv; i++) yr[i] = (xr[i] / (1.0f + v_expf(0.0f - xr[i]))) * gr[i];
        for (int64_t i = nv; i < n; i++) yr[i] = (xr[i] / (1.0f + expf(-xr[i]))) * gr[i];
    }
}

#define FA_TILE 64

/* One query row against all keys: q [D], keys [S][kstride] (head offset applied),
   mask [S] (0 or -inf, already slope-scaled), out [Dv]. */
TARGETS static void fa_row(const float *restrict q, const float *restrict k, const float *restrict v,
                           const float *restrict mask, float *restrict out, int64_t S, int64_t D, int64_t Dv,
                           int64_t kstride, int64_t vstride, float scale, float softcap, float *restrict kq) {
    float Ssum = 0.0f, M = -INFINITY;
    memset(out, 0, (size_t) Dv * sizeof(float));
    for (int64_t ic = 0; ic < S; ic += FA_TILE) {
        const int64_t nt = S - ic < FA_TILE ? S - ic : FA_TILE;
        int live = 0;
        for (int64_t tk = 0; tk < nt; tk++) live |= mask[ic + tk] != -INFINITY;
        if (!live) continue;                         /* the whole tile masked: skipped */
        for (int64_t tk = 0; tk < FA_TILE; tk++) {
            if (tk >= nt) { kq[tk] = -INFINITY; continue; }
            const float *kr = k + (ic + tk) * kstride;
            float a = 0.0f;
            for (int64_t d = 0; d < D; d++) a = fmaf(q[d], kr[d], a);
            a *= scale;
            if (softcap != 0.0f) a = tanhf(a) * softcap;
            kq[tk] = a + mask[ic + tk];
        }
        float tmax = -INFINITY;
        for (int64_t tk = 0; tk < FA_TILE; tk++) tmax = kq[tk] > tmax ? kq[tk] : tmax;
        if (tmax == -INFINITY) continue;             /* this row masked in this tile */
        const float Mnew = fmaxf(M, tmax);
        if (Mnew > M) {
            const float ms = expf(M - Mnew);
            for (int64_t d = 0; d < Dv; d++) out[d] *= ms;
            Ssum *= ms;
        }
        M = Mnew;
        double sum = 0.0;
        for (int64_t g = 0; g < FA_TILE; g += 16) {
            float e[16];
            for (int i = 0; i < 16; i++) kq[g + i] = e[i] = v_expf(kq[g + i] - Mnew);
            sum += (double) reduce16(e);
        }
        Ssum = (float) ((double) Ssum + sum);
        for (int64_t tk = 0; tk < nt; tk++) {
            const float p = kq[tk];
            const float *vr = v + (ic + tk) * vstride;
            for (int64_t d = 0; d < Dv; d++) out[d] = fmaf(p, vr[d], out[d]);
        }
    }
    const float inv = Ssum == 0.0f ? 0.0f : 1.0f / Ssum;
    for (int64_t d = 0; d < Dv; d++) out[d] *= inv;
}

/* ---- rope: ggml_rope_cache_init and rope_yarn (ops.cpp) with the C library's powf,
   cosf, sinf and logf, which are not correctly rounded: glibc's cosf / sinf miss the
   nearest float for about 1 % of gemma-3-270m's angles. */
static void rope_cache(const int32_t *pos, int64_t T, int64_t half, int n_dims, float base, float freq_scale,
                       const float *ff, float ext_factor, float corr0, float corr1, float attn_factor,
                       float *cos_out, float *sin_out) {
    const float theta_scale = powf(base, -2.0f / n_dims);
    for (int64_t t = 0; t < T; t++) {
        float theta = (float) pos[t];
        for (int64_t i = 0; i < half; i++) {
            const float theta_extrap = theta / (ff ? ff[i] : 1.0f);
            const float theta_interp = freq_scale * theta_extrap;
            float th = theta_interp, mscale = attn_factor;
            if (ext_factor != 0.0f) {
                const float y = ((float) i - corr0) / fmaxf(0.001f, corr1 - corr0);
                const float ramp_mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * ext_factor;
                th = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
                mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale);
            }
            cos_out[t * half + i] = cosf(th) * mscale;
            sin_out[t * half + i] = sinf(th) * mscale;
            theta *= theta_scale;
        }
    }
}

/* ---- flash attention, ggml-cpu's one-row path (ops.cpp
   ggml_compute_forward_flash_attn_ext_f16_one_chunk: fewer than 64 query rows), F16 cache:
   q rounded to F16; each score is ggml_vec_dot_f16 (AVX-512: 4 registers of 16 lanes by
   fma over 64-element steps, added pairwise (0+2, 1+3, then 0+1) and reduced as
   _mm512_reduce_add_ps into a double, the elements past the last 64 added one by one in
   double); the running output is an F16 vector (each update rounded: ggml_vec_scale_f16,
   ggml_vec_mad_f16 = fp16(fma(v, p, acc))); probabilities by the C library's expf; S =
   fma(S, ms, vs) (contracted in the oracle's build). */
static float vec_dot_f16(const float *restrict x, const float *restrict y, int64_t n) {
    const int64_t np = n & ~(int64_t) 63;
    float sum[4][16];
    memset(sum, 0, sizeof sum);
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) sum[j][l] = fmaf(x[i + 16 * j + l], y[i + 16 * j + l], sum[j][l]);
    double sumf = 0.0;
    if (np) {
        for (int l = 0; l < 16; l++) {
            sum[0][l] = sum[0][l] + sum[2][l];
            sum[1][l] = sum[1][l] + sum[3][l];
        }
        for (int l = 0; l < 16; l++) sum[0][l] = sum[0][l] + sum[1][l];
        sumf = (double) reduce16(sum[0]);
    }
    for (int64_t i = np; i < n; i++) sumf += (double) (x[i] * y[i]);
    return (float) sumf;
}

static inline float round16(float v) { return f16_to_f32(f32_to_f16(v)); }

static void fa_onerow(const float *restrict q, const float *restrict k, const float *restrict v,
                      const float *restrict mask, float *restrict out, int64_t S, int64_t D, int64_t Dv,
                      int64_t kstride, int64_t vstride, float scale, float softcap, float *restrict qh) {
    for (int64_t d = 0; d < D; d++) qh[d] = round16(q[d]);
    float Ssum = 0.0f, M = -INFINITY;
    for (int64_t d = 0; d < Dv; d++) out[d] = 0.0f;
    for (int64_t ic = 0; ic < S; ic++) {
        const float mv = mask[ic];
        if (mv == -INFINITY) continue;
        float s = vec_dot_f16(k + ic * kstride, qh, D);
        s = s * scale;
        if (softcap != 0.0f) s = softcap * tanhf(s);
        s += mv;
        const float Mold = M;
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            M = s;
            ms = expf(Mold - M);
            for (int64_t d = 0; d < Dv; d++) out[d] = round16(out[d] * ms);
        } else {
            vs = expf(s - M);
        }
        const float *vr = v + ic * vstride;
        for (int64_t d = 0; d < Dv; d++) out[d] = round16(fmaf(vr[d], vs, out[d]));
        Ssum = fmaf(Ssum, ms, vs);
    }
    const float inv = Ssum == 0.0f ? 0.0f : 1.0f / Ssum;
    for (int64_t d = 0; d < Dv; d++) out[d] *= inv;
}

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

static PyMethodDef METHODS[] = {
    {"mm_ktiled", py_mm_ktiled, METH_VARARGS, "ggml-cpu's tiled K-quant x Q8_K product, its order"},
    {"mm_q4k", py_mm_q4k, METH_VARARGS, "repacked Q4_K (or, type 10, Q2_K) x Q8_K product, ggml's order"},
    {"swiglu", py_swiglu, METH_VARARGS, "ggml_vec_swiglu_f32 row by row"},
    {"rope_cache", py_rope_cache, METH_VARARGS, "ggml_rope_cache_init's cos and sin, with the C library's libm"},
    {"mm_f16", py_mm_f16, METH_VARARGS, "tinyBLAS<16> F16 x F16 product, ggml's order"},
    {"mm_bf16", py_mm_bf16, METH_VARARGS, "tinyBLAS<32> BF16 x BF16 product (VDPBF16PS), ggml's order"},
    {"mm_q0", py_mm_q0, METH_VARARGS, "tinyBLAS_Q0_AVX Q8_0/Q4_0 x Q8_0 product, ggml's order"},
    {"mm_q1", py_mm_q1, METH_VARARGS, "vec_dot Q4_1/Q5_1 x Q8_1 product, ggml's order"},
    {"quantize", py_quantize, METH_VARARGS, "quantize_row_q8_0 (x86)"},
    {"fa_tiled", py_fa_tiled, METH_VARARGS, "ggml-cpu's tiled flash attention, one row at a time"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope.forward._cggml",
                                    "ggml-cpu's products and flash attention in its own summation order", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cggml(void) { return PyModule_Create(&MODULE); }
