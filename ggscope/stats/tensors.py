"""Streaming statistics of one tensor: what ``ggscope stats``, the TUI and ``--deep`` read.

Why: a tensor can be larger than memory and a broken one (NaN/Inf values, zero or
non-finite block scales) is what people look for, so the statistics are computed over
bounded chunks of whole blocks, on both cores, and non-finite values are counted instead
of poisoning the moments.  Three routes, all exact about counts, min and max:

* *Codes* (F16, BF16, I8, I16: one element of at most 16 bits per block): the file's
  codes are counted (``kernels.count_codes``) and every statistic is read off the table
  of at most 65,536 (code, count) pairs, with the values from the one dequantizer of
  the layout.  One pass, no decoding; the histogram is ``numpy.histogram``'s exactly.
* *Fused* (every block layout, chunks whose values are all finite): ``ggscope.stats.fused``
  decodes each piece of blocks into an L1-sized buffer and consumes it at once -- pass
  one min, max and sum, pass two bins and centred moments; nothing decoded is stored.
  For Q4_0, Q8_0, Q4_K, Q6_K and IQ4_XS pass one reads the range off the block scales
  instead (``ggscope.stats.scale_range``) and has no sum: pass two then centres on the middle
  of the range and runs once more around the mean if that middle lies more than a
  standard deviation from it.
* *Decoded* (one-element layouts above 16 bits, and chunks with a NaN/Inf value): pass one
  decodes each chunk with the numpy codecs and takes its min, max and sum; pass two
  bins and centres it (``kernels.bin_pairs``, ``kernels.moments``).  Pass two reuses
  the decoded chunks when the whole tensor fits ``CACHE_BYTES`` of float32 and decodes
  again otherwise, so memory stays bounded on any tensor.

Until a process has measured ``JIT_MIN_ELEMS`` elements, and while numba is not loaded,
the codes and decoded routes run on ``ggscope.stats.kernels_numpy`` (same results) instead of
the compiled kernels: a one-shot command on a small tensor does not pay numba's import,
initialisation and, on a fresh install, compilation.

Contract of ``tensor_stats(t, *, bins=64, chunk_elems=None, threads=2, progress=None,
cancel=None)`` -> ``dict`` (``chunk_elems`` None: 4 Mi elements where nothing is decoded
into float32 buffers, else 1 Mi):

* ``count`` (all elements), ``finite``, ``nan``, ``inf`` (both signs), ``zeros``
  (``== 0``, either sign); ``min``, ``max``, ``mean``, ``std`` (population, ddof=0),
  ``abs_mean`` over the finite elements only (``None`` when there are none).
* ``histogram``: ``{"edges": [bins + 1 floats], "counts": [bins ints]}`` over the
  finite elements, equal-width bins spanning ``[min, max]`` (the last bin closed, as
  ``numpy.histogram``; ``min == max`` widens the range by 0.5 each side).  On the
  decoded route bin indices are computed in float32, so a value within a float32
  rounding of an inner edge may land in the neighbouring bin compared with
  ``numpy.histogram``'s float64 edges; on the codes route the counts are numpy's.
* ``block_scales`` (quantized layouts with an f16/f32 ``d`` field, else ``None``):
  ``{"field": "d", "count", "min", "max", "mean", "zeros", "nonfinite"}`` read from the
  raw blocks, no dequantization.
* ``type``, ``layout``, ``name``, ``shape``.
* Moments: float32 sums over pieces of 2,048 values, merged in float64 around one
  centre; the result matches numpy's float64 ``mean``/``std`` of the dequantized array
  to ~1e-6 relative.
* ``progress(done, total)`` is called from the calling thread after each chunk;
  ``total`` is ``count`` on the codes route and ``2 * count`` on the others (a
  re-centred pass two counts its second half again).
  ``cancel()`` returning true stops the work before the next chunk and raises
  ``StatsCancelled``.
* Errors: ``ValueError`` (truncated data, sizes) and ``NotImplementedError`` (a layout
  without a decoder) from ``ggscope.quant``; invalid ``bins``/``chunk_elems`` raise
  ``ValueError``.
"""
from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.facts.ggml_types import Layout, tensor_layout
from ggscope.quant import code_values, decode_into, dequantizer

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor   # imported where a pool starts (5 ms)

    from ggscope.model.modelfile import TensorInfo

