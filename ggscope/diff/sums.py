"""The sums behind ``diff``'s error metrics, in one compiled pass per chunk pair.

Why: the numpy route converted both float32 chunks to float64 and made four ``einsum``
passes plus a subtraction and two reductions: 60 % of an F16-vs-Q8_0 diff of 542 M
element pairs (issue 18, item 4).  One loop reads each pair once, widens it to float64
in registers and accumulates every sum at once.  Two engines run that loop: C compiled
at install time (``csrc/_cpairs.c``, ready at once) when the install built it, and
numba (``ggscope.diff.sums_jit``, compiled on first use) otherwise -- the same switch
as the statistics kernels (``ggscope.stats.cstats.available``, ``GGSCOPE_KERNELS``), so a
one-shot ``ggscope diff`` never imports numba where a compiler was present at install.

Contract of ``pair_sums(x, y) -> (aa, bb, ab, dd, max_abs, n_finite, n_nonfinite,
n_mismatch)`` for float arrays (float32, or float64 from F64 tensors) of one length:
over positions where both are finite, float64 sums of a*a, b*b, a*b and (b-a)^2 and
max |b-a|; ``n_nonfinite`` counts the other positions, ``n_mismatch`` those where a and
b are not the same NaN/Inf (both NaN, or equal).  Sums are reassociated (vector lanes),
so they match numpy's float64 sums to rounding (~1e-15 relative), not bit for bit;
max |b-a| is exact.

``decode(layout, data, n, byteorder, name=None)`` is ``ggscope.quant.dequantize`` (same
arguments, same float32 values bit for bit, same errors) that decodes the layouts the
compiled statistics kernels know (``ggscope.stats.cstats.FUSED_LAYOUTS``) in C with the
GIL released: the numpy codecs were all of a diff's time once the sums were compiled
(issue 27, item 4).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

try:
    from ggscope.diff import _cpairs
except ImportError:                          # built without a compiler: numba's loops
    _cpairs = None

__all__ = ["pair_sums", "engine", "decode"]

_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))


def engine() -> str:
    """``"c"`` when the compiled loop is built and not turned off by ``GGSCOPE_KERNELS``
    (``cstats.available``), else ``"numba"``."""
    from ggscope.stats import cstats  # lazy: 8 more modules only when used
    return "c" if _cpairs is not None and cstats.available() else "numba"


def _numba() -> Callable:
    from ggscope.diff.sums_jit import pair_sums as jit_sums  # start-up: numpy, numba, yaml only when used
    return jit_sums


def _native(a: np.ndarray) -> np.ndarray:
    """float32 or float64 in the host's byte order (both engines' loops take only
    those); other floats widen exactly."""
    if a.dtype in _NATIVE:
        return np.ascontiguousarray(a)
    if a.dtype.kind != "f" or a.dtype.itemsize > 8:
        raise TypeError(f"pair_sums takes float32 or float64 chunks, not {a.dtype}")
    return np.ascontiguousarray(a, np.float64 if a.dtype.itemsize == 8 else np.float32)


def pair_sums(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, float, int, int, int]:
    """See the module docstring."""
    x, y = _native(np.asarray(x)), _native(np.asarray(y))
    if x.shape != y.shape:
        raise ValueError(f"chunks differ in length: {x.size} and {y.size}")
    if engine() == "c":
        return _cpairs.pair_sums(x, y)
    return _numba()(x, y)


def decode(layout, data, n: int, byteorder: str = "little", *, name: str | None = None) -> np.ndarray:
    """See the module docstring."""
    from ggscope.facts.ggml_types import LAYOUTS  # lazy: loaded only on the path that needs it
    from ggscope.quant import dequantize  # lazy: loaded only on the path that needs it
    from ggscope.stats import cstats  # lazy: loaded only on the path that needs it
    lay = LAYOUTS.get(getattr(layout, "name", layout))
    whole = lay is not None and (layout is lay or layout == lay.name) and isinstance(n, int) and n >= 0
    if (not whole or not cstats.available() or lay.name not in cstats.FUSED_LAYOUTS
            or n % lay.block_elems or byteorder not in ("little", "big")):
        return dequantize(layout, data, n, byteorder, name=name)
    raw = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    raw = raw.reshape(-1)
    if raw.dtype != np.uint8 or raw.size != n // lay.block_elems * lay.block_bytes:
        return dequantize(layout, data, n, byteorder, name=name)       # its error names the mismatch
    return cstats.decode(lay.name, raw, byteorder == "big", np.empty(n, np.float32))
