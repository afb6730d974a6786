"""``ggscope.stats.kernels``' contract in plain numpy, for tensors too small to repay numba.

Why: importing numba and loading the compiled kernels from the cache costs about half
a second per process, and compiling them on a fresh install several seconds; a one-shot
``ggscope stats FILE TENSOR`` on a small tensor is done in numpy in less.
``ggscope.stats.tensors`` uses this module while numba is not loaded yet and the process has
measured few elements (``stats.JIT_MIN_ELEMS``).  Results agree with the compiled kernels: bins by the
same float32 formula, counts exactly; the float32 partial sums over pieces of
``PIECE`` values are summed pairwise here rather than in sequence (at least as
accurate).

Contract: as ``ggscope.stats.kernels`` (``moments``, ``bin_pairs``, ``count_pairs``,
``count_codes``, ``PIECE``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["moments", "bin_pairs", "count_pairs", "count_codes", "PIECE", "weighted_sum", "piece_sums"]

# elements per float32 partial sum: L1-sized, accurate.  The one Python place of this
# number; the C kernels take it from csrc/_ctargets.h and export it as _cstats.PIECE
# (tests/test_stats.py holds the two equal)
PIECE = 2048


def piece_sums(y: np.ndarray) -> float:
    """The sum of ``y``: float32 within pieces of ``PIECE`` values, float64 across."""
    m = y.size - y.size % PIECE
    total = float(y[:m].reshape(-1, PIECE).sum(axis=1, dtype=np.float32).sum(dtype=np.float64)) if m else 0.0
    return total + float(y[m:].sum(dtype=np.float32))


def moments(x: np.ndarray, shift: np.float32) -> tuple[float, float, float, int]:
    d = x - np.float32(shift)
    return (piece_sums(x) - x.size * float(np.float32(shift)), piece_sums(d * d), piece_sums(np.abs(x)),
            int(x.size - np.count_nonzero(x)))


def count_pairs(pairs: np.ndarray, table: np.ndarray) -> None:
    table += np.bincount(pairs, minlength=table.size)[:table.size]


def bin_pairs(x: np.ndarray, lo: np.float32, scale: np.float32, top: np.int32,
              table: np.ndarray, idx: np.ndarray) -> int:
    with np.errstate(invalid="ignore", over="ignore"):
        b = ((x - np.float32(lo)) * np.float32(scale)).astype(np.int32)
    np.clip(b, 0, int(top), out=b)
    m = b.size & ~1
    count_pairs(b[0:m:2] + 256 * b[1:m:2], table)
    if m < b.size:
        table[b[m]] += 1                     # a lone last value: (value, bin 0) pair
        return 1
    return 0


def count_codes(codes: np.ndarray, counts: np.ndarray) -> None:
    size = counts.shape[-1]
    counts[0] += np.bincount(codes, minlength=size)[:size]


def weighted_sum(values: np.ndarray, counts: np.ndarray) -> float:
    """``sum(values * counts)`` in float64, summed pairwise by numpy -- never ``np.dot``:
    a dot product goes to OpenBLAS, whose threads then spin for a while after the call
    and, on a two-core machine, take a core from the statistics threads (measured: 13 ms
    per 65,536-value dot under load against 0.3 ms for this, and a spinning BLAS thread
    in a quarter of an F16 ``stats`` profile)."""
    return float(np.sum(values * counts))
