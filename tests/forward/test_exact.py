"""--exact (issue 28 item 4): the dequantized model as transformers computes it.

The default arithmetic is llama.cpp's (held to llama.cpp's own logits by
test_llama_cpp_arch.py and to llama-perplexity's reports by test_perplexity.py); the
exact mode must instead equal transformers' logits for the same GGUF file, which
transformers' GGUF loader dequantizes to float32 -- on a Q8_0 file the two answers are
2e-2 apart, the exact one and transformers' 6e-7.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO
from ggscope.cli import main
from ggscope.core.errors import GGScopeError
from ggscope.forward import load_weights
from ggscope.model.split import open_model

Q8 = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
Q4KS = FIXTURES / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
IDS = [1, 130, 263, 310, 44, 38, 91, 29, 13, 176, 5, 300]
RWKV = REPO / ".." / "shared" / "fixtures" / "llama-cpp-arch" / "Tiny-RWKV7-558K-v1.0-Q8_0.gguf"


def _logits(path: Path, exact: bool) -> np.ndarray:
    module, weights = load_weights(open_model(str(path)), exact)
    logits, _ = module.forward(weights, IDS, None, all_logits=True)
    return np.asarray(logits)


@pytest.mark.slow                       # importing transformers and torch: ~20 s
def test_exact_is_transformers_and_default_is_not():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(Q8.parent), gguf_file=Q8.name, torch_dtype=torch.float32)
    with torch.no_grad():
        ref = model(torch.tensor([IDS])).logits[0].numpy()
    scale = np.abs(ref).max()
    assert np.abs(_logits(Q8, True) - ref).max() / scale < 1e-5
    assert np.abs(_logits(Q8, False) - ref).max() / scale > 1e-3


def test_exact_is_the_plain_float_product():
    """Exact: no weight remembers a rounding, so a Q8_0 file computes what its float32
    weights written back as F32 would; the default rounds activations (differs)."""
    exact, default = _logits(Q8, True), _logits(Q8, False)
    assert np.isfinite(exact).all()
    assert 1e-4 < np.abs(exact - default).max() / np.abs(exact).max() < 5e-2
    module, weights = load_weights(open_model(str(Q8)), True)
    assert not any(getattr(w, "vec_dot", None) for L in weights.layers
                   for w in (L.wq, L.wk, L.wv, L.wo, L.gate, L.up, L.down))
    assert weights.embed.vec_dot is None


def test_exact_for_a_recurrent_family_leaves_activations_unrounded():
    """RWKV7's GGUF matrices carry llama.cpp's rounding by default and none with --exact
    (their logits against llama.cpp: test_recurrent_gguf.py)."""
    if not RWKV.is_file():
        pytest.skip(f"shared fixture not found: {RWKV.resolve()}")
    _, default = load_weights(open_model(str(RWKV)))
    _, exact = load_weights(open_model(str(RWKV)), True)
    assert all(getattr(L.att.key, "vec_dot", None) == "q8_0" for L in default.layers)
    assert not any(getattr(L.att.key, "vec_dot", None) for L in exact.layers)


def test_cli_run_exact(capsys):
    assert main(["run", str(Q8), "--tokens", ",".join(map(str, IDS)), "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert main(["run", str(Q8), "--tokens", ",".join(map(str, IDS)), "--json", "--exact"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert default != exact


def test_cli_diff_logits_and_corpus_take_exact(capsys):
    tokens = ",".join(map(str, IDS))
    assert main(["diff", str(Q8), str(Q4KS), "--metadata-only", "--logits-tokens", tokens,
                 "--json", "--exact"]) == 1
    kl_exact = json.loads(capsys.readouterr().out)["logits"]["kl_mean"]
    assert main(["diff", str(Q8), str(Q4KS), "--metadata-only", "--logits-tokens", tokens,
                 "--json"]) == 1
    kl_default = json.loads(capsys.readouterr().out)["logits"]["kl_mean"]
    assert kl_exact > 0 and kl_default > 0 and kl_exact != kl_default
    rc = main(["diff", str(Q8), str(Q4KS), "--corpus", str(FIXTURES / "perplexity" / "corpus.txt"),
               "--ctx", "128", "--chunks", "2", "--json", "--exact"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["n_chunk"] == 2 and out["kld_mean"]["value"] > 0
