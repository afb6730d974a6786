"""The block scales of a quantized tensor: how the per-block ``d`` fields are spread.

Why: a quantizer bug shows first in the scales (zero, NaN or Inf ``d`` zeroes or poisons
a whole block), and they can be read straight from the raw blocks, no decoding.  This
module finds a layout's plain f16/f32 ``d`` field in ggml's block description
(``ggscope.facts.ggml_types``), counts f16 scale codes per chunk (or keeps f32 ones)
while the statistics stream, and summarises them.

Contract: ``block_scale_stats(lay, raw, byteorder)`` -> ``{"field": "d", "count",
"min", "max", "mean", "zeros", "nonfinite"}`` or None for layouts without such a field;
``Scales(lay, byteorder, chunks)`` collects the same per chunk (``add``, or
``table_for`` when a fused C pass counts the codes itself) and ``summary()`` returns it.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.facts.ggml_types import Layout
from ggscope.quant import code_values
from ggscope.stats import counters
from ggscope.stats.kernels_numpy import weighted_sum

if TYPE_CHECKING:
    from ggscope.stats.chunks import Chunks

__all__ = ["block_scale_stats", "Scales", "code_values64"]



@lru_cache(maxsize=None)
def code_values64(layout: str, byteorder: str) -> np.ndarray:
    """float64 value of every code of a one-element layout, keyed as read natively."""
    with np.errstate(invalid="ignore"):         # the NaN codes
        return code_values(layout, byteorder).astype(np.float64)


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
            "mean": weighted_sum(v, c) / n if n else None,
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


class Scales:
    """Per-chunk collection of a layout's ``d`` fields: f16 codes counted, f32 kept."""

    def __init__(self, lay: Layout, byteorder: str, chunks: "Chunks") -> None:
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
            table = counters.lend(1 << 16, np.int64)
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
            seen = np.flatnonzero(total != 0)       # few of the 65,536 codes (bools: 6x numpy's int64 nonzero)
            vals.append(code_values64("F16", self.byteorder)[seen])
            counts.append(total[seen])          # (a copy: the tables are cleared next)

            def clear(table: np.ndarray) -> None:
                table[seen] = 0                     # counts are never negative: none elsewhere
            tables, self.tables = self.tables, []
            counters.give_back(tables, clear)
        if self.floats:
            v, c = np.unique(np.concatenate(self.floats), return_counts=True)
            vals.append(v)
            counts.append(c)
        if len(vals) == 1:
            return _value_summary(vals[0], counts[0])
        return _value_summary(np.concatenate(vals), np.concatenate(counts))
