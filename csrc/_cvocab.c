/* ggscope.rules._cvocab: one pass over a string array's bytes for the vocabulary checks.

   Why: validate's loader rules ask whether two tokens have the same text (llama.cpp's
   vocabulary loader asserts id_to_token.size() == token_to_id.size()) and the values
   rules whether every string is UTF-8: in Python 57 % of validate's time on the 12 real
   vocabulary files (issue 27, item 3).  Here one walk over the file's bytes does both,
   with no per-token object, built for memory: each string's bounds, offset, UTF-8 run
   and hash in the same step (_utf8.h, _seedhash.h), the duplicates in a bucketed table
   fetched ahead (_dupfind.h).  ``gather`` copies the few thousand tokens a rule names
   (their offsets from ggscope.ksy.strings.StringArray.starts) in one call;
   ``gather_ids`` the same from their ids, finding their places in its own sum over the
   lengths (a vocabulary's special tokens: 2,400 of 102,400 in 0.03 ms, where the offsets
   through numpy took 0.3) - both in _gather.h.

   scan(buf, first, lens, lsize, rel, rsize, width, tail, dups, utf8[, budget, simd])
       -> (dup, of, bad): the layout is ggscope.ksy.strings.StringArray's (as in
   ggscope.report._cjson.join_json): ``lens`` holds n unsigned lengths of ``lsize`` bytes
   (1, 2, 4 or 8); string i's ``width``-byte prefix is at ``first + rel[i]`` (``rel``: n
   unsigned offsets of ``rsize`` bytes, 4 or 8) or, when ``rel`` is empty (rsize 0),
   right after element i-1's prefix, string and ``tail`` bytes (the first at ``first``),
   the prefix holding the string's length (either byte order: what the parser read);
   its bytes follow the prefix.
   - ``dup``, ``of``: with ``dups``, the smallest i whose bytes equal those of an earlier
     string and the index of that earlier string (its first occurrence), else -1, -1:
     what a loop filling a map from text to id in order meets first.  Bytes are compared,
     as std::string does in llama.cpp's token_to_id.
   - ``bad``: with ``utf8``, the indices of the strings that are not well-formed UTF-8
     (Python's strict codec: no overlong forms, no surrogates, nothing past U+10FFFF, no
     truncated sequence), as the bytes of int64 values in increasing order.
   - ``budget``: table buckets the duplicate search may visit in all before it turns to
     sorting (default -1: 16 per string; 0 sorts at once, n // 2 halfway - the tests'
     ways to hold every route to one answer); ``simd`` false compares a bucket's slots
     with SSE2 (or a loop) even where the CPU has AVX2 (the tests' way to the portable
     route).
   A string outside ``buf`` raises ValueError.

   UTF-8: runs of contiguous strings whose prefix and tail bytes between them are ASCII
   (a GGUF token array: 8-byte lengths below 128) are judged at once - an ASCII byte ends
   every sequence, so a run is valid exactly when each of its strings is; when a run
   fails, or in another layout, every string is judged alone.  A prefix is ASCII exactly
   when each byte of its length is below 0x80 (either byte order): no prefix is read.
   With no tail and no duplicate search (a merges array) the lengths' sum bounds the
   strings and the runs are found from the lengths alone: no byte is read but the runs'.
   Duplicates: each string's bucket fetched AHEAD strings early, its eight slots compared
   with the string's tag in one 32-byte step where the CPU has AVX2 (the walk compiled
   twice, chosen at run time), else two 16-byte steps; the bucket and the tag are taken
   from the hash when it is, so the step that asks the table does no arithmetic on it.  Bucket visits are
   counted: past ``budget`` - what no seed-blind input reaches - or with 2**24 strings or
   more, the strings are sorted by their bytes instead (n log n comparisons): no input
   costs quadratic time.
   Memory: 6 bytes per string for the table, 4 for each string's offset (8 when the
   buffer past ``first`` spans 4 GiB) where ``rel`` does not give it; the sort 4 per
   string; 8 per string when one is not UTF-8: every count followed is one the file's
   bytes back (each string costs at least its prefix), and the search stops at the first
   duplicate. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_dupfind.h"
#include "_gather.h"
#include "_seedhash.h"
#include "_strarray.h"
#include "_utf8.h"

/* --- the scan ------------------------------------------------------------------------------ */

