"""Dequantization of every ggml block layout to float32, whole or streamed.

Why: stats, diff, the validator's deep checks and the forward pass all need tensor
values; they get them here, through ``ggml_types.LAYOUTS``, which names for each layout
the codec module that decodes it.  Codecs are vectorized numpy over
``(n_blocks, block_bytes)`` and bit-exact with ggml's ``to_float`` (tested against the
ggml oracle files in ../shared/fixtures/ggml).

Contract
--------
* ``dequantize(layout, data, n_elements, byteorder="little")`` -> 1-D float32 of
  ``n_elements`` (ggml element order); ``layout`` is a name or one tensor's ``Layout``
  (``ggml_types.tensor_layout``: BIT1 rows padded to whole words).  ``data`` is bytes-like or a numpy array holding
  exactly ``n_elements / block_elems * block_bytes`` bytes.
* ``iter_dequantized(layout, data, n_elements, chunk_elems=..., byteorder=...)`` yields
  float32 chunks of whole blocks, each at most ``max(chunk_elems, block_elems)``
  elements: peak memory is bounded whatever the tensor size.
* ``dequantize_tensor(t)`` -> float32 of numpy shape ``t.np_shape`` for a
  ``TensorInfo`` (uses ``t.layout``, ``t.raw()`` and ``t.file.endian``).
* Unknown layouts, element counts that are not whole blocks and byte counts that do not
  match raise ``ValueError`` naming the tensor/layout and expected vs actual bytes.  A
  layout without a decoder (the repacked AArch64 layouts, or the IQ family when
  ``ggscope.quant.iquants`` is absent) raises ``NotImplementedError`` naming it.
* ``byteorder`` ("little"/"big") is the byte order of multi-byte scalar fields (element
  values and block scales), as in big-endian GGUF v3 files.
"""
from __future__ import annotations

from functools import lru_cache

import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from ggscope.facts.ggml_types import LAYOUTS, Layout, tensor_layout

if TYPE_CHECKING:
    from ggscope.model.modelfile import TensorInfo

__all__ = ["dequantize", "iter_dequantized", "dequantize_tensor", "dequantizer", "decode_into",
           "code_values", "DEFAULT_CHUNK_ELEMS"]

DEFAULT_CHUNK_ELEMS = 1 << 20          # streaming chunk: 4 MiB of float32
_WORK_ELEMS = 1 << 18                  # internal work unit (measured best: few calls, temporaries ~1 MB)

_Codec = Callable[..., np.ndarray]
_cache: dict[str, tuple[_Codec, bool]] = {}


def _layout(name: "str | Layout", what: str) -> Layout:
    if isinstance(name, Layout):                 # one tensor's layout (ggml_types.tensor_layout)
        return name
    lay = LAYOUTS.get(name)
    if lay is None:
        raise ValueError(f"{what}: unknown block layout {name!r}")
    return lay


def dequantizer(layout: str) -> tuple[_Codec, bool]:
    """The codec for ``layout`` and whether it accepts ``byteorder``/``out`` arguments."""
    hit = _cache.get(layout)
    if hit is not None:
        return hit
    lay = _layout(layout, layout)
    if lay.codec is None:
        raise NotImplementedError(f"{layout}: no dequantizer for this layout ({lay.fields}; {lay.era})")
    module = importlib.import_module(f"{__name__}.{lay.codec}")   # by name: only the codec asked for loads
    fn = getattr(module, "DEQUANTIZERS", {}).get(layout)
    if fn is None:
        raise NotImplementedError(f"{layout}: ggscope.quant.{lay.codec} has no dequantizer for it")
    try:
        params = inspect.signature(fn).parameters
        full = "byteorder" in params and "out" in params
    except (TypeError, ValueError):
        full = False
    _cache[layout] = (fn, full)
    return fn, full


def _blocks(lay: Layout, data, n_elements: int, what: str) -> np.ndarray:
    """``data`` as a (n_blocks, block_bytes) uint8 array, after checking its size."""
    if isinstance(data, np.ndarray):
        arr = data if data.dtype == np.uint8 else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        arr = arr.reshape(-1)
    else:
        arr = np.frombuffer(data, dtype=np.uint8)
    if not isinstance(n_elements, (int, np.integer)) or n_elements < 0:
        raise ValueError(f"{what}: invalid element count {n_elements!r}")
    n_elements = int(n_elements)
    if n_elements % lay.block_elems:
        raise ValueError(f"{what}: {n_elements} elements is not a whole number of "
                         f"{lay.name} blocks of {lay.block_elems}")
    n_blocks = n_elements // lay.block_elems
    expected = n_blocks * lay.block_bytes
    if arr.size != expected:
        raise ValueError(f"{what}: {lay.name} data of {n_elements} elements needs {expected} bytes, "
                         f"got {arr.size}")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr.reshape(n_blocks, lay.block_bytes)


