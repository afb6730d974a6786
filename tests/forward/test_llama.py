"""The llama-family forward pass (llama, qwen2, early GGJT llama) against others' logits.

Oracles:

* transformers ``LlamaForCausalLM`` / ``Qwen2ForCausalLM`` with random weights: this
  file writes the same weights to a tiny F32 GGUF with gguf-py, the way llama.cpp's
  ``convert_hf_to_gguf.py`` does (llama: q/k rows permuted into llama.cpp's rotary
  layout by its ``permute``; qwen2: unpermuted, NeoX rotary, q/k/v biases, tied
  embeddings), and ggscope's logits must equal transformers' within 1e-3 relative
  (the issue's bound for F32 weights).  The llama case has grouped-query attention
  (4 query heads, 2 key/value heads) and a non-default rotary base.
* ``../shared/fixtures/llama-legacy/ref-logits-transformers-llama-tiny.bin``:
  transformers' logits for the model stored in the early-llama.cpp GGJT files
  (MANIFEST.md there: the F16 file matches within 0.013).
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.forward import UnsupportedArchitecture, WeightError, architecture, module_for, run
from gguf_writers import KV, GArray, TensorSpec, V, write_gguf_py
from gguf import GGMLQuantizationType as T

REL_TOL = 1e-3
PROMPT = [1, 5, 9, 17, 33, 2, 60, 7]


# ---- the tiny-model writer (transformers model -> F32 GGUF, as convert_hf_to_gguf) ----

def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py LlamaModel.permute: HF rotary halves -> adjacent pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _llama3_rope_freqs(rp: dict, head_dim: int) -> np.ndarray:
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: the llama3 rope factors."""
    base, factor = rp["rope_theta"], rp["factor"]
    lo, hi, old = rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position_embeddings"]
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    out = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_tiny_gguf(path, hf_model, arch: str):
    """Write ``hf_model``'s weights as an F32 GGUF of architecture ``arch``."""
    cfg = hf_model.config
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in hf_model.state_dict().items()}
    H, KVH = cfg.num_attention_heads, cfg.num_key_value_heads
    theta = getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]
    kvs = [
        KV(f"{arch}.context_length", V.UINT32, cfg.max_position_embeddings),
        KV(f"{arch}.embedding_length", V.UINT32, cfg.hidden_size),
        KV(f"{arch}.block_count", V.UINT32, cfg.num_hidden_layers),
        KV(f"{arch}.feed_forward_length", V.UINT32, cfg.intermediate_size),
        KV(f"{arch}.attention.head_count", V.UINT32, H),
        KV(f"{arch}.attention.head_count_kv", V.UINT32, KVH),
        KV(f"{arch}.attention.layer_norm_rms_epsilon", V.FLOAT32, cfg.rms_norm_eps),
        KV(f"{arch}.rope.freq_base", V.FLOAT32, float(theta)),
        # a SentencePiece vocabulary of the model's size, so llama.cpp's loader (and the
        # loader rules that gate `ggscope run` and GG1003) accept the file
        KV("tokenizer.ggml.model", V.STRING, "llama"),
        KV("tokenizer.ggml.tokens", V.ARRAY,
           GArray(V.STRING, tuple(f"<t{i}>" for i in range(cfg.vocab_size)))),
        KV("tokenizer.ggml.scores", V.ARRAY, GArray(V.FLOAT32, (0.0,) * cfg.vocab_size)),
        KV("tokenizer.ggml.token_type", V.ARRAY, GArray(V.INT32, (1,) * cfg.vocab_size)),
    ]
    t = []

    def add(name, arr):
        t.append(TensorSpec(name, T.F32, np.ascontiguousarray(arr, dtype=np.float32)))

    rp = getattr(cfg, "rope_parameters", None) or {}
    if rp.get("rope_type") == "llama3":
        add("rope_freqs.weight", _llama3_rope_freqs(rp, cfg.hidden_size // H))
    add("token_embd.weight", sd["model.embed_tokens.weight"])
    add("output_norm.weight", sd["model.norm.weight"])
    if not cfg.tie_word_embeddings:
        add("output.weight", sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        if arch == "llama":
            q, k = _permute(q, H), _permute(k, KVH)
        add(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        add(f"blk.{i}.attn_q.weight", q)
        add(f"blk.{i}.attn_k.weight", k)
        add(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        add(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        for n in ("q", "k", "v"):
            if p + f"self_attn.{n}_proj.bias" in sd:
                add(f"blk.{i}.attn_{n}.bias", sd[p + f"self_attn.{n}_proj.bias"])
        add(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        add(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        add(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        add(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    return write_gguf_py(path, kvs=kvs, tensors=t, arch=arch)


def _randomize(model, torch, seed: int):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
    return model.eval()


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    """(gguf path, transformers logits for PROMPT [T, V]) per architecture."""
    torch = pytest.importorskip("torch")
    tr = pytest.importorskip("transformers")
    common = dict(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  rms_norm_eps=1e-5)
    out = {}
    d = tmp_path_factory.mktemp("hf")
    llama = _randomize(tr.LlamaForCausalLM(tr.LlamaConfig(
        **common, rope_theta=50000.0, tie_word_embeddings=False, attention_bias=False)), torch, 1)
    qwen = _randomize(tr.Qwen2ForCausalLM(tr.Qwen2Config(
        **common, rope_theta=10000.0, tie_word_embeddings=True)), torch, 2)
    # Llama 3.x: rope frequencies divided by the converter's rope_freqs (a base and an
    # original context small enough that the 8-token prompt sees the factors)
    llama3 = _randomize(tr.LlamaForCausalLM(tr.LlamaConfig(
        **common, tie_word_embeddings=False, rope_parameters={
            "rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16})), torch, 3)
    for arch, model in (("llama", llama), ("qwen2", qwen), ("llama3", llama3)):
        with torch.no_grad():
            ref = model(torch.tensor([PROMPT])).logits[0].numpy()
        out[arch] = (write_tiny_gguf(d / f"{arch}.gguf", model, arch.rstrip("3")), ref)
    return out


@pytest.mark.parametrize("arch", ["llama", "qwen2", "llama3"])
def test_f32_gguf_matches_transformers(hf_models, arch):
    path, ref = hf_models[arch]
    mf = ggscope.open(path)
    assert architecture(mf) == arch.rstrip("3")
    logits, _ = run(mf, PROMPT)
    scale = np.abs(ref[-1]).max()
    assert np.abs(logits - ref[-1]).max() <= REL_TOL * scale


@pytest.mark.parametrize("arch", ["llama", "qwen2", "llama3"])
def test_incremental_state_matches_transformers_at_each_position(hf_models, arch):
    path, ref = hf_models[arch]
    mod = module_for(ggscope.open(path))
    w = mod.load(ggscope.open(path))
    state = None
    for pos, tok in enumerate(PROMPT):
        logits, state = mod.forward(w, [tok], state)
        assert np.abs(logits - ref[pos]).max() <= REL_TOL * np.abs(ref[pos]).max()


def test_qwen2_biases_are_loaded(hf_models):
    w = module_for(ggscope.open(hf_models["qwen2"][0])).load(ggscope.open(hf_models["qwen2"][0]))
    assert w.layers[0].bq is not None and w.config.traits.rope == "neox"
    assert w.output is w.embed                      # tied: no output.weight in the file


# ---- early llama.cpp GGJT files ---------------------------------------------------------

LEGACY_IDS = [1, 3, 22, 6, 4, 4, 10, 3, 24, 20, 4, 12]   # MANIFEST: BOS + "hello world"


def test_ggjt_f16_matches_transformers_reference(shared_fixtures):
    d = shared_fixtures / "llama-legacy"
    ref = np.fromfile(d / "ref-logits-transformers-llama-tiny.bin", dtype="<f4").reshape(12, 32)
    logits, _ = run(ggscope.open(d / "llama-tiny-ggjt-v1-f16.bin"), LEGACY_IDS)
    assert np.abs(logits - ref[-1]).max() < 0.013      # the MANIFEST's bound for F16 weights
    assert int(np.argmax(logits)) == 28


@pytest.mark.parametrize("name", ["llama-tiny-ggjt-v1-q4_0.bin", "llama0L-ggml-unversioned-f16.bin",
                                  "llama0L-ggmf-v1-q4_0.bin"])
def test_other_early_llama_files_run(shared_fixtures, name):
    logits, _ = run(ggscope.open(shared_fixtures / "llama-legacy" / name), [1, 3, 4])
    assert logits.shape == (32,) and np.isfinite(logits).all()


def test_tinyllama_q8_0_fixture_runs(repo_fixtures):
    mf = ggscope.open(repo_fixtures / "TinyLlama-Test-164K-v1.0-Q8_0.gguf")
    logits, _ = run(mf, [317, 72, 101])
    assert logits.shape == (320,) and np.isfinite(logits).all()


# ---- errors -------------------------------------------------------------------------------

def test_missing_weight_is_a_weight_error(tmp_path):
    kvs = [KV("llama.embedding_length", V.UINT32, 8), KV("llama.block_count", V.UINT32, 1),
           KV("llama.attention.head_count", V.UINT32, 2)]
    p = write_gguf_py(tmp_path / "m.gguf", kvs=kvs, tensors=[
        TensorSpec("token_embd.weight", T.F32, np.zeros((4, 8), np.float32))])
    with pytest.raises(WeightError, match="blk.0"):
        run(ggscope.open(p), [1])


def test_unsupported_architecture_names_supported_ones(tmp_path):
    p = write_gguf_py(tmp_path / "m.gguf", arch="bloom")
    with pytest.raises(UnsupportedArchitecture, match="llama.*qwen2.*gpt2"):
        run(ggscope.open(p), [1])


def test_weights_are_not_copied_after_decoding(repo_fixtures, monkeypatch):
    """The decoded float32 array is the weight: no second float32 copy (issue 18 item 7)."""
    from ggscope.forward import WeightMapper, loading
    mf = ggscope.open(repo_fixtures / "TinyLlama-Test-164K-v1.0-Q8_0.gguf")
    decoded = []
    original = loading.decode

    def spy(info):
        decoded.append(original(info))
        return decoded[-1]

    monkeypatch.setattr(loading, "decode", spy)
    info = mf.tensor("blk.0.attn_q.weight")
    w = WeightMapper(mf, "llama").take(info.name, info.np_shape)
    assert np.shares_memory(w, decoded[-1]) and w.dtype == np.float32
