"""The architectures' variants llama.cpp runs differently or refuses, beyond the recorded
logits of test_more_archs.py: glm4moe's trunk without its next-token-prediction layers,
Llama 4's chunks and temperature past the 12 recorded positions, ALiBi's slopes for head
counts the tiny models do not have, attention biases llama.cpp loads but never adds, and
the files llama.cpp aborts on or cannot run -- each refused in one ``WeightError`` line.

Oracle: the same records (fixtures/arch_logits, tools/record_arch_logits.py); the
refusals name what llama.cpp as vendored in llama-cpp-python 0.3.36 does with such a
file (asserts and aborts were seen through that binding when the rows were added).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.forward import module_for

pytest.importorskip("gguf", reason="gguf-py writes the tiny models (pip install gguf)")
from tools import arch_models  # noqa: E402  (needs gguf-py only when writing)

RECORDS = Path(__file__).resolve().parents[2] / "fixtures" / "arch_logits"
TOL = 1e-5                     # test_more_archs.py's F32-cache tolerance for SiLU models


def _ref(arch: str, enc: str = "F32") -> np.ndarray:
    with np.load(RECORDS / f"{arch}-{enc}.npz") as z:
        return z["f32kv"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """arch -> (ModelFile, module, Weights) of its F32 model, written once per module."""
    root, out = tmp_path_factory.mktemp("variants"), {}

    def get(arch: str, enc: str = "F32"):
        if arch not in out:
            mf = ggscope.open(arch_models.write(arch, enc, root / f"tiny-{arch}-{enc}.gguf"))
            mod = module_for(mf)
            out[arch] = (mf, mod, mod.load(mf))
        return out[arch]
    return get


def test_glm4moe_runs_its_trunk_only(tmp_path, monkeypatch):
    """glm4-moe.cpp runs hparams.n_layer() = block_count - nextn_predict_layers blocks: the
    same file with the key dropped runs its next-token-prediction block as a fourth layer,
    which must move the logits past the tolerance (so the key is what is read)."""
    spec = dict(arch_models.SPECS["glm4moe-nextn"])
    spec["keys"] = {k: v for k, v in spec["keys"].items() if not k.endswith("nextn_predict_layers")}
    monkeypatch.setitem(arch_models.SPECS, "glm4moe-nextn", spec)
    mf = ggscope.open(arch_models.write("glm4moe-nextn", "F32", tmp_path / "four.gguf"))
    mod = module_for(mf)
    w = mod.load(mf)
    assert w.config.n_layer == 4
    got, _ = mod.forward(w, arch_models.SEQ, all_logits=True)
    ref = _ref("glm4moe-nextn")
    assert np.abs(got - ref).max() > 10 * TOL


@pytest.mark.parametrize("key,value,match", [
    ("glm4moe.nextn_predict_layers", 9, "nextn_predict_layers"),
    ("glm4moe.rope.dimension_sections", [2, 2, 2, 2], "dimension_sections"),
    ("glm4moe.expert_group_count", 3, "expert_group_count")])
def test_glm4moe_variants_not_computed_are_refused(tmp_path, monkeypatch, key, value, match):
    """More prediction layers than blocks (llama.cpp asserts), GLM-4.5V's M-RoPE and 4
    experts in 3 groups: one WeightError line naming the key, not a wrong run."""
    from ggscope.forward import WeightError
    spec = dict(arch_models.SPECS["glm4moe"])
    spec["keys"] = {**spec["keys"], key: value}
    monkeypatch.setitem(arch_models.SPECS, "glm4moe", spec)
    mf = ggscope.open(arch_models.write("glm4moe", "F32", tmp_path / "v.gguf"))
    with pytest.raises(WeightError, match=match):
        module_for(mf).load(mf)


@pytest.mark.parametrize("n_head", [4, 5, 40, 64])
def test_alibi_slopes_are_the_papers(n_head):
    """ggml's soft_max slopes against the ALiBi reference (Press et al., github
    ofirpress/attention_with_linear_biases, get_slopes, with llama.cpp's max bias 8): the
    closest power of two p gets 2^(-8(i+1)/p), the heads past it every other slope of 2p
    -- Baichuan 13B's 40 heads take both branches, which the tiny 4-head model cannot."""
    from ggscope.forward.attention import _alibi_slopes
    p = 2 ** int(np.floor(np.log2(n_head)))
    ref = [2.0 ** (-8.0 * (i + 1) / p) for i in range(p)]
    ref += [2.0 ** (-8.0 * (i + 1) / (2 * p)) for i in range(2 * p)][0::2][:n_head - p]
    assert np.allclose(_alibi_slopes(n_head, 8.0), ref, rtol=1e-6, atol=0)


