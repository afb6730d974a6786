"""The GPT-2 forward pass against transformers' and ggml's own outputs.

Oracles (../shared/fixtures/ggml-legacy, MANIFEST.md there): for the tiny GPT-2 that
ggml's example converter and quantizers wrote,

* ``ref-logits-transformers-gpt2-tiny-Hello.bin``: transformers' logits [5, 256] for
  "Hello" = [72, 101, 108, 108, 111];
* ``logits-<file>.bin``: the era's ggml gpt-2 example's logits for that very file;
* the greedy continuation the unmodified gpt-2 binary and transformers printed.

The GGUF case re-writes the F32 file's tensors under GGUF ``gpt2`` names with gguf-py
(as llama.cpp's converter lays them out) and must still match transformers.
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.forward import WeightError, architecture, module_for, run
from gguf_writers import KV, TensorSpec, V, write_gguf_py
from gguf import GGMLQuantizationType as T

HELLO = [72, 101, 108, 108, 111]
GREEDY_F32 = [215, 162, 75, 140, 35, 32, 23, 224, 35, 197, 32, 35, 215, 35, 35, 152]
REL_TOL = 1e-3


@pytest.fixture(scope="module")
def legacy(shared_fixtures):
    return shared_fixtures / "ggml-legacy"


@pytest.fixture(scope="module")
def ref(legacy):
    return np.fromfile(legacy / "ref-logits-transformers-gpt2-tiny-Hello.bin", dtype="<f4").reshape(5, 256)


def test_f32_matches_transformers(legacy, ref):
    mf = ggscope.open(legacy / "gpt2-tiny-f32.bin")
    assert architecture(mf) == "gpt2"
    logits, _ = run(mf, HELLO)
    assert np.abs(logits - ref[-1]).max() <= REL_TOL * np.abs(ref[-1]).max()


def test_f16_matches_transformers_within_f16_rounding(legacy, ref):
    logits, _ = run(ggscope.open(legacy / "gpt2-tiny-f16.bin"), HELLO)
    assert np.abs(logits - ref[-1]).max() < 0.01


@pytest.mark.parametrize("name", ["gpt2-tiny-2023-05-26-qnt2-q8_0.bin", "gpt2-tiny-2023-04-q4_0.bin",
                                  "gpt2-tiny-2023-05-18-qnt1-q5_1.bin"])
def test_quantized_files_match_ggml_example(legacy, name):
    """ggml also rounds activations (to Q8) in quantized matmuls; ggscope does not, so a
    tolerance: the MANIFEST shows era-to-era differences of the same size (<= 0.10)."""
    logits, _ = run(ggscope.open(legacy / name), HELLO)
    ggml = np.fromfile(legacy / f"logits-{name}", dtype="<f4")
    assert np.abs(logits - ggml).max() < 0.15
    assert int(np.argmax(logits)) == int(np.argmax(ggml))


def test_greedy_generation_matches_ggml_and_transformers(legacy):
    mf = ggscope.open(legacy / "gpt2-tiny-f32.bin")
    mod = module_for(mf)
    w = mod.load(mf)
    logits, state = mod.forward(w, HELLO)
    out = []
    for _ in GREEDY_F32:
        out.append(int(np.argmax(logits)))
        logits, state = mod.forward(w, [out[-1]], state)
    assert out == GREEDY_F32


def test_h5_converter_file_is_rejected_with_shape_message(legacy):
    with pytest.raises(WeightError, match="c_attn/w.*expects"):
        run(ggscope.open(legacy / "gpt2-tiny-h5conv-f16.bin"), HELLO)


_GGUF_NAMES = {"ln_1/g": "attn_norm.weight", "ln_1/b": "attn_norm.bias",
               "attn/c_attn/w": "attn_qkv.weight", "attn/c_attn/b": "attn_qkv.bias",
               "attn/c_proj/w": "attn_output.weight", "attn/c_proj/b": "attn_output.bias",
               "ln_2/g": "ffn_norm.weight", "ln_2/b": "ffn_norm.bias",
               "mlp/c_fc/w": "ffn_up.weight", "mlp/c_fc/b": "ffn_up.bias",
               "mlp/c_proj/w": "ffn_down.weight", "mlp/c_proj/b": "ffn_down.bias"}
_GGUF_TOP = {"model/wte": "token_embd.weight", "model/wpe": "position_embd.weight",
             "model/ln_f/g": "output_norm.weight", "model/ln_f/b": "output_norm.bias"}


def test_gguf_gpt2_matches_transformers(legacy, ref, tmp_path):
    src = ggscope.open(legacy / "gpt2-tiny-f32.bin")
    tensors = []
    for t in src.tensors:
        if t.name == "model/lm_head":
            continue                                    # tied: GGUF gpt2 files omit it
        if t.name in _GGUF_TOP:
            name = _GGUF_TOP[t.name]
        else:
            layer, _, rest = t.name.removeprefix("model/h").partition("/")
            name = f"blk.{layer}.{_GGUF_NAMES[rest]}"
        tensors.append(TensorSpec(name, T.F32, np.ascontiguousarray(t.dequantize())))
    kvs = [KV("gpt2.context_length", V.UINT32, 64), KV("gpt2.embedding_length", V.UINT32, 64),
           KV("gpt2.block_count", V.UINT32, 2), KV("gpt2.feed_forward_length", V.UINT32, 256),
           KV("gpt2.attention.head_count", V.UINT32, 4),
           KV("gpt2.attention.layer_norm_epsilon", V.FLOAT32, 1e-5)]
    p = write_gguf_py(tmp_path / "gpt2.gguf", kvs=kvs, tensors=tensors, arch="gpt2")
    logits, _ = run(ggscope.open(p), HELLO)
    assert np.abs(logits - ref[-1]).max() <= REL_TOL * np.abs(ref[-1]).max()