__all__ = ["tensor_stats", "StatsCancelled", "DEFAULT_BINS", "DEFAULT_CHUNK_ELEMS",
           "block_scale_stats", "CACHE_BYTES"]

DEFAULT_BINS = 64
DEFAULT_CHUNK_ELEMS = 1 << 20       # 4 MiB of float32 per chunk and thread
# Routes that decode nothing into float32 buffers (the C kernels' fused layouts, codes,
# bits) take chunks 4x larger: their per-chunk Python work, serialised on the GIL, was a
# tenth of a two-thread Q4_K pass at 1 Mi elements (benchmarks/stats_vs_ggml.py)
UNBUFFERED_CHUNK_ELEMS = 1 << 22
STREAM_BYTES = 256 << 20            # larger tensors are read with pread instead of through the map
CACHE_BYTES = 128 << 20             # decoded tensors up to this size are decoded once, not twice
JIT_MIN_ELEMS = 1 << 23             # per process: elements measured without numba before loading it


_numpy_spent = 0                     # elements this process measured on the numpy kernels


def _kernels(n_elements: int) -> Any:
    """The kernels compiled at install time (``ggscope.stats.cstats``) when the build made
    them; else numba's (``ggscope.stats.kernels``), or their numpy twin while numba
    is not loaded and this process has measured fewer than ``JIT_MIN_ELEMS`` elements
    with them: loading numba costs about 0.7 s warm (import, target initialisation) and
    seconds per layout on a fresh cache, which numpy beats on that many elements; past
    that budget a command (TUI, every tensor of a model) gets the compiled speed."""
    global _numpy_spent
    from ggscope.stats import cstats
    if cstats.available():                  # compiled at install time: nothing to load
        return cstats
    if "numba" not in sys.modules and _numpy_spent + n_elements < JIT_MIN_ELEMS:
        _numpy_spent += n_elements
        from ggscope.stats import kernels_numpy
        return kernels_numpy
    from ggscope.stats import kernels
    return kernels


_POOLS: dict[int, "ThreadPoolExecutor"] = {}
_POOLS_LOCK = threading.Lock()


def _pool(threads: int) -> "ThreadPoolExecutor":
    """One pool per thread count for the process: a model's tensors (the TUI, ``stats``
    of every tensor) reuse its threads instead of starting two per tensor."""
    from concurrent.futures import ThreadPoolExecutor
    with _POOLS_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="ggscope-stats")
        return _POOLS[threads]


class StatsCancelled(Exception):
    """Raised by ``tensor_stats`` when its ``cancel`` hook returned true."""


# ---------------------------------------------------------------- reading the chunks