#define AHEAD 8                                    /* strings hashed (and slots fetched) ahead */
#define BLOCK 1024                                 /* strings per block of the block walk */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch((p), 1)
#define INLINE static inline __attribute__((always_inline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#define PREFETCH(p) ((void) (p))
#define INLINE static inline
#endif

/* one array as scan reads it, and what its one walk leaves */
typedef struct {
    const unsigned char *src;
    uint64_t size, first, width, tail;
    const void *lens, *rel;
    Py_ssize_t lsize, rsize, n;
    /* the duplicate search: the table (NULL: none), each string's offset from first */
    uint32_t *table;
    uint64_t slots, allowed, probes;
    uint32_t imask;
    void *offs;
    int wide, sort;
    Py_ssize_t dup, of;
    /* UTF-8: judge the runs; ok while every run judged is well-formed */
    int utf8, ok;
    Py_ssize_t outside;                            /* the first string outside the buffer, else -1 */
} Walk;

/* each string, in order: inside the buffer?  its offset noted, its run of ASCII-separated
   strings judged when the run ends, its hash taken and its slot fetched AHEAD strings
   before the table is asked about it.  Inlined with LSIZE, RSIZE and W8 (width 8)
   constant for the GGUF layouts, with the walk's values for the others. */
INLINE void walk(Walk *w, const Py_ssize_t LSIZE, const Py_ssize_t RSIZE, const int W8, const int AVX) {
    const unsigned char *src = w->src;
    const uint64_t size = w->size, first = w->first, width = W8 ? 8 : w->width, tail = w->tail;
    const Py_ssize_t n = w->n;
    const int runs = w->utf8 && !RSIZE && width + tail > 0;
    uint32_t *const table = w->table;
    const uint64_t slots = w->slots;
    const uint32_t imask = w->imask;
    /* copies: a store through offs or the table may alias *w, a local cannot be */
    const void *const lens = w->lens, *const rel = w->rel;
    void *const offs = w->offs;
    const int wide = w->wide;
    const uint64_t allowed = w->allowed;
    uint64_t ring[2 * AHEAD], at = first, run = 0, run_end = 0, probes = 0;
    int hashing = table != NULL, ok = runs;
    for (Py_ssize_t i = 0; i < n + AHEAD; i++) {
        if (i < n) {
            const uint64_t s = RSIZE ? first + item(rel, RSIZE, i) : at, l = item(lens, LSIZE, i);
            if (s > size || width > size - s || l > size - s - width) {
                w->outside = i;
                break;
            }
            if (!RSIZE) {
                if (offs) {
                    if (wide) ((uint64_t *) offs)[i] = s - first;
                    else ((uint32_t *) offs)[i] = (uint32_t) (s - first);
                }
                if (runs && ok) {
                    int clean = !(l & 0x8080808080808080ULL);     /* the prefix: its length's bytes */
                    for (uint64_t k = 0; k < tail && i; k++) clean &= !(src[s - tail + k] & 0x80);
                    if (!i) run = s + width;
                    else if (!clean) {             /* close the run before string i */
                        ok = utf8_span(src + run, run_end - run);
                        run = s + width;
                    }
                    run_end = s + width + l;
                }
                at = s + width + l + tail;
            }
            if (hashing) {
                const uint64_t h = W8 ? hash_prefixed(src + s + 8, l) : hash_bytes(src + s + width, l);
                const uint64_t k = ((h >> 32) * slots) >> 32;
                ring[i % (2 * AHEAD)] = k << 32 | ((uint32_t) h & ~imask) | (imask + 1);   /* bucket, tag (never 0) */
                PREFETCH(table + k * BUCKET);
            }
        }
        const Py_ssize_t j = i - AHEAD;
        if (!hashing || j < 0) continue;
        const uint64_t r = ring[j % (2 * AHEAD)];
        const uint32_t tag = (uint32_t) r;
        for (uint64_t k = r >> 32;;) {
            if (++probes > allowed) {              /* the hash met an input it spreads badly: sort */
                w->sort = 1;
                hashing = 0;
                break;
            }
            uint32_t *const b = table + k * BUCKET;
            for (unsigned same = AVX ? bucket_tags_avx2(b, tag, ~imask) : bucket_tags(b, tag, ~imask); same;
                 same &= same - 1) {
                const uint32_t m = (b[LOWEST(same)] & imask) - 1;
                const uint64_t l = item(lens, LSIZE, j);
                if (item(lens, LSIZE, m) == l
                    && memcmp(src + first + item(RSIZE ? rel : offs, RSIZE ? RSIZE : wide ? 8 : 4, m) + width,
                              src + first + item(RSIZE ? rel : offs, RSIZE ? RSIZE : wide ? 8 : 4, j) + width,
                              (size_t) l) == 0) {
                    w->dup = j;
                    w->of = m;
                    hashing = 0;
                    break;
                }
            }
            if (!hashing) break;
            const unsigned free_ = AVX ? bucket_empty_avx2(b) : bucket_empty(b);
            if (free_) {                           /* slots fill from the left: the first free one */
                b[LOWEST(free_)] = tag | (uint32_t) (j + 1);
                break;
            }
            if (++k == slots) k = 0;
        }
    }
    if (runs && ok && n && w->outside < 0) ok = utf8_span(src + run, run_end - run);
    w->ok = ok;
    w->probes = probes;
}

