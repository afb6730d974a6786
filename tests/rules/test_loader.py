"""Loader rules (GG11xx) held to the real llama.cpp loader's verdicts, and to llama.cpp's source.

``../shared/fixtures/llama-loader`` holds files llama.cpp (llama-cpp-python 0.3.36) loaded,
refused or crashed on, with its error line for each (verdicts.json).  ``validate`` must
exit 1 on every refusal or crash and name the cause with a loader or structure rule, and
exit 0 on every file that loads.  The cause is read from llama.cpp's own error line by
the message llama.cpp prints for each failure (``CAUSES``), not from the file name.
``../shared/fixtures/llama-cpp-arch`` holds models written by gguf-py/llama.cpp tooling
that llama.cpp ran: none may get an error, nor a warning from the families that judge
what llama.cpp reads.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from gguf_writers import KV, GArray, T, TensorSpec, V

from ggscope.cli import main
from ggscope.rules import by_code
from ggscope.validate.runner import validate_file

from _helpers import findings, gguf

# llama.cpp's error line -> the rules that name that cause (src/llama-model-loader.cpp,
# src/llama-model.cpp, src/llama-vocab.cpp, ggml-cpu messages)
CAUSES = [
    (r"wrong number of tensors", {"GG1109"}),
    (r"has wrong shape", {"GG1108"}),
    (r"tensor '.*' not found|missing tensor", {"GG1107"}),
    (r"key not found in model", {"GG1103"}),
    (r"has wrong type", {"GG1104"}),
    (r"invalid n_rot|GGML_ASSERT\(n_expert|n_expert must be", {"GG1105"}),
    (r"llama-vocab\.cpp|unknown tokenizer|tokenizer merges|tokenizer vocab", {"GG1106"}),
    (r"binary_op: unsupported types|SIGSEGV during eval", {"GG1110"}),
    (r"not within the file bounds", {"GG116", "GG502"}),
    (r"unknown model architecture", {"GG1101"}),
]


def _verdicts(shared_fixtures):
    folder = shared_fixtures / "llama-loader"
    path = folder / "verdicts.json"
    if not path.is_file():
        pytest.skip(f"no {path}")
    return folder, json.loads(path.read_text())


def _cause(reason: str) -> set[str]:
    for rx, codes in CAUSES:
        if re.search(rx, reason):
            return codes
    raise AssertionError(f"no cause known for llama.cpp's line {reason!r}")


def _exit_code(path) -> int:
    return main(["validate", "--format", "json", str(path)])


def test_validate_agrees_with_llama_cpp_on_every_file(shared_fixtures, capsys):
    folder, verdicts = _verdicts(shared_fixtures)
    assert len(verdicts) >= 36
    disagree = []
    for v in verdicts:
        path = folder / v["file"]
        code = _exit_code(path)
        found = json.loads(capsys.readouterr().out or "[]")
        errors = {f["code"] for f in found if f["severity"] == "error"}
        if v["llama_cpp"] == "loads":
            if code != 0 or errors:
                disagree.append((v["file"], "loads", code, sorted(errors)))
            continue
        named = {c for c in errors if (r := by_code(c)) is not None and r.family in ("loader", "structure")}
        if code != 1 or not named & _cause(v["reason"]):
            disagree.append((v["file"], v["llama_cpp"], v["reason"], code, sorted(errors)))
    assert not disagree, disagree


def test_architecture_models_from_the_converter_are_clean(shared_fixtures):
    files = sorted((shared_fixtures / "llama-cpp-arch").glob("*.gguf"))
    if not files:
        pytest.skip("no llama-cpp-arch fixtures")
    assert len(files) == 26
    covered = 0
    for f in files:
        found = validate_file(str(f))
        bad = [x for x in found if x.severity.value == "error"
               or (x.severity.value == "warning" and by_code(x.code).family in ("loader", "schema", "tensors",
                                                                                "tokenizer", "structure"))]
        assert not bad, (f.name, bad)
        covered += not any(x.code == "GG1102" for x in found)
    assert covered == 26          # mamba, rwkv6 and rwkv7 too, from the generated table


# --- files written here with gguf-py, expectations from llama.cpp's source ------------

def _vec(name, n, dtype=T.F32):
    return TensorSpec(name, dtype, np.ones((n,), np.float32 if dtype == T.F32 else np.float16))


def _mat(name, ne0, ne1, ne2=None):
    shape = (ne1, ne0) if ne2 is None else (ne2, ne1, ne0)      # numpy order is ggml's reversed
    return TensorSpec(name, T.F32, np.zeros(shape, np.float32))


VOCAB = [KV("tokenizer.ggml.model", V.STRING, "llama"),
         KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, tuple(f"t{i}" for i in range(16))))]


def _falcon(tmp_path, name="f.gguf", extra_kvs=(), extra=(), n_head_kv=1):
    # llama.cpp case LLM_ARCH_FALCON: layer_norm_epsilon is the only arch key; fused qkv of
    # n_embd + 2 * n_embd_gqa; attn_norm_2 optional; output optional (tied)
    e, ff, hd = 8, 16, 4
    kvs = [KV("falcon.context_length", V.UINT32, 32), KV("falcon.embedding_length", V.UINT32, e),
           KV("falcon.block_count", V.UINT32, 1), KV("falcon.feed_forward_length", V.UINT32, ff),
           KV("falcon.attention.head_count", V.UINT32, 2), KV("falcon.attention.head_count_kv", V.UINT32, n_head_kv),
           KV("falcon.attention.layer_norm_epsilon", V.FLOAT32, 1e-5), *VOCAB, *extra_kvs]
    ts = [_mat("token_embd.weight", e, 16), _vec("output_norm.weight", e), _vec("output_norm.bias", e),
          _vec("blk.0.attn_norm.weight", e), _vec("blk.0.attn_norm.bias", e),
          _mat("blk.0.attn_qkv.weight", e, e + 2 * hd * 1), _mat("blk.0.attn_output.weight", e, e),
          _mat("blk.0.ffn_down.weight", ff, e), _mat("blk.0.ffn_up.weight", e, ff), *extra]
    return gguf(tmp_path, name, arch="falcon", kvs=kvs, tensors=ts)


def _loader_codes(path):
    return {f.code for f in findings(path) if f.code.startswith("GG11") and f.code not in ("GG1112", "GG1113", "GG1114")}


def test_falcon_without_use_norm_loads(tmp_path):
    assert _loader_codes(_falcon(tmp_path)) == set()
    # the 2023 spec's falcon.attention.use_norm is nothing llama.cpp reads
    assert "GG603" not in {f.code for f in findings(_falcon(tmp_path, "g.gguf"))}


def test_falcon_shape_follows_head_count_kv(tmp_path):
    assert "GG1108" in _loader_codes(_falcon(tmp_path, n_head_kv=2))


def test_optional_tensor_with_the_wrong_shape_is_refused(tmp_path):
    # check_tensor_dims runs for optional tensors that are present
    p = _falcon(tmp_path, extra=[_vec("blk.0.attn_norm_2.weight", 7)])
    assert "GG1108" in _loader_codes(p)
    p = _falcon(tmp_path, "ok.gguf", extra=[_vec("blk.0.attn_norm_2.weight", 8)])
    assert _loader_codes(p) == set()


def test_norm_stored_as_f16_crashes_at_eval(tmp_path):
    p = _falcon(tmp_path, extra=[_vec("blk.0.attn_norm_2.weight", 8, T.F16)])
    assert "GG1110" in _loader_codes(p)


def test_mpt_needs_max_alibi_bias_not_clamp(tmp_path):
    # llama.cpp llama_model_mpt::load_arch_hparams: layer_norm_epsilon required, the rest optional
    e, ff = 8, 16
    base = [KV("mpt.context_length", V.UINT32, 32), KV("mpt.embedding_length", V.UINT32, e),
            KV("mpt.block_count", V.UINT32, 1), KV("mpt.feed_forward_length", V.UINT32, ff),
            KV("mpt.attention.head_count", V.UINT32, 2), KV("mpt.attention.layer_norm_epsilon", V.FLOAT32, 1e-5),
            *VOCAB]
    ts = [_mat("token_embd.weight", e, 16), _vec("output_norm.weight", e), _vec("blk.0.attn_norm.weight", e),
          _mat("blk.0.attn_qkv.weight", e, 3 * e), _mat("blk.0.attn_output.weight", e, e),
          _vec("blk.0.ffn_norm.weight", e), _mat("blk.0.ffn_down.weight", ff, e), _mat("blk.0.ffn_up.weight", e, ff)]
    ok = gguf(tmp_path, "ok.gguf", arch="mpt", kvs=base + [KV("mpt.attention.max_alibi_bias", V.FLOAT32, 8.0)],
              tensors=ts)
    assert _loader_codes(ok) == set()
    # the pinned llama.cpp (llama-cpp-python 0.3.36, src/models/mpt.cpp) reads max_alibi_bias
    # with required=false: its loader loads mpt without it (fixtures/llama_loader_verdicts.json,
    # mpt.base); a missing layer-norm epsilon is still refused
    missing = gguf(tmp_path, "no.gguf", arch="mpt", kvs=base, tensors=ts)
    assert _loader_codes(missing) == set()
    no_eps = gguf(tmp_path, "no-eps.gguf", arch="mpt", kvs=[k for k in base if "epsilon" not in k.key], tensors=ts)
    msgs = [f.message for f in findings(no_eps) if f.code == "GG1103"]
    assert msgs == ["key not found in model: mpt.attention.layer_norm_epsilon"]


def test_gemma2_never_creates_output(tmp_path):
    # case LLM_ARCH_GEMMA2: output = token_embd (TENSOR_DUPLICATED); an output.weight is extra
    e, ff = 8, 16
    kvs = [KV("gemma2.context_length", V.UINT32, 32), KV("gemma2.embedding_length", V.UINT32, e),
           KV("gemma2.block_count", V.UINT32, 1), KV("gemma2.feed_forward_length", V.UINT32, ff),
           KV("gemma2.attention.head_count", V.UINT32, 2), KV("gemma2.attention.layer_norm_rms_epsilon", V.FLOAT32, 1e-6),
           *VOCAB]
    ts = [_mat("token_embd.weight", e, 16), _vec("output_norm.weight", e), _vec("blk.0.attn_norm.weight", e),
          _mat("blk.0.attn_q.weight", e, e), _mat("blk.0.attn_k.weight", e, e), _mat("blk.0.attn_v.weight", e, e),
          _mat("blk.0.attn_output.weight", e, e), _vec("blk.0.post_attention_norm.weight", e),
          _vec("blk.0.ffn_norm.weight", e), _mat("blk.0.ffn_gate.weight", e, ff), _mat("blk.0.ffn_up.weight", e, ff),
          _mat("blk.0.ffn_down.weight", ff, e), _vec("blk.0.post_ffw_norm.weight", e)]
    assert _loader_codes(gguf(tmp_path, "a.gguf", arch="gemma2", kvs=kvs, tensors=ts)) == set()
    extra = gguf(tmp_path, "b.gguf", arch="gemma2", kvs=kvs, tensors=ts + [_mat("output.weight", e, 16)])
    assert "GG1109" in _loader_codes(extra)


def test_unknown_and_uncovered_architectures(tmp_path):
    t = [_vec("token_embd.weight", 8)]
    unknown = {f.code: f.severity.value for f in findings(gguf(tmp_path, "u.gguf", arch="llama2", tensors=t))}
    assert unknown.get("GG1101") == "error"
    # mamba is not in the hand-checked table: the generated one (every architecture of the
    # pinned llama.cpp) demands its keys - llama_model_mamba::load_arch_hparams reads
    # ssm.conv_kernel etc. as required
    other = findings(gguf(tmp_path, "m.gguf", arch="mamba", kvs=VOCAB, tensors=t))
    missing = [f.message for f in other if f.code == "GG1103"]
    assert "key not found in model: mamba.context_length" in missing
    assert "key not found in model: mamba.ssm.conv_kernel" in missing


def test_moe_without_used_experts_is_refused(tmp_path):
    kvs = [KV("falcon.expert_count", V.UINT32, 4)]
    assert "GG1105" in _loader_codes(_falcon(tmp_path, extra_kvs=kvs))


def test_special_token_id_must_be_u32(tmp_path):
    p = _falcon(tmp_path, extra_kvs=[KV("tokenizer.ggml.bos_token_id", V.INT32, 1)])
    assert "GG1104" in _loader_codes(p)


def test_llama_cpp_vocab_files_pass_the_vocab_loader(shared_fixtures):
    # llama.cpp's own ggml-vocab-*.gguf files (vocab_only): models/tokenizers it ships
    files = sorted((shared_fixtures / "llama-vocab").glob("*.gguf"))
    if not files:
        pytest.skip("no llama-vocab fixtures")
    for f in files:
        assert not [x for x in findings(f) if x.code.startswith("GG11") and x.severity.value == "error"], f.name


@pytest.mark.parametrize("kv,bad", [(KV("general.file_type", V.UINT64, 1), True), (KV("general.file_type", V.UINT32, 1), False),
                                    (KV("split.count", V.UINT32, 1), True), (KV("split.count", V.UINT16, 1), False)])
def test_keys_the_loader_constructor_reads(tmp_path, kv, bad):
    # llama_model_loader: get_key(general.file_type, uint32_t), get_key(split.count, uint16_t)
    assert ("GG1104" in _loader_codes(_falcon(tmp_path, extra_kvs=[kv]))) is bad


def test_pre_tokenizer_name_must_be_a_string(tmp_path):
    # llama-vocab.cpp: ml.get_key(LLM_KV_TOKENIZER_PRE, tokenizer_pre, false) into a std::string
    assert "GG1104" in _loader_codes(_falcon(tmp_path, extra_kvs=[KV("tokenizer.ggml.pre", V.UINT32, 2)]))
    assert _loader_codes(_falcon(tmp_path, "ok.gguf", extra_kvs=[KV("tokenizer.ggml.pre", V.STRING, "default")])) == set()


@pytest.mark.parametrize("extra,refused", [
    ([], True),                                                            # BPE without merges
    ([KV("tokenizer.ggml.pre", V.STRING, "kimi-k2")], False),              # llama-vocab.cpp: kimi-k2 needs none
    ([KV("tokenizer.ggml.merges", V.ARRAY, GArray(V.INT32, (1, 2)))], True),   # "invalid gguf type"
    ([KV("tokenizer.ggml.merges", V.ARRAY, GArray(V.STRING, ("t t",)))], False),
])
def test_bpe_merges(tmp_path, extra, refused):
    kvs = [KV("tokenizer.ggml.model", V.STRING, "gpt2"), *extra]
    p = _falcon(tmp_path, extra_kvs=kvs)
    # GGUFWriter keeps the last value of a repeated key: the vocabulary is BPE ("gpt2")
    import ggscope
    mf = ggscope.open(str(p))
    assert mf.metadata["tokenizer.ggml.model"] == "gpt2"
    assert ("GG1106" in _loader_codes(p)) is refused


def test_file_text_is_escaped_in_messages(tmp_path):
    t = [_vec("token_embd.weight", 8)]
    msg = [f.message for f in findings(gguf(tmp_path, arch="evil\x1b[2J", tensors=t)) if f.code == "GG1101"][0]
    assert "\x1b" not in msg and "\\x1b" in msg
    p = _falcon(tmp_path, "x.gguf", extra=[_vec("blk.0.\x1b[31mx.weight", 8)])
    msg = [f.message for f in findings(p) if f.code == "GG1109"][0]
    assert "\x1b" not in msg


def test_every_mistyped_tokenizer_key_is_named(tmp_path):
    """get_key's typed reads of the tokenizer keys (llama-vocab.cpp): the special token ids
    and token_type_count as u32, the add_* flags as bool, the pre-tokenizer as a string -
    each key of another type is named once, as llama.cpp words it, and a key of the right
    type is not."""
    wrong = [KV("tokenizer.ggml.eos_token_id", V.INT32, 2), KV("tokenizer.ggml.add_bos_token", V.UINT8, 1),
             KV("tokenizer.ggml.pre", V.UINT32, 2), KV("tokenizer.ggml.token_type_count", V.INT32, 2),
             KV("tokenizer.ggml.padding_token_id", V.UINT64, 0)]
    right = [KV("tokenizer.ggml.bos_token_id", V.UINT32, 1), KV("tokenizer.ggml.add_eos_token", V.BOOL, False)]
    p = _falcon(tmp_path, extra_kvs=wrong + right)
    got = sorted(f.message for f in findings(p) if f.code == "GG1104" and "tokenizer." in f.message)
    assert got == sorted([
        "key tokenizer.ggml.eos_token_id has wrong type i32 but expected type u32",
        "key tokenizer.ggml.add_bos_token has wrong type u8 but expected type bool",
        "key tokenizer.ggml.pre has wrong type u32 but expected type str",
        "key tokenizer.ggml.token_type_count has wrong type i32 but expected type u32",
        "key tokenizer.ggml.padding_token_id has wrong type u64 but expected type u32"]), got
