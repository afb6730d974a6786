/* Counting 16-bit codes through byte counters: count_codes' one-lane route for F16/BF16/I16.

   Why: counting a code is a load and a store to its counter, and a core retires about one
   such store per cycle when the counter is in L1; a weight tensor's F16 codes spread over
   some 20,000 distinct values, whose int32 counters (about 90 KiB) do not fit a 32-48 KiB
   L1, so every miss went to L2 (measured on the 32 Mi-element F16 tensor of
   benchmarks/stats_vs_ggml.py: 0.34 ns per code, against 0.29 with a table that fits L1).
   Byte counters of the same codes take a quarter of the room and stay in L1: the codes
   are counted in blocks into a 64 KiB table of uint8, which is then added to the
   caller's wide counters and cleared in one pass that skips the 64-byte lines no code
   touched, compiled per instruction set (TARGETS: AVX-512 widens 64 bytes at once).
   That flush costs about 6 us (the touched wide counters come from L2): 8 % of a block
   of 2^18 codes.  So a block is as long as the data allows -- sized after each block so
   that its largest counter would reach about COUNT8_AIM, at most COUNT8_MAX codes -- and a
   call starts with the length the last call over spread codes ended with (count_codes
   keeps it), instead of looking at its data in a small first block again: the one-pass
   statistics count a tensor one read window at a time, many calls in a row over the
   same kind of data.  Through count_codes, one thread, on that tensor: 0.301 ns per code
   in calls of 4 Mi codes and 0.326 in calls of 256 Ki, against 0.316 and 0.356 with
   fixed blocks of 2^18 after a first of 2^16 in every call (about 1.1 cycles: one
   counter's load, add and store per cycle is this loop's floor here -- counting two
   interleaved halves, two byte tables, codes loaded as 64-bit words or no prefetch
   measured the same or slower, and a carry tested per code instead of the wrap check
   below 13 % slower).

   A tensor of few distinct values (BF16's 128 values per octave: a code of a normal
   tensor occurs some 200 times in 65,536) gains nothing -- its wide counters fit L1 already
   -- and its bytes would wrap: unknown data starts with a small block, and once a block's
   largest count, scaled to COUNT8_BLOCK codes, passes COUNT8_TOP the rest of the call
   counts straight (and the next call looks again).

   Exactness: a byte counter keeps its count modulo 256, so the flush also sums the bytes;
   the block's codes are `len` in all, and the sum equals `len` exactly when no counter
   wrapped (every wrap loses 256).  On a wrap (some code more than 255 times in a block:
   a tensor of few distinct values) the block is counted again straight into the wide
   counters, the residues the flush added are taken back off, and the rest of the call
   counts straight (such data would wrap again).  Blocks of fewer than 256 codes never
   wrap.  The result is the wide counting's, always, whatever length a block has: the
   lengths only decide the speed.

   Contract: count8_T(codes, n, u8, table, start) adds to table[c] the number of times
   each code c occurs among the n contiguous codes and returns the block length the next
   call should start with (start: what the last call returned, 0 for unknown data); u8 is
   65,536 zeroed bytes, zeroed again on return.  T is the wide counter type (int32_t: the caller guarantees no count reaches
   2^31; int64_t). */
#ifndef GGSCOPE_CCOUNT8_H
#define GGSCOPE_CCOUNT8_H

#include <stdint.h>
#include <string.h>

#include "_ctargets.h"

#define COUNT8_BLOCK ((Py_ssize_t) 1 << 18)   /* the block COUNT8_TOP is measured against */
#define COUNT8_FIRST ((Py_ssize_t) 1 << 16)   /* the first block of unknown data: small, to look at it */
#define COUNT8_MAX ((Py_ssize_t) 1 << 20)     /* the longest block: a flush per 2 MiB of codes at least */
#define COUNT8_TOP 128                        /* a counter above this in a block of COUNT8_BLOCK: count straight */
#define COUNT8_AIM 160                        /* the largest counter a block's length aims at (a wrap is 256) */
#define COUNT8_STRAIGHT ((Py_ssize_t) -1)     /* count straight: the data has few distinct codes */

