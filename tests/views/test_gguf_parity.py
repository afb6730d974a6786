"""ggscope's view of GGUF files equals gguf-py's GGUFReader's on the same files.

The files come from others' code: llama.cpp's own vocabulary files in
../shared/fixtures/llama-vocab and gguf-py's GGUFWriter (tests/gguf_writers.py).
v1 files, which GGUFReader no longer reads, are checked against the values the
independent spec writer was asked to write.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ggscope
import gguf_writers as W

gguf = pytest.importorskip("gguf")


def _norm(v):
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def reader_view(path: Path):
    r = gguf.GGUFReader(path)
    md = {name: _norm(f.contents()) for name, f in r.fields.items() if not name.startswith("GGUF.")}
    tensors = [(t.name, tuple(int(x) for x in t.shape), t.tensor_type.name, int(t.data_offset), int(t.n_bytes))
               for t in r.tensors]
    return md, tensors


def our_view(path: Path):
    m = ggscope.open(path)
    assert m.damage is None, m.damage
    md = {k: _norm(v) for k, v in m.metadata.items()}
    tensors = [(t.name, t.shape, t.type, t.offset, t.nbytes) for t in m.tensors]
    return m, md, tensors


def _flatten(v):
    return [y for x in v for y in _flatten(x)] if isinstance(v, list) else [v]


def assert_same(path: Path) -> ggscope.ModelFile:
    m, md, tensors = our_view(path)
    rmd, rtensors = reader_view(path)
    assert list(md) == list(rmd)
    for k in rmd:
        if m.metadata_types[k].startswith("array[array"):
            # GGUFReader.contents() flattens nested arrays; ggscope keeps the nesting
            assert _flatten(md[k]) == rmd[k], k
            assert all(isinstance(x, list) for x in md[k]), k
        else:
            assert md[k] == rmd[k], k
    assert tensors == rtensors
    assert m.root.end == path.stat().st_size
    return m


def _vocab_files():
    base = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "llama-vocab"
    return sorted(base.glob("*.gguf")) if base.is_dir() else []


@pytest.mark.parametrize("path", _vocab_files() or [pytest.param(None, marks=pytest.mark.skip(
    reason="../shared/fixtures/llama-vocab is absent"))], ids=lambda p: p.name if p else "absent")
def test_llama_cpp_vocab_files_match_ggufreader(path):
    m = assert_same(path)
    assert m.format == "gguf" and m.version == 3 and m.endian == "little"
    assert len(m.metadata["tokenizer.ggml.tokens"]) > 1000


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("recipe", ["all_value_types", "many_tensors", "custom_alignment"])
def test_gguf_py_files_match_ggufreader(tmp_path, recipe, endian):
    path = getattr(W, recipe)(tmp_path / f"{recipe}.gguf", endian=endian)
    m = assert_same(Path(path))
    assert m.endian == endian
    if recipe == "custom_alignment":
        assert m.alignment == 64
        assert all((t.offset - m.data_offset) % 64 == 0 for t in m.tensors)


def test_big_endian_recipe(tmp_path):
    m = assert_same(Path(W.big_endian(tmp_path / "be.gguf")))
    assert m.endian == "big"


def test_every_value_type_has_its_type_name(tmp_path):
    m = ggscope.open(W.all_value_types(tmp_path / "v.gguf"))
    types = set(m.metadata_types.values())
    for t in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
              "uint64", "int64", "float64", "array[string]", "array[float32]"):
        assert t in types, t
    assert any(t.startswith("array[array") for t in types)


@pytest.mark.parametrize("version", [1, 2])
def test_v1_v2_files(tmp_path, version):
    path = getattr(W, f"legacy_v{version}")(tmp_path / f"v{version}.gguf")
    m = ggscope.open(path)
    assert m.damage is None and m.version == version
    kvs, tensors = W._legacy_content(np.random.default_rng(W.LEGACY_SEED)) if hasattr(W, "LEGACY_SEED") else (None, None)
    if version == 2:
        rmd, rtensors = reader_view(Path(path))
        assert {k: _norm(v) for k, v in m.metadata.items()} == rmd
        assert [(t.name, t.shape, t.type, t.offset, t.nbytes) for t in m.tensors] == rtensors
    if kvs is not None:
        for kv in kvs:
            assert kv.key in m.metadata


def test_empty_values(tmp_path):
    m = ggscope.open(W.empty_values(tmp_path / "e.gguf"))
    assert m.damage is None
    assert any(v == [] or (hasattr(v, "__len__") and len(v) == 0) for v in m.metadata.values())
    assert "" in [v for v in m.metadata.values() if isinstance(v, str)]


def test_truncation_at_every_byte_is_an_error_node(tmp_path):
    data = Path(W.all_value_types(tmp_path / "t.gguf")).read_bytes()
    for cut in range(4, len(data)):  # shorter than the magic: "unknown format", tested in test_cli
        m = ggscope.open_bytes(data[:cut], f"cut{cut}")
        assert m.damage is not None, cut
        assert m.damage.error and m.damage.end is None
        assert 0 <= m.damage.start <= cut
    assert ggscope.open_bytes(data).damage is None
