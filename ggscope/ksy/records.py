"""Bulk scanning of arrays of variable-length records, and the lazy array that results.

A GGUF header holds one tensor info per tensor (a length-prefixed name, a dimension
count, that many dimensions, a type and an offset); MoE models have tens of thousands.
Interpreting each record field by field costs ~80 µs and a tree of objects per record,
and the garbage collector makes that super-linear (issue 18, item 6).  This scanner
walks the records with one bounds check and one ``unpack_from`` per variable part and
keeps only an ``(n, fields)`` array of field offsets; every column is then read from the
file in bulk with numpy.  Nodes and structures of single records are made on demand.

The engine uses it for an array whose element type is a *record* (``model._record``):
fields in sequence, each a length-prefixed string, a number, or an array of numbers
whose count is an earlier number of the same record, with no ``if``, ``size``,
``contents`` or parameters, and byte orders and switches that do not depend on the
record.  The scan is exact about where each record ends and where the first record
that does not fit begins (``RecordStop``); the engine re-reads that one record field by
field to report the precise field, path and offset.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ggscope.ksy.strings import StringArray

__all__ = ["FieldPlan", "RecordStop", "scan_records", "RecordArray", "Ragged"]


@dataclass(frozen=True)
class FieldPlan:
    """How to read one field of every record.

    ``kind``: "str" (``size``-byte length prefix, then the bytes), "prim" (``size``
    bytes) or "array" (``size`` bytes times the value of field ``count_of``).
    ``unpack`` reads the prefix or the number (a ``struct.Struct.unpack_from``) when
    the scan needs its value; ``dtype`` reads the column.
    """
    id: str
    kind: str
    size: int
    dtype: np.dtype
    unpack: Callable | None = None
    count_of: int | None = None
    encoding: str | None = None
    is_count: bool = False


class RecordStop(Exception):
    """Record ``index`` (starting at absolute ``offset``) does not fit before the limit."""

    def __init__(self, index: int, offset: int, offsets: np.ndarray) -> None:
        super().__init__(index, offset)
        self.index = index
        self.offset = offset
        self.offsets = offsets          # (index, fields) offsets of the records before it


def scan_records(buf: memoryview, start: int, n: int, plan: Sequence[FieldPlan],
                 limit: int) -> tuple[np.ndarray, int]:
    """Field offsets of ``n`` records from ``start``: an ``(n, len(plan))`` int64 array
    and the end offset.  Raises ``RecordStop`` at the first record passing ``limit``."""
    nf = len(plan)
    offs: list[int] = []
    i, p, first = _scanner(tuple((f.kind, f.size, f.count_of, f.is_count) for f in plan))(
        buf, start, n, limit, offs.append, [f.unpack for f in plan])
    if i < n:
        done = np.array(offs[:i * nf], dtype=np.int64).reshape(i, nf)
        raise RecordStop(i, first, done)
    return np.array(offs, dtype=np.int64).reshape(n, nf), p


@lru_cache(maxsize=64)
def _scanner(shape: tuple) -> Callable:
    """A loop specialised to one record shape: straight-line code per field, no
    dispatch per field (3x faster than a generic loop).  The generated source comes
    from the shape alone (field kinds, sizes, count links), never from file data.

    The function returns ``(records done, end offset, start of the failing record)``."""
    lines = ["def scan(buf, p, n, limit, append, unpack):",
             *[f"    u{j} = unpack[{j}]" for j in range(len(shape))],
             "    first = p",
             "    for i in range(n):",
             "        first = p"]
    for j, (kind, size, count_of, is_count) in enumerate(shape):
        if kind == "str":
            lines += [f"        if p + {size} > limit: return i, p, first",
                      f"        c{j} = u{j}(buf, p)[0]",
                      f"        if c{j} > limit - p - {size}: return i, p, first",
                      "        append(p)",
                      f"        p += {size} + c{j}"]
        elif kind == "prim":
            lines += [f"        if p + {size} > limit: return i, p, first",
                      "        append(p)"]
            if is_count:
                lines.append(f"        c{j} = u{j}(buf, p)[0]")
            lines.append(f"        p += {size}")
        else:
            lines += [f"        if c{count_of} < 0 or c{count_of} * {size} > limit - p: return i, p, first",
                      "        append(p)",
                      f"        p += c{count_of} * {size}"]
    lines.append("    return n, p, first")
    scope: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<record scanner {shape}>", "exec"), scope)  # noqa: S102
    return scope["scan"]


class Ragged:
    """A column of number arrays of varying length: ``row(i)`` is record i's array."""

    __slots__ = ("values", "counts", "firsts")

    def __init__(self, values: np.ndarray, counts: np.ndarray) -> None:
        self.values = values
        self.counts = counts
        self.firsts = np.zeros(len(counts), dtype=np.int64)
        if len(counts) > 1:
            np.cumsum(counts[:-1], out=self.firsts[1:])

    def __len__(self) -> int:
        return len(self.counts)

    def row(self, i: int) -> np.ndarray:
        f = int(self.firsts[i])
        return self.values[f:f + int(self.counts[i])]

    def rows(self) -> list[list]:
        """Every row as a Python list (one ``tolist`` and slicing; no numpy object per row)."""
        flat = self.values.tolist()
        out = []
        for f, c in zip(self.firsts.tolist(), self.counts.tolist()):
            out.append(flat[f:f + c])
        return out


