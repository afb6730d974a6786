"""Today's 32-element "legacy" quant blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.

Why: these are the block types of most GGUF and late GGJT/ggml-example files; the
builders here (nibble split, 5th-bit merge, scale-and-offset) are shared with the
historical layouts in ``historical.py``, which differ only in scale width and nibble
order.

Bit-exactness: ggml computes ``(q - 8) * d`` / ``q * d + m`` in float32 with separate
multiply and add (ggml-base is built without FMA contraction, see the oracle MANIFEST).
Codes are formed as small integers first (exact), cast to float32, then multiplied by
the scale and, for the offset types, the offset is added in a second rounding step --
the same two roundings ggml performs.

Contract: see ``floats.py`` (``DEQUANTIZERS``, ``f(blocks, byteorder, out)``).
"""
from __future__ import annotations

import numpy as np

from ggscope.quant.floats import f16_scale, new_out

__all__ = ["DEQUANTIZERS", "nibbles", "split_nibbles", "interleave", "fifth_bits", "finish"]

def interleave(*parts: np.ndarray, unit: int) -> np.ndarray:
    """Alternate ``unit``-byte runs of equal-size uint8 arrays: a0 b0 .. a1 b1 .. (flat).

    Done as one strided copy per part of ``unit``-byte void elements: numpy then runs
    one inner loop per copy instead of one per run, which is what makes unpacking
    nibbles and 2-bit fields cheap.
    """
    n = parts[0].size // unit
    dt = np.dtype(np.uint8) if unit == 1 else np.dtype(f"V{unit}")
    c = np.empty((n, len(parts)), dtype=dt)
    for i, p in enumerate(parts):
        c[:, i] = np.ascontiguousarray(p).reshape(-1).view(dt)
    return c.view(np.uint8).reshape(-1)


def split_nibbles(qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Low and high nibbles of ``qs`` as two contiguous uint8 arrays of its shape."""
    q = np.ascontiguousarray(qs)
    return q & np.uint8(0x0F), q >> np.uint8(4)


def nibbles(qs: np.ndarray, interleaved: bool) -> np.ndarray:
    """The 4-bit codes of ``qs`` (n_blocks, k) as uint8 (n_blocks, 2k) in element order.

    split halves (ggml since #1405): byte j = element j (low) and element j + k (high);
    interleaved (before 2023-05-12): byte j = element 2j (low) and element 2j + 1 (high).
    """
    nb, k = qs.shape
    lo, hi = split_nibbles(qs)
    return interleave(lo, hi, unit=1 if interleaved else k).reshape(nb, 2 * k)


def fifth_bits(codes: np.ndarray, qh: np.ndarray) -> np.ndarray:
    """OR bit 4 into 32 codes per block from ``qh`` (n_blocks, 4 bytes = a little-endian
    u32): bit k belongs to element k in both nibble orders (legacy-formats.md §5)."""
    bits = np.unpackbits(qh, axis=1, bitorder="little")      # (nb, 32): bit k of the u32
    bits <<= np.uint8(4)
    codes |= bits
    return codes


def finish(codes: np.ndarray, out: np.ndarray, d: np.ndarray, m: np.ndarray | None = None,
           bias: int = 0) -> np.ndarray:
    """out = (codes - bias) * d [+ m], in float32 with ggml's two roundings.

    ``codes`` is uint8 or int8 with the block's elements in order; ``d``/``m`` are
    (n_blocks, 1) float32.
    """
    if bias:
        codes = codes.view(np.int8)
        codes -= np.int8(bias)
    np.multiply(codes.view(np.int8) if bias else codes, d, out=out)
    if m is not None:
        out += m
    return out


# --- Q4_0 (32 elems, 18 bytes) -------------------------------------------------------
#  +--------+---------------------------------+
#  | f16 d  | u8 qs[16]: lo = x[j], hi = x[j+16] |   x = (q - 8) * d
#  +--------+---------------------------------+
#  0        2                                 18
def dequantize_q4_0(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    return finish(nibbles(blocks[:, 2:18], False), out, f16_scale(blocks, 0, byteorder), bias=8)


# --- Q4_1 (32 elems, 20 bytes) -------------------------------------------------------
#  | f16 d | f16 m | u8 qs[16] (split halves) |   x = q * d + m
#  0       2       4                          20
def dequantize_q4_1(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    return finish(nibbles(blocks[:, 4:20], False), out,
                  f16_scale(blocks, 0, byteorder), f16_scale(blocks, 2, byteorder))


# --- Q5_0 (32 elems, 22 bytes) -------------------------------------------------------
#  | f16 d | u8 qh[4]: bit k = bit 4 of x[k] | u8 qs[16] (split halves) |  x = (q - 16) * d
#  0       2                                 6                          22
def dequantize_q5_0(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    codes = fifth_bits(nibbles(blocks[:, 6:22], False), blocks[:, 2:6])
    return finish(codes, out, f16_scale(blocks, 0, byteorder), bias=16)


# --- Q5_1 (32 elems, 24 bytes) -------------------------------------------------------
#  | f16 d | f16 m | u8 qh[4] | u8 qs[16] (split halves) |   x = q * d + m
#  0       2       4          8                          24
def dequantize_q5_1(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    codes = fifth_bits(nibbles(blocks[:, 8:24], False), blocks[:, 4:8])
    return finish(codes, out, f16_scale(blocks, 0, byteorder), f16_scale(blocks, 2, byteorder))


# --- Q8_0 (32 elems, 34 bytes) -------------------------------------------------------
#  | f16 d | i8 qs[32] |   x = qs[j] * d
#  0       2           34
def dequantize_q8_0(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    return finish(blocks[:, 2:34].view(np.int8), out, f16_scale(blocks, 0, byteorder))


# --- Q8_1 (32 elems, 36 bytes, since 2024-03-12) -------------------------------------
#  | f16 d | f16 s = d * sum(qs) | i8 qs[32] |   x = qs[j] * d  (s is redundant)
#  0       2                     4           36
def dequantize_q8_1(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 32)
    return finish(blocks[:, 4:36].view(np.int8), out, f16_scale(blocks, 0, byteorder))


DEQUANTIZERS = {
    "Q4_0": dequantize_q4_0,
    "Q4_1": dequantize_q4_1,
    "Q5_0": dequantize_q5_0,
    "Q5_1": dequantize_q5_1,
    "Q8_0": dequantize_q8_0,
    "Q8_1": dequantize_q8_1,
}
