/* ggscope.rules._cvocab: one pass over a string array's bytes for the vocabulary checks.

   Why: validate's loader rules ask whether two tokens have the same text (llama.cpp's
   vocabulary loader asserts id_to_token.size() == token_to_id.size()) and the values
   rules whether every string is UTF-8.  In Python both decoded every token into a str
   and hashed it: on the 12 real vocabulary files 57 % of validate's time (issue 27,
   item 3).  Here one walk over the file's bytes does both, with no per-token object; and
   since that walk was still most of what validate adds to ``info`` on a vocabulary
   file, each half is built for memory: the UTF-8 verdict of a contiguous array is one
   vectorised pass over its whole span, the duplicate search a compact table whose slots
   are fetched ahead.

   Also ``starts`` (the offsets of the strings at sorted indices, one walk over the
   lengths) and ``gather`` (those strings joined by newlines): the texts a rule reads of a
   few thousand tokens without an int64 offset per token of the vocabulary.

   scan(buf, first, lens, lsize, rel, rsize, width, tail, dups, utf8[, budget])
       -> (dup, of, bad): the layout is ggscope.ksy.strings.StringArray's (as in
   ggscope.report._cjson.join_json): ``lens`` holds n unsigned lengths of ``lsize`` bytes
   (1, 2, 4 or 8); string i's ``width``-byte prefix is at ``first + rel[i]`` (``rel``: n
   unsigned offsets of ``rsize`` bytes, 4 or 8) or, when ``rel`` is empty (rsize 0),
   right after element i-1's prefix, string and ``tail`` bytes (the first at ``first``);
   its bytes follow the prefix.
   - ``dup``, ``of``: with ``dups``, the smallest i whose bytes equal those of an earlier
     string and the index of that earlier string (its first occurrence), else -1, -1:
     what a loop filling a map from text to id in order meets first.  Bytes are compared,
     as std::string does in llama.cpp's token_to_id.
   - ``bad``: with ``utf8``, the indices of the strings that are not well-formed UTF-8
     (Python's strict codec: no overlong forms, no surrogates, nothing past U+10FFFF, no
     truncated sequence), as the bytes of int64 values in increasing order.
   - ``budget``: table probes allowed per string before the duplicate search turns to
     sorting (default 16; 0 sorts at once - the tests' way to hold both routes to one
     answer).
   A string outside ``buf`` raises ValueError.

   UTF-8: when the strings are contiguous and every prefix and tail byte is ASCII (a GGUF
   token array: 8-byte lengths below 128), each string is valid exactly when the whole
   span is - an ASCII byte ends every sequence, so none crosses from one string into the
   next - and the span is checked at once (Keiser and Lemire's lookup algorithm, "Validating
   UTF-8 in less than one instruction per byte", 2021, with AVX2 where the CPU has it, else
   byte by byte).  Only a span that fails, or another layout, is judged string by string.

   Duplicates: a 64-bit hash of each string (a multiply-mix seeded per process, so a
   crafted vocabulary cannot aim at the table), an open-addressed table of 4-byte slots
   (index and tag) at most 2/3 full, each slot fetched a few strings ahead.  The probes are
   counted: past ``budget`` per string - what no seed-blind input reaches - or with 2**24
   strings or more, the strings are sorted by their bytes instead (n log n comparisons),
   so no input costs quadratic time.
   Memory: 6 bytes per string for the table, 4 for each string's offset (8 when the
   strings span 4 GiB) where ``rel`` does not give it; the sort 4 per string; 8 per string
   that is not UTF-8: every count followed is one the file's bytes back (each string costs
   at least its prefix), and the search stops at the first duplicate. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_strarray.h"

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
#endif

/* whether the n bytes at p are well-formed UTF-8, the fastest way this CPU has */
static int utf8_span(const unsigned char *p, uint64_t n) {
#ifdef HAVE_AVX2
    if (__builtin_cpu_supports("avx2")) return utf8_span_avx2(p, n);
#endif
    return utf8_ok(p, n);
}

/* --- the hash ---------------------------------------------------------------------------- */

static uint64_t SEED0, SEED1;                      /* per process (module init) */