/* the first index in i..n-1 whose length has a byte past 0x7F (either byte order: a
   prefix that is not ASCII), else n: 64 lengths at a time, one OR over each (vectorised) */
#define NEXT_BREAK(T, MASK)                                                          \
    {                                                                                \
        const T *l = lens;                                                           \
        while (i < n) {                                                              \
            if (n - i >= 64) {                                                       \
                T any = 0;                                                           \
                for (int k = 0; k < 64; k++) any |= l[i + k];                        \
                if (!(any & (MASK))) {                                               \
                    i += 64;                                                         \
                    continue;                                                        \
                }                                                                    \
            }                                                                        \
            if (l[i] & (MASK)) return i;                                             \
            i++;                                                                     \
        }                                                                            \
        return n;                                                                    \
    }
static Py_ssize_t next_break(const void *lens, Py_ssize_t lsize, Py_ssize_t i, Py_ssize_t n) {
    switch (lsize) {
        case 1: NEXT_BREAK(uint8_t, 0x80u)
        case 2: NEXT_BREAK(uint16_t, 0x8080u)
        case 4: NEXT_BREAK(uint32_t, 0x80808080u)
        default: NEXT_BREAK(uint64_t, 0x8080808080808080ULL)
    }
}

/* whether strings lo..hi-1 of a contiguous array of ``width``-byte prefixes and no tail,
   all inside the buffer, string lo's prefix at ``at``, are well-formed UTF-8: in runs
   split where a length has a byte past 0x7F (a prefix that is not ASCII), found from the
   lengths alone - each run from its first string's bytes to the next run's prefix, its
   end summed (vectorised).  An ASCII byte ends every sequence, so a run is valid exactly
   when each of its strings is. */
static int utf8_runs(const unsigned char *src, uint64_t at, const void *lens, Py_ssize_t lsize, Py_ssize_t lo,
                     Py_ssize_t hi, uint64_t width) {
    for (Py_ssize_t i = lo, j; i < hi; i = j) {
        j = next_break(lens, lsize, i + 1, hi);
        const uint64_t end = at + (uint64_t) (j - i) * width + lens_sum(lens, lsize, i, j);
        if (!utf8_span(src + at + width, end - at - width)) return 0;
        at = end;
    }
    return 1;
}

/* --- the block walk: GGUF's layout -------------------------------------------------------- */

