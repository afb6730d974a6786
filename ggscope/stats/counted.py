"""The statistics read off how often each value occurs: one-element codes and BIT1 bits.

Why: a layout whose element is one code of at most 16 bits (F16, BF16, I8, I16) has at
most 65,536 distinct values, and BIT1's are only -1 and +1: counting codes (or set
bits) in one pass gives every statistic *exactly*, with nothing decoded.  Also home of
the result mapping every route returns (``result``) and of the histogram edges.

Contract: ``by_codes`` / ``by_bits(t, lay, byteorder, bins, chunks)`` -> the
``tensor_stats`` mapping (``ggscope.stats.tensors``); ``from_value_counts(t, values,
counts, bins)`` the same from a (value, count) table; ``code_table(size, dtype)`` the
zeroed, lane-interleaved counters ``count_codes`` fills.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.facts.ggml_types import Layout
from ggscope.stats import counters
from ggscope.stats.kernels_numpy import weighted_sum
from ggscope.stats.scales import code_values64

if TYPE_CHECKING:
    from ggscope.model.modelfile import TensorInfo
    from ggscope.stats.chunks import Chunks

__all__ = ["by_codes", "by_bits", "from_value_counts", "result", "hist_edges", "code_table", "CODE_LANES"]


def hist_edges(lo: float, hi: float, bins: int) -> tuple[float, float, np.ndarray]:
    h_lo, h_hi = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    return h_lo, h_hi, np.linspace(h_lo, h_hi, bins + 1)


def result(t: "TensorInfo", n: int, nan: int, inf: int, zeros: int, lo: float, hi: float,
            mean: float, m2: float, abs_sum: float, edges: np.ndarray, counts: np.ndarray,
            scales: dict[str, Any] | None) -> dict[str, Any]:
    finite = n > 0
    return {
        "name": t.name, "type": t.type, "layout": t.layout, "shape": list(t.shape),
        "count": t.n_elements, "finite": n, "nan": nan, "inf": inf, "zeros": zeros,
        "min": float(lo) if finite else None, "max": float(hi) if finite else None,
        "mean": float(mean) if finite else None,
        "std": math.sqrt(max(m2, 0.0) / n) if finite else None,
        "abs_mean": float(abs_sum) / n if finite else None,
        "histogram": {"edges": edges.tolist() if finite else [],
                      "counts": np.asarray(counts, np.int64).tolist()},
        "block_scales": scales,
    }


CODE_LANES = 4      # interleaved sub-tables of ``kernels.count_codes``


def code_table(size: int, dtype: Any) -> np.ndarray:
    """Zeroed counters for ``count_codes``: ``CODE_LANES`` interleaved tables of at least
    ``size`` (contiguous; the counts of codes below ``size`` are ``table.sum(0)[:size]``),
    lent by ``ggscope.stats.counters`` (give it back cleared, ``by_codes`` does).

    The tables are 64 bytes more than a power of two apart: at a power-of-two distance the
    lanes' counters of one code share their low 12 address bits, and the CPU's
    store-to-load check (4K aliasing) serialises them again on constant data."""
    return counters.lend((CODE_LANES, size + 64 // np.dtype(dtype).itemsize), dtype)


def by_codes(t: "TensorInfo", lay: Layout, byteorder: str, bins: int, ch: Chunks) -> dict[str, Any]:
    count_codes = ch.kernels.count_codes
    dtype = np.uint16 if lay.block_bytes == 2 else np.uint8
    tables: list[np.ndarray] = []

    # int32 counters (measured 40% faster: half the table's cache footprint) whenever no
    # count can reach 2^31
    narrow = np.int32 if t.n_elements < 1 << 31 else np.int64

    def make() -> np.ndarray:
        table = code_table(1 << (8 * lay.block_bytes), narrow)
        tables.append(table)
        return table

    def work(i: int) -> None:
        table = ch.scratch("codes", make)
        for part in ch.windows(i):
            codes = part.reshape(-1).view(dtype)
            if not codes.flags.aligned:
                codes = codes.copy()
            count_codes(codes, table)

    ch.run(work, 0)
    size = 1 << (8 * lay.block_bytes)
    # the lanes of every thread's table added in the tables' own type, which holds the
    # tensor's whole count (``narrow``): 22 us, where ``sum(0, dtype=int64)`` took 540
    counts = np.zeros(size, narrow)
    for table in tables:
        for lane in table:
            counts += lane[:size]
    seen = np.flatnonzero(counts != 0)          # (bools: 6x numpy's int64 nonzero)

    def clear(table: np.ndarray) -> None:
        # counts are never negative: none outside the band of codes seen; one contiguous
        # fill of it (19 us for an F16 weight's band) against 340 us indexing its 23 K codes
        if seen.size:
            table[:, seen[0]:seen[-1] + 1] = 0
    counters.give_back(tables, clear)
    # the codes that occur only: a small tensor uses a few of the 65,536
    return from_value_counts(t, code_values64(t.layout, byteorder)[seen], counts[seen].astype(np.int64), bins)


def from_value_counts(t: "TensorInfo", values: np.ndarray, counts: np.ndarray, bins: int) -> dict[str, Any]:
    """Every statistic, exactly, from how often each value occurs."""
    nan = int(counts[np.isnan(values)].sum())
    inf = int(counts[np.isinf(values)].sum())
    keep = np.isfinite(values) & (counts > 0)
    v, c = values[keep], counts[keep]
    n = int(c.sum())
    if not n:
        return result(t, 0, nan, inf, 0, 0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(0), np.zeros(bins, np.int64), None)
    mean = weighted_sum(v, c) / n
    m2 = weighted_sum((v - mean) ** 2, c)
    lo, hi = float(v.min()), float(v.max())
    _, _, edges = hist_edges(lo, hi, bins)
    b = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, bins - 1)
    hist = np.bincount(b, weights=c, minlength=bins).astype(np.int64)
    return result(t, n, nan, inf, int(c[v == 0].sum()), lo, hi, mean, m2, weighted_sum(np.abs(v), c),
                   edges, hist, None)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.uint8)
_SIGNS = np.array([-1.0, 1.0])


def by_bits(t: "TensorInfo", lay: Layout, byteorder: str, bins: int, ch: Chunks) -> dict[str, Any]:
    """BIT1's sign bits: every value is -1 or +1, so counting the set bits of each row
    (its first ``block_elems`` bits; the row padding is not read) gives every statistic
    exactly, with no value decoded (ggscope.quant.bit1 for the bit order)."""
    n = lay.block_elems
    full, rest = divmod(n, 8)
    mask = np.uint8((1 << rest) - 1)

    def work(i: int) -> int:
        ones = 0
        for rows in ch.windows(i):
            if byteorder == "big":               # u64 words stored most significant byte first
                rows = rows.reshape(rows.shape[0], -1, 8)[:, :, ::-1].reshape(rows.shape[0], -1)
            ones += int(_POPCOUNT[rows[:, :full]].sum(dtype=np.int64))
            if rest:
                ones += int(_POPCOUNT[rows[:, full] & mask].sum(dtype=np.int64))
        return ones

    ones = sum(ch.run(work, 0))
    return from_value_counts(t, _SIGNS, np.array([t.n_elements - ones, ones], np.int64), bins)
