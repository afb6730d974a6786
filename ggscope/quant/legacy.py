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

from dataclasses import dataclass

import numpy as np

from ggscope.quant.floats import f16_scale, f32_scale, new_out

__all__ = ["DEQUANTIZERS", "BLOCKS", "Block", "decoder", "nibbles", "split_nibbles", "interleave", "fifth_bits", "finish"]

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


@dataclass(frozen=True)
class Block:
    """One 32/16-element block layout of the legacy family, as a row: where its scale
    ``d`` (and the min ``m``) sit and their width, the 5th bits ``qh``, the codes ``qs``
    (nibbles, split halves or interleaved, or int8), and the bias subtracted from them."""
    n: int                              # elements per block
    qs: tuple[int, int]                 # [start, end) of the codes in the block
    d_at: int = 0
    m_at: int | None = None
    qh_at: int | None = None            # 4 bytes: bit k = bit 4 of x[k]
    scale: str = "f16"                  # "f16" or "f32" (d and m)
    codes: str = "nibbles"              # "nibbles" or "int8"
    interleaved: bool = False           # nibbles: byte j = x[2j], x[2j+1] (else x[j], x[j+n/2])
    bias: int = 0


def decoder(b: Block):
    """The ``dequantize(blocks, byteorder, out)`` of layout ``b``: one engine, every row."""
    scale = f16_scale if b.scale == "f16" else f32_scale
    lo, hi = b.qs

    def dequantize(blocks, byteorder="little", out=None):
        out = new_out(out, blocks.shape[0], b.n)
        if b.codes == "int8":
            codes = blocks[:, lo:hi].view(np.int8)
        else:
            codes = nibbles(blocks[:, lo:hi], b.interleaved)
            if b.qh_at is not None:
                codes = fifth_bits(codes, blocks[:, b.qh_at:b.qh_at + 4])
        m = scale(blocks, b.m_at, byteorder) if b.m_at is not None else None
        return finish(codes, out, scale(blocks, b.d_at, byteorder), m, bias=b.bias)
    return dequantize


# Today's layouts (ggml-common.h), block by block:
#  Q4_0 (32, 18 B)  | f16 d | u8 qs[16]: lo = x[j], hi = x[j+16] |        x = (q - 8) * d
#  Q4_1 (32, 20 B)  | f16 d | f16 m | u8 qs[16] (split halves) |       x = q * d + m
#  Q5_0 (32, 22 B)  | f16 d | u8 qh[4] | u8 qs[16] (split halves) |    x = (q - 16) * d
#  Q5_1 (32, 24 B)  | f16 d | f16 m | u8 qh[4] | u8 qs[16] |           x = q * d + m
#  Q8_0 (32, 34 B)  | f16 d | i8 qs[32] |                              x = qs[j] * d
#  Q8_1 (32, 36 B)  | f16 d | f16 s = d * sum(qs) | i8 qs[32] |       x = qs[j] * d (s redundant)
BLOCKS = {
    "Q4_0": Block(32, (2, 18), bias=8),
    "Q4_1": Block(32, (4, 20), m_at=2),
    "Q5_0": Block(32, (6, 22), qh_at=2, bias=16),
    "Q5_1": Block(32, (8, 24), m_at=2, qh_at=4),
    "Q8_0": Block(32, (2, 34), codes="int8"),
    "Q8_1": Block(32, (4, 36), codes="int8"),
}
DEQUANTIZERS = {name: decoder(b) for name, b in BLOCKS.items()}
