/* The non-product operations of _cggml.c whose rounding the forward pass must match:
   flash attention (the tiled path and the one-row path), SwiGLU and the rope cache
   (included by _cggml.c after _cggml_kquants.h).

   Why a file of its own: attention is the other place a 1e-7 difference moves the
   KL-divergence report; these follow ggml-cpu/ops.cpp and vec.cpp operation by
   operation.  Contract: fa_row gives ggml_compute_forward_flash_attn_ext_tiled's output
   for one query row, fa_onerow the one-row path's; swiglu_rows ggml_vec_swiglu_f32 row by
   row; rope_cache ggml_rope_cache_init's cos and sin with the C library's powf. */
#ifndef GGSCOPE_CGGML_ATTN_H
#define GGSCOPE_CGGML_ATTN_H

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

#endif
