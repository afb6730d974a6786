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
  compiled pass per window, ``ggscope.diff.sums``; the windows of a tensor run on the
  streaming engine's threads and their sums are merged in window order, so they are
  reassociated: equal to numpy's to rounding):
  ``max_abs`` = max|b-a|, ``rmse`` = sqrt(mean((b-a)^2)), ``rel_rmse`` = ||b-a|| / ||a||,
  ``cosine`` = a.b / (||a|| ||b||), ``snr_db`` = 10 log10(||a||^2 / ||b-a||^2).  Zero
  error gives rel_rmse 0, cosine 1 and snr_db +inf.  ``n_nonfinite`` counts positions
  where ``a`` or ``b`` is NaN/Inf; a position where they are not the same NaN/Inf makes
  the tensor "changed".
* Memory stays bounded whatever the tensor size: data are read in windows of whole
  blocks of both layouts (``CHUNK_ELEMS`` elements) by the streaming engine
  (``ggscope.source.stream``: ``readinto`` reused buffers, one pair per thread), so file
  pages are never mapped into the process, peak RSS does not grow with file size, and
  a file that shrinks or is replaced meanwhile raises ``ggscope.core.errors.FileChanged``
  (never SIGBUS).
* Progress goes through ``ggscope.core.progress`` (one task, one step per tensor);
  ``progress(done, total, name)``, when given, is called instead, before each tensor.
  ``cancel`` (a callable, or an object with ``is_set()`` such as ``threading.Event``)
  is polled per window and raises ``DiffCancelled`` (``ggscope.core.errors.Cancelled``).

The records live in ``ggscope.diff.results``, the header and metadata comparison in
``ggscope.diff.metadata``; this module compares tensors and puts the result together.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ggscope.core import progress as _progress
from ggscope.core.errors import Cancelled
from ggscope.diff.metadata import diff_header, diff_metadata
from ggscope.diff.results import (FIRST_ITEMS, STATUSES, DiffResult, HeaderChange, ItemDiff, MetaChange,
                                  MetadataDiff, MetaEntry, TensorDiff)
from ggscope.facts.ggml_types import LAYOUTS, tensor_layout
from ggscope.facts.legacy_tensors import LEGACY_NAMES
from ggscope.model.modelfile import ModelFile, TensorInfo
from ggscope.diff.sums import decode            # quant.dequantize; in C for the compiled kernels' layouts
from ggscope.source.stream import Stream

__all__ = ["diff_files", "tensors_by_name", "DiffResult", "MetadataDiff", "MetaEntry", "MetaChange", "ItemDiff",
           "HeaderChange", "TensorDiff", "DiffCancelled", "CHUNK_ELEMS", "FIRST_ITEMS", "STATUSES",
           "diff_header", "diff_metadata", "diff_tensor", "iter_tensor_diffs", "tensor_names"]

CHUNK_ELEMS = 1 << 19        # elements per comparison window: 2 MiB float32 per side

DiffCancelled = Cancelled    # the old name of the streaming engine's one cancel exception


# ------------------------------------------------------------------------ tensor data

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


def _bytes_equal(ta: TensorInfo, tb: TensorInfo, s: Stream) -> bool:
    """Same raw bytes, window by window in this thread (it stops at the first difference)."""
    ra, rb = s.reader(ta.file, 0), s.reader(tb.file, 1)  # type: ignore[arg-type]
    for sa, na, sb, nb, _ in _windows(ta, tb, ta.n_elements):
        s.check()
        if not np.array_equal(ra.read(sa, na), rb.read(sb, nb)):
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


