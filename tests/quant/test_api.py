"""The dispatch contract of ggscope.quant: shapes, streaming, and clear errors on bad
input (never an IndexError).  Values are checked against gguf-py's dequantizer."""
from __future__ import annotations

import numpy as np
import pytest

from ggscope.quant import dequantize, iter_dequantized

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as QT  # noqa: E402
from gguf.quants import quantize as gguf_quantize, dequantize as gguf_dequantize  # noqa: E402


@pytest.fixture(scope="module")
def q8_data():
    x = np.random.default_rng(3).standard_normal((8, 1024)).astype(np.float32)
    q = gguf_quantize(x, QT.Q8_0)
    return q, gguf_dequantize(q, QT.Q8_0).reshape(-1).astype(np.float32)


def test_accepts_bytes_and_arrays(q8_data):
    q, want = q8_data
    for data in (q, q.reshape(-1), q.tobytes(), memoryview(q.tobytes())):
        got = dequantize("Q8_0", data, want.size)
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(got, want)


@pytest.mark.parametrize("chunk", [1, 32, 100, 4096, 1 << 20])
def test_iter_dequantized_streams_whole_blocks(q8_data, chunk):
    q, want = q8_data
    parts = list(iter_dequantized("Q8_0", q, want.size, chunk_elems=chunk))
    assert all(p.dtype == np.float32 and p.size % 32 == 0 and p.size <= max(chunk, 32) for p in parts)
    assert np.array_equal(np.concatenate(parts), want)


def test_size_mismatch_is_a_clear_value_error(q8_data):
    q, want = q8_data
    with pytest.raises(ValueError, match=r"needs 8704 bytes, got 8703"):
        dequantize("Q8_0", q.reshape(-1)[:-1], want.size, name="blk.0.w")
    with pytest.raises(ValueError, match="blk.0.w"):
        dequantize("Q8_0", q.reshape(-1)[:-1], want.size, name="blk.0.w")
    with pytest.raises(ValueError, match="not a whole number of Q8_0 blocks"):
        dequantize("Q8_0", q, want.size - 1)
    with pytest.raises(ValueError, match="needs"):
        next(iter_dequantized("Q4_K", b"\x00" * 10, 256))


def test_unknown_layout_and_undecodable_layout():
    with pytest.raises(ValueError, match="unknown block layout 'Q9_9'"):
        dequantize("Q9_9", b"", 0)
    with pytest.raises(NotImplementedError, match="Q4_0_4_4"):
        dequantize("Q4_0_4_4", b"\x00" * 18, 32)
    with pytest.raises(ValueError, match="byteorder"):
        dequantize("F16", b"\x00\x00", 1, byteorder="middle")


def test_empty_tensor():
    assert dequantize("Q4_K", b"", 0).shape == (0,)
    assert list(iter_dequantized("F32", b"", 0)) == []


def test_damaged_scales_give_values_not_exceptions():
    blocks = np.full((4, 18), 0xFF, dtype=np.uint8)      # f16 d = NaN everywhere
    got = dequantize("Q4_0", blocks, 128)
    assert got.shape == (128,) and np.isnan(got).all()
    rwkv = np.zeros((2, 24), dtype=np.uint8)
    rwkv[:, 4] = 200                                        # Q4_1_O outlier index out of range
    assert np.array_equal(dequantize("Q4_1_O", rwkv, 64), np.zeros(64, np.float32))
