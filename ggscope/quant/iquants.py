"""Bit-exact numpy dequantizers for ggml's IQ family (IQ1_S ... IQ4_XS).

Why: ggscope's stats, diff, deep validation and forward pass need the float32 values
ggml itself would compute, and a Python loop per block is far too slow for model-sized
tensors.  Each codec here is vectorized over blocks and reproduces ggml's
``dequantize_row_iq*`` (src/ggml-quants.c) operation by operation in float32: the
fp16 scale is widened exactly, every product is a separate float32 rounding in ggml's
order, and grid and sign tables are ggml's own (``iq_tables.py``).

Contract: ``DEQUANTIZERS[name](blocks, byteorder="little", out=None)`` takes the raw
blocks of one type as a ``(n_blocks, block_bytes)`` uint8 array and returns
``(n_blocks, block_elems)`` float32 in ggml's element order, written into ``out`` when
given (the shared codec contract of ``ggscope.quant``, see ``floats.py``).  Any byte
pattern decodes: NaN and inf scales propagate as in ggml's Release build (see
``_emit`` for the one place where that differs from a literal reading of the C), with
no warnings.  A wrongly shaped or typed argument raises ``ValueError``.
``BLOCK_SHAPES[name]`` is ``(block_elems, block_bytes)``, a cross-check for
``ggml_types.py``, which owns the type table.

Byte order follows the shared codec contract: ``byteorder`` applies to the fields ggml
declares as multi-byte scalars in ``ggml-common.h``: the ``ggml_half d`` of every type
but IQ1_M, and the ``uint16_t`` arrays IQ2_XXS ``qs``, IQ2_XS ``qs``, IQ1_S ``qh`` and
IQ4_XS ``scales_h``.  Words that ggml reads out of declared byte arrays (IQ3_XXS's
scale-and-sign u32s, IQ1_M's four u16 scale words) stay little-endian, as do the
tables.  (gguf-py's gguf_convert_endian does not convert IQ types, so no big-endian IQ
file written by another tool exists to settle this.)

Block layouts (byte offsets; "ib" is the 32-element sub-block, "l" a group of 8):

    IQ2_XXS  66 B  | d f16 | qs u16[32], read as 8 x (u32 a, u32 b), low u16 first |
                   u32 a = 4 grid indices (byte l); u32 b: bits 7l..7l+6 sign code l,
                   bits 28..31 scale s;  y = d*(0.5+s)*0.25 * grid[j] * sign[j]
    IQ2_XS   74 B  | d f16 | qs u16[32]: bits 0..8 grid, 9..15 sign code | scales u8[8] |
                   nibble (l/2) of scales[ib] scales groups l=0,1 / l=2,3
    IQ2_S    82 B  | d f16 | qs u8[32] grid low bits | signs u8[32] | qh u8[8] | scales u8[8] |
                   grid index = qs | ((qh[ib] >> 2l) & 3) << 8; sign byte used directly
    IQ3_XXS  98 B  | d f16 | qs u8[64] (two 4-byte grid entries per group) | u32[8] |
                   u32 w: sign codes as IQ2_XXS, scale w>>28;  y = d*(0.5+s)*0.5 * ...
    IQ3_S   110 B  | d f16 | qs u8[64] | qh u8[8] | signs u8[32] | scales u8[4] |
                   entry k of ib: qs[8ib+k] | ((qh[ib] >> k) & 1) << 8;
                   db = d*(1 + 2*nibble(ib) of scales[ib/2])
    IQ1_S    50 B  | d f16 | qs u8[32] | qh u16[8] |
                   qh: bits 3l..3l+2 grid high bits, 12..14 scale, 15 delta sign;
                   y = d*(2s+1) * (grid[j] + delta),  grid in {-1, 0, 1}
    IQ1_M    56 B  | qs u8[32] | qh u8[16] | scales u16[4] |
                   d = f16 of the top nibbles of the 4 words; 3-bit scale per 16 elems;
                   qh nibble per group: bits 0..2 grid high bits, bit 3 delta sign
    IQ4_NL   18 B  | d f16 | qs u8[16] |   y[j] = d*kvalues[lo(qs[j])], y[j+16] = ...hi
    IQ4_XS  136 B  | d f16 | scales_h u16 | scales_l u8[4] | qs u8[128] |
                   6-bit ls per ib (4 low bits in scales_l, 2 high in scales_h);
                   y = d*(ls-32) * kvalues[nibble]
"""
from __future__ import annotations

