"""Decoding fused with the two statistics passes, for every block layout ggscope decodes:
the numba engine, used where the install built no C kernels (``ggscope.stats.cstats``, the
same passes compiled ahead of time, is preferred; both read ``ggscope.stats.fused_specs``).

Why: decoding a chunk with the numpy codecs writes 4 bytes per element to memory and
the statistics read them back, twice; on a two-core machine those memory-bound passes
do not get faster with a second thread.  Here each block is decoded into a buffer of
one block (at most 256 float32, it never leaves L1) and consumed at once: pass one
takes its min, max and sum, pass two its histogram bins, centred moments, |x| and
zeros.  Only the raw blocks are read from memory, about 1 byte per element, so two
threads scale.  The numpy codecs in ``ggscope.quant`` stay the readable reference:
every decoder here keeps ggml's float32 operation order, and tests/test_fused.py holds
each block's results to them.

Shape of the code: one decoder per layout family (a function of the block's bytes that
writes its values; the family's fixed facts -- field offsets, nibble order, bias --
are constant arguments), and the two passes written once (``_range_driver``,
``_bins_driver``).  numba caches only module-level functions that do not take another
compiled function as an argument, so the pair of entry points of each layout is
instantiated from one template (``_ENTRY``) into this module, named ``_stats_<layout>``
(both passes, chosen by its first argument); each compiles (or loads from the cache) the first time a
tensor of that layout is measured, so a command pays only for the layouts it meets.

Only chunks whose values are all finite take this route: pass one checks the bits of
every decoded value and answers ``None`` otherwise, and ``ggscope.stats.tensors`` sends that
chunk through the numpy codecs, which count NaN and Inf.

Contract (``blocks`` is a ``(n_blocks, block_bytes)`` uint8 array with contiguous rows,
``big`` true for big-endian files):

* ``range_pass(layout, blocks, big) -> (lo, hi, total) | None``: min, max and the
  (float32-per-piece, float64-across) sum of the decoded values; ``None`` when a value
  is not finite.  For the layouts of ``scale_range`` (Q4_0, Q8_0, Q4_K, Q6_K, IQ4_XS)
  the range comes from the block scales, faster, and ``total`` is NaN (no sum).
* ``bin_pass(layout, blocks, big, lo, scale, top, shift, table, idx) -> (s1, s2, sa,
  zeros)``: bins every value as ``kernels.bin_pairs`` does (same float32 arithmetic,
  pairs counted into ``table``) and returns the sums of ``x - shift`` and its square,
  of ``|x|``, and the count of zeros, as ``kernels.moments``.  Block sizes are even, so
  there is never a lone value.  Call it only on chunks ``range_pass`` accepted.
* ``LAYOUTS``: the layout names handled (every layout with more than one element per
  block that has a codec).
"""
from __future__ import annotations

import math
import numpy as np

from ggscope.stats import scale_range
from ggscope.stats.scale_range import k4_scale
from ggscope.core.jit import njit
from ggscope.stats.kernels import PIECE, count_pairs
from ggscope.quant import code_values
from ggscope.stats.fused_specs import SPECS as _SPECS, tables as _tables

__all__ = ["LAYOUTS", "range_pass", "bin_pass"]

_FINITE = {"reassoc", "nsz", "nnan", "ninf"}


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


# ---------------------------------------------------------------- the two passes

# Each loop below does one thing, so LLVM vectorizes it (measured: a loop that mixes
# float reductions with min/max or an integer count runs 3-4x slower).

_NEG_INF_KEY = np.int32(-0x7F800001)        # order key of -inf (0xFF800000)
_POS_INF_KEY = np.int32(0x7F800000)         # order key of +inf


@njit(nogil=True, cache=True)
def _block_keys(bits, n):  # pragma: no cover - compiled
    """Min and max of the float32 values whose bits are ``bits[:n]`` as integer order
    keys (sign-magnitude to two's complement: monotone, integer min/max vectorize).
    A NaN's key lies beyond the infinities' keys."""
    lo, hi = np.int32(0x7FFFFFFF), np.int32(-0x80000000)
    for j in range(n):
        b = bits[j]
        k = b ^ ((b >> 31) & np.int32(0x7FFFFFFF))
        lo = min(lo, k)
        hi = max(hi, k)
    return lo, hi


@njit(nogil=True, cache=True)
def _key_value(k, out):  # pragma: no cover - compiled
    """The float32 whose order key is ``k`` (through ``out[0]``, which it overwrites)."""
    out.view(np.int32)[0] = k ^ ((k >> 31) & np.int32(0x7FFFFFFF))
    return out[0]


@njit(nogil=True, cache=True, fastmath=_FINITE)
def _block_sum(x, n):  # pragma: no cover - compiled
    s = np.float32(0)
    for j in range(n):
        s += x[j]
    return s


@njit(nogil=True, cache=True)
def _block_bins(x, n, lo, scale, top, idx):  # pragma: no cover - compiled
    for j in range(n):
        t = np.int32((x[j] - lo) * scale)
        idx[j] = np.uint8(max(min(t, top), 0))


