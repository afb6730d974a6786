"""Tiny random-weight GGUF models of the decoders the forward pass learned after the
shared fixtures, written deterministically so llama.cpp's logits recorded once
(``tools/record_arch_logits.py``) hold for the models a test writes again.

Why a module: the held-to-llama.cpp tests (tests/forward/test_more_archs.py) need, per
architecture, a file llama.cpp loads -- the keys and tensors its loader asks for
(``ggscope.facts.llama_arch``, generated from llama.cpp as vendored in
llama-cpp-python 0.3.36: src/models/<arch>.cpp ``load_arch_hparams`` /
``load_arch_tensors``) -- with weights that make each architecture's own switch bite
(a residual scale, a layer without rope, a full-width q norm).  No model file is checked
in: the test writes it into its tmp_path and compares the sha256 with the record.

Contract: ``write(name, encoding, path) -> Path`` writes ``SPECS[name]`` in ``"F32"`` or
``"Q8_0"`` (gguf-py's GGUFWriter and quantizer; the same bytes on every run);
``SEQ`` is the token sequence the logits are recorded for; ``sha256(path)``.
The weights: matrices N(0, 0.02²) (q and k N(0, 0.1²), so the attention pattern -- and a
wrong rotary pairing -- moves the logits; gemma's FFN gate and up too), norms 1 + N(0, 0.1²), biases N(0, 0.02²),
drawn from ``numpy.random.default_rng(SEEDS[arch])`` in the tensors' order.  The
vocabulary: GPT-2's 256 byte tokens, ``N_MERGES`` merges learned on a fixed corpus, and
three control tokens (a "gpt2" tokenizer with the "gpt-2" pre-tokenizer, which
llama.cpp's vocabulary loader accepts).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import numpy as np

__all__ = ["SPECS", "SEQ", "N_VOCAB", "write", "sha256", "arch_of"]

N_MERGES = 40
SPECIALS = ("<|bos|>", "<|eos|>", "<|pad|>")
CORPUS = ("Hello world, this is a test. The quick brown fox jumps over the lazy dog. "
          "There is nothing to learn here: this is only the tiny test model of the test.\n")
N_CTX = 128


def _byte_table() -> list[str]:
    """GPT-2's reversible byte -> printable character table, indexed by byte."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def _tokenizer() -> tuple[list[str], list[int], list[str]]:
    b2u = _byte_table()
    words = Counter(tuple(b2u[b] for b in w.encode())
                    for w in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", CORPUS))
    tokens, merges = list(b2u), []
    while len(merges) < N_MERGES:
        pairs: Counter = Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[a, b] += n
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        merges.append(f"{a} {b}")
        if a + b not in tokens:
            tokens.append(a + b)
        merged: Counter = Counter()
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == (a, b):
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    types = [1] * len(tokens) + [3] * len(SPECIALS)                 # NORMAL, then CONTROL
    return tokens + list(SPECIALS), types, merges


TOKENS, TOKEN_TYPES, MERGES = _tokenizer()
N_VOCAB = len(TOKENS)
BOS, EOS, PAD = (TOKENS.index(s) for s in SPECIALS)
SEQ = [BOS, 72, 101, 108, 32, 119, 111, 33, 10, 20, 30, 44]        # 12 tokens: past a 4-layer period


class _Init:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def w(self, *shape: int, std: float = 0.02) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def norm(self, n: int) -> np.ndarray:
        return (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)

    def b(self, n: int) -> np.ndarray:
        return (0.02 * self.rng.standard_normal(n)).astype(np.float32)


E, H, HKV, D, FF = 64, 4, 2, 16, 128


def _decoder(r: _Init, *, layers: int = 2, qkv_bias: bool = False, prenorm: bool = True,
             full_qk_norm: bool = False, post_norms: bool = False, tied: bool = False,
             moe: tuple[int, int, int] | None = None, ffn_std: float = 0.02,
             shexp_gate: bool = True) -> dict[str, np.ndarray]:
    """The tensors of a llama-like decoder (numpy shapes: [n_out, n_in])."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(layers):
        p = f"blk.{i}."
        if prenorm:
            t[p + "attn_norm.weight"] = r.norm(E)
        for name, rows in (("attn_q", H * D), ("attn_k", HKV * D), ("attn_v", HKV * D)):
            t[p + name + ".weight"] = r.w(rows, E, std=0.02 if name == "attn_v" else 0.1)
            if qkv_bias:
                t[p + name + ".bias"] = r.b(rows)
        t[p + "attn_output.weight"] = r.w(E, H * D)
        if full_qk_norm:
            t[p + "attn_q_norm.weight"] = r.norm(H * D)
            t[p + "attn_k_norm.weight"] = r.norm(HKV * D)
        if post_norms:
            t[p + "post_attention_norm.weight"] = r.norm(E)
        if prenorm:
            t[p + "ffn_norm.weight"] = r.norm(E)
        if moe:
            n_exp, ff_exp, ff_sh = moe
            t[p + "ffn_gate_inp.weight"] = r.w(n_exp, E, std=0.3)    # routing that differs per token
            t[p + "ffn_gate_exps.weight"] = r.w(n_exp, ff_exp, E)
            t[p + "ffn_up_exps.weight"] = r.w(n_exp, ff_exp, E)
            t[p + "ffn_down_exps.weight"] = r.w(n_exp, E, ff_exp)
            if shexp_gate:
                t[p + "ffn_gate_inp_shexp.weight"] = r.w(E, std=0.3)
            t[p + "ffn_gate_shexp.weight"] = r.w(ff_sh, E)
            t[p + "ffn_up_shexp.weight"] = r.w(ff_sh, E)
            t[p + "ffn_down_shexp.weight"] = r.w(E, ff_sh)
        else:
            t[p + "ffn_gate.weight"] = r.w(FF, E, std=ffn_std)
            t[p + "ffn_up.weight"] = r.w(FF, E, std=ffn_std)
            t[p + "ffn_down.weight"] = r.w(E, FF)
        if post_norms:
            t[p + "post_ffw_norm.weight"] = r.norm(E)
    t["output_norm.weight"] = r.norm(E)
    if not tied:
        t["output.weight"] = r.w(N_VOCAB, E)
    return t


# the LayerNorm / parallel-residual family: wider heads (24) and a rotary part of them
PE, PH, PD, PFF = 96, 4, 24, 192


def _parallel(r: _Init, *, hkv: int, fused: bool, qkv_bias: bool, out_bias: bool, gated: bool,
              ffn_bias: bool, ffn_norm: bool, head_norms: bool = False, norm_2: bool = False,
              output_bias: bool = False, norm_bias: bool = True, tied: bool = False,
              layers: int = 2) -> dict[str, np.ndarray]:
    """phi2 / stablelm / falcon / command-r tensors: LayerNorms (with biases unless
    ``norm_bias`` is False), fused or separate q/k/v."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, PE)}
    q, kv = PH * PD, hkv * PD
    for i in range(layers):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = r.norm(PE)
        if norm_bias:
            t[p + "attn_norm.bias"] = r.b(PE)
        if norm_2:
            t[p + "attn_norm_2.weight"], t[p + "attn_norm_2.bias"] = r.norm(PE), r.b(PE)
        if fused:
            t[p + "attn_qkv.weight"] = np.concatenate([r.w(q, PE, std=0.1), r.w(kv, PE, std=0.1),
                                                       r.w(kv, PE)])
            if qkv_bias:
                t[p + "attn_qkv.bias"] = r.b(q + 2 * kv)
        else:
            for name, rows in (("attn_q", q), ("attn_k", kv), ("attn_v", kv)):
                t[p + name + ".weight"] = r.w(rows, PE, std=0.02 if name == "attn_v" else 0.1)
                if qkv_bias:
                    t[p + name + ".bias"] = r.b(rows)
        if head_norms:
            t[p + "attn_q_norm.weight"] = np.stack([r.norm(PD) for _ in range(PH)])
            t[p + "attn_k_norm.weight"] = np.stack([r.norm(PD) for _ in range(hkv)])
        t[p + "attn_output.weight"] = r.w(PE, q)
        if out_bias:
            t[p + "attn_output.bias"] = r.b(PE)
        if ffn_norm:
            t[p + "ffn_norm.weight"], t[p + "ffn_norm.bias"] = r.norm(PE), r.b(PE)
        if gated:
            t[p + "ffn_gate.weight"] = r.w(PFF, PE, std=0.1)
        t[p + "ffn_up.weight"] = r.w(PFF, PE, std=0.1)
        if ffn_bias:
            t[p + "ffn_up.bias"] = r.b(PFF)
        t[p + "ffn_down.weight"] = r.w(PE, PFF)
        if ffn_bias:
            t[p + "ffn_down.bias"] = r.b(PE)
    t["output_norm.weight"] = r.norm(PE)
    if norm_bias:
        t["output_norm.bias"] = r.b(PE)
    if not tied:
        t["output.weight"] = r.w(N_VOCAB, PE)
    if output_bias:
        t["output.bias"] = r.b(N_VOCAB)
    return t


def _common(arch: str, layers: int, base: float, eps: float = 1e-5, *, dims=(E, H, HKV, D, FF),
            n_rot: int | None = None, layer_norm: bool = False, **extra) -> dict:
    e, h, hkv, d, ff = dims
    keys = {f"{arch}.context_length": N_CTX, f"{arch}.embedding_length": e,
            f"{arch}.block_count": layers, f"{arch}.feed_forward_length": ff,
            f"{arch}.attention.head_count": h, f"{arch}.attention.head_count_kv": hkv,
            f"{arch}.rope.dimension_count": d if n_rot is None else n_rot,
            f"{arch}.rope.freq_base": base,
            f"{arch}.attention.layer_norm_{'' if layer_norm else 'rms_'}epsilon": eps,
            f"{arch}.vocab_size": N_VOCAB}
    keys.update({f"{arch}.{k}": v for k, v in extra.items()})
    return keys


# arch -> (seed, keys(arch), tensors(init)); what each one's switch is, in its note
SPECS: dict[str, dict] = {
    # gemma.cpp: embeddings × sqrt(n_embd), q × 1/sqrt(head) after rope, GELU-gated FFN, tied
    # output (gate and up N(0, 0.1²): the activation's shape, not only its slope at 0, matters)
    "gemma": dict(seed=2001, keys=_common("gemma", 2, 10000.0, 1e-6),
                  tensors=lambda r: _decoder(r, tied=True, ffn_std=0.1)),
    # granite.cpp: embedding_scale, attention.scale, residual_scale, 1/logit_scale
    "granite": dict(seed=2002, keys=_common("granite", 2, 10000.0, **{
                        "embedding_scale": 12.0, "residual_scale": 0.22,
                        "attention.scale": 0.125, "logit_scale": 0.25}),
                    tensors=lambda r: _decoder(r)),
    # olmo2.cpp: no pre-norms, q/k RMSNorm over the full projection, post-attention/FFN norms
    "olmo2": dict(seed=2003, keys=_common("olmo2", 2, 500000.0, 1e-6),
                  tensors=lambda r: _decoder(r, prenorm=False, full_qk_norm=True, post_norms=True)),
    # qwen2moe.cpp: q/k/v biases, softmax top-2 of 4 experts (no renormalisation), a shared
    # expert weighted by sigmoid(ffn_gate_inp_shexp · h)
    "qwen2moe": dict(seed=2004, keys=_common("qwen2moe", 2, 1000000.0, 1e-6, **{
                         "expert_count": 4, "expert_used_count": 2,
                         "expert_feed_forward_length": 32,
                         "expert_shared_feed_forward_length": 64}),
                     tensors=lambda r: _decoder(r, qkv_bias=True, moe=(4, 32, 64))),
    # mistral3.cpp (text part): llama's graph, normal rotary, tied output when no output.weight
    "mistral3": dict(seed=2005, keys=_common("mistral3", 2, 1000000.0),
                     tensors=lambda r: _decoder(r, tied=True)),
    # smollm3.cpp: every 4th layer (il + 1) % 4 == 0 without rope
    "smollm3": dict(seed=2006, keys=_common("smollm3", 4, 10000.0, 1e-6),
                    tensors=lambda r: _decoder(r, layers=4, tied=True)),
    # exaone.cpp: llama's graph with NeoX rotary
    "exaone": dict(seed=2007, keys=_common("exaone", 2, 10000.0),
                   tensors=lambda r: _decoder(r)),
    # phi2.cpp: LayerNorm, fused QKV with bias, NeoX rotary on 8 of 24 dims, q pre-scaled, the
    # GELU MLP reading the attention's input (parallel residual), output with bias
    "phi2": dict(seed=2008, keys=_common("phi2", 2, 10000.0, dims=(PE, PH, PH, PD, PFF), n_rot=8,
                                         layer_norm=True),
                 tensors=lambda r: _parallel(r, hkv=PH, fused=True, qkv_bias=True, out_bias=True,
                                             gated=False, ffn_bias=True, ffn_norm=False,
                                             output_bias=True)),
    # stablelm.cpp (StableLM 2 1.6B): LayerNorm, q/k/v biases, NeoX rotary on 6 of 24 dims,
    # sequential residual with a LayerNorm before the SwiGLU FFN
    "stablelm": dict(seed=2009, keys=_common("stablelm", 2, 10000.0, dims=(PE, PH, PH, PD, PFF),
                                             n_rot=6, layer_norm=True),
                     tensors=lambda r: _parallel(r, hkv=PH, fused=False, qkv_bias=True,
                                                 out_bias=False, gated=True, ffn_bias=False,
                                                 ffn_norm=True)),
    # stablelm.cpp (StableLM 2 12B): no ffn_norm, so the FFN reads the attention's input
    # (parallel residual), and per-head q/k LayerNorms with a weight row per head; GQA 4/2
    "stablelm-12b": dict(arch="stablelm", seed=2010,
                         keys=_common("stablelm", 2, 10000.0, dims=(PE, PH, 2, PD, PFF), n_rot=6,
                                      layer_norm=True),
                         tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                     out_bias=False, gated=True, ffn_bias=False,
                                                     ffn_norm=False, head_norms=True)),
    # falcon.cpp (Falcon 7B): multi-query attention (one K/V head), fused QKV, NeoX rotary on the
    # whole head, the GELU MLP beside the attention on the same LayerNorm (parallel residual)
    "falcon": dict(seed=2011, keys=_common("falcon", 2, 10000.0, dims=(PE, PH, 1, PD, PFF),
                                           layer_norm=True),
                   tensors=lambda r: _parallel(r, hkv=1, fused=True, qkv_bias=False,
                                               out_bias=False, gated=False, ffn_bias=False,
                                               ffn_norm=False)),
    # falcon.cpp (Falcon 40B): the attention reads its own LayerNorm (attn_norm_2), GQA 4/2
    "falcon-40b": dict(arch="falcon", seed=2012,
                       keys=_common("falcon", 2, 10000.0, dims=(PE, PH, 2, PD, PFF), layer_norm=True),
                       tensors=lambda r: _parallel(r, hkv=2, fused=True, qkv_bias=False,
                                                   out_bias=False, gated=False, ffn_bias=False,
                                                   ffn_norm=False, norm_2=True)),
    # command-r.cpp (Command R, Aya): LayerNorm without bias, the SwiGLU FFN beside the attention
    # on the same norm, summed as (ffn + x) + attn; output always token_embd; logits × logit_scale
    "command-r": dict(seed=2013, keys=_common("command-r", 2, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                              layer_norm=True, logit_scale=0.0625),
                      tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                  out_bias=False, gated=True, ffn_bias=False,
                                                  ffn_norm=False, norm_bias=False, tied=True)),
    # cohere2.cpp (Command R7B, Command A): command-r with a window of 4 on layers 0-2 of each 4,
    # which alone have rope (layer 3 is global without it)
    "cohere2": dict(seed=2014, keys=_common("cohere2", 4, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                            layer_norm=True, logit_scale=0.25,
                                            **{"attention.sliding_window": 4}),
                    tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                out_bias=False, gated=True, ffn_bias=False,
                                                ffn_norm=False, norm_bias=False, tied=True,
                                                layers=4)),
    # cohere2 with the layers that slide given per layer (attention.sliding_window_pattern as
    # an array: llama.cpp's load_swa_pattern reads it before the period)
    "cohere2-pattern": dict(arch="cohere2", seed=2015,
                            keys=_common("cohere2", 4, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                         layer_norm=True, logit_scale=0.25,
                                         **{"attention.sliding_window": 3,
                                            "attention.sliding_window_pattern":
                                                [False, True, True, False]}),
                            tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                        out_bias=False, gated=True, ffn_bias=False,
                                                        ffn_norm=False, norm_bias=False, tied=True,
                                                        layers=4)),
    # granite-moe.cpp (granite.cpp's graph): granite's multipliers around softmax top-2 of 4
    # experts, renormalised, plus an ungated shared expert (GraniteMoeShared)
    "granitemoe": dict(seed=2017, keys=_common("granitemoe", 2, 10000.0, dims=(E, H, HKV, D, 32), **{
                           "embedding_scale": 12.0, "residual_scale": 0.22,
                           "attention.scale": 0.125, "logit_scale": 0.25, "expert_count": 4,
                           "expert_used_count": 2, "expert_shared_feed_forward_length": 64}),
                       tensors=lambda r: _decoder(r, moe=(4, 32, 64), shexp_gate=False)),
    # mistral3.cpp (Ministral 3): llama 4's attention temperature (q × log(floor(pos/4) + 1)·0.3
    # + 1, the floor n_ctx_orig_yarn) and YaRN with a log multiplier (mscale_all_dim) of 0.5
    "mistral3-yarn": dict(arch="mistral3", seed=2018, keys=_common("mistral3", 2, 1000000.0, **{
                              "attention.temperature_scale": 0.3, "rope.scaling.type": "yarn",
                              "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 4,
                              "rope.scaling.yarn_beta_fast": 16.0,
                              "rope.scaling.yarn_beta_slow": 2.0,
                              "rope.scaling.yarn_log_multiplier": 0.5}),
                          tensors=lambda r: _decoder(r, tied=True)),
    # olmo2.cpp with a sliding window (Olmo 3): layers 0-2 of each 4 slide, with plain rope;
    # the global layer 3 ropes with YaRN (factor 4 over an original context of 32)
    "olmo3": dict(arch="olmo2", seed=2016,
                  keys=_common("olmo2", 4, 500000.0, 1e-6, **{
                      "attention.sliding_window": 4, "rope.scaling.type": "yarn",
                      "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 32}),
                  tensors=lambda r: _decoder(r, layers=4, prenorm=False, full_qk_norm=True,
                                             post_norms=True)),
}

_KEEP_F32 = re.compile(r"norm|bias|ffn_gate_inp|token_embd_norm")


def _quantized(name: str, a: np.ndarray) -> bool:
    """What llama.cpp's converters quantize: matrices whose rows fill Q8_0 blocks, not
    norms, biases or the router."""
    return a.ndim >= 2 and a.shape[-1] % 32 == 0 and not _KEEP_F32.search(name)


def write(name: str, encoding: str, path: str | Path) -> Path:
    """Write ``SPECS[name]`` -- an architecture, or a variant of one whose spec names its
    ``arch`` -- as a GGUF file in ``encoding`` ("F32" or "Q8_0")."""
    import gguf
    if encoding not in ("F32", "Q8_0"):
        raise ValueError(f"encoding must be F32 or Q8_0, not {encoding!r}")
    spec, path = SPECS[name], Path(path)
    arch = spec.get("arch", name)
    tensors = spec["tensors"](_Init(spec["seed"]))
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"Tiny {name} test")
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if encoding == "F32" else gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, value in spec["keys"].items():
        if isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, list):
            w.add_array(key, value)
        else:
            w.add_uint32(key, value)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(TOKENS)
    w.add_token_types(TOKEN_TYPES)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_pad_token_id(PAD)
    w.add_add_bos_token(True)
    for name, a in tensors.items():
        if encoding == "Q8_0" and _quantized(name, a):
            q8 = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(a, q8), raw_dtype=q8)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def arch_of(name: str) -> str:
    """The ``general.architecture`` of ``SPECS[name]``."""
    return SPECS[name].get("arch", name)


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
