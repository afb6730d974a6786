"""What changed between two model files: header, metadata, tensor set and tensor values.

Why: after converting or quantizing a model, the question is what moved and by how much.
``diff_files`` compares two ``ModelFile`` views, so any pair of formats compares (GGJT
against GGUF, rwkv.cpp FP32 against Q5_1): names are matched, never byte positions.

Contract
--------
* ``diff_files(a, b, *, metadata_only=False, progress=None, cancel=None) -> DiffResult``.
  ``a`` is the reference: errors are ``b - a`` and relative figures divide by ``a``.
  ``iter_tensor_diffs(a, b, cancel=None)`` yields the tensor part one ``TensorDiff`` at
  a time, in the order of ``tensor_names(a, b)``, for callers that show rows as they
  finish (the TUI's diff screen).
* Metadata: keys only in ``b`` are *added*, only in ``a`` *removed*; a key in both is
  *changed* when its value type or value differs.  A legacy llama.cpp file's header
  words are compared under the GGUF keys llama.cpp's converter gave them
  (``ggscope.model.summary.gguf_key``: ``ggjt.n_embd`` is ``llama.embedding_length``), so a
  GGJT file and its GGUF conversion compare like with like; ``MetaChange.key_a`` /
  ``key_b`` (and ``MetaEntry.source_key``) keep the names the files use.  Across two
  formats a value type alone (the header's int32 against GGUF's uint32) is no change.
  Their tensors pair up the same way: a legacy llama file compared with a GGUF file is
  keyed by the GGUF tensor names (``tensors_by_name``).  Arrays compare item by item: the
  change carries both lengths, the count of differing positions (over the common
  length) and the first ``FIRST_ITEMS`` differences.
* Tensors, in ``a``'s order then ``b``'s new ones, each one ``TensorDiff`` with a
  ``status``: "added", "removed", "identical" (same type, shape and byte order and the
  same bytes, found by comparing raw bytes before any decoding), "equal" (bytes differ
  but every dequantized value is equal), "changed" (values differ, or the bytes differ
  and no dequantizer exists: ``error`` says so), "shape-changed" (element counts differ:
  never compared numerically) or "error" (the data cannot be read).  ``changes`` names
  what else moved: "shape" (same element count, compared in ggml element order),
  "type", "offset" (a tensor whose only change is its offset is shown as *moved*).
* Numeric metrics, accumulated in float64 over positions finite in both files (one
  compiled pass per window, ``diff_sums``; the windows of a tensor shared by
  ``THREADS`` threads, so sums are reassociated: equal to numpy's to rounding):
  ``max_abs`` = max|b-a|, ``rmse`` = sqrt(mean((b-a)^2)), ``rel_rmse`` = ||b-a|| / ||a||,
  ``cosine`` = a.b / (||a|| ||b||), ``snr_db`` = 10 log10(||a||^2 / ||b-a||^2).  Zero
  error gives rel_rmse 0, cosine 1 and snr_db +inf.  ``n_nonfinite`` counts positions
  where ``a`` or ``b`` is NaN/Inf; a position where they are not the same NaN/Inf makes
  the tensor "changed".
* Memory stays bounded whatever the tensor size: data are read in windows of whole
  blocks of both layouts (``CHUNK_ELEMS`` elements) with ``readinto`` into reused
  buffers (``chunked.RangeReader``, one pair per thread), so file pages are never
  mapped into the process and peak RSS does not grow with file size.
* ``progress(done, total, name)`` is called before each tensor; ``cancel()`` (a
  callable, or an object with ``is_set()`` such as ``threading.Event``) is polled per
  window and raises ``DiffCancelled``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ggscope.source.ranges import RangeReader
from ggscope.facts.ggml_types import LAYOUTS, tensor_layout
from ggscope.model.modelfile import ModelFile, TensorInfo
from ggscope.quant import dequantize
from ggscope.facts.legacy_tensors import LEGACY_NAMES

__all__ = ["diff_files", "tensors_by_name", "DiffResult", "MetadataDiff", "MetaEntry", "MetaChange", "ItemDiff",
           "HeaderChange", "TensorDiff", "DiffCancelled", "CHUNK_ELEMS", "FIRST_ITEMS", "STATUSES"]

CHUNK_ELEMS = 1 << 19        # elements per comparison window: 2 MiB float32 per side
THREADS = 2                  # threads comparing windows of one tensor
FIRST_ITEMS = 5              # differing array items kept per metadata change
STATUSES = ("identical", "equal", "changed", "shape-changed", "added", "removed", "error")


class DiffCancelled(Exception):
    """The caller's ``cancel`` said stop."""


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


