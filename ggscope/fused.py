"""Decoding fused with the two statistics passes, for the most published block types.

Why: decoding a chunk with the numpy codecs writes 4 bytes per element to memory and
the statistics read them back, twice; on a two-core machine those memory-bound passes
do not get faster with a second thread.  Here pass two decodes each element in
registers and consumes it at once (histogram bin, centred moments, |x| and zeros), so
it reads only the raw blocks, about 1 byte per element, and two threads scale; pass
one (the range) reads little more than the block scales.  The numpy codecs in
``ggscope.quant`` stay the readable reference: every formula here keeps ggml's float32
operation order, and tests/test_fused.py holds each block's results to them.

Scope: the layouts people publish most (Q4_0, Q8_0, Q4_K, Q6_K, IQ4_XS: the ones
benchmarks/dequant.py measures), and only chunks whose f16 scales are all finite --
then every value is finite and the compiled loops may assume so.  ``ggscope.stats``
sends anything else (other layouts, a chunk with a NaN/Inf scale) through the numpy
codecs.

Contract (``blocks`` is a ``(n_blocks, block_bytes)`` uint8 array with contiguous rows,
``big`` true for big-endian files):

* ``range_pass(layout, blocks, big) -> (lo, hi) | None``: min and max of the decoded
  values, reading mostly the scales (see "pass one" below); ``None`` when a scale is
  not finite.
* ``bin_pass(layout, blocks, big, lo, scale, top, shift, table, idx) -> (s1, s2, sa,
  zeros)``: bins every value as ``kernels.bin_pairs`` does (same float32 arithmetic,
  pairs counted into ``table``) and returns the sums of ``x - shift`` and its square,
  of ``|x|``, and the count of zeros, as ``kernels.moments``.  Block sizes are even, so
  there is never a lone value.  Call it only on chunks ``range_pass`` accepted.
* ``LAYOUTS``: the layout names handled.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from .kernels import PIECE, count_pairs
from .quant import code_values

__all__ = ["LAYOUTS", "range_pass", "bin_pass"]

_FINITE = {"reassoc", "nsz", "nnan", "ninf"}


@lru_cache(maxsize=None)
def _kvalues() -> np.ndarray:
    from .quant.iq_tables import KVALUES_IQ4NL
    return np.array(KVALUES_IQ4NL, dtype=np.int8).astype(np.float32)


# ---------------------------------------------------------------- scalar helpers

@njit(nogil=True, cache=True)
def _f16(blocks, b, at, big, lut):  # pragma: no cover - compiled
    lo = np.int32(blocks[b, at + big])
    hi = np.int32(blocks[b, at + 1 - big])
    return lut[lo | (hi << 8)]


@njit(nogil=True, cache=True)
def _finite(x):  # pragma: no cover - compiled
    return x - x == 0


@njit(nogil=True, cache=True, fastmath=_FINITE)
def _moments(v, shift, a1, a2, aa, z):  # pragma: no cover - compiled
    d = v - shift
    return a1 + d, a2 + d * d, aa + abs(v), z + np.int32(v == 0)


@njit(nogil=True, cache=True)
def _bin(v, lo, scale, top):  # pragma: no cover - compiled
    t = np.int32((v - lo) * scale)
    t = t if t < top else top
    return np.uint8(t if t > 0 else 0)


# ---------------------------------------------------------------- per-layout scales
# Each returns the float32 factors of one block exactly as the numpy codec forms them.

@njit(nogil=True, cache=True)
def _q4_k_scale(blocks, b, j, d, dmin):  # pragma: no cover - compiled
    """Group j's (d * sc, dmin * m) of a Q4_K block (ggml's get_scale_min_k4)."""
    if j < 4:
        sc = blocks[b, 4 + j] & 63
        m = blocks[b, 8 + j] & 63
    else:
        sc = (blocks[b, 8 + j] & 0xF) | ((blocks[b, j] >> 6) << 4)
        m = (blocks[b, 8 + j] >> 4) | ((blocks[b, 4 + j] >> 6) << 4)
    return d * np.float32(sc), dmin * np.float32(m)


@njit(nogil=True, cache=True)
def _q6_k_group(g):  # pragma: no cover - compiled
    """Where 16-element group g of a Q6_K block keeps its codes: (ql, qh, k, l0) with
    element l (l0 <= l < l0 + 16) in ql[ql + l] nibble k >> 1 and qh[qh + l] crumb k."""
    half, k4 = g // 8, (g // 2) % 4
    return 64 * half + 32 * (k4 & 1), 128 + 32 * half, k4, 16 * (g % 2)


@njit(nogil=True, cache=True)
def _q6_k_code(blocks, b, ql, qh, k4, l):  # pragma: no cover - compiled
    return np.int32(((blocks[b, ql + l] >> (4 * (k4 >> 1))) & 0xF)
                    | (((blocks[b, qh + l] >> (2 * k4)) & 3) << 4))


@njit(nogil=True, cache=True)
def _iq4_xs_scale(blocks, b, ib, d, big):  # pragma: no cover - compiled
    h = np.int32(blocks[b, 2 + big]) | (np.int32(blocks[b, 3 - big]) << 8)
    low = (np.int32(blocks[b, 4 + ib // 2]) >> (4 * (ib % 2))) & 0xF
    ls = low | (((h >> (2 * ib)) & 3) << 4)
    return d * np.float32(ls - 32)


# ---------------------------------------------------------------- pass one: range
# Each group of values shares one float32 factor, so a bound on |x| follows from the
# scales alone; a group's codes are read only when that bound could move the running
# min or max (in a realistic tensor a few blocks per chunk).  Rounding is monotone, so
# the extremes of a group are the extreme codes times the factor, exactly as decoded.

@njit(nogil=True, cache=True)
def _span(a, b, lo, hi):  # pragma: no cover - compiled
    return min(lo, min(a, b)), max(hi, max(a, b))


@njit(nogil=True, cache=True)
def _range_q8_0(blocks, big, lut):  # pragma: no cover - compiled
    lo, hi, ok = np.float32(np.inf), np.float32(-np.inf), True
    q = blocks.view(np.int8)
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 0, big, lut)
        ok &= _finite(d)
        r = np.float32(128) * abs(d)
        if -r < lo or r > hi:
            mn, mx = np.int32(127), np.int32(-128)
            for j in range(2, 34):
                mn, mx = min(mn, np.int32(q[b, j])), max(mx, np.int32(q[b, j]))
            lo, hi = _span(np.float32(mn) * d, np.float32(mx) * d, lo, hi)
    return lo, hi, ok


@njit(nogil=True, cache=True)
def _range_q4_0(blocks, big, lut):  # pragma: no cover - compiled
    lo, hi, ok = np.float32(np.inf), np.float32(-np.inf), True
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 0, big, lut)
        ok &= _finite(d)
        r = np.float32(8) * abs(d)
        if -r < lo or r > hi:
            mn, mx = np.int32(15), np.int32(0)
            for j in range(2, 18):
                c = np.int32(blocks[b, j])
                mn, mx = min(mn, min(c & 0xF, c >> 4)), max(mx, max(c & 0xF, c >> 4))
            lo, hi = _span(np.float32(mn - 8) * d, np.float32(mx - 8) * d, lo, hi)
    return lo, hi, ok


@njit(nogil=True, cache=True)
def _range_q4_k(blocks, big, lut):  # pragma: no cover - compiled
    lo, hi, ok = np.float32(np.inf), np.float32(-np.inf), True
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 0, big, lut)
        dmin = _f16(blocks, b, 2, big, lut)
        ok &= _finite(d) & _finite(dmin)
        for j in range(8):
            dl, ml = _q4_k_scale(blocks, b, j, d, dmin)
            top = np.float32(15) * dl                   # exact: dl has at most 17 bits
            if min(top, np.float32(0)) - ml < lo or max(top, np.float32(0)) - ml > hi:
                at, shift = 16 + 32 * (j // 2), 4 * (j % 2)
                mn, mx = np.int32(15), np.int32(0)
                for l in range(32):
                    c = np.int32((blocks[b, at + l] >> shift) & 0xF)
                    mn, mx = min(mn, c), max(mx, c)
                lo, hi = _span(np.float32(mn) * dl - ml, np.float32(mx) * dl - ml, lo, hi)
    return lo, hi, ok


@njit(nogil=True, cache=True)
def _range_q6_k(blocks, big, lut):  # pragma: no cover - compiled
    lo, hi, ok = np.float32(np.inf), np.float32(-np.inf), True
    sc = blocks.view(np.int8)
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 208, big, lut)
        ok &= _finite(d)
        for g in range(16):
            dl = d * np.float32(sc[b, 192 + g])
            r = np.float32(32) * abs(dl)
            if -r < lo or r > hi:
                ql, qh, k4, l0 = _q6_k_group(g)
                mn, mx = np.int32(63), np.int32(0)
                for l in range(l0, l0 + 16):
                    c = _q6_k_code(blocks, b, ql, qh, k4, l)
                    mn, mx = min(mn, c), max(mx, c)
                lo, hi = _span(np.float32(mn - 32) * dl, np.float32(mx - 32) * dl, lo, hi)
    return lo, hi, ok


@njit(nogil=True, cache=True)
def _range_iq4_xs(blocks, big, lut, kv):  # pragma: no cover - compiled
    lo, hi, ok = np.float32(np.inf), np.float32(-np.inf), True
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 0, big, lut)
        ok &= _finite(d)
        for ib in range(8):
            dl = _iq4_xs_scale(blocks, b, ib, d, big)
            r = np.float32(128) * abs(dl)
            if -r < lo or r > hi:
                mn, mx = np.int32(15), np.int32(0)        # kvalues ascend with the code
                for j in range(8 + 16 * ib, 24 + 16 * ib):
                    c = np.int32(blocks[b, j])
                    mn, mx = min(mn, min(c & 0xF, c >> 4)), max(mx, max(c & 0xF, c >> 4))
                lo, hi = _span(dl * kv[mn], dl * kv[mx], lo, hi)
    return lo, hi, ok


# ---------------------------------------------------------------- pass two: bins + moments

@njit(nogil=True, cache=True)
def _bins_q8_0(blocks, big, lut, lo, scale, top, shift, table, idx):  # pragma: no cover - compiled
    s1, s2, sa, zeros = 0.0, 0.0, 0.0, 0
    n = blocks.shape[0]
    q = blocks.view(np.int8)
    for p in range(0, n, PIECE // 32):
        a1, a2, aa, z = np.float32(0), np.float32(0), np.float32(0), np.int32(0)
        e = 0
        for b in range(p, min(n, p + PIECE // 32)):
            d = _f16(blocks, b, 0, big, lut)
            for j in range(32):
                v = np.float32(q[b, 2 + j]) * d
                idx[e + j] = _bin(v, lo, scale, top)
                a1, a2, aa, z = _moments(v, shift, a1, a2, aa, z)
            e += 32
        count_pairs(idx[:e].view(np.uint16), table)
        s1, s2, sa, zeros = s1 + a1, s2 + a2, sa + aa, zeros + z
    return s1, s2, sa, zeros


@njit(nogil=True, cache=True)
def _bins_q4_0(blocks, big, lut, lo, scale, top, shift, table, idx):  # pragma: no cover - compiled
    s1, s2, sa, zeros = 0.0, 0.0, 0.0, 0
    n = blocks.shape[0]
    for p in range(0, n, PIECE // 32):
        a1, a2, aa, z = np.float32(0), np.float32(0), np.float32(0), np.int32(0)
        e = 0
        for b in range(p, min(n, p + PIECE // 32)):
            d = _f16(blocks, b, 0, big, lut)
            for j in range(16):
                c = np.int32(blocks[b, 2 + j])
                v0 = np.float32((c & 0xF) - 8) * d
                v1 = np.float32((c >> 4) - 8) * d
                idx[e + 2 * j] = _bin(v0, lo, scale, top)
                idx[e + 2 * j + 1] = _bin(v1, lo, scale, top)
                a1, a2, aa, z = _moments(v0, shift, a1, a2, aa, z)
                a1, a2, aa, z = _moments(v1, shift, a1, a2, aa, z)
            e += 32
        count_pairs(idx[:e].view(np.uint16), table)
        s1, s2, sa, zeros = s1 + a1, s2 + a2, sa + aa, zeros + z
    return s1, s2, sa, zeros


@njit(nogil=True, cache=True)
def _bins_q4_k(blocks, big, lut, lo, scale, top, shift, table, idx):  # pragma: no cover - compiled
    s1, s2, sa, zeros = 0.0, 0.0, 0.0, 0
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 0, big, lut)
        dmin = _f16(blocks, b, 2, big, lut)
        a1, a2, aa, z = np.float32(0), np.float32(0), np.float32(0), np.int32(0)
        for j in range(8):
            dl, ml = _q4_k_scale(blocks, b, j, d, dmin)
            at, shift4 = 16 + 32 * (j // 2), 4 * (j % 2)
            for l in range(32):
                v = np.float32((blocks[b, at + l] >> shift4) & 0xF) * dl - ml
                idx[32 * j + l] = _bin(v, lo, scale, top)
                a1, a2, aa, z = _moments(v, shift, a1, a2, aa, z)
        count_pairs(idx[:256].view(np.uint16), table)
        s1, s2, sa, zeros = s1 + a1, s2 + a2, sa + aa, zeros + z
    return s1, s2, sa, zeros


@njit(nogil=True, cache=True)
def _bins_q6_k(blocks, big, lut, lo, scale, top, shift, table, idx):  # pragma: no cover - compiled
    s1, s2, sa, zeros = 0.0, 0.0, 0.0, 0
    sc = blocks.view(np.int8)
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 208, big, lut)
        a1, a2, aa, z = np.float32(0), np.float32(0), np.float32(0), np.int32(0)
        for g in range(16):
            dl = d * np.float32(sc[b, 192 + g])
            ql, qh, k4, l0 = _q6_k_group(g)
            for l in range(l0, l0 + 16):
                v = np.float32(_q6_k_code(blocks, b, ql, qh, k4, l) - 32) * dl
                idx[16 * g + l - l0] = _bin(v, lo, scale, top)
                a1, a2, aa, z = _moments(v, shift, a1, a2, aa, z)
        count_pairs(idx[:256].view(np.uint16), table)
        s1, s2, sa, zeros = s1 + a1, s2 + a2, sa + aa, zeros + z
    return s1, s2, sa, zeros


@njit(nogil=True, cache=True)
def _bins_iq4_xs(blocks, big, lut, kv, lo, scale, top, shift, table, idx):  # pragma: no cover - compiled
    s1, s2, sa, zeros = 0.0, 0.0, 0.0, 0
    for b in range(blocks.shape[0]):
        d = _f16(blocks, b, 0, big, lut)
        a1, a2, aa, z = np.float32(0), np.float32(0), np.float32(0), np.int32(0)
        for ib in range(8):
            dl = _iq4_xs_scale(blocks, b, ib, d, big)
            at = 8 + 16 * ib
            for j in range(16):
                c = blocks[b, at + j]
                v0 = dl * kv[c & 0xF]
                v1 = dl * kv[c >> 4]
                idx[2 * j + 32 * ib] = _bin(v0, lo, scale, top)
                idx[2 * j + 1 + 32 * ib] = _bin(v1, lo, scale, top)
                a1, a2, aa, z = _moments(v0, shift, a1, a2, aa, z)
                a1, a2, aa, z = _moments(v1, shift, a1, a2, aa, z)
        count_pairs(idx[:256].view(np.uint16), table)
        s1, s2, sa, zeros = s1 + a1, s2 + a2, sa + aa, zeros + z
    return s1, s2, sa, zeros


# ---------------------------------------------------------------- entry points

_RANGE = {"Q8_0": _range_q8_0, "Q4_0": _range_q4_0, "Q4_K": _range_q4_k, "Q6_K": _range_q6_k}
_BINS = {"Q8_0": _bins_q8_0, "Q4_0": _bins_q4_0, "Q4_K": _bins_q4_k, "Q6_K": _bins_q6_k}
LAYOUTS = frozenset(_RANGE) | {"IQ4_XS"}


def range_pass(layout: str, blocks: np.ndarray, big: bool) -> tuple[float, float] | None:
    lut = code_values("F16", "little")
    if layout == "IQ4_XS":
        lo, hi, ok = _range_iq4_xs(blocks, int(big), lut, _kvalues())
    else:
        lo, hi, ok = _RANGE[layout](blocks, int(big), lut)
    return (float(lo), float(hi)) if ok else None


def bin_pass(layout: str, blocks: np.ndarray, big: bool, lo: np.float32, scale: np.float32,
             top: np.int32, shift: np.float32, table: np.ndarray, idx: np.ndarray
             ) -> tuple[float, float, float, int]:
    lut = code_values("F16", "little")
    if layout == "IQ4_XS":
        return _bins_iq4_xs(blocks, int(big), lut, _kvalues(), lo, scale, top, shift, table, idx)
    return _BINS[layout](blocks, int(big), lut, lo, scale, top, shift, table, idx)
