/* The per-piece loops both passes share (included by _cstats.c after _cstats_bounds.h):
   order keys, bins, pairs, moments, the pair-counting lanes, the prefetch.

   Why a file of its own: _cstats.c is split by job; these loops run over one L1-resident
   piece of decoded values, whichever decoder filled it, and kernels.py's loops
   (moments) reuse them.  Contract: piece_moments sums in float32 within a piece (any
   order: REASSOC) - v, (v - shift)^2, |v| - and add_piece accumulates pieces in float64
   (the sum of v - shift as the sum of v less e * shift), falling back to
   piece_moments_wide when a float32 sum overflows; bins keep the exact float32 formula
   of kernels.bin_pairs; count_pair_lanes / flush_lanes count the same histogram as one
   int64 table; range_t and bins_t are the passes' results. */
#ifndef GGSCOPE_CSTATS_PIECE_H
#define GGSCOPE_CSTATS_PIECE_H

/* ------------------------------------------------------------------ the two passes, written once */

INLINE int32_t fbits(float v) {
    int32_t i;
    memcpy(&i, &v, 4);
    return i;
}

INLINE int32_t order_key(int32_t bits) { return bits ^ ((bits >> 31) & 0x7FFFFFFF); }

INLINE float key_value(int32_t k) {
    const int32_t bits = k ^ ((k >> 31) & 0x7FFFFFFF);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Each loop below does one thing, so the compiler vectorizes it; each runs over one
   L1-resident piece.  Only the float sums may be reassociated (as numba's fastmath
   kernels were): they are the sums of a piece in any order, while the bin index keeps
   the exact float32 formula -- hence separate, out-of-line functions with their own
   optimization flags (REASSOC, _ctargets.h). */



TARGETS __attribute__((noinline)) static void piece_idx(const float *restrict x, int e, float lo, float scale,
                                                         int32_t top, uint8_t *restrict idx) {
    for (int j = 0; j < e; j++) {
        int32_t t = (int32_t) ((x[j] - lo) * scale);
        t = t < top ? t : top;
        idx[j] = (uint8_t) (t > 0 ? t : 0);
    }
}

/* With at most SMALL_BINS bins: pair indices b0 | b1 << 6, ready for counting (one load
   per pair instead of two, a shift and an or).  A pair is value k and value k + e/2 of
   the piece -- two straight streams, so no lane shuffles -- which counts the same
   histogram: the table is folded over both of its axes. */
TARGETS __attribute__((noinline)) static void piece_pairs(const float *restrict x, int e, float lo, float scale,
                                                           int32_t top, uint16_t *restrict pairs) {
    const int h = e / 2;
    const float *restrict y = x + h;
    for (int j = 0; j < h; j++) {
        int32_t t0 = (int32_t) ((x[j] - lo) * scale), t1 = (int32_t) ((y[j] - lo) * scale);
        t0 = t0 < top ? t0 : top;
        t1 = t1 < top ? t1 : top;
        t0 = t0 > 0 ? t0 : 0;
        t1 = t1 > 0 ? t1 : 0;
        pairs[j] = (uint16_t) (t0 | (t1 << 6));
    }
}

/* Four straight streams (quarters of the piece), each with its own accumulators: the
   compiler vectorizes each, and the four additions chains overlap instead of each vector
   add waiting for the one before (one chain was measured latency-bound, 0.1 ns per
   element). */
#define MOMENT(v, A1, A2, AA, Z)      \
    do {                              \
        const float dv = (v) - shift; \
        A1 += (v);                    \
        A2 += dv * dv;                \
        AA += fabsf(v);               \
        Z += (v) == 0.0f;             \
    } while (0)

TARGETS REASSOC static int32_t piece_moments(const float *restrict x, int e, float shift, float *r1, float *r2, float *ra) {
    float a10 = 0, a11 = 0, a12 = 0, a13 = 0, a20 = 0, a21 = 0, a22 = 0, a23 = 0, aa0 = 0, aa1 = 0, aa2 = 0, aa3 = 0;
    int32_t z0 = 0, z1 = 0, z2 = 0, z3 = 0;
    const int q = e / 4;
    const float *restrict x1 = x + q, *restrict x2 = x + 2 * q, *restrict x3 = x + 3 * q;
    for (int j = 0; j < q; j++) {
        MOMENT(x[j], a10, a20, aa0, z0);
        MOMENT(x1[j], a11, a21, aa1, z1);
        MOMENT(x2[j], a12, a22, aa2, z2);
        MOMENT(x3[j], a13, a23, aa3, z3);
    }
    for (int j = 4 * q; j < e; j++) MOMENT(x[j], a10, a20, aa0, z0);
    *r1 = (a10 + a11) + (a12 + a13);
    *r2 = (a20 + a21) + (a22 + a23);
    *ra = (aa0 + aa1) + (aa2 + aa3);
    return z0 + z1 + z2 + z3;
}
#undef MOMENT

/* The same sums in float64, for a piece whose float32 sums overflowed (finite values
   beyond about 1e19 square past float32's range): the result stays finite where it can. */
static void piece_moments_wide(const float *x, int e, float shift, double *r) {
    double a1 = 0.0, a2 = 0.0, aa = 0.0;
    for (int j = 0; j < e; j++) {
        const double dv = (double) x[j] - (double) shift;
        a1 += dv;
        a2 += dv * dv;
        aa += fabs((double) x[j]);
    }
    r[0] = a1;
    r[1] = a2;
    r[2] = aa;
}

/* Adds a piece's float32 sums to the running float64 ones, or its float64 sums when a
   float32 one overflowed.  a1 is the sum of the values themselves: the piece's sum of
   v - shift is a1 - e * shift, in float64.  Summed in float32, v - shift (one constant
   for the whole tensor) rounded alike for every value of a binade - and REASSOC lets the
   compiler take the shift off the running sum instead, which rounds alike at every step
   - a bias that summing does not average out: the mean of normal weights quantized to
   Q8_0 or Q5_1 came out 1e-4 to 1e-3 off in relative terms (tests/stats/test_mean_bias.py). */
INLINE void add_piece(const float *x, int e, float shift, float a1, float a2, float aa, double *s1, double *s2,
                      double *sa) {
    if (finitef32(a1) && finitef32(a2) && finitef32(aa)) {
        *s1 += (double) a1 - (double) e * (double) shift;
        *s2 += a2;
        *sa += aa;
    } else {
        double r[3];
        piece_moments_wide(x, e, shift, r);
        *s1 += r[0];
        *s2 += r[1];
        *sa += r[2];
    }
}


/* Min and max order keys and the float32 sum of x[0:e]. */
TARGETS REASSOC static void piece_range(const float *restrict x, int e, int32_t *lo, int32_t *hi, float *sum) {
    int32_t mn = 0x7FFFFFFF, mx = (int32_t) 0x80000000;
    float s = 0.0f;
    for (int j = 0; j < e; j++) {
        const int32_t k = order_key(fbits(x[j]));
        mn = k < mn ? k : mn;
        mx = k > mx ? k : mx;
        s += x[j];
    }
    *lo = mn;
    *hi = mx;
    *sum = s;
}

/* Bins (kernels.bin_pairs' float32 formula) into idx, and the moments of x[0:e]. */
INLINE void piece_bins(const float *restrict x, int e, float lo, float scale, int32_t top, float shift, uint8_t *restrict idx,
                       float *r1, float *r2, float *ra, int32_t *rz) {
    piece_idx(x, e, lo, scale, top, idx);
    *rz = piece_moments(x, e, shift, r1, r2, ra);
}

INLINE void count_pair_idx(const uint8_t *idx, int e, int64_t *table) {
    for (int j = 0; j + 1 < e; j += 2) table[(uint32_t) idx[j] | ((uint32_t) idx[j + 1] << 8)] += 1;
}

/* With at most 64 bins (ggscope's default) the pairs are counted in two interleaved
   tables of 64 x 64 uint32 (32 KiB, scratch of the calling thread: ggscope.cstats keeps
   one per thread, freed with it) instead of one int64[65536]: on a
   bell-shaped tensor most pairs hit the same few counters, and with one table each
   increment waits for the store of the one before (measured: the counting was 3/4 of
   pass two).  flush_lanes adds them into the caller's table layout. */
#define SMALL_BINS 64
/* Lanes each 64 bytes longer than a power of two: at a power-of-two distance a
   counter and its twin in the next lane share their low 12 address bits, and the CPU's
   store-to-load check (4K aliasing) serialises them again (measured on Intel: 4 padded
   lanes 0.51 ns per Q4_K element, 4 unpadded 0.53, 8 unpadded 0.59).  Two lanes, not
   four: on AMD Zen 4 a stream of normal pairs counts at 0.31 ns per pair in two, 0.37
   in four, and a constant one at 0.31 against 0.46 (one lane: 0.29 and 0.56); pass two
   of Q8_0 1.07x faster. */
#define PAIR_LANES 2
#define LANE_PAD 16
typedef uint32_t lanes_t[PAIR_LANES][SMALL_BINS * SMALL_BINS + LANE_PAD];

typedef struct {
    float lo, scale, shift;
    int32_t top;
    int64_t *table;
    lanes_t *lanes;                   /* the caller's zeroed scratch (left zeroed), or NULL */
} binargs_t;

INLINE void count_pair_lanes(const uint16_t *restrict pairs, int m, lanes_t *restrict c) {
    int j = 0;
    for (; j + PAIR_LANES <= m; j += PAIR_LANES)
        for (int l = 0; l < PAIR_LANES; l++) (*c)[l][pairs[j + l]] += 1;
    for (; j < m; j++) (*c)[0][pairs[j]] += 1;
}

static void flush_lanes(lanes_t *c, int64_t *table) {
    for (int k = 0; k < SMALL_BINS * SMALL_BINS; k++) {
        uint64_t v = 0;
        for (int l = 0; l < PAIR_LANES; l++) v += (*c)[l][k];
        if (v) table[(k & (SMALL_BINS - 1)) | ((k / SMALL_BINS) << 8)] += (int64_t) v;
    }
    memset(c, 0, sizeof *c);
}

/* Asks for the next piece's blocks while this one is decoded: the hardware prefetcher
   alone keeps up with a plain copy, not with a loop doing this much per byte
   (measured: 0.18 ns per element on a cached Q8_0 chunk, 0.36 streamed from memory). */
INLINE void prefetch_next(const job_t *J, Py_ssize_t start, int per) {
    if (start >= J->nb) return;
    const Py_ssize_t stop = start + per < J->nb ? start + per : J->nb;
    const char *at = (const char *) J->blocks + start * J->bb, *last = (const char *) J->blocks + stop * J->bb;
    for (; at < last; at += 64) __builtin_prefetch(at, 0, 3);
}

typedef struct {
    double lo, hi, total;
    int ok;
} range_t;
typedef struct {
    double s1, s2, sa;
    int64_t zeros;
} bins_t;

#endif /* GGSCOPE_CSTATS_PIECE_H */
