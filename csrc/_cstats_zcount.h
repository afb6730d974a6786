/* Pass two's pair counting on AVX-512 (included by _cstats_z.h, inside its HAVE_Z part):
   16-bit counters in the caller's lanes scratch, counted behind the groups that write
   the pairs.

   Why: counting is half of pass two's time on the code families (one counter update per
   two values, about one per cycle), and the 32.9 KB of 32-bit lanes count_pair_lanes
   uses fill a 32 KB L1 data cache that also streams the blocks, the f16 table and the
   pairs.

   Contract: zlanes_t lives at the start of the caller's zeroed lanes scratch;
   zcount16(Q, written) counts the 16 pairs ZLAG behind ``written`` once they are there,
   zcount_pairs(pairs, m, lanes) any m pairs at once; zflush(lanes, table) adds every
   counter into the caller's int64 table (pair b0 | b1 << 6 at b0 | b1 << 8, as
   flush_lanes) and leaves the lanes zeroed.  A counter holds at most the pairs counted
   since the last zflush: a caller flushes before that could pass Z16_MAX. */

/* Two lanes of 16-bit counters, as count_pair_lanes' two of 32 bits: 16.5 KB instead of
   32.9 (measured on AMD Zen 4, pass two of Q5_1 0.356 -> 0.322 ns per element, Q4_1
   0.29 -> 0.24, Q5_0 0.32 -> 0.30, IQ4_XS 0.295 -> 0.277; Q8_0, Q4_K/Q5_K and MXFP4
   unchanged: their counting was not waiting on the cache). */
#define Z16_PAD 32                    /* 64 bytes: the lanes' counters apart in their low 12 address bits */
#define Z16_MAX 65535
typedef uint16_t zlanes_t[PAIR_LANES][SMALL_BINS * SMALL_BINS + Z16_PAD];
_Static_assert(sizeof(zlanes_t) <= sizeof(lanes_t), "the 16-bit lanes live in the lanes scratch");
_Static_assert(PAIR_LANES == 2, "zcount_pairs and zflush add two lanes");

ZI void zcount_pairs(const uint16_t *restrict pairs, int m, zlanes_t *restrict c) {
    int j = 0;
    for (; j + 2 <= m; j += 2) {
        (*c)[0][pairs[j]] += 1;
        (*c)[1][pairs[j + 1]] += 1;
    }
    for (; j < m; j++) (*c)[0][pairs[j]] += 1;
}

/* The 16-bit lanes added into the caller's table (pair b0 | b1 << 6 at b0 | b1 << 8, as
   flush_lanes), widened before the lanes are summed; the lanes left zeroed. */
ZT static void zflush(zlanes_t *c, int64_t *table) {
    for (int r = 0; r < SMALL_BINS; r++)
        for (int h = 0; h < SMALL_BINS; h += 16) {
            const int k = r * SMALL_BINS + h;
            const __m512i s = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) &(*c)[0][k])),
                                               _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) &(*c)[1][k])));
            int64_t *t = table + ((Py_ssize_t) r << 8) + h;
            _mm512_storeu_si512(t, _mm512_add_epi64(_mm512_loadu_si512(t),
                                                    _mm512_cvtepu32_epi64(_mm512_castsi512_si256(s))));
            _mm512_storeu_si512(t + 8, _mm512_add_epi64(_mm512_loadu_si512(t + 8),
                                                        _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(s, 1))));
        }
    memset(c, 0, sizeof *c);
}

/* The pairs of a piece are counted ZLAG pairs behind the group writing them, 16 at a time,
   between the groups' vector work: the counter updates (loads and stores) then overlap the
   decoding (vector arithmetic) instead of following it, and a pair is read back only after
   its vector store has left the store queue (read at once, the 16-bit loads of a 256-bit
   store wait for it: measured slower than counting after the piece). */
#define ZLAG 64
typedef struct {
    const uint16_t *cq;              /* the next pair to count */
    zlanes_t *lanes;
    int64_t zeros;                   /* zgroup's zero count */
} zq_t;

ZI void zcount16(zq_t *Q, const uint16_t *written) {
    if (written - Q->cq >= ZLAG + 16) {
        zcount_pairs(Q->cq, 16, Q->lanes);
        Q->cq += 16;
    }
}
