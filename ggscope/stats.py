"""Streaming statistics of one tensor: what ``ggscope stats``, the TUI and ``--deep`` read.

Why: a tensor can be larger than memory and a broken one (NaN/Inf values, zero or
non-finite block scales) is what people look for, so the statistics are computed over
bounded chunks of whole blocks, on both cores, and non-finite values are counted instead
of poisoning the moments.

Contract of ``tensor_stats(t, *, bins=64, chunk_elems=1<<19, threads=2, progress=None,
cancel=None)`` -> ``dict``:

* ``count`` (all elements), ``finite``, ``nan``, ``inf`` (both signs), ``zeros``
  (``== 0``, either sign); ``min``, ``max``, ``mean``, ``std`` (population, ddof=0),
  ``abs_mean`` over the finite elements only (``None`` when there are none).
* ``histogram``: ``{"edges": [bins + 1 floats], "counts": [bins ints]}`` over the
  finite elements, equal-width bins spanning ``[min, max]`` (the last bin closed, as
  ``numpy.histogram``; ``min == max`` widens the range by 0.5 each side).  Bins are
  known only after the first pass, so the histogram is a *second pass* that decodes
  the chunks again from the map (decoding is cheap next to the statistics; keeping
  decoded chunks would cost memory and page faults).  Bin indices are computed in
  float32, so a value within a float32 rounding of an inner edge may land in the
  neighbouring bin compared with ``numpy.histogram``'s float64 edges.
* ``block_scales`` (quantized layouts with an f16/f32 ``d`` field, else ``None``):
  ``{"field": "d", "count", "min", "max", "mean", "zeros", "nonfinite"}`` read from the
  raw blocks, no dequantization.
* ``type``, ``layout``, ``name``, ``shape``.
* Moments: each chunk's sum and centred sum of squares are taken in float32 (numpy's
  pairwise sum), then merged in float64 with Chan's parallel formula; the result
  matches numpy's float64 ``mean``/``std`` of the dequantized array to ~1e-6 relative.
* ``progress(done, total)`` is called from the calling thread after each chunk;
  ``total`` is ``count``, or ``2 * count`` when a second decode is needed.
  ``cancel()`` returning true stops the work before the next chunk and raises
  ``StatsCancelled``.
* Errors: ``ValueError`` (truncated data, sizes) and ``NotImplementedError`` (a layout
  without a decoder) from ``ggscope.quant``; invalid ``bins``/``chunk_elems`` raise
  ``ValueError``.
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .ggml_types import LAYOUTS, Layout
from .quant import dequantizer

if TYPE_CHECKING:
    from .modelfile import TensorInfo

__all__ = ["tensor_stats", "StatsCancelled", "DEFAULT_BINS", "DEFAULT_CHUNK_ELEMS", 
           "block_scale_stats"]

DEFAULT_BINS = 64
DEFAULT_CHUNK_ELEMS = 1 << 19       # 2 MiB of float32 per chunk and thread
STREAM_BYTES = 256 << 20            # larger tensors are read with pread instead of through the map
_SCALE_FIELD = re.compile(r"(\d+): (f16|f32) d\b")


class StatsCancelled(Exception):
    """Raised by ``tensor_stats`` when its ``cancel`` hook returned true."""


@dataclass(frozen=True)
class _Part:
    """Partial statistics of one chunk (merged in order)."""
    n: int              # finite elements
    mean: float
    m2: float
    lo: float
    hi: float
    abs_sum: float
    zeros: int
    nan: int
    inf: int


def _decode(fn, full: bool, blocks: np.ndarray, out: np.ndarray, byteorder: str) -> np.ndarray:
    if full:
        with np.errstate(all="ignore"):          # damaged scales decode to NaN/Inf: counted, not warned
            fn(blocks, byteorder, out)
    else:
        if byteorder != "little":
            raise NotImplementedError("big-endian blocks are not supported by this dequantizer")
        out[...] = np.asarray(fn(blocks), dtype=np.float32).reshape(out.shape)
    return out.reshape(-1)


def _moments(x: np.ndarray, scratch: np.ndarray) -> _Part:
    n = x.size
    lo, hi = float(x.min()), float(x.max())
    nan = inf = 0
    if not (math.isfinite(lo) and math.isfinite(hi)):       # NaN propagates into min/max
        bad = ~np.isfinite(x)
        nan = int(np.count_nonzero(np.isnan(x)))
        inf = int(np.count_nonzero(bad)) - nan
        x = x[~bad]
        n = x.size
        scratch = scratch[:n]
        lo, hi = (float(x.min()), float(x.max())) if n else (math.inf, -math.inf)
    if n == 0:
        return _Part(0, 0.0, 0.0, lo, hi, 0.0, 0, nan, inf)
    mean = float(x.sum(dtype=np.float32)) / n
    np.abs(x, out=scratch)
    abs_sum = float(scratch.sum(dtype=np.float32))
    zeros = n - int(np.count_nonzero(scratch.view(np.int32)))     # |-0.0| is +0.0: all bits zero
    np.subtract(x, np.float32(mean), out=scratch)
    # the float32 centring leaves a residual mean r; remove its contribution exactly
    r = float(scratch.sum(dtype=np.float32)) / n
    m2 = float(np.dot(scratch, scratch)) - n * r * r
    mean += r
    return _Part(n, mean, max(m2, 0.0), lo, hi, abs_sum, zeros, nan, inf)


def _histogram_indices(x: np.ndarray, lo: float, scale: float, bins: int, scratch: np.ndarray,
                       idx: np.ndarray) -> np.ndarray:
    """Bin counts of the finite values ``x`` (length ``bins``)."""
    x = x[np.isfinite(x)] if not np.isfinite(x.min() + x.max()) else x
    n = x.size
    s = scratch[:n]
    np.subtract(x, np.float32(lo), out=s)
    np.multiply(s, np.float32(scale), out=s)
    np.clip(s, 0, bins - 1, out=s)
    if bins <= 256:
        i8 = idx[:n]
        i8[...] = s
        if n % 2 == 0 and n:
            pairs = np.bincount(i8.view(np.uint16), minlength=65536).reshape(256, 256)
            return (pairs.sum(axis=0) + pairs.sum(axis=1))[:bins]
        return np.bincount(i8, minlength=bins)[:bins]
    return np.bincount(s.astype(np.intp), minlength=bins)[:bins]


def _scale_dtype(lay: Layout, byteorder: str) -> tuple[int, np.dtype] | None:
    m = _SCALE_FIELD.search(lay.fields)
    if m is None or lay.block_elems == 1:
        return None
    kind = "f2" if m.group(2) == "f16" else "f4"
    return int(m.group(1)), np.dtype(("<" if byteorder == "little" else ">") + kind)


def _scale_part(field: tuple[int, np.dtype], blocks: np.ndarray) -> tuple[int, float, float, float, int, int]:
    """(count, min, max, sum, zeros, nonfinite) of the ``d`` fields of ``blocks``."""
    off, dt = field
    d = blocks[:, off:off + dt.itemsize].copy().view(dt).reshape(-1).astype(np.float64)
    good = d[np.isfinite(d)]
    if not good.size:
        return d.size, math.inf, -math.inf, 0.0, 0, d.size
    return (d.size, float(good.min()), float(good.max()), float(good.sum()),
            int(good.size - np.count_nonzero(good)), int(d.size - good.size))


def _scale_summary(parts: list[tuple[int, float, float, float, int, int]]) -> dict[str, Any]:
    count = sum(p[0] for p in parts)
    bad = sum(p[5] for p in parts)
    good = count - bad
    return {"field": "d", "count": count,
            "min": min(p[1] for p in parts) if good else None,
            "max": max(p[2] for p in parts) if good else None,
            "mean": sum(p[3] for p in parts) / good if good else None,
            "zeros": sum(p[4] for p in parts), "nonfinite": bad}


def block_scale_stats(lay: Layout, raw: np.ndarray, byteorder: str = "little") -> dict[str, Any] | None:
    """Distribution of the per-block scale ``d`` read from the raw blocks, or None when
    ``lay`` has no plain f16/f32 ``d`` field (unquantized and packed-scale layouts)."""
    field = _scale_dtype(lay, byteorder)
    if field is None:
        return None
    n_blocks = raw.size // lay.block_bytes
    blocks = np.asarray(raw[:n_blocks * lay.block_bytes]).reshape(n_blocks, lay.block_bytes)
    return _scale_summary([_scale_part(field, blocks)])


def _merge(parts: list[_Part]) -> tuple[int, float, float, float, float, float, int, int, int]:
    n, mean, m2, lo, hi, abs_sum, zeros, nan, inf = 0, 0.0, 0.0, math.inf, -math.inf, 0.0, 0, 0, 0
    for p in parts:
        if p.n:
            tot = n + p.n
            delta = p.mean - mean
            mean += delta * p.n / tot
            m2 += p.m2 + delta * delta * n * p.n / tot
            n = tot
            lo, hi = min(lo, p.lo), max(hi, p.hi)
            abs_sum += p.abs_sum
        zeros += p.zeros
        nan += p.nan
        inf += p.inf
    return n, mean, m2, lo, hi, abs_sum, zeros, nan, inf


def tensor_stats(t: "TensorInfo", *, bins: int = DEFAULT_BINS, chunk_elems: int = DEFAULT_CHUNK_ELEMS,
                 threads: int = 2, progress: Callable[[int, int], None] | None = None,
                 cancel: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Statistics of every element of ``t`` (see the module docstring for the keys)."""
    if not isinstance(bins, int) or not 1 <= bins <= 1 << 20:
        raise ValueError(f"bins must be an integer in 1..{1 << 20}, not {bins!r}")
    if not isinstance(chunk_elems, int) or chunk_elems < 1:
        raise ValueError(f"chunk_elems must be a positive integer, not {chunk_elems!r}")
    lay = LAYOUTS.get(t.layout)
    if lay is None:
        raise ValueError(f"tensor {t.name!r}: unknown block layout {t.layout!r}")
    byteorder = getattr(t.file, "endian", "little") if t.file is not None else "little"
    total = t.n_elements
    if total % lay.block_elems:
        raise ValueError(f"tensor {t.name!r}: {total} elements is not a whole number of "
                         f"{lay.name} blocks of {lay.block_elems}")
    n_blocks = total // lay.block_elems
    raw = t.raw()
    need = n_blocks * lay.block_bytes
    if raw.size != need:
        raise ValueError(f"tensor {t.name!r} ({t.layout}): needs {need} bytes of data, "
                         f"the file holds {raw.size}")
    fn, full = dequantizer(t.layout)
    blocks = np.asarray(raw).reshape(n_blocks, lay.block_bytes)
    path = getattr(t.file, "path", None)
    fd = os.open(path, os.O_RDONLY) if need > STREAM_BYTES and path and os.path.isfile(path) else None
    step = max(1, chunk_elems // lay.block_elems)
    starts = list(range(0, n_blocks, step))
    passes = 2
    threads = max(1, int(threads))

    def buffers() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        k = min(step, n_blocks) * lay.block_elems
        return (np.empty((min(step, n_blocks), lay.block_elems), np.float32),
                np.empty(k, np.float32), np.empty(k + 1, np.uint8),
                np.empty((min(step, n_blocks), lay.block_bytes), np.uint8) if fd is not None else None)

    import threading
    local = threading.local()

    def bufs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = getattr(local, "b", None)
        if b is None:
            b = local.b = buffers()
        return b

    def check() -> None:
        if cancel is not None and cancel():
            raise StatsCancelled(f"statistics of {t.name!r} cancelled")

    field = _scale_dtype(lay, byteorder)

    def decoded(i: int, scales: list | None = None) -> np.ndarray:
        out, _, _, rbuf = bufs()
        part = blocks[i:i + step]
        if rbuf is not None:                  # large tensor: read, so mapped pages do not pile up in RSS
            part = rbuf[:part.shape[0]]
            got = os.preadv(fd, [part], t.offset + i * lay.block_bytes)
            if got != part.nbytes:
                raise ValueError(f"tensor {t.name!r}: short read at block {i}")
        if scales is not None and field is not None:
            scales.append(_scale_part(field, part))
        return _decode(fn, full, part, out[:part.shape[0]], byteorder)

    def pass_one(i: int) -> tuple[_Part, list]:
        check()
        _, scratch, _, _ = bufs()
        scales: list = []
        x = decoded(i, scales)
        return _moments(x, scratch[:x.size]), scales

    def run(work: Callable[[int], Any], done0: int) -> list[Any]:
        results = []
        done = done0
        if threads == 1 or len(starts) == 1:
            for i in starts:
                results.append(work(i))
                done += min(step, n_blocks - i) * lay.block_elems
                if progress is not None:
                    progress(done, passes * total)
            return results
        with ThreadPoolExecutor(threads) as pool:
            futures = []
            try:
                for i in starts:
                    futures.append((i, pool.submit(work, i)))
                for i, fut in futures:
                    results.append(fut.result())
                    done += min(step, n_blocks - i) * lay.block_elems
                    if progress is not None:
                        progress(done, passes * total)
            except BaseException:
                for _, fut in futures:
                    fut.cancel()
                raise
        return results

    try:
        return _finish(t, lay, raw, byteorder, bins, total, n_blocks, run, pass_one, bufs, decoded, check)
    finally:
        if fd is not None:
            os.close(fd)


def _finish(t, lay, raw, byteorder, bins, total, n_blocks, run, pass_one, bufs, decoded, check):
    check()
    results = run(pass_one, 0) if n_blocks else []
    parts = [p for p, _ in results]
    scale_parts = [sp for _, sps in results for sp in sps]
    n, mean, m2, lo, hi, abs_sum, zeros, nan, inf = _merge(parts)

    counts = np.zeros(bins, dtype=np.int64)
    if n:
        h_lo, h_hi = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
        scale = bins / (h_hi - h_lo)
        if not math.isfinite(scale):          # range overflowed float: fall back to float64 edges
            scale = bins / (float(np.float64(h_hi) - np.float64(h_lo)))

        def pass_two(i: int) -> np.ndarray:
            check()
            _, scratch, idx, _ = bufs()
            x = decoded(i)
            return _histogram_indices(x, h_lo, scale, bins, scratch, idx)
        for c in run(pass_two, total):
            counts += c
        edges = np.linspace(h_lo, h_hi, bins + 1)
    else:
        edges = np.zeros(0)
    finite = n > 0
    return {
        "name": t.name, "type": t.type, "layout": t.layout, "shape": list(t.shape),
        "count": total, "finite": n, "nan": nan, "inf": inf, "zeros": zeros,
        "min": lo if finite else None, "max": hi if finite else None,
        "mean": mean if finite else None,
        "std": math.sqrt(m2 / n) if finite else None,
        "abs_mean": abs_sum / n if finite else None,
        "histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "block_scales": _scale_summary(scale_parts) if scale_parts else None,
    }

