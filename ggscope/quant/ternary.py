"""Ternary types TQ1_0 and TQ2_0 (256-element super-blocks, values -1, 0, +1 times d).

Why: BitNet-style models ship these; the TQ1_0 base-3 packing is easy to get wrong.

TQ1_0 stores five ternary digits per byte as a fixed-point fraction: digit n of byte b
is ``((b * 3^n mod 256) * 3) >> 8`` (ggml's dequantize_row_tq1_0); TQ2_0 stores 2 bits
per element.  x = (float)(digit - 1) * d, one float32 rounding, like ggml.

Contract: see ``floats.py``.
"""
from __future__ import annotations

import numpy as np

from ggscope.quant.floats import f16_scale, new_out

__all__ = ["DEQUANTIZERS"]

_POW3 = np.array([1, 3, 9, 27, 81], dtype=np.uint8)
_SHIFT_2 = np.array([0, 2, 4, 6], dtype=np.uint8)


def _trits(b: np.ndarray, n: int) -> np.ndarray:
    """(nb, k) bytes -> (nb, n, k) int8 digits minus 1: [:, i, j] = digit i of byte j."""
    q = b[:, None, :] * _POW3[None, :n, None]          # uint8 product wraps mod 256, as in C
    t = (q.astype(np.uint16) * np.uint16(3)) >> np.uint16(8)
    return t.astype(np.int8) - np.int8(1)


# --- TQ1_0 (256 elems, 54 bytes) -----------------------------------------------------
#  | u8 qs[48]: 5 trits per byte | u8 qh[4]: 4 trits per byte | f16 d |
#  0                             48                           52      54
#  x[0..160)   = digit n of qs[m],      m < 32, order (n, m)
#  x[160..240) = digit n of qs[32 + m], m < 16, order (n, m)
#  x[240..256) = digit n of qh[j],      n < 4,  order (n, j)
def dequantize_tq1_0(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    d = f16_scale(blocks, 52, byteorder)
    out[:, 0:160] = _trits(blocks[:, 0:32], 5).reshape(nb, 160)
    out[:, 160:240] = _trits(blocks[:, 32:48], 5).reshape(nb, 80)
    out[:, 240:256] = _trits(blocks[:, 48:52], 4).reshape(nb, 16)
    out *= d
    return out


# --- TQ2_0 (256 elems, 66 bytes) -----------------------------------------------------
#  | u8 qs[64]: 2 bits per element | f16 d |
#  0                               64      66
#  x[128g + 32l + m] = (((qs[32g + m] >> 2l) & 3) - 1) * d
def dequantize_tq2_0(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    q = blocks[:, 0:64].reshape(nb, 2, 1, 32) >> _SHIFT_2[None, None, :, None]
    q &= np.uint8(3)
    qv = q.view(np.int8)
    qv -= np.int8(1)
    out[...] = qv.reshape(nb, 256)
    out *= f16_scale(blocks, 64, byteorder)
    return out


DEQUANTIZERS = {"TQ1_0": dequantize_tq1_0, "TQ2_0": dequantize_tq2_0}
