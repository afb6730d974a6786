/* Pass one on AVX-512 (included by _cstats_z.h, inside its HAVE_Z part): the block bounds
   that let pass one skip blocks, computed faster.

   Why: pass one decodes only the blocks whose bounds could move the range found so far,
   so its cost is the bounds of every block: scalar code at 2-3 ns per block (Q8_0 and
   the nibble layouts: two f16 loads through the lookup table and the branches of each
   block; Q4_K/Q5_K: eight scale and min extractions) was 13-15 % of a one-core pass.

   * Q4_K / Q5_K: one block at a time, its eight groups in vector lanes.
   * Q8_0 and the upstream nibble layouts (Q4_0/Q4_1/Q5_0/Q5_1): 16 blocks at a time,
     their f16 scale (and min) fields gathered and converted by vcvtph2ps (exact for
     every finite and infinite f16, as the lookup table), the bounds of span_int8 /
     span_nibbles in lanes, and only the lanes that could move the range (or are not
     finite: a comparison with NaN is false) decoded, in block order, by the portable
     decoder.  A bound only decides what is decoded: min and max are still those of
     decoded values, so they are the portable pass's exactly.

   Contract: rangez_NAME(J, R) as rangeb_NAME (the same lo, hi, ok, NaN total, and scale
   codes counted, or taken back when a block is not finite); z_range(name, rf) picks
   them as z_bins does. */

/* Pass one of Q4_K / Q5_K: span_q45_k's bounds with the eight groups' scales and mins
   in vector lanes (zk4_scales), the same float32 operations; the bounds only decide
   which blocks are decoded.  Whether a block lies inside [flo, fhi] is asked of every
   group's bounds at once (all lanes inside is the block's min and max inside, with no
   min and max across lanes taken); RANGE_BOUND_AS then sees L, U = flo, fhi for a block
   inside, NaN (decoded) for one that is not.  A NaN or infinite d or dmin leaves a lane
   NaN or infinite (0 * inf is NaN), which fails its comparison: such a block is decoded,
   as span_q45_k's settle has it. */
ZI int inside_q45_kz(const job_t *J, const uint8_t *b, int five, float flo, float fhi) {
    const float d = f16(b, 0, J->big, J->lut), dmin = f16(b, 2, J->big, J->lut);
    __m256 dl, ml;
    zk4_scales(b, d, dmin, &dl, &ml);
    const __m256 e0 = _mm256_sub_ps(_mm256_mul_ps(_mm256_setzero_ps(), dl), ml);
    const __m256 e1 = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(five ? 31.0f : 15.0f), dl), ml);
    const __mmask8 in = _mm256_cmp_ps_mask(_mm256_min_ps(e0, e1), _mm256_set1_ps(flo), _CMP_GE_OQ)
                        & _mm256_cmp_ps_mask(_mm256_max_ps(e0, e1), _mm256_set1_ps(fhi), _CMP_LE_OQ);
    return in == 0xFF;
}
#define SPAN_Q45_KZ(FIVE)                                                                                 \
    const int in_ = inside_q45_kz(J, b, (FIVE), flo, fhi);                                                \
    L = in_ ? flo : NAN;                                                                                  \
    U = in_ ? fhi : NAN

RANGE_BOUND_AS(ZT, rangez_q4_k, 256, dec_q45_k(J, b, o, 16, 0), SPAN_Q45_KZ(0))
RANGE_BOUND_AS(ZT, rangez_q5_k, 256, dec_q45_k(J, b, o, 48, 1), SPAN_Q45_KZ(1))



/* 16 f16 fields at byte ``at`` of the blocks at ``base`` + ``offs`` (the field read as the
   file's byte order says), as float32. */
ZI __m512 zf16x16(const job_t *J, const uint8_t *base, __m512i offs, int at) {
    const __m512i w = _mm512_i32gather_epi32(offs, (const void *) (base + at), 1);
    const __m512i c = J->big ? _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w, 8), _mm512_set1_epi32(0xFF)),
                                               _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0xFF)), 8))
                             : _mm512_and_si512(w, _mm512_set1_epi32(0xFFFF));
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(c));
}

/* span_int8 on 16 blocks: +-128 |d| */
#define ZSPAN_INT8(D_AT)                                                                                   \
    const __m512 B = _mm512_mul_ps(_mm512_set1_ps(128.0f), _mm512_abs_ps(zf16x16(J, base, offs, (D_AT)))); \
    const __m512 L = _mm512_sub_ps(_mm512_setzero_ps(), B), U = B

/* span_nibbles on 16 blocks (f16 d, f16 m when M_AT >= 0): the values of the extreme codes */
#define ZSPAN_NIB(D_AT, M_AT, TOP, BIAS)                                                                   \
    const __m512 d_ = zf16x16(J, base, offs, (D_AT));                                                      \
    const __m512 e0_ = _mm512_mul_ps(_mm512_set1_ps((float) (0 - (BIAS))), d_);                            \
    const __m512 e1_ = _mm512_mul_ps(_mm512_set1_ps((float) ((TOP) - (BIAS))), d_);                        \
    const __m512 m_ = (M_AT) >= 0 ? zf16x16(J, base, offs, (M_AT)) : _mm512_setzero_ps();                  \
    const __m512 L = _mm512_add_ps(_mm512_min_ps(e0_, e1_), m_), U = _mm512_add_ps(_mm512_max_ps(e0_, e1_), m_)