class _Chunks:
    """Chunk ``i`` of a tensor's raw blocks, from the map or (large tensors) by pread,
    and the thread pool that runs work over all chunks with progress and cancel."""

    def __init__(self, t: "TensorInfo", lay: Layout, chunk_elems: int, threads: int,
                 progress: Callable[[int, int], None] | None, cancel: Callable[[], bool] | None,
                 passes: int) -> None:
        self.t, self.lay = t, lay
        self.n_blocks = t.n_elements // lay.block_elems
        need = self.n_blocks * lay.block_bytes
        src = t.file.source if t.file is not None else None
        # a large tensor of a remote file is fetched chunk by chunk in ``raw`` (and given back)
        self.src = src if src is not None and src.remote and need > STREAM_BYTES else None
        raw = (src.array[max(0, t.offset):max(0, min(t.offset + t.nbytes, src.size))]   # not fetched yet
               if self.src is not None else t.raw())
        if raw.size != need:
            raise ValueError(f"tensor {t.name!r} ({t.layout}): needs {need} bytes of data, "
                             f"the file holds {raw.size}")
        self.blocks = np.asarray(raw).reshape(self.n_blocks, lay.block_bytes)
        path = getattr(t.file, "path", None)
        self.fd = os.open(path, os.O_RDONLY) if need > STREAM_BYTES and path and os.path.isfile(path) else None
        self.step = max(1, chunk_elems // lay.block_elems)
        self.starts = list(range(0, self.n_blocks, self.step))
        self.threads = max(1, int(threads))
        self.progress, self.cancel = progress, cancel
        self.total = passes * t.n_elements
        self.local = threading.local()
        self.pool: ThreadPoolExecutor | None = None
        self.kernels = _kernels(t.n_elements)
        self.native = self.kernels.__name__ == "ggscope.stats.cstats"     # the kernels compiled at install

    def fused(self) -> Any:
        """The fused decode + statistics passes of the kernels in use (``ggscope.stats.cstats``
        or numba's ``ggscope.stats.fused``), or None on the numpy kernels."""
        if self.kernels.__name__.endswith("kernels_numpy"):
            return None
        if self.native:
            return self.kernels
        from ggscope.stats import fused
        return fused

    def close(self) -> None:
        self.pool = None                        # shared: it outlives this tensor
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def scratch(self, key: str, make: Callable[[], Any]) -> Any:
        """A per-thread object (buffers, count tables) made once per thread."""
        d = self.local.__dict__
        if key not in d:
            d[key] = make()
        return d[key]

    def check(self) -> None:
        if self.cancel is not None and self.cancel():
            raise StatsCancelled(f"statistics of {self.t.name!r} cancelled")

    def raw(self, i: int) -> np.ndarray:
        part = self.blocks[i:i + self.step]
        if self.src is not None:
            start = self.t.offset + i * self.lay.block_bytes
            self.src.ensure(start, start + part.nbytes)
            buf = self.scratch("rbuf", lambda: np.empty((min(self.step, self.n_blocks), self.lay.block_bytes),
                                                        np.uint8))[:part.shape[0]]
            np.copyto(buf, part)
            self.src.release(start, start + part.nbytes)
            return buf
        if self.fd is None:
            return part
        buf = self.scratch("rbuf", lambda: np.empty((min(self.step, self.n_blocks), self.lay.block_bytes), np.uint8))
        part = buf[:part.shape[0]]          # read, so mapped pages do not pile up in RSS
        got = os.preadv(self.fd, [part], self.t.offset + i * self.lay.block_bytes)
        if got != part.nbytes:
            raise ValueError(f"tensor {self.t.name!r}: short read at block {i}")
        return part

    def run(self, work: Callable[[int], Any], done0: int) -> list[Any]:
        """``[work(i) for i in starts]`` on ``threads`` threads, in order."""
        done = done0

        def advance(i: int) -> None:
            nonlocal done
            done += min(self.step, self.n_blocks - i) * self.lay.block_elems
            if self.progress is not None:
                self.progress(done, self.total)

        def guarded(i: int) -> Any:
            self.check()
            return work(i)

        results: list[Any] = []
        if self.threads == 1 or len(self.starts) == 1:
            for i in self.starts:
                results.append(guarded(i))
                advance(i)
            return results
        from concurrent.futures import wait
        if self.pool is None:                   # one pool for both passes
            self.pool = _pool(self.threads)
        futures = []
        try:
            for i in self.starts:
                futures.append((i, self.pool.submit(guarded, i)))
            for i, fut in futures:
                results.append(fut.result())
                advance(i)
        except BaseException:
            for _, fut in futures:
                fut.cancel()
            wait([f for _, f in futures])       # no worker outlives the call
            raise
        return results


# ---------------------------------------------------------------- block scales

def _scale_dtype(lay: Layout, byteorder: str) -> tuple[int, np.dtype] | None:
    if lay.scale is None or lay.block_elems == 1:
        return None
    at, kind = lay.scale
    return at, np.dtype(("<" if byteorder == "little" else ">") + ("f2" if kind == "f16" else "f4"))


def _field_codes(blocks: np.ndarray, off: int) -> np.ndarray | None:
    """The f16 field at byte ``off`` of every block as a strided uint16 view (None if unaligned)."""
    v = blocks[:, off:off + 2].view(np.uint16)[:, 0]
    return v if v.flags.aligned else None


def _value_summary(values: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """count/min/max/mean/zeros/nonfinite of a multiset given as (value, count) pairs."""
    count = int(counts.sum())
    good = np.isfinite(values) & (counts > 0)
    n = int(counts[good].sum())
    v, c = values[good], counts[good]
    return {"field": "d", "count": count,
            "min": float(v.min()) if n else None, "max": float(v.max()) if n else None,
            "mean": float(np.dot(v, c) / n) if n else None,
            "zeros": int(c[v == 0].sum()), "nonfinite": count - n}


def _scale_part(field: tuple[int, np.dtype], blocks: np.ndarray) -> np.ndarray:
    """The ``d`` fields of ``blocks`` as float64 (f32 scales, or unaligned f16 ones)."""
    off, dt = field
    return blocks[:, off:off + dt.itemsize].copy().view(dt).reshape(-1).astype(np.float64)


def _scale_summary_values(d: np.ndarray) -> dict[str, Any]:
    vals, counts = np.unique(d, return_counts=True)     # NaNs stay separate: counted as nonfinite
    return _value_summary(vals, counts)


def block_scale_stats(lay: Layout, raw: np.ndarray, byteorder: str = "little") -> dict[str, Any] | None:
    """Distribution of the per-block scale ``d`` read from the raw blocks, or None when
    ``lay`` has no plain f16/f32 ``d`` field (unquantized and packed-scale layouts)."""
    field = _scale_dtype(lay, byteorder)
    if field is None:
        return None
    n_blocks = raw.size // lay.block_bytes
    blocks = np.asarray(raw[:n_blocks * lay.block_bytes]).reshape(n_blocks, lay.block_bytes)
    return _scale_summary_values(_scale_part(field, blocks))


class _Scales:
    """Per-chunk collection of a layout's ``d`` fields: f16 codes counted, f32 kept."""

    def __init__(self, lay: Layout, byteorder: str, chunks: _Chunks) -> None:
        self.field = _scale_dtype(lay, byteorder)
        self.byteorder = byteorder
        self.chunks = chunks
        self.tables: list[np.ndarray] = []
        self.floats: list[np.ndarray] = []

    def add(self, blocks: np.ndarray) -> None:
        if self.field is None:
            return
        off, dt = self.field
        codes = _field_codes(blocks, off) if dt.itemsize == 2 else None
        if codes is None:
            self.floats.append(_scale_part(self.field, blocks))
            return
        table = self._table()
        if self.chunks.native:                                # counted in place, no temporary
            self.chunks.kernels.count_codes(codes, table.reshape(1, -1))
        else:   # one code per block: numpy's bincount is cheap here and needs no compiled kernel
            table += np.bincount(codes, minlength=1 << 16)

    def table_for(self, blocks: np.ndarray) -> tuple[np.ndarray, int] | None:
        """(this thread's code table, field offset) for a fused C range pass that counts
        the f16 scale codes itself; None when the scales are kept some other way."""
        if self.field is None or self.field[1].itemsize != 2 or not self.chunks.native:
            return None
        if _field_codes(blocks, self.field[0]) is None:        # unaligned: counted by ``add``
            return None
        return self._table(), self.field[0]

    def _table(self) -> np.ndarray:
        """This thread's f16 scale-code counters (made once per thread, summed at the end)."""
        def make() -> np.ndarray:
            table = np.zeros(1 << 16, np.int64)
            self.tables.append(table)
            return table
        return self.chunks.scratch("scale_table", make)

    def summary(self) -> dict[str, Any] | None:
        if self.field is None or (not self.tables and not self.floats):
            return None
        vals: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        if self.tables:
            total = self.tables[0] if len(self.tables) == 1 else np.sum(self.tables, axis=0)
            seen = np.flatnonzero(total)            # a tensor uses few of the 65,536 codes
            vals.append(_code_values("F16", self.byteorder)[seen])
            counts.append(total[seen])
        if self.floats:
            v, c = np.unique(np.concatenate(self.floats), return_counts=True)
            vals.append(v)
            counts.append(c)
        return _value_summary(np.concatenate(vals), np.concatenate(counts))


# ---------------------------------------------------------------- the routes

def _edges(lo: float, hi: float, bins: int) -> tuple[float, float, np.ndarray]:
    h_lo, h_hi = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    return h_lo, h_hi, np.linspace(h_lo, h_hi, bins + 1)


def _result(t: "TensorInfo", n: int, nan: int, inf: int, zeros: int, lo: float, hi: float,
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
                      "counts": [int(c) for c in counts]},
        "block_scales": scales,
    }


@lru_cache(maxsize=None)
def _code_values(layout: str, byteorder: str) -> np.ndarray:
    """float64 value of every code of a one-element layout, keyed as read natively."""
    with np.errstate(invalid="ignore"):         # the NaN codes
        return code_values(layout, byteorder).astype(np.float64)


CODE_LANES = 4      # interleaved sub-tables of ``kernels.count_codes``


def code_table(size: int, dtype: Any) -> np.ndarray:
    """Zeroed counters for ``count_codes``: ``CODE_LANES`` interleaved tables of at least
    ``size`` (contiguous; the counts of codes below ``size`` are ``table.sum(0)[:size]``).

    The tables are 64 bytes more than a power of two apart: at a power-of-two distance the
    lanes' counters of one code share their low 12 address bits, and the CPU's
    store-to-load check (4K aliasing) serialises them again on constant data."""
    return np.zeros((CODE_LANES, size + 64 // np.dtype(dtype).itemsize), dtype)


def _by_codes(t: "TensorInfo", lay: Layout, byteorder: str, bins: int, ch: _Chunks) -> dict[str, Any]:
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
        codes = ch.raw(i).reshape(-1).view(dtype)
        if not codes.flags.aligned:
            codes = codes.copy()
        count_codes(codes, ch.scratch("codes", make))

    ch.run(work, 0)
    counts = (np.sum(tables, axis=(0, 1), dtype=np.int64)[:1 << (8 * lay.block_bytes)] if tables
              else np.zeros(1 << (8 * lay.block_bytes), np.int64))
    return _from_value_counts(t, _code_values(t.layout, byteorder), counts, bins)


def _from_value_counts(t: "TensorInfo", values: np.ndarray, counts: np.ndarray, bins: int) -> dict[str, Any]:
    """Every statistic, exactly, from how often each value occurs."""
    nan = int(counts[np.isnan(values)].sum())
    inf = int(counts[np.isinf(values)].sum())
    keep = np.isfinite(values) & (counts > 0)
    v, c = values[keep], counts[keep]
    n = int(c.sum())
    if not n:
        return _result(t, 0, nan, inf, 0, 0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(0), np.zeros(bins, np.int64), None)
    mean = float(np.dot(v, c)) / n
    m2 = float(np.dot((v - mean) ** 2, c))
    lo, hi = float(v.min()), float(v.max())
    _, _, edges = _edges(lo, hi, bins)
    b = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, bins - 1)
    hist = np.bincount(b, weights=c, minlength=bins).astype(np.int64)
    return _result(t, n, nan, inf, int(c[v == 0].sum()), lo, hi, mean, m2, float(np.dot(np.abs(v), c)),
                   edges, hist, None)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.uint8)
_SIGNS = np.array([-1.0, 1.0])


def _by_bits(t: "TensorInfo", lay: Layout, byteorder: str, bins: int, ch: _Chunks) -> dict[str, Any]:
    """BIT1's sign bits: every value is -1 or +1, so counting the set bits of each row
    (its first ``block_elems`` bits; the row padding is not read) gives every statistic
    exactly, with no value decoded (ggscope.quant.bit1 for the bit order)."""
    n = lay.block_elems
    full, rest = divmod(n, 8)
    mask = np.uint8((1 << rest) - 1)

    def work(i: int) -> int:
        rows = ch.raw(i)
        if byteorder == "big":                   # u64 words stored most significant byte first
            rows = rows.reshape(rows.shape[0], -1, 8)[:, :, ::-1].reshape(rows.shape[0], -1)
        ones = int(_POPCOUNT[rows[:, :full]].sum(dtype=np.int64))
        if rest:
            ones += int(_POPCOUNT[rows[:, full] & mask].sum(dtype=np.int64))
        return ones

    ones = sum(ch.run(work, 0))
    return _from_value_counts(t, _SIGNS, np.array([t.n_elements - ones, ones], np.int64), bins)


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

    @property
    def dirty(self) -> bool:
        return bool(self.nan or self.inf)


def _first_pass(x: np.ndarray, ones: np.ndarray | None) -> _Pass1:
    lo, hi = float(x.min()), float(x.max())
    if math.isfinite(lo) and math.isfinite(hi):
        total = np.dot(x, ones[:x.size]) if ones is not None else x.sum(dtype=np.float64)
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


def _by_decoding(t: "TensorInfo", lay: Layout, byteorder: str, bins: int, ch: _Chunks) -> dict[str, Any]:
    PIECE, bin_pairs, moments = ch.kernels.PIECE, ch.kernels.bin_pairs, ch.kernels.moments
    rows = min(ch.step, ch.n_blocks)
    # F32 in the machine's order is read in place: nothing to decode, nothing to cache
    mapped = ch.fd is None and ch.src is None          # chunks are views of the map, not a reused buffer
    direct = t.layout == "F32" and byteorder == sys.byteorder and mapped and ch.blocks.flags.aligned
    scales = _Scales(lay, byteorder, ch)
    big = byteorder == "big"
    fused = ch.fused()
    fusable = fused is not None and t.layout in fused.LAYOUTS
    # the numpy route decodes once into this cache; the fused route decodes in place and
    # needs none (a 128 MiB allocation per call, and its unmapping stalls both threads)
    cache = (np.empty((ch.n_blocks, lay.block_elems), np.float32)
             if not fusable and not direct and ch.fd is None and t.n_elements * 4 <= CACHE_BYTES else None)

    def decode(i: int, keep_scales: bool) -> np.ndarray:
        part = ch.raw(i)
        if keep_scales:
            scales.add(part)
        if direct:
            return part.reshape(-1).view(np.float32)
        if cache is not None:
            out = cache[i:i + part.shape[0]]
        else:
            out = ch.scratch("out", lambda: np.empty((rows, lay.block_elems), np.float32))[:part.shape[0]]
        with np.errstate(all="ignore"):          # damaged scales decode to NaN/Inf: counted, not warned
            decode_into(t.layout, part, out, byteorder)
        return out.reshape(-1)

    # ones for BLAS sums on the numpy route; a fused layout's chunk only falls back to
    # it with non-finite values, which are summed without them
    ones = None if fusable else np.ones(rows * lay.block_elems, np.float32)

    def first(i: int) -> _Pass1:
        if fusable:
            part = ch.raw(i)
            table = scales.table_for(part)          # the C pass counts the scale codes as it reads them
            r = fused.range_pass(t.layout, part, big, *table) if table else fused.range_pass(t.layout, part, big)
            if r is not None:
                if not table:
                    scales.add(part)
                return _Pass1(part.shape[0] * lay.block_elems, r[2], r[0], r[1], 0, 0, fused=True)
        return _first_pass(decode(i, True), ones)

    firsts: list[_Pass1] = ch.run(first, 0)
    n = sum(p.n for p in firsts)
    nan = sum(p.nan for p in firsts)
    inf = sum(p.inf for p in firsts)
    if not n:
        return _result(t, 0, nan, inf, 0, 0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(0), np.zeros(bins, np.int64),
                       scales.summary())
    lo = min(p.lo for p in firsts)
    hi = max(p.hi for p in firsts)
    # The centre only conditions the float32 sums: the mean when pass one summed, else
    # (range read from the block scales, ``fused.range_pass``) the middle of the range,
    # and pass two runs again around the mean if that middle turns out more than a
    # standard deviation away from it (a skewed tensor).
    total = sum(p.total for p in firsts)
    estimated = math.isnan(total)
    centre = np.float32((lo + hi) / 2 if estimated else total / n)
    h_lo, h_hi, edges = _edges(lo, hi, bins)
    scale32 = np.float32(bins / (h_hi - h_lo))
    # float32 arithmetic of the bin index must not overflow (hostile ranges near +-3.4e38)
    wide = not (abs(h_lo) + abs(h_hi) < 0.5 * float(np.finfo(np.float32).max) and scale32 > 0
                and math.isfinite(float(scale32)))
    pairs = bins <= 256 and not wide         # else (more bins, hostile range) bin in float64
    tables: list[np.ndarray] = []

    def make() -> tuple[np.ndarray, np.ndarray]:
        table = np.zeros(1 << 16 if pairs else bins, np.int64)
        tables.append(table)
        return table, np.empty(PIECE, np.uint8)

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
        centre, tables = np.float32(mean), []
    if pairs:       # bin indices stay below ``bins``: only that corner of each table counts
        square = np.zeros((bins, bins), np.int64)
        for table in tables:
            square += table.reshape(256, 256)[:bins, :bins]
        counts = square.sum(axis=0) + square.sum(axis=1)
        counts[0] -= sum(s[4] for s in seconds)
    else:
        counts = np.sum(tables, axis=0) if tables else np.zeros(bins, np.int64)
    return _result(t, n, nan, inf, sum(s[3] for s in seconds), lo, hi, mean, m2,
                   sum(s[2] for s in seconds), edges, counts, scales.summary())


def _code_route(lay: Layout) -> bool:
    return lay.block_elems == 1 and lay.block_bytes <= 2 and lay.codec is not None



def tensor_stats(t: "TensorInfo", *, bins: int = DEFAULT_BINS, chunk_elems: int | None = None,
                 threads: int = 2, progress: Callable[[int, int], None] | None = None,
                 cancel: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Statistics of every element of ``t`` (see the module docstring for the keys)."""
    if not isinstance(bins, int) or not 1 <= bins <= 1 << 20:
        raise ValueError(f"bins must be an integer in 1..{1 << 20}, not {bins!r}")
    if chunk_elems is not None and (not isinstance(chunk_elems, int) or chunk_elems < 1):
        raise ValueError(f"chunk_elems must be a positive integer, not {chunk_elems!r}")
    lay = tensor_layout(t.layout, int(t.shape[0]) if len(t.shape) else 1)
    if lay is None:
        raise ValueError(f"tensor {t.name!r}: unknown block layout {t.layout!r}")
    byteorder = getattr(t.file, "endian", "little") if t.file is not None else "little"
    if t.n_elements % lay.block_elems:
        raise ValueError(f"tensor {t.name!r}: {t.n_elements} elements is not a whole number of "
                         f"{lay.name} blocks of {lay.block_elems}")
    codes = _code_route(lay)
    bits = lay.codec == "bit1"
    if lay.codec is None:
        dequantizer(t.layout)               # raises NotImplementedError naming the layout
    if chunk_elems is None:
        from ggscope.stats import cstats
        unbuffered = codes or bits or (cstats.available() and t.layout in cstats.LAYOUTS)
        chunk_elems = UNBUFFERED_CHUNK_ELEMS if unbuffered else DEFAULT_CHUNK_ELEMS
    ch = _Chunks(t, lay, chunk_elems, threads, progress, cancel, 1 if codes or bits else 2)
    try:
        ch.check()
        route = _by_bits if bits else _by_codes if codes else _by_decoding
        return route(t, lay, byteorder, bins, ch)
    finally:
        ch.close()