static inline uint64_t r8(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t r4(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* the 128-bit product of a and b, folded to 64 bits */
static inline uint64_t mum(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    const unsigned __int128 r = (unsigned __int128) a * b;
    return (uint64_t) r ^ (uint64_t) (r >> 64);
#else
    const uint64_t ha = a >> 32, la = (uint32_t) a, hb = b >> 32, lb = (uint32_t) b;
    const uint64_t rh = ha * hb, rm0 = ha * lb, rm1 = hb * la, rl = la * lb, t = rl + (rm0 << 32);
    uint64_t lo = t + (rm1 << 32), hi = rh + (rm0 >> 32) + (rm1 >> 32) + (t < rl) + (lo < t);
    return lo ^ hi;
#endif
}

/* a 64-bit hash of l bytes (the shape of wyhash's: two words of a short string, 16
   bytes a step of a longer one, each mixed with the seed by a 128-bit product) */
static inline uint64_t hash_bytes(const unsigned char *p, uint64_t l) {
    uint64_t seed = SEED0 ^ (l * 0x9E3779B97F4A7C15ULL), a, b;
    if (l <= 16) {
        if (l >= 4) {
            const uint64_t q = (l >> 3) << 2;
            a = (r4(p) << 32) | r4(p + q);
            b = (r4(p + l - 4) << 32) | r4(p + l - 4 - q);
        } else if (l > 0) {
            a = ((uint64_t) p[0] << 16) | ((uint64_t) p[l >> 1] << 8) | p[l - 1];
            b = 0;
        } else {
            a = b = 0;
        }
    } else {
        uint64_t i = l;
        while (i > 16) {
            seed = mum(r8(p) ^ SEED1, r8(p + 8) ^ seed);
            p += 16;
            i -= 16;
        }
        a = r8(p + i - 16);
        b = r8(p + i - 8);
    }
    return mum(SEED1 ^ l, mum(a ^ SEED1, b ^ seed));
}

/* --- the sort (past the probe budget, or 2**24 strings) ----------------------------------- */

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
   the run whose second index is smallest.  Returns 0, or -1 when out of memory. */
static int first_dup_sorted(const unsigned char *src, uint64_t first, const void *lens, Py_ssize_t lsize,
                            const void *offs, Py_ssize_t osize, uint64_t width, Py_ssize_t n, Py_ssize_t *dup,
                            Py_ssize_t *of) {
    uint32_t *order = malloc(sizeof(uint32_t) * (size_t) n);
    if (order == NULL) return -1;
    for (Py_ssize_t i = 0; i < n; i++) order[i] = (uint32_t) i;
    S.src = src, S.lens = lens, S.offs = offs, S.lsize = lsize, S.osize = osize, S.first = first, S.width = width;
    qsort(order, (size_t) n, sizeof(uint32_t), by_bytes);
    *dup = *of = -1;
    for (Py_ssize_t k = 1; k < n; k++) {
        const uint32_t i = order[k - 1], j = order[k];
        const uint64_t l = item(lens, lsize, i);
        if (item(lens, lsize, j) != l || memcmp(src + first + item(offs, osize, i) + width,
                                                 src + first + item(offs, osize, j) + width, (size_t) l))
            continue;
        Py_ssize_t head = k - 1;                   /* k starts or continues a run: find its head */
        while (head > 0) {
            const uint32_t h = order[head - 1];
            if (item(lens, lsize, h) != l || memcmp(src + first + item(offs, osize, h) + width,
                                                     src + first + item(offs, osize, i) + width, (size_t) l))
                break;
            head--;
        }
        if (head == k - 1 && (*dup < 0 || (Py_ssize_t) j < *dup)) {     /* the run's second */
            *dup = j;
            *of = order[head];
        }
    }
    free(order);
    return 0;
}

/* --- the scan ------------------------------------------------------------------------------ */

#define AHEAD 8                                    /* strings hashed (and slots fetched) ahead */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch((p), 1)
#else
#define PREFETCH(p) ((void) (p))
#endif

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf, ln, rl;
    Py_ssize_t first, lsize, rsize, width, tail, budget = 16;
    int dups, utf8;
    if (!PyArg_ParseTuple(args, "y*ny*ny*nnnpp|n", &buf, &first, &ln, &lsize, &rl, &rsize, &width, &tail,
                          &dups, &utf8, &budget))
        return NULL;
    PyObject *res = NULL;
    uint32_t *table = NULL;
    void *offs = NULL;
    int64_t *badv = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0;
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || width < 0 || tail < 0 || first < 0 || budget < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "scan(buf, first, lens, lsize, rel, rsize, width >= 0, tail >= 0, dups, utf8[, budget >= 0])");
        goto done;
    }
    const unsigned char *src = buf.buf;
    const uint64_t size = (uint64_t) buf.len;
    /* every string inside the buffer; how far the last one lies from the first */
    uint64_t span = 0;
    {
        uint64_t p = (uint64_t) first;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : p, l = item(ln.buf, lsize, i);
            if (s > size || (uint64_t) width > size - s || l > size - s - (uint64_t) width) {
                PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", i);
                goto done;
            }
            if (s - (uint64_t) first > span) span = s - (uint64_t) first;
            p = s + (uint64_t) width + l + (uint64_t) tail;
        }
    }
    Py_ssize_t nbad = 0, dup = -1, of = -1;
    /* UTF-8: runs of strings at once - each run from a string's first byte to a later
       string's last, with only ASCII prefix and tail bytes between them - and string by
       string only when a run fails */
    if (utf8 && n) {
        int ok = 1;
        if (rsize || width + tail == 0) {
            ok = 0;
        } else {
            uint64_t at = (uint64_t) first, run = 0, run_end = 0;
            int open = 0, tail_clean = 1;
            for (Py_ssize_t i = 0; i < n && ok; i++) {
                const uint64_t s = at, l = item(ln.buf, lsize, i);
                int clean = tail_clean;
                if (width == 8) {
                    clean = clean && !(r8(src + s) & 0x8080808080808080ULL);
                } else {
                    for (Py_ssize_t k = 0; k < width; k++) clean = clean && !(src[s + k] & 0x80);
                }
                if (open && !clean) {                          /* close the run before string i */
                    ok = utf8_span(src + run, run_end - run);
                    open = 0;
                }
                if (!open) {
                    run = s + (uint64_t) width;
                    open = 1;
                }
                run_end = s + (uint64_t) width + l;
                at = run_end + (uint64_t) tail;
                tail_clean = 1;
                if ((uint64_t) tail > size - run_end) {
                    tail_clean = 0;                            /* past the buffer: not read */
                } else {
                    for (Py_ssize_t k = 0; k < tail; k++) tail_clean = tail_clean && !(src[run_end + k] & 0x80);
                }
            }
            if (ok && open) ok = utf8_span(src + run, run_end - run);
        }
        if (!ok) {
            badv = malloc(sizeof(int64_t) * (size_t) n);
            if (badv == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            uint64_t at = (uint64_t) first;
            for (Py_ssize_t i = 0; i < n; i++) {
                const uint64_t s = rsize ? (uint64_t) first + item(rl.buf, rsize, i) : at;
                const uint64_t l = item(ln.buf, lsize, i);
                at = s + (uint64_t) width + l + (uint64_t) tail;
                if (!utf8_ok(src + s + width, l)) badv[nbad++] = i;
            }
        }
    }
    if (dups && n > 1) {
        if ((uint64_t) n >= UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "scan: 2**32 strings or more");
            goto done;
        }
        /* each string's offset from first: rel's, or computed here for a contiguous array */
        const int wide = rsize ? rsize == 8 : span >= UINT32_MAX;
        const void *where = rsize ? rl.buf : NULL;
        const Py_ssize_t osize = rsize ? rsize : wide ? 8 : 4;
        if (!rsize) {
            offs = malloc((size_t) n * (wide ? 8 : 4));
            if (offs == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            where = offs;
        }
        int sorted_after = 0;
        const int by_table = budget > 0 && (uint64_t) n < (1u << 24) - 1;
        if (by_table) {
            /* slots: (index + 1) in the low ibits, the hash's tag above; 0 is empty */
            int ibits = 1;
            while (((uint64_t) 1 << ibits) <= (uint64_t) n) ibits++;
            const uint32_t imask = (uint32_t) (((uint64_t) 1 << ibits) - 1);
            const uint64_t slots = (uint64_t) n + (uint64_t) n / 2 + 1;
            table = calloc((size_t) slots, sizeof(uint32_t));
            if (table == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            uint64_t ring[AHEAD], probes = 0;
            const uint64_t allowed = (uint64_t) budget * (uint64_t) n;
            uint64_t at = (uint64_t) first;
            Py_ssize_t hashed = 0;
            /* hash string k (in order), note its offset, fetch its slot */
#define HASH_NEXT()                                                                                          \
            do {                                                                                             \
                const uint64_t s_ = rsize ? (uint64_t) first + item(rl.buf, rsize, hashed) : at;             \
                const uint64_t l_ = item(ln.buf, lsize, hashed);                                             \
                if (!rsize) {                                                                                \
                    if (wide) ((uint64_t *) offs)[hashed] = s_ - (uint64_t) first;                           \
                    else ((uint32_t *) offs)[hashed] = (uint32_t) (s_ - (uint64_t) first);                   \
                    at = s_ + (uint64_t) width + l_ + (uint64_t) tail;                                       \
                }                                                                                            \
                const uint64_t h_ = hash_bytes(src + s_ + width, l_);                                        \
                ring[hashed % AHEAD] = h_;                                                                   \
                PREFETCH(table + (((h_ >> 32) * slots) >> 32));                                              \
                hashed++;                                                                                    \
            } while (0)
            while (hashed < n && hashed < AHEAD) HASH_NEXT();
            for (Py_ssize_t i = 0; i < n; i++) {
                const uint64_t h = ring[i % AHEAD];
                if (hashed < n) HASH_NEXT();
                const uint32_t tag = (uint32_t) h & ~imask;
                const uint64_t l = item(ln.buf, lsize, i);
                const unsigned char *p = src + first + item(where, osize, i) + width;
                uint64_t k = ((h >> 32) * slots) >> 32;
                for (;;) {
                    const uint32_t v = table[k];
                    if (v == 0) {
                        table[k] = tag | (uint32_t) (i + 1);
                        break;
                    }
                    if (++probes > allowed) break;
                    if ((v & ~imask) == tag) {
                        const uint32_t j = (v & imask) - 1;
                        if (item(ln.buf, lsize, j) == l
                            && memcmp(src + first + item(where, osize, j) + width, p, (size_t) l) == 0) {
                            dup = i;
                            of = j;
                            break;
                        }
                    }
                    if (++k == slots) k = 0;
                }
                if (dup >= 0 || probes > allowed) break;
            }
#undef HASH_NEXT
            if (probes > allowed) {                /* the hash met an input it spreads badly: sort */
                sorted_after = 1;
                dup = of = -1;
                for (; hashed < n && !rsize; hashed++) {
                    const uint64_t l = item(ln.buf, lsize, hashed);
                    if (wide) ((uint64_t *) offs)[hashed] = at - (uint64_t) first;
                    else ((uint32_t *) offs)[hashed] = (uint32_t) (at - (uint64_t) first);
                    at += (uint64_t) width + l + (uint64_t) tail;
                }
            }
        } else if (!rsize) {
            uint64_t at = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (wide) ((uint64_t *) offs)[i] = at;
                else ((uint32_t *) offs)[i] = (uint32_t) at;
                at += (uint64_t) width + item(ln.buf, lsize, i) + (uint64_t) tail;
            }
        }
        if (!by_table || sorted_after) {
            if (first_dup_sorted(src, (uint64_t) first, ln.buf, lsize, where, osize, (uint64_t) width, n, &dup,
                                 &of)) {
                PyErr_NoMemory();
                goto done;
            }
        }
    }
    PyObject *bad = PyBytes_FromStringAndSize((const char *) badv, (Py_ssize_t) (nbad * (Py_ssize_t) sizeof(int64_t)));
    if (bad != NULL) res = Py_BuildValue("nnN", dup, of, bad);
done:
    free(table);
    free(offs);
    free(badv);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    return res;
}