def _fill(fn: _Codec, full: bool, blocks: np.ndarray, out: np.ndarray, byteorder: str,
          layout: str, work_elems: int = _WORK_ELEMS) -> None:
    """Decode ``blocks`` into ``out`` (n_blocks, block_elems) in work units of ``work_elems``."""
    if byteorder not in ("little", "big"):
        raise ValueError(f"byteorder must be 'little' or 'big', not {byteorder!r}")
    if not full and byteorder != "little":
        raise NotImplementedError(f"{layout}: big-endian blocks are not supported by its dequantizer")
    n_blocks, block_elems = out.shape
    step = max(1, work_elems // block_elems)
    for i in range(0, n_blocks, step):
        j = min(n_blocks, i + step)
        if full:
            fn(blocks[i:j], byteorder, out[i:j])
        else:
            out[i:j] = np.asarray(fn(blocks[i:j]), dtype=np.float32).reshape(j - i, block_elems)


def decode_into(layout: str, blocks: np.ndarray, out: np.ndarray, byteorder: str = "little") -> np.ndarray:
    """Decode ``blocks`` (n_blocks, block_bytes) uint8 into ``out`` (n_blocks,
    block_elems) float32 in one codec call: the caller's chunk is the work unit (it
    sized it for its own passes); returns ``out``."""
    fn, full = dequantizer(layout)
    _fill(fn, full, blocks, out, byteorder, layout, work_elems=out.size)
    return out


def dequantize(layout: "str | Layout", data, n_elements: int, byteorder: str = "little",
               *, name: str | None = None) -> np.ndarray:
    """All elements of ``data`` (stored in ``layout``) as a 1-D float32 array."""
    lay = _layout(layout, f"tensor {name!r} ({layout})" if name else str(layout))
    what = f"tensor {name!r} ({lay.name})" if name else lay.name
    blocks = _blocks(lay, data, n_elements, what)
    fn, full = dequantizer(lay.name)
    out = np.empty(int(n_elements), dtype=np.float32)
    _fill(fn, full, blocks, out.reshape(blocks.shape[0], lay.block_elems), byteorder, lay.name)
    assert out.dtype == np.float32 and out.shape == (int(n_elements),)
    return out


@lru_cache(maxsize=None)
def code_values(layout: str, byteorder: str) -> np.ndarray:
    """float32 value of every code of a one-element layout of at most 16 bits (F16, BF16,
    I8, I16), indexed by the code as read natively: the lookup table behind statistics
    by code and the compiled kernels' f16 scales.  Read-only."""
    lay = _layout(layout, layout)
    if lay.block_elems != 1 or lay.block_bytes > 2:
        raise ValueError(f"{layout}: not a one-element layout of at most 16 bits")
    n = 1 << (8 * lay.block_bytes)
    keys = np.arange(n, dtype=np.uint16 if lay.block_bytes == 2 else np.uint8)
    with np.errstate(invalid="ignore"):         # the NaN codes
        out = dequantize(layout, keys.view(np.uint8), n, byteorder)
    out.flags.writeable = False
    return out


def iter_dequantized(layout: "str | Layout", data, n_elements: int, chunk_elems: int = DEFAULT_CHUNK_ELEMS,
                     byteorder: str = "little", *, name: str | None = None) -> Iterator[np.ndarray]:
    """Yield the elements as consecutive 1-D float32 chunks of whole blocks.

    Each chunk has at most ``max(chunk_elems, block_elems)`` elements; sizes are checked
    before the first chunk is produced.
    """
    lay = _layout(layout, f"tensor {name!r} ({layout})" if name else str(layout))
    what = f"tensor {name!r} ({lay.name})" if name else lay.name
    blocks = _blocks(lay, data, n_elements, what)
    fn, full = dequantizer(lay.name)
    step = max(1, int(chunk_elems) // lay.block_elems)
    for i in range(0, blocks.shape[0], step):
        part = blocks[i:i + step]
        out = np.empty((part.shape[0], lay.block_elems), dtype=np.float32)
        _fill(fn, full, part, out, byteorder, lay.name)
        yield out.reshape(-1)


def dequantize_tensor(t: "TensorInfo") -> np.ndarray:
    """A tensor's values as float32 with numpy shape ``t.np_shape`` (ggml order reversed)."""
    endian = getattr(t.file, "endian", "little") if t.file is not None else "little"
    lay = tensor_layout(t.layout, int(t.shape[0]) if len(t.shape) else 1) or t.layout
    flat = dequantize(lay, t.raw(), t.n_elements, endian, name=t.name)
    return flat.reshape(t.np_shape)
