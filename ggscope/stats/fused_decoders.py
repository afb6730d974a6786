"""The numba block decoders of the fused statistics passes, one per layout family.

Why: ``ggscope.stats.fused`` runs the two statistics passes over blocks decoded into an
L1-sized buffer; the decoding of each family (field offsets, nibble order, bias as
constant arguments, read from ``ggscope.stats.fused_specs``) is the bulk of that code
and has one job, so it lives here.  Every decoder keeps ggml's float32 operation order;
tests/test_fused.py holds each block's values to the numpy codecs of ``ggscope.quant``.

Contract: ``_dec_<family>(blocks, b, big, lut, g1, g2, out, o, *family_args)`` writes
the values of block ``b`` of ``blocks`` (a ``(n_blocks, block_bytes)`` uint8 array) into
``out[o:o + block_elems]`` in ggml's element order; ``big`` is true for big-endian
files, ``lut`` the f16 code table, ``g1``/``g2`` the family's grids.  Private to
``ggscope.stats.fused``, which instantiates one entry point per layout from them.
"""
from __future__ import annotations

import numpy as np

from ggscope.core.jit import njit
from ggscope.stats.scale_range import k4_scale


# ---------------------------------------------------------------- field readers

@njit(nogil=True, inline="always")
def _u16(blocks, b, at, big):  # pragma: no cover - compiled
    return np.int32(blocks[b, at + big]) | (np.int32(blocks[b, at + 1 - big]) << 8)


@njit(nogil=True, inline="always")
def _f16(blocks, b, at, big, lut):  # pragma: no cover - compiled
    return lut[_u16(blocks, b, at, big)]


@njit(nogil=True, inline="always")
def _f32(blocks, b, at, big, out, o):  # pragma: no cover - compiled
    """The f32 field at ``at``, assembled in ``out[o]`` (overwritten by the decoder later)."""
    w = np.uint32(0)
    for k in range(4):
        w |= np.uint32(blocks[b, at + (3 - k if big else k)]) << np.uint32(8 * k)
    out.view(np.uint32)[o] = w
    return out[o]


@njit(nogil=True, inline="always")
def _scale(blocks, b, at, wide, big, lut, out, o):  # pragma: no cover - compiled
    return _f32(blocks, b, at, big, out, o) if wide else _f16(blocks, b, at, big, lut)


@njit(nogil=True, inline="always")
def _i8(byte):  # pragma: no cover - compiled
    c = np.int32(byte)
    return c - ((c & 0x80) << 1)


@njit(nogil=True, inline="always")
def _u32le(blocks, b, at):  # pragma: no cover - compiled
    return (np.uint32(blocks[b, at]) | (np.uint32(blocks[b, at + 1]) << np.uint32(8))
            | (np.uint32(blocks[b, at + 2]) << np.uint32(16)) | (np.uint32(blocks[b, at + 3]) << np.uint32(24)))


# ---------------------------------------------------------------- decoders, one per family
# Each writes the block's values into out[o:o + block_elems] in ggml's element order.

@njit(nogil=True, inline="always")
def _dec_nibbles(blocks, b, big, lut, g1, g2, out, o, d_at, wide, m_at, qh_at, qs_at, half, inter, bias, o_at):
    """Q4_0 Q4_1 Q5_0 Q5_1 Q4_2 Q4_3 and their f32-scale / interleaved / rwkv forms:
    x = (q - bias) * d [+ m], q a nibble [| 5th bit]; Q4_1_O patches one outlier."""  # pragma: no cover
    d = _scale(blocks, b, d_at, wide, big, lut, out, o)
    m = _scale(blocks, b, m_at, wide, big, lut, out, o) if m_at >= 0 else np.float32(0)
    qh = _u32le(blocks, b, qh_at) if qh_at >= 0 else np.uint32(0)
    for j in range(half):
        c = np.int32(blocks[b, qs_at + j])
        p0 = 2 * j if inter else j
        p1 = 2 * j + 1 if inter else j + half
        c0, c1 = c & 0xF, c >> 4
        if qh_at >= 0:
            c0 |= np.int32((qh >> np.uint32(p0)) & np.uint32(1)) << 4
            c1 |= np.int32((qh >> np.uint32(p1)) & np.uint32(1)) << 4
        v0 = np.float32(c0 - bias) * d
        v1 = np.float32(c1 - bias) * d
        if m_at >= 0:
            v0 = v0 + m
            v1 = v1 + m
        out[o + p0] = v0
        out[o + p1] = v1
    if o_at >= 0:
        k = _u16(blocks, b, o_at, big)
        if k < 2 * half:
            out[o + k] = _f16(blocks, b, o_at + 2, big, lut)