/* starts(first, lens, lsize, rel, rsize, width, tail, ids) -> bytes: the absolute offset
   of the prefix of each string ``ids`` names (int64, nondecreasing, each below n), as
   int64 bytes - one walk over the lengths up to the last id, no array of every offset.
   Reads no string byte. */
static PyObject *starts(PyObject *self, PyObject *args) {
    Py_buffer ln, rl, ids;
    Py_ssize_t first, lsize, rsize, width, tail;
    if (!PyArg_ParseTuple(args, "ny*ny*nnny*", &first, &ln, &lsize, &rl, &rsize, &width, &tail, &ids)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t n = good_size(lsize) ? ln.len / lsize : 0, k = ids.len / 8;
    if (!good_size(lsize) || ln.len % lsize || (rsize && (!good_size(rsize) || rl.len != n * rsize))
        || (!rsize && rl.len) || ids.len % 8 || width < 0 || tail < 0 || first < 0) {
        PyErr_SetString(PyExc_ValueError, "starts(first, lens, lsize, rel, rsize, width >= 0, tail >= 0, ids)");
        goto done;
    }
    res = PyBytes_FromStringAndSize(NULL, k * 8);
    if (res == NULL) goto done;
    int64_t *out = (int64_t *) PyBytes_AS_STRING(res);
    const int64_t *want = ids.buf;
    uint64_t at = (uint64_t) first;
    Py_ssize_t i = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        if (want[j] < 0 || want[j] >= n || (j && want[j] < want[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "starts: ids must be nondecreasing indices of the array");
            Py_CLEAR(res);
            goto done;
        }
        if (rsize) {
            out[j] = (int64_t) ((uint64_t) first + item(rl.buf, rsize, want[j]));
            continue;
        }
        for (; i < want[j]; i++) at += (uint64_t) width + item(ln.buf, lsize, i) + (uint64_t) tail;
        out[j] = (int64_t) at;
    }
done:
    PyBuffer_Release(&ln);
    PyBuffer_Release(&rl);
    PyBuffer_Release(&ids);
    return res;
}

/* gather(buf, starts, lens, width) -> bytes: the strings whose prefixes are at ``starts``
   (int64) with ``lens`` (int64) bytes after a ``width``-byte prefix, each followed by a
   newline but the last.  A string outside ``buf`` raises ValueError. */
static PyObject *gather(PyObject *self, PyObject *args) {
    Py_buffer buf, st, ln;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &buf, &st, &ln, &width)) return NULL;
    PyObject *res = NULL;
    const Py_ssize_t k = st.len / 8;
    const int64_t *s = st.buf, *l = ln.buf;
    uint64_t total = 0;
    if (st.len % 8 || ln.len != st.len || width < 0) {
        PyErr_SetString(PyExc_ValueError, "gather(buf, starts, lens, width >= 0): one int64 length per start");
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        if (s[j] < 0 || l[j] < 0 || (uint64_t) s[j] > (uint64_t) buf.len
            || (uint64_t) width + (uint64_t) l[j] > (uint64_t) buf.len - (uint64_t) s[j]) {
            PyErr_Format(PyExc_ValueError, "string %zd lies outside the buffer", j);
            goto done;
        }
        total += (uint64_t) l[j] + (j > 0);
    }
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t) total);
    if (res == NULL) goto done;
    char *out = PyBytes_AS_STRING(res);
    for (Py_ssize_t j = 0; j < k; j++) {
        if (j) *out++ = '\n';
        memcpy(out, (const char *) buf.buf + s[j] + width, (size_t) l[j]);
        out += l[j];
    }
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&st);
    PyBuffer_Release(&ln);
    return res;
}

