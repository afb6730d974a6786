/* The K-quant weights of _cggml.c against Q8_K activations (included by _cggml.c after
   _cggml_avx2.h): Q4_K (and, on AVX-512, Q2_K) of rows % 8 == 0 repacked, Q3_K .. Q6_K and
   IQ4_XS on ggml-cpu's tiled path or, for fewer than 8 activation rows, vec_dot.

   Why a file of its own: one family of weights, with its own activation format (Q8_K:
   256-element blocks with 16-element sums) and block unpacking.  Contract:
   quantize_q8_k / quantize_q8_k_ref are ggml_quantize_mat_q8_K_4x8's and
   quantize_row_q8_K_ref's rows; kquant_bytes / unpack_kquant a block's size and values;
   mm_q4k_kernel, mm_q2k_kernel, mm_ktiled_kernel and vec_dot_k_rows each sum in the
   order of the ggml kernel named in its comment. */
#ifndef GGSCOPE_CGGML_KQUANTS_H
#define GGSCOPE_CGGML_KQUANTS_H

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

#endif
