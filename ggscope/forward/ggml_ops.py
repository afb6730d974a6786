"""ggml-cpu's matrix products and flash attention, bit for bit, on compiled kernels.

Why: llama.cpp's CPU backend adds each dot product up in an order of its own -- float
lanes, fused multiply-adds, a fixed horizontal sum -- and on a model as chaotic as
gemma-3-270m the last bit of every q, k and v decides the KL-divergence report by
percents.  ``_cggml`` (csrc/_cggml.c) spells those orders out; this module says when
ggml takes each path and hands the kernels their inputs.  Which llama.cpp build each
order matches is in the C file's comment: the AVX-512 native build of llama.cpp as
vendored in llama-cpp-python 0.3.36 with llamafile's sgemm on (the machine the
fixtures were recorded on).

Contract: ``product(x, w)`` is ggml_mul_mat(w, x) for x [T, in] float32 and a weight
``w`` that carries its ggml type (``matmul.Mat``: ``ggml_type`` and, for the types of
``Q0_TYPES`` -- Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, and BF16
(its stored bits, blocks of one) -- its ``blocks``), or None where ggml takes a path these kernels do not have: one row of an
IQ4_NL matrix and fewer than 8 rows of Q3_K or of Q4_K not repacked (ggml's vec_dot), Q2_K of rows % 8 != 0
(tiled), the i-quants but IQ4_NL and IQ4_XS, F32.  The caller then computes it with numpy: the same values to
~1e-7, not the same bits.  ``product_blocks(x, blocks, ggml_type, rows)`` is the same
from the weight's bytes, ``product_f16_rows`` from an F16 matrix's rows,
``product_bf16_rows`` from a BF16 matrix's (VDPBF16PS's arithmetic: fused pairs, denormals
flushed).
``flash_attention(q, k, v, mask, scale, softcap)`` is ggml-cpu's tiled flash attention
(q [T, H, D], k [S, Hkv, D], v [S, Hkv, Dv], mask [T, S] of 0 / -inf);
``rope_cos_sin`` the rotary angles' cos and sin as ggml_rope_cache_init computes them;
``swiglu`` ggml_vec_swiglu_f32; ``quantize_q8_0`` quantize_row_q8_0.  Without the
compiled extension (no C compiler at install), or with GGSCOPE_GGML_KERNELS=0, every
function returns None and the forward pass is numpy's (on gemma-3-270m that put PPL(Q)
of the Q8_0 file 1.5 % off llama-perplexity's).
"""
from __future__ import annotations

import importlib
import os

import numpy as np

from ggscope.source.stream import THREADS, Stream

try:
    # by name: the compiled extension imports no Python module, but ``from ggscope.forward
    # import _cggml`` reads to grimp as an import of the package, whose __init__ imports
    # matmul, which imports this module -- a circle that is not there
    _cggml = importlib.import_module("ggscope.forward._cggml")
except ImportError:                                   # built without a C compiler: numpy instead
    _cggml = None
if os.environ.get("GGSCOPE_GGML_KERNELS", "1") == "0":   # numpy's sums on purpose (benchmarks, bisecting)
    _cggml = None

__all__ = ["AVAILABLE", "FA_TILE_Q", "Q0_TYPES", "product", "product_blocks", "product_f16_rows",
           "product_bf16_rows", "f16_vecdot", "bf16_vecdot", "repacked", "product_from_tensor", "quantize_q8_0", "flash_attention",
           "rope_cos_sin", "swiglu"]

