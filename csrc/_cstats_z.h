/* Pass two of the statistics in one decode, on AVX-512 (included by _cstats.c after its
   drivers; a CPU without AVX-512 BW/VL/DQ/VBMI/BITALG and FMA keeps those drivers, chosen at
   run time).

   Why: the portable pass two decodes a piece of blocks into an L1 buffer, then bins it
   and sums its moments in two more loops; each value is computed in float32 and binned
   in float32 even where a block group has only 16 or 32 distinct values.  Here a group
   of 32 values is handled in registers: its code bytes are extracted once; for the
   code families (Q4_0/Q4_1/Q5_0/Q5_1, Q4_K/Q5_K, IQ4_NL/IQ4_XS, MXFP4) the group's value of
   every possible code is computed once -- with the decoder's own float32 operations, so
   every value is bit for bit the decoder's -- and each value is then one permute from
   that table, its bin one byte permute from the table of the codes' bins (the bin
   formula of piece_pairs applied to the table); Q8_0's 256 codes are converted and
   binned per value.  The moments are the same float32-per-piece sums of v, (v - shift)
   squared, |v| and the zeros, in vector lanes; the bins go to the same pair counting
   (count_pair_lanes), interleaved with the groups' vector work (zcount16).  So the
   histogram is identical to the portable pass's and the moments differ only in the
   order of float32 additions within a piece (the contract: float32 within a piece,
   float64 across).  A piece whose float32 sums overflow (only MXFP4's byte scales, up to
   2^127, can: the f16 scales times at most 64 * 32 or 32 * 127 stay below 2^28) has its
   sums taken again in float64 (zwide), as the portable drivers do.  The pairs are
   counted in 16-bit counters (_cstats_zcount.h), flushed before they could wrap.

   Contract: binsz_NAME(J, A, R) as bins_NAME; with more than SMALL_BINS bins (no
   lanes) it calls bins_NAME.  z_bins(name, bf) -> the AVX-512 variant of the portable bins
   driver bf of variant name when the CPU has it and it is not turned off (z_enabled), else bf. */
typedef void (*zbins_fn_t)(const job_t *, const binargs_t *, bins_t *);
typedef void (*range_fn_t)(const job_t *, range_t *);

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 12
#include <immintrin.h>
#define HAVE_Z 1
#define ZT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512bitalg,fma")))
#define ZI static inline __attribute__((always_inline)) ZT

typedef struct {
    __m512 a1, a2, aa;
    __m512i z;
} zacc_t;

typedef struct {
    __m512 lo, scale, shift, k0, k1;   /* k0/k1: the codes 0-15 / 16-31 as floats */
    __m512i top, top16;                /* top in every 32-bit / 16-bit lane */
    __m256i wmap;                      /* code c -> the byte of its bin after packs_epi32 */
} zctx_t;

ZI void zmom(zacc_t *S, __m512 v, __m512 shift) {
    const __m512 d = _mm512_sub_ps(v, shift);
    S->a1 = _mm512_add_ps(S->a1, v);
    S->a2 = _mm512_add_ps(S->a2, _mm512_mul_ps(d, d));
    S->aa = _mm512_add_ps(S->aa, _mm512_abs_ps(v));
    const __mmask16 zm = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_EQ_OQ);
    S->z = _mm512_mask_sub_epi32(S->z, zm, S->z, _mm512_set1_epi32(-1));
}

#include "_cstats_zcount.h"

/* piece_pairs' bin formula on 16 values: clamp(int((v - lo) * scale), 0, top) */
ZI __m512i zbin(const zctx_t *C, __m512 v) {
    const __m512i t = _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_sub_ps(v, C->lo), C->scale));
    return _mm512_max_epi32(_mm512_min_epi32(t, C->top), _mm512_setzero_si512());
}

/* Where the bin of code c lands after _mm512_packs_epi32(bins of codes 0-15, of 16-31):
   each 128-bit lane holds four words of the first, then four of the second (the low byte
   of word k at byte 2k).  Saturated to 16 bits, then clamped: the bins of piece_pairs'
   formula (clamp(int(...), 0, top), top below 64) in fewer 512-bit operations than
   narrowing each table (measured on AMD Zen 4: pass two of Q5_1 0.323 -> 0.300 ns per
   element, Q5_0 0.284 -> 0.273, Q4_0 0.225 -> 0.215, Q4_K 0.239 -> 0.233). */
