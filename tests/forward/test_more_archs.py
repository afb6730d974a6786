"""The decoders added after the shared fixtures, against the logits llama.cpp computed.

Oracle: fixtures/arch_logits (tools/record_arch_logits.py): llama.cpp as vendored in
llama-cpp-python 0.3.36 ran each tiny model of ``tools.arch_models`` -- written again
here, into tmp_path, and checked to be the bytes it ran (sha256) -- on
``arch_models.SEQ`` with an F32 key/value cache and with its default F16 one.

Tolerances are test_llama_cpp_arch.py's (the shared fixtures' MANIFEST): against the
F32-cache logits 1e-5, or 1e-3 / 1e-2 (F32 / Q8_0 files) for the GELU models; against
the default F16-cache logits 2e-3 (F32 files) / 5e-2 (Q8_0) for the F32 cache this
decoder keeps by default, and 5e-4 / 1e-2 once it keeps its cache in F16 too.  Each
sequence runs all at once and one token at a time through the key/value cache.  Each
architecture's own switch, set wrong, must move the logits past 10× the tolerance --
so these tests fail when a switch stops mattering.
"""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.forward import ARCHITECTURES, UnsupportedArchitecture, architecture, module_for

pytest.importorskip("gguf", reason="gguf-py writes the tiny models (pip install gguf)")
from tools import arch_models  # noqa: E402  (needs gguf-py only when writing)

from forward_logits_check import F32KV_TOL, assert_logits_match  # noqa: E402

RECORDS = Path(__file__).resolve().parents[2] / "fixtures" / "arch_logits"
GELU = {"gemma", "phi2", "falcon", "starcoder", "gptneox"}
# Models whose Q8_0 logits hinge on one-ulp differences: ggml-cpu sums the F32 cache's
# attention products in its SIMD order, this pass in numpy's; across baichuan-7b's 32 layers
# such an ulp flips a Q8_0 rounding of a later layer's input (summing the scores in float64
# instead moves these logits by 4e-3 too).  Its F16-cache run, whose products are rounded
# as ggml rounds them, agrees to 0.0; the argmax must agree as everywhere.
ORDER_SENSITIVE = {("baichuan-7b", "Q8_0"): 1e-2}
ARCHS = sorted(arch_models.SPECS)


def _records() -> dict:
    return json.loads((RECORDS / "records.json").read_text())


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """arch, encoding -> (ModelFile, module, Weights), written once per module."""
    root, out = tmp_path_factory.mktemp("archs"), {}
    recorded = _records()["models"]

    def get(arch: str, enc: str):
        if (arch, enc) not in out:
            path = arch_models.write(arch, enc, root / f"tiny-{arch}-{enc}.gguf")
            assert arch_models.sha256(path) == recorded[f"{arch}-{enc}"]["sha256"], (
                f"the {arch} {enc} model written now is not the one llama.cpp ran: re-record with "
                "python -m tools.record_arch_logits")
            mf = ggscope.open(path)
            mod = module_for(mf)
            out[arch, enc] = (mf, mod, mod.load(mf))
        return out[arch, enc]
    return get


