"""The tensors and keys of the tiny models' decoder families, built from seeded draws.

Why a module of its own: ``tools.arch_specs`` is the table of architectures; the
builders it calls -- a llama-like decoder with its options (biases, norms, MoE, fused
gate/up), the LayerNorm / parallel-residual family, gpt-oss -- and the common keys are
the part that stays when the table grows.

Contract: ``Init(seed)`` draws matrices N(0, std²), norms 1 + N(0, 0.1²), biases
N(0, 0.02²) in call order; ``decoder`` / ``parallel`` / ``gptoss(init, ...)`` return
float32 arrays by GGUF tensor name in numpy order ([n_out, n_in]); ``common(arch, ...)``
the keys every model writes.  The dimensions: ``E, H, HKV, D, FF`` for the llama-like
models, ``PE, PH, PD, PFF`` for the LayerNorm family.
"""
from __future__ import annotations

import numpy as np

from tools.arch_vocab import N_VOCAB

__all__ = ["Init", "N_CTX", "E", "H", "HKV", "D", "FF", "PE", "PH", "PD", "PFF",
           "decoder", "parallel", "gptoss", "phimoe", "common"]

N_CTX = 128


class Init:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def w(self, *shape: int, std: float = 0.02) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def norm(self, n: int) -> np.ndarray:
        return (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)

    def b(self, n: int) -> np.ndarray:
        return (0.02 * self.rng.standard_normal(n)).astype(np.float32)


E, H, HKV, D, FF = 64, 4, 2, 16, 128


def decoder(r: Init, *, layers: int = 2, qkv_bias: bool = False, prenorm: bool = True,
             full_qk_norm: bool = False, post_norms: bool = False, tied: bool = False,
             moe: tuple[int, int, int] | None = None, ffn_std: float = 0.02,
             shexp_gate: bool = True, head_qk_norm: bool = False, hkv: int = HKV,
             ffn_norm: str = "ffn_norm", gated: bool = True,
             fused_up: bool = False) -> dict[str, np.ndarray]:
    """The tensors of a llama-like decoder (numpy shapes: [n_out, n_in])."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(layers):
        p = f"blk.{i}."
        if prenorm:
            t[p + "attn_norm.weight"] = r.norm(E)
        for name, rows in (("attn_q", H * D), ("attn_k", hkv * D), ("attn_v", hkv * D)):
            t[p + name + ".weight"] = r.w(rows, E, std=0.02 if name == "attn_v" else 0.1)
            if qkv_bias:
                t[p + name + ".bias"] = r.b(rows)
        t[p + "attn_output.weight"] = r.w(E, H * D)
        if head_qk_norm:
            t[p + "attn_q_norm.weight"], t[p + "attn_k_norm.weight"] = r.norm(D), r.norm(D)
        if full_qk_norm:
            t[p + "attn_q_norm.weight"] = r.norm(H * D)
            t[p + "attn_k_norm.weight"] = r.norm(hkv * D)
        if post_norms:
            t[p + "post_attention_norm.weight"] = r.norm(E)
        if prenorm and ffn_norm:                                  # "": none (plamo's parallel FFN)
            t[p + ffn_norm + ".weight"] = r.norm(E)
        if moe:
            n_exp, ff_exp, ff_sh = moe
            t[p + "ffn_gate_inp.weight"] = r.w(n_exp, E, std=0.3)    # routing that differs per token
            t[p + "ffn_gate_exps.weight"] = r.w(n_exp, ff_exp, E)
            t[p + "ffn_up_exps.weight"] = r.w(n_exp, ff_exp, E)
            t[p + "ffn_down_exps.weight"] = r.w(n_exp, E, ff_exp)
            if shexp_gate:
                t[p + "ffn_gate_inp_shexp.weight"] = r.w(E, std=0.3)
            if ff_sh:
                t[p + "ffn_gate_shexp.weight"] = r.w(ff_sh, E)
                t[p + "ffn_up_shexp.weight"] = r.w(ff_sh, E)
                t[p + "ffn_down_shexp.weight"] = r.w(E, ff_sh)
        elif fused_up:                                            # [gate; up] in one matrix
            t[p + "ffn_up.weight"] = r.w(2 * FF, E, std=ffn_std)
            t[p + "ffn_down.weight"] = r.w(E, FF)
        else:
            if gated:
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


def parallel(r: Init, *, hkv: int, fused: bool, qkv_bias: bool, out_bias: bool, gated: bool,
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


def gptoss(r: Init, *, n_exp: int = 4, ff: int = 32) -> dict[str, np.ndarray]:
    """gpt-oss tensors: biased q/k/v/o, a sink logit per head, the FFN's norm stored as
    post_attention_norm, biased router and experts."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(2):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = r.norm(E)
        for name, rows in (("attn_q", H * D), ("attn_k", HKV * D), ("attn_v", HKV * D)):
            t[p + name + ".weight"] = r.w(rows, E, std=0.02 if name == "attn_v" else 0.1)
            t[p + name + ".bias"] = r.b(rows)
        t[p + "attn_output.weight"], t[p + "attn_output.bias"] = r.w(E, H * D), r.b(E)
        t[p + "attn_sinks.weight"] = r.w(H, std=1.0)
        t[p + "post_attention_norm.weight"] = r.norm(E)
        t[p + "ffn_gate_inp.weight"], t[p + "ffn_gate_inp.bias"] = r.w(n_exp, E, std=0.3), r.b(n_exp)
        t[p + "ffn_gate_exps.weight"] = r.w(n_exp, ff, E, std=0.1)
        t[p + "ffn_gate_exps.bias"] = r.w(n_exp, ff)
        t[p + "ffn_up_exps.weight"] = r.w(n_exp, ff, E, std=0.1)
        t[p + "ffn_up_exps.bias"] = r.w(n_exp, ff)
        t[p + "ffn_down_exps.weight"] = r.w(n_exp, E, ff)
        t[p + "ffn_down_exps.bias"] = r.w(n_exp, E)
    t["output_norm.weight"] = r.norm(E)
    t["output.weight"] = r.w(N_VOCAB, E)
    return t


def phimoe(r: Init, *, n_exp: int = 4, ff: int = 32) -> dict[str, np.ndarray]:
    """phimoe tensors: RMSNorms with biases, biased attention output, experts, output bias."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(2):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"], t[p + "attn_norm.bias"] = r.norm(E), r.b(E)
        for name, rows in (("attn_q", H * D), ("attn_k", HKV * D), ("attn_v", HKV * D)):
            t[p + name + ".weight"] = r.w(rows, E, std=0.02 if name == "attn_v" else 0.1)
            t[p + name + ".bias"] = r.b(rows)
        t[p + "attn_output.weight"], t[p + "attn_output.bias"] = r.w(E, H * D), r.b(E)
        t[p + "ffn_norm.weight"], t[p + "ffn_norm.bias"] = r.norm(E), r.b(E)
        t[p + "ffn_gate_inp.weight"] = r.w(n_exp, E, std=0.3)
        t[p + "ffn_gate_exps.weight"] = r.w(n_exp, ff, E, std=0.1)
        t[p + "ffn_up_exps.weight"] = r.w(n_exp, ff, E, std=0.1)
        t[p + "ffn_down_exps.weight"] = r.w(n_exp, E, ff)
    t["output_norm.weight"], t["output_norm.bias"] = r.norm(E), r.b(E)
    t["output.weight"], t["output.bias"] = r.w(N_VOCAB, E), r.b(N_VOCAB)
    return t


def common(arch: str, layers: int, base: float, eps: float = 1e-5, *, dims=(E, H, HKV, D, FF),
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