def test_llama4_chunks_and_temperature_past_the_recorded_positions(models):
    """What the 12 recorded positions cannot reach (llama.cpp fixes llama4's chunk and
    temperature floor at 8192): LLAMA_SWA_TYPE_CHUNKED (llama-hparams.h is_masked_swa) lets
    position p see keys from floor(p / n)·n to p -- with uniform attention (q = 0) each
    output is the mean of its chunk's values -- and llm_graph_input_attn_temp gives
    log(floor((p + 1) / 8192) + 1)·0.1 + 1."""
    from ggscope.forward.attention import _attend, _temperature
    _, _, w = models("llama4")
    c = replace(w.config, n_swa=4, kq_scale=1.0)
    assert c.swa_chunked and c.swa_layers == (True, True, True, False)
    v = np.random.default_rng(0).standard_normal((10, c.n_head_kv, 3)).astype(np.float32)
    q = np.zeros((10, c.n_head, 3), np.float32)
    out = _attend(c, q, np.zeros((10, c.n_head_kv, 3), np.float32), v, np.arange(10), True, False)
    for p in range(10):
        want = v[p // 4 * 4:p + 1].mean(axis=0)
        assert np.allclose(out[p, ::c.n_head // c.n_head_kv], want, atol=1e-6), p
    got = _temperature(np.array([0, 8190, 8191, 16383]), *w.config.attn_temp)
    assert np.allclose(got, [1.0, 1.0, 1 + 0.1 * np.log(2), 1 + 0.1 * np.log(3)], rtol=1e-6)


@pytest.mark.parametrize("key,value,match", [("llama4.attention.sliding_window", 0, "aborts"),
                                             ("llama4.expert_count", 0, "zero experts")])
def test_llama4_files_llama_cpp_refuses_are_refused(tmp_path, monkeypatch, key, value, match):
    from ggscope.forward import WeightError
    spec = dict(arch_models.SPECS["llama4"])
    spec["keys"] = {**spec["keys"], key: value}
    monkeypatch.setitem(arch_models.SPECS, "llama4", spec)
    mf = ggscope.open(arch_models.write("llama4", "F32", tmp_path / "v.gguf"))
    with pytest.raises(WeightError, match=match):
        module_for(mf).load(mf)


def test_ernie4_5_moe_leaves_the_attention_bias_as_llama_cpp_does(models, monkeypatch):
    """ernie4-5.cpp loads attn_output.bias and passes NULL to build_attn: adding it (the
    file has one) must move the logits past the tolerance."""
    from ggscope.forward import traits
    mf, mod, _ = models("ernie4_5-moe")
    monkeypatch.setitem(traits.TRAITS, "ernie4_5-moe",
                        replace(traits.TRAITS["ernie4_5-moe"], attn_out_bias=True))
    got, _ = mod.forward(mod.load(mf), arch_models.SEQ, all_logits=True)
    assert np.abs(got - _ref("ernie4_5-moe")).max() > 10 * TOL


def test_ernie4_5_moe_with_a_step_llama_cpp_cannot_run_is_refused(tmp_path, monkeypatch):
    from ggscope.forward import WeightError
    spec = dict(arch_models.SPECS["ernie4_5-moe"])
    spec["keys"] = {**spec["keys"], "ernie4_5-moe.interleave_moe_layer_step": 2}
    monkeypatch.setitem(arch_models.SPECS, "ernie4_5-moe", spec)
    mf = ggscope.open(arch_models.write("ernie4_5-moe", "F32", tmp_path / "v.gguf"))
    with pytest.raises(WeightError, match="interleave_moe_layer_step"):
        module_for(mf).load(mf)


def test_dots1_without_a_gating_function_is_refused(tmp_path, monkeypatch):
    """dots1.cpp passes expert_gating_func as read -- none when absent -- and build_moe_ffn
    aborts on none: a file without it is refused in one line, not run with a guess."""
    from ggscope.forward import WeightError
    spec = dict(arch_models.SPECS["dots1"])
    spec["keys"] = {k: v for k, v in spec["keys"].items() if not k.endswith("expert_gating_func")}
    monkeypatch.setitem(arch_models.SPECS, "dots1", spec)
    mf = ggscope.open(arch_models.write("dots1", "F32", tmp_path / "v.gguf"))
    with pytest.raises(WeightError, match="expert_gating_func"):
        module_for(mf).load(mf)


@pytest.mark.parametrize("arch,key,value,match", [
    ("deci", "deci.attention.head_count", [4, 4], "one per layer"),
    ("deci", "deci.feed_forward_length", "wide", "one per layer"),
    ("deci", "deci.attention.head_count_kv", [2, 0, 3, 0], "do not group evenly"),
    ("apertus", "xielu.alpha_p", [0.8], "xielu.alpha_p"),
    ("apertus", "xielu.beta", "half", "xielu.beta")])
def test_per_layer_keys_a_file_cannot_back_are_one_line(tmp_path, monkeypatch, arch, key, value, match):
    """Per-layer hyperparameters shorter than the layers, not numbers, or heads that do not
    group: one WeightError line, never a traceback or an index past the array."""
    from ggscope.forward import WeightError
    spec = dict(arch_models.SPECS[arch])
    spec["keys"] = {**spec["keys"], key: value}
    monkeypatch.setitem(arch_models.SPECS, arch, spec)
    mf = ggscope.open(arch_models.write(arch, "F32", tmp_path / "v.gguf"))
    with pytest.raises(WeightError, match=match):
        module_for(mf).load(mf)


def test_alibi_distances_are_f16_under_flash_attention():
    """llama-graph.cpp build_attn_inp_kq_mask: with flash attention the mask is F16, so the
    ALiBi bias -|p_q - p_k| past 2048 is rounded (2049 -> 2048, 2051 -> 2052); without it
    F32, exact."""
    from ggscope.forward.attention import _alibi_bias, _alibi_slopes
    pos, keys = np.array([2051]), np.arange(2052)
    slopes = _alibi_slopes(5, 8.0)
    exact = _alibi_bias(5, 8.0, pos, keys, flash=False)
    rounded = _alibi_bias(5, 8.0, pos, keys, flash=True)
    assert exact.shape == (5, 1, 2052)
    assert np.array_equal(exact[:, 0, 2], -2049 * slopes) and np.array_equal(exact[:, 0, 0], -2051 * slopes)
    assert np.array_equal(rounded[:, 0, 2], -2048 * slopes) and np.array_equal(rounded[:, 0, 0], -2052 * slopes)
    assert np.array_equal(rounded[:, 0, 4:], exact[:, 0, 4:])           # 2047 and nearer: exact
