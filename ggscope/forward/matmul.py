"""How ggml-cpu multiplies a weight by activations, and weights left in the file's encoding.

Why: llama.cpp's CPU backend does not multiply float32 by float32 when a weight is
quantized or half precision: it first converts the activations to the weight type's
``vec_dot_type`` (Q8_0 blocks for the 32-element types, Q8_K for the K and IQ types,
F16 / BF16 for those), and the rounding that costs is what separates a plain float
forward pass from llama.cpp's logits by up to 3e-2 on Q8_0 files (llama-cpp-arch
MANIFEST).  ``linear`` reproduces it for any weight that carries its ggml type
(``Mat``).  And llama.cpp never expands the token embedding -- the largest matrix of
today's models (262144 × 640 of gemma-3-270m's 268 M parameters) -- to float32: it
gathers the rows it needs (``ggml_get_rows``) and, when the output is tied to it,
multiplies by it in its own encoding.  ``StreamedRows`` does the same: the table stays
in the file's memory map, rows are decoded on lookup, and the product decodes bounded
chunks of rows into one reused float32 buffer.

A matrix that is only multiplied by is a ``Packed``: its blocks in memory.  Where
``ggml_ops`` multiplies its type from the blocks (``Q0_TYPES``) that is all a forward pass
in llama.cpp's arithmetic reads, so no float32 copy is made at load (issue 28 item 5);
the values are decoded when a product ggml_ops declines (one activation row of a K
type, no compiled extension) or a caller (attribution) needs them -- once, into the
slot the load's budget gave the matrix, or, past ``loading.DECODED_BUDGET``, afresh for
each such product.

Where ``ggml_ops`` has ggml-cpu's own kernel for a weight type and shape (F16, Q8_0,
Q4_0, Q5_0, IQ4_NL, Q4_1, Q5_1, Q4_K: llamafile's sgemm, the repacked paths, vec_dot),
``linear`` and
``StreamedRows.project`` use it: the same bits as llama.cpp, not only the same rounding.

Contract: ``linear(x, w, b=None)`` is ``x @ w.T + b`` for x [T, in] and w [out, in] (a
``Mat``, a plain array, ``Packed`` or ``StreamedRows``: the same bits whichever holds the
weight); ``typed(arr, ggml_type, raw=None)`` tags a
weight (with ``raw``, a Q4_1 / Q5_1 weight also keeps its block mins for the Q8_1 sum term);
``round_activations(x, kind)`` is the conversion alone.
"""
from __future__ import annotations

import threading

import numpy as np

from ggscope.core.errors import GGScopeError
from ggscope.facts.ggml_types import LAYOUTS
from ggscope.forward import ggml_ops
from ggscope.forward.loading import decode_blocks
from ggscope.source.ranges import RangeReader
from ggscope.quant import dequantizer

__all__ = ["Mat", "Packed", "StreamedRows", "linear", "typed", "block_mins", "round_activations",
           "q8_1_sum_correction", "CHUNK_ELEMS"]

CHUNK_ELEMS = 1 << 22          # rows decoded per step of a streamed product: 16 MiB of float32


# ggml-cpu multiplies a weight of type W by activations first converted to
# type_traits_cpu[W].vec_dot_type: F16 -> F16, BF16 -> BF16, the 32-element block types ->
# Q8_0 (Q8_1 for Q4_1/Q5_1: the same rounded values), the 256-element K and IQ types -> Q8_K.
_VEC_DOT = {"F16": "f16", "BF16": "bf16",
            **{t: "q8_0" for t in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "IQ4_NL", "MXFP4")},
            **{t: "q8_k" for t in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS",
                                   "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_XS",
                                   "TQ1_0", "TQ2_0")}}


