/* The compiled scan's walk over GGUF's layout of a string array (8-byte prefixes, back to
   back, no tail) when it searches for duplicates: blocks of BLOCK strings, each in three
   tight loops.

   Why: one fused step per string (_cvocab_walk.h) kept about 30 values live - GCC put the
   running offset and the 128-bit product on the stack - and cost 8.9 ns a token on
   bert-bge's vocabulary; loops that each do one job keep theirs in registers.

   A block: its bounds from its lengths' sum (one check, a string-by-string walk only to
   name the first string outside); hash_block - each string's offset and table entry
   (entry_of: the bucket's place in bytes and the tag), eight strings a step with
   AVX-512 where the CPU has it, the same entries as the scalar loop (hash_words); its
   UTF-8 runs (utf8_runs, on bytes just read); ask_block - each entry asked of the
   table, its bucket fetched AHEAD strings before, the usual string (no tag agrees, a
   slot is free) in one step and ask_slow for the rest, every bucket visit counted
   against the budget as in the string walk.  walk_any(w, simd) chooses this walk or
   walk_strings. */
#ifndef GGSCOPE_CVOCAB_BLOCKS_H
#define GGSCOPE_CVOCAB_BLOCKS_H
#include "_cvocab_walk.h"

#define BLOCK 2048                                 /* strings per block */
#define BLOCK_WORK (3 * BLOCK + AHEAD)             /* Walk.work, in words: entries (hb), the words (A, B) */

/* whether strings m < j have the same bytes (the rare step: their tags agree) */
static NOINLINE int same_bytes(const Walk *w, uint32_t m, Py_ssize_t j) {
    const uint64_t l = item(w->lens, w->lsize, j);
    const void *o = w->rsize ? w->rel : w->offs;
    const Py_ssize_t os = w->rsize ? w->rsize : w->wide ? 8 : 4;
    return item(w->lens, w->lsize, m) == l
           && memcmp(w->src + w->first + item(o, os, m) + w->width, w->src + w->first + item(o, os, j) + w->width,
                     (size_t) l) == 0;
}

/* a hash as a table entry: the bucket's place in bytes (its index from the top bits,
   multiply-shift, times 32) << 32 | tag (the low bits above the slot's index bits; never
   0) - the step that asks the table does no arithmetic on it */
static inline uint64_t entry_of(uint64_t h, uint64_t slots, uint32_t imask) {
    return ((h >> 32) * slots) >> 32 << 37 | ((uint32_t) h & ~imask) | (imask + 1);
}
#define AT(table, r) ((uint32_t *) ((char *) (table) + ((r) >> 32)))       /* an entry's bucket */

/* the first AHEAD buckets of a block's cnt entries fetched; hb's AHEAD entries after them
   set to bucket 0 (ask_block fetches them, past its end) */
static inline void fetch_first(const Walk *w, uint64_t *hb, Py_ssize_t cnt) {
    for (Py_ssize_t i = 0; i < AHEAD; i++) {
        hb[cnt + i] = 0;
        if (i < cnt) PREFETCH(AT(w->table, hb[i]));
    }
}

/* strings lo..hi-1 of a contiguous array of 8-byte prefixes and no tail, all inside the
   buffer, string lo's prefix at ``pos`` past first: each one's offset noted, its table
   entry (entry_of) in hb, the first AHEAD buckets fetched, hb's AHEAD entries after
   them bucket 0 */
INLINE void hash_block(const Walk *w, uint64_t pos, Py_ssize_t lo, Py_ssize_t hi, uint64_t *hb,
                       const Py_ssize_t LSIZE, const int WIDE) {
    const unsigned char *const base = w->src + w->first + 8;
    const void *const lens = w->lens;
    void *const offs = w->offs;
    const uint64_t slots = w->slots;
    const uint32_t imask = w->imask;
    for (Py_ssize_t i = lo; i < hi; i++) {
        const uint64_t l = item(lens, LSIZE, i);
        if (WIDE) ((uint64_t *) offs)[i] = pos;
        else ((uint32_t *) offs)[i] = (uint32_t) pos;
        hb[i - lo] = entry_of(hash_prefixed(base + pos, l), slots, imask);
        pos += 8 + l;
    }
    fetch_first(w, hb, hi - lo);
}

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_HASH512 1
#define T512 __attribute__((target("avx512f,avx512dq")))
/* hash_block with AVX-512F/DQ, the same entries: a scalar loop notes each string's
   offset and reads the 16 bytes that end it - unmasked: they start at most 8 bytes
   before its prefix, inside the array for every string but the first, whose two words
   are read as hash_prefixed reads them (two gathers cost more than these loads on Zen
   4) - then eight strings a step mask those words to their own bytes and take
   hash_words and entry_of; a string over 16 bytes (its words meaningless) is hashed
   after, by hash_long. */
