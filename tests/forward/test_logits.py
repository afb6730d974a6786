"""``ggscope.forward.logits``: check() and compare_logits() against independent computations.

Oracles:

* transformers: two tiny random llamas (B = A with its weights perturbed, as a crude
  quantization), written to F32 GGUF by test_llama's writer; transformers computes
  both logit matrices for the whole prompt in one causal pass, and this file computes
  KL(P_A || P_B) and the argmaxes from them in numpy, written out independently
  (``sum p log(p / q)`` on probabilities, not log-softmax differences).
* the project fixtures TinyLlama Q8_0 / Q4_K_S: each prefix run from scratch with
  ``forward.run`` (a fresh pass per prefix, no carried state), KL in numpy.
* ../shared/fixtures/rwkv: the reference PyTorch FP32 logits after '"in' (MANIFEST.md).
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.forward import TokenError, run
from ggscope.forward.logits import LogitsError, check, compare_logits, tokens_for
from tests.conftest import REPO, SHARED_FIXTURES

Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
Q4 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
RWKV = SHARED_FIXTURES / "rwkv"
PROMPT = [1, 5, 9, 17, 33, 2, 60, 7]


def _kl_numpy(a: np.ndarray, b: np.ndarray) -> float:
    """KL(softmax(a) || softmax(b)) in nats, the textbook way on probabilities."""
    p = np.exp(a.astype(np.float64) - a.max())
    p /= p.sum()
    q = np.exp(b.astype(np.float64) - b.max())
    q /= q.sum()
    return float(np.sum(p * np.log(p / q)))


def _need(path):
    if not path.exists():
        pytest.skip(f"{path} missing (project fixtures: fixtures/make_fixtures.py; shared: ../shared/fixtures)")
    return path


@pytest.fixture(scope="module")
def hf_pair(tmp_path_factory):
    """(gguf A, gguf B, transformers logits A [T, V], logits B [T, V])."""
    torch = pytest.importorskip("torch")
    tr = pytest.importorskip("transformers")
    from tests.forward.test_llama import _randomize, write_tiny_gguf
    cfg = tr.LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    model = _randomize(tr.LlamaForCausalLM(cfg), torch, 5)
    d = tmp_path_factory.mktemp("logits")
    with torch.no_grad():
        ref_a = model(torch.tensor([PROMPT])).logits[0].numpy()
        path_a = write_tiny_gguf(d / "a.gguf", model, "llama")
        g = torch.Generator().manual_seed(9)
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=g))
        ref_b = model(torch.tensor([PROMPT])).logits[0].numpy()
        path_b = write_tiny_gguf(d / "b.gguf", model, "llama")
    return path_a, path_b, ref_a, ref_b


def test_kl_and_top1_match_transformers(hf_pair):
    path_a, path_b, ref_a, ref_b = hf_pair
    seen = []
    d = compare_logits(ggscope.open(path_a), ggscope.open(path_b), PROMPT,
                       progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, len(PROMPT)) and seen[-1] == (len(PROMPT), len(PROMPT))
    assert d.tokens == tuple(PROMPT) and d.n_vocab == 64 and len(d.positions) == len(PROMPT)
    ref_kl = [_kl_numpy(ref_a[i], ref_b[i]) for i in range(len(PROMPT))]
    assert min(ref_kl) > 1e-4                     # the perturbation is visible
    for i, p in enumerate(d.positions):
        assert p.token == PROMPT[i]
        assert abs(p.kl - ref_kl[i]) <= 0.02 * ref_kl[i] + 1e-5, (i, p.kl, ref_kl[i])
        for ours, ref in ((p.top1_a, ref_a[i]), (p.top1_b, ref_b[i])):
            top2 = np.sort(ref)[-2:]
            if top2[1] - top2[0] > 1e-2:          # not a near tie
                assert ours == int(np.argmax(ref))
    assert d.kl_mean == pytest.approx(np.mean(ref_kl), rel=0.02)
    assert d.kl_max == pytest.approx(max(ref_kl), rel=0.02)
    ref_agree = np.mean(ref_a.argmax(1) == ref_b.argmax(1))
    assert d.top1_agreement == pytest.approx(ref_agree)


def test_same_file_is_zero_kl_full_agreement(hf_pair):
    mf = ggscope.open(hf_pair[0])
    d = compare_logits(mf, ggscope.open(hf_pair[0]), PROMPT[:3])
    assert d.kl_mean == 0.0 and d.kl_max == 0.0 and d.top1_agreement == 1.0 and d.same


def test_tinyllama_q8_vs_q4k_against_per_prefix_passes():
    a, b = ggscope.open(_need(Q8)), ggscope.open(_need(Q4))
    ids, notes = tokens_for(a, b, "The capital of France is")
    assert notes == ()                              # same vocabulary in both files
    ids = ids[:8]
    d = compare_logits(a, b, ids)
    for i, p in enumerate(d.positions):
        la, _ = run(a, ids[:i + 1])                 # from scratch: no state carried
        lb, _ = run(b, ids[:i + 1])
        assert abs(p.kl - _kl_numpy(la, lb)) <= 1e-4 * max(1.0, p.kl * 100)
        assert (p.top1_a, p.top1_b) == (int(np.argmax(la)), int(np.argmax(lb)))
        assert p.max_abs_logit == pytest.approx(float(np.abs(lb - la).max()), abs=1e-4)
    assert 0 < d.kl_mean < 0.5 and 0 < d.top1_agreement <= 1


def test_rwkv_fp32_vs_q5_1():
    fp32 = _need(RWKV / "tiny-rwkv-5v1-730K-FP32.bin")
    q51 = _need(RWKV / "tiny-rwkv-5v1-730K-Q5_1.bin")
    a, b = ggscope.open(fp32), ggscope.open(q51)
    prompt = [34, 105, 110]                         # '"in', the fixtures' prompt
    d = compare_logits(a, b, prompt)
    assert d.architecture_a == d.architecture_b == "rwkv5.1" and d.n_vocab == 256
    assert 0 < d.kl_mean < 0.05
    # the last position against the reference PyTorch FP32 logits (not ggscope's)
    ref = np.fromfile(_need(RWKV / "expected-logits-5v1-730K.bin"), dtype="<f4")
    lb, _ = run(b, prompt)
    assert d.positions[-1].kl == pytest.approx(_kl_numpy(ref, lb), rel=0.05, abs=1e-4)
    same = compare_logits(a, ggscope.open(fp32), prompt)
    assert same.kl_max == 0.0 and same.top1_agreement == 1.0


def test_vocabulary_sizes_differ_is_an_error():
    a = ggscope.open(_need(Q8))
    b = ggscope.open(_need(RWKV / "tiny-rwkv-5v1-730K-Q5_1.bin"))
    with pytest.raises(LogitsError, match="320 logits .* 256"):
        compare_logits(a, b, [1, 2])
    with pytest.raises(TokenError):
        compare_logits(a, a, [])


def test_check_entropy_against_numpy():
    mf = ggscope.open(_need(Q8))
    r = check(mf, [317, 72, 101])
    logits, _ = run(mf, [317, 72, 101])
    p = np.exp(logits.astype(np.float64) - logits.max())
    p /= p.sum()
    assert r.finite and r.n_nonfinite == 0 and r.n_vocab == 320 and r.architecture == "llama"
    assert r.entropy_nats == pytest.approx(float(-(p * np.log(p)).sum()), rel=1e-9)
    assert 0 < r.entropy_nats < r.max_entropy_nats == pytest.approx(np.log(320))
    assert r.top1 == int(np.argmax(logits))