@njit(nogil=True, cache=True, fastmath=_FINITE)
def _block_moments(x, n, shift):  # pragma: no cover - compiled
    a1, a2, aa = np.float32(0), np.float32(0), np.float32(0)
    for j in range(n):
        v = x[j]
        d = v - shift
        a1 += d
        a2 += d * d
        aa += abs(v)
    return a1, a2, aa


@njit(nogil=True, cache=True)
def _block_zeros(bits, n):  # pragma: no cover - compiled
    z = np.int32(0)
    for j in range(n):
        z += np.int32((bits[j] & np.int32(0x7FFFFFFF)) == 0)
    return z


@njit(nogil=True, inline="always")
def _range_driver(dec, n, blocks, big, lut, g1, g2):  # pragma: no cover - compiled
    per = max(1, PIECE // n)                # blocks decoded per piece (L1-sized)
    out = np.empty(per * n, np.float32)
    bits = out.view(np.int32)
    lo, hi, total = np.int32(0x7FFFFFFF), np.int32(-0x80000000), 0.0
    nb = blocks.shape[0]
    for p in range(0, nb, per):
        e = 0
        for b in range(p, min(nb, p + per)):
            dec(blocks, b, big, lut, g1, g2, out, e)
            e += n
        mn, mx = _block_keys(bits, e)
        if mn <= _NEG_INF_KEY or mx >= _POS_INF_KEY:
            return np.float32(0), np.float32(0), 0.0, False
        lo, hi, total = min(lo, mn), max(hi, mx), total + _block_sum(out, e)
    return _key_value(lo, out), _key_value(hi, out), total, nb > 0


@njit(nogil=True, inline="always")
def _bins_driver(dec, n, blocks, big, lut, g1, g2, lo, scale, top, shift, table, idx):  # pragma: no cover
    per = max(1, PIECE // n)
    out = np.empty(per * n, np.float32)
    bits = out.view(np.int32)
    s1, s2, sa, zeros = 0.0, 0.0, 0.0, 0
    nb = blocks.shape[0]
    for p in range(0, nb, per):
        e = 0
        for b in range(p, min(nb, p + per)):
            dec(blocks, b, big, lut, g1, g2, out, e)
            e += n
        _block_bins(out, e, lo, scale, top, idx)
        count_pairs(idx[:e].view(np.uint16), table)
        a1, a2, aa = _block_moments(out, e, shift)
        s1, s2, sa, zeros = s1 + a1, s2 + a2, sa + aa, zeros + _block_zeros(bits, e)
    return s1, s2, sa, zeros


_ENTRY = """
@njit(nogil=True, inline="always")
def _decode_{key}(blocks, b, big, lut, g1, g2, out, o):
    {dec}(blocks, b, big, lut, g1, g2, out, o{args})

@njit(nogil=True, cache=True)
def _stats_{key}(bins, blocks, big, lut, g1, g2, lo, scale, top, shift, table, idx):
    if bins:
        return _bins_driver(_decode_{key}, {n}, blocks, big, lut, g1, g2, lo, scale, top, shift, table, idx)
    a, b, t, ok = _range_driver(_decode_{key}, {n}, blocks, big, lut, g1, g2)
    return np.float64(a), np.float64(b), t, np.int64(ok)
"""


def _instantiate() -> None:
    from ggscope.facts.ggml_types import LAYOUTS as _ALL
    done: set[tuple] = set()
    for name, (dec, args, _) in _SPECS.items():
        key = (dec, args, _ALL[name].block_elems)
        if key in done:
            continue
        done.add(key)
        src = _ENTRY.format(key=_key(name), dec=dec, n=_ALL[name].block_elems,
                            args="".join(f", {a}" for a in args))
        exec(compile(src, __file__, "exec"), globals())


def _key(layout: str) -> str:
    """The entry points' suffix: the first layout of the table with the same decoder."""
    spec = _SPECS[layout]
    for name, other in _SPECS.items():
        if other[:2] == spec[:2]:
            return name.lower()
    raise KeyError(layout)                  # pragma: no cover - every layout matches itself


_instantiate()
LAYOUTS = frozenset(_SPECS)


def _entry(layout: str):
    return globals()[f"_stats_{_key(layout)}"]


_NO_TABLE = np.zeros(1, np.int64)
_NO_IDX = np.zeros(1, np.uint8)


def range_pass(layout: str, blocks: np.ndarray, big: bool) -> tuple[float, float, float] | None:
    if layout in scale_range.LAYOUTS:
        r = scale_range.range_pass(layout, blocks, big)
        return None if r is None else (r[0], r[1], math.nan)
    g1, g2 = _tables(_SPECS[layout][2])
    lo, hi, total, ok = _entry(layout)(False, blocks, int(big), code_values("F16", "little"), g1, g2, np.float32(0),
                                       np.float32(0), np.int32(0), np.float32(0), _NO_TABLE, _NO_IDX)
    return (lo, hi, total) if ok else None


def bin_pass(layout: str, blocks: np.ndarray, big: bool, lo: np.float32, scale: np.float32,
             top: np.int32, shift: np.float32, table: np.ndarray, idx: np.ndarray
             ) -> tuple[float, float, float, int]:
    g1, g2 = _tables(_SPECS[layout][2])
    return _entry(layout)(True, blocks, int(big), code_values("F16", "little"), g1, g2,
                          np.float32(lo), np.float32(scale), np.int32(top), np.float32(shift), table, idx)