/* Blocks asked for ahead of the batch being bounded (measured on a chunk just read, Q8_0:
   0.87 ms per 32 Mi elements at 256, 0.96 at 1024, 0.5-1 ms more at 128). */
#define ZAHEAD 256

/* The driver: batches of 16 blocks, the batch's bounds by ZSPAN (a statement declaring
   __m512 L and U from J, base and offs), its undecidable blocks decoded by DECODE.  The
   batch's scale codes are counted first, so a failure takes back all of them.  FITS: the
   gathered fields' four bytes lie inside a block, else the portable PORTABLE runs. */
#define ZRANGE16(FN, PORTABLE, FITS, N, DECODE, ZSPAN)                                                     \
    ZT static void FN(const job_t *J, range_t *R) {                                                        \
        if (!(FITS)) {                                                                                     \
            PORTABLE(J, R);                                                                                \
            return;                                                                                        \
        }                                                                                                  \
        const int n = (N);                                                                                 \
        float out[256] __attribute__((aligned(64)));                                                       \
        int32_t lo = 0x7FFFFFFF, hi = (int32_t) 0x80000000;                                                \
        float flo = INFINITY, fhi = -INFINITY;                                                             \
        const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), \
                                                _mm512_set1_epi32(J->bb));                                  \
        for (Py_ssize_t p = 0; p < J->nb; p += 16) {                                                       \
            const Py_ssize_t end = p + 16 < J->nb ? p + 16 : J->nb;                                        \
            const uint8_t *base = J->blocks + p * J->bb;                                                   \
            if ((p & 63) == 0) prefetch_next(J, p + ZAHEAD, 64);                                            \
            for (Py_ssize_t bi = p; bi < end; bi++) count_scale(J, J->blocks + bi * J->bb);                \
            uint32_t todo = (1u << (end - p)) - 1;                                                         \
            if (end - p == 16) {                                                                           \
                ZSPAN;                                                                                     \
                todo = (uint16_t) ~(_mm512_cmp_ps_mask(L, _mm512_set1_ps(flo), _CMP_GE_OQ)                 \
                                    & _mm512_cmp_ps_mask(U, _mm512_set1_ps(fhi), _CMP_LE_OQ));             \
            }                                                                                              \
            for (; todo; todo &= todo - 1) {                                                               \
                const uint8_t *restrict b = base + (Py_ssize_t) __builtin_ctz(todo) * J->bb;               \
                float *restrict o = out;                                                                   \
                DECODE;                                                                                    \
                if (!fold_block_range(J, out, n, end - 1, &lo, &hi, &flo, &fhi)) {                         \
                    R->ok = 0;                                                                             \
                    return;                                                                                \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        bounds_result(J, R, lo, hi);                                                                       \
    }

#define A(i) (J->a[i])
ZRANGE16(rangez_int8_32, rangeb_int8_32, A(0) + 4 <= J->bb, 32, dec_int8(J, b, o, A(0), 0, A(2), 32), ZSPAN_INT8(A(0)))
ZRANGE16(rangez_nib_00, rangeb_nib_00, A(0) + 4 <= J->bb && A(2) + 4 <= J->bb, 32, dec_nibbles(J, b, o, A(0), 0, -1, -1, A(4), 16, 0, A(7), -1), ZSPAN_NIB(A(0), -1, 15, A(7)))
ZRANGE16(rangez_nib_10, rangeb_nib_10, A(0) + 4 <= J->bb && A(2) + 4 <= J->bb, 32, dec_nibbles(J, b, o, A(0), 0, A(2), -1, A(4), 16, 0, A(7), -1), ZSPAN_NIB(A(0), A(2), 15, A(7)))
ZRANGE16(rangez_nib_01, rangeb_nib_01, A(0) + 4 <= J->bb && A(2) + 4 <= J->bb, 32, dec_nibbles(J, b, o, A(0), 0, -1, A(3), A(4), 16, 0, A(7), -1), ZSPAN_NIB(A(0), -1, 31, A(7)))
ZRANGE16(rangez_nib_11, rangeb_nib_11, A(0) + 4 <= J->bb && A(2) + 4 <= J->bb, 32, dec_nibbles(J, b, o, A(0), 0, A(2), A(3), A(4), 16, 0, A(7), -1), ZSPAN_NIB(A(0), A(2), 31, A(7)))
#undef A

static const struct {
    const char *name;
    range_fn_t z;
} ZRANGES[] = {
    {"q4_k", rangez_q4_k},     {"q5_k", rangez_q5_k},     {"int8_32", rangez_int8_32}, {"nib_00", rangez_nib_00},
    {"nib_10", rangez_nib_10}, {"nib_01", rangez_nib_01}, {"nib_11", rangez_nib_11},
};
