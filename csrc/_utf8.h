/* Well-formed UTF-8, as Python's strict codec judges it, for ggscope's compiled string checks.

   Why: csrc/_cvocab.c judges every string of a vocabulary; string by string that was
   most of its time, so a contiguous array is judged in runs (see there) by a vectorised
   check.  Both checks live here, apart from the duplicate search.

   utf8_ok(p, n): one string, byte by byte (RFC 3629: no overlong forms, no surrogates,
   nothing past U+10FFFF, no truncated sequence).  utf8_span(p, n): the same verdict on n
   bytes, with Keiser and Lemire's lookup algorithm ("Validating UTF-8 in less than one
   instruction per byte", Software: Practice and Experience, 2021) 64 bytes a step on
   AVX-512BW, 32 on AVX2, where the CPU has it (checked at run time; UTF8_LEVEL caps it),
   else utf8_ok.  None reads past p + n. */
#ifndef GGSCOPE_UTF8_H
#define GGSCOPE_UTF8_H
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2 1
#endif

/* --- UTF-8 ------------------------------------------------------------------------------ */

/* Python's strict UTF-8 decoder's verdict on n bytes (RFC 3629 well-formedness) */
static int utf8_ok(const unsigned char *p, uint64_t n) {
    unsigned char any = 0;                         /* all ASCII (most tokens): one OR over the bytes */
    for (uint64_t k = 0; k < n; k++) any |= p[k];
    if (!(any & 0x80)) return 1;
    uint64_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {                          /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        const unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint64_t need;
        unsigned char lo = 0x80, hi = 0xBF;        /* the range of the second byte */
        if (c < 0xC2) return 0;                    /* a continuation byte or an overlong 2-byte form */
        else if (c < 0xE0) need = 1;
        else if (c < 0xF0) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;              /* overlong */
            else if (c == 0xED) hi = 0x9F;         /* surrogates */
        } else if (c < 0xF5) {
            need = 3;
            if (c == 0xF0) lo = 0x90;              /* overlong */
            else if (c == 0xF4) hi = 0x8F;         /* past U+10FFFF */
        } else return 0;
        if (n - i - 1 < need) return 0;
        if (p[i + 1] < lo || p[i + 1] > hi) return 0;
        for (uint64_t k = 2; k <= need; k++)
            if ((p[i + k] & 0xC0) != 0x80) return 0;
        i += need + 1;
    }
    return 1;
}

#ifdef HAVE_AVX2
/* The error classes of Keiser and Lemire's lookup algorithm: a pair of bytes (the one
   before, the one at) is classified by three 16-entry tables - the high and low nibble
   of the first byte, the high nibble of the second - and is wrong where all three agree;
   a continuation that is the third or fourth byte of a sequence is settled by the lead
   two or three bytes back. */
enum { TOO_SHORT = 1, TOO_LONG = 2, OVERLONG_3 = 4, TOO_LARGE = 8, SURROGATE = 16, OVERLONG_2 = 32,
       TOO_LARGE_1000 = 64, OVERLONG_4 = 64, TWO_CONTS = 128, CARRY = TOO_SHORT | TOO_LONG | TWO_CONTS };

#define T16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) \
    _mm256_setr_epi8(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)

__attribute__((target("avx2"))) static int utf8_span_avx2(const unsigned char *p, uint64_t n) {
    const __m256i byte_1_high = T16(TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
                                    TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,
                                    TOO_SHORT | OVERLONG_2, TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,
                                    TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4);
    const __m256i byte_1_low = T16(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY, CARRY,
                                   CARRY | TOO_LARGE, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                   CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                   CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                   CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                   CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
                                   CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000);
    const __m256i byte_2_high = T16(TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
                                    TOO_SHORT,
                                    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
                                    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
                                    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
                                    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
                                    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT);
    /* a block ending in the lead byte of an unfinished sequence (a 4-byte lead in its
       last three bytes, a 3-byte lead in its last two, a 2-byte lead last) */
    const __m256i max_end = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                             -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                             (char) (0xF0 - 1), (char) (0xE0 - 1), (char) (0xC0 - 1));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i prev = _mm256_setzero_si256(), err = _mm256_setzero_si256(), incomplete = _mm256_setzero_si256();
    for (uint64_t i = 0; i < n; i += 32) {
        __m256i in;
        if (n - i >= 32) {
            in = _mm256_loadu_si256((const __m256i *) (p + i));
        } else {                                   /* the last bytes, padded with NULs (ASCII) */
            unsigned char last[32] = {0};
            memcpy(last, p + i, (size_t) (n - i));
            in = _mm256_loadu_si256((const __m256i *) last);
        }
        if (_mm256_movemask_epi8(in) == 0) {       /* all ASCII: only an unfinished sequence before */
            err = _mm256_or_si256(err, incomplete);
            incomplete = _mm256_setzero_si256();
            prev = in;
            continue;
        }
        const __m256i joint = _mm256_permute2x128_si256(prev, in, 0x21);    /* prev's high lane, in's low */
        const __m256i prev1 = _mm256_alignr_epi8(in, joint, 15);
        const __m256i prev2 = _mm256_alignr_epi8(in, joint, 14);
        const __m256i prev3 = _mm256_alignr_epi8(in, joint, 13);
        const __m256i b1h = _mm256_shuffle_epi8(byte_1_high, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low4));
        const __m256i b1l = _mm256_shuffle_epi8(byte_1_low, _mm256_and_si256(prev1, low4));
        const __m256i b2h = _mm256_shuffle_epi8(byte_2_high, _mm256_and_si256(_mm256_srli_epi16(in, 4), low4));
        const __m256i special = _mm256_and_si256(_mm256_and_si256(b1h, b1l), b2h);
        const __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((char) (0xE0 - 0x80)));   /* >= 0x80: 111_____ */
        const __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((char) (0xF0 - 0x80)));  /* 1111____ */
        const __m256i must23 = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char) 0x80));
        err = _mm256_or_si256(err, _mm256_xor_si256(must23, special));
        incomplete = _mm256_subs_epu8(in, max_end);   /* settled by the next block's pairs, or at the end */
        prev = in;
    }
    err = _mm256_or_si256(err, incomplete);
    return _mm256_testz_si256(err, err);
}