ZI __m256i zwmap(void) {
    uint8_t m[32];
    for (int c = 0; c < 32; c++) {
        const int k = c & 15;
        m[c] = (uint8_t) (2 * (8 * (k >> 2) + 4 * (c >> 4) + (k & 3)));
    }
    return _mm256_loadu_si256((const __m256i *) m);
}

/* The moments of 16 values from the values v and |v| (a1 sums v: see add_piece). */
ZI void zsum(zacc_t *S, __m512 v, __m512 a, __m512 shift) {
    const __m512 d = _mm512_sub_ps(v, shift);
    S->a1 = _mm512_add_ps(S->a1, v);
    S->a2 = _mm512_add_ps(S->a2, _mm512_mul_ps(d, d));
    S->aa = _mm512_add_ps(S->aa, a);
}

/* A group of 32 values whose codes (bytes below 32, or below 16 unless ``wide``) index
   the value table val0 (codes 0-15) / val1 (16-31): moments into S0/S1, zeros into Q, 16
   pairs (value 2l with value 2l + 1).  Everything per value is a lookup in a table of
   the group's codes: its values and |values| (each centred value then v - shift per
   value, as the portable pass computes it), its bins, and which codes are zero
   (counted with a bit shuffle of the codes); a pair index bin(2l) + 64 * bin(2l + 1)
   is one multiply-add of the bins' bytes.  ``zeros``: 0 when the caller knows no value of
   the group is zero (then none is looked for), else 1. */
ZI void zgroup(const zctx_t *C, __m256i codes, __m512 val0, __m512 val1, int wide, int zeros, zacc_t *S0,
               zacc_t *S1, uint16_t *pairs, zq_t *Q) {
    const __m512 av0 = _mm512_abs_ps(val0);
    const __m512i i0 = _mm512_cvtepu8_epi32(_mm256_castsi256_si128(codes));
    const __m512i i1 = _mm512_cvtepu8_epi32(_mm256_extracti128_si256(codes, 1));
    if (wide) {
        const __m512 av1 = _mm512_abs_ps(val1);
        zsum(S0, _mm512_permutex2var_ps(val0, i0, val1), _mm512_permutex2var_ps(av0, i0, av1), C->shift);
        zsum(S1, _mm512_permutex2var_ps(val0, i1, val1), _mm512_permutex2var_ps(av0, i1, av1), C->shift);
    } else {
        zsum(S0, _mm512_permutexvar_ps(i0, val0), _mm512_permutexvar_ps(i0, av0), C->shift);
        zsum(S1, _mm512_permutexvar_ps(i1, val0), _mm512_permutexvar_ps(i1, av0), C->shift);
    }
    if (zeros) {
        const __m512 zero = _mm512_setzero_ps();
        uint32_t zm = _mm512_cmp_ps_mask(val0, zero, _CMP_EQ_OQ);
        if (wide) zm |= (uint32_t) _mm512_cmp_ps_mask(val1, zero, _CMP_EQ_OQ) << 16;
        Q->zeros += __builtin_popcount(_mm256_bitshuffle_epi64_mask(_mm256_set1_epi64x((long long) zm), codes));
    }
    /* the bins of the group's codes: both tables' truncated products packed to saturated
       words, clamped to [0, top], and each value's bin one byte permute (zwmap) away */
    const __m512i t0 = _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_sub_ps(val0, C->lo), C->scale));
    const __m512i t1 = wide ? _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_sub_ps(val1, C->lo), C->scale)) : t0;
    const __m512i w = _mm512_min_epi16(_mm512_max_epi16(_mm512_packs_epi32(t0, t1), _mm512_setzero_si512()), C->top16);
    const __m256i at = _mm256_permutexvar_epi8(codes, C->wmap);
    const __m256i b = _mm512_castsi512_si256(_mm512_permutexvar_epi8(_mm512_castsi256_si512(at), w));
    _mm256_storeu_si256((__m256i *) pairs, _mm256_maddubs_epi16(b, _mm256_set1_epi16(0x4001)));
    zcount16(Q, pairs + 16);
}

