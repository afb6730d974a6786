"""BIT1 sign bits to float32 ±1.

Why: BIT1 files (a 1-bit language model's exporter, legacy-formats.md §8) store every
weight as one sign bit; stats, diff and the TUI read them through ``ggscope.quant`` like
any other layout.  The exporter's ``pack_bits_rows`` sets bit ``k % 64`` of u64 word
``k // 64`` of a row for a positive weight; words are little-endian, so in bytes that is
bit ``k % 8`` of byte ``k // 8``: numpy's ``unpackbits(bitorder="little")``.

Contract: ``DEQUANTIZERS["BIT1_PACKED"](blocks, byteorder, out)`` fills ``out``
(n_blocks, n) with +1.0 / -1.0 from ``blocks`` (n_blocks, block_bytes) uint8, the first
``n`` bits of each block; ``n`` is 64 per 8-byte word, or a whole row's ``ne0`` when
the layout is one block per padded row (``ggml_types.tensor_layout``).  The padding bits
after ``n`` are not read.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DEQUANTIZERS", "dequantize_bit1"]

_SIGN = np.array([-1.0, 1.0], dtype=np.float32)


def dequantize_bit1(blocks: np.ndarray, byteorder: str, out: np.ndarray) -> np.ndarray:
    n = out.shape[1]
    if n > blocks.shape[1] * 8:
        raise ValueError(f"BIT1_PACKED: {n} elements do not fit in {blocks.shape[1]} bytes")
    if byteorder == "big":                       # u64 words stored most significant byte first
        blocks = blocks.reshape(blocks.shape[0], -1, 8)[:, :, ::-1].reshape(blocks.shape[0], -1)
    bits = np.unpackbits(blocks, axis=1, count=n, bitorder="little")   # [n_blocks, n] 0/1
    np.take(_SIGN, bits, out=out)
    return out


DEQUANTIZERS = {"BIT1_PACKED": dequantize_bit1}
