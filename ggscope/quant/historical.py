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
from ggscope.quant.floats import f16_scale, scalar_field
from ggscope.quant.legacy import Block, decoder

__all__ = ["DEQUANTIZERS"]


# Layouts ggml wrote before May 2023 (legacy-formats.md §5), as rows of legacy.Block:
#  Q4_0_QNT0/1 (32, 20 B)  | f32 d | u8 qs[16] |          x = (q - 8) * d
#  Q4_1_QNT0/1 (32, 24 B)  | f32 d | f32 m | u8 qs[16] |  x = q * d + m
#      QNT0: byte j = x[2j] (lo), x[2j+1] (hi);  QNT1: x[j], x[j+16]
#  Q4_2 (16, 10 B, 2023-04-18 -> 05-12)  | f16 d | u8 qs[8] (interleaved) |          x = (q - 8) * d
#  Q4_3 (16, 12 B, 2023-04-20 -> 04-28)  | f16 d | f16 m | u8 qs[8] (interleaved) |  x = q * d + m
#  Q5_0_QNT0 (32, 22 B)  | f16 d | u8 qh[4]: bit k = bit 4 of x[k] | u8 qs[16] (interleaved) |  x = (q - 16) * d
#  Q5_1_QNT0 (32, 24 B)  | f16 d | f16 m | u8 qh[4] | u8 qs[16] (interleaved) |  x = q * d + m
#  Q8_0_QNT0 (32, 36 B, 2023-04-25 -> 05-19)  | f32 d | i8 qs[32] |  x = qs[j] * d
BLOCKS = {
    "Q4_0_QNT0": Block(32, (4, 20), scale="f32", interleaved=True, bias=8),
    "Q4_0_QNT1": Block(32, (4, 20), scale="f32", bias=8),
    "Q4_1_QNT0": Block(32, (8, 24), m_at=4, scale="f32", interleaved=True),
    "Q4_1_QNT1": Block(32, (8, 24), m_at=4, scale="f32"),
    "Q4_2": Block(16, (2, 10), interleaved=True, bias=8),
    "Q4_3": Block(16, (4, 12), m_at=2, interleaved=True),
    "Q5_0_QNT0": Block(32, (6, 22), qh_at=2, interleaved=True, bias=16),
    "Q5_1_QNT0": Block(32, (8, 24), m_at=2, qh_at=4, interleaved=True),
    "Q8_0_QNT0": Block(32, (4, 36), scale="f32", codes="int8"),
}
_Q4_1_O_BASE = decoder(Block(32, (8, 24), m_at=2, interleaved=True))


# --- Q4_1_O (rwkv.cpp, 32 elems, 24 bytes) -------------------------------------------
#  | f16 d | f16 m | u16 outlier_index | f16 outlier_value | u8 qs[16] (interleaved) |
#  0       2       4                   6                   8                         24
#  x = q * d + m, then x[outlier_index] = outlier_value.  An index >= 32 (damaged
#  block: rwkv.cpp would write outside the block) leaves the block unpatched.
def dequantize_q4_1_o(blocks, byteorder="little", out=None):
    out = _Q4_1_O_BASE(blocks, byteorder, out)
    idx = scalar_field(blocks, 4, "u2", byteorder)[:, 0].astype(np.intp)
    val = f16_scale(blocks, 6, byteorder)[:, 0]
    rows = np.flatnonzero(idx < 32)
    out[rows, idx[rows]] = val[rows]
    return out


DEQUANTIZERS = {name: decoder(b) for name, b in BLOCKS.items()}
DEQUANTIZERS["Q4_1_O"] = dequantize_q4_1_o
# rwkv.cpp version 100: upstream ggml layouts of the same dates (facts.layouts.RWKV100_SAME)
DEQUANTIZERS.update({old: DEQUANTIZERS[same] for old, same in RWKV100_SAME.items()})
