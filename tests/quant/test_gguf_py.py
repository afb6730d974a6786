"""Agreement with gguf-py 0.19.0's ``gguf.quants`` on realistic data (an independent numpy
implementation): quantize a normal matrix with gguf-py where it can, and for the K-types
use random blocks whose f16 scale fields are overwritten with sane finite values."""
from __future__ import annotations

import numpy as np
import pytest

from ggscope.quant import dequantize

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as QT  # noqa: E402
from gguf.quants import dequantize as gguf_dequantize, quantize as gguf_quantize  # noqa: E402

ROWS, COLS = 16, 512


def _matrix(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    x[3] *= 1e-3
    x[5] = 0.0
    return x


@pytest.mark.parametrize("name", ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"])
def test_quantized_by_gguf_py(name):
    qtype = getattr(QT, name)
    x = _matrix(1)
    if name == "TQ1_0" or name == "TQ2_0":
        x = np.sign(x) * (np.abs(x) > 0.5)
    q = gguf_quantize(x, qtype)
    want = gguf_dequantize(q, qtype).astype(np.float32).reshape(-1)
    got = dequantize(name, q, x.size)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


# (block bytes, offsets of f16 scale fields) for random-byte blocks (ggml-types.md §2)
_RANDOM = {"Q2_K": (84, (80, 82)), "Q3_K": (110, (108,)), "Q4_K": (144, (0, 2)), "Q5_K": (176, (0, 2)),
           "Q6_K": (210, (208,)), "NVFP4": (36, ())}


@pytest.mark.parametrize("name", sorted(_RANDOM))
def test_random_blocks_against_gguf_py(name):
    block_bytes, scale_offsets = _RANDOM[name]
    rng = np.random.default_rng(7)
    n_blocks = 96
    blocks = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    for off in scale_offsets:
        scales = (rng.standard_normal(n_blocks) * 0.05).astype(np.float16)
        blocks[:, off:off + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    qtype = getattr(QT, name)
    n_elements = n_blocks * (64 if name == "NVFP4" else 256)
    want = gguf_dequantize(blocks.reshape(4, -1), qtype).astype(np.float32).reshape(-1)
    got = dequantize(name, blocks, n_elements)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