from functools import cache
from typing import Callable

import numpy as np

__all__ = ["DEQUANTIZERS", "BLOCK_SHAPES"]

F32 = np.float32

# name -> (elements per block, bytes per block)
BLOCK_SHAPES: dict[str, tuple[int, int]] = {
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ3_XXS": (256, 98),
    "IQ1_S": (256, 50),
    "IQ4_NL": (32, 18),
    "IQ3_S": (256, 110),
    "IQ2_S": (256, 82),
    "IQ4_XS": (256, 136),
    "IQ1_M": (256, 56),
}


# ---------------------------------------------------------------- tables (lazy)

def _frozen(a: np.ndarray) -> np.ndarray:
    """Cached tables are shared by every call (and thread): make them read-only."""
    a.flags.writeable = False
    return a


@cache
def _grid_bytes(name: str) -> np.ndarray:
    """ggml grid ``name`` as (n_entries, bytes_per_entry) uint8, byte j = LSB-first byte j."""
    from ggscope.quant.iq_tables import GRIDS  # ggml's i-quant tables: built only when an i-quant is decoded
    text, width, n = GRIDS[name]
    words = np.frombuffer(bytes.fromhex(text), dtype=f">u{width}")
    if words.size != n:  # a damaged table module, not user data
        raise RuntimeError(f"iq_tables.{name}: {words.size} entries, expected {n}")
    return _frozen(words.astype(f"<u{width}").view(np.uint8).reshape(n, width))


@cache
def _grid_f32(name: str) -> np.ndarray:
    """Grid entries as float32 values (unsigned bytes; iq1s_grid holds int8)."""
    g = _grid_bytes(name)
    return _frozen((g.view(np.int8) if name == "iq1s_grid" else g).astype(F32))


@cache
def _sign_f32_byte() -> np.ndarray:
    """(256, 8) float32: +1 or -1 for element j of a sign byte (bit kmask_iq2xs[j])."""
    from ggscope.quant.iq_tables import KMASK_IQ2XS  # ggml's i-quant tables: built only when an i-quant is decoded
    byte = np.arange(256, dtype=np.uint16)[:, None]
    mask = np.array(KMASK_IQ2XS, dtype=np.uint16)[None, :]
    return _frozen(np.where(byte & mask, F32(-1.0), F32(1.0)).astype(F32))


@cache
def _sign_f32_code() -> np.ndarray:
    """(128, 8) float32 signs of a 7-bit sign code, through ksigns_iq2xs."""
    from ggscope.quant.iq_tables import KSIGNS_IQ2XS  # ggml's i-quant tables: built only when an i-quant is decoded
    return _frozen(_sign_f32_byte()[np.array(KSIGNS_IQ2XS, dtype=np.intp)])


@cache
def _signed_grid(name: str) -> np.ndarray:
    """(n_entries * 128, 8) float32: grid entry g times the signs of code c, at g*128 + c.

    One gather instead of two; the products are exact small integers (see ``_emit``).
    """
    g = _grid_f32(name)
    return _frozen((g[:, None, :] * _sign_f32_code()[None, :, :]).reshape(-1, g.shape[1]))


@cache
def _iq1_grid_delta() -> np.ndarray:
    """(4096, 8) float32: iq1s_grid[g] + IQ1S_DELTA at g, iq1s_grid[g] - IQ1S_DELTA at 2048 + g."""
    from ggscope.quant.iq_tables import IQ1S_DELTA  # ggml's i-quant tables: built only when an i-quant is decoded
    g = _grid_f32("iq1s_grid")
    delta = F32(IQ1S_DELTA)
    return _frozen(np.concatenate([g + delta, g - delta]))


@cache
def _kvalues_f32() -> np.ndarray:
    from ggscope.quant.iq_tables import KVALUES_IQ4NL  # ggml's i-quant tables: built only when an i-quant is decoded
    return _frozen(np.array(KVALUES_IQ4NL, dtype=np.int8).astype(F32))


# ---------------------------------------------------------------- field readers

