"""Deep rule GG1003 forward-check: the reference forward pass on gguf-py-written models.

The models are tiny transformers llamas written by tests/forward/test_llama.py's
writer; a NaN is planted in a weight every token's pass reads (blk.0.attn_q.weight).
"""
from __future__ import annotations

import numpy as np
import pytest

from gguf_writers import T, TensorSpec, write_gguf_py
from ggscope.rules import deep
from _helpers import findings


def _gg1003(path, **kw):
    return [f for f in findings(path, deep=True, select=("GG1003",), **kw)]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    torch = pytest.importorskip("torch")
    tr = pytest.importorskip("transformers")
    from tests.forward.test_llama import _randomize, write_tiny_gguf
    cfg = tr.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                         rms_norm_eps=1e-5, tie_word_embeddings=False)
    model = _randomize(tr.LlamaForCausalLM(cfg), torch, 3)
    d = tmp_path_factory.mktemp("gg1003")
    clean = write_tiny_gguf(d / "clean.gguf", model, "llama")
    with torch.no_grad():
        model.model.layers[0].self_attn.q_proj.weight[3, 5] = float("nan")
    nan = write_tiny_gguf(d / "nan.gguf", model, "llama")
    return clean, nan


def test_clean_model_has_no_finding(models):
    assert _gg1003(models[0]) == []
    assert "GG1003" not in {f.code for f in findings(models[0])}            # only with --deep


def test_planted_nan_is_an_error(models):
    (f,) = _gg1003(models[1])
    assert f.severity.value == "error" and "64 NaN/Inf logits of 64" in f.message and "llama" in f.message


def test_unsupported_architecture_is_silent(tmp_path):
    p = write_gguf_py(tmp_path / "m.gguf", arch="jamba",
                      tensors=[TensorSpec("token_embd.weight", T.F32, np.ones((4, 8), np.float32))])
    assert _gg1003(p) == []


def test_over_budget_is_skipped_with_info(models, monkeypatch):
    monkeypatch.setattr(deep, "FORWARD_BUDGET_BYTES", 1000)
    (f,) = _gg1003(models[1])                      # the NaN file: not run, so no error
    assert f.severity.value == "info" and "budget" in f.message and "not run" in f.message


def test_missing_weight_is_a_warning_not_a_traceback(tmp_path):
    p = write_gguf_py(tmp_path / "m.gguf", arch="llama",
                      tensors=[TensorSpec("token_embd.weight", T.F32, np.ones((4, 8), np.float32))])
    (f,) = _gg1003(p)
    assert f.severity.value == "warning" and "could not run" in f.message


def test_progress_names_the_forward_pass(models):
    """validate --deep's bar says the forward pass is running, not the last tensor read."""
    from ggscope.model.open import open as open_file
    from ggscope.validate.runner import validate
    seen = []
    validate(open_file(str(models[0])), [deep.ForwardCheck], {"progress": lambda d, t, desc: seen.append(desc)})
    assert seen and "reference forward pass (llama)" in seen[-1] and seen[-1].startswith("GG1003")