/* The eight groups' dl = d * sc and ml = dmin * m of a Q4_K / Q5_K block at once: ggml's
   get_scale_min_k4 on the 12 scale bytes as three 32-bit words (bytes: no file byte
   order), then k4_scale's float32 products in vector lanes. */
ZI void zk4_scales(const uint8_t *b, float d, float dmin, __m256 *dl, __m256 *ml) {
    uint32_t w0, w1, w2;
    memcpy(&w0, b + 4, 4);
    memcpy(&w1, b + 8, 4);
    memcpy(&w2, b + 12, 4);
    const uint32_t sc_lo = w0 & 0x3F3F3F3F, m_lo = w1 & 0x3F3F3F3F;
    const uint32_t sc_hi = (w2 & 0x0F0F0F0F) | (((w0 >> 6) & 0x03030303) << 4);
    const uint32_t m_hi = ((w2 >> 4) & 0x0F0F0F0F) | (((w1 >> 6) & 0x03030303) << 4);
    *dl = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int) sc_hi, (int) sc_lo))));
    *ml = _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int) m_hi, (int) m_lo))));
}

/* Whether a Q4_K / Q5_K block can hold a zero value: c * dl is exact in float32 (c below
   32, dl = d * sc below 2^17 units of d's last place), so c * dl - ml is zero exactly when
   ml = c * dl for a code c in [0, top] -- then ml / dl is c exactly.  Any non-finite or
   zero dl or ml answers yes (the groups are then looked at value by value). */
ZI int zk4_zeros(__m256 dl, __m256 ml, float top) {
    const __m256 c = _mm256_roundscale_ps(_mm256_div_ps(ml, dl), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask8 hit = _mm256_cmp_ps_mask(_mm256_mul_ps(c, dl), ml, _CMP_EQ_OQ)
                         & _mm256_cmp_ps_mask(c, _mm256_setzero_ps(), _CMP_GE_OQ)
                         & _mm256_cmp_ps_mask(c, _mm256_set1_ps(top), _CMP_LE_OQ);
    /* fpclass: 0x01 | 0x80 NaN, 0x08 | 0x10 infinite, 0x02 | 0x04 zero */
    const __mmask8 odd = _mm256_fpclass_ps_mask(dl, 0x9F) | _mm256_fpclass_ps_mask(ml, 0x99);
    return (hit | odd) != 0;
}

/* Q4_K / Q5_K (dec_q45_k): eight groups of 32, value (float) c * dl - ml */
ZI void zq45_k(const job_t *J, const zctx_t *C, const uint8_t *restrict b, int five, zacc_t *S0, zacc_t *S1,
               uint16_t *pairs, zq_t *Q) {
    const float d = f16(b, 0, J->big, J->lut), dmin = f16(b, 2, J->big, J->lut);
    const int qs_at = five ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i qh = five ? _mm256_loadu_si256((const __m256i *) (b + 16)) : _mm256_setzero_si256();
    __m256 dl, ml;
    zk4_scales(b, d, dmin, &dl, &ml);
    float dls[8] __attribute__((aligned(32))), mls[8] __attribute__((aligned(32)));
    _mm256_store_ps(dls, dl);       /* each group's pair broadcast from memory: no shuffle */
    _mm256_store_ps(mls, ml);
    const int zeros = zk4_zeros(dl, ml, five ? 31.0f : 15.0f);
    for (int i = 0; i < 4; i++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *) (b + qs_at + 32 * i));
        for (int h = 0; h < 2; h++) {
            const int g = 2 * i + h;
            __m256i c = _mm256_and_si256(h ? _mm256_srli_epi16(q, 4) : q, m4);
            if (five) /* bit g of each qh byte is bit 4 of the code (c below 16: adding 16 sets it) */
                c = _mm256_mask_add_epi8(c, _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char) (1 << g))), c,
                                         _mm256_set1_epi8(0x10));
            const __m512 a = _mm512_set1_ps(dls[g]);
            const __m512 m = _mm512_set1_ps(mls[g]);
            /* c * dl is exact (c below 32, dl = d * sc of at most 17 significant bits), so one
               fused multiply-subtract rounds c * dl - ml once, as the decoder's two operations do */
            const __m512 val0 = _mm512_fmsub_ps(C->k0, a, m);
            const __m512 val1 = five ? _mm512_fmsub_ps(C->k1, a, m) : val0;
            zgroup(C, c, val0, val1, five, zeros, S0, S1, pairs + 16 * g, Q);
        }
    }
}

