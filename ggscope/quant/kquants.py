"""K-quants (QK_K = 256 super-blocks): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.

Why: the dominant block types of published GGUF models.  Layouts have not changed since
2023-06-05 (legacy-formats.md §5.9); the 2023-06 -> 2024-05 compile-time ``QK_K = 64``
variant has no marker in files and is not decoded.

Bit-exactness: each formula below keeps ggml's float32 operation order, e.g. Q4_K
``(d * sc) * q - (dmin * m)`` and Q6_K ``(d * sc) * q``; codes are assembled as exact
small integers with uint8 bit operations, cast once, then scaled per 16- or 32-element
group by broadcasting.

Contract: see ``floats.py``.
"""
from __future__ import annotations

import numpy as np

from ggscope.quant.floats import f16_scale, f32_scale, new_out
from ggscope.quant.legacy import interleave, split_nibbles

__all__ = ["DEQUANTIZERS"]

_SHIFT_2 = np.array([0, 2, 4, 6], dtype=np.uint8)


def _crumbs(q: np.ndarray) -> np.ndarray:
    """2-bit fields: (nb, g, k) bytes -> (nb, g, 4, k) uint8, field j = bits 2j..2j+1."""
    nb, g, k = q.shape
    flat = np.ascontiguousarray(q)
    planes = [flat & np.uint8(3)] + [(flat >> np.uint8(s)) & np.uint8(3) for s in (2, 4, 6)]
    return interleave(*planes, unit=k).reshape(nb, g, 4, k)


def _bits_by_plane(b: np.ndarray) -> np.ndarray:
    """(nb, 32) bytes -> (nb, 8, 32) uint8: [:, k, l] = bit k of byte l."""
    nb = b.shape[0]
    return np.unpackbits(b, axis=1, bitorder="little").reshape(nb, 32, 8).transpose(0, 2, 1)