# Types whose blocks carry a min (x = d*q + m): ggml-cpu multiplies them by Q8_1 blocks,
# whose fp16 field s = d*sum(q) stands for the activations' block sum (ggml-common.h
# block_q8_1; ggml-cpu/arch/x86/quants.c ggml_vec_dot_q4_1_q8_1 / _q5_1_q8_1: sumf +=
# d_x*d_y*sumi + m_x*s_y).  The block layout keeps m as the second fp16.
_WITH_MIN = {"Q4_1": 20, "Q5_1": 24}


class Mat(np.ndarray):
    """A float32 weight that remembers how llama.cpp rounds what it multiplies
    (``vec_dot``: None for F32 weights), its ggml type, for Q4_1 / Q5_1 its blocks' mins
    ([out, in/32], for the Q8_1 s term) and for ``ggml_ops.Q0_TYPES`` its blocks (the integers
    ``ggml_ops`` multiplies as ggml does).  Views keep the tags; a slice's blocks are
    no longer its own, so ``ggml_ops`` checks their size before use."""
    vec_dot: str | None = None
    mins: np.ndarray | None = None
    ggml_type: str | None = None
    blocks: np.ndarray | None = None

    def __array_finalize__(self, obj) -> None:
        self.vec_dot = getattr(obj, "vec_dot", None)
        self.mins = getattr(obj, "mins", None)
        self.ggml_type = getattr(obj, "ggml_type", None)
        self.blocks = getattr(obj, "blocks", None)


def typed(arr: np.ndarray, ggml_type: str, raw: np.ndarray | None = None) -> np.ndarray:
    """``arr`` tagged with its type's activation rounding; ``raw`` (the tensor's bytes)
    gives a Q4_1 / Q5_1 matrix its block mins and a ``ggml_ops.Q0_TYPES`` matrix its blocks."""
    kind = _VEC_DOT.get(ggml_type)
    if kind is None or arr.ndim < 2:
        return arr
    out = arr.view(Mat)
    out.vec_dot, out.ggml_type = kind, ggml_type
    if raw is not None and arr.ndim == 2:
        out.mins = block_mins(raw, ggml_type, arr.shape)
        if ggml_type in _Q0_BLOCKS:
            out.blocks = np.ascontiguousarray(raw, np.uint8).reshape(-1)
    return out


_Q0_BLOCKS = ggml_ops.Q0_TYPES     # the types ggml_ops multiplies from their blocks