/* The upstream nibble layouts (dec_nibbles with an f16 scale, plain halves, no
   outlier): one group, value (float) (c - bias) * d [+ m] */
ZI void znib(const job_t *J, const zctx_t *C, const uint8_t *restrict b, int d_at, int m_at, int qh_at, int qs_at,
             int bias, zacc_t *S0, zacc_t *S1, uint16_t *pairs, zq_t *Q) {
    const float d = f16(b, d_at, J->big, J->lut);
    const __m128i q = _mm_loadu_si128((const __m128i *) (b + qs_at)), m4 = _mm_set1_epi8(0x0F);
    __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m4)),
                                        _mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
    if (qh_at >= 0) c = _mm256_or_si256(c, _mm256_maskz_set1_epi8((__mmask32) u32le(b, qh_at), 0x10));
    const __m512 a = _mm512_set1_ps(d), bs = _mm512_set1_ps((float) bias);
    /* (float) (k - bias) is exact for these small integers, so k - bias in float is too */
    const __m512 k0 = _mm512_sub_ps(C->k0, bs), k1 = _mm512_sub_ps(C->k1, bs);
    __m512 val0, val1;
    if (m_at >= 0) {
        /* (k - bias) * d is exact (a code of at most 5 bits times an f16), so one fused
           multiply-add rounds it plus m once, as the decoder's two operations do */
        const __m512 m = _mm512_set1_ps(f16(b, m_at, J->big, J->lut));
        val0 = _mm512_fmadd_ps(k0, a, m);
        val1 = _mm512_fmadd_ps(k1, a, m);
    } else {
        val0 = _mm512_mul_ps(k0, a);
        val1 = _mm512_mul_ps(k1, a);
    }
    zgroup(C, c, val0, val1, qh_at >= 0, 1, S0, S1, pairs, Q);
}

/* IQ4_NL and IQ4_XS (dec_table4 modes 0 and 1: groups of 32 whose halves are a byte's
   nibbles): value dl * kv[c], kv the 16-value table */
ZI void ztable4(const job_t *J, const zctx_t *C, const uint8_t *restrict b, int mode, int groups, zacc_t *S0,
                zacc_t *S1, uint16_t *pairs, zq_t *Q) {
    const __m512 kv = _mm512_loadu_ps(J->g1);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (int ib = 0; ib < groups; ib++) {
        int at;
        const float dl = table4_scale(J, b, mode, ib, &at);
        const __m128i q = _mm_loadu_si128((const __m128i *) (b + at));
        const __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m4)),
                                                  _mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
        const __m512 val = _mm512_mul_ps(_mm512_set1_ps(dl), kv);
        zgroup(C, c, val, val, 0, 1, S0, S1, pairs + 16 * ib, Q);
    }
}

/* Q8_0 (dec_int8, f16 scale, 32 values): (float) q * d per value */
ZI void zint8(const job_t *J, const zctx_t *C, const uint8_t *restrict b, int d_at, int qs_at, zacc_t *S0,
              zacc_t *S1, uint16_t *pairs, zq_t *Q) {
    const __m512 a = _mm512_set1_ps(f16(b, d_at, J->big, J->lut));
    const __m512 v0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (b + qs_at)))), a);
    const __m512 v1 = _mm512_mul_ps(
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (b + qs_at + 16)))), a);
    zmom(S0, v0, C->shift);
    zmom(S1, v1, C->shift);
    const __m512i p = _mm512_or_si512(zbin(C, v0), _mm512_slli_epi32(zbin(C, v1), 6));
    /* to a register, then stored: the compiler's folded store form (vpmovdw to memory) was
       measured the costliest instruction of this pass on AMD Zen 4 */
    __m256i q = _mm512_cvtepi32_epi16(p);
    __asm__("" : "+v"(q));
    _mm256_storeu_si256((__m256i *) pairs, q);
    zcount16(Q, pairs + 16);
}