static PyMethodDef METHODS[] = {
    {"gather", gather, METH_VARARGS, "Strings at given offsets, joined by newlines."},
    {"scan", scan, METH_VARARGS, "The first duplicate string and the strings that are not UTF-8."},
    {"starts", starts, METH_VARARGS, "The offsets of the prefixes of the strings at sorted indices."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope._cvocab",
                                    "Vocabulary checks over a string array's bytes, compiled at install time.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cvocab(void) {
    /* the hash's seeds: Python's own per-process hash secret (SipHash of a constant),
       mixed with this module's address and the clock */
    const uint64_t a = (uint64_t) _Py_HashBytes("ggscope._cvocab seed 0", 22);
    const uint64_t b = (uint64_t) _Py_HashBytes("ggscope._cvocab seed 1", 22);
    const uint64_t c = (uint64_t) (uintptr_t) &SEED0 ^ (uint64_t) time(NULL) * 0xD6E8FEB86659FD93ULL;
    SEED0 = mum(a ^ 0xA0761D6478BD642FULL, c ^ 0xE7037ED1A0B428DBULL) | 1;
    SEED1 = mum(b ^ 0x8EBC6AF09C88C6E3ULL, c ^ 0x589965CC75374CC3ULL) | 1;
    return PyModule_Create(&MODULE);
}