# ------------------------------------------------------------------------ metadata

def _is_array(v: Any) -> bool:
    return isinstance(v, (list, tuple, np.ndarray)) or (hasattr(v, "tolist") and hasattr(v, "__len__")
                                                        and not isinstance(v, (str, bytes)))


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _scalar_equal(x: Any, y: Any) -> bool:
    x, y = _py(x), _py(y)
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    if type(x) is not type(y) and {type(x), type(y)} != {int, float}:
        return False
    try:
        return bool(x == y)
    except Exception:
        return False


def _as_items(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.reshape(-1) if v.ndim > 1 else v
    if hasattr(v, "tolist") and not isinstance(v, (list, tuple)):
        return v.tolist()
    return v


def _array_change(key: str, ta: str, tb: str, va: Any, vb: Any) -> MetaChange | None:
    ia, ib = _as_items(va), _as_items(vb)
    la, lb = len(ia), len(ib)
    n = min(la, lb)
    if isinstance(ia, np.ndarray) and isinstance(ib, np.ndarray) and ia.dtype.kind in "biuf" \
            and ib.dtype.kind in "biuf":
        x, y = ia[:n], ib[:n]
        with np.errstate(invalid="ignore"):
            neq = x != y
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            neq &= ~(np.isnan(x) & np.isnan(y))
        idx = np.flatnonzero(neq)
        n_diff = int(idx.size)
        first = tuple(ItemDiff(int(i), _py(ia[i]), _py(ib[i])) for i in idx[:FIRST_ITEMS])
    else:
        n_diff, first_l = 0, []
        for i in range(n):
            if _is_array(ia[i]) or _is_array(ib[i]):
                same = _array_change("", "", "", ia[i], ib[i]) is None
            else:
                same = _scalar_equal(ia[i], ib[i])
            if not same:
                n_diff += 1
                if len(first_l) < FIRST_ITEMS:
                    first_l.append(ItemDiff(i, _py(ia[i]), _py(ib[i])))
        first = tuple(first_l)
    if n_diff == 0 and la == lb and ta == tb:
        return None
    return MetaChange(key, ta, tb, is_array=True, len_a=la, len_b=lb, n_differing=n_diff, first=first)


def _by_gguf_key(mf: ModelFile, other_format: str) -> dict[str, str]:
    """GGUF key -> the file's own key, for every metadata key of ``mf``.  A legacy word
    without a GGUF key (n_mult) is named as in the other file when that is legacy too."""
    from ggscope.model.summary import LEGACY_FORMATS, gguf_key, is_legacy_llama
    arch = str(mf.metadata.get("general.architecture", "llama"))
    llama = is_legacy_llama(mf)
    out = {}
    for k in mf.metadata:
        g = gguf_key(mf.format, k, arch) if llama else k
        if g == k and mf.format in LEGACY_FORMATS and other_format in LEGACY_FORMATS \
                and k.startswith(mf.format + "."):
            g = other_format + k[len(mf.format):]
        out[g] = k
    return out


def diff_metadata(a: ModelFile, b: ModelFile) -> MetadataDiff:
    """Added, removed and changed keys of ``b`` relative to ``a``."""
    ka_of, kb_of = _by_gguf_key(a, a.format), _by_gguf_key(b, a.format)
    ma, mb = a.metadata, b.metadata
    ta, tb = a.metadata_types, b.metadata_types
    cross = a.format != b.format

    def own(name: str, key: str) -> str:
        return "" if name == key else name
    added = tuple(MetaEntry(k, tb.get(kb_of[k], "?"), mb[kb_of[k]], own(kb_of[k], k)) for k in kb_of if k not in ka_of)
    removed = tuple(MetaEntry(k, ta.get(ka_of[k], "?"), ma[ka_of[k]], own(ka_of[k], k)) for k in ka_of
                    if k not in kb_of)
    changed = []
    for k, name_a in ka_of.items():
        if k not in kb_of:
            continue
        name_b = kb_of[k]
        va, vb, typ_a, typ_b = ma[name_a], mb[name_b], ta.get(name_a, "?"), tb.get(name_b, "?")
        names = {"key_a": own(name_a, k), "key_b": own(name_b, k)}
        if _is_array(va) or _is_array(vb):
            if _is_array(va) and _is_array(vb):
                ch = _array_change(k, typ_a, typ_b, va, vb)
                if ch is not None:
                    changed.append(ch)
            else:
                changed.append(MetaChange(k, typ_a, typ_b, a=va, b=vb, **names))
        elif (typ_a != typ_b and not cross) or not _scalar_equal(va, vb):
            changed.append(MetaChange(k, typ_a, typ_b, a=_py(va), b=_py(vb), **names))
    return MetadataDiff(added, removed, tuple(changed))


def diff_header(a: ModelFile, b: ModelFile) -> tuple[HeaderChange, ...]:
    out = []
    for f in ("format", "version", "endian", "alignment"):
        va, vb = getattr(a, f), getattr(b, f)
        if va != vb:
            out.append(HeaderChange(f, va, vb))
    return tuple(out)


# ------------------------------------------------------------------------ tensor data

def _cancelled(cancel: Any) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


def _tensor_layout(t: TensorInfo):
    """``t``'s block layout, known to exist (``_in_file`` checked the name)."""
    return tensor_layout(t.layout, int(t.shape[0]) if len(t.shape) else 1)


def _windows(ta: TensorInfo, tb: TensorInfo, n: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(bytes_start_a, nbytes_a, bytes_start_b, nbytes_b, n_elems) windows of whole blocks."""
    la, lb = _tensor_layout(ta), _tensor_layout(tb)
    unit = math.lcm(la.block_elems, lb.block_elems)
    step = max(unit, CHUNK_ELEMS // unit * unit)
    for e in range(0, n, step):
        k = min(step, n - e)
        yield (ta.offset + e // la.block_elems * la.block_bytes, k // la.block_elems * la.block_bytes,
               tb.offset + e // lb.block_elems * lb.block_bytes, k // lb.block_elems * lb.block_bytes, k)


def _bytes_equal(ta: TensorInfo, tb: TensorInfo, ra: RangeReader, rb: RangeReader, cancel: Any) -> bool:
    for sa, na, sb, nb, _ in _windows(ta, tb, ta.n_elements):
        if _cancelled(cancel):
            raise DiffCancelled()
        if not np.array_equal(ra.read(sa, na, ta.file), rb.read(sb, nb, tb.file)):
            return False
    return True


@dataclass
class _Acc:
    """float64 running sums of one numeric comparison."""
    aa: float = 0.0
    bb: float = 0.0
    ab: float = 0.0
    dd: float = 0.0
    max_abs: float = 0.0
    n: int = 0
    nonfinite: int = 0
    nonfinite_mismatch: int = 0

    def add(self, x32: np.ndarray, y32: np.ndarray) -> None:
        from ggscope.diff.sums import pair_sums     # compiled: imported only when values are compared
        aa, bb, ab, dd, mx, n, bad, mismatch = pair_sums(x32, y32)
        self.aa += aa
        self.bb += bb
        self.ab += ab
        self.dd += dd
        self.max_abs = max(self.max_abs, mx)
        self.n += n
        self.nonfinite += bad
        self.nonfinite_mismatch += mismatch

    def merge(self, other: "_Acc") -> None:
        self.aa += other.aa
        self.bb += other.bb
        self.ab += other.ab
        self.dd += other.dd
        self.max_abs = max(self.max_abs, other.max_abs)
        self.n += other.n
        self.nonfinite += other.nonfinite
        self.nonfinite_mismatch += other.nonfinite_mismatch

    def metrics(self) -> dict[str, float]:
        rmse = math.sqrt(self.dd / self.n) if self.n else 0.0
        if self.dd == 0.0:
            rel, snr = 0.0, math.inf
        elif self.aa == 0.0:
            rel, snr = math.inf, -math.inf
        else:
            rel, snr = math.sqrt(self.dd / self.aa), 10.0 * math.log10(self.aa / self.dd)
        if self.aa == 0.0 and self.bb == 0.0:
            cos = 1.0
        elif self.aa == 0.0 or self.bb == 0.0:
            cos = 0.0
        else:
            cos = max(-1.0, min(1.0, self.ab / math.sqrt(self.aa * self.bb)))
        return {"max_abs": self.max_abs, "rmse": rmse, "rel_rmse": rel, "cosine": cos, "snr_db": snr}


def _numeric(ta: TensorInfo, tb: TensorInfo, ra: RangeReader, rb: RangeReader, cancel: Any) -> _Acc:
    """The metric sums over every window, the windows shared out between ``THREADS``
    threads (decoding and the compiled sums release the GIL); each thread has its own
    readers and sums, merged at the end."""
    windows = list(_windows(ta, tb, ta.n_elements))
    remote = ta.file.source.remote or tb.file.source.remote  # type: ignore[union-attr]
    if THREADS < 2 or len(windows) < 2 or remote:             # a remote source: one reader at a time
        return _numeric_part(ta, tb, ra, rb, cancel, windows)

    def part(k: int) -> _Acc:
        if k == 0:
            return _numeric_part(ta, tb, ra, rb, cancel, windows[0::THREADS])
        with RangeReader(ta.file) as ra2, RangeReader(tb.file) as rb2:  # type: ignore[arg-type]
            return _numeric_part(ta, tb, ra2, rb2, cancel, windows[k::THREADS])

    with ThreadPoolExecutor(THREADS) as pool:
        parts = list(pool.map(part, range(THREADS)))
    acc = parts[0]
    for other in parts[1:]:
        acc.merge(other)
    return acc


def _numeric_part(ta: TensorInfo, tb: TensorInfo, ra: RangeReader, rb: RangeReader, cancel: Any,
                  windows: list[tuple[int, int, int, int, int]]) -> _Acc:
    acc = _Acc()
    ea, eb = ta.file.endian, tb.file.endian  # type: ignore[union-attr]
    for sa, na, sb, nb, k in windows:
        if _cancelled(cancel):
            raise DiffCancelled()
        x = dequantize(_tensor_layout(ta), ra.read(sa, na, ta.file), k, ea, name=ta.name)
        y = dequantize(_tensor_layout(tb), rb.read(sb, nb, tb.file), k, eb, name=tb.name)
        acc.add(x, y)
    return acc


def _in_file(t: TensorInfo) -> str | None:
    size = t.file.source.size  # type: ignore[union-attr]
    if t.offset < 0 or t.offset + t.nbytes > size:
        return f"data [{t.offset}, {t.offset + t.nbytes}) runs past the end of {t.file.path} ({size} bytes)"  # type: ignore[union-attr]
    if t.layout not in LAYOUTS:
        return f"unknown block layout {t.layout!r}"
    return None


def diff_tensor(ta: TensorInfo, tb: TensorInfo, ra: RangeReader, rb: RangeReader, cancel: Any = None) -> TensorDiff:
    """Compare one tensor present in both files."""
    changes = tuple(c for c, x, y in (("shape", ta.shape, tb.shape), ("type", ta.type, tb.type),
                                      ("offset", ta.offset, tb.offset)) if x != y)
    base = dict(name=ta.name, shape_a=tuple(ta.shape), shape_b=tuple(tb.shape), type_a=ta.type,
                type_b=tb.type, offset_a=ta.offset, offset_b=tb.offset, changes=changes)
    if ta.n_elements != tb.n_elements:
        return TensorDiff(status="shape-changed", **base)
    base["n_elements"] = ta.n_elements
    problem = _in_file(ta) or _in_file(tb)
    if problem:
        return TensorDiff(status="error", error=problem, **base)
    try:
        if ta.layout == tb.layout and ta.file.endian == tb.file.endian \
                and _bytes_equal(ta, tb, ra, rb, cancel):  # type: ignore[union-attr]
            return TensorDiff(status="identical", max_abs=0.0, rmse=0.0, rel_rmse=0.0, cosine=1.0,
                              snr_db=math.inf, **base)
        acc = _numeric(ta, tb, ra, rb, cancel)
    except NotImplementedError as exc:
        return TensorDiff(status="changed", error=f"not compared numerically: {exc}", **base)
    except (ValueError, OSError) as exc:
        return TensorDiff(status="error", error=str(exc), **base)
    m = acc.metrics()
    status = "equal" if acc.dd == 0.0 and acc.nonfinite_mismatch == 0 else "changed"
    return TensorDiff(status=status, n_nonfinite=acc.nonfinite, **m, **base)


def _only(t: TensorInfo, status: str) -> TensorDiff:
    side = "a" if status == "removed" else "b"
    return TensorDiff(name=t.name, status=status, n_elements=t.n_elements,
                      **{f"shape_{side}": tuple(t.shape), f"type_{side}": t.type, f"offset_{side}": t.offset})


def _gguf_tensor_names() -> list[tuple["re.Pattern[str]", str]]:
    """(legacy name pattern, GGUF name template) for llama.cpp's 2023 llama files."""
    import re
    out = []
    for gguf_name, legacy in LEGACY_NAMES["llama"].items():
        pat = re.escape(legacy).replace(re.escape("{i}"), r"(?P<i>\d+)")
        out.append((re.compile(pat + "$"), gguf_name))
    return out


def tensors_by_name(mf: ModelFile, other: ModelFile) -> dict[str, TensorInfo]:
    """Name -> tensor (the first of a duplicated name).  A legacy llama.cpp file compared
    with a file of another family is keyed by the GGUF names its tensors got on
    conversion (``layers.0.attention.wq.weight`` is ``blk.0.attn_q.weight``), so the
    tensors of a GGJT file and of its GGUF conversion pair up."""
    from ggscope.model.summary import LEGACY_FORMATS, is_legacy_llama
    by_name = first_by_name(mf.tensors)
    if not is_legacy_llama(mf) or other.format in LEGACY_FORMATS:
        return by_name
    table = _gguf_tensor_names()
    out: dict[str, TensorInfo] = {}
    for name, t in by_name.items():
        for pat, template in table:
            m = pat.match(name)
            if m:
                name = template.replace("{i}", m.groupdict().get("i") or "")
                break
        out.setdefault(name, t)
    return out


def tensor_names(a: ModelFile, b: ModelFile) -> list[str]:
    """The order tensors are compared and reported in: A's names, then B's new ones."""
    by_a = tensors_by_name(a, b)
    return list(by_a) + [n for n in tensors_by_name(b, a) if n not in by_a]


def iter_tensor_diffs(a: ModelFile, b: ModelFile, *, cancel: Any = None) -> Iterator[TensorDiff]:
    """One ``TensorDiff`` per name of ``tensor_names(a, b)``, each as soon as it is done
    (the TUI fills its rows from this); ``DiffCancelled`` before a tensor if ``cancel``."""
    from dataclasses import replace
    by_a = tensors_by_name(a, b)
    by_b = tensors_by_name(b, a)
    ra, rb = RangeReader(a), RangeReader(b)
    try:
        for name in tensor_names(a, b):
            if _cancelled(cancel):
                raise DiffCancelled()
            ta, tb = by_a.get(name), by_b.get(name)
            if tb is None:
                td = _only(ta, "removed")  # type: ignore[arg-type]
            elif ta is None:
                td = _only(tb, "added")
            else:
                td = diff_tensor(ta, tb, ra, rb, cancel)
            yield td if td.name == name else replace(td, name=name)
    finally:
        ra.close()
        rb.close()


def diff_files(a: ModelFile, b: ModelFile, *, metadata_only: bool = False,
               progress: Callable[[int, int, str], Any] | None = None, cancel: Any = None) -> DiffResult:
    """Everything that differs from ``a`` (the reference) to ``b``; see the module contract."""
    from ggscope.model.summary import summarize
    header = diff_header(a, b)
    meta = diff_metadata(a, b)
    sums = {"summary_a": summarize(a), "summary_b": summarize(b)}
    if metadata_only:
        return DiffResult(a.path, b.path, header, meta, (), metadata_only=True, **sums)
    names = tensor_names(a, b)
    out: list[TensorDiff] = []
    if progress is not None and names:
        progress(0, len(names), names[0])
    for i, td in enumerate(iter_tensor_diffs(a, b, cancel=cancel), 1):
        out.append(td)
        if progress is not None:
            progress(i, len(names), names[i] if i < len(names) else "")
    if progress is not None and not names:
        progress(0, 0, "")
    return DiffResult(a.path, b.path, header, meta, tuple(out), **sums)


def first_by_name(tensors: Sequence[TensorInfo]) -> dict[str, TensorInfo]:
    """Name -> tensor; a duplicated name (a damaged or odd file) keeps its first tensor."""
    out: dict[str, TensorInfo] = {}
    for t in tensors:
        out.setdefault(t.name, t)
    return out
