"""Pass one of the statistics read off the block scales, for the most published layouts.

Why: every value of a Q8_0, Q4_0, Q4_K, Q6_K or IQ4_XS block group is one float32
factor times a small code, so a bound on |x| follows from the scales alone; a group's
codes are read only when that bound could move the running min or max (in a realistic
tensor a few blocks per chunk).  That makes pass one read little more than the scales
-- measured about twice as fast as decoding every value (benchmarks/stats_vs_ggml.py)
-- at the price of having no sum: ``ggscope.stats.decoded`` then centres pass two on the mean
of a few sampled blocks (and once more on the mean when that is far off).  Rounding is monotone, so
the extremes of a group are its extreme codes times the factor, exactly as decoded.

Contract: ``SCALE_BOUNDED_LAYOUTS``; ``range_pass(layout, blocks, big) -> (lo, hi) | None``, ``None``
when a scale is not finite (then some value is NaN or Inf).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ggscope.core.jit import njit
from ggscope.quant import code_values

__all__ = ["SCALE_BOUNDED_LAYOUTS", "range_pass"]


@lru_cache(maxsize=None)
def _kvalues() -> np.ndarray:
    from ggscope.quant.iq_tables import KVALUES_IQ4NL  # lazy: 1 more module only when used
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


@njit(nogil=True, inline="always")
def k4_scale(blocks, b, j, d, dmin):  # pragma: no cover - compiled
    """Group j's (d * sc, dmin * m) of a Q4_K/Q5_K block (ggml's get_scale_min_k4); the
    fused kernels decode with the same function."""
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
            dl, ml = k4_scale(blocks, b, j, d, dmin)
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


_RANGE = {"Q8_0": _range_q8_0, "Q4_0": _range_q4_0, "Q4_K": _range_q4_k, "Q6_K": _range_q6_k}
SCALE_BOUNDED_LAYOUTS = frozenset(_RANGE) | {"IQ4_XS"}


def range_pass(layout: str, blocks: np.ndarray, big: bool) -> tuple[float, float] | None:
    lut = code_values("F16", "little")
    if layout == "IQ4_XS":
        lo, hi, ok = _range_iq4_xs(blocks, int(big), lut, _kvalues())
    else:
        lo, hi, ok = _RANGE[layout](blocks, int(big), lut)
    return (float(lo), float(hi)) if ok else None