T512 static inline void hash_block_512(const Walk *w, uint64_t pos, Py_ssize_t lo, Py_ssize_t hi, uint64_t *hb,
                                       const Py_ssize_t LSIZE, const int WIDE) {
    const unsigned char *const base8 = w->src + w->first;        /* + prefix + length: a string's last word */
    const void *const lens = w->lens;
    void *const offs = w->offs;
    uint64_t *const A = w->work + BLOCK + AHEAD, *const B = A + BLOCK;
    Py_ssize_t i = lo;
    if (i == 0) {                                  /* the array's first: its words as hash_prefixed reads them */
        const uint64_t l = item(lens, LSIZE, 0), c = l < 16 ? l : 16;
        if (WIDE) ((uint64_t *) offs)[0] = pos;
        else ((uint32_t *) offs)[0] = (uint32_t) pos;
        A[0] = r8(base8 + pos + l - SHORT[c].back) & SHORT[c].lo;
        B[0] = r8(base8 + pos + l) & SHORT[c].hi;
        pos += 8 + l;
        i = 1;
    }
    for (; i < hi; i++) {                          /* the others: the 16 bytes that end each, masked below */
        const uint64_t l = item(lens, LSIZE, i);   /* (from 8 bytes before its prefix: the array's own) */
        if (WIDE) ((uint64_t *) offs)[i] = pos;
        else ((uint32_t *) offs)[i] = (uint32_t) pos;
        A[i - lo] = r8(base8 + pos + l - 8);
        B[i - lo] = r8(base8 + pos + l);
        pos += 8 + l;
    }
    const __m512i v8 = _mm512_set1_epi64(8), v16 = _mm512_set1_epi64(16), v64 = _mm512_set1_epi64(64);
    const __m512i ones = _mm512_set1_epi64(-1);
    const __m512i k0 = _mm512_set1_epi64((long long) SEED0), k1 = _mm512_set1_epi64((long long) SEED1);
    const __m512i k2 = _mm512_set1_epi64((long long) SEED2), slots = _mm512_set1_epi64((long long) w->slots);
    const __m512i tmask = _mm512_set1_epi64((uint32_t) ~w->imask), tbit = _mm512_set1_epi64(w->imask + 1);
    const __m512i high = _mm512_set1_epi64((long long) 0xFFFFFFE000000000ULL);
    for (i = lo; i < hi; i += 8) {
        const Py_ssize_t cnt = hi - i < 8 ? hi - i : 8;
        const __mmask8 km = (__mmask8) ((1u << cnt) - 1);
        __m512i l;
        if (cnt == 8) {
            const unsigned char *const at = (const unsigned char *) lens + i * LSIZE;
            l = LSIZE == 1   ? _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *) at))
                : LSIZE == 2 ? _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *) at))
                : LSIZE == 4 ? _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *) at))
                             : _mm512_loadu_si512(at);
        } else {                                   /* the block's last strings: no read past the lengths */
            uint64_t t[8] = {0};
            for (Py_ssize_t k = 0; k < cnt; k++) t[k] = item(lens, LSIZE, i + k);
            l = _mm512_loadu_si512(t);
        }
        const __m512i nb = _mm512_slli_epi64(_mm512_min_epu64(l, v8), 3);                  /* bits of each word */
        const __m512i na = _mm512_slli_epi64(_mm512_sub_epi64(_mm512_max_epu64(l, v8), v8), 3);     /* its own */
        const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi64(km, A + (i - lo)),
                                           _mm512_sllv_epi64(ones, _mm512_sub_epi64(v64, na)));
        const __m512i b = _mm512_and_si512(_mm512_maskz_loadu_epi64(km, B + (i - lo)),
                                           _mm512_sllv_epi64(ones, _mm512_sub_epi64(v64, nb)));
        const __m512i u = _mm512_ternarylogic_epi64(a, k0, l, 0x96), v = _mm512_xor_si512(b, k1);
        const __m512i h = _mm512_add_epi64(_mm512_mul_epu32(u, _mm512_srli_epi64(u, 32)),
                                           _mm512_mul_epu32(v, _mm512_srli_epi64(v, 32)));
        const __m512i f = _mm512_mullo_epi64(h, k2);
        const __m512i bucket = _mm512_and_si512(_mm512_slli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(f, 32), slots), 5),
                                                high);
        _mm512_mask_storeu_epi64(hb + (i - lo), km,
                                 _mm512_or_si512(_mm512_ternarylogic_epi64(bucket, f, tmask, 0xF8), tbit));
        const __mmask8 longer = _mm512_mask_cmpgt_epu64_mask(km, l, v16);
        for (unsigned m = longer; UNLIKELY(m); m &= m - 1) {
            const Py_ssize_t k = i + LOWEST(m);
            const uint64_t at = WIDE ? ((uint64_t *) offs)[k] : ((uint32_t *) offs)[k];
            hb[k - lo] = entry_of(hash_long(base8 + at + 8, item(lens, LSIZE, k)), w->slots, w->imask);
        }
    }
    fetch_first(w, hb, hi - lo);
}
#endif

