"""The plan reads headers only: split models (each shard its own mapping, as llama.cpp's
loader maps every file) and a model whose tensor data cannot be read."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from test_split import Q8, rewrite  # noqa: E402

import ggscope  # noqa: E402
from ggscope.memory import Options, plan  # noqa: E402
from ggscope.model.modelfile import TensorInfo  # noqa: E402
from ggscope.model.split import open_model  # noqa: E402

O = Options(ctx=2048, features=frozenset())


def _range(tensors) -> int:
    return max(t.offset + t.nbytes for t in tensors) - min(t.offset for t in tensors)


def test_split_model_maps_each_shard(tmp_path):
    if not Q8.is_file():
        pytest.skip(f"{Q8} missing; run python fixtures/make_fixtures.py")
    rewrite(Q8, tmp_path / "T.gguf", split_max_tensors=8)
    shards = sorted(tmp_path.glob("T-*-of-*.gguf"))
    whole = open_model(str(shards[1]))
    p = plan(whole, O)
    # get_mapping_range per file: the sum of each shard's first-to-last tensor byte range
    want = sum(_range(ggscope.open(str(s)).tensors) for s in shards)
    assert p.model_bytes == want
    single = plan(ggscope.open(str(Q8)), O)
    assert (p.kv_bytes, p.compute_bytes, p.output_bytes) == (single.kv_bytes, single.compute_bytes,
                                                             single.output_bytes)


def test_no_tensor_data_is_read(monkeypatch):
    mf = ggscope.open(str(Q8))

    def boom(self, *a, **k):
        raise AssertionError("tensor data read")

    monkeypatch.setattr(TensorInfo, "raw", boom)
    monkeypatch.setattr(TensorInfo, "dequantize", boom)
    monkeypatch.setattr(type(mf.source), "view", boom)
    assert plan(mf, O).total_bytes > 0


def test_remote_model_is_sized_from_range_reads_of_the_header(tmp_path, monkeypatch, capsys):
    """``ggscope fit URL``: the same plan as the local file; no more than the header moves."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
    from range_server import RangeServer
    from tools.llama_memory_recipe import build, decoder

    from ggscope.cli import main
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "5")
    # a 7B-wide model: hundreds of MiB of (sparse) tensor data behind a small header
    path = build({"recipe": decoder("llama", 2, 4096, 32, 32, 128, 11008, 32000)}, tmp_path / "m.gguf")
    with RangeServer() as s:
        url = s.serve("/m.gguf", path)
        assert main(["fit", url, "--json", "--cpu", "none"]) == 0
        remote = capsys.readouterr().out
        assert s.served.bytes_sent <= 4 * (1 << 20) < path.stat().st_size // 100
    assert main(["fit", str(path), "--json", "--cpu", "none"]) == 0
    local = capsys.readouterr().out
    strip = lambda t: [ln for ln in t.splitlines() if '"file"' not in ln]  # noqa: E731
    assert strip(remote) == strip(local)