@njit(nogil=True, inline="always")
def _dec_int8(blocks, b, big, lut, g1, g2, out, o, d_at, wide, qs_at, n):  # pragma: no cover - compiled
    """Q8_0 Q8_1 Q8_K and the f32-scale Q8_0: x = qs[j] * d."""
    d = _scale(blocks, b, d_at, wide, big, lut, out, o)
    for j in range(n):
        out[o + j] = np.float32(_i8(blocks[b, qs_at + j])) * d


@njit(nogil=True, inline="always")
def _dec_crumbs(blocks, b, big, lut, g1, g2, out, o, d_at, qs_at, n, bits, row):  # pragma: no cover - compiled
    """Q1_0 (bits 1), Q2_0 (bits 2, row 0) and TQ2_0 (bits 2, row 1): codes of
    ``bits`` bits, x = (code - 1) * d (Q1_0: 2 * bit - 1).  ``row`` 0 packs consecutive
    elements into one byte; else byte ``32g + m`` holds elements 128g + 32l + m."""
    d = _f16(blocks, b, d_at, big, lut)
    per = 8 // bits
    mask = (1 << bits) - 1
    for j in range(n):
        if row:
            g, r = j // 128, j % 128
            byte, sh = 32 * g + r % 32, bits * (r // 32)
        else:
            byte, sh = j // per, bits * (j % per)
        c = (np.int32(blocks[b, qs_at + byte]) >> sh) & mask
        out[o + j] = np.float32(2 * c - 1 if bits == 1 else c - 1) * d


@njit(nogil=True, inline="always")
def _trit(byte, pw):  # pragma: no cover - compiled
    """Digit n of a base-3 byte (pw = 3^n), minus 1: ((byte * 3^n mod 256) * 3) >> 8."""
    q = (np.int32(byte) * pw) & 0xFF
    return ((q * 3) >> 8) - 1


@njit(nogil=True, inline="always")
def _dec_tq1_0(blocks, b, big, lut, g1, g2, out, o):  # pragma: no cover - compiled
    d = _f16(blocks, b, 52, big, lut)
    pw = np.int32(1)
    for n in range(5):
        for m in range(32):
            out[o + 32 * n + m] = np.float32(_trit(blocks[b, m], pw)) * d
        for m in range(16):
            out[o + 160 + 16 * n + m] = np.float32(_trit(blocks[b, 32 + m], pw)) * d
        if n < 4:
            for m in range(4):
                out[o + 240 + 4 * n + m] = np.float32(_trit(blocks[b, 48 + m], pw)) * d
        pw *= 3


@njit(nogil=True, inline="always")
def _dec_q2_k(blocks, b, big, lut, g1, g2, out, o):  # pragma: no cover - compiled
    d = _f16(blocks, b, 80, big, lut)
    dmin = _f16(blocks, b, 82, big, lut)
    for g in range(16):
        sc = np.int32(blocks[b, g])
        dl = d * np.float32(sc & 15)
        ml = dmin * np.float32(sc >> 4)
        n, j, l0 = g // 8, (g // 2) % 4, 16 * (g % 2)
        for l in range(l0, l0 + 16):
            c = (np.int32(blocks[b, 16 + 32 * n + l]) >> (2 * j)) & 3
            out[o + 128 * n + 32 * j + l] = np.float32(c) * dl - ml


@njit(nogil=True, inline="always")
def _dec_q3_k(blocks, b, big, lut, g1, g2, out, o):  # pragma: no cover - compiled
    d = _f16(blocks, b, 108, big, lut)
    for g in range(16):
        low = (np.int32(blocks[b, 96 + g % 8]) >> (4 * (g // 8))) & 15
        high = (np.int32(blocks[b, 104 + g % 4]) >> (2 * (g // 4))) & 3
        dl = d * np.float32((low | (high << 4)) - 32)
        n, j, l0 = g // 8, (g // 2) % 4, 16 * (g % 2)
        for l in range(l0, l0 + 16):
            c = (np.int32(blocks[b, 32 + 32 * n + l]) >> (2 * j)) & 3
            h = (np.int32(blocks[b, l]) >> (4 * n + j)) & 1
            out[o + 128 * n + 32 * j + l] = np.float32((c | (h << 2)) - 4) * dl


@njit(nogil=True, inline="always")
def _dec_q45_k(blocks, b, big, lut, g1, g2, out, o, qs_at, five):  # pragma: no cover - compiled
    """Q4_K (qs at 16) and Q5_K (qh at 16, qs at 48): x = (d*sc) * q - dmin*m per 32."""
    d = _f16(blocks, b, 0, big, lut)
    dmin = _f16(blocks, b, 2, big, lut)
    for g in range(8):
        dl, ml = k4_scale(blocks, b, g, d, dmin)
        at, sh = qs_at + 32 * (g // 2), 4 * (g % 2)
        for l in range(32):
            c = (np.int32(blocks[b, at + l]) >> sh) & 0xF
            if five:
                c |= ((np.int32(blocks[b, 16 + l]) >> g) & 1) << 4
            out[o + 32 * g + l] = np.float32(c) * dl - ml


@njit(nogil=True, inline="always")
def _dec_q6_k(blocks, b, big, lut, g1, g2, out, o):  # pragma: no cover - compiled
    d = _f16(blocks, b, 208, big, lut)
    for g in range(16):
        dl = d * np.float32(_i8(blocks[b, 192 + g]))
        n, k, l0 = g // 8, (g // 2) % 4, 16 * (g % 2)
        ql, qh = 64 * n + 32 * (k & 1), 128 + 32 * n
        for l in range(l0, l0 + 16):
            c = (((np.int32(blocks[b, ql + l]) >> (4 * (k >> 1))) & 0xF)
                 | (((np.int32(blocks[b, qh + l]) >> (2 * k)) & 3) << 4))
            out[o + 128 * n + 32 * k + l] = np.float32(c - 32) * dl


@njit(nogil=True, inline="always")
def _dec_table4(blocks, b, big, lut, g1, g2, out, o, mode, groups, span):  # pragma: no cover - compiled
    """Nibble codes through a 16-value table (g1[0]) times a per-group scale: mode 0
    IQ4_NL (f16 d), 1 IQ4_XS (d * (6-bit ls - 32)), 2 MXFP4 (E8M0 byte through g2[0]),
    3 NVFP4 (UE4M3 byte per 16 through g2[0]).  ``span`` values per group: the low
    nibbles of span/2 bytes, then their high nibbles."""
    half = span // 2
    for ib in range(groups):
        if mode == 0:
            dl, at = _f16(blocks, b, 0, big, lut), 2
        elif mode == 1:
            h = _u16(blocks, b, 2, big)
            low = (np.int32(blocks[b, 4 + ib // 2]) >> (4 * (ib % 2))) & 0xF
            dl = _f16(blocks, b, 0, big, lut) * np.float32((low | (((h >> (2 * ib)) & 3) << 4)) - 32)
            at = 8 + 16 * ib
        elif mode == 2:
            dl, at = g2[0, blocks[b, 0]], 1
        else:
            dl, at = g2[0, blocks[b, ib]], 4 + 8 * ib
        for j in range(half):
            c = blocks[b, at + j]
            out[o + span * ib + j] = dl * g1[0, c & 0xF]
            out[o + span * ib + half + j] = dl * g1[0, c >> 4]


@njit(nogil=True, inline="always")
def _put8(out, at, db, row):  # pragma: no cover - compiled
    for k in range(8):
        out[at + k] = db * row[k]


@njit(nogil=True, inline="always")
def _dec_iq2(blocks, b, big, lut, g1, g2, out, o, kind):  # pragma: no cover - compiled
    """IQ2_XXS (kind 0), IQ2_XS (1), IQ2_S (2): 8 groups of 4 grid rows of 8 values,
    signs by a 7-bit code (g1 = grid x signs) or a byte (g1 = grid, g2 = byte signs)."""
    d = _f16(blocks, b, 0, big, lut)
    for ib in range(8):
        if kind == 0:
            w0 = np.int64(_u16(blocks, b, 2 + 8 * ib, big)) | (np.int64(_u16(blocks, b, 4 + 8 * ib, big)) << 16)
            w1 = np.int64(_u16(blocks, b, 6 + 8 * ib, big)) | (np.int64(_u16(blocks, b, 8 + 8 * ib, big)) << 16)
            db = d * (np.float32(0.5) + np.float32(w1 >> 28)) * np.float32(0.25)
            for l in range(4):
                _put8(out, o + 32 * ib + 8 * l, db, g1[(((w0 >> (8 * l)) & 0xFF) << 7) | ((w1 >> (7 * l)) & 0x7F)])
        else:
            sc = np.int32(blocks[b, (66 if kind == 1 else 74) + ib])
            for l in range(4):
                db = d * (np.float32(0.5) + np.float32((sc >> (4 * (l // 2))) & 0xF)) * np.float32(0.25)
                if kind == 1:
                    q = _u16(blocks, b, 2 + 8 * ib + 2 * l, big)
                    _put8(out, o + 32 * ib + 8 * l, db, g1[((q & 0x1FF) << 7) | (q >> 9)])
                else:
                    gi = np.int32(blocks[b, 2 + 4 * ib + l]) | (((np.int32(blocks[b, 66 + ib]) >> (2 * l)) & 3) << 8)
                    s = blocks[b, 34 + 4 * ib + l]
                    for k in range(8):
                        out[o + 32 * ib + 8 * l + k] = db * (g1[gi, k] * g2[s, k])


@njit(nogil=True, inline="always")
def _dec_iq3(blocks, b, big, lut, g1, g2, out, o, kind):  # pragma: no cover - compiled
    """IQ3_XXS (kind 0: sign codes and scale in a u32 per group) and IQ3_S (1: sign
    bytes, 9-bit grid index, 4-bit scales): 8 groups of 4 x (two 4-value grid rows)."""
    d = _f16(blocks, b, 0, big, lut)
    for ib in range(8):
        if kind == 0:
            w = np.int64(_u32le(blocks, b, 66 + 4 * ib))
            db = d * (np.float32(0.5) + np.float32(w >> 28)) * np.float32(0.5)
        else:
            nib = (np.int32(blocks[b, 106 + ib // 2]) >> (4 * (ib % 2))) & 0xF
            db = d * np.float32(1 + 2 * nib)
        for l in range(4):
            for e in range(2):
                k8 = 2 * l + e
                if kind == 0:
                    gi = np.int32(blocks[b, 2 + 8 * ib + k8])
                    srow = (w >> (7 * l)) & 0x7F
                else:
                    gi = np.int32(blocks[b, 2 + 8 * ib + k8]) | (((np.int32(blocks[b, 66 + ib]) >> k8) & 1) << 8)
                    srow = blocks[b, 74 + 4 * ib + l]
                for k in range(4):
                    out[o + 32 * ib + 8 * l + 4 * e + k] = db * (g1[gi, k] * g2[srow, 4 * e + k])


@njit(nogil=True, inline="always")
def _dec_iq1(blocks, b, big, lut, g1, g2, out, o, kind):  # pragma: no cover - compiled
    """IQ1_S (kind 0) and IQ1_M (1): grid rows in {-1, 0, 1} plus or minus delta
    (g1, 4096 rows), times an odd 3-bit scale per 32 (IQ1_S) or 16 (IQ1_M) values."""
    if kind == 0:
        d = _f16(blocks, b, 0, big, lut)
    else:
        s0, s1 = _u16(blocks, b, 48, 0), _u16(blocks, b, 50, 0)
        s2, s3 = _u16(blocks, b, 52, 0), _u16(blocks, b, 54, 0)
        d = lut[(s0 >> 12) | ((s1 >> 8) & 0xF0) | ((s2 >> 4) & 0xF00) | (s3 & 0xF000)]
    for ib in range(8):
        if kind == 0:
            qh = _u16(blocks, b, 34 + 2 * ib, big)
            dl = d * np.float32(2 * ((qh >> 12) & 7) + 1)
        for l in range(4):
            if kind == 0:
                ti = (np.int32(blocks[b, 2 + 4 * ib + l]) | (((qh >> (3 * l)) & 7) << 8)
                      | (((qh >> 15) & 1) << 11))
            else:
                nib = (np.int32(blocks[b, 32 + 2 * ib + l // 2]) >> (4 * (l % 2))) & 0xF
                ti = np.int32(blocks[b, 4 * ib + l]) | ((nib & 7) << 8) | ((nib >> 3) << 11)
                word = _u16(blocks, b, 48 + 2 * (ib // 2), 0)
                dl = d * np.float32(2 * ((word >> (6 * (ib % 2) + 3 * (l // 2))) & 7) + 1)
            _put8(out, o + 32 * ib + 8 * l, dl, g1[ti])