/* whether strings m < j have the same bytes (the rare step: their tags agree) */
static __attribute__((noinline)) int same_bytes(const Walk *w, uint32_t m, Py_ssize_t j) {
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
   buffer, string lo's prefix at ``pos`` past first: each one's offset noted, its hash
   taken into hb (bucket << 32 | tag, never 0), the first AHEAD buckets fetched, hb's
   AHEAD entries after them bucket 0 */
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
/* hash_block with AVX-512F/DQ: a scalar loop notes each string's offset and reads the
   two words that end it, masked (the addresses hash_prefixed reads; a gather of them
   cost more than the loads), then hash_words and entry_of eight strings a step from
   those words; a string over 16 bytes (its words meaningless) hashed after, by hash_long */
T512 static inline void hash_block_512(const Walk *w, uint64_t pos, Py_ssize_t lo, Py_ssize_t hi, uint64_t *hb,
                                       const Py_ssize_t LSIZE, const int WIDE) {
    const unsigned char *const base8 = w->src + w->first;        /* + prefix + length: a string's last word */
    const void *const lens = w->lens;
    void *const offs = w->offs;
    uint64_t A[BLOCK], B[BLOCK];
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
static __attribute__((noinline)) int ask_slow(Walk *w, Py_ssize_t j, uint32_t tag, uint64_t k) {
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
#define HASH_BLOCK(LSIZE, WIDE)                                                                           \
    static __attribute__((noinline)) void hash_block_##LSIZE##_##WIDE(const Walk *w, uint64_t pos, Py_ssize_t lo, \
                                                                      Py_ssize_t hi, uint64_t *hb) {             \
        hash_block(w, pos, lo, hi, hb, LSIZE, WIDE);                                                      \
    }
HASH_BLOCK(1, 0) HASH_BLOCK(2, 0) HASH_BLOCK(4, 0) HASH_BLOCK(8, 0)
HASH_BLOCK(1, 1) HASH_BLOCK(2, 1) HASH_BLOCK(4, 1) HASH_BLOCK(8, 1)
#ifdef HAVE_HASH512
#define HASH_BLOCK_512(LSIZE, WIDE)                                                                               \
    T512 static __attribute__((noinline)) void hash_block_512_##LSIZE##_##WIDE(const Walk *w, uint64_t pos,       \
                                                                               Py_ssize_t lo, Py_ssize_t hi,      \
                                                                               uint64_t *hb) {                    \
        hash_block_512(w, pos, lo, hi, hb, LSIZE, WIDE);                                                          \
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
static __attribute__((noinline)) int ask_block_sse(Walk *w, Py_ssize_t lo, Py_ssize_t hi, const uint64_t *hb) {
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
    int wide = 0;                                  /* eight strings hashed a step */
#ifdef HAVE_BUCKET_AVX2
    if (simd && __builtin_cpu_supports("avx2")) ask = ask_block_avx2;
#endif
#ifdef HAVE_HASH512
    wide = simd >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
    const HashBlock hash = HASH_BLOCKS[wide][w->wide][lsize == 1 ? 0 : lsize == 2 ? 1 : lsize == 4 ? 2 : 3];
    (void) simd;
    uint64_t hb[BLOCK + AHEAD], pos = 0;           /* string lo's prefix, past first */
    int hashing = w->table != NULL, ok = w->utf8;
    for (Py_ssize_t lo = 0, hi; lo < n; lo = hi) {
        hi = n - lo < BLOCK ? n : lo + BLOCK;
        const uint64_t at = first + pos, cnt = (uint64_t) (hi - lo), sum = lens_sum(w->lens, lsize, lo, hi);
        if (at > size || cnt > (size - at) / 8 || sum > size - at - 8 * cnt) {
            for (Py_ssize_t i = lo; i < hi; i++) {     /* one of them is outside: which? */
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

/* the walk for the GGUF layouts (8-byte prefixes, contiguous) with constants, else generic;
   with AVX2 where the CPU has it (a bucket in one 32-byte compare) */
#define WALKS(AVX)                                                   \
    if (w->width == 8 && !w->rsize) {                                \
        switch (w->lsize) {                                          \
            case 1: walk(w, 1, 0, 1, AVX); return;                   \
            case 2: walk(w, 2, 0, 1, AVX); return;                   \
            case 4: walk(w, 4, 0, 1, AVX); return;                   \
            default: walk(w, 8, 0, 1, AVX); return;                  \
        }                                                            \
    }                                                                \
    walk(w, w->lsize, w->rsize, 0, AVX);

#ifdef HAVE_BUCKET_AVX2
__attribute__((target("avx2"))) static void walk_avx2(Walk *w) { WALKS(1) }
#endif

static void walk_any(Walk *w, int simd) {
    if (w->width == 8 && !w->rsize && !w->tail && w->table) {
        walk_blocks(w, simd);
        return;
    }
#ifdef HAVE_BUCKET_AVX2
    if (simd && __builtin_cpu_supports("avx2")) {
        walk_avx2(w);
        return;
    }
#endif
    (void) simd;
    WALKS(0)
}

/* --- memory kept between calls ------------------------------------------------------------ */

/* One scan's table and offsets, kept for the next scan (the next file of a folder, of a
   server): a new block of a few MB is new pages, each faulted in at first touch - 164
   faults, 0.3 of 1.4 ms, for 102,400 tokens on this machine's VM - where the kept one is
   only cleared.  At most KEEP bytes stay between calls; a larger need is allocated and
   freed per call.  Touched only with the GIL held (scan never releases it). */
#define KEEP ((size_t) 16 << 20)
static void *KEPT;
static size_t KEPT_SIZE;

/* size bytes, not cleared: the kept block when it is large enough, else a new one - kept
   in its place when size <= KEEP, else the caller's to free (*owned) */
static void *scratch(size_t size, int *owned) {
    *owned = 0;
    if (size <= KEPT_SIZE) return KEPT;
    void *p = malloc(size);
    if (p == NULL || size > KEEP) {
        *owned = p != NULL;
        return p;
    }
    free(KEPT);
    KEPT = p;
    KEPT_SIZE = size;
    return p;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, rl;
    Py_ssize_t first, lsize, rsize, width, tail, budget = -1;
    int dups, utf8, simd = 2;
    if (!PyArg_ParseTuple(args, "y*ny*ny*nnnpp|ni", &buf, &first, &ln, &lsize, &rl, &rsize, &width, &tail,
                          &dups, &utf8, &budget, &simd))
        return NULL;
    PyObject *res = NULL;
    int64_t *badv = NULL;
    void *mem = NULL;                              /* a block scratch did not keep */
    int owned = 0;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0;
    Walk w = {.src = buf.buf, .size = (uint64_t) buf.len, .first = (uint64_t) first, .width = (uint64_t) width,
              .tail = (uint64_t) tail, .lens = ln.buf, .rel = rl.buf, .lsize = lsize, .rsize = rsize, .n = n,
              .dup = -1, .of = -1, .utf8 = utf8 && n, .outside = -1};
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || width < 0 || tail < 0 || first < 0 || budget < -1 || simd < 0 || simd > 2) {
        PyErr_SetString(PyExc_ValueError, "scan(buf, first, lens, lsize, rel, rsize, width >= 0, tail >= 0, dups, "
                                          "utf8[, budget >= -1, simd 0..2])");
        goto done;
    }
    UTF8_LEVEL = simd;                             /* this call's (the GIL is held throughout) */
    dups = dups && n > 1;
    if (dups && (uint64_t) n >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "scan: 2**32 strings or more");
        goto done;
    }
    if (dups && !rsize)                            /* each string's offset from first */
        w.wide = (uint64_t) buf.len - (uint64_t) (first < buf.len ? first : buf.len) >= UINT32_MAX;
    const size_t offs_bytes = dups && !rsize ? (size_t) n * (w.wide ? 8 : 4) : 0;
    size_t table_bytes = 0;
    if (dups && budget != 0 && (uint64_t) n < (1u << 24) - 1) {
        /* slots: (index + 1) in the low ibits, the hash's tag above; 0 is empty */
        int ibits = 1;
        while (((uint64_t) 1 << ibits) <= (uint64_t) n) ibits++;
        w.imask = (uint32_t) (((uint64_t) 1 << ibits) - 1);
        w.slots = ((uint64_t) n + (uint64_t) n / 2) / BUCKET + 1;        /* buckets: at most 2/3 full */
        w.allowed = budget < 0 ? 16 * (uint64_t) n : (uint64_t) budget;
        table_bytes = (size_t) w.slots * BUCKET * sizeof(uint32_t);
    }
    if (offs_bytes || table_bytes) {               /* the table (32-byte aligned, cleared), then the offsets */
        char *base = scratch(table_bytes + offs_bytes + 32, &owned);
        if (base == NULL) goto nomem;
        if (owned) mem = base;
        char *at = (char *) (((uintptr_t) base + 31) & ~(uintptr_t) 31);          /* a bucket in one line */
        if (table_bytes) {
            w.table = memset(at, 0, table_bytes);
            at += table_bytes;
        }
        if (offs_bytes) w.offs = at;
    }
    if (dups && !table_bytes) w.sort = 1;          /* budget 0, or 2**24 strings: sort at once */
    const int alone = w.utf8 && !dups && !rsize && !tail && width;
    const uint64_t total = alone ? lens_sum(ln.buf, lsize, 0, n) : 0;     /* all strings' bytes; past 2**64: refused */
    if (alone && (uint64_t) first <= w.size && (uint64_t) n <= (w.size - (uint64_t) first) / (uint64_t) width
        && total <= w.size - (uint64_t) first - (uint64_t) n * (uint64_t) width) {
        /* UTF-8 alone of strings back to back, every one inside: the runs split where a
           length has a byte past 0x7F, found from the lengths alone - each run from its
           first string's bytes to the next run's prefix, its end summed (vectorised) */
        uint64_t at = (uint64_t) first;            /* the prefix of string i */
        w.ok = 1;
        for (Py_ssize_t i = 0, j; i < n && w.ok; i = j) {
            j = next_break(ln.buf, lsize, i + 1, n);
            const uint64_t end = at + (uint64_t) (j - i) * (uint64_t) width + lens_sum(ln.buf, lsize, i, j);
            w.ok = utf8_span(w.src + at + (uint64_t) width, end - at - (uint64_t) width);
            at = end;
        }
    } else {
        walk_any(&w, simd);
    }
    if (w.outside >= 0) {
        PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", w.outside);
        goto done;
    }
    if (w.sort) {
        w.dup = w.of = -1;
        if (first_dup_sorted(w.src, w.first, ln.buf, lsize, rsize ? rl.buf : w.offs, rsize ? rsize : w.wide ? 8 : 4,
                             w.width, n, &w.dup, &w.of))
            goto nomem;
    }
    Py_ssize_t nbad = 0;
    if (w.utf8 && !w.ok) {                         /* string by string */
        if ((badv = malloc(sizeof(int64_t) * (size_t) n)) == NULL) goto nomem;
        uint64_t at = w.first;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t s = rsize ? w.first + item(rl.buf, rsize, i) : at, l = item(ln.buf, lsize, i);
            at = s + w.width + l + w.tail;
            if (!utf8_ok(w.src + s + w.width, l)) badv[nbad++] = i;
        }
    }
    PyObject *bad = PyBytes_FromStringAndSize((const char *) badv, (Py_ssize_t) (nbad * (Py_ssize_t) sizeof(int64_t)));
    if (bad != NULL) res = Py_BuildValue("nnN", w.dup, w.of, bad);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(mem);
    free(badv);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    return res;
}

static PyMethodDef METHODS[] = {
    {"gather", gather, METH_VARARGS, "Strings at given offsets, joined by newlines."},
    {"gather_ids", gather_ids, METH_VARARGS, "Strings of a contiguous array by ascending ids, joined by newlines."},
    {"scan", scan, METH_VARARGS, "The first duplicate string and the strings that are not UTF-8."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cvocab",
                                    "Vocabulary checks over a string array's bytes, compiled at install time.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cvocab(void) {
    hash_seed();
    return PyModule_Create(&MODULE);
}
