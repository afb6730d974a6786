"""The statistics kernels compiled at install time (``ggscope/_cstats.c``), when present.

Why: the numba kernels (``ggscope.stats.kernels``, ``ggscope.stats.fused``) cost seconds of
compilation on a fresh install and about half a second of import on every one-shot
command; the same loops built by the C compiler when the package is installed cost
nothing to start and run at least as fast.  ``ggscope.stats.tensors`` asks ``engine()`` which
module to use: this one when the extension was built, else numba's.

``GGSCOPE_KERNELS=numba`` forces the numba kernels (tests and benchmarks compare the two
engines); any other value changes nothing.

Contracts: as ``ggscope.stats.kernels`` (``moments``, ``bin_pairs``, ``count_pairs``,
``count_codes``, ``PIECE``) and as ``ggscope.stats.fused`` (``FUSED_LAYOUTS``, ``range_pass``,
``bin_pass``).  ``range_pass`` skips the blocks whose scales bound them inside the range
found so far for every family but the i-quants and the historical nibble layouts, and
then has no sum (total NaN), like ``ggscope.stats.scale_range``; it can also count the
blocks' f16 scale codes as it reads them.  ``decode(layout, blocks, big, out)`` decodes
whole blocks of a ``FUSED_LAYOUTS`` layout into a float32 array, bit for bit the numpy
codec's (``ggscope.quant``), with the GIL released: ``diff``'s values.  Pass two of
Q4_0/Q4_1/Q5_0/Q5_1, Q4_K/Q5_K, IQ4_NL/IQ4_XS, MXFP4 and Q8_0, and pass one's block
bounds of Q4_0/Q4_1/Q5_0/Q5_1, Q4_K/Q5_K and Q8_0, run on AVX-512 drivers where the CPU
has them (``csrc/_cstats_z.h``, ``csrc/_cstats_zrange.h``; ``_cstats.vector_bins()``
says whether, and turns them off for the tests' comparisons): the same range and
histogram, the moments' float32 additions in another order.
"""
from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

from ggscope.stats.fused_specs import SPECS, tables

try:
    from ggscope.stats import _cstats
except ImportError:                          # built without a compiler: numba's kernels
    _cstats = None

__all__ = ["available", "FUSED_LAYOUTS", "range_pass", "bin_pass", "decode", "moments", "bin_pairs",
           "count_pairs", "count_codes", "PIECE"]

from ggscope.stats.kernels_numpy import PIECE  # noqa: E402 - the one Python place; csrc/_ctargets.h the C one
from ggscope.facts.ggml_types import LAYOUTS as ALL
_FAMILIES: dict[str, int] = _cstats.families() if _cstats is not None else {}


def available() -> bool:
    """Whether the compiled kernels are built and not turned off by ``GGSCOPE_KERNELS``."""
    return _cstats is not None and os.environ.get("GGSCOPE_KERNELS", "").lower() != "numba"


def _family(layout: str) -> int | None:
    """The C family id of a layout whose arguments have a compiled variant, else None."""
    if _cstats is None or layout not in SPECS:
        return None
    dec, args, _ = SPECS[layout]
    fam = _FAMILIES.get(dec)
    ok = fam is not None and _cstats.fused_supports(fam, args, ALL[layout].block_elems)
    return fam if ok else None


@lru_cache(maxsize=None)
def _layout(layout: str) -> tuple[int, tuple[int, ...], int, int, np.ndarray, np.ndarray]:
    """Everything a call passes for ``layout``; its tables are loaded on first use."""
    fam = _family(layout)
    if fam is None:
        raise KeyError(f"{layout}: no compiled variant")
    _, args, kind = SPECS[layout]
    g1, g2 = tables(kind)
    g1, g2 = np.ascontiguousarray(g1, np.float32), np.ascontiguousarray(g2, np.float32)
    return fam, args, ALL[layout].block_elems, ALL[layout].block_bytes, g1, g2


FUSED_LAYOUTS = frozenset(name for name in SPECS if _family(name) is not None)


@lru_cache(maxsize=1)
def _lut() -> np.ndarray:
    from ggscope.quant import code_values  # lazy: 1 more module only when used
    return np.ascontiguousarray(code_values("F16", "little"), np.float32)


def range_pass(layout: str, blocks: np.ndarray, big: bool, scale_table: np.ndarray | None = None,
               scale_at: int = -1) -> tuple[float, float, float] | None:
    """As ``fused.range_pass``; with ``scale_table`` (int64[65536]) it also counts every
    block's f16 scale code at byte ``scale_at`` -- as numpy's uint16 view of that field
    reads it -- when (and only when) it returns a range."""
    fam, args, n, nbytes, g1, g2 = _layout(layout)
    extra = () if scale_table is None else (scale_table, scale_at)
    lo, hi, total, ok = _cstats.fused_range(fam, args, n, nbytes, blocks, bool(big), _lut(),
                                            g1, g1.shape[1], g2, g2.shape[1], *extra)
    return (lo, hi, total) if ok else None


_local = threading.local()


def _lanes() -> np.ndarray:
    """This thread's zeroed counting scratch for pass two (the C side leaves it zeroed);
    one per thread, freed with the thread -- a buffer malloc'd and freed per call was
    measured to page-fault both threads of a process into each other's way."""
    lanes = getattr(_local, "lanes", None)
    if lanes is None:
        lanes = _local.lanes = np.zeros(_cstats.LANES_BYTES, np.uint8)
    return lanes


def bin_pass(layout: str, blocks: np.ndarray, big: bool, lo: np.float32, scale: np.float32,
             top: np.int32, shift: np.float32, table: np.ndarray, idx: np.ndarray
             ) -> tuple[float, float, float, int]:
    fam, args, n, nbytes, g1, g2 = _layout(layout)
    return _cstats.fused_bins(fam, args, n, nbytes, blocks, bool(big), _lut(), g1, g1.shape[1], g2, g2.shape[1],
                              float(lo), float(scale), int(top), float(shift), table, _lanes())


def decode(layout: str, blocks: np.ndarray, big: bool, out: np.ndarray) -> np.ndarray:
    """Every value of ``blocks`` (whole blocks of ``layout``, one of ``FUSED_LAYOUTS``)
    into ``out`` (float32, C-contiguous, room for all of them); returns ``out``."""
    fam, args, n, nbytes, g1, g2 = _layout(layout)
    _cstats.fused_decode(fam, args, n, nbytes, np.ascontiguousarray(blocks), bool(big), _lut(),
                         g1, g1.shape[1], g2, g2.shape[1], out)
    return out


def moments(x: np.ndarray, shift: np.float32) -> tuple[float, float, float, int]:
    return _cstats.moments(np.ascontiguousarray(x, np.float32), float(shift))


def bin_pairs(x: np.ndarray, lo: np.float32, scale: np.float32, top: np.int32,
              table: np.ndarray, idx: np.ndarray) -> int:
    return _cstats.bin_pairs(np.ascontiguousarray(x, np.float32), float(lo), float(scale), int(top), table, idx)


def count_pairs(pairs: np.ndarray, table: np.ndarray) -> None:
    _cstats.count_codes(np.asarray(pairs, np.uint16), table.reshape(1, -1))


def count_codes(codes: np.ndarray, counts: np.ndarray) -> None:
    _cstats.count_codes(codes, counts)
