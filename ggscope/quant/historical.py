"""Block layouts ggml wrote before May 2023, and rwkv.cpp's version-100 layouts.

Why: GGML/GGMF/GGJT v1-v2 files, ggml-example files with quantization version 0 or 1
and rwkv.cpp version-100 files hold blocks whose scale width (f32 instead of f16) or
nibble order (interleaved instead of split halves) differs from today's types with the
same name.  Layout names and facts: ``ggml_types.LAYOUTS`` (legacy-formats.md §5, §6.4).

Formulas are those of ggml at the time: Q4_0/Q4_2 ``(q - 8) * d``, Q4_1/Q4_3/Q4_1_O
``q * d + m``, Q5_0 ``(q - 16) * d``, Q5_1 ``q * d + m``, Q8_0 ``q * d`` (float32, no FMA).

Contract: see ``floats.py``.
"""
from __future__ import annotations

import numpy as np

from ggscope.facts.layouts import RWKV100_SAME
from ggscope.quant.floats import f16_scale, f32_scale, new_out, scalar_field
from ggscope.quant.legacy import fifth_bits, finish, nibbles

__all__ = ["DEQUANTIZERS"]


# --- Q4_0_QNT0 / Q4_0_QNT1 (32 elems, 20 bytes) --------------------------------------
#  | f32 d | u8 qs[16] |   QNT0: byte j = x[2j] (lo), x[2j+1] (hi);  QNT1: x[j], x[j+16]
#  0       4           20   x = (q - 8) * d
def _q4_0_f32(interleaved: bool):
    def dequantize(blocks, byteorder="little", out=None):
        out = new_out(out, blocks.shape[0], 32)
        return finish(nibbles(blocks[:, 4:20], interleaved), out, f32_scale(blocks, 0, byteorder), bias=8)
    return dequantize


# --- Q4_1_QNT0 / Q4_1_QNT1 (32 elems, 24 bytes) --------------------------------------
#  | f32 d | f32 m | u8 qs[16] |   x = q * d + m
#  0       4       8           24
def _q4_1_f32(interleaved: bool):
    def dequantize(blocks, byteorder="little", out=None):
        out = new_out(out, blocks.shape[0], 32)
        return finish(nibbles(blocks[:, 8:24], interleaved), out,
                      f32_scale(blocks, 0, byteorder), f32_scale(blocks, 4, byteorder))
    return dequantize


# --- Q4_2 (16 elems, 10 bytes, 2023-04-18 -> 05-12) ----------------------------------
#  | f16 d | u8 qs[8] (interleaved) |   x = (q - 8) * d
#  0       2                        10
def dequantize_q4_2(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 16)
    return finish(nibbles(blocks[:, 2:10], True), out, f16_scale(blocks, 0, byteorder), bias=8)


# --- Q4_3 (16 elems, 12 bytes, 2023-04-20 -> 04-28) ----------------------------------
#  | f16 d | f16 m | u8 qs[8] (interleaved) |   x = q * d + m
#  0       2       4                        12
def dequantize_q4_3(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 16)
    return finish(nibbles(blocks[:, 4:12], True), out,
                  f16_scale(blocks, 0, byteorder), f16_scale(blocks, 2, byteorder))


# --- Q5_0_QNT0 (32 elems, 22 bytes, interleaved) -------------------------------------
#  | f16 d | u8 qh[4]: bit k = bit 4 of x[k] | u8 qs[16] (interleaved) |  x = (q - 16) * d
#  0       2                                 6                         22
def dequantize_q5_0_qnt0(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    codes = fifth_bits(nibbles(blocks[:, 6:22], True), blocks[:, 2:6])
    return finish(codes, out, f16_scale(blocks, 0, byteorder), bias=16)


# --- Q5_1_QNT0 (32 elems, 24 bytes, interleaved) -------------------------------------
#  | f16 d | f16 m | u8 qh[4] | u8 qs[16] (interleaved) |   x = q * d + m
#  0       2       4          8                         24
def dequantize_q5_1_qnt0(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    codes = fifth_bits(nibbles(blocks[:, 8:24], True), blocks[:, 4:8])
    return finish(codes, out, f16_scale(blocks, 0, byteorder), f16_scale(blocks, 2, byteorder))


# --- Q8_0_QNT0 (32 elems, 36 bytes, 2023-04-25 -> 05-19) -----------------------------
#  | f32 d | i8 qs[32] |   x = qs[j] * d
#  0       4           36
def dequantize_q8_0_qnt0(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    return finish(blocks[:, 4:36].view(np.int8), out, f32_scale(blocks, 0, byteorder))


# --- Q4_1_O (rwkv.cpp, 32 elems, 24 bytes) -------------------------------------------
#  | f16 d | f16 m | u16 outlier_index | f16 outlier_value | u8 qs[16] (interleaved) |
#  0       2       4                   6                   8                         24
#  x = q * d + m, then x[outlier_index] = outlier_value.  An index >= 32 (damaged
#  block: rwkv.cpp would write outside the block) leaves the block unpatched.
def dequantize_q4_1_o(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 32)
    finish(nibbles(blocks[:, 8:24], True), out, f16_scale(blocks, 0, byteorder), f16_scale(blocks, 2, byteorder))
    idx = scalar_field(blocks, 4, "u2", byteorder)[:, 0].astype(np.intp)
    val = f16_scale(blocks, 6, byteorder)[:, 0]
    rows = np.flatnonzero(idx < 32)
    out[rows, idx[rows]] = val[rows]
    return out


_Q4_0_QNT0 = _q4_0_f32(True)
_Q4_1_QNT0 = _q4_1_f32(True)

DEQUANTIZERS = {
    "Q4_0_QNT0": _Q4_0_QNT0,
    "Q4_0_QNT1": _q4_0_f32(False),
    "Q4_1_QNT0": _Q4_1_QNT0,
    "Q4_1_QNT1": _q4_1_f32(False),
    "Q4_2": dequantize_q4_2,
    "Q4_3": dequantize_q4_3,
    "Q5_0_QNT0": dequantize_q5_0_qnt0,
    "Q5_1_QNT0": dequantize_q5_1_qnt0,
    "Q8_0_QNT0": dequantize_q8_0_qnt0,
    "Q4_1_O": dequantize_q4_1_o,
}
# rwkv.cpp version 100: upstream ggml layouts of the same dates (facts.layouts.RWKV100_SAME)
DEQUANTIZERS.update({old: DEQUANTIZERS[same] for old, same in RWKV100_SAME.items()})