def _check(blocks: np.ndarray, name: str, byteorder: str, out: np.ndarray | None
           ) -> tuple[str, np.ndarray]:
    """Validate the arguments; return the numpy byte-order prefix and the output array."""
    n_elems, n_bytes = BLOCK_SHAPES[name]
    if byteorder not in ("little", "big"):
        raise ValueError(f"{name}: byteorder must be 'little' or 'big', not {byteorder!r}")
    if not isinstance(blocks, np.ndarray) or blocks.dtype != np.uint8:
        raise ValueError(f"{name}: blocks must be a uint8 numpy array, "
                         f"got {type(blocks).__name__} {getattr(blocks, 'dtype', '')}")
    if blocks.ndim != 2 or blocks.shape[1] != n_bytes:
        raise ValueError(f"{name}: blocks must have shape (n_blocks, {n_bytes}), got {blocks.shape}")
    shape = (blocks.shape[0], n_elems)
    if out is None:
        out = np.empty(shape, dtype=F32)
    elif not isinstance(out, np.ndarray) or out.dtype != F32 or out.shape != shape:
        raise ValueError(f"{name}: out must be a float32 array of shape {shape}, "
                         f"got {getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    return ("<" if byteorder == "little" else ">"), out


def _words(blocks: np.ndarray, start: int, count: int, width: int, bo: str) -> np.ndarray:
    """``count`` unsigned words of ``width`` bytes from byte ``start``, as (n, count) uint32."""
    raw = np.ascontiguousarray(blocks[:, start:start + count * width])
    return raw.view(f"{bo}u{width}").astype(np.uint32)


def _f16(blocks: np.ndarray, start: int, bo: str) -> np.ndarray:
    """The fp16 at byte ``start`` of every block, widened exactly to float32: shape (n,)."""
    raw = np.ascontiguousarray(blocks[:, start:start + 2])
    return raw.view(f"{bo}f2")[:, 0].astype(F32)


def _shifts(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint32)


def _emit(out: np.ndarray, scale: np.ndarray, vals: np.ndarray, signed: bool) -> np.ndarray:
    """out = scale * vals (float32, broadcast over vals' trailing axes); returns ``out``.

    ``signed``: vals is grid * sign, standing for ggml's ``db * grid[j] * (sign ? -1.f :
    1.f)``.  For a number db, db * (+-g) equals +-(db * g) exactly (rounding is
    symmetric), but a NaN db differs: ggml's Release build (GCC -O2/-O3) compiles the
    +-1 factor to a sign flip, so its result is db's quieted NaN with the sign bit XORed
    by the element's sign, whereas a multiplication keeps db's sign (as gguf-py and an
    -O0 build of ggml do).  Grid values are never zero, so only a NaN db makes a NaN.
    """
    scale = scale.reshape(scale.shape + (1,) * (vals.ndim - scale.ndim))
    direct = out.flags.c_contiguous                       # then reshape is a view of out
    target = out.reshape(vals.shape) if direct else np.empty(vals.shape, F32)
    with np.errstate(all="ignore"):
        np.multiply(scale, vals, out=target)
    if signed:
        nan = np.isnan(scale)
        if nan.any():
            bits = (scale.view(np.uint32) | np.uint32(0x00400000)) ^ (vals.view(np.uint32) & np.uint32(0x80000000))
            np.copyto(target.view(np.uint32), bits, where=np.broadcast_to(nan, vals.shape))
    if not direct:
        out[...] = target.reshape(out.shape)
    return out


def _half_scales(d: np.ndarray, scales: np.ndarray, step: float) -> np.ndarray:
    """IQ2_XS / IQ2_S: db = d*(0.5+nibble)*step; group l uses nibble l//2: (n, 8, 4)."""
    nib = np.stack([scales & 0xF, scales >> 4], axis=-1).astype(F32)          # (n, 8, 2)
    with np.errstate(all="ignore"):
        db = d[:, None, None] * (F32(0.5) + nib) * F32(step)
    return np.repeat(db, 2, axis=-1)


# ---------------------------------------------------------------- codecs

def dequantize_iq2_xxs(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ2_XXS", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    if bo == "<":
        w = _words(blocks, 2, 16, 4, bo).reshape(n, 8, 2)     # ggml's aux32[0], aux32[1]
    else:
        h = _words(blocks, 2, 32, 2, bo).reshape(n, 8, 2, 2)  # qs is declared uint16_t[32]
        w = h[..., 0] | h[..., 1] << 16
    grid_idx = (w[:, :, :1] >> _shifts(0, 8, 16, 24)) & 0xFF                  # (n, 8, 4)
    sign_code = (w[:, :, 1:] >> _shifts(0, 7, 14, 21)) & 0x7F                 # (n, 8, 4)
    with np.errstate(all="ignore"):
        db = d[:, None] * (F32(0.5) + (w[:, :, 1] >> 28).astype(F32)) * F32(0.25)   # (n, 8)
    vals = _signed_grid("iq2xxs_grid")[(grid_idx << 7 | sign_code).astype(np.intp)]  # (n, 8, 4, 8)
    return _emit(out, db, vals, signed=True)


def dequantize_iq2_xs(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ2_XS", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    q = _words(blocks, 2, 32, 2, bo).reshape(n, 8, 4)     # bits 0..8 grid, 9..15 sign code
    db = _half_scales(d, blocks[:, 66:74], 0.25)                              # (n, 8, 4)
    vals = _signed_grid("iq2xs_grid")[((q & 0x1FF) << 7 | (q >> 9)).astype(np.intp)]
    return _emit(out, db, vals, signed=True)


def dequantize_iq2_s(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ2_S", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    qs = blocks[:, 2:34].reshape(n, 8, 4).astype(np.intp)
    signs = blocks[:, 34:66].reshape(n, 8, 4)
    qh = blocks[:, 66:74].astype(np.intp)                                      # (n, 8)
    grid_idx = qs | ((qh[:, :, None] >> np.array([0, 2, 4, 6])) & 3) << 8      # (n, 8, 4)
    db = _half_scales(d, blocks[:, 74:82], 0.25)
    vals = _grid_f32("iq2s_grid")[grid_idx] * _sign_f32_byte()[signs]          # (n, 8, 4, 8)
    return _emit(out, db, vals, signed=True)


def dequantize_iq3_xxs(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ3_XXS", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    w = _words(blocks, 66, 8, 4, "<")                     # declared as bytes: always little-endian
    sign_code = ((w[:, :, None] >> _shifts(0, 7, 14, 21)) & 0x7F).astype(np.intp)
    with np.errstate(all="ignore"):
        db = d[:, None] * (F32(0.5) + (w >> 28).astype(F32)) * F32(0.5)       # (n, 8)
    grid = _grid_f32("iq3xxs_grid")[blocks[:, 2:66]].reshape(n, 8, 4, 8)      # two entries per group
    vals = grid * _sign_f32_code()[sign_code]
    return _emit(out, db, vals, signed=True)


def dequantize_iq3_s(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ3_S", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    qs = blocks[:, 2:66].reshape(n, 8, 8).astype(np.intp)
    qh = blocks[:, 66:74].astype(np.intp)                                      # (n, 8)
    signs = blocks[:, 74:106].reshape(n, 8, 4)
    scales = blocks[:, 106:110]
    grid_idx = qs | ((qh[:, :, None] >> np.arange(8)) & 1) << 8               # (n, 8, 8)
    nib = np.stack([scales & 0xF, scales >> 4], axis=-1).reshape(n, 8)        # nibble per ib
    with np.errstate(all="ignore"):
        db = d[:, None] * (1 + 2 * nib.astype(np.int32)).astype(F32)          # (n, 8)
    grid = _grid_f32("iq3s_grid")[grid_idx].reshape(n, 8, 4, 8)
    vals = grid * _sign_f32_byte()[signs]
    return _emit(out, db, vals, signed=True)


def dequantize_iq1_s(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ1_S", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    qs = blocks[:, 2:34].reshape(n, 8, 4).astype(np.intp)
    qh = _words(blocks, 34, 8, 2, bo).astype(np.intp)                         # (n, 8)
    grid_idx = qs | ((qh[:, :, None] >> np.array([0, 3, 6, 9])) & 7) << 8
    table_idx = grid_idx | ((qh[:, :, None] >> 15) & 1) << 11                 # delta sign
    with np.errstate(all="ignore"):
        dl = d[:, None] * (2 * ((qh >> 12) & 7) + 1).astype(F32)              # (n, 8)
    return _emit(out, dl, _iq1_grid_delta()[table_idx], signed=False)


def dequantize_iq1_m(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ1_M", byteorder, out)
    n = blocks.shape[0]
    qs = blocks[:, 0:32].reshape(n, 8, 4).astype(np.intp)
    qh = blocks[:, 32:48].reshape(n, 8, 2).astype(np.intp)
    sc = _words(blocks, 48, 4, 2, "<")                    # declared as bytes: always little-endian
    d_bits = ((sc[:, 0] >> 12) | ((sc[:, 1] >> 8) & 0x00F0)
              | ((sc[:, 2] >> 4) & 0x0F00) | (sc[:, 3] & 0xF000)).astype(np.uint16)
    d = d_bits.view(np.float16).astype(F32)
    nib = ((qh[:, :, :, None] >> np.array([0, 4])) & 0xF).reshape(n, 8, 4)   # nibble per group
    table_idx = qs | (nib & 7) << 8 | (nib >> 3) << 11
    # 3-bit scales: word ib//2, bits 6*(ib%2) (groups 0,1) and 6*(ib%2)+3 (groups 2,3)
    word = np.repeat(sc, 2, axis=1).astype(np.intp)                           # (n, 8)
    shift = (6 * (np.arange(8) % 2))[None, :, None] + np.array([0, 3])        # (1, 8, 2)
    s3 = (word[:, :, None] >> shift) & 7                                       # (n, 8, 2)
    with np.errstate(all="ignore"):
        dl = d[:, None, None] * (2 * s3 + 1).astype(F32)                       # (n, 8, 2)
    return _emit(out, np.repeat(dl, 2, axis=-1), _iq1_grid_delta()[table_idx], signed=False)


@cache
def _kvalue_bytes() -> tuple[np.ndarray, np.ndarray]:
    """kvalues of a code byte's low and of its high nibble, indexed by the whole byte:
    one ``take`` per half, no nibble arrays (about 30% faster than indexing by nibbles)."""
    b = np.arange(256)
    k = _kvalues_f32()
    return _frozen(k[b & 0xF]), _frozen(k[b >> 4])


def _iq4_values(qs: np.ndarray) -> np.ndarray:
    """(n, k, 16) code bytes -> (n, k, 32) float32 kvalues: low nibbles, then high."""
    lo, hi = _kvalue_bytes()
    vals = np.empty(qs.shape[:-1] + (32,), F32)
    np.take(lo, qs, out=vals[..., :16])
    np.take(hi, qs, out=vals[..., 16:])
    return vals


def dequantize_iq4_nl(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ4_NL", byteorder, out)
    d = _f16(blocks, 0, bo)
    return _emit(out, d, _iq4_values(blocks[:, 2:18]), signed=False)


def dequantize_iq4_xs(blocks: np.ndarray, byteorder: str = "little", out: np.ndarray | None = None) -> np.ndarray:
    bo, out = _check(blocks, "IQ4_XS", byteorder, out)
    n = blocks.shape[0]
    d = _f16(blocks, 0, bo)
    scales_h = _words(blocks, 2, 1, 2, bo)                                     # (n, 1)
    scales_l = blocks[:, 4:8]
    low = np.stack([scales_l & 0xF, scales_l >> 4], axis=-1).reshape(n, 8).astype(np.int32)
    high = ((scales_h >> _shifts(0, 2, 4, 6, 8, 10, 12, 14)) & 3).astype(np.int32)
    with np.errstate(all="ignore"):
        dl = d[:, None] * ((low | high << 4) - 32).astype(F32)                # (n, 8)
    return _emit(out, dl, _iq4_values(blocks[:, 8:136].reshape(n, 8, 16)), signed=False)


DEQUANTIZERS: dict[str, Callable[..., np.ndarray]] = {
    "IQ2_XXS": dequantize_iq2_xxs,
    "IQ2_XS": dequantize_iq2_xs,
    "IQ3_XXS": dequantize_iq3_xxs,
    "IQ1_S": dequantize_iq1_s,
    "IQ4_NL": dequantize_iq4_nl,
    "IQ3_S": dequantize_iq3_s,
    "IQ2_S": dequantize_iq2_s,
    "IQ4_XS": dequantize_iq4_xs,
    "IQ1_M": dequantize_iq1_m,
}
