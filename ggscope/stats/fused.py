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
every decoder (``ggscope.stats.fused_decoders``) keeps ggml's float32 operation order, and tests/test_fused.py holds
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
* ``FUSED_LAYOUTS``: the layout names handled (every layout with more than one element per
  block that has a codec).
"""
from __future__ import annotations

import math
import numpy as np

from ggscope.stats import scale_range
from ggscope.core.jit import njit
from ggscope.stats.kernels import count_pairs
from ggscope.stats.kernels_numpy import PIECE
from ggscope.quant import code_values
from ggscope.stats.fused_specs import SPECS as _SPECS, tables as _tables
from ggscope.stats.fused_decoders import (  # noqa: F401 - the template's decoders, by name
    _dec_nibbles, _dec_int8, _dec_crumbs, _dec_tq1_0, _dec_q2_k, _dec_q3_k, _dec_q45_k, _dec_q6_k, _dec_table4, _dec_iq2, _dec_iq3, _dec_iq1)
from ggscope.facts.ggml_types import LAYOUTS as _ALL

__all__ = ["FUSED_LAYOUTS", "range_pass", "bin_pass"]

_FINITE = {"reassoc", "nsz", "nnan", "ninf"}


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
        a1 += v
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
        a1 = a1 - e * np.float64(shift)          # a1 sums the values (kernels.moments)
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
FUSED_LAYOUTS = frozenset(_SPECS)


def _entry(layout: str):
    return globals()[f"_stats_{_key(layout)}"]


_NO_TABLE = np.zeros(1, np.int64)
_NO_IDX = np.zeros(1, np.uint8)


def range_pass(layout: str, blocks: np.ndarray, big: bool) -> tuple[float, float, float] | None:
    if layout in scale_range.SCALE_BOUNDED_LAYOUTS:
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
