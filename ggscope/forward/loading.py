"""How the forward passes get weights off the disk: through the compiled decoders.

Why: the forward passes used to take every weight through ``TensorInfo.dequantize()``,
the numpy codecs (about 1 G elements per CPU-second, 17-31 s for a 1.26 G-parameter
Q8_0 model) and kept all of it as float32, 4 bytes a parameter: 0.7x the peak memory of
transformers' own GGUF path (issue 27 item 5).  Here a tensor's bytes are read in
windows of whole blocks (``ggscope.source.stream``: ``readinto`` a reused buffer per
thread, so no page of the file's map enters the process and a remote file's pages go
back after each window) and every window is decoded straight into its slice of one
preallocated float32 array by the compiled decoders (``ggscope.stats.cstats.decode``,
the GIL released, on the stream's threads; bit for bit the numpy codecs, which decode the
layouts the compiled kernels lack the same way).  And a model too big to hold as float32
is not expanded: ``Budget`` says how many float32 bytes of weight matrices a load may
keep decoded (``DECODED_BUDGET``); the matrices past it stay in the file's encoding,
in memory (``matmul.Packed``, about one byte a parameter for Q8_0, as llama.cpp keeps
them), and are decoded by ``decode_blocks`` each time a product needs them.  Decoding
is exact, so a weight gives the same float32 values decoded once or on every use, and
the logits do not change.

Contract:

* ``decode(info, out=None) -> ndarray``: float32 of numpy shape ``info.np_shape``, the values
  ``info.dequantize()`` gives.  ``ValueError`` when the file does not hold the bytes
  the tensor's type and shape need (checked before anything is allocated for it),
  ``NotImplementedError`` for a layout without a decoder, as ``dequantize``;
  ``FileChanged`` when the file changes meanwhile.
* ``read_blocks(info) -> ndarray``: the tensor's bytes as a new uint8 array (blocks ×
  block bytes), checked as ``decode`` checks them; ``decode_blocks(layout, blocks, out,
  byteorder)`` decodes such bytes (or any whole blocks of ``layout``) into ``out``
  (float32, C-contiguous, one value per element), on the same engines.
* ``Budget(limit, need=None).take(n)``: room for ``n`` float32 values in the load's arena while the
  values taken so far, these included, fit ``limit`` bytes, else None (the first weights
  of a load stay decoded -- or have the room to be decoded once, lazily: pages of the
  arena nothing writes cost no memory -- the rest packed).
"""
from __future__ import annotations

import numpy as np

from ggscope.facts.ggml_types import LAYOUTS, Layout, tensor_layout
from ggscope.quant import decode_into, dequantizer
from ggscope.source.stream import THREADS, Stream
from ggscope.stats import cstats

__all__ = ["decode", "read_blocks", "decode_blocks", "Budget", "DECODED_BUDGET", "WINDOW_BYTES"]

WINDOW_BYTES = 8 << 20          # bytes read and decoded per work item
# float32 bytes of weight matrices a load keeps decoded: a model with up to ~130 M parameters
# in its layers (gemma-3-270m's 100 M, the tiny test models) pays no decoding per forward
# call (``run --generate`` decodes nothing per token); past it a 1.26 G-parameter Q8_0 model
# holds ~1.2 GB of blocks and 0.5 GB of float32 instead of 5 GB of float32.
DECODED_BUDGET = 1 << 29


