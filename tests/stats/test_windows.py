"""How the one-pass routes (F16/BF16/I8/I16 codes, BIT1 bits) read a tensor: each chunk
in windows of at most ``WINDOW_BYTES`` of whole blocks, into one buffer per thread that
outlives the call -- every byte read exactly once, nothing else read, the window edges
anywhere (odd tails, one element, windows that do not divide a chunk), big-endian files,
and a file that shrinks between two windows of one chunk is ``FileChanged``.

The statistics are checked against numpy's on the decoded values, and against the same
tensor read in one window per chunk, so a window read at the wrong place, twice or not
at all changes a count."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

import ggscope
from ggscope.core.errors import FileChanged
from ggscope.source import ranges
from ggscope.stats import chunks
from ggscope.stats.tensors import tensor_stats
from tests.gguf_writers import TensorSpec, write_gguf_py

from test_reading import _tiles, reads  # noqa: E402,F401  (the reads fixture and its check, shared)

WINDOW = 1001                       # bytes: not a multiple of any block, so windows end anywhere


def _f16(n: int, seed: int) -> np.ndarray:
    x = (np.random.default_rng(seed).standard_normal(n) * 0.02).astype(np.float16)
    x[3:: 997] = np.float16(np.inf)
    x[5:: 1009] = np.float16(np.nan)
    x[7:: 499] = np.float16(-0.0)
    return x


def _write(path, n: int, endian: str, seed: int = 3):
    """One tensor per code layout with ``n`` elements: F16, BF16 (truncated F16 values:
    exact codes), I8 and I16 (one-dimensional, so any count)."""
    f16 = _f16(n, seed)
    bf16 = (f16.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    rng = np.random.default_rng(seed + 1)
    i8 = rng.integers(-128, 128, n, dtype=np.int8)
    i16 = (rng.standard_normal(n) * 300).astype(np.int16)
    order = ">" if endian == "big" else "<"
    raw_bf16 = bf16.astype(order + "u2").view(np.uint8)
    write_gguf_py(path, endian=endian, tensors=[
        TensorSpec("f16", Q.F16, f16), TensorSpec("bf16", Q.BF16, raw_bf16), TensorSpec("i8", Q.I8, i8),
        TensorSpec("i16", Q.I16, i16)])
    values = {"f16": f16.astype(np.float64), "i8": i8.astype(np.float64), "i16": i16.astype(np.float64),
              "bf16": (bf16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)}
    return values


def _numpy(v: np.ndarray) -> dict:
    f = v[np.isfinite(v)]
    counts, edges = np.histogram(f, bins=64)
    return {"count": v.size, "finite": f.size, "nan": int(np.isnan(v).sum()), "inf": int(np.isinf(v).sum()),
            "zeros": int((f == 0).sum()), "min": float(f.min()), "max": float(f.max()),
            "counts": counts.tolist(), "edges": edges.tolist()}


def _same_as_numpy(s: dict, v: np.ndarray) -> None:
    want = _numpy(v)
    got = {k: s[k] for k in ("count", "finite", "nan", "inf", "zeros", "min", "max")}
    got.update(counts=s["histogram"]["counts"], edges=s["histogram"]["edges"])
    assert got == want
    f = v[np.isfinite(v)]
    assert s["mean"] == pytest.approx(f.mean(), rel=1e-12, abs=1e-15)
    assert s["std"] == pytest.approx(f.std(), rel=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("n", [1, 2, 499, 500, 501, 1000, 1001, 12_345])
def test_windows_read_every_byte_once_and_count_as_numpy(tmp_path, monkeypatch, reads, n, endian, threads):
    monkeypatch.setattr(chunks, "WINDOW_BYTES", WINDOW)
    values = _write(tmp_path / "m.gguf", n, endian)
    with ggscope.open(tmp_path / "m.gguf") as mf:
        for name, v in values.items():
            t = mf.tensor(name)
            reads.clear()
            s = tensor_stats(t, threads=threads, chunk_elems=1500)      # chunks that windows do not divide
            assert _tiles(reads, t), name
            assert max(size for _, size in reads) <= WINDOW, name
            assert len(reads) >= -(-t.nbytes // WINDOW), name
            _same_as_numpy(s, v)


@pytest.mark.parametrize("endian", ["little", "big"])
def test_windows_agree_with_one_read_per_chunk(tmp_path, monkeypatch, endian):
    values = _write(tmp_path / "m.gguf", 300_007, endian, seed=11)
    with ggscope.open(tmp_path / "m.gguf") as mf:
        whole = {name: tensor_stats(mf.tensor(name), threads=2) for name in values}
        monkeypatch.setattr(chunks, "WINDOW_BYTES", 4096 + 6)
        windowed = {name: tensor_stats(mf.tensor(name), threads=2) for name in values}
    assert windowed == whole
    for name, v in values.items():
        _same_as_numpy(windowed[name], v)


def test_a_file_that_shrinks_between_two_windows_is_file_changed(tmp_path, monkeypatch):
    """One chunk, many windows: the cut comes after the first window was read."""
    monkeypatch.setattr(chunks, "WINDOW_BYTES", 4096)
    path = tmp_path / "m.gguf"
    _write(path, 50_000, "little")
    mf = ggscope.open(path)
    t = mf.tensor("f16")
    real = ranges.RangeReader.read
    calls: list[int] = []

    def read(self, start, nbytes, file=None, out=None):
        got = real(self, start, nbytes, file, out)
        calls.append(nbytes)
        if len(calls) == 1:
            with open(path, "r+b") as f:
                f.truncate(t.offset + t.nbytes // 2)
        return got
    monkeypatch.setattr(ranges.RangeReader, "read", read)
    with pytest.raises(FileChanged):
        tensor_stats(t, threads=1)
    assert 1 < len(calls) <= t.nbytes // 2 // 4096 + 2        # stopped at the cut, not before


def test_the_window_buffer_is_one_per_thread_and_outlives_the_call(tmp_path, monkeypatch):
    """No buffer is faulted in per call: the calling thread's window is the same array
    for every tensor, and never above ``WINDOW_BYTES``."""
    monkeypatch.setattr(chunks, "_WINDOW", type(chunks._WINDOW)())
    _write(tmp_path / "m.gguf", 40_000, "little")
    with ggscope.open(tmp_path / "m.gguf") as mf:
        tensor_stats(mf.tensor("f16"), threads=1)
        buf = chunks._WINDOW.buf
        assert buf.nbytes <= chunks.WINDOW_BYTES
        for name in ("bf16", "i16", "f16"):
            tensor_stats(mf.tensor(name), threads=1)
            assert chunks._WINDOW.buf is buf


def test_an_in_memory_file_is_sliced_in_one_piece_per_chunk(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(chunks, "WINDOW_BYTES", WINDOW)
    values = _write(tmp_path / "m.gguf", 12_345, "little")
    mf = ggscope.open_bytes((tmp_path / "m.gguf").read_bytes())
    for name, v in values.items():
        reads.clear()
        _same_as_numpy(tensor_stats(mf.tensor(name), chunk_elems=5000, threads=1), v)
        assert len(reads) == 3                   # one slice per chunk, no copy into windows


@pytest.mark.parametrize("window", [8, 100, 1 << 19])
def test_bit1_rows_in_windows_count_the_sign_bits_exactly(tmp_path, monkeypatch, reads, window):
    """BIT1's block is a row of u64 words: a window holds whole rows, and a row larger
    than the window is read as the chunk is."""
    from bit1_writer import write_bit1
    monkeypatch.setattr(chunks, "WINDOW_BYTES", window)
    path = tmp_path / "m.bit1"
    write_bit1(path, seed=5, dirty_tail_bits=True, vocab_size=7, d_model=65, n_layers=1, n_heads=5, d_ff=130)
    with ggscope.open(str(path)) as mf:
        done = 0
        for t in mf.tensors:
            if t.layout != "BIT1_PACKED":
                continue
            x = t.dequantize().astype(np.float64).reshape(-1)
            reads.clear()
            s = tensor_stats(t, chunk_elems=300, threads=1)
            assert _tiles(reads, t), t.name
            assert (s["count"], s["min"], s["max"]) == (x.size, x.min(), x.max())
            assert s["histogram"]["counts"] == np.histogram(x, bins=np.asarray(s["histogram"]["edges"]))[0].tolist()
            assert s["mean"] == pytest.approx(x.mean(), abs=1e-12)
            done += 1
        assert done
