"""The statistics of a tensor whose values must be decoded: two passes over its chunks.

Why: for block layouts (and one-element ones above 16 bits) the values exist only after
decoding.  Pass one takes each chunk's min, max and sum (the fused kernels decode a
piece of blocks into an L1 buffer and consume it at once; for a few layouts the range
comes from the block scales and there is no sum); pass two bins every value against
the edges pass one fixed and sums centred moments.  A chunk with NaN/Inf values goes
through the numpy codecs, which count them.  Pass two reuses decoded chunks when the
whole tensor fits the cache budget and decodes again otherwise: memory stays bounded;
without that cache it reads the raw blocks pass one kept (``Chunks.keep``) when they fit
theirs, and reads the file again otherwise.

Contract: ``by_decoding(t, lay, byteorder, bins, chunks)`` -> the ``tensor_stats``
mapping (``ggscope.stats.tensors`` documents it).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.facts.ggml_types import Layout
from ggscope.quant import decode_into
from ggscope.stats import counters
from ggscope.stats.counted import hist_edges, result
from ggscope.stats.kernels_numpy import PIECE, piece_sums
from ggscope.stats.scales import Scales

if TYPE_CHECKING:
    from ggscope.model.modelfile import TensorInfo
    from ggscope.stats.chunks import Chunks

__all__ = ["by_decoding", "SAMPLE_BLOCKS"]

SAMPLE_BLOCKS = 16              # blocks per chunk whose mean centres pass two when pass one has no sum


@dataclass(frozen=True)
class _Pass1:
    """One chunk after pass one: its finite count, float64 sum, range, and the NaN/Inf
    counts (``dirty`` when it had any: pass two drops them first)."""
    n: int
    total: float
    lo: float
    hi: float
    nan: int
    inf: int
    fused: bool = False         # measured by ``ggscope.stats.fused``: nothing decoded or cached
    sample: float = 0.0         # without a sum: the sum of a few blocks' values, spread over the chunk
    sampled: int = 0            # ... and how many values that is

    @property
    def dirty(self) -> bool:
        return bool(self.nan or self.inf)


def _first_pass(x: np.ndarray) -> _Pass1:
    lo, hi = float(x.min()), float(x.max())
    if math.isfinite(lo) and math.isfinite(hi):
        total = piece_sums(x)               # not np.dot: OpenBLAS threads spin after it (weighted_sum)
        return _Pass1(x.size, float(total), lo, hi, 0, 0)
    good = np.isfinite(x)
    nan = int(np.count_nonzero(np.isnan(x)))
    inf = x.size - int(np.count_nonzero(good)) - nan
    y = x[good]
    if not y.size:
        return _Pass1(0, 0.0, math.inf, -math.inf, nan, inf)
    return _Pass1(y.size, float(y.sum(dtype=np.float64)), float(y.min()), float(y.max()), nan, inf)


def _histogram_wide(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin counts when the range overflows float32 arithmetic (hostile data): float64."""
    bins = edges.size - 1
    b = np.clip(np.searchsorted(edges, x.astype(np.float64), side="right") - 1, 0, bins - 1)
    return np.bincount(b, minlength=bins)


