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

Contract: ``linear(x, w, b=None)`` is ``x @ w.T + b`` for x [T, in] and w [out, in] (a
``Mat``, a plain array or ``StreamedRows``); ``typed(arr, ggml_type)`` tags a weight;
``round_activations(x, kind)`` is the conversion alone.
"""
from __future__ import annotations

import numpy as np

from ggscope.core.errors import GGScopeError
from ggscope.facts.ggml_types import LAYOUTS
from ggscope.quant import decode_into, dequantizer

__all__ = ["Mat", "StreamedRows", "linear", "typed", "round_activations", "CHUNK_ELEMS"]

CHUNK_ELEMS = 1 << 22          # rows decoded per step of a streamed product: 16 MiB of float32


# ggml-cpu multiplies a weight of type W by activations first converted to
# type_traits_cpu[W].vec_dot_type: F16 -> F16, BF16 -> BF16, the 32-element block types ->
# Q8_0 (Q8_1 for Q4_1/Q5_1: the same rounded values), the 256-element K and IQ types -> Q8_K.
_VEC_DOT = {"F16": "f16", "BF16": "bf16",
            **{t: "q8_0" for t in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "IQ4_NL", "MXFP4")},
            **{t: "q8_k" for t in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS",
                                   "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_XS",
                                   "TQ1_0", "TQ2_0")}}


class Mat(np.ndarray):
    """A float32 weight that remembers how llama.cpp rounds what it multiplies
    (``vec_dot``: None for F32 weights).  Views (an expert's slice) keep it."""
    vec_dot: str | None = None

    def __array_finalize__(self, obj) -> None:
        self.vec_dot = getattr(obj, "vec_dot", None)


def typed(arr: np.ndarray, ggml_type: str) -> np.ndarray:
    kind = _VEC_DOT.get(ggml_type)
    if kind is None or arr.ndim < 2:
        return arr
    out = arr.view(Mat)
    out.vec_dot = kind
    return out


def round_activations(x: np.ndarray, kind: str | None) -> np.ndarray:
    """``x`` [..., n] as ggml-cpu's quantize_row_<kind> then dequantize would give it.

    q8_0: blocks of 32, d = amax/127, q = round-half-even(x/d), value fp16(d)·q.
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
        d = np.abs(xb).max(axis=-1, keepdims=True) / np.float32(127)
        inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d > 0)
        q = np.rint(xb * inv)
        out = q * d.astype(np.float16).astype(np.float32)
    else:
        idx = np.abs(xb).argmax(axis=-1)[..., None]
        mx = np.take_along_axis(xb, idx, axis=-1)
        iscale = np.divide(np.float32(-127), mx, out=np.zeros_like(mx), where=mx != 0)
        q = np.minimum(np.rint(iscale * xb), 127)
        d = np.divide(np.float32(1), iscale, out=np.zeros_like(iscale), where=iscale != 0)
        out = q * d
    return out.reshape(x.shape).astype(np.float32)


class StreamedRows:
    """A [rows, cols] weight kept in the file's encoding (llama.cpp's token_embd).

    ``rows(ids)`` decodes only the rows asked for; ``project(x)`` is ``x @ self.T``,
    decoding ``CHUNK_ELEMS`` elements at a time into one buffer, with x rounded as
    ggml-cpu rounds it for this type.  The source file must stay open.
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
        raw = info.raw()
        if raw.size != rows * self.row_bytes:
            raise GGScopeError(f"{what}: the file holds {raw.size} of its "
                               f"{rows * self.row_bytes} data bytes")
        self.raw = raw.reshape(rows, self.row_bytes)
        self.byteorder = getattr(info.file, "endian", "little") or "little"
        self.vec_dot = _VEC_DOT.get(info.type)
        self.chunk_rows = max(1, CHUNK_ELEMS // max(1, cols))

    def _decode(self, raw_rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        lay = self.layout
        blocks = np.ascontiguousarray(raw_rows).reshape(-1, lay.block_bytes)
        decode_into(self.info.layout, blocks, out.reshape(-1, lay.block_elems), self.byteorder)
        return out

    def rows(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.size, self.shape[1]), dtype=np.float32)
        return self._decode(self.raw[ids], out)

    def project(self, x: np.ndarray) -> np.ndarray:
        x = round_activations(np.asarray(x, dtype=np.float32), self.vec_dot)
        rows, cols = self.shape
        out = np.empty((x.shape[0], rows), dtype=np.float32)
        buf = np.empty((min(self.chunk_rows, rows), cols), dtype=np.float32)
        for r0 in range(0, rows, self.chunk_rows):
            r1 = min(rows, r0 + self.chunk_rows)
            w = self._decode(self.raw[r0:r1], buf[:r1 - r0])
            np.matmul(x, w.T, out=out[:, r0:r1])
        return out


def linear(x: np.ndarray, w, b: np.ndarray | None = None) -> np.ndarray:
    """ggml_mul_mat(w, x) (+ b): x [T, in], w [out, in] -> [T, out], x rounded as
    llama.cpp's CPU backend rounds it for w's type."""
    if isinstance(w, StreamedRows):
        y = w.project(x)
    else:
        x = round_activations(np.asarray(x), getattr(w, "vec_dot", None))
        y = x @ np.asarray(w).T
    return y + b if b is not None else y
