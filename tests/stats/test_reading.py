"""How ``tensor_stats`` reads a tensor's bytes: once when they fit ``RAW_CACHE_BYTES``,
once per pass above it, never by way of the map, with memory bounded either way.

The reads are counted where every byte of tensor data enters the process
(``RangeReader.read``: ``readinto`` from a file on disk, a copy of a fetched window of a
remote file) and, for a URL, at the server (bytes sent).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.source import ranges
from ggscope.stats import chunks, tensors
from ggscope.stats.tensors import tensor_stats

gguf = pytest.importorskip("gguf")

ROWS, COLS = 64, 4096              # 256 Ki elements: 16 chunks of 16 Ki elements below
CHUNK = 1 << 14


def _values(seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((ROWS, COLS)) * 0.02).astype(np.float32)


def write_model(path: Path) -> Path:
    """One tensor per route: fused block layouts (Q8_0: range from the scales; Q4_1: with
    a sum), F32 read in place, F64 decoded by numpy, BF16 counted by codes (one pass)."""
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize
    x = _values()
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("q8_0", quantize(x, Q.Q8_0), raw_dtype=Q.Q8_0)
    w.add_tensor("q4_1", quantize(x, Q.Q4_1), raw_dtype=Q.Q4_1)
    w.add_tensor("f32", x)
    w.add_tensor("f64", x.astype(np.float64))
    w.add_tensor("bf16", quantize(x, Q.BF16), raw_dtype=Q.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return write_model(tmp_path_factory.mktemp("reading") / "routes.gguf")


@pytest.fixture
def reads(monkeypatch):
    """Every (start, nbytes) read of a tensor's file, in the order the threads asked."""
    seen: list[tuple[int, int]] = []
    real = ranges.RangeReader.read

    def read(self, start, nbytes, file=None, out=None):
        if file is None or file is self.mf:
            seen.append((start, nbytes))
        return real(self, start, nbytes, file, out)
    monkeypatch.setattr(ranges.RangeReader, "read", read)
    return seen


def _tiles(seen: list[tuple[int, int]], t) -> bool:
    """Whether the reads cover the tensor's bytes exactly once, end to end."""
    at = t.offset
    for start, n in sorted(seen):
        if start != at:
            return False
        at += n
    return at == t.offset + t.nbytes


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["q8_0", "q4_1", "f32", "f64", "bf16"])
def test_each_byte_is_read_once_when_the_tensor_fits(model, reads, name, threads):
    t = ggscope.open(model).tensor(name)
    assert t.nbytes <= tensors.RAW_CACHE_BYTES
    tensor_stats(t, chunk_elems=CHUNK, threads=threads)
    assert len(reads) == -(-t.n_elements // CHUNK)          # many chunks, each read once
    assert _tiles(reads, t)


@pytest.mark.parametrize("name", ["q8_0", "q4_1", "f32"])
def test_above_the_budget_each_pass_reads_again_and_the_results_agree(model, reads, monkeypatch, name):
    t = ggscope.open(model).tensor(name)
    once = tensor_stats(t, chunk_elems=CHUNK, threads=2)
    reads.clear()
    monkeypatch.setattr(tensors, "RAW_CACHE_BYTES", t.nbytes - 1)
    twice = tensor_stats(t, chunk_elems=CHUNK, threads=2)
    assert sum(n for _, n in reads) == 2 * t.nbytes
    assert _tiles(reads[:len(reads) // 2], t) and _tiles(reads[len(reads) // 2:], t)
    assert twice == once


def test_the_kept_bytes_are_one_buffer_within_the_budget(model, monkeypatch):
    """Between tensors at most one tensor-sized buffer stays, never above the budget; a
    tensor above the budget allocates none."""
    mf = ggscope.open(model)
    monkeypatch.setattr(chunks._KEPT, "value", [])
    for t in mf.tensors:
        tensor_stats(t, chunk_elems=CHUNK)
    assert len(chunks._KEPT.value) == 1
    # kept: the routes whose pass two reads the raw blocks (F64's decodes once into floats,
    # BF16's counts codes in one pass)
    assert chunks._KEPT.value[0].nbytes == max(mf.tensor(n).nbytes for n in ("q8_0", "q4_1", "f32"))
    monkeypatch.setattr(chunks._KEPT, "value", [])
    monkeypatch.setattr(tensors, "RAW_CACHE_BYTES", 1024)
    for t in mf.tensors:
        tensor_stats(t, chunk_elems=CHUNK)
    assert chunks._KEPT.value == []


def test_an_in_memory_file_is_sliced_not_copied(model, monkeypatch):
    monkeypatch.setattr(chunks._KEPT, "value", [])
    mf = ggscope.open_bytes(model.read_bytes())
    got = {name: tensor_stats(mf.tensor(name), chunk_elems=CHUNK) for name in ("q8_0", "f32")}
    assert chunks._KEPT.value == []
    local = ggscope.open(model)
    assert got == {name: tensor_stats(local.tensor(name), chunk_elems=CHUNK) for name in got}


def test_a_file_that_shrinks_during_pass_one_is_file_changed(model, tmp_path):
    from ggscope.core.errors import FileChanged
    path = tmp_path / "shrinks.gguf"
    path.write_bytes(model.read_bytes())
    t = ggscope.open(path).tensor("q8_0")

    def cancel() -> bool:                   # polled before each chunk: cut the file after the first
        calls.append(1)
        if len(calls) == 2:
            with open(path, "r+b") as f:
                f.truncate(t.offset + t.nbytes // 2)
        return False
    calls: list[int] = []
    with pytest.raises(FileChanged):
        tensor_stats(t, chunk_elems=CHUNK, threads=1, cancel=cancel)


def test_a_remote_tensor_is_fetched_once(tmp_path):
    """Over HTTP a second read is a second download: a two-pass tensor that fits the
    budget costs one fetch of its bytes, and its pages are given back."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
    pytest.importorskip("werkzeug")
    from range_server import RangeServer
    path = tmp_path / "f32.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("w", np.arange(2 << 20, dtype=np.float32))      # 8 MiB: several chunks
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with RangeServer() as server:
        mf = ggscope.open(server.serve("/f32.gguf", path))
        head, sent = mf.source.fetched(), server.served.bytes_sent
        t = mf.tensor("w")
        got = tensor_stats(t)
        assert server.served.bytes_sent - sent < t.nbytes + (1 << 20)     # once, plus block edges
        assert mf.source.fetched() - head < t.nbytes // 4
    assert got == tensor_stats(ggscope.open(path).tensor("w"))