class Budget:
    """How many float32 values of weights one load may still keep decoded, and where.

    The values live in one arena of ``limit`` bytes -- or ``need``, the most the model's
    matrices can take, when that is less -- allocated on the first ``take``:
    numpy asks the kernel for huge pages for an allocation that large, so decoding into it
    faults pages in by the 2 MiB instead of by the 4 KiB (measured 0.2-0.3 s per GiB
    against 1.1-1.3 s on this machine; a matrix of a few MiB gets no such advice on its
    own), and the part a model does not use is never touched, so it costs no memory."""

    ALIGN = 16                       # float32 values: each slot starts on a 64-byte line

    def __init__(self, limit: int, need: int | None = None) -> None:
        self.limit = max(0, int(limit)) // 4
        self.size = self.limit if need is None else min(self.limit, max(0, int(need)) // 4)
        self.used = 0
        self.arena: np.ndarray | None = None

    def take(self, n: int) -> np.ndarray | None:
        """A float32 array of ``n`` values in the arena, or None once the budget is spent
        (past it once, everything after stays packed)."""
        if self.used + n > self.size:
            self.used = self.size
            return None
        if self.arena is None:
            self.arena = np.empty(self.size, np.float32)
        slot = self.arena[self.used:self.used + n]
        self.used += -(-n // self.ALIGN) * self.ALIGN
        return slot


def _byteorder(info) -> str:
    return getattr(info.file, "endian", "little") or "little"


def _checked(info) -> tuple[Layout, int]:
    """The tensor's layout and block count, once its type, shape and the file agree."""
    lay = LAYOUTS.get(info.layout)
    if lay is None:
        raise ValueError(f"tensor {info.name!r}: unknown block layout {info.layout!r}")
    n = int(info.n_elements)
    if n % lay.block_elems:
        raise ValueError(f"tensor {info.name!r} ({lay.name}): {n} elements is not a whole number "
                         f"of blocks of {lay.block_elems}")
    n_blocks = n // lay.block_elems
    need = n_blocks * lay.block_bytes
    size = info.file.source.size if info.file is not None else 0
    held = max(0, min(need, size - int(info.offset)))
    if held != need:
        raise ValueError(f"tensor {info.name!r} ({lay.name}) of {n} elements needs {need} bytes, "
                         f"the file holds {held} of them")
    if lay.codec is None or not cstats.available() or lay.name not in cstats.FUSED_LAYOUTS:
        dequantizer(lay.name)            # NotImplementedError names a layout without a decoder
    return lay, n_blocks


def _windows(lay: Layout, n_blocks: int) -> list[tuple[int, int]]:
    step = max(1, WINDOW_BYTES // lay.block_bytes)
    return [(b, min(n_blocks, b + step)) for b in range(0, n_blocks, step)]


def _decode_window(lay: Layout, blocks: np.ndarray, out: np.ndarray, byteorder: str) -> None:
    """Whole blocks (uint8) into ``out`` (float32, one row of ``block_elems`` per block)."""
    if cstats.available() and lay.name in cstats.FUSED_LAYOUTS and byteorder in ("little", "big"):
        cstats.decode(lay.name, blocks.reshape(-1), byteorder == "big", out.reshape(-1))
    else:
        decode_into(lay.name, blocks.reshape(-1, lay.block_bytes), out, byteorder)


def decode(info, out: np.ndarray | None = None) -> np.ndarray:
    """See the module docstring; ``out`` (float32, C-contiguous, one value per element)
    receives the values when given."""
    ne0 = int(info.shape[0]) if len(info.shape) else 1
    if tensor_layout(info.layout, ne0) is not LAYOUTS.get(info.layout):
        values = info.dequantize()       # BIT1 rows ending inside a block: a layout per tensor
        if out is None:
            return values
        out.reshape(-1)[:] = values.reshape(-1)
        return out.reshape(info.np_shape)
    lay, n_blocks = _checked(info)
    if out is None:
        out = np.empty((n_blocks, lay.block_elems), np.float32)
    elif out.dtype != np.float32 or out.size != n_blocks * lay.block_elems or not out.flags.c_contiguous:
        raise ValueError(f"tensor {info.name!r}: out must be C-contiguous float32 of {n_blocks * lay.block_elems}")
    out = out.reshape(n_blocks, lay.block_elems)
    order, src = _byteorder(info), info.file

    with Stream(threads=THREADS, remote=src.source.remote, what=f"loading {info.name}") as s:
        def work(window: tuple[int, int]) -> None:
            b0, b1 = window
            raw = s.reader(src).read(int(info.offset) + b0 * lay.block_bytes, (b1 - b0) * lay.block_bytes)
            _decode_window(lay, raw, out[b0:b1], order)
        s.map(work, _windows(lay, n_blocks))
    return out.reshape(info.np_shape)


def read_blocks(info) -> np.ndarray:
    """See the module docstring."""
    lay, n_blocks = _checked(info)
    out = np.empty((n_blocks, lay.block_bytes), np.uint8)
    with Stream(threads=1, what=f"loading {info.name}") as s:
        s.reader(info.file).read(int(info.offset), out.size, out=out)
    return out


def decode_blocks(layout: str, blocks: np.ndarray, out: np.ndarray, byteorder: str = "little") -> np.ndarray:
    """See the module docstring."""
    lay = LAYOUTS[layout]
    blocks = blocks.reshape(-1, lay.block_bytes)
    rows = out.reshape(-1, lay.block_elems)
    windows = _windows(lay, blocks.shape[0])
    if len(windows) == 1:
        _decode_window(lay, blocks, rows, byteorder)
        return out
    with Stream(threads=THREADS, what=f"decoding {layout}") as s:
        s.map(lambda w: _decode_window(lay, blocks[w[0]:w[1]], rows[w[0]:w[1]], byteorder), windows)
    return out
