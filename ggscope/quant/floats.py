"""Unquantized element types (F32, F16, BF16, F64, I8..I64) and the scalar-field helpers
every block codec uses.

Why: these are the most common tensors in a model file and the block scales of every
quantized type are f16/f32 fields; both must convert exactly like ggml does (IEEE
conversions, NaN payloads kept) and fast.

Contract (shared by every codec module of ``ggscope.quant``): ``DEQUANTIZERS`` maps a
layout name to ``f(blocks, byteorder="little", out=None)``; ``blocks`` is a
``(n_blocks, block_bytes)`` uint8 array whose rows are contiguous, ``out`` an optional
``(n_blocks, block_elems)`` float32 array to fill.  The function returns the filled
float32 array.  ``byteorder`` applies to fields ggml declares as multi-byte scalars
(``ggml_half``, ``float``, ``int16_t``...); byte arrays such as ``qh[4]`` are read as
little-endian words as the docs specify (ggml-types.md §2 "Element order").
"""
from __future__ import annotations

import numpy as np

__all__ = ["DEQUANTIZERS", "scalar_field", "half_to_float", "new_out"]

_F16_TO_F32_SCALE = np.float32(2.0 ** 112)      # 2^(127-15): rebias of an f16 exponent


def _code(byteorder: str) -> str:
    if byteorder == "little":
        return "<"
    if byteorder == "big":
        return ">"
    raise ValueError(f"byteorder must be 'little' or 'big', not {byteorder!r}")


def scalar_field(blocks: np.ndarray, offset: int, kind: str, byteorder: str = "little",
                 count: int = 1) -> np.ndarray:
    """A zero-copy ``(n_blocks, count)`` view of the scalar field(s) at ``offset`` of every
    block, with numpy type ``kind`` ("f2", "f4", "u2", "i2", ...) in ``byteorder``."""
    dt = np.dtype(_code(byteorder) + kind)
    return blocks[:, offset:offset + dt.itemsize * count].view(dt)


def f16_scale(blocks: np.ndarray, offset: int, byteorder: str) -> np.ndarray:
    """The f16 field at ``offset`` of every block as float32, shape (n_blocks, 1)."""
    return scalar_field(blocks, offset, "f2", byteorder).astype(np.float32)


def f32_scale(blocks: np.ndarray, offset: int, byteorder: str) -> np.ndarray:
    """The f32 field at ``offset`` of every block as native float32, shape (n_blocks, 1)."""
    return scalar_field(blocks, offset, "f4", byteorder).astype(np.float32)


def new_out(out: np.ndarray | None, n_blocks: int, block_elems: int) -> np.ndarray:
    """``out`` checked for shape and dtype, or a fresh (n_blocks, block_elems) float32."""
    if out is None:
        return np.empty((n_blocks, block_elems), dtype=np.float32)
    assert out.dtype == np.float32 and out.shape == (n_blocks, block_elems), (out.dtype, out.shape)
    return out


def half_to_float(h: np.ndarray, out: np.ndarray) -> np.ndarray:
    """IEEE binary16 bit patterns (int16/uint16, native order) -> float32 into ``out`` (flat).

    Exact for every input, like ggml's ``GGML_FP16_TO_FP32``: the 15 magnitude bits are
    shifted into an f32 and scaled by 2^112 (exact for normals and subnormals); the
    sign is carried by the scaling; exponent 31 (inf/NaN, rare) is patched afterwards
    keeping the NaN payload.  Faster than numpy's float16 cast.
    """
    o = out.view(np.int32)
    o[...] = h.view(np.int16)            # sign-extend: bits 15..31 copy the sign
    o <<= 13                             # magnitude to bits 13..27, sign in bits 28..31
    o &= np.int32(-0x70000001)           # 0x8FFFFFFF: keep sign bit 31 and bits 0..27
    f = out.view(np.float32)
    f *= _F16_TO_F32_SCALE
    if f.size and (f.max() >= 65536.0 or f.min() <= -65536.0):
        hv = h.view(np.uint16)
        special = (hv & 0x7C00) == 0x7C00
        hs = hv[special].astype(np.uint32)
        o[special] = (((hs & 0x8000) << 16) | 0x7F800000 | ((hs & 0x03FF) << 13)).view(np.int32)
    return out


# --- F32 ------------------------------------------------------------------------------
# block = one element:  0: f32
def dequantize_f32(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    out = new_out(out, blocks.shape[0], 1)
    out[...] = blocks.view(_code(byteorder) + "f4")
    return out


# --- F16 ------------------------------------------------------------------------------
# block = one element:  0: f16
def dequantize_f16(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    out = new_out(out, blocks.shape[0], 1)
    h = blocks.view(_code(byteorder) + "u2")
    if byteorder == "big":
        h = h.astype(np.uint16)
    half_to_float(h.reshape(-1), out.reshape(-1))
    return out


# --- BF16 -----------------------------------------------------------------------------
# block = one element:  0: bf16 = the upper 16 bits of an f32
def dequantize_bf16(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    out = new_out(out, blocks.shape[0], 1)
    o = out.view(np.uint32)
    o[...] = blocks.view(_code(byteorder) + "u2")
    o <<= 16
    return out


# --- F64, I8, I16, I32, I64 -------------------------------------------------------------
# block = one element; converted like C's (float)x: round to nearest even.
def _plain(kind: str):
    def dequantize(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
        out = new_out(out, blocks.shape[0], 1)
        with np.errstate(over="ignore"):     # an F64 beyond float32's range becomes inf, as in C
            out[...] = blocks.view(_code(byteorder) + kind)
        return out
    dequantize.__name__ = f"dequantize_{kind}"
    dequantize.__doc__ = f"numpy '{kind}' elements -> float32 (round to nearest even)."
    return dequantize


DEQUANTIZERS = {
    "F32": dequantize_f32,
    "F16": dequantize_f16,
    "BF16": dequantize_bf16,
    "F64": _plain("f8"),
    "I8": _plain("i1"),
    "I16": _plain("i2"),
    "I32": _plain("i4"),
    "I64": _plain("i8"),
}