def _scale_min_k4(sc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K packed 6-bit scales and mins, (nb, 12) bytes -> two (nb, 8) uint8.

    j < 4: sc = q[j] & 63, m = q[j+4] & 63;  j >= 4: sc = (q[j+4] & 15) | (q[j-4] >> 6) << 4,
    m = (q[j+4] >> 4) | (q[j] >> 6) << 4   (ggml's get_scale_min_k4).
    """
    # Byte lanes of three little-endian u32 words per block: one ufunc loop over the
    # blocks instead of one per 4-byte row.
    w = sc.view("<u4")                                      # (nb, 3): lo, mid, hi
    lo, mid, hi = w[:, 0], w[:, 1], w[:, 2]
    u = np.uint32
    res = np.empty((sc.shape[0], 4), dtype="<u4")
    np.bitwise_and(lo, u(0x3F3F3F3F), out=res[:, 0])
    res[:, 1] = (hi & u(0x0F0F0F0F)) | (((lo >> u(6)) & u(0x03030303)) << u(4))
    np.bitwise_and(mid, u(0x3F3F3F3F), out=res[:, 2])
    res[:, 3] = ((hi >> u(4)) & u(0x0F0F0F0F)) | (((mid >> u(6)) & u(0x03030303)) << u(4))
    b = res.view(np.uint8)
    return b[:, 0:8], b[:, 8:16]


def _apply(codes: np.ndarray, out: np.ndarray, groups: int, dl: np.ndarray,
           ml: np.ndarray | None = None) -> np.ndarray:
    """out = codes * dl [- ml] with one float32 scale per group of 256/groups elements."""
    nb = out.shape[0]
    o = out.reshape(nb, groups, 256 // groups)
    np.multiply(codes.reshape(nb, groups, 256 // groups), dl[:, :, None], out=o)
    if ml is not None:
        o -= ml[:, :, None]
    return out


# --- Q2_K (256 elems, 84 bytes) ------------------------------------------------------
#  | u8 scales[16]: lo 4 bits scale, hi 4 bits min | u8 qs[64] | f16 d | f16 dmin |
#  0                                               16          80      82         84
#  x[128n + 32j + l] = (d * (sc & 15)) * ((qs[32n + l] >> 2j) & 3) - dmin * (sc >> 4),
#  sc = scales[x_index / 16]
def dequantize_q2_k(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    sc = blocks[:, 0:16]
    d = f16_scale(blocks, 80, byteorder)
    dmin = f16_scale(blocks, 82, byteorder)
    codes = _crumbs(blocks[:, 16:80].reshape(nb, 2, 32))
    return _apply(codes, out, 16, d * (sc & np.uint8(15)).astype(np.float32), dmin * (sc >> np.uint8(4)).astype(np.float32))


# --- Q3_K (256 elems, 110 bytes) -----------------------------------------------------
#  | u8 hmask[32] | u8 qs[64] | u8 scales[12]: 16 x 6 bits | f16 d |
#  0              32          96                          108     110
#  q = ((qs[32n + l] >> 2j) & 3) - (hmask[l] bit (4n + j) ? 0 : 4)   for x[128n + 32j + l]
#  scale k: low 4 bits = scales[k % 8] >> 4 (k // 8), high 2 bits = scales[8 + k % 4] >> 2 (k // 4)
#  x = (d * (scale - 32)) * q
def dequantize_q3_k(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    raw = blocks[:, 96:108]
    sc = np.empty((nb, 16), dtype=np.uint8)
    np.bitwise_and(raw[:, 0:8], np.uint8(15), out=sc[:, 0:8])
    np.right_shift(raw[:, 0:8], np.uint8(4), out=sc[:, 8:16])
    high = _crumbs(raw[:, None, 8:12]).reshape(nb, 16)          # [k//4, k%4]
    sc |= high << np.uint8(4)
    scv = sc.view(np.int8)
    scv -= np.int8(32)
    d = f16_scale(blocks, 108, byteorder)
    codes = _crumbs(blocks[:, 32:96].reshape(nb, 2, 32))        # (nb, n, j, l)
    hbit = _bits_by_plane(blocks[:, 0:32]).reshape(nb, 2, 4, 32)  # bit 4n + j of hmask[l]
    codes |= hbit << np.uint8(2)
    cv = codes.view(np.int8)
    cv -= np.int8(4)
    return _apply(cv, out, 16, d * scv.astype(np.float32))


# --- Q4_K (256 elems, 144 bytes) -----------------------------------------------------
#  | f16 d | f16 dmin | u8 scales[12]: 8 x (6-bit scale, 6-bit min) | u8 qs[128] |
#  0       2          4                                            16           144
#  x[64i + l]      = (d * sc[2i])   * (qs[32i + l] & 15) - dmin * m[2i]
#  x[64i + 32 + l] = (d * sc[2i+1]) * (qs[32i + l] >> 4) - dmin * m[2i+1]
def dequantize_q4_k(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    d = f16_scale(blocks, 0, byteorder)
    dmin = f16_scale(blocks, 2, byteorder)
    sc, m = _scale_min_k4(blocks[:, 4:16])
    codes = interleave(*split_nibbles(blocks[:, 16:144]), unit=32)      # (lo 32, hi 32) x 4
    return _apply(codes, out, 8, d * sc.astype(np.float32), dmin * m.astype(np.float32))


# --- Q5_K (256 elems, 176 bytes) -----------------------------------------------------
#  | f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128] |
#  0       2          4               16          48           176
#  as Q4_K, plus 16 for element 32g + l when bit g of qh[l] is set (g = 0..7)
def dequantize_q5_k(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    d = f16_scale(blocks, 0, byteorder)
    dmin = f16_scale(blocks, 2, byteorder)
    sc, m = _scale_min_k4(blocks[:, 4:16])
    codes = interleave(*split_nibbles(blocks[:, 48:176]), unit=32).reshape(nb, 8, 32)
    codes |= _bits_by_plane(blocks[:, 16:48]) << np.uint8(4)
    return _apply(codes, out, 8, d * sc.astype(np.float32), dmin * m.astype(np.float32))


# --- Q6_K (256 elems, 210 bytes) -----------------------------------------------------
#  | u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d |
#  0            128         192             208     210
#  half n (128 elems) uses ql[64n..], qh[32n..]; for l < 32 and k = 0..3:
#  q = (ql[64n + 32(k&1) + l] >> 4(k>>1) & 15) | ((qh[32n + l] >> 2k) & 3) << 4
#  x[128n + 32k + l] = (d * scales[x_index / 16]) * (q - 32)
def dequantize_q6_k(blocks, byteorder="little", out=None):
    nb = blocks.shape[0]
    out = new_out(out, nb, 256)
    codes = interleave(*split_nibbles(blocks[:, 0:128]), unit=64).reshape(nb, 2, 4, 32)
    high = _crumbs(blocks[:, 128:192].reshape(nb, 2, 32))
    high <<= np.uint8(4)
    codes |= high
    cv = codes.view(np.int8)
    cv -= np.int8(32)
    d = f16_scale(blocks, 208, byteorder)
    return _apply(cv, out, 16, d * blocks[:, 192:208].view(np.int8).astype(np.float32))


# --- Q8_K (256 elems, 292 bytes; an intermediate type) -------------------------------
#  | f32 d | i8 qs[256] | i16 bsums[16] (sums of 16 qs, not needed to decode) |
#  0       4            260                                                   292
#  x = d * qs[j]
def dequantize_q8_k(blocks, byteorder="little", out=None):
    out = new_out(out, blocks.shape[0], 256)
    out[...] = blocks[:, 4:260].view(np.int8)
    out *= f32_scale(blocks, 0, byteorder)
    return out


DEQUANTIZERS = {
    "Q2_K": dequantize_q2_k,
    "Q3_K": dequantize_q3_k,
    "Q4_K": dequantize_q4_k,
    "Q5_K": dequantize_q5_k,
    "Q6_K": dequantize_q6_k,
    "Q8_K": dequantize_q8_k,
}