/* string j asked of the table past its first bucket's quick look (bucket k, already
   counted in w->probes): its candidates compared, a free slot taken, or the next bucket.
   Returns 0 (j now in the table), or 1 at a duplicate (w->dup, w->of) or when the budget
   runs out (w->sort). */
static NOINLINE int ask_slow(Walk *w, Py_ssize_t j, uint32_t tag, uint64_t k) {
    const uint32_t imask = w->imask;
    for (;;) {
        uint32_t *const b = w->table + k * BUCKET;
        for (unsigned same = bucket_tags(b, tag, ~imask); same; same &= same - 1) {
            const uint32_t m = (b[LOWEST(same)] & imask) - 1;
            if (same_bytes(w, m, j)) {
                w->dup = j;
                w->of = m;
                return 1;
            }
        }
        const unsigned free_ = bucket_empty(b);
        if (free_) {                               /* slots fill from the left: the first free one */
            b[LOWEST(free_)] = tag | (uint32_t) (j + 1);
            return 0;
        }
        if (++k == w->slots) k = 0;
        if (++w->probes > w->allowed) {            /* the hash met an input it spreads badly: sort */
            w->sort = 1;
            return 1;
        }
    }
}

/* strings lo..hi-1, hashed in hb (AHEAD more entries after them, bucket 0), asked of
   the table in order, each bucket fetched AHEAD strings before: a tight loop for the
   usual string - no tag of its bucket agrees, a slot is free - and ask_slow for the rest.
   Returns 0, or 1 at the first duplicate or when the budget runs out. */
INLINE int ask_block(Walk *w, Py_ssize_t lo, Py_ssize_t hi, const uint64_t *hb, const int AVX) {
    uint32_t *const table = w->table;
    const uint64_t allowed = w->allowed;
    const uint32_t tmask = ~w->imask;
    uint64_t p = w->probes;
    hb -= lo;
    for (Py_ssize_t j = lo; j < hi; j++) {
        PREFETCH(AT(table, hb[j + AHEAD]));
        const uint64_t r = hb[j];
        const uint32_t tag = (uint32_t) r;
        uint32_t *const b = AT(table, r);
        if (UNLIKELY(++p > allowed)) {             /* the hash met an input it spreads badly: sort */
            w->sort = 1;
            return 1;
        }
        const unsigned same = AVX ? bucket_tags_avx2(b, tag, tmask) : bucket_tags(b, tag, tmask);
        const unsigned free_ = AVX ? bucket_empty_avx2(b) : bucket_empty(b);
        if (LIKELY(!same && free_)) {
            b[LOWEST(free_)] = tag | (uint32_t) (j + 1);
            continue;
        }
        w->probes = p;
        if (ask_slow(w, j, tag, r >> 37)) return 1;
        p = w->probes;
    }
    w->probes = p;
    return 0;
}

/* each in a function of its own: a small loop's values stay in registers (inlined into
   one walk, GCC kept the running offset and the 128-bit product on the stack) */
typedef void (*HashBlock)(const Walk *, uint64_t, Py_ssize_t, Py_ssize_t, uint64_t *);
#define HASH_BLOCK(LSIZE, WIDE)                                                                              \
    static NOINLINE void hash_block_##LSIZE##_##WIDE(const Walk *w, uint64_t pos, Py_ssize_t lo, Py_ssize_t hi, \
                                                     uint64_t *hb) {                                            \
        hash_block(w, pos, lo, hi, hb, LSIZE, WIDE);                                                         \
    }
HASH_BLOCK(1, 0) HASH_BLOCK(2, 0) HASH_BLOCK(4, 0) HASH_BLOCK(8, 0)
HASH_BLOCK(1, 1) HASH_BLOCK(2, 1) HASH_BLOCK(4, 1) HASH_BLOCK(8, 1)
#ifdef HAVE_HASH512
#define HASH_BLOCK_512(LSIZE, WIDE)                                                                           \
    T512 static NOINLINE void hash_block_512_##LSIZE##_##WIDE(const Walk *w, uint64_t pos, Py_ssize_t lo,      \
                                                              Py_ssize_t hi, uint64_t *hb) {                  \
        hash_block_512(w, pos, lo, hi, hb, LSIZE, WIDE);                                                      \
    }