/* Adds u to t (sign +1) or takes it off (sign -1), clears u, returns the sum of u's bytes
   and their largest in *top; a 64-byte line of u with no count is skipped. */
#define COUNT8_FLUSH(T)                                                                        \
    TARGETS static Py_ssize_t count8_flush_##T(uint8_t *restrict u, T *restrict t, int sign, int *top) { \
        Py_ssize_t sum = 0;                                                                    \
        uint8_t m = 0;                                                                         \
        for (Py_ssize_t k = 0; k < 65536; k += 64) {                                           \
            uint64_t w[8];                                                                     \
            memcpy(w, u + k, 64);                                                              \
            if (!(w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])) continue;            \
            for (int j = 0; j < 64; j++) {                                                     \
                sum += u[k + j];                                                               \
                m = u[k + j] > m ? u[k + j] : m;                                               \
                t[k + j] += sign * (T) u[k + j];                                               \
            }                                                                                  \
            memset(u + k, 0, 64);                                                              \
        }                                                                                      \
        *top = m;                                                                              \
        return sum;                                                                            \
    }

/* The next block's length after one of `len` codes whose largest counter was `top`: as
   long as keeps that counter near COUNT8_AIM (at most COUNT8_MAX), or COUNT8_STRAIGHT when
   a counter passed COUNT8_TOP scaled to a block of COUNT8_BLOCK (few distinct codes:
   their wide counters fit L1 anyway, and bytes would wrap). */
static Py_ssize_t count8_next(Py_ssize_t len, int top) {
    if ((Py_ssize_t) top * COUNT8_BLOCK > (Py_ssize_t) COUNT8_TOP * len) return COUNT8_STRAIGHT;
    if (top < 1) return COUNT8_MAX;
    const Py_ssize_t next = len * COUNT8_AIM / top;
    return next > COUNT8_MAX ? COUNT8_MAX : next < COUNT8_FIRST ? COUNT8_FIRST : next;
}

/* Blocks as long as count8_next says, the first of `start` codes (0: unknown data, a first
   block of COUNT8_FIRST); returns the length the next call over similar data should start
   with (0 when this data went straight: the next call looks at its data afresh).  A
   wrap: the block is counted again wide, the rest of the call straight. */
#define COUNT8(T)                                                                              \
    COUNT8_FLUSH(T)                                                                            \
    static Py_ssize_t count8_##T(const uint16_t *c, Py_ssize_t n, uint8_t *restrict u, T *restrict t, \
                                 Py_ssize_t start) {                                           \
        const Py_ssize_t line = 32;                                                            \
        Py_ssize_t b = 0, len = start > 0 ? start : COUNT8_FIRST;                              \
        while (b < n && len != COUNT8_STRAIGHT) {                                              \
            const Py_ssize_t e = n - b > len ? b + len : n;                                    \
            Py_ssize_t i = b;                                                                  \
            int top;                                                                           \
            for (; i + line <= e; i += line) {                                                 \
                __builtin_prefetch(c + i + 16 * line, 0, 3);                                   \
                for (Py_ssize_t k = 0; k < line; k++) u[c[i + k]] += 1;                        \
            }                                                                                  \
            for (; i < e; i++) u[c[i]] += 1;                                                   \
            if (count8_flush_##T(u, t, 1, &top) != e - b) {                                    \
                /* a counter wrapped: count the block again, wide, and take the residues off */ \
                for (i = b; i < e; i++) {                                                      \
                    t[c[i]] += 1;                                                              \
                    u[c[i]] += 1;                                                              \
                }                                                                              \
                count8_flush_##T(u, t, -1, &top);                                              \
                b = e;                                                                         \
                len = COUNT8_STRAIGHT;                                                         \
                break;                                                                         \
            }                                                                                  \
            if (e - b >= COUNT8_FIRST) len = count8_next(e - b, top); /* a short tail says little */ \
            b = e;                                                                             \
        }                                                                                      \
        for (Py_ssize_t i = b; i < n; i++) t[c[i]] += 1; /* straight */                        \
        return len == COUNT8_STRAIGHT ? 0 : len;                                               \
    }
COUNT8(int32_t)
COUNT8(int64_t)

#endif