def by_decoding(t: "TensorInfo", lay: Layout, byteorder: str, bins: int, ch: Chunks) -> dict[str, Any]:
    bin_pairs, moments = ch.kernels.bin_pairs, ch.kernels.moments
    rows = min(ch.step, ch.n_blocks)
    # F32 in the machine's order is read in place: nothing to decode, nothing to cache
    direct = t.layout == "F32" and byteorder == sys.byteorder
    scales = Scales(lay, byteorder, ch)
    big = byteorder == "big"
    fused = ch.fused()
    fusable = fused is not None and t.layout in fused.FUSED_LAYOUTS
    # the numpy route decodes once into this cache; the fused route decodes in place and
    # needs none (a 128 MiB allocation per call, and its unmapping stalls both threads)
    cache = (np.empty((ch.n_blocks, lay.block_elems), np.float32)
             if not fusable and not direct and t.n_elements * 4 <= ch.cache_bytes else None)
    if cache is None:           # pass two reads the raw blocks again: read them once if they fit
        ch.keep()

    def decode(i: int, keep_scales: bool) -> np.ndarray:
        part = ch.raw(i)
        if keep_scales:
            scales.add(part)
        if direct and part.flags.aligned:            # read as it is: nothing to decode
            return part.reshape(-1).view(np.float32)
        if cache is not None:
            out = cache[i:i + part.shape[0]]
        else:
            out = ch.scratch("out", lambda: np.empty((rows, lay.block_elems), np.float32))[:part.shape[0]]
        with np.errstate(all="ignore"):          # damaged scales decode to NaN/Inf: counted, not warned
            decode_into(t.layout, part, out, byteorder)
        return out.reshape(-1)

    def first(i: int) -> _Pass1:
        if fusable:
            part = ch.raw(i)
            table = scales.table_for(part)          # the C pass counts the scale codes as it reads them
            r = fused.range_pass(t.layout, part, big, *table) if table else fused.range_pass(t.layout, part, big)
            if r is not None:
                if not table:
                    scales.add(part)
                sample, sampled = sample_of(part) if math.isnan(r[2]) else (0.0, 0)
                return _Pass1(part.shape[0] * lay.block_elems, r[2], r[0], r[1], 0, 0, fused=True,
                              sample=sample, sampled=sampled)
        return _first_pass(decode(i, True))

    def sample_of(part: np.ndarray) -> tuple[float, int]:
        """The sum of ``SAMPLE_BLOCKS`` blocks spread evenly over the chunk, decoded as the
        numpy codec decodes them (all finite: the range pass accepted the chunk)."""
        take = np.ascontiguousarray(part[::max(1, part.shape[0] // SAMPLE_BLOCKS)][:SAMPLE_BLOCKS])
        out = np.empty((take.shape[0], lay.block_elems), np.float32)
        if ch.native:
            fused.decode(t.layout, take, big, out)
        else:
            decode_into(t.layout, take, out, byteorder)
        return float(out.sum(dtype=np.float64)), out.size

    firsts: list[_Pass1] = ch.run(first, 0)
    n = sum(p.n for p in firsts)
    nan = sum(p.nan for p in firsts)
    inf = sum(p.inf for p in firsts)
    if not n:
        return result(t, 0, nan, inf, 0, 0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(0), np.zeros(bins, np.int64),
                       scales.summary())
    lo = min(p.lo for p in firsts)
    hi = max(p.hi for p in firsts)
    # The centre only conditions the float32 sums: the mean when pass one summed, else
    # (range read from the block scales, ``fused.range_pass``) the mean of the sampled
    # blocks -- the middle of the range was more than a standard deviation from the mean
    # in 48 of gemma-3-270m's 127 quantized tensors, and each of those ran pass two twice
    # -- and pass two runs again around the mean if the estimate turns out more than a
    # standard deviation away from it.
    total = sum(p.total for p in firsts)
    estimated = math.isnan(total)
    sampled = sum(p.sampled for p in firsts)
    guess = (min(max(math.fsum(p.sample for p in firsts) / sampled, lo), hi) if sampled
             else (lo + hi) / 2)
    centre = np.float32(guess if estimated else total / n)
    h_lo, h_hi, edges = hist_edges(lo, hi, bins)
    scale32 = np.float32(bins / (h_hi - h_lo))
    # float32 arithmetic of the bin index must not overflow (hostile ranges near +-3.4e38)
    wide = not (abs(h_lo) + abs(h_hi) < 0.5 * float(np.finfo(np.float32).max) and scale32 > 0
                and math.isfinite(float(scale32)))
    pairs = bins <= 256 and not wide         # else (more bins, hostile range) bin in float64
    tables: list[np.ndarray] = []

    def make() -> tuple[np.ndarray, np.ndarray]:
        table = counters.lend(1 << 16, np.int64) if pairs else np.zeros(bins, np.int64)
        tables.append(table)
        return table, np.empty(PIECE, np.uint8)

    def clear(table: np.ndarray) -> None:       # pair (a, b) counts at a + 256 b, both bins below ``bins``
        table[:bins << 8] = 0

    def second(i: int) -> tuple[float, float, float, int, int]:
        p1 = firsts[i // ch.step]
        table, idx = ch.scratch(f"bins{attempt}", make)
        if p1.fused and pairs:
            s1, s2, sa, z = fused.bin_pass(t.layout, ch.raw(i), big, np.float32(h_lo), scale32, np.int32(bins - 1),
                                     centre, table, idx)
            return s1, s2, sa, int(z), 0
        x = cache[i:i + ch.step].reshape(-1) if cache is not None and not p1.fused else decode(i, False)
        if p1.dirty:
            x = x[np.isfinite(x)]
        if pairs:
            lone = bin_pairs(x, np.float32(h_lo), scale32, np.int32(bins - 1), table, idx)
        else:
            table += _histogram_wide(x, edges)
            lone = 0
        s1, s2, sa, z = moments(x, centre)
        return s1, s2, sa, int(z), int(lone)

    for attempt in range(2):
        seconds = ch.run(second, t.n_elements)
        s1 = sum(s[0] for s in seconds)
        s2 = sum(s[1] for s in seconds)
        r = s1 / n
        mean = float(centre) + r
        m2 = s2 - n * r * r
        if attempt or not estimated or r * r * n <= max(m2, 0.0) or np.float32(mean) == centre:
            break               # (the second run is the last: its tables are the result)
        if pairs:
            counters.give_back(tables, clear)
        centre, tables = np.float32(mean), []
    if pairs:       # bin indices stay below ``bins``: only that corner of each table counts
        square = np.zeros((bins, bins), np.int64)
        for table in tables:
            square += table.reshape(256, 256)[:bins, :bins]
        counts = square.sum(axis=0) + square.sum(axis=1)
        counts[0] -= sum(s[4] for s in seconds)
        counters.give_back(tables, clear)
    else:
        counts = np.sum(tables, axis=0) if tables else np.zeros(bins, np.int64)
    return result(t, n, nan, inf, sum(s[3] for s in seconds), lo, hi, mean, m2,
                   sum(s[2] for s in seconds), edges, counts, scales.summary())