HASH_BLOCK_512(1, 0) HASH_BLOCK_512(2, 0) HASH_BLOCK_512(4, 0) HASH_BLOCK_512(8, 0)
HASH_BLOCK_512(1, 1) HASH_BLOCK_512(2, 1) HASH_BLOCK_512(4, 1) HASH_BLOCK_512(8, 1)
#else
#define hash_block_512_1_0 hash_block_1_0
#define hash_block_512_2_0 hash_block_2_0
#define hash_block_512_4_0 hash_block_4_0
#define hash_block_512_8_0 hash_block_8_0
#define hash_block_512_1_1 hash_block_1_1
#define hash_block_512_2_1 hash_block_2_1
#define hash_block_512_4_1 hash_block_4_1
#define hash_block_512_8_1 hash_block_8_1
#endif
static const HashBlock HASH_BLOCKS[2][2][4] = {
    {{hash_block_1_0, hash_block_2_0, hash_block_4_0, hash_block_8_0},
     {hash_block_1_1, hash_block_2_1, hash_block_4_1, hash_block_8_1}},
    {{hash_block_512_1_0, hash_block_512_2_0, hash_block_512_4_0, hash_block_512_8_0},
     {hash_block_512_1_1, hash_block_512_2_1, hash_block_512_4_1, hash_block_512_8_1}}};
static NOINLINE int ask_block_sse(Walk *w, Py_ssize_t lo, Py_ssize_t hi, const uint64_t *hb) {
    return ask_block(w, lo, hi, hb, 0);
}
#ifdef HAVE_BUCKET_AVX2
__attribute__((target("avx2"), noinline)) static int ask_block_avx2(Walk *w, Py_ssize_t lo, Py_ssize_t hi,
                                                                   const uint64_t *hb) {
    return ask_block(w, lo, hi, hb, 1);
}
#endif

/* a contiguous array of 8-byte prefixes and no tail (GGUF's) in blocks of BLOCK strings:
   the block's bounds from its lengths' sum, then its hashes (hash_block), its UTF-8 runs
   (utf8_runs, on bytes just read) and its questions to the table (ask_block) - each a
   tight loop of its own.  A block not wholly inside is walked string by string to name
   the first outside. */
static void walk_blocks(Walk *w, int simd) {
    const unsigned char *src = w->src;
    const uint64_t size = w->size, first = w->first;
    const Py_ssize_t n = w->n, lsize = w->lsize;
    int (*ask)(Walk *, Py_ssize_t, Py_ssize_t, const uint64_t *) = ask_block_sse;
    int eight = 0;                                 /* eight strings hashed a step */
#ifdef HAVE_BUCKET_AVX2
    if (simd && __builtin_cpu_supports("avx2")) ask = ask_block_avx2;
#endif
#ifdef HAVE_HASH512
    eight = simd >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
    const HashBlock hash = HASH_BLOCKS[eight][w->wide][lsize == 1 ? 0 : lsize == 2 ? 1 : lsize == 4 ? 2 : 3];
    (void) simd;
    uint64_t *const hb = w->work;                  /* the block's entries */
    uint64_t pos = 0;                              /* string lo's prefix, past first */
    int hashing = w->table != NULL, ok = w->utf8;
    for (Py_ssize_t lo = 0, hi; lo < n; lo = hi) {
        hi = n - lo < BLOCK ? n : lo + BLOCK;
        const uint64_t at = first + pos, cnt = (uint64_t) (hi - lo), sum = lens_sum(w->lens, lsize, lo, hi);
        if (at > size || cnt > (size - at) / 8 || sum > size - at - 8 * cnt) {
            for (Py_ssize_t i = lo; i < hi; i++) {     /* one of them is outside (the sum is each one's): which? */
                const uint64_t s = first + pos, l = item(w->lens, lsize, i);
                if (s > size || 8 > size - s || l > size - s - 8) {
                    w->outside = i;
                    return;
                }
                pos += 8 + l;
            }
            continue;
        }
        if (hashing || w->sort) hash(w, pos, lo, hi, hb);       /* after the budget, the sort's offsets */
        if (ok) ok = utf8_runs(src, at, w->lens, lsize, lo, hi, 8);
        if (hashing && ask(w, lo, hi, hb)) hashing = 0;
        pos += 8 * cnt + sum;
    }
    w->ok = ok;
}

/* the block walk where scan gave it its buffers (GGUF's layout, a table to fill), else
   walk_strings */
static void walk_any(Walk *w, int simd) {
    if (w->work) {
        walk_blocks(w, simd);
        return;
    }
    walk_strings(w, simd);
}

#endif