def block_mins(raw: np.ndarray, ggml_type: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """The block mins [out, in/32] of a Q4_1 / Q5_1 matrix of numpy ``shape`` from its
    bytes ``raw``; None for another type or bytes that are not its blocks."""
    block = _WITH_MIN.get(ggml_type)
    if block is None or len(shape) != 2 or shape[1] % 32:
        return None
    blocks = np.frombuffer(np.ascontiguousarray(raw).tobytes(), np.uint8).reshape(-1, block)
    if blocks.shape[0] != shape[0] * shape[1] // 32:
        return None
    return blocks[:, 2:4].copy().view("<f2").astype(np.float32).reshape(shape[0], shape[1] // 32)


def q8_1_sum_correction(x: np.ndarray, mins: np.ndarray) -> np.ndarray:
    """What ggml's Q8_1 ``s`` field adds over the rounded activations' own block sums:
    ``(fp16(d*sum(q)) - fp16(d)*sum(q)) @ mins.T`` for x [T, in], mins [out, in/32]."""
    T, n = x.shape
    xb = np.asarray(x, np.float32).reshape(T, n // 32, 32)
    amax = np.abs(xb).max(axis=-1)                                         # [T, nb]
    d = amax / np.float32(127)
    qsum = np.rint(xb * _q8_iscale(amax)[..., None]).sum(axis=-1, dtype=np.float32)     # [T, nb]
    s16 = (d * qsum).astype(np.float16).astype(np.float32)
    d16 = d.astype(np.float16).astype(np.float32)
    return (s16 - d16 * qsum) @ mins.T                                     # [T, out]


def _q8_iscale(amax: np.ndarray) -> np.ndarray:
    """The factor ggml-cpu's x86 quantize_row_q8_0 / _q8_1 scale a block by: ``127.f /
    amax`` (ggml-cpu/arch/x86/quants.c), not the reference's ``1.0f/d`` with d = amax/127
    -- the two differ by an ulp often enough to move one q by one in some blocks (on
    gemma-3-270m's Q8_0 attention inputs, 0.05 % relative error in q, k and v)."""
    return np.divide(np.float32(127), amax, out=np.zeros_like(amax), where=amax > 0)


def round_activations(x: np.ndarray, kind: str | None) -> np.ndarray:
    """``x`` [..., n] as ggml-cpu's quantize_row_<kind> then dequantize would give it.

    q8_0: blocks of 32, d = amax/127, q = round-half-even(x·127/amax), value fp16(d)·q.
    q8_k: blocks of 256, d = max/-127 as float32 (max: the element of largest |x|),
    q = min(127, round-half-even(x/d)).  f16 / bf16: rounded to that format.
    """
    if kind is None:
        return x
    if kind == "f16":
        return x.astype(np.float16).astype(np.float32)
    if kind == "bf16":
        u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
        r = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16 << 16).astype(np.uint32)
        return np.where(np.isnan(x), x, r.view(np.float32))
    n = x.shape[-1]
    block = 32 if kind == "q8_0" else 256
    if n % block:
        return x
    xb = x.reshape(*x.shape[:-1], n // block, block).astype(np.float32)
    if kind == "q8_0":
        amax = np.abs(xb).max(axis=-1, keepdims=True)
        d = amax / np.float32(127)
        q = np.rint(xb * _q8_iscale(amax))
        out = q * d.astype(np.float16).astype(np.float32)
    else:
        idx = np.abs(xb).argmax(axis=-1)[..., None]
        mx = np.take_along_axis(xb, idx, axis=-1)
        iscale = np.divide(np.float32(-127), mx, out=np.zeros_like(mx), where=mx != 0)
        q = np.minimum(np.rint(iscale * xb), 127)
        d = np.divide(np.float32(1), iscale, out=np.zeros_like(iscale), where=iscale != 0)
        out = q * d
    return out.reshape(x.shape).astype(np.float32)


_scratch = threading.local()


class Packed:
    """A weight matrix kept in the file's encoding: its blocks in memory (``loading``
    reads them), about one byte a parameter for Q8_0 where float32 takes four.

    ``product(x)`` multiplies from the blocks where ``ggml_ops`` has ggml-cpu's kernel for
    the type and shape (``ggml_ops.Q0_TYPES``, llama.cpp's rounding asked for): nothing is
    decoded.  Else ``values()`` gives the matrix as float32, decoded through the compiled
    decoders and tagged with the type's activation rounding (and a Q4_1 / Q5_1 matrix's
    block mins, read once here) unless ``rounded`` is False (``--exact``).  With a ``slot``
    (room for the values in the load's arena, ``loading.Budget``) the values are decoded
    the first time something needs them and kept there; without one (a load past its
    budget) they are decoded afresh for each product, and only one matrix is expanded at a
    time.  Decoding is exact: either way the product is the one of the matrix decoded at
    load, bit for bit.
    """

    def __init__(self, blocks: np.ndarray, layout: str, ggml_type: str, shape: tuple[int, ...],
                 byteorder: str = "little", rounded: bool = True, slot: np.ndarray | None = None) -> None:
        self.blocks, self.layout, self.type, self.byteorder = blocks, layout, ggml_type, byteorder
        self.shape = tuple(int(d) for d in shape)
        self.ndim = len(self.shape)
        self.vec_dot = _VEC_DOT.get(ggml_type) if rounded and self.ndim >= 2 else None
        self.mins = block_mins(blocks, ggml_type, self.shape) if self.vec_dot else None
        n = int(np.prod(self.shape, dtype=np.int64))
        if slot is not None and (slot.dtype != np.float32 or slot.size != n or not slot.flags.c_contiguous):
            raise ValueError(f"a slot for {n} float32 values, not {slot.size} {slot.dtype}")
        self.slot = slot
        self._kept: np.ndarray | None = None
        self._lock = threading.Lock()

    def product(self, x: np.ndarray) -> np.ndarray | None:
        """``x @ self.T`` from the blocks by ggml's own kernel, or None where ggml takes a
        path ``ggml_ops`` does not have (the caller multiplies ``values()`` instead)."""
        if self.vec_dot is None or self.type not in _Q0_BLOCKS or np.ndim(x) != 2 \
                or self.ndim != 2 or x.shape[1] != self.shape[1]:
            return None
        return ggml_ops.product_blocks(np.asarray(x, np.float32), self.blocks, self.type, self.shape[0])

    def values(self, reuse: bool = False) -> np.ndarray:
        """The matrix as float32: the kept values when there is a ``slot`` (decoded on the
        first call); else fresh, or with ``reuse`` in this thread's scratch buffer (kept at
        the largest packed matrix: no fresh pages to fault in per product), valid until the
        thread's next ``values(reuse=True)``."""
        if self.slot is not None:
            with self._lock:
                if self._kept is None:
                    self._kept = self._decoded(self.slot.reshape(self.shape))
            return self._kept
        n = int(np.prod(self.shape, dtype=np.int64))
        if reuse:
            buf = getattr(_scratch, "buf", None)
            if buf is None or buf.size < n:
                _scratch.buf = buf = None          # the old buffer goes before the new one comes
                _scratch.buf = buf = np.empty(n, np.float32)
            out = buf[:n].reshape(self.shape)
        else:
            out = np.empty(self.shape, np.float32)
        return self._decoded(out)

    def _decoded(self, out: np.ndarray) -> np.ndarray:
        decode_blocks(self.layout, self.blocks, out, self.byteorder)
        if self.vec_dot is None:
            return out
        arr = out.view(Mat)
        arr.vec_dot, arr.mins, arr.ggml_type = self.vec_dot, self.mins, self.type
        if self.type in _Q0_BLOCKS:
            arr.blocks = self.blocks
        return arr


class StreamedRows:
    """A [rows, cols] weight kept in the file's encoding (llama.cpp's token_embd), and in
    the file: nothing of it is read at load.

    ``rows(ids)`` reads and decodes only the rows asked for; ``project(x)`` is
    ``x @ self.T``, reading ``CHUNK_ELEMS`` elements' worth of rows at a time into one
    reused buffer (``ggscope.source.ranges.RangeReader``: page cache, not the process's
    memory, and a file that shrinks meanwhile is ``FileChanged``) and decoding them into
    another, with x rounded as ggml-cpu rounds it for this type.  The source file must
    stay in place; one thread uses an instance at a time.
    """

    def __init__(self, info, shape: tuple[int, int], what: str) -> None:
        rows, cols = shape
        self.info, self.shape, self.ndim = info, (int(rows), int(cols)), 2
        self.layout = LAYOUTS.get(info.layout)
        if self.layout is None:
            raise GGScopeError(f"{what}: unknown block layout {info.layout!r}")
        dequantizer(info.layout)                     # NotImplementedError names the layout
        lay = self.layout
        if cols % lay.block_elems:
            raise GGScopeError(f"{what}: rows of {cols} are not whole {info.layout} blocks")
        self.row_bytes = cols // lay.block_elems * lay.block_bytes
        size = info.file.source.size if info.file is not None else 0
        held = max(0, min(rows * self.row_bytes, size - int(info.offset)))
        if held != rows * self.row_bytes:
            raise GGScopeError(f"{what}: the file holds {held} of its "
                               f"{rows * self.row_bytes} data bytes")
        self.byteorder = getattr(info.file, "endian", "little") or "little"
        self.vec_dot = _VEC_DOT.get(info.type)
        self.chunk_rows = max(1, CHUNK_ELEMS // max(1, cols))
        self._reader: RangeReader | None = None

    def _read(self, r0: int, r1: int) -> np.ndarray:
        """Rows [r0, r1) as they are stored: (r1 - r0, row_bytes) uint8, valid until the next read."""
        if self._reader is None:
            self._reader = RangeReader(self.info.file)
        raw = self._reader.read(int(self.info.offset) + r0 * self.row_bytes, (r1 - r0) * self.row_bytes)
        return raw.reshape(r1 - r0, self.row_bytes)

    def _decode(self, raw_rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        return decode_blocks(self.info.layout, np.ascontiguousarray(raw_rows), out, self.byteorder)

    def rows(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.shape[0]):
            raise IndexError(f"row ids must lie in 0..{self.shape[0] - 1}")
        raw = np.empty((ids.size, self.row_bytes), np.uint8)
        for j, r in enumerate(ids.tolist()):
            raw[j] = self._read(r, r + 1)[0]
        out = np.empty((ids.size, self.shape[1]), dtype=np.float32)
        return self._decode(raw, out)

    def project(self, x: np.ndarray) -> np.ndarray:
        """``x @ self.T``, each chunk of rows through ggml's own kernel where it has one
        (``ggml_ops``: Q8_0 / Q4_0 from the stored blocks, F16 decoded), else numpy
        over x rounded as ggml rounds it."""
        x = np.asarray(x, dtype=np.float32)
        exact_ok = self.vec_dot is not None and ggml_ops.AVAILABLE and x.ndim == 2
        xr = round_activations(x, self.vec_dot)
        rows, cols = self.shape
        f16 = exact_ok and self.info.type == "F16"
        vecdot = ggml_ops.f16_vecdot(x.shape[0], rows, cols)
        out = np.empty((x.shape[0], rows), dtype=np.float32)
        buf = np.empty((min(self.chunk_rows, rows), cols), dtype=np.float32)
        for r0 in range(0, rows, self.chunk_rows):
            r1 = min(rows, r0 + self.chunk_rows)
            raw = self._read(r0, r1)
            got = None
            if exact_ok and self.info.type in _Q0_BLOCKS:
                got = ggml_ops.product_blocks(x, raw, self.info.type, r1 - r0, matrix_rows=rows)
            if got is None:
                w = self._decode(raw, buf[:r1 - r0])
                if f16:
                    got = ggml_ops.product_f16_rows(x, w, vecdot)
                if got is None:
                    np.matmul(xr, w.T, out=out[:, r0:r1])
                    continue
            out[:, r0:r1] = got
        return out


def linear(x: np.ndarray, w, b: np.ndarray | None = None) -> np.ndarray:
    """ggml_mul_mat(w, x) (+ b): x [T, in], w [out, in] -> [T, out], x rounded as
    llama.cpp's CPU backend rounds it for w's type -- and, where ``ggml_ops`` has ggml's
    kernel for the type and shape, summed in ggml's order, bit for bit."""
    y = None
    if isinstance(w, Packed):
        y = w.product(x)                         # from the blocks: nothing decoded
        if y is not None:
            return y + b if b is not None else y
        w = w.values(reuse=True)                 # kept, or used only for this product
    if isinstance(w, StreamedRows):
        y = w.project(x)
    elif getattr(w, "vec_dot", None) is not None and np.ndim(x) == 2:
        y = ggml_ops.product(np.asarray(x, np.float32), w)
    if y is None and not isinstance(w, StreamedRows):
        mins = getattr(w, "mins", None)
        xr = round_activations(np.asarray(x), getattr(w, "vec_dot", None))
        y = xr @ np.asarray(w).T
        if mins is not None and x.ndim == 2 and mins.shape == (y.shape[-1], x.shape[1] // 32):
            y = y + q8_1_sum_correction(x, mins)
    return y + b if b is not None else y
