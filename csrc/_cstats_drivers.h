/* The two passes, written once as macros, and one line per decoder variant that
   instantiates them (included by _cstats.c after _cstats_piece.h, before _cstats_z.h).

   Why a file of its own: _cstats.c is split by job; the drivers are the loop that walks
   a chunk's blocks piece by piece around a decoder, a job apart from both the decoder
   and the per-piece work.  Contract: for each variant NAME, range_NAME or rangeb_NAME
   (pass one: the range of the values, their float64 sum or NaN when blocks were skipped
   by their bounds, ok = 0 at a NaN or Inf with the scale codes counted so far taken
   back), bins_NAME (pass two: the pair table and the moments) and decto_NAME (decoding
   alone, for diff), each with the GIL released by its caller. */
#ifndef GGSCOPE_CSTATS_DRIVERS_H
#define GGSCOPE_CSTATS_DRIVERS_H

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

#endif /* GGSCOPE_CSTATS_DRIVERS_H */
