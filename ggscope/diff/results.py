"""What ``diff`` finds, as frozen records: header, metadata and tensor differences.

Why: the CLI's text and JSON, the browser's diff screen and library callers all read
the same result; it lives apart from the code that computes it so that each side can
change alone.  ``ggscope.diff.compare`` documents what every field means.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HeaderChange", "MetaEntry", "ItemDiff", "MetaChange", "MetadataDiff", "TensorDiff", "DiffResult",
           "FIRST_ITEMS", "STATUSES"]

FIRST_ITEMS = 5              # differing array items kept per metadata change
STATUSES = ("identical", "equal", "changed", "shape-changed", "added", "removed", "error")


@dataclass(frozen=True)
class HeaderChange:
    field: str
    a: Any
    b: Any


@dataclass(frozen=True)
class MetaEntry:
    """A key present in one file only."""
    key: str
    type: str
    value: Any
    source_key: str = ""          # the file's own name when ``key`` is its GGUF name


@dataclass(frozen=True)
class ItemDiff:
    index: int
    a: Any
    b: Any


@dataclass(frozen=True)
class MetaChange:
    """A key present in both files whose type or value differs.

    For arrays ``a``/``b`` are None and ``len_a``, ``len_b``, ``n_differing`` and
    ``first`` describe the difference; for scalars ``a``/``b`` are the values.
    """
    key: str
    type_a: str
    type_b: str
    a: Any = None
    b: Any = None
    is_array: bool = False
    len_a: int | None = None
    len_b: int | None = None
    n_differing: int | None = None
    first: tuple[ItemDiff, ...] = ()
    key_a: str = ""               # the files' own names when ``key`` is a legacy word's GGUF name
    key_b: str = ""

    @property
    def type_changed(self) -> bool:
        return self.type_a != self.type_b


@dataclass(frozen=True)
class MetadataDiff:
    added: tuple[MetaEntry, ...] = ()
    removed: tuple[MetaEntry, ...] = ()
    changed: tuple[MetaChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclass(frozen=True)
class TensorDiff:
    name: str
    status: str
    shape_a: tuple[int, ...] | None = None     # ggml order, ne[0] first
    shape_b: tuple[int, ...] | None = None
    type_a: str | None = None
    type_b: str | None = None
    offset_a: int | None = None
    offset_b: int | None = None
    changes: tuple[str, ...] = ()              # of "shape", "type", "offset"
    n_elements: int | None = None
    max_abs: float | None = None
    rmse: float | None = None
    rel_rmse: float | None = None
    cosine: float | None = None
    snr_db: float | None = None
    n_nonfinite: int = 0
    error: str | None = None

    @property
    def same(self) -> bool:
        return self.status == "identical" and not self.changes


@dataclass(frozen=True)
class DiffResult:
    path_a: str
    path_b: str
    header: tuple[HeaderChange, ...]
    metadata: MetadataDiff
    tensors: tuple[TensorDiff, ...]
    metadata_only: bool = False
    summary_a: Any = None          # ggscope.model.summary.Summary of each file (what it is)
    summary_b: Any = None

    @property
    def identical(self) -> bool:
        """True when nothing compared differs (diff(1) exit status 0)."""
        return not self.header and self.metadata.empty and all(t.same for t in self.tensors)

    @property
    def has_errors(self) -> bool:
        return any(t.status == "error" for t in self.tensors)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for t in self.tensors:
            out[t.status] += 1
        return out
