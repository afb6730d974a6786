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
    counts = counters.lend(size, narrow)
    for table in tables:
        for lane in table:
            counts += lane[:size]
    seen = np.flatnonzero(counts != 0)          # (bools: 6x numpy's int64 nonzero)

    def clear(table: np.ndarray) -> None:
        # counts are never negative: none outside the band of codes seen; one contiguous
        # fill of it (19 us for an F16 weight's band) against 340 us indexing its 23 K codes
        if seen.size:
            table[..., seen[0]:seen[-1] + 1] = 0
    seen_counts = counts[seen].astype(np.int64)
    counters.give_back([*tables, counts], clear)
    # the codes that occur only: a small tensor uses a few of the 65,536
    return from_value_counts(t, code_values64(t.layout, byteorder)[seen], seen_counts, bins)


SCRATCH = 1 << 16       # values up to this many are summed in lent buffers (a code table's)
SCRATCH_MIN = 1 << 12   # fewer: fresh arrays of under 32 KiB, which the heap keeps


def from_value_counts(t: "TensorInfo", values: np.ndarray, counts: np.ndarray, bins: int) -> dict[str, Any]:
    """Every statistic, exactly, from how often each value occurs (``values`` float64,
    ``counts`` integers).

    The finite values, their counts and the products summed live in buffers lent by
    ``ggscope.stats.counters`` (``SCRATCH_MIN`` to ``SCRATCH`` values), not in a dozen fresh arrays
    per call: freed at the top of the heap, those were given back to the system and
    faulted in again by the next tensor (about 290 page faults, 0.8 ms of an F16 weight
    of 23 K distinct codes).  Each operation is the one it replaces, into a buffer
    (``np.sum(np.multiply(v, c, out=w))`` is ``weighted_sum(v, c)``), so the results
    are the same to the bit."""
    nan = int(counts[np.isnan(values)].sum())
    inf = int(counts[np.isinf(values)].sum())
    keep = np.isfinite(values) & (counts > 0)
    k = int(np.count_nonzero(keep))
    if not k:
        return result(t, 0, nan, inf, 0, 0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(0), np.zeros(bins, np.int64), None)
    lent = SCRATCH_MIN <= k <= SCRATCH
    bufs = ([counters.lend(SCRATCH, np.float64), counters.lend(SCRATCH, np.int64), counters.lend(SCRATCH, np.float64)]
            if lent else [np.empty(k, np.float64), np.empty(k, np.int64), np.empty(k, np.float64)])
    try:
        v, c, w = bufs[0][:k], bufs[1][:k], bufs[2][:k]
        if k == values.size:                # (all kept, the rule: compress faults in its temporaries)
            np.copyto(v, values)
            np.copyto(c, counts)
        else:
            np.compress(keep, values, out=v)
            np.compress(keep, counts, out=c)
        n = int(c.sum())
        mean = float(np.sum(np.multiply(v, c, out=w))) / n                  # weighted_sum(v, c) / n
        m2 = float(np.sum(np.multiply(np.square(np.subtract(v, mean, out=w), out=w), c, out=w)))
        abs_sum = float(np.sum(np.multiply(np.abs(v, out=w), c, out=w)))    # weighted_sum(|v|, c)
        lo, hi = float(v.min()), float(v.max())
        _, _, edges = hist_edges(lo, hi, bins)
        b = np.searchsorted(edges, v, side="right")
        b -= 1
        np.clip(b, 0, bins - 1, out=b)
        np.copyto(w, c)                     # the float64 weights bincount would convert c to
        hist = np.bincount(b, weights=w, minlength=bins).astype(np.int64)
        zeros = int(c[v == 0].sum())
        return result(t, n, nan, inf, zeros, lo, hi, mean, m2, abs_sum, edges, hist, None)
    finally:
        if lent:
            def clear(buf: np.ndarray) -> None:
                buf[:k] = 0
            counters.give_back(bufs, clear)


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
