"""Streaming statistics of one tensor: what ``ggscope stats``, the TUI and ``--deep`` read.

Why: a tensor can be larger than memory and a broken one (NaN/Inf values, zero or
non-finite block scales) is what people look for, so the statistics are computed over
bounded chunks of whole blocks, on both cores, and non-finite values are counted instead
of poisoning the moments.  Three routes, all exact about counts, min and max:

* *Codes* (F16, BF16, I8, I16: one element of at most 16 bits per block): the file's
  codes are counted (``kernels.count_codes``; spread 16-bit codes through byte counters
  that stay in L1, checked for wraps, csrc/_ccount8.h) and every statistic is read off the table
  of at most 65,536 (code, count) pairs, with the values from the one dequantizer of
  the layout.  One pass, no decoding, each chunk read in windows into one buffer per
  thread (``Chunks.windows``); the histogram is ``numpy.histogram``'s exactly.
* *Fused* (every block layout, chunks whose values are all finite): ``ggscope.stats.fused``
  decodes each piece of blocks into an L1-sized buffer and consumes it at once -- pass
  one min, max and sum, pass two bins and centred moments; nothing decoded is stored.
  For Q4_0, Q8_0, Q4_K, Q6_K and IQ4_XS pass one reads the range off the block scales
  instead (``ggscope.stats.scale_range``; the C kernels do so for most block families) and
  has no sum: pass two then centres on the mean of a few blocks sampled from each chunk
  (``decoded.SAMPLE_BLOCKS``) and runs once more around the mean if that estimate lies
  more than a standard deviation from it.
* *Decoded* (one-element layouts above 16 bits, and chunks with a NaN/Inf value): pass one
  decodes each chunk with the numpy codecs and takes its min, max and sum; pass two
  bins and centres it (``kernels.bin_pairs``, ``kernels.moments``).  Pass two reuses
  the decoded chunks when the whole tensor fits ``CACHE_BYTES`` of float32 and decodes
  again otherwise, so memory stays bounded on any tensor.

The two-pass routes read each byte of the file once when the tensor's raw blocks fit
``RAW_CACHE_BYTES`` (pass one's chunks are kept for pass two, ``ggscope.stats.chunks``),
and twice otherwise.

Until a process has measured ``JIT_MIN_ELEMS`` elements, and while numba is not loaded,
the codes and decoded routes run on ``ggscope.stats.kernels_numpy`` (same results) instead of
the compiled kernels: a one-shot command on a small tensor does not pay numba's import,
initialisation and, on a fresh install, compilation.

Contract of ``tensor_stats(t, *, bins=64, chunk_elems=None, threads=THREADS, progress=None,
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
* Progress goes through ``ggscope.core.progress``: a task named after the tensor,
  advanced from the calling thread after each chunk, in elements; ``total`` is
  ``count`` on the codes route and ``2 * count`` on the others (a re-centred pass two
  counts its second half again).  ``progress(done, total)``, when given, receives the
  same instead of the installed reporter.  ``cancel`` (a callable, or an object with
  ``is_set()``) returning true stops the work before the next chunk and raises
  ``StatsCancelled`` (``ggscope.core.errors.Cancelled``).
* Reading: chunks are read (``readinto``, ``ggscope.source.stream``), never through the
  file's map, so a file that shrinks or is replaced meanwhile raises
  ``ggscope.core.errors.FileChanged`` instead of killing the process with SIGBUS --
  except under the CLI's SIGBUS guard inside ``changes.reads_through_map``
  (``ggscope stats``), where chunks are views of the map and a page that vanishes is the
  guard's line and exit status 2 (``ggscope.stats.chunks``).
* Errors: ``ValueError`` (truncated data, sizes) and ``NotImplementedError`` (a layout
  without a decoder) from ``ggscope.quant``; invalid ``bins``/``chunk_elems`` raise
  ``ValueError``.

Shape of the package: this module picks the kernels and the route; ``chunks`` reads a
tensor's blocks through the streaming engine; ``counted`` holds the codes and bits
routes (and the result mapping), ``decoded`` the two decoding passes, ``scales`` the
block-scale summary.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ggscope.core import progress as _progress
from ggscope.core.errors import Cancelled
from ggscope.facts.ggml_types import Layout, tensor_layout
from ggscope.quant import dequantizer
from ggscope.source.stream import THREADS
from ggscope.stats.chunks import Chunks
from ggscope.stats.counted import by_bits, by_codes
from ggscope.stats.decoded import by_decoding
from ggscope.stats.scales import block_scale_stats
from ggscope.stats import kernels_numpy

if TYPE_CHECKING:
    from ggscope.model.modelfile import TensorInfo

__all__ = ["tensor_stats", "StatsCancelled", "DEFAULT_BINS", "DEFAULT_CHUNK_ELEMS",
           "block_scale_stats", "CACHE_BYTES",
           "RAW_CACHE_BYTES"]

DEFAULT_BINS = 64
DEFAULT_CHUNK_ELEMS = 1 << 20       # 4 MiB of float32 per chunk and thread
# Routes that decode nothing into float32 buffers (the C kernels' fused layouts, codes,
# bits) take chunks 4x larger: their per-chunk Python work, serialised on the GIL, was a
# tenth of a two-thread Q4_K pass at 1 Mi elements (benchmarks/stats_vs_ggml.py)
UNBUFFERED_CHUNK_ELEMS = 1 << 22
CACHE_BYTES = 128 << 20             # decoded tensors up to this size are decoded once, not twice
RAW_CACHE_BYTES = 64 << 20          # tensors whose raw blocks fit this are read once, not twice
JIT_MIN_ELEMS = 1 << 23             # per process: elements measured without numba before loading it

StatsCancelled = Cancelled          # the old name of the engine's one cancel exception

_numpy_spent = 0                     # elements this process measured on the numpy kernels


def _kernels(n_elements: int) -> Any:
    """The kernels compiled at install time (``ggscope.stats.cstats``) when the build made
    them; else numba's (``ggscope.stats.kernels``), or their numpy twin while numba
    is not loaded and this process has measured fewer than ``JIT_MIN_ELEMS`` elements
    with them: loading numba costs about 0.7 s warm (import, target initialisation) and
    seconds per layout on a fresh cache, which numpy beats on that many elements; past
    that budget a command (TUI, every tensor of a model) gets the compiled speed."""
    global _numpy_spent
    from ggscope.stats import cstats  # lazy: 3 more modules only when used
    if cstats.available():                  # compiled at install time: nothing to load
        return cstats
    if "numba" not in sys.modules and _numpy_spent + n_elements < JIT_MIN_ELEMS:
        _numpy_spent += n_elements
        return kernels_numpy
    from ggscope.stats import kernels  # start-up: numpy, numba, yaml only when used
    return kernels


def _code_route(lay: Layout) -> bool:
    return lay.block_elems == 1 and lay.block_bytes <= 2 and lay.codec is not None


def tensor_stats(t: "TensorInfo", *, bins: int = DEFAULT_BINS, chunk_elems: int | None = None,
                 threads: int = THREADS, progress: Callable[[int, int], None] | None = None,
                 cancel: Any = None) -> dict[str, Any]:
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
    kernels = _kernels(t.n_elements)
    if chunk_elems is None:
        native = kernels.__name__ == "ggscope.stats.cstats"
        unbuffered = codes or bits or (native and t.layout in kernels.FUSED_LAYOUTS)
        chunk_elems = UNBUFFERED_CHUNK_ELEMS if unbuffered else DEFAULT_CHUNK_ELEMS
    passes = 1 if codes or bits else 2
    with _progress.from_callback(progress, t.name, passes * t.n_elements) as task:
        ch = Chunks(t, lay, chunk_elems, threads, task, cancel, passes, kernels, CACHE_BYTES,
                    RAW_CACHE_BYTES)
        try:
            ch.check()
            route = by_bits if bits else by_codes if codes else by_decoding
            return route(t, lay, byteorder, bins, ch)
        finally:
            ch.close()
