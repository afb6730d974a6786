"""4-bit float types MXFP4 and NVFP4 (E2M1 elements with a power-of-two or FP8 scale).

Why: gpt-oss-style and NVIDIA FP4 checkpoints.  ggml stores E2M1 doubled, as the
integers ``kvalues_mxfp4`` = {0, 1, 2, 3, 4, 6, 8, 12, -0, -1, ..., -12}, and halves
the block scale to compensate (ggml-types.md §2): MXFP4's scale is
``ggml_e8m0_to_fp32_half(e)`` = 2^(e-128) built from bits (0x00200000 << e for e < 2),
NVFP4's is ``ggml_ue4m3_to_fp32(d) `` = UE4M3(d) / 2 with bytes 0x00 and 0x7F decoding to
0 and bit 7 ignored.  Every scale is exact in float32, so one multiply gives ggml's bits.

Contract: see ``floats.py``.
"""
from __future__ import annotations

import numpy as np

from ggscope.quant.floats import new_out

__all__ = ["DEQUANTIZERS", "E8M0_HALF", "UE4M3_HALF"]

KVALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float32)


def _e8m0_half_table() -> np.ndarray:
    e = np.arange(256, dtype=np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << np.uint32(23)).astype(np.uint32)
    return bits.view(np.float32)


def _ue4m3_half_table() -> np.ndarray:
    x = np.arange(256)
    exp = (x >> 3) & 0xF
    man = x & 7
    raw = np.where(exp == 0, man * 2.0 ** -9, (1.0 + man / 8.0) * 2.0 ** (exp - 7.0))
    raw = np.where((x == 0) | (x == 0x7F), 0.0, raw * 0.5)     # exact in float64 and float32
    return raw.astype(np.float32)


E8M0_HALF = _e8m0_half_table()          # byte -> float32 scale
UE4M3_HALF = _ue4m3_half_table()        # byte -> float32 scale


# --- MXFP4 (32 elems, 17 bytes) ------------------------------------------------------
#  | u8 e (E8M0) | u8 qs[16]: lo = x[j], hi = x[j+16] |   x = kvalues[q] * 2^(e-128)
#  0             1                                   17
def dequantize_mxfp4(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 32)
    qs = blocks[:, 1:17]
    o = out.reshape(nb, 2, 16)
    np.take(KVALUES, qs & np.uint8(15), out=o[:, 0, :])
    np.take(KVALUES, qs >> np.uint8(4), out=o[:, 1, :])
    out *= E8M0_HALF[blocks[:, 0:1]]
    return out


# --- NVFP4 (64 elems, 36 bytes) ------------------------------------------------------
#  | u8 d[4] (UE4M3, one per 16 elems) | u8 qs[32] |
#  0                                   4           36
#  sub-block s (16 elems) uses qs[8s..8s+8): lo = x[16s + j], hi = x[16s + 8 + j]
#  x = kvalues[q] * UE4M3(d[s]) / 2
def dequantize_nvfp4(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 64)
    qs = blocks[:, 4:36].reshape(nb, 4, 8)
    o = out.reshape(nb, 4, 2, 8)
    np.take(KVALUES, qs & np.uint8(15), out=o[:, :, 0, :])
    np.take(KVALUES, qs >> np.uint8(4), out=o[:, :, 1, :])
    o *= UE4M3_HALF[blocks[:, 0:4]][:, :, None, None]
    return out


DEQUANTIZERS = {"MXFP4": dequantize_mxfp4, "NVFP4": dequantize_nvfp4}
