/* The legacy-quant weights of _cggml.c against Q8_0 / Q8_1 activations (included by
   _cggml.c after _cggml_f16.h): Q8_0, Q4_0, Q5_0 and IQ4_NL by tinyBLAS_Q0_AVX, a Q4_0 /
   IQ4_NL weight of rows % 8 == 0 by the CPU_REPACK kernels, Q4_1 / Q5_1 by vec_dot.

   Why a file of its own: one family of weights, self-contained (the activations'
   quantize_row_q8_0, the blocks' unpacking, three portable kernels).  Contract:
   quantize_q8_0 is quantize_row_q8_0 (x86); unpack_q0 / unpack_q1 give a weight's int8
   (or nibble) values and float scales; mm_q0_kernel, mm_q0_repack_kernel and
   mm_q1_kernel each sum in the order of the ggml kernel named in its comment
   (_cggml_avx2.h holds the AVX2 versions of the first two, same bits). */
#ifndef GGSCOPE_CGGML_Q0_H
#define GGSCOPE_CGGML_Q0_H

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

#endif
