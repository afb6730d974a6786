"""Tensor rules (GG5xx) and the standard-name table, checked against gguf-py."""
from __future__ import annotations

import glob
import struct

import numpy as np
import pytest

import ggscope
from gguf_writers import KV, TensorSpec, T, V, write_gguf_py
from ggscope.rules.tensor_names import is_standard
from _helpers import findings


def _gg5(path):
    return [f for f in findings(path, select=["GG5"])]


def _t(name, n=8, seed=0):
    return TensorSpec(name, T.F32, np.random.default_rng(seed).standard_normal((n,)).astype(np.float32))


def _file(tmp_path, arch, names, name="m.gguf"):
    return write_gguf_py(tmp_path / name, kvs=[KV("general.architecture", V.STRING, arch)],
                         tensors=[_t(n, seed=i) for i, n in enumerate(names)])


@pytest.mark.parametrize("arch", ["llama", "gpt-oss", "command-r", "falcon-h1", "qwen3moe", "deepseek2"])
def test_names_follow_gguf_py(arch):
    # every architecture gguf-py knows (not only a transcribed few) has its MODEL_TENSORS
    from gguf.constants import MODEL_ARCH_NAMES, MODEL_TENSORS, TENSOR_NAMES
    by_name = {v: k for k, v in MODEL_ARCH_NAMES.items()}
    theirs = {TENSOR_NAMES[t] for t in MODEL_TENSORS[by_name[arch]]}
    for n in theirs:                         # every gguf-py name, formatted, is standard
        if "{" not in n.replace("{bid}", ""):
            assert is_standard(arch, n.format(bid=7) + ".weight")
    assert is_standard(arch, "blk.0.not_a_tensor.weight") is False
    assert is_standard("no-such-arch", "token_embd.weight") is None


def test_llama_standard_names_are_clean(tmp_path):
    p = _file(tmp_path, "llama", ["token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_q.bias",
                                  "blk.11.ffn_down.weight", "output_norm.weight", "output.weight"])
    assert _gg5(p) == []


def test_pytorch_names_in_llama_file(tmp_path):
    p = _file(tmp_path, "llama", ["token_embd.weight", "model.layers.0.self_attn.q_proj.weight", "blk.x.attn_q.weight"])
    found = [f for f in _gg5(p) if f.code == "GG501"]
    assert len(found) == 2 and all(f.severity.value == "warning" for f in found)


def test_unknown_architecture_has_no_opinion(tmp_path):
    p = _file(tmp_path, "someday-arch", ["anything.goes"])
    assert _gg5(p) == []


def test_header_only_file_with_tensors(tmp_path):
    p = _file(tmp_path, "llama", ["token_embd.weight", "output.weight"])
    mf = ggscope.open(str(p))
    start = mf.data_offset
    mf.close()
    p.write_bytes(p.read_bytes()[:start])
    found = [f for f in _gg5(p) if f.code == "GG502"]
    assert len(found) == 1 and "header-only" in found[0].message and "2 tensor" in found[0].message
    assert "GG116" not in {f.code for f in findings(p, select=["GG1"])}   # structure leaves it to GG502


def test_offset_past_end(tmp_path):
    p = _file(tmp_path, "llama", ["token_embd.weight", "output.weight"])
    mf = ggscope.open(str(p))
    node = mf.root.child("tensor_infos").children[1]["offset"]
    mf.close()
    data = bytearray(p.read_bytes())
    struct.pack_into("<Q", data, node.start, 1 << 30)
    p.write_bytes(bytes(data))
    found = [f for f in _gg5(p) if f.code == "GG502"]
    assert len(found) == 1 and '"output.weight"' in found[0].message


def test_overlapping_tensors(tmp_path):
    p = _file(tmp_path, "llama", ["token_embd.weight", "output.weight", "output_norm.weight"])
    mf = ggscope.open(str(p))
    node = mf.root.child("tensor_infos").children[2]["offset"]
    mf.close()
    data = bytearray(p.read_bytes())
    struct.pack_into("<Q", data, node.start, 0)          # same bytes as token_embd.weight
    p.write_bytes(bytes(data))
    found = [f for f in _gg5(p) if f.code == "GG503"]
    assert len(found) == 1 and "token_embd.weight" in found[0].message


def test_real_files_have_no_tensor_errors(shared_fixtures, repo_fixtures):
    paths = sorted(glob.glob(str(shared_fixtures / "llama-vocab" / "*.gguf"))) + sorted(glob.glob(str(repo_fixtures / "*.gguf")))
    for p in paths:
        assert _gg5(p) == [], p


def test_hostile_corpus_never_crashes():
    """Every file of the malicious corpus: findings or none, never GG000 (checked by findings())."""
    from pathlib import Path
    for p in sorted((Path(__file__).resolve().parents[2] / "fixtures" / "malicious").glob("*")):
        if p.is_file():
            try:
                mf = ggscope.open(str(p))
            except Exception:               # not openable at all: not this family's concern
                continue
            from ggscope.validate.runner import selected_rules, validate
            out = validate(mf, selected_rules(select=["GG2", "GG3", "GG5"]))
            assert not [f for f in out if f.code == "GG000"], (p, out)
