"""The vectorized codecs against slow scalar loops that follow ggml's C dequantizers line
by line (``dequantize_row_q4_0``, ``_q5_1``, ``_q4_K``, ``_q6_K`` in ggml-quants.c),
element by element with numpy float32 scalars, on random blocks."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from ggscope.quant import dequantize

F32 = np.float32


def _f16(b: bytes) -> np.float32:
    return F32(np.frombuffer(b, dtype="<f2")[0])


def ref_q4_0(block: bytes) -> list[np.float32]:
    d = _f16(block[0:2])
    y = [F32(0)] * 32
    for j in range(16):
        x0 = (block[2 + j] & 0x0F) - 8
        x1 = (block[2 + j] >> 4) - 8
        y[j] = F32(x0) * d
        y[j + 16] = F32(x1) * d
    return y


def ref_q5_1(block: bytes) -> list[np.float32]:
    d, m = _f16(block[0:2]), _f16(block[2:4])
    (qh,) = struct.unpack("<I", block[4:8])
    y = [F32(0)] * 32
    for j in range(16):
        xh0 = ((qh >> j) << 4) & 0x10
        xh1 = (qh >> (j + 12)) & 0x10
        x0 = (block[8 + j] & 0x0F) | xh0
        x1 = (block[8 + j] >> 4) | xh1
        y[j] = F32(x0) * d + m
        y[j + 16] = F32(x1) * d + m
    return y


def _scale_min_k4(j: int, q: bytes) -> tuple[int, int]:
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


def ref_q4_k(block: bytes) -> list[np.float32]:
    d, dmin = _f16(block[0:2]), _f16(block[2:4])
    scales, q = block[4:16], block[16:144]
    y: list[np.float32] = []
    is_ = 0
    for j in range(0, 256, 64):
        sc, m = _scale_min_k4(is_, scales)
        d1, m1 = d * F32(sc), dmin * F32(m)
        sc, m = _scale_min_k4(is_ + 1, scales)
        d2, m2 = d * F32(sc), dmin * F32(m)
        qq = q[j // 2: j // 2 + 32]
        y += [d1 * F32(b & 0xF) - m1 for b in qq]
        y += [d2 * F32(b >> 4) - m2 for b in qq]
        is_ += 2
    return y


def ref_q6_k(block: bytes) -> list[np.float32]:
    d = _f16(block[208:210])
    sc = np.frombuffer(block[192:208], dtype=np.int8)
    y = [F32(0)] * 256
    for n in range(2):
        ql, qh, s = block[64 * n: 64 * n + 64], block[128 + 32 * n: 128 + 32 * n + 32], sc[8 * n:]
        for l in range(32):
            is_ = l // 16
            q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32
            q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32
            q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32
            q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32
            y[128 * n + l] = d * F32(s[is_]) * F32(q1)
            y[128 * n + l + 32] = d * F32(s[is_ + 2]) * F32(q2)
            y[128 * n + l + 64] = d * F32(s[is_ + 4]) * F32(q3)
            y[128 * n + l + 96] = d * F32(s[is_ + 6]) * F32(q4)
    return y


CASES = {  # name: (reference, block bytes, block elems, f16 field offsets)
    "Q4_0": (ref_q4_0, 18, 32, (0,)),
    "Q5_1": (ref_q5_1, 24, 32, (0, 2)),
    "Q4_K": (ref_q4_k, 144, 256, (0, 2)),
    "Q6_K": (ref_q6_k, 210, 256, (208,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vectorized_equals_scalar_reference(name):
    ref, block_bytes, block_elems, f16_offsets = CASES[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    n_blocks = 24
    blocks = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    for off in f16_offsets:     # finite scales, including a few negative and tiny ones
        s = (rng.standard_normal(n_blocks) * 0.1).astype(np.float16)
        s[0] = np.float16(6e-8)
        blocks[:, off:off + 2] = s.view(np.uint8).reshape(n_blocks, 2)
    with np.errstate(all="ignore"):
        want = np.array([v for b in blocks for v in ref(b.tobytes())], dtype=np.float32)
    got = dequantize(name, blocks.tobytes(), n_blocks * block_elems)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