def _ref(arch: str, enc: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(RECORDS / f"{arch}-{enc}.npz") as z:
        return z["f32kv"], z["f16kv"]


def test_every_added_architecture_is_recorded():
    assert _records()["seq"] == arch_models.SEQ
    for arch in ARCHS:
        for enc in ("F32", "Q8_0"):
            f32kv, f16kv = _ref(arch, enc)
            assert f32kv.shape == f16kv.shape == (len(arch_models.SEQ), arch_models.N_VOCAB)


@pytest.mark.parametrize("enc", ["F32", "Q8_0"])
@pytest.mark.parametrize("arch", ARCHS)
def test_logits_match_llama_cpp(models, arch, enc):
    mf, mod, w = models(arch, enc)
    assert architecture(mf) == arch_models.arch_of(arch)
    ref, ref_default = _ref(arch, enc)
    tol = ORDER_SENSITIVE.get((arch, enc), F32KV_TOL[enc, arch_models.arch_of(arch) in GELU])
    assert_logits_match(mod, w, arch_models.SEQ, ref, ref_default, enc, tol)


def _traits(**changes):
    return lambda w: replace(w, config=replace(w.config, traits=replace(w.config.traits, **changes)))


def _config(**changes):
    return lambda w: replace(w, config=replace(w.config, **changes))


def _layers(**changes):
    def edit(w):
        layers = []
        for L in w.layers:
            L = copy.copy(L)
            for k, v in changes.items():
                setattr(L, k, v)
            layers.append(L)
        return replace(w, layers=tuple(layers))
    return edit


def _layers_from(w, **changes):
    """Each layer with ``changes`` computed from it (name -> f(layer))."""
    layers = []
    for L in w.layers:
        L = copy.copy(L)
        for k, f in changes.items():
            setattr(L, k, f(L))
        layers.append(L)
    return replace(w, layers=tuple(layers))


# arch -> the switches that make it itself, each set wrong
WRONG = {
    "gemma": {"normal rotary pairing": _traits(rope="norm"),
              "no embedding scale": _traits(embed_scale=False),
              "SiLU for GELU": _traits(act="silu")},
    "granite": {"neox rotary pairing": _traits(rope="neox"),
                "no residual scale": _config(residual_scale=0.0),
                "no embedding scale": _config(embed_mult=0.0),
                "1/sqrt(head) for attention.scale": _config(kq_scale=0.25),
                "no logit scale": _config(logit_mult=0.0)},
    "olmo2": {"normal rotary pairing": _traits(rope="norm"),
              "no q/k norm": _layers(q_norm=None, k_norm=None),
              "no post-norms": _layers(post_attn_norm=None, post_ffw_norm=None)},
    "qwen2moe": {"normal rotary pairing": _traits(rope="norm"),
                 "ungated shared expert": _layers(shexp_gate=None),
                 "renormalised top-k": _config(moe_norm=True)},
    "mistral3": {"neox rotary pairing": _traits(rope="neox")},
    "smollm3": {"rope in every layer": _config(no_rope=()),
                "neox rotary pairing": _traits(rope="neox")},
    "exaone": {"normal rotary pairing": _traits(rope="norm")},
    "phi2": {"normal rotary pairing": _traits(rope="norm"),
             "rotary over the whole head": _config(n_rot=24)},
    "stablelm": {"normal rotary pairing": _traits(rope="norm"),
                 "rotary over the whole head": _config(n_rot=24)},
    "stablelm-12b": {"no per-head q/k norms": _layers(q_norm=None, k_norm=None),
                     "normal rotary pairing": _traits(rope="norm")},
    "falcon": {"normal rotary pairing": _traits(rope="norm")},
    "falcon-40b": {"attention on attn_norm, not attn_norm_2": _layers(attn_norm_2=None, attn_norm_2_b=None),
                   "normal rotary pairing": _traits(rope="norm")},
    "command-r": {"neox rotary pairing": _traits(rope="neox"),
                  "no logit scale": _config(logit_mult=0.0)},
    "cohere2": {"rope in every layer": _config(no_rope=()),
                "no sliding window": _config(n_swa=0),
                "neox rotary pairing": _traits(rope="neox")},
    "cohere2-pattern": {"the period for the per-layer pattern": _config(
        swa_layers=(True, True, True, False), no_rope=(False, False, False, True))},
    "granitemoe": {"no residual scale": _config(residual_scale=0.0),
                   "no shared expert": _layers(down_shexp=None),
                   "top-k not renormalised": _config(moe_norm=False)},
    "mistral3-yarn": {"no attention temperature": _config(attn_temp=None),
                      "no YaRN log multiplier": _config(attn_factor=1.0)},
    "qwen2vl": {"every pair rotated (plain NeoX)": _config(rope_still=()),
                "the file's epsilon, which llama.cpp does not read": _config(eps=1e-3)},
    "qwen3vl": {"every pair rotated (plain NeoX)": _config(rope_still=()),
                "M-RoPE's sections, not interleaved": _config(
                    rope_still=(False,) * 5 + (True,) * 3)},
    "qwen3vlmoe": {"every pair rotated (plain NeoX)": _config(rope_still=()),
                   "top-k not renormalised": _config(moe_norm=False)},
    "starcoder": {"no learned positions": lambda w: replace(w, positions=w.positions * 0)},
    "internlm2": {"neox rotary pairing": _traits(rope="neox")},
    "xverse": {"neox rotary pairing": _traits(rope="neox")},
    "orion": {"normal rotary pairing": _traits(rope="norm"),
              "RMSNorm for LayerNorm": _traits(norm="rms")},
    "seed_oss": {"no FFN norm": _layers(ffn_norm=None),
                 "normal rotary pairing": _traits(rope="norm")},
    "arcee": {"SiLU for relu²": _traits(act="silu")},
    "olmoe": {"top-k renormalised": _config(moe_norm=True),
              "no q/k norm": _layers(q_norm=None, k_norm=None)},
    "gpt-oss": {"no attention sinks": _layers(attn_sinks=None),
                "softmax before top-k": _config(moe_gating="softmax"),
                "SwiGLU for swiglu_oai": _traits(expert_act="silu"),
                "no expert biases": _layers(gate_exps_b=None, up_exps_b=None, down_exps_b=None),
                "no sliding window": _config(n_swa=0)},
    "gptneox": {"sequential residual": _config(parallel=""),
                "normal rotary pairing": _traits(rope="norm")},
    "gptneox-seq": {"parallel residual": _config(parallel="neox")},
    "glm4": {"no post-norms": _layers(post_attn_norm=None, post_ffw_norm=None),
             "neox rotary pairing": _traits(rope="neox"),
             "rotary over the whole head": _config(n_rot=16)},
    "exaone4": {"no post-norms": _layers(post_attn_norm=None, post_ffw_norm=None),
                "normal rotary pairing": _traits(rope="norm")},
    "exaone4-64": {"rope in every layer": _config(no_rope=()),
                   "no sliding window": _config(n_swa=0)},
    "minicpm": {"no default multipliers": _config(embed_mult=0.0, residual_scale=0.0, logit_mult=0.0),
                "no default residual scale": _config(residual_scale=0.0)},
    "minicpm-keys": {"the defaults for the file's keys": _config(embed_mult=12.0, logit_mult=0.25)},
    "hunyuan-dense": {"q/k norms before rope": _traits(qk_norm="head"),
                      "normal rotary pairing": _traits(rope="norm")},
    "ernie4_5": {"neox rotary pairing": _traits(rope="neox")},
    "olmo3-betas": {"the file's YaRN betas and ext_factor": _config(yarn=(0.5, 4.0, 2.0, 32.0))},
    "phimoe": {"RMSNorms without their biases": _layers(attn_norm_b=None, ffn_norm_b=None),
               "top-k not renormalised": _config(moe_norm=False)},
    "nemotron": {"SiLU for relu²": _traits(act="silu"),
                 "normal rotary pairing": _traits(rope="norm")},
    "glm4moe": {"softmax for sigmoid routing": _config(moe_gating="softmax"),
                "no selection bias (exp_probs_b)": _layers(router_bias=None),
                "no expert_weights_scale": _config(moe_scale=0.0),
                "top-k not renormalised": _config(moe_norm=False),
                "no shared expert": _layers(down_shexp=None),
                "normal rotary pairing": _traits(rope="norm")},
    "glm4moe-groups": {"top-k over every group": _config(moe_groups=(0, 0)),
                       "the best group only": _config(moe_groups=(4, 1))},
    "glm4moe-nextn": {"sigmoid routing for the file's softmax": _config(moe_gating="sigmoid"),
                      "renormalised top-k": _config(moe_norm=True)},
    "baichuan": {"rope (the 7B's) in a model of another size": _config(no_rope=()),
                 "ALiBi (the 13B's) in a model of another size": _config(alibi=8.0)},
    "baichuan-7b": {"no rope": _config(no_rope=(True,) * 32),
                    "neox rotary pairing": _traits(rope="neox")},
    "baichuan-13b": {"no ALiBi": _config(alibi=0.0),
                     "rope besides ALiBi": _config(no_rope=())},
    "llama4": {"rope in every layer": _config(no_rope=()),
               "no q/k RMS norm after rope": _config(qk_l2=False),
               "expert outputs weighted after the FFN": _config(moe_gating="sigmoid"),
               "softmax routing": _config(moe_gating="softmax"),
               "no shared expert": _layers(down_shexp=None),
               "neox rotary pairing": _traits(rope="neox")},
    "ernie4_5-moe": {"top-k not renormalised": _config(moe_norm=False),
                     "no selection bias (exp_probs_b)": _layers(router_bias=None),
                     "no shared expert": _layers(down_shexp=None),
                     "neox rotary pairing": _traits(rope="neox")},
    "hunyuan-moe": {"q/k norms before rope": _traits(qk_norm="head"),
                    "top-k not renormalised": _config(moe_norm=False),
                    "no shared expert": _layers(down_shexp=None),
                    "normal rotary pairing": _traits(rope="norm")},
    "dots1": {"softmax for sigmoid routing": _config(moe_gating="softmax"),
              "no selection bias (exp_probs_b)": _layers(router_bias=None),
              "no expert_weights_scale": _config(moe_scale=0.0),
              "top-k not renormalised": _config(moe_norm=False),
              "no q/k norms": _layers(q_norm=None, k_norm=None),
              "normal rotary pairing": _traits(rope="norm")},
    "bailingmoe": {"top-k not renormalised": _config(moe_norm=False),
                   "no expert_weights_scale": _config(moe_scale=0.0),
                   "no shared expert": _layers(down_shexp=None),
                   "neox rotary pairing": _traits(rope="neox")},
    "plamo": {"sequential, the FFN on its own norm of x + attn": lambda w: _layers_from(
                  _config(parallel="")(w), ffn_norm=lambda L: L.attn_norm),
              "normal rotary pairing": _traits(rope="norm")},
    "apertus": {"SiLU for xIELU": _config(xielu=()),
                "the file's alphas without softplus": _config(
                    xielu=((0.8 + 0.5, 0.8, 0.5, -1e-6), (1.6 + 0.25, 0.3, 0.25, -1e-6))),
                "layer 0's xIELU in every layer": lambda w: _config(xielu=(w.config.xielu[0],) * 2)(w),
                "no q/k norms": _layers(q_norm=None, k_norm=None),
                "normal rotary pairing": _traits(rope="norm")},
    "deci": {"the linear-attention layer run as one without attention": _config(
                 layer_shapes=((4, 2, 128), (0, 0, 64), (4, 1, 0), (0, 0, 96))),
             "neox rotary pairing": _traits(rope="neox")},
    "llama4-128e": {"q/k RMS norm after rope (not for 128 experts)": _config(qk_l2=True),
                    "rope.freq_base for the chunked layers": _config(swa_rope_base=0.0),
                    "expert output weighted after the FFN": _config(moe_gating="sigmoid")},
    "ernie4_5-moe-nogate": {"silu(up)·up (the up as a gate too)": lambda w: _layers_from(
                                w, gate_exps=lambda L: L.up_exps),
                            "top-k not renormalised": _config(moe_norm=False)},
    "olmo3": {"no sliding window": _config(n_swa=0),
              "YaRN on the sliding layers too": _traits(swa_plain_rope=False),
              "no YaRN": _config(yarn=None, freq_scale=1.0)},
}


@pytest.mark.parametrize("arch,mistake", [(a, m) for a in ARCHS for m in WRONG[a]])
def test_a_wrong_switch_moves_the_logits_past_the_tolerance(models, arch, mistake):
    _, mod, w = models(arch, "F32")
    ref, _ = _ref(arch, "F32")
    got, _ = mod.forward(WRONG[arch][mistake](w), arch_models.SEQ, all_logits=True)
    assert np.abs(got - ref).max() > 10 * F32KV_TOL["F32", arch_models.arch_of(arch) in GELU]


def test_every_added_architecture_has_a_mistake():
    assert set(WRONG) == set(ARCHS)


@pytest.mark.parametrize("arch", ARCHS)
def test_validate_finds_no_loader_issue(models, arch):
    """llama.cpp loaded these files; the loader rules must agree: no refusal, no loader
    finding, nothing above a warning."""
    from ggscope.rules import loader
    from ggscope.rules.refusal import loader_refusal
    from ggscope.validate.runner import validate_file
    mf, _, _ = models(arch, "Q8_0")
    assert loader_refusal(mf) is None
    findings = validate_file(str(mf.path))
    codes = {r.code for r in loader.RULES}
    assert [f.code for f in findings if f.code in codes] == []
    assert [f.code for f in findings if str(f.severity) not in ("Severity.INFO", "Severity.WARNING")] == []


def test_the_help_and_the_refusal_name_the_added_architectures():
    from ggscope.commands import run
    decoders = [a.name for a in ARCHITECTURES if a.module == "decoder"]
    assert {arch_models.arch_of(a) for a in ARCHS} <= set(decoders)
    listed = " ".join(run.DESCRIPTION.split())
    for name in decoders:
        assert f" {name}," in listed or f" {name} " in listed, name
    message = str(UnsupportedArchitecture("m.gguf", "nonesuch", "gguf"))
    for name in ARCHS:
        assert f"{arch_models.arch_of(name)} (gguf)" in message


@pytest.mark.parametrize("key,value", [("glm4.rope.dimension_sections", [2, 2, 2, 2]),
                                       ("glm4.nextn_predict_layers", 1),
                                       ("hunyuan-dense.rope.dimension_sections", [2, 2, 2, 2])])
def test_uncomputed_variants_are_refused_in_one_line(tmp_path, monkeypatch, key, value):
    """GLM-4V's and HunyuanVL's M-RoPE and GLM's next-token-prediction layers are not
    computed: a file that has them is refused with a WeightError naming the key, not run as
    the plain text model."""
    from ggscope.forward import WeightError
    arch = key.split(".", 1)[0]
    spec = dict(arch_models.SPECS[arch])
    spec["keys"] = {**spec["keys"], key: value}
    monkeypatch.setitem(arch_models.SPECS, arch, spec)
    mf = ggscope.open(arch_models.write(arch, "F32", tmp_path / f"{arch}.gguf"))
    with pytest.raises(WeightError, match=key.split(".", 1)[1].replace(".", r"\.")):
        module_for(mf).load(mf)

