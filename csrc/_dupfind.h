/* The duplicate search's two structures for csrc/_cvocab.c: the bucketed table it fills
   in id order and the sort it turns to when the table's budget runs out.

   Why apart: _cvocab_walk.h and _cvocab_blocks.h walk the strings (bounds, offsets,
   UTF-8 runs, hashes); how a repeated string is found is its own contract, held here.

   The table: buckets of BUCKET 4-byte slots (32 bytes, one aligned fetch), each slot
   (index + 1) in its low bits under the hash's tag, 0 when empty; a tag is never 0 (the
   caller sets its lowest bit), so an empty slot never matches one.  A bucket fills from
   its first slot, and only a full one sends a string on to the next bucket.  A string
   meets one bucket in nearly every case: its tags compared and its free slot found in
   one step each (SSE2 on x86-64, a loop elsewhere; the _avx2 pair in one 32-byte compare
   for a caller compiled for AVX2) - no branch on how full the table is.
   bucket_tags(b, tag, mask): the slots whose bits under mask are tag; bucket_empty(b):
   the empty slots; both as bits 0..BUCKET-1.

   first_dup_sorted(...): the first duplicate by sorting the indices by (bytes, index), n
   log n comparisons whatever the input; 4 bytes per string.  Returns 0, or -1 when out
   of memory. */
#ifndef GGSCOPE_DUPFIND_H
#define GGSCOPE_DUPFIND_H
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_strarray.h"

#define BUCKET 8
#if defined(__GNUC__)
#define LOWEST(x) __builtin_ctz(x)                 /* the index of x's lowest set bit (x > 0) */
#else
static inline int LOWEST(unsigned x) {
    int k = 0;
    while (!(x & 1u)) x >>= 1, k++;
    return k;
}
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
/* the slots of bucket b whose bits under mask are tag, as bits 0..7 */
static inline unsigned bucket_tags(const uint32_t *b, uint32_t tag, uint32_t mask) {
    const __m128i t = _mm_set1_epi32((int) tag), m = _mm_set1_epi32((int) mask);
    const __m128i lo = _mm_cmpeq_epi32(_mm_and_si128(_mm_load_si128((const __m128i *) b), m), t);
    const __m128i hi = _mm_cmpeq_epi32(_mm_and_si128(_mm_load_si128((const __m128i *) (b + 4)), m), t);
    return (unsigned) _mm_movemask_ps(_mm_castsi128_ps(lo)) | (unsigned) _mm_movemask_ps(_mm_castsi128_ps(hi)) << 4;
}
/* the empty slots of bucket b, as bits 0..7 */
static inline unsigned bucket_empty(const uint32_t *b) {
    const __m128i z = _mm_setzero_si128();
    const __m128i lo = _mm_cmpeq_epi32(_mm_load_si128((const __m128i *) b), z);
    const __m128i hi = _mm_cmpeq_epi32(_mm_load_si128((const __m128i *) (b + 4)), z);
    return (unsigned) _mm_movemask_ps(_mm_castsi128_ps(lo)) | (unsigned) _mm_movemask_ps(_mm_castsi128_ps(hi)) << 4;
}
#else
static inline unsigned bucket_tags(const uint32_t *b, uint32_t tag, uint32_t mask) {
    unsigned out = 0;
    for (int k = 0; k < BUCKET; k++) out |= (unsigned) (b[k] && (b[k] & mask) == tag) << k;
    return out;
}
static inline unsigned bucket_empty(const uint32_t *b) {
    unsigned out = 0;
    for (int k = 0; k < BUCKET; k++) out |= (unsigned) (b[k] == 0) << k;
    return out;
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_BUCKET_AVX2 1
/* bucket_tags and bucket_empty in one 32-byte compare each, for a caller compiled for AVX2 */
__attribute__((target("avx2"))) static inline unsigned bucket_tags_avx2(const uint32_t *b, uint32_t tag, uint32_t mask) {
    const __m256i v = _mm256_and_si256(_mm256_load_si256((const __m256i *) b), _mm256_set1_epi32((int) mask));
    return (unsigned) _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_set1_epi32((int) tag))));
}
__attribute__((target("avx2"))) static inline unsigned bucket_empty_avx2(const uint32_t *b) {
    const __m256i v = _mm256_load_si256((const __m256i *) b);
    return (unsigned) _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_setzero_si256())));
}
#else
#define bucket_tags_avx2 bucket_tags
#define bucket_empty_avx2 bucket_empty
#endif

/* --- the sort ----------------------------------------------------------------------------- */

/* qsort's comparison has no context argument in C11: the array being sorted, set by
   first_dup_sorted while it holds the GIL (nothing here releases it). */
static struct {
    const unsigned char *src;
    const void *lens, *offs;
    Py_ssize_t lsize, osize;
    uint64_t first, width;
} S;

static int by_bytes(const void *pa, const void *pb) {
    const uint32_t i = *(const uint32_t *) pa, j = *(const uint32_t *) pb;
    const uint64_t li = item(S.lens, S.lsize, i), lj = item(S.lens, S.lsize, j);
    const int c = memcmp(S.src + S.first + item(S.offs, S.osize, i) + S.width,
                         S.src + S.first + item(S.offs, S.osize, j) + S.width, (size_t) (li < lj ? li : lj));
    if (c) return c;
    if (li != lj) return li < lj ? -1 : 1;
    return i < j ? -1 : i > j;                     /* equal strings in index order */
}

/* the first duplicate by sorting the indices by (bytes, index): in each run of equal
   strings the first is the earliest and the second the first to repeat it; the answer is
   the run whose second index is smallest, found in one walk over the sorted order (a
   run's head is kept, never searched back for: n equal strings cost n steps, not n**2).
   Returns 0, or -1 when out of memory. */
static int first_dup_sorted(const unsigned char *src, uint64_t first, const void *lens, Py_ssize_t lsize,
                            const void *offs, Py_ssize_t osize, uint64_t width, Py_ssize_t n, Py_ssize_t *dup,
                            Py_ssize_t *of) {
    uint32_t *order = malloc(sizeof(uint32_t) * (size_t) n);
    if (order == NULL) return -1;
    for (Py_ssize_t i = 0; i < n; i++) order[i] = (uint32_t) i;
    S.src = src, S.lens = lens, S.offs = offs, S.lsize = lsize, S.osize = osize, S.first = first, S.width = width;
    qsort(order, (size_t) n, sizeof(uint32_t), by_bytes);
    *dup = *of = -1;
    Py_ssize_t head = 0;                           /* where the run of order[k - 1] began */
    for (Py_ssize_t k = 1; k < n; k++) {
        const uint32_t i = order[k - 1], j = order[k];
        const uint64_t l = item(lens, lsize, i);
        if (item(lens, lsize, j) != l || memcmp(src + first + item(offs, osize, i) + width,
                                                 src + first + item(offs, osize, j) + width, (size_t) l)) {
            head = k;                              /* j starts a run */
            continue;
        }
        if (head == k - 1 && (*dup < 0 || (Py_ssize_t) j < *dup)) {     /* j is its run's second */
            *dup = j;
            *of = order[head];
        }
    }
    free(order);
    return 0;
}

#endif
