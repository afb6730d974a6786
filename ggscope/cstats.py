"""The statistics kernels compiled at install time (``ggscope/_cstats.c``), when present.

Why: the numba kernels (``ggscope.kernels``, ``ggscope.fused``) cost seconds of
compilation on a fresh install and about half a second of import on every one-shot
command; the same loops built by the C compiler when the package is installed cost
nothing to start and run at least as fast.  ``ggscope.stats`` asks ``engine()`` which
module to use: this one when the extension was built, else numba's.

``GGSCOPE_KERNELS=numba`` forces the numba kernels (tests and benchmarks compare the two
engines); ``GGSCOPE_KERNELS=c`` makes a missing extension an error instead of a
fallback.

Contracts: as ``ggscope.kernels`` (``moments``, ``bin_pairs``, ``count_pairs``,
``count_codes``, ``PIECE``) and as ``ggscope.fused`` (``LAYOUTS``, ``range_pass``,
``bin_pass``), except that ``range_pass`` always decodes and sums (so its total is never
NaN and pass two never needs a second centring).
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Set
from functools import lru_cache
from types import ModuleType

import numpy as np

from .fused_specs import SPECS, tables

try:
    from . import _cstats
except ImportError:                          # built without a compiler: numba's kernels
    _cstats = None

__all__ = ["engine", "available", "LAYOUTS", "range_pass", "bin_pass", "moments", "bin_pairs", "count_pairs",
           "count_codes", "PIECE"]

PIECE = _cstats.PIECE if _cstats is not None else 2048


def available() -> bool:
    """Whether the compiled kernels are built and not turned off by ``GGSCOPE_KERNELS``."""
    choice = os.environ.get("GGSCOPE_KERNELS", "").lower()
    if choice == "c" and _cstats is None:
        raise ImportError("GGSCOPE_KERNELS=c but ggscope._cstats was not built (no C compiler at install time?)")
    return _cstats is not None and choice != "numba"


def engine() -> ModuleType | None:
    """This module when the compiled kernels are usable, else None (use numba's)."""
    import sys
    return sys.modules[__name__] if available() else None


@lru_cache(maxsize=None)
def _layout(layout: str) -> tuple[int, tuple[int, ...], int, int, np.ndarray, np.ndarray] | None:
    from .ggml_types import LAYOUTS as ALL
    if _cstats is None or layout not in SPECS:
        return None
    dec, args, kind = SPECS[layout]
    fam = _cstats.families().get(dec)
    lay = ALL[layout]
    if fam is None or not _cstats.fused_supports(fam, args, lay.block_elems):
        return None
    g1, g2 = tables(kind)
    g1, g2 = np.ascontiguousarray(g1, np.float32), np.ascontiguousarray(g2, np.float32)
    return fam, args, lay.block_elems, lay.block_bytes, g1, g2


class _Supported(Set):
    """``LAYOUTS``, asked one layout at a time: ``layout in LAYOUTS`` builds the decode
    tables of that layout only, so a one-shot command on one tensor does not build those
    of every layout (4 ms, half of them IQ grids)."""

    def __contains__(self, layout: object) -> bool:
        return isinstance(layout, str) and _layout(layout) is not None

    def __iter__(self) -> Iterator[str]:
        return (name for name in SPECS if _layout(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"cstats.LAYOUTS({sorted(self)!r})"


LAYOUTS = _Supported()


@lru_cache(maxsize=1)
def _lut() -> np.ndarray:
    from .quant import code_values
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


def bin_pass(layout: str, blocks: np.ndarray, big: bool, lo: np.float32, scale: np.float32,
             top: np.int32, shift: np.float32, table: np.ndarray, idx: np.ndarray
             ) -> tuple[float, float, float, int]:
    fam, args, n, nbytes, g1, g2 = _layout(layout)
    return _cstats.fused_bins(fam, args, n, nbytes, blocks, bool(big), _lut(), g1, g1.shape[1], g2, g2.shape[1],
                              float(lo), float(scale), int(top), float(shift), table)


def moments(x: np.ndarray, shift: np.float32) -> tuple[float, float, float, int]:
    return _cstats.moments(np.ascontiguousarray(x, np.float32), float(shift))


def bin_pairs(x: np.ndarray, lo: np.float32, scale: np.float32, top: np.int32,
              table: np.ndarray, idx: np.ndarray) -> int:
    return _cstats.bin_pairs(np.ascontiguousarray(x, np.float32), float(lo), float(scale), int(top), table, idx)


def count_pairs(pairs: np.ndarray, table: np.ndarray) -> None:
    _cstats.count_codes(np.asarray(pairs, np.uint16), table.reshape(1, -1))


def count_codes(codes: np.ndarray, counts: np.ndarray) -> None:
    _cstats.count_codes(codes, counts)