class RecordArray:
    """The records of a scanned array: columns read in bulk, structures made on demand.

    ``column(id)`` is a numpy array (numbers), a ``StringArray`` (strings) or a
    ``Ragged`` (arrays of numbers), each made once from the field offsets.  Indexing
    gives record i's structure (what expressions read), made by the engine's ``make``.
    Not a ``Sequence`` of those structures on purpose: displays that list a sequence's
    first items would show their internals; ``str()`` is the count and the field names.
    """

    def __init__(self, arr: np.ndarray, offsets: np.ndarray, end: int, plan: Sequence[FieldPlan],
                 make: Callable[[int], Any]) -> None:
        self._arr = arr
        self.offsets = offsets
        self.end = end
        self.plan = tuple(plan)
        self._make = make
        self._columns: dict[str, Any] = {}
        self._index = {f.id: j for j, f in enumerate(self.plan)}

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._make(i)

    @property
    def starts(self) -> np.ndarray:
        """Absolute offset of each record."""
        return self.offsets[:, 0] if len(self.plan) else np.zeros(len(self), np.int64)

    def field_ends(self, j: int) -> np.ndarray:
        """Absolute end offset of field ``j`` in every record."""
        if j + 1 < len(self.plan):
            return self.offsets[:, j + 1]
        out = np.empty(len(self), dtype=np.int64)
        out[:-1] = self.offsets[1:, 0]
        if len(self):
            out[-1] = self.end
        return out

    def column(self, fid: str) -> Any:
        hit = self._columns.get(fid)
        if hit is None:
            hit = self._columns[fid] = self._read_column(self._index[fid])
        return hit

    def _read_column(self, j: int) -> Any:
        f = self.plan[j]
        at = self.offsets[:, j]
        n = len(self)
        if f.kind == "str":
            lens = self.field_ends(j) - at - f.size
            return StringArray.placed(self._arr, at, lens, f.size, f.encoding)
        if f.kind == "prim":
            raw = self._arr[at[:, None] + np.arange(f.size)] if n else np.zeros((0, f.size), np.uint8)
            return raw.view(f.dtype).reshape(n)
        counts = np.asarray(self.column(self.plan[f.count_of].id)).astype(np.int64)
        total = int(counts.sum())
        firsts = np.zeros(n, dtype=np.int64)
        if n > 1:
            np.cumsum(counts[:-1], out=firsts[1:])
        # byte offset of every element: its record's field offset + its rank in the row * size
        pos = np.repeat(at - firsts * f.size, counts) + np.arange(total, dtype=np.int64) * f.size
        raw = self._arr[pos[:, None] + np.arange(f.size)] if total else np.zeros((0, f.size), np.uint8)
        return Ragged(raw.view(f.dtype).reshape(total), counts)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __str__(self) -> str:
        return f"[{len(self)}] records of {', '.join(f.id for f in self.plan)}"

    def __repr__(self) -> str:
        return f"RecordArray({len(self)} records of {', '.join(f.id for f in self.plan)})"
