"""Metadata schema rules GG601, GG602, GG604, GG605: facts from gguf-py, files from gguf-py."""
import numpy as np
import pytest
from gguf import GGUFWriter
from gguf_writers import KV, T, TensorSpec, V, quantized_tensor

import ggscope
from ggscope.facts import gguf_schema
from ggscope.validate.runner import validate

from _helpers import codes, findings, gguf

LLAMA = [KV("llama.context_length", V.UINT32, 8), KV("llama.embedding_length", V.UINT32, 8),
         KV("llama.block_count", V.UINT32, 1), KV("llama.attention.layer_norm_rms_epsilon", V.FLOAT32, 1e-5)]
F32 = TensorSpec("token_embd.weight", T.F32, np.zeros((4, 8), np.float32))


def test_types_come_from_gguf_py_writer():
    # the types GGUFWriter.add_* writes; the 2023 spec said uint64 for counts
    assert gguf_schema.expected_type("general.alignment") == "uint32"
    assert gguf_schema.expected_type("llama.attention.head_count", "llama") == "uint32|array"
    assert gguf_schema.expected_type("llama.attention.layer_norm_rms_epsilon", "llama") == "float32"
    assert gguf_schema.expected_type("tokenizer.ggml.seperator_token_id") == "uint32"   # llama.cpp's spelling
    assert gguf_schema.expected_type("tokenizer.ggml.tokens") == "array[string]"
    assert gguf_schema.expected_type("general.base_model.0.name") == "string"
    assert gguf_schema.expected_type("myapp.x", "llama") is None


def test_a_gguf_py_written_model_has_no_type_deviation(tmp_path):
    p = tmp_path / "w.gguf"
    w = GGUFWriter(str(p), "gpt-oss")
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_block_count(2)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_expert_count(4)
    w.add_expert_used_count(2)
    w.add_sliding_window(128)
    w.add_rope_freq_base(1e4)
    w.add_file_type(38)
    w.add_tokenizer_model("gpt2")
    w.add_sep_token_id(3)
    w.add_token_list(["a", "b"])
    w.add_token_types([1, 1])
    w.add_tensor("token_embd.weight", np.zeros((2, 64), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    fs = [f for f in findings(p) if f.code in ("GG601", "GG602", "GG1101")]
    assert fs == []
    ft = [f for f in findings(p) if f.code == "GG605"]
    assert ft and "MOSTLY_MXFP4_MOE" in ft[0].message and "not a known" not in ft[0].message


def test_wrong_kind_and_width_warn(tmp_path):
    p = gguf(tmp_path, kvs=LLAMA[1:] + [KV("llama.context_length", V.STRING, "8"),
                                        KV("general.file_type", V.UINT64, 0)], tensors=[F32])
    fs = {f.message.split()[0]: f.severity.value for f in findings(p) if f.code == "GG601"}
    assert fs == {"llama.context_length": "warning", "general.file_type": "warning"}


@pytest.mark.parametrize("arch", ["gpt-oss", "command-r", "falcon-h1", "ernie4_5-moe", "hunyuan_vl"])
def test_real_architecture_names_are_accepted(tmp_path, arch):
    p = gguf(tmp_path, arch=arch)
    assert not {"GG602", "GG1101"} & codes(p)


def test_architecture_missing_or_unknown(tmp_path):
    assert "GG1101" in codes(gguf(tmp_path, "a.gguf", arch="Llama-2"))


def test_quantization_version(tmp_path):
    q = quantized_tensor("blk.0.attn_q.weight", T.Q4_0, (32, 2), np.random.default_rng(0))
    assert "GG604" in codes(gguf(tmp_path, "a.gguf", kvs=LLAMA, tensors=[q]))
    kv = LLAMA + [KV("general.quantization_version", V.UINT32, 2)]
    assert "GG604" not in codes(gguf(tmp_path, "b.gguf", kvs=kv, tensors=[q]))


@pytest.mark.parametrize("ft,name", [(38, "MOSTLY_MXFP4_MOE"), (39, "MOSTLY_NVFP4"), (40, "MOSTLY_Q1_0"),
                                     (41, "MOSTLY_Q2_0")])
def test_new_file_types_are_known(tmp_path, ft, name):
    p = gguf(tmp_path, kvs=LLAMA + [KV("general.file_type", V.UINT32, ft)], tensors=[F32])
    msgs = [f.message for f in findings(p) if f.code == "GG605"]
    assert len(msgs) == 1 and name in msgs[0] and "not a known" not in msgs[0]


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


def test_the_verdicts_kept_between_files_follow_the_key_its_type_and_the_architecture(tmp_path):
    """GG601's verdicts are kept per process by key, architecture and type in the file:
    one file's verdict is never another's when any of the three differs."""
    from ggscope.rules import schema as rules_schema
    rules_schema._VERDICTS.clear()
    ok = gguf(tmp_path, "a.gguf", kvs=LLAMA, tensors=[F32])
    as_text = gguf(tmp_path, "b.gguf", kvs=LLAMA[:2] + [KV("llama.block_count", V.STRING, "1")] + LLAMA[3:], tensors=[F32])
    as_u64 = gguf(tmp_path, "c.gguf", kvs=LLAMA[:2] + [KV("llama.block_count", V.UINT64, 1)] + LLAMA[3:], tensors=[F32])
    other_arch = gguf(tmp_path, "d.gguf", kvs=[KV("llama.block_count", V.STRING, "1")], tensors=[F32], arch="gpt2")
    want = {ok: [], as_text: ["llama.block_count is string, gguf-py writes uint32 (another kind of value)"],
            as_u64: ["llama.block_count is uint64, gguf-py writes uint32 (another width of the same kind)"],
            other_arch: []}
    for _ in range(2):
        for path, msgs in want.items():
            assert [f.message for f in findings(path) if f.code == "GG601"] == msgs, path
    assert len(rules_schema._VERDICTS) <= rules_schema._VERDICTS_MAX
