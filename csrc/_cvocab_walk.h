/* The compiled scan's walk over a string array one string at a time, for any layout
   ggscope's parser builds (csrc/_cvocab.c's scan).

   Why apart: _cvocab.c parses the call and owns the memory; how the strings are walked
   is its own contract, and GGUF's layout has a faster walk of its own (_cvocab_blocks.h)
   that shares this one's state and UTF-8 runs.

   Walk: one array as scan reads it, and what a walk leaves (the first string outside the
   buffer, the first duplicate, whether the table gave up for the sort, whether every
   UTF-8 run judged was well-formed).  walk_strings(w, simd): each string in order -
   bounds, offset, UTF-8 run, hash - its bucket fetched AHEAD strings before the table is
   asked (see _cvocab.c for the whole contract).  utf8_runs(...): strings back to back,
   all inside, judged in runs split where a length has a byte past 0x7F. */
#ifndef GGSCOPE_CVOCAB_WALK_H
#define GGSCOPE_CVOCAB_WALK_H
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_dupfind.h"
#include "_gather.h"
#include "_seedhash.h"
#include "_strarray.h"
#include "_utf8.h"

#define AHEAD 8                                    /* strings hashed (and slots fetched) ahead */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch((p), 1)
#define INLINE static inline __attribute__((always_inline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
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
    uint64_t *work;                                /* GGUF's block walk's buffers (NULL: walk_strings) */
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

/* walk with constants for the GGUF layouts (8-byte prefixes, contiguous), else generic;
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

static void walk_strings(Walk *w, int simd) {
#ifdef HAVE_BUCKET_AVX2
    if (simd && __builtin_cpu_supports("avx2")) {
        walk_avx2(w);
        return;
    }
#endif
    (void) simd;
    WALKS(0)
}

#endif
