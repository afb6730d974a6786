"""1- and 2-bit types Q1_0 (128 elems) and Q2_0 (64 elems), both with one f16 scale.

Why: the newest ggml types (2026-04, 2026-07; ggml-types.md §4.1 [G30] [G31]); gguf-py
0.19.0 cannot decode them, so ggscope must.

Q1_0: bit j % 8 of byte j / 8 (LSB first); 1 -> +d, 0 -> -d.
Q2_0: bits 2(j % 4).. of byte j / 4; codes 0, 1, 2, 3 -> -1, 0, +1, +2 times d.
(ggml-types.md §2 "Element order".)  Both are one exact integer times d.

Contract: see ``floats.py``.
"""
from __future__ import annotations

import numpy as np

from ggscope.quant.floats import f16_scale, new_out

__all__ = ["DEQUANTIZERS"]

_SHIFT_2 = np.array([0, 2, 4, 6], dtype=np.uint8)


# --- Q1_0 (128 elems, 18 bytes) ------------------------------------------------------
#  | f16 d | u8 qs[16]: bit j%8 of qs[j/8] = sign of x[j] |   x = bit ? +d : -d
#  0       2                                               18
def dequantize_q1_0(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 128)
    bits = np.unpackbits(blocks[:, 2:18], axis=1, bitorder="little")
    bits <<= np.uint8(1)
    bv = bits.view(np.int8)
    bv -= np.int8(1)
    out[...] = bv
    out *= f16_scale(blocks, 0, byteorder)
    return out


# --- Q2_0 (64 elems, 18 bytes) -------------------------------------------------------
#  | f16 d | u8 qs[16]: x[4i + k] = bits 2k..2k+1 of qs[i] |   x = (code - 1) * d
#  0       2                                               18
def dequantize_q2_0(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 64)
    q = blocks[:, 2:18, None] >> _SHIFT_2[None, None, :]
    q &= np.uint8(3)
    qv = q.view(np.int8)
    qv -= np.int8(1)
    out[...] = qv.reshape(nb, 64)
    out *= f16_scale(blocks, 0, byteorder)
    return out


DEQUANTIZERS = {"Q1_0": dequantize_q1_0, "Q2_0": dequantize_q2_0}