def _numeric(ta: TensorInfo, tb: TensorInfo, s: Stream) -> _Acc:
    """The metric sums of every window, on the stream's threads (decoding and the
    compiled sums release the GIL), each thread reading through its own pair of
    readers; the windows' sums are merged in window order."""
    ea, eb = ta.file.endian, tb.file.endian  # type: ignore[union-attr]
    la, lb = _tensor_layout(ta), _tensor_layout(tb)

    def window(w: tuple[int, int, int, int, int]) -> _Acc:
        sa, na, sb, nb, k = w
        x = decode(la, s.reader(ta.file, 0).read(sa, na), k, ea, name=ta.name)  # type: ignore[arg-type]
        y = decode(lb, s.reader(tb.file, 1).read(sb, nb), k, eb, name=tb.name)  # type: ignore[arg-type]
        acc = _Acc()
        acc.add(x, y)
        return acc

    total = _Acc()
    for part in s.map(window, _windows(ta, tb, ta.n_elements)):
        total.merge(part)
    return total


def _in_file(t: TensorInfo) -> str | None:
    size = t.file.source.size  # type: ignore[union-attr]
    if t.offset < 0 or t.offset + t.nbytes > size:
        return f"data [{t.offset}, {t.offset + t.nbytes}) runs past the end of {t.file.path} ({size} bytes)"  # type: ignore[union-attr]
    if t.layout not in LAYOUTS:
        return f"unknown block layout {t.layout!r}"
    return None


def diff_tensor(ta: TensorInfo, tb: TensorInfo, stream: Stream) -> TensorDiff:
    """Compare one tensor present in both files, reading through ``stream``."""
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
                and _bytes_equal(ta, tb, stream):  # type: ignore[union-attr]
            return TensorDiff(status="identical", max_abs=0.0, rmse=0.0, rel_rmse=0.0, cosine=1.0,
                              snr_db=math.inf, **base)
        acc = _numeric(ta, tb, stream)
    except NotImplementedError as exc:
        return TensorDiff(status="changed", error=f"not compared numerically: {exc}", **base)
    except ValueError as exc:
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
    from ggscope.model.summary import LEGACY_FORMATS, is_legacy_llama  # lazy: 1 more module only when used
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
    remote = a.source.remote or b.source.remote          # a remote source: one reader at a time
    with Stream(cancel=cancel, what="diff", remote=remote) as stream:
        for name in tensor_names(a, b):
            stream.check()
            ta, tb = by_a.get(name), by_b.get(name)
            if tb is None:
                td = _only(ta, "removed")  # type: ignore[arg-type]
            elif ta is None:
                td = _only(tb, "added")
            else:
                td = diff_tensor(ta, tb, stream)
            yield td if td.name == name else replace(td, name=name)


def diff_files(a: ModelFile, b: ModelFile, *, metadata_only: bool = False,
               progress: Callable[[int, int, str], Any] | None = None, cancel: Any = None) -> DiffResult:
    """Everything that differs from ``a`` (the reference) to ``b``; see the module contract."""
    from ggscope.model.summary import summarize  # lazy: 1 more module only when used
    header = diff_header(a, b)
    meta = diff_metadata(a, b)
    sums = {"summary_a": summarize(a), "summary_b": summarize(b)}
    if metadata_only:
        return DiffResult(a.path, b.path, header, meta, (), metadata_only=True, **sums)
    names = tensor_names(a, b)
    out: list[TensorDiff] = []
    label = "comparing "
    hook = None if progress is None else (lambda done, total, desc: progress(done, total, desc[len(label):]))
    with _progress.from_callback(hook, label + "tensors", len(names), with_desc=True) as task:
        task.update(0, len(names), label + (names[0] if names else ""))
        for i, td in enumerate(iter_tensor_diffs(a, b, cancel=cancel), 1):
            out.append(td)
            task.update(i, len(names), label + (names[i] if i < len(names) else ""))
    return DiffResult(a.path, b.path, header, meta, tuple(out), **sums)


def first_by_name(tensors: Sequence[TensorInfo]) -> dict[str, TensorInfo]:
    """Name -> tensor; a duplicated name (a damaged or odd file) keeps its first tensor."""
    out: dict[str, TensorInfo] = {}
    for t in tensors:
        out.setdefault(t.name, t)
    return out