/* A piece whose float32 sums overflowed (MXFP4's byte scales reach 2^127): its moments
   again in float64, from the variant's own decoder, as add_piece does for the portable
   drivers. */
__attribute__((noinline)) static void zwide(const job_t *J, Py_ssize_t p, Py_ssize_t end, float shift,
                                            void (*decode)(const job_t *, float *), double *s1, double *s2,
                                            double *sa) {
    float out[PIECE + 256] __attribute__((aligned(64)));
    job_t piece = *J;
    piece.blocks = J->blocks + p * J->bb;
    piece.nb = end - p;
    decode(&piece, out);
    double r[3];
    piece_moments_wide(out, (int) (end - p) * J->n, shift, r);
    *s1 += r[0];
    *s2 += r[1];
    *sa += r[2];
}

/* The driver: pieces of whole blocks as bins_NAME, each block's groups through GROUPS
   (a statement on J, C, b, S0, S1 and pp, the block's n / 2 pairs); FITS, on J, says
   whether the variant's arguments are the groups of 32 GROUPS handles. */
#define ZBINS(NAME, N, FITS, GROUPS)                                                                      \
    ZT static void binsz_##NAME(const job_t *J, const binargs_t *A, bins_t *R) {                          \
        if (A->lanes == NULL || A->top >= SMALL_BINS || !(FITS)) {                                        \
            bins_##NAME(J, A, R);                                                                         \
            return;                                                                                       \
        }                                                                                                 \
        const int n = (N);                                                                                \
        const int per = PIECE / n > 0 ? PIECE / n : 1;                                                    \
        uint16_t pairs[PIECE / 2 + 128] __attribute__((aligned(64)));                                     \
        const zctx_t C0 = {_mm512_set1_ps(A->lo), _mm512_set1_ps(A->scale), _mm512_set1_ps(A->shift),     \
                           _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),          \
                           _mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31), \
                           _mm512_set1_epi32(A->top), _mm512_set1_epi16((short) A->top), zwmap()};        \
        const zctx_t *C = &C0;                                                                            \
        double s1 = 0.0, s2 = 0.0, sa = 0.0;                                                              \
        int64_t zeros = 0, pending = 0;                                                                   \
        zlanes_t *lanes = (zlanes_t *) A->lanes;                                                          \
        for (Py_ssize_t p = 0; p < J->nb; p += per) {                                                     \
            const Py_ssize_t end = p + per < J->nb ? p + per : J->nb;                                     \
            prefetch_next(J, end, per);                                                                   \
            zacc_t S0 = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_si512()}; \
            zacc_t S1 = S0;                                                                               \
            uint16_t *pp = pairs;                                                                         \
            zq_t Q0 = {pairs, lanes, 0}, *Q = &Q0;                                                        \
            for (Py_ssize_t bi = p; bi < end; bi++, pp += n / 2) {                                        \
                const uint8_t *restrict b = J->blocks + bi * J->bb;                                       \
                GROUPS;                                                                                   \
            }                                                                                             \
            const int e = (int) (end - p) * n;                                                            \
            const float a1 = _mm512_reduce_add_ps(_mm512_add_ps(S0.a1, S1.a1));                           \
            const float a2 = _mm512_reduce_add_ps(_mm512_add_ps(S0.a2, S1.a2));                           \
            const float aa = _mm512_reduce_add_ps(_mm512_add_ps(S0.aa, S1.aa));                           \
            zeros += _mm512_reduce_add_epi32(_mm512_add_epi32(S0.z, S1.z)) + Q->zeros;                    \
            zcount_pairs(Q->cq, (int) (pairs + e / 2 - Q->cq), lanes);                                    \
            if ((pending += e / 2) > Z16_MAX - per * n / 2) { /* the next piece could wrap a counter */    \
                zflush(lanes, A->table);                                                                  \
                pending = 0;                                                                              \
            }                                                                                             \
            if (finitef32(a1) && finitef32(a2) && finitef32(aa)) {                                        \
                s1 += (double) a1 - (double) e * (double) A->shift;      /* a1 sums v: see add_piece */  \
                s2 += a2;                                                                                 \
                sa += aa;                                                                                 \
            } else {                                                                                      \
                zwide(J, p, end, A->shift, decto_##NAME, &s1, &s2, &sa);                                  \
            }                                                                                             \
        }                                                                                                 \
        zflush(lanes, A->table);                                                                          \
        R->s1 = s1;                                                                                       \
        R->s2 = s2;                                                                                       \
        R->sa = sa;                                                                                       \
        R->zeros = zeros;                                                                                 \
    }

