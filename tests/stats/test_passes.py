"""How many passes ``tensor_stats`` makes over a tensor and how its chunks are spread
over the threads: pass two runs once on a skewed tensor whose range comes from the block
scales (its centre is the mean of sampled blocks, not the middle of the range), and a
tensor of one or two chunks still keeps both threads busy.  The values are held to
numpy's float64 statistics of gguf-py's dequantization (the oracle) as well.
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.stats import chunks, cstats
from ggscope.stats.tensors import UNBUFFERED_CHUNK_ELEMS, tensor_stats

gguf = pytest.importorskip("gguf")
pytestmark = pytest.mark.skipif(not cstats.available(), reason="the compiled statistics kernels are not built")


def _skewed(n_rows: int, seed: int = 1) -> np.ndarray:
    """Weights as a real model has them: a narrow normal bulk and one large outlier, so
    the middle of the range lies many standard deviations from the mean."""
    x = (np.random.default_rng(seed).standard_normal((n_rows, 2048)) * 0.02).astype(np.float32)
    x[3, 7] = 2.5
    return x


def _k_blocks(layout: str, n_rows: int, seed: int = 1) -> np.ndarray:
    """Q4_K or Q6_K rows of 2048 elements (gguf-py cannot quantize them): random codes,
    every block the same small scales, one block's ``d`` 1000 times larger (the outlier)."""
    rng = np.random.default_rng(seed)
    n = n_rows * 8
    if layout == "Q4_K":                 # d, dmin, 12 bytes of 6-bit (scale, min), 128 code bytes
        b = rng.integers(0, 256, (n, 144), dtype=np.uint8)
        b[:, 0:4] = np.array([0.002, 0.002], "<f2").view(np.uint8)
        b[:, 4:8], b[:, 8:12], b[:, 12:16] = 1, 8, 0x81      # every sub-block: scale 1, min 8
    else:                                # 128 + 64 code bytes, 16 int8 scales, d
        b = rng.integers(0, 256, (n, 210), dtype=np.uint8)
        b[:, 192:208] = 1
        b[:, 208:210] = np.array([0.001], "<f2").view(np.uint8)
    at = 208 if layout == "Q6_K" else 0
    b[3, at:at + 2] = np.array([2.0], "<f2").view(np.uint8)
    return b.reshape(n_rows, -1)


def _write(path, layout: str, x: np.ndarray | None, n_rows: int = 256):
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize
    w = gguf.GGUFWriter(str(path), "llama")
    raw = _k_blocks(layout, n_rows) if x is None else quantize(x, Q[layout])
    w.add_tensor("w", raw, raw_dtype=Q[layout])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ggscope.open(path).tensor("w")


@pytest.fixture
def bin_passes(monkeypatch):
    calls: list[int] = []
    real = cstats.bin_pass

    def counted(layout, blocks, *args):
        calls.append(blocks.shape[0])
        return real(layout, blocks, *args)
    monkeypatch.setattr(cstats, "bin_pass", counted)
    return calls


@pytest.mark.parametrize("layout", ["Q8_0", "Q4_0", "Q4_K", "Q5_0", "Q6_K"])
def test_a_skewed_tensor_runs_pass_two_once(tmp_path, bin_passes, layout):
    t = _write(tmp_path / f"{layout}.gguf", layout, None if layout.endswith("_K") else _skewed(256))
    s = tensor_stats(t, threads=1, chunk_elems=1 << 16)
    assert sum(bin_passes) == t.n_elements // (256 if layout.endswith("_K") else 32)   # every block once
    from gguf.quants import dequantize
    from gguf import GGMLQuantizationType as Q
    want = dequantize(np.fromfile(t.file.path, np.uint8, t.nbytes, offset=t.offset), Q[layout]).astype(np.float64)
    assert s["mean"] == pytest.approx(want.mean(), abs=1e-6 * want.std())
    assert s["std"] == pytest.approx(want.std(), rel=1e-6)
    assert (s["min"], s["max"]) == (want.min(), want.max())


@pytest.mark.parametrize("n_elems, threads, pieces", [
    (1 << 20, 2, 2),                                # one chunk: split for the second thread
    (5 << 20, 2, 2),                                # a chunk and a bit: two equal halves
    (9 << 20, 2, 4),                                # three chunks: four, so no thread idles at the end
    (32 << 20, 2, 8),                               # already a multiple of the threads
    (1 << 20, 1, 1),                                # one thread: chunks as large as allowed
    (1 << 17, 2, 1),                                # too small to be worth a second thread
])
def test_chunks_are_spread_evenly_over_the_threads(n_elems, threads, pieces):
    step = chunks._step(n_elems // 32, 32, UNBUFFERED_CHUNK_ELEMS, threads)
    assert step * 32 <= UNBUFFERED_CHUNK_ELEMS
    assert -(-(n_elems // 32) // step) == pieces


def test_a_one_chunk_tensor_is_split_for_two_threads_and_agrees_with_one(tmp_path, monkeypatch):
    t = _write(tmp_path / "one.gguf", "Q8_0", _skewed(512))            # 1 Mi elements
    pieces: list[int] = []
    real = cstats.range_pass

    def counted(layout, blocks, *args):
        pieces.append(blocks.shape[0])
        return real(layout, blocks, *args)
    monkeypatch.setattr(cstats, "range_pass", counted)
    one = tensor_stats(t, threads=1)
    assert pieces == [t.n_elements // 32]
    pieces.clear()
    two = tensor_stats(t, threads=2)
    assert pieces == [t.n_elements // 64] * 2
    for k in ("count", "min", "max", "zeros", "histogram", "block_scales"):
        assert two[k] == one[k], k
    # float32 sums over other pieces: the same to a millionth of the spread
    assert two["mean"] == pytest.approx(one["mean"], abs=1e-6 * one["std"])
    assert two["std"] == pytest.approx(one["std"], rel=1e-6)
