"""Metadata schema rules GG601-GG605: gguf-py files, the spec's own tables, real vocab files."""
import numpy as np
import pytest
from gguf_writers import KV, T, TensorSpec, V, quantized_tensor

import ggscope
from ggscope import gguf_schema
from ggscope.validate import validate

from _helpers import codes, findings, gguf

LLAMA = [KV("llama." + k, V.FLOAT32 if "epsilon" in k else V.UINT32, 1e-5 if "epsilon" in k else 8)
         for k in gguf_schema.ARCH_REQUIRED["llama"]]
F32 = TensorSpec("token_embd.weight", T.F32, np.zeros((4, 8), np.float32))


def test_spec_table_matches_the_spec_text():
    # counts from gguf-spec.txt §2.2.4: llama lists 7 keys, falcon 7, whisper 9, rwkv 5
    assert [len(gguf_schema.ARCH_REQUIRED[a]) for a in ("llama", "falcon", "whisper", "rwkv")] == [7, 7, 9, 5]
    assert gguf_schema.expected_type("general.alignment") == "uint32"
    assert gguf_schema.expected_type("llama.attention.head_count", "llama") == "uint64"
    assert gguf_schema.expected_type("whisper.encoder.block_count", "whisper") == "uint64"
    assert gguf_schema.expected_type("general.base_model.0.name") == "string"
    assert gguf_schema.expected_type("myapp.x", "llama") is None


def test_complete_llama_is_clean(tmp_path):
    p = gguf(tmp_path, kvs=LLAMA, tensors=[F32])
    assert not codes(p, select=["schema"])


def test_wrong_kind_and_width(tmp_path):
    p = gguf(tmp_path, kvs=LLAMA[1:] + [KV("llama.context_length", V.STRING, "8"),
                                        KV("general.alignment", V.UINT64, 32),
                                        KV("general.file_type", V.UINT64, 0)], tensors=[F32])
    fs = {f.message.split()[0]: f.severity.value for f in findings(p) if f.code == "GG601"}
    assert fs == {"llama.context_length": "error", "general.alignment": "error"}   # uint64 file_type: any unsigned ok


def test_architecture_name(tmp_path):
    p = gguf(tmp_path, arch="Llama-2")
    assert "GG602" in codes(p)


def test_missing_required_key(tmp_path):
    p = gguf(tmp_path, kvs=LLAMA[:-1], tensors=[F32])
    fs = [f for f in findings(p) if f.code == "GG603"]
    assert len(fs) == 1 and "layer_norm_rms_epsilon" in fs[0].message


def test_quantization_version(tmp_path):
    q = quantized_tensor("blk.0.attn_q.weight", T.Q4_0, (32, 2), np.random.default_rng(0))
    assert "GG604" in codes(gguf(tmp_path, "a.gguf", kvs=LLAMA, tensors=[q]))
    kv = LLAMA + [KV("general.quantization_version", V.UINT32, 2)]
    assert "GG604" not in codes(gguf(tmp_path, "b.gguf", kvs=kv, tensors=[q]))


def test_file_type(tmp_path):
    q = quantized_tensor("blk.0.attn_q.weight", T.Q4_0, (32, 2), np.random.default_rng(0))
    base = LLAMA + [KV("general.quantization_version", V.UINT32, 2)]
    assert "GG605" not in codes(gguf(tmp_path, "a.gguf", kvs=base + [KV("general.file_type", V.UINT32, 2)], tensors=[q]))
    assert "GG605" in codes(gguf(tmp_path, "b.gguf", kvs=base + [KV("general.file_type", V.UINT32, 7)], tensors=[q]))
    assert "GG605" in codes(gguf(tmp_path, "c.gguf", kvs=base + [KV("general.file_type", V.UINT32, 999)], tensors=[q]))


def test_project_fixtures_clean(repo_fixtures):
    for f in repo_fixtures.glob("TinyLlama*.gguf"):
        assert not [x for x in findings(f) if x.code[:3] in ("GG4", "GG6", "GG7") and x.severity.value != "info"]


def test_real_llama_cpp_vocab_files(shared_fixtures):
    files = sorted((shared_fixtures / "llama-vocab").glob("*.gguf"))
    if not files:
        pytest.skip("no llama.cpp vocab files")
    for f in files:
        bad = [x for x in validate(ggscope.open(str(f))) if x.code[:3] in ("GG4", "GG6", "GG7", "GG0")
               and x.severity.value == "error"]
        assert not bad, (f.name, bad)
