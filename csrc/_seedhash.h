/* A seeded 64-bit hash of a byte string for ggscope's compiled duplicate search.

   Why: csrc/_cvocab.c hashes every token of a vocabulary; SipHash (CPython's) cost
   more than the table it fed.  A string of at most 16 bytes (nearly every token) is
   hashed from the two 8-byte words that end it, masked to its own bytes: NH's step on
   each (UMAC's: the product of its keyed 32-bit halves), their sum times an odd key
   (hash_words) - 32-bit products and one 64-bit one, so the same function runs eight
   lanes at a time in AVX-512 (_cvocab_blocks.h).  A longer one is a multiply-mix of
   wyhash's shape, 16 bytes a step, each folded with a seed by a 128-bit product.  The
   keys are per process (``hash_seed`` at module init, from CPython's own hash secret,
   the module's address and the clock), so an input cannot be aimed at a table it has
   not seen.  The table's user still bounds its probes (see _cvocab.c): the hash makes
   collisions rare, not impossible.

   hash_bytes(p, l) reads exactly l bytes at p.  hash_prefixed(p, l), for a string with 8
   readable bytes before it, may read those too: a different function of the same string
   (a table uses one of the two for all its strings). */
#ifndef GGSCOPE_SEEDHASH_H
#define GGSCOPE_SEEDHASH_H
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static uint64_t SEED0, SEED1, SEED2;               /* per process (module init); SEED2 odd */

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
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t lo, hi;                               /* as asm: GCC spilled the __int128 to the stack */
    __asm__("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
    return lo ^ hi;
#elif defined(__SIZEOF_INT128__)
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

/* per length 0..16 of a short string: of the two 8-byte words that end it, the masks
   keeping its own bytes (the earlier word read ``back`` bytes further back: 8, or 0 - the
   same word, all masked off - for 8 bytes or fewer); hash_seed sets them */
static struct {
    uint64_t lo, hi, back;
} SHORT[17];

/* the hash of a string of l <= 16 bytes from the two words that end it, masked to its
   own bytes (a the earlier, 0 for 8 bytes or fewer; b the last): each word, keyed, is
   the product of its two 32-bit halves (NH's step, as in UMAC), their sum spread by an
   odd key (multiply-shift: the table takes the top bits).  Only 32-bit products and one
   64-bit one: the same function in eight lanes of AVX-512 (_hashblock.h). */
static inline uint64_t hash_words(uint64_t a, uint64_t b, uint64_t l) {
    const uint64_t u = a ^ SEED0 ^ l, v = b ^ SEED1;
    return ((u & 0xFFFFFFFFu) * (u >> 32) + (v & 0xFFFFFFFFu) * (v >> 32)) * SEED2;
}

/* longer strings apart: the short strings' loops keep their registers */
static
#if defined(__GNUC__)
__attribute__((noinline))
#endif
uint64_t hash_long(const unsigned char *p, uint64_t l) { return hash_bytes(p, l); }

/* a seeded hash of the l bytes at p, which has at least 8 readable bytes before it (a
   GGUF string after its 8-byte length): a string of at most 16 bytes from two loads
   with no branch on its length - the two words that end it, masked to its own bytes
   (hash_words); longer ones as hash_bytes.  Each length takes one path, so equal strings
   hash alike. */
static inline uint64_t hash_prefixed(const unsigned char *p, uint64_t l) {
    if (l > 16) return hash_long(p, l);
    const unsigned char *const e = p + l;
    return hash_words(r8(e - 8 - SHORT[l].back) & SHORT[l].lo, r8(e - 8) & SHORT[l].hi, l);
}

/* the seeds: Python's per-process hash secret (SipHash of a constant), mixed with this
   module's address and the clock */
static void hash_seed(void) {
    const uint64_t a = (uint64_t) _Py_HashBytes("ggscope._cvocab seed 0", 22);
    const uint64_t b = (uint64_t) _Py_HashBytes("ggscope._cvocab seed 1", 22);
    const uint64_t c = (uint64_t) (uintptr_t) &SEED0 ^ (uint64_t) time(NULL) * 0xD6E8FEB86659FD93ULL;
    SEED0 = mum(a ^ 0xA0761D6478BD642FULL, c ^ 0xE7037ED1A0B428DBULL) | 1;
    SEED1 = mum(b ^ 0x8EBC6AF09C88C6E3ULL, c ^ 0x589965CC75374CC3ULL) | 1;
    SEED2 = mum(a ^ 0x1D8E4E27C47D124FULL, b ^ c ^ 0x9E3779B97F4A7C15ULL) | 1;
    for (unsigned l = 0; l <= 16; l++) {           /* a word's last k bytes, in this machine's order */
        unsigned char lo[8] = {0}, hi[8] = {0};
        memset(hi + 8 - (l < 8 ? l : 8), 0xFF, l < 8 ? l : 8);
        memset(lo + 8 - (l > 8 ? l - 8 : 0), 0xFF, l > 8 ? l - 8 : 0);
        SHORT[l].lo = r8(lo), SHORT[l].hi = r8(hi), SHORT[l].back = l > 8 ? 8 : 0;
    }
}

#endif