#define A(i) (J->a[i])
ZBINS(q4_k, 256, 1, zq45_k(J, C, b, 0, &S0, &S1, pp, Q))
ZBINS(q5_k, 256, 1, zq45_k(J, C, b, 1, &S0, &S1, pp, Q))
ZBINS(nib_00, 32, 1, znib(J, C, b, A(0), -1, -1, A(4), A(7), &S0, &S1, pp, Q))
ZBINS(nib_10, 32, 1, znib(J, C, b, A(0), A(2), -1, A(4), A(7), &S0, &S1, pp, Q))
ZBINS(nib_01, 32, 1, znib(J, C, b, A(0), -1, A(3), A(4), A(7), &S0, &S1, pp, Q))
ZBINS(nib_11, 32, 1, znib(J, C, b, A(0), A(2), A(3), A(4), A(7), &S0, &S1, pp, Q))
ZBINS(int8_32, 32, 1, zint8(J, C, b, A(0), A(2), &S0, &S1, pp, Q))
ZBINS(table4_0, J->n, A(2) == 32, ztable4(J, C, b, 0, A(1), &S0, &S1, pp, Q))
ZBINS(table4_1, J->n, A(2) == 32, ztable4(J, C, b, 1, A(1), &S0, &S1, pp, Q))
ZBINS(table4_2, J->n, A(2) == 32, ztable4(J, C, b, 2, A(1), &S0, &S1, pp, Q))
#undef A

#include "_cstats_zrange.h"

/* by variant name: a target_clones function's address is not the same everywhere */
static const struct {
    const char *name;
    zbins_fn_t z;
} ZVARIANTS[] = {
    {"q4_k", binsz_q4_k},     {"q5_k", binsz_q5_k},     {"nib_00", binsz_nib_00}, {"nib_10", binsz_nib_10},
    {"nib_01", binsz_nib_01}, {"nib_11", binsz_nib_11}, {"int8_32", binsz_int8_32}, {"table4_0", binsz_table4_0},
    {"table4_1", binsz_table4_1}, {"table4_2", binsz_table4_2},
};

static int z_cpu(void) {
    static int ok = -1;
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")
             && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vbmi")
             && __builtin_cpu_supports("avx512bitalg") && __builtin_cpu_supports("fma");
    }
    return ok;
}
#endif

/* 1: the AVX-512 pass two where the CPU has it; 0: the portable drivers (tests compare) */
static int z_enabled = 1;

static zbins_fn_t z_bins(const char *name, zbins_fn_t bf) {
#ifdef HAVE_Z
    if (z_enabled && z_cpu())
        for (size_t i = 0; i < sizeof ZVARIANTS / sizeof ZVARIANTS[0]; i++)
            if (strcmp(ZVARIANTS[i].name, name) == 0) return ZVARIANTS[i].z;
#else
    (void) name;
#endif
    return bf;
}

static range_fn_t z_range(const char *name, range_fn_t rf) {
#ifdef HAVE_Z
    if (z_enabled && z_cpu())
        for (size_t i = 0; i < sizeof ZRANGES / sizeof ZRANGES[0]; i++)
            if (strcmp(ZRANGES[i].name, name) == 0) return ZRANGES[i].z;
#else
    (void) name;
#endif
    return rf;
}