AVAILABLE = _cggml is not None
_SPLIT_WORK = 1 << 22     # multiply-adds below which a product stays on one thread
FA_TILE_Q = 64           # GGML_FA_TILE_Q (ggml-cpu/common.h): fewer query rows take the one-row path
# the types ggml-cpu multiplies by Q8_0 activations through tinyBLAS_Q0_AVX (sgemm.cpp
# llamafile_sgemm) or, repacked, through arch/x86/repack.cpp: ggml type number, block bytes
_Q0 = {"Q8_0": 8, "Q4_0": 2, "Q5_0": 6, "IQ4_NL": 20}
_BLOCK_BYTES = {"Q8_0": 34, "Q4_0": 18, "Q5_0": 22, "IQ4_NL": 18}
# the types with a min, multiplied by Q8_1 activations through vec_dot for every row count
_Q1 = {"Q4_1": 3, "Q5_1": 7}
_BLOCK_BYTES.update({"Q4_1": 20, "Q5_1": 24})
# the K types by Q8_K activations: Q4_K repacked on AVX2 (rows % 8 == 0); Q3_K .. Q6_K (and
# Q4_K of other rows) through ggml-cpu's tiled K-quant path for at least 8 rows
# IQ4_XS too (tiled.cpp takes it beside the K types; never repacked); Q2_K repacked on
# AVX-512 (rows % 8 == 0)
_K = {"Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "IQ4_XS": 23, "Q2_K": 10}
_BLOCK_BYTES.update({"Q3_K": 110, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210, "IQ4_XS": 136, "Q2_K": 84})
_TILED_MIN_ROWS = 8      # tiled.cpp ggml_tiled_min_batch: fewer activation rows take vec_dot
_VEC_DOT_K = ("Q6_K", "Q5_K", "IQ4_XS")   # the K types whose vec_dot (arch/x86/quants.c, AVX2) has a kernel
# BF16 by BF16 activations: tinyBLAS<32> with VDPBF16PS, or ggml_vec_dot_bf16
Q0_TYPES = tuple(_Q0) + tuple(_Q1) + tuple(_K) + ("BF16",)   # the types multiplied from their stored bytes


def _f16_path(T: int, M: int, K: int) -> bool:
    """llamafile_sgemm's tinyBLAS<16> for F16 x F16: at least 2 rows of activations
    (n >= 2), k % 16 == 0 and m % 4 == 0 (sgemm.cpp tinyBLAS::matmul)."""
    return T >= 2 and K % 16 == 0 and M % 4 == 0


def _bf16_path(T: int, M: int, K: int) -> bool:
    """llamafile_sgemm's tinyBLAS<32, __m512, __m512bh> for BF16 x BF16 (a build with
    AVX512-BF16): at least 2 rows of activations, k % 32 == 0, m % 4 == 0."""
    return T >= 2 and K % 32 == 0 and M % 4 == 0


def bf16_vecdot(T: int, rows: int, cols: int) -> bool:
    """Whether ggml multiplies a BF16 matrix [rows, cols] by T activation rows with
    ggml_vec_dot_bf16 rather than tinyBLAS."""
    return not _bf16_path(T, rows, cols)


def product(x: np.ndarray, w) -> np.ndarray | None:
    """x [T, in] times the typed weight w [out, in] as ggml-cpu computes it, or None."""
    if _cggml is None or x.ndim != 2 or getattr(w, "ndim", 0) != 2:
        return None
    gtype = getattr(w, "ggml_type", None)
    T, K = x.shape
    M = w.shape[0]
    if w.shape[1] != K:
        return None
    if gtype == "F16":
        return product_f16_rows(x, w, vecdot=not _f16_path(T, M, K))
    if gtype == "BF16":
        return product_bf16_rows(x, w, vecdot=bf16_vecdot(T, M, K))
    blocks = getattr(w, "blocks", None)
    if gtype in Q0_TYPES and blocks is not None and w.flags.c_contiguous:   # not a transposed view
        return product_blocks(x, blocks, gtype, M)
    return None


def _by_rows(rows: int, work: int, run) -> np.ndarray:
    """``run(r0, r1)`` -> the output columns [T, r1 - r0] of weight rows r0..r1, over
    ``THREADS`` threads when the product is large (the kernels release the GIL; each
    element is computed alone, so the split changes no bit)."""
    n = THREADS if work >= _SPLIT_WORK and rows >= 2 * THREADS else 1
    if n == 1:
        return run(0, rows)
    cuts = [rows * i // n for i in range(n + 1)]
    with Stream(threads=n, what="multiplying") as s:
        parts = s.map(lambda i: run(cuts[i], cuts[i + 1]), range(n))
    return np.concatenate(parts, axis=1)


def _by_weight_rows(kernel, x: np.ndarray, w: np.ndarray, *extra) -> np.ndarray:
    """``kernel(x, w[r0:r1], out, T, r1 - r0, K, *extra)`` for x [T, K] and w [rows, K]
    (C-contiguous), split over weight rows by ``_by_rows``."""
    T, K = x.shape

    def run(r0: int, r1: int) -> np.ndarray:
        out = np.empty((T, r1 - r0), np.float32)
        kernel(x, w[r0:r1], out, T, r1 - r0, K, *extra)
        return out
    return _by_rows(w.shape[0], T * w.shape[0] * K, run)


def product_f16_rows(x: np.ndarray, rows: np.ndarray, vecdot: bool) -> np.ndarray:
    """x [T, in] times some rows [r, in] of an F16 matrix (their values as float32), in
    tinyBLAS's order or (``vecdot``: one activation row, or a matrix tinyBLAS refuses,
    see ``f16_vecdot``) ggml_vec_dot_f16's; neither depends on which rows are computed
    together."""
    x16 = np.ascontiguousarray(x, np.float32).astype(np.float16).astype(np.float32)
    return _by_weight_rows(_cggml.mm_f16, x16, np.ascontiguousarray(rows, np.float32), vecdot)


def product_bf16_rows(x: np.ndarray, rows: np.ndarray, vecdot: bool) -> np.ndarray | None:
    """x [T, in] (float32: the kernel rounds it to BF16 as ggml_cpu_fp32_to_bf16 does)
    times some rows [r, in] of a BF16 matrix (their values as float32, exact), in
    tinyBLAS<32>'s order or (``vecdot``, see ``bf16_vecdot``) ggml_vec_dot_bf16's: per
    lane VDPBF16PS (two fused multiply-adds, the odd element first, denormals read and
    written as zero), then _mm512_reduce_add_ps.  That is the order of a build with
    AVX512-BF16; an AVX-512F build without it (tinyBLAS<16> over float32) sums otherwise."""
    if _cggml is None:
        return None
    return _by_weight_rows(_cggml.mm_bf16, np.ascontiguousarray(x, np.float32),
                           np.ascontiguousarray(rows, np.float32), vecdot)


def _product_bf16_bits(x: np.ndarray, raw: np.ndarray, rows: int, vecdot: bool) -> np.ndarray | None:
    """``product_bf16_rows`` from the weight's stored bytes (little-endian BF16)."""
    K = x.shape[1]
    bits = np.ascontiguousarray(raw, np.uint8).reshape(-1)
    if bits.size != rows * K * 2:
        return None
    return _by_weight_rows(_cggml.mm_bf16, np.ascontiguousarray(x, np.float32),
                           bits.view("<u2").reshape(rows, K), vecdot, True)


def f16_vecdot(T: int, rows: int, cols: int) -> bool:
    """Whether ggml multiplies an F16 matrix [rows, cols] by T activation rows with
    vec_dot_f16 rather than tinyBLAS."""
    return not _f16_path(T, rows, cols)


def product_blocks(x: np.ndarray, blocks: np.ndarray, ggml_type: str, rows: int,
                   matrix_rows: int | None = None) -> np.ndarray | None:
    """x [T, in] times ``rows`` rows of a ``Q0_TYPES`` weight given as their blocks, or
    None; ``matrix_rows``: the whole matrix's rows when these are a slice of it (which
    path ggml takes depends on the matrix, not on the slice)."""
    T, K = x.shape
    whole = rows if matrix_rows is None else matrix_rows
    if _cggml is not None and ggml_type == "BF16":
        return _product_bf16_bits(x, blocks, rows, bf16_vecdot(T, whole, K))
    if _cggml is None or ggml_type not in Q0_TYPES or K % 32:
        return None
    repack = repacked(ggml_type, whole)
    tiled = ggml_type in _K and not repack
    vecdot = tiled and T < _TILED_MIN_ROWS                  # ggml's vec_dot, not the tiled path
    if ggml_type in _K and (K % 256 or (vecdot and ggml_type not in _VEC_DOT_K)):
        return None                      # ggml's vec_dot for the other K types: not these kernels
    if ggml_type == "Q2_K" and not repack:
        return None                      # tiled.cpp's Q2_K unpack: not this kernel
    if ggml_type == "IQ4_NL" and T < 2 and not repack:
        return None                      # one row: ggml_vec_dot_iq4_nl_q8_0's two accumulators
    # (one row of Q8_0 / Q4_0 / Q5_0: ggml_vec_dot_*_q8_0 (arch/x86/quants.c, AVX2) sums in
    # tinyBLAS_Q0_AVX's order -- 8 lanes of 4 products, fma by block, hsum_float_8)
    raw = np.ascontiguousarray(blocks, np.uint8).reshape(-1)
    row_bytes = K // (256 if ggml_type in _K else 32) * _BLOCK_BYTES[ggml_type]
    if raw.size != rows * row_bytes:
        return None
    xc = np.ascontiguousarray(x, np.float32)

    def run(r0: int, r1: int) -> np.ndarray:
        out = np.empty((T, r1 - r0), np.float32)
        part = raw[r0 * row_bytes:r1 * row_bytes]
        if tiled:
            _cggml.mm_ktiled(xc, part, _K[ggml_type], out, T, r1 - r0, K, vecdot)
        elif ggml_type in ("Q4_K", "Q2_K"):
            _cggml.mm_q4k(xc, part, out, T, r1 - r0, K, _K[ggml_type])
        elif ggml_type in _Q1:
            _cggml.mm_q1(xc, part, _Q1[ggml_type], out, T, r1 - r0, K)
        else:
            _cggml.mm_q0(xc, part, _Q0[ggml_type], out, T, r1 - r0, K, repack)
        return out
    return _by_rows(rows, T * rows * K, run)


def repacked(ggml_type: str, rows: int) -> bool:
    """Whether llama.cpp moves the weight into ggml-cpu's CPU_REPACK buffer on an AVX2 /
    AVX-512 CPU (repack.cpp ggml_repack_get_optimal_repack_type: Q4_0, IQ4_NL and Q4_K
    with ne[1] % 8 == 0 become block_q4_0x8 / block_iq4_nlx8 / block_q4_Kx8 on AVX2,
    Q2_K block_q2_Kx8 on AVX-512), whose kernels sum in another order than tinyBLAS."""
    return ggml_type in ("Q4_0", "IQ4_NL", "Q4_K", "Q2_K") and rows % 8 == 0


def product_from_tensor(info, x: np.ndarray) -> np.ndarray:
    """ggml_mul_mat(tensor, x) from a file's tensor (``tools/record_ggml_ops.py``)."""
    M, K = int(info.shape[1]), int(info.shape[0])
    got = None
    if info.type in Q0_TYPES:
        got = product_blocks(x, info.raw(), info.type, M)
    elif info.type == "F16" and _cggml is not None:
        got = product_f16_rows(x, info.dequantize().reshape(M, K), f16_vecdot(x.shape[0], M, K))
    if got is None:
        raise ValueError(f"{info.name}: no ggml kernel for {info.type} with {x.shape[0]} rows")
    return got


def quantize_q8_0(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """quantize_row_q8_0 (ggml-cpu/arch/x86/quants.c) of x [..., n]: (q int8, d float32)."""
    if _cggml is None:
        return None
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    q, d = np.empty(x.size, np.int8), np.empty(x.size // 32, np.float32)
    _cggml.quantize(x, q, d, x.size)
    return q, d


def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray,
                    scale: float, softcap: float = 0.0) -> np.ndarray | None:
    """ggml-cpu's flash attention over an F16 cache: q [T, H, D] float32, k [S, Hkv, D] and
    v [S, Hkv, Dv] (the cache's values as float32), mask [T, S] (0 or -inf) -> [T, H, Dv];
    ggml_compute_forward_flash_attn_ext_tiled for ``FA_TILE_Q`` rows or more, else the
    one-row path (..._f16_one_chunk: q and the running output in F16); None without the
    extension."""
    if _cggml is None:
        return None
    T, H, D = q.shape
    S, Hkv, Dv = v.shape
    out = np.empty((T, H, Dv), np.float32)
    _cggml.fa_tiled(np.ascontiguousarray(q, np.float32), np.ascontiguousarray(k, np.float32),
                    np.ascontiguousarray(v, np.float32), np.ascontiguousarray(mask, np.float32), out,
                    T, H, S, Hkv, D, Dv, float(scale), float(softcap), T < FA_TILE_Q)
    return out


def rope_cos_sin(pos: np.ndarray, n_rot: int, base: float, freq_scale: float,
                 freq_factors: np.ndarray | None, ext_factor: float, corr: tuple[float, float],
                 attn_factor: float) -> tuple[np.ndarray, np.ndarray] | None:
    """ggml_rope_cache_init's cos and sin [T, n_rot/2] (ops.cpp: the running product of
    powf(base, -2/n_rot), rope_yarn, the C library's cosf / sinf), or None."""
    if _cggml is None:
        return None
    T, half = int(pos.shape[0]), n_rot // 2
    cos, sin = np.empty((T, half), np.float32), np.empty((T, half), np.float32)
    ff = None if freq_factors is None else np.ascontiguousarray(freq_factors[:half], np.float32)
    _cggml.rope_cache(np.ascontiguousarray(pos, np.int32), cos, sin, T, half, int(n_rot), float(base),
                      float(freq_scale), ff, float(ext_factor), float(corr[0]), float(corr[1]),
                      float(attn_factor))
    return cos, sin


def swiglu(g: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """ggml_vec_swiglu_f32 of gate g and up u [..., n] (vec.cpp: ggml_v_silu in groups of
    16, ggml_silu_f32 for the rest of each row), or None."""
    if _cggml is None or g.shape != u.shape or g.ndim < 1:
        return None
    n = int(g.shape[-1])
    out = np.empty(g.shape, np.float32)
    _cggml.swiglu(np.ascontiguousarray(g, np.float32), np.ascontiguousarray(u, np.float32), out,
                  int(g.size // max(1, n)), n)
    return out