/* the same algorithm 64 bytes a step (AVX-512BW): the last bytes loaded under a mask (the
   rest zero, ASCII; a masked byte is never read) */
#define T64(t) _mm512_broadcast_i32x4(_mm256_castsi256_si128(t))
__attribute__((target("avx512f,avx512bw"))) static int utf8_span_avx512(const unsigned char *p, uint64_t n) {
    const __m512i byte_1_high = T64(T16(TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
                                        TOO_LONG, TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,
                                        TOO_SHORT | OVERLONG_2, TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,
                                        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4));
    const __m512i byte_1_low = T64(T16(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY,
                                       CARRY, CARRY | TOO_LARGE, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                       CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                       CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                       CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
                                       CARRY | TOO_LARGE | TOO_LARGE_1000,
                                       CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
                                       CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000));
    const __m512i byte_2_high = T64(T16(TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
                                        TOO_SHORT, TOO_SHORT,
                                        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
                                        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
                                        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
                                        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
                                        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT));
    /* a block ending in the lead byte of an unfinished sequence (see utf8_span_avx2) */
    const __m512i max_end = _mm512_inserti64x4(_mm512_set1_epi8(-1),
                                               _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                -1, -1, -1, (char) (0xF0 - 1), (char) (0xE0 - 1),
                                                                (char) (0xC0 - 1)),
                                               1);
    const __m512i low4 = _mm512_set1_epi8(0x0F), lanes = _mm512_setr_epi64(6, 7, 8, 9, 10, 11, 12, 13);
    const __m512i high_bit = _mm512_set1_epi8((char) 0x80);
    __m512i prev = _mm512_setzero_si512(), err = _mm512_setzero_si512(), incomplete = _mm512_setzero_si512();
    for (uint64_t i = 0; i < n; i += 64) {
        const __m512i in = n - i >= 64 ? _mm512_loadu_si512(p + i)
                                       : _mm512_maskz_loadu_epi8((__mmask64) (~0ULL >> (64 - (n - i))), p + i);
        if (!_mm512_test_epi8_mask(in, high_bit)) {           /* all ASCII: only an unfinished sequence before */
            err = _mm512_or_si512(err, incomplete);
            incomplete = _mm512_setzero_si512();
            prev = in;
            continue;
        }
        const __m512i joint = _mm512_permutex2var_epi64(prev, lanes, in);   /* prev's last lane, in's first three */
        const __m512i prev1 = _mm512_alignr_epi8(in, joint, 15);
        const __m512i prev2 = _mm512_alignr_epi8(in, joint, 14);
        const __m512i prev3 = _mm512_alignr_epi8(in, joint, 13);
        const __m512i b1h = _mm512_shuffle_epi8(byte_1_high, _mm512_and_si512(_mm512_srli_epi16(prev1, 4), low4));
        const __m512i b1l = _mm512_shuffle_epi8(byte_1_low, _mm512_and_si512(prev1, low4));
        const __m512i b2h = _mm512_shuffle_epi8(byte_2_high, _mm512_and_si512(_mm512_srli_epi16(in, 4), low4));
        const __m512i special = _mm512_ternarylogic_epi64(b1h, b1l, b2h, 0x80);           /* b1h & b1l & b2h */
        const __m512i third = _mm512_subs_epu8(prev2, _mm512_set1_epi8((char) (0xE0 - 0x80)));
        const __m512i fourth = _mm512_subs_epu8(prev3, _mm512_set1_epi8((char) (0xF0 - 0x80)));
        const __m512i must23 = _mm512_and_si512(_mm512_or_si512(third, fourth), high_bit);
        err = _mm512_ternarylogic_epi64(err, must23, special, 0xF6);                      /* err | (must23 ^ special) */
        incomplete = _mm512_subs_epu8(in, max_end);
        prev = in;
    }
    err = _mm512_or_si512(err, incomplete);
    return !_mm512_test_epi64_mask(err, err);
}
#endif

/* which vector check utf8_span uses: 2 the widest this CPU has, 1 at most AVX2, 0 none
   (the tests' ways to every route; set by _cvocab.scan's ``simd``) */
static int UTF8_LEVEL = 2;

/* whether the n bytes at p are well-formed UTF-8, the fastest way this CPU has */
static int utf8_span(const unsigned char *p, uint64_t n) {
#ifdef HAVE_AVX2
    if (UTF8_LEVEL >= 2 && __builtin_cpu_supports("avx512bw")) return utf8_span_avx512(p, n);
    if (UTF8_LEVEL >= 1 && __builtin_cpu_supports("avx2")) return utf8_span_avx2(p, n);
#endif
    return utf8_ok(p, n);
}

#endif
