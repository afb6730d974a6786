"""numba's engine for ``diff_sums.pair_sums``: the fallback where ggscope._cpairs was
not built (no C compiler at install time) or ``GGSCOPE_KERNELS=numba`` asks for it.

Why a module of its own: importing it imports numba (about half a second, and seconds of
compilation on a fresh install), which ``diff`` pays only when it takes this route.

numpy's float32 max of |b-a| (then float64 on the ties) gives max |b-a| and proves the
chunk finite; a finite chunk goes through a loop compiled with fast-math flags, so LLVM
vectorizes it; a chunk with NaN/Inf goes through a plain loop that leaves those pairs
out of the sums and counts them.  Contract: ``ggscope.diff.sums``.
"""
from __future__ import annotations

import numpy as np
from ggscope.core.jit import njit

__all__ = ["pair_sums"]

_FINITE = {"reassoc", "contract", "nsz", "nnan", "ninf"}   # vectorizes; only for finite chunks


@njit(nogil=True, cache=True, fastmath=_FINITE)
def _finite_sums(x, y):  # pragma: no cover - compiled
    aa = 0.0
    bb = 0.0
    ab = 0.0
    dd = 0.0
    for i in range(x.size):
        a = np.float64(x[i])
        b = np.float64(y[i])
        d = b - a
        aa += a * a
        bb += b * b
        ab += a * b
        dd += d * d
    return aa, bb, ab, dd


def _max_abs_diff(x: np.ndarray, y: np.ndarray) -> float | None:
    """max |y - x| in float64, exactly, or None when a pair is not finite.

    From numpy's vectorized float32 arithmetic: a NaN or Inf in either array makes
    |y - x| NaN or Inf, which the max carries, so one pass both finds the largest
    difference and proves the chunk finite (a float32 overflow of two finite values
    also says None: the exact loop then decides).  Rounding is monotonic, so the
    largest float64 difference is among the pairs whose float32 difference is the
    largest.  (A max inside the compiled loop would stop LLVM vectorizing it.)"""
    if x.dtype != np.float32 or y.dtype != np.float32:
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            return None
        return float(np.abs(np.subtract(y, x, dtype=np.float64)).max())
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.subtract(y, x)
        np.abs(d, out=d)
    top = d.max()
    if not np.isfinite(top):
        return None
    hit = np.flatnonzero(d == top)
    return float(np.abs(y[hit].astype(np.float64) - x[hit].astype(np.float64)).max())


@njit(nogil=True, cache=True)
def _masked_sums(x, y):  # pragma: no cover - compiled
    aa = 0.0
    bb = 0.0
    ab = 0.0
    dd = 0.0
    mx = 0.0
    n = 0
    bad = 0
    mismatch = 0
    for i in range(x.size):
        a = np.float64(x[i])
        b = np.float64(y[i])
        if np.isfinite(a) and np.isfinite(b):
            d = b - a
            aa += a * a
            bb += b * b
            ab += a * b
            dd += d * d
            mx = max(mx, abs(d))
            n += 1
        else:
            bad += 1
            if not ((np.isnan(a) and np.isnan(b)) or a == b):
                mismatch += 1
    return aa, bb, ab, dd, mx, n, bad, mismatch


def pair_sums(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, float, int, int, int]:
    """As ``diff_sums.pair_sums``."""
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y)
    if x.shape != y.shape:
        raise ValueError(f"chunks differ in length: {x.size} and {y.size}")
    x, y = x.reshape(-1), y.reshape(-1)
    mx = _max_abs_diff(x, y) if x.size else 0.0
    if mx is not None:
        aa, bb, ab, dd = _finite_sums(x, y)
        n, bad, mismatch = x.size, 0, 0
    else:                                  # rare: a chunk with NaN/Inf, one branchy pass
        aa, bb, ab, dd, mx, n, bad, mismatch = _masked_sums(x, y)
    return float(aa), float(bb), float(ab), float(dd), float(mx), int(n), int(bad), int(mismatch)
