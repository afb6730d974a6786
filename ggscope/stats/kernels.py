"""The compiled loops behind ``ggscope.stats.tensors``: what numpy cannot do in one cheap pass.

Why: a histogram in numpy is a chain of whole-array passes ending in ``bincount``
(about 1 ns per element, more than decoding a quantized block), and numpy has no fused
"centred moments + absolute sum + zero count".  One loop over a cache-sized piece does
all of it for about 0.45 ns per element.  And a type with 16-bit codes (F16, BF16, I16)
has only 65,536 values, so counting its codes (0.26 ns per element) gives every
statistic exactly, without decoding.  numba compiles these loops once (cached on disk in the user's cache
directory, see ``ggscope.core.jit``) and they release the GIL, so ``ggscope.stats.tensors`` runs them on both
cores.

Contract:

* ``moments(x, shift) -> (s1, s2, abs_sum, zeros)`` over a 1-D float32 array ``x``
  of *finite* values: the sums of ``x - shift`` and ``(x - shift) ** 2`` (float32
  within pieces of ``PIECE`` elements, float64 across them), of ``|x|``, and the count
  of zeros (either sign).  The first is the sum of ``x`` less ``x.size * shift`` in
  float64: ``x - shift`` summed in float32 rounds alike for every value of a binade (and
  fastmath may take the shift off the running sum, which rounds alike at every step), a
  bias in the mean that summing does not average out (csrc/_cstats_piece.h add_piece).
* ``bin_pairs(x, lo, scale, top, table, idx) -> lone``: bins the finite float32 values ``x``
  into ``b = clamp(int((x - lo) * scale), 0, top)`` (float32 arithmetic, ``top`` <
  256) and counts them two at a time: ``table[b0 + 256 * b1] += 1`` for consecutive
  pairs (a lone last value counts as ``(b, 0)``): half the counter updates, measured
  about a third cheaper than one counter per value on evenly spread bins and about
  even on a bell-shaped tensor, whose counts pile onto a few central bins.  ``table``
  is int64[65536]; bin ``k``'s count is ``T.sum(0)[k] + T.sum(1)[k]`` of
  ``T = table.reshape(256, 256)``, minus the lone values' phantom zeros: ``lone`` of
  them, which the caller subtracts from bin 0.  ``idx`` is uint8 scratch of at least
  ``PIECE`` elements.
* Non-finite input to either is undefined behaviour (compiled for finite math): the
  caller filters it out.
* ``count_pairs(pairs, table)``: ``table[p] += 1`` for every uint16 ``p`` of ``pairs``
  (two uint8 bin indices viewed as one): the counting step of ``bin_pairs``.
* ``count_codes(codes, counts)``: counts every code ``c`` of the 1-D uint8 or uint16
  array ``codes`` (any stride) into ``counts``, int32 or int64 of shape ``(lanes, size)``
  with ``size`` above every code (the caller keeps counts below the type's limit); the
  count of ``c`` is ``counts[:, c].sum()``.  With one table a constant tensor (all
  zeros) increments one counter whose every update waits for the previous store
  (measured 0.5 G elem/s against 2.5 G on normal weights); so when a sample of the codes
  shows codes repeating within four elements (more than 1 in 16), element ``i`` goes to
  lane ``i % 4`` of 4 or more lanes, whose independent counters break that chain; else
  everything goes to lane 0, which is faster on spread codes (``benchmarks/count_codes.py``).

Importing this module imports numba; ``ggscope.stats.tensors`` imports it only when statistics
are computed, so the other commands start without it.
"""
from __future__ import annotations

import numpy as np
from ggscope.core.jit import njit

__all__ = ["moments", "bin_pairs", "count_pairs", "count_codes", "PIECE"]

from ggscope.stats.kernels_numpy import PIECE   # noqa: E402 - elements per float32 partial sum
_FINITE = {"reassoc", "nsz", "nnan", "ninf"}    # lets LLVM vectorize; inputs are finite


@njit(nogil=True, cache=True, fastmath=_FINITE)
def _sums(x, shift):  # pragma: no cover - compiled
    a1 = np.float32(0.0)
    a2 = np.float32(0.0)
    aa = np.float32(0.0)
    zeros = np.int32(0)
    for j in range(x.size):
        v = x[j]
        d = v - shift
        a1 += v
        a2 += d * d
        aa += abs(v)
        zeros += np.int32(v == 0)
    return a1, a2, aa, zeros


@njit(nogil=True, cache=True, fastmath=_FINITE)
def _bin_index(x, lo, scale, top, idx):  # pragma: no cover - compiled
    for j in range(x.size):
        b = np.int32((x[j] - lo) * scale)
        b = b if b < top else top
        idx[j] = np.uint8(b if b > 0 else 0)


@njit(nogil=True, cache=True)
def count_pairs(pairs, table):  # pragma: no cover - compiled
    for j in range(pairs.size):
        table[pairs[j]] += 1


@njit(nogil=True, cache=True)
def moments(x, shift):  # pragma: no cover - compiled
    n = x.size
    s1 = 0.0
    s2 = 0.0
    sa = 0.0
    zeros = 0
    for s in range(0, n, PIECE):
        a1, a2, aa, z = _sums(x[s:min(n, s + PIECE)], shift)
        s1 += a1 - (min(n, s + PIECE) - s) * np.float64(shift)     # a1 sums x itself
        s2 += a2
        sa += aa
        zeros += z
    return s1, s2, sa, zeros


@njit(nogil=True, cache=True)
def bin_pairs(x, lo, scale, top, table, idx):  # pragma: no cover - compiled
    n = x.size
    lone = 0
    for s in range(0, n, PIECE):
        e = min(n, s + PIECE)
        ii = idx[:e - s]
        _bin_index(x[s:e], lo, scale, top, ii)
        m = (e - s) & ~1
        count_pairs(ii[:m].view(np.uint16), table)
        if m < e - s:
            table[ii[m]] += 1                 # a lone last value: (value, bin 0) pair
            lone += 1
    return lone


@njit(nogil=True, cache=True)
def _repeats(codes):  # pragma: no cover - compiled
    """How many of a sample of ``codes`` equal one of the three codes before them: 16
    windows of 64 spread over the array (a chunk's data can change along it)."""
    n = codes.size
    hits = 0
    for w in range(16):
        s = (n - 64) * w // 15 if n > 64 else 0
        for i in range(s + 3, min(n, s + 64)):
            c = codes[i]
            hits += (c == codes[i - 1]) | (c == codes[i - 2]) | (c == codes[i - 3])
    return hits


@njit(nogil=True, cache=True)
def _count_one(codes, c0):  # pragma: no cover - compiled
    for i in range(codes.size):
        c0[codes[i]] += 1


@njit(nogil=True, cache=True)
def _count_lanes(codes, c0, c1, c2, c3):  # pragma: no cover - compiled
    m = codes.size & ~3
    for i in range(0, m, 4):
        c0[codes[i]] += 1
        c1[codes[i + 1]] += 1
        c2[codes[i + 2]] += 1
        c3[codes[i + 3]] += 1
    for i in range(m, codes.size):
        c0[codes[i]] += 1


@njit(nogil=True, cache=True)
def count_codes(codes, counts):  # pragma: no cover - compiled
    # lanes only where codes repeat within four elements: on spread codes (normal weights)
    # one table is measured 1.5-2x faster, on repeated codes four lanes are 2-4x faster
    if counts.shape[0] >= 4 and _repeats(codes) >= 64:
        _count_lanes(codes, counts[0], counts[1], counts[2], counts[3])
    else:
        _count_one(codes, counts[0])
