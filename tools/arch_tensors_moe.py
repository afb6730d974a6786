"""The tensors of the tiny models whose layers mix dense and routed FFNs, from seeded draws.

Why a module of its own: ``tools.arch_tensors`` builds the decoders whose every layer
has the same FFN; the families here (glm4moe: dense leading layers, routed experts with
a selection bias and shared experts, a next-token-prediction layer after the trunk;
llama4: experts on every n-th layer; ernie4_5-moe: experts after the dense lead with a
biased attention output; deci: a head count, KV head count and FFN width per layer)
follow their own loaders' layouts, and keep that
module the size it is.

Contract: as ``tools.arch_tensors``: ``glm4moe`` / ``llama4`` / ``ernie45moe`` / ``deci(init, ...)`` return float32 arrays by
GGUF tensor name in numpy order ([n_out, n_in]), drawn in the tensors' order.
"""
from __future__ import annotations

import numpy as np

from tools.arch_tensors import D, E, FF, H, HKV, Init
from tools.arch_vocab import N_VOCAB

__all__ = ["glm4moe", "llama4", "ernie45moe", "deci"]


def _attention(r: Init, t: dict, p: str, *, qkv_bias: bool, qk_norm: bool, hkv: int = HKV) -> None:
    for name, rows in (("attn_q", H * D), ("attn_k", hkv * D), ("attn_v", hkv * D)):
        t[p + name + ".weight"] = r.w(rows, E, std=0.02 if name == "attn_v" else 0.1)
        if qkv_bias:
            t[p + name + ".bias"] = r.b(rows)
    t[p + "attn_output.weight"] = r.w(E, H * D)
    if qk_norm:
        t[p + "attn_q_norm.weight"], t[p + "attn_k_norm.weight"] = r.norm(D), r.norm(D)


def _experts(r: Init, t: dict, p: str, n_exp: int, ff: int, shared: int, probs_b: bool,
             gate: bool = True) -> None:
    t[p + "ffn_gate_inp.weight"] = r.w(n_exp, E, std=0.3)           # routing that differs per token
    if probs_b:                                                      # selection bias, O(the sigmoids)
        t[p + "exp_probs_b.bias"] = r.w(n_exp, std=0.1)
    if gate:
        t[p + "ffn_gate_exps.weight"] = r.w(n_exp, ff, E, std=0.1)
    t[p + "ffn_up_exps.weight"] = r.w(n_exp, ff, E, std=0.1)
    t[p + "ffn_down_exps.weight"] = r.w(n_exp, E, ff)
    if shared:
        t[p + "ffn_gate_shexp.weight"] = r.w(ff * shared, E, std=0.1)
        t[p + "ffn_up_shexp.weight"] = r.w(ff * shared, E, std=0.1)
        t[p + "ffn_down_shexp.weight"] = r.w(E, ff * shared)


def glm4moe(r: Init, *, layers: int = 3, dense_lead: int = 1, n_exp: int = 4, ff: int = 32,
            shared: int = 1, nextn: int = 0, qk_norm: bool = True,
            tied: bool = False) -> dict[str, np.ndarray]:
    """glm4-moe.cpp's layout: q/k/v biases, optional per-head q/k norms, the FFN's norm
    stored as post_attention_norm, ``dense_lead`` dense SwiGLU layers, then routed experts
    with exp_probs_b and ``shared`` shared experts; the last ``nextn`` of ``layers`` blocks
    are next-token-prediction layers (an MoE block plus nextn.eh_proj / enorm / hnorm /
    shared_head_norm)."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(layers):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = r.norm(E)
        _attention(r, t, p, qkv_bias=True, qk_norm=qk_norm)
        t[p + "post_attention_norm.weight"] = r.norm(E)
        if i < dense_lead:
            t[p + "ffn_gate.weight"] = r.w(FF, E, std=0.1)
            t[p + "ffn_up.weight"] = r.w(FF, E, std=0.1)
            t[p + "ffn_down.weight"] = r.w(E, FF)
        else:
            _experts(r, t, p, n_exp, ff, shared, probs_b=True)
        if i >= layers - nextn:
            t[p + "nextn.eh_proj.weight"] = r.w(E, 2 * E)
            t[p + "nextn.enorm.weight"], t[p + "nextn.hnorm.weight"] = r.norm(E), r.norm(E)
            t[p + "nextn.shared_head_norm.weight"] = r.norm(E)
    t["output_norm.weight"] = r.norm(E)
    if not tied:
        t["output.weight"] = r.w(N_VOCAB, E)
    return t


def llama4(r: Init, *, layers: int = 4, moe_step: int = 2, n_exp: int = 4,
           ff: int = 32) -> dict[str, np.ndarray]:
    """llama4.cpp's layout: llama's attention, ffn_norm, and every ``moe_step``-th layer
    ((il + 1) % step == 0) routed experts plus one shared expert of the experts' width."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(layers):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = r.norm(E)
        _attention(r, t, p, qkv_bias=False, qk_norm=False)
        t[p + "ffn_norm.weight"] = r.norm(E)
        if (i + 1) % moe_step == 0:
            _experts(r, t, p, n_exp, ff, 1, probs_b=False)
        else:
            t[p + "ffn_gate.weight"] = r.w(FF, E, std=0.1)
            t[p + "ffn_up.weight"] = r.w(FF, E, std=0.1)
            t[p + "ffn_down.weight"] = r.w(E, FF)
    t["output_norm.weight"] = r.norm(E)
    t["output.weight"] = r.w(N_VOCAB, E)
    return t


def ernie45moe(r: Init, *, layers: int = 3, dense_lead: int = 1, n_exp: int = 4, ff: int = 32,
               shared: int = 2, qk_norm: bool = False, hkv: int = HKV,
               out_bias: bool = True, gate: bool = True) -> dict[str, np.ndarray]:
    """ernie4-5.cpp's MoE layout (and dots1.cpp's, with per-head q/k norms, no GQA and no
    output bias): llama's attention with a biased output, ffn_norm, dense SwiGLU before
    ``dense_lead``, then experts with exp_probs_b and a shared expert of ``shared`` × the
    experts' width."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i in range(layers):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = r.norm(E)
        _attention(r, t, p, qkv_bias=False, qk_norm=qk_norm, hkv=hkv)
        if out_bias:
            t[p + "attn_output.bias"] = r.b(E)
        t[p + "ffn_norm.weight"] = r.norm(E)
        if i < dense_lead:
            t[p + "ffn_gate.weight"] = r.w(FF, E, std=0.1)
            t[p + "ffn_up.weight"] = r.w(FF, E, std=0.1)
            t[p + "ffn_down.weight"] = r.w(E, FF)
        else:
            _experts(r, t, p, n_exp, ff, shared, probs_b=True, gate=gate)
    t["output_norm.weight"] = r.norm(E)
    t["output.weight"] = r.w(N_VOCAB, E)
    return t


# deci's layers: (n_head, n_head_kv, n_ff) -- attention, "linear attention" (wo alone),
# attention without an FFN after it, an FFN without attention
DECI_LAYERS = ((H, HKV, FF), (H, 0, 64), (H, 1, 0), (0, 0, 96))


def deci(r: Init, layers=DECI_LAYERS) -> dict[str, np.ndarray]:
    """deci.cpp's layout (Llama-3_1-Nemotron): per layer, attention (attn_norm, q/k/v/o
    with its own KV head count), wo alone (n_head_kv 0), or nothing (n_head 0); an FFN
    (ffn_norm, gate/up/down of the layer's width) unless n_ff is 0."""
    t: dict[str, np.ndarray] = {"token_embd.weight": r.w(N_VOCAB, E)}
    for i, (h, hkv, ff) in enumerate(layers):
        p = f"blk.{i}."
        if h:
            t[p + "attn_norm.weight"] = r.norm(E)
        if h and hkv:
            for name, rows in (("attn_q", h * D), ("attn_k", hkv * D), ("attn_v", hkv * D)):
                t[p + name + ".weight"] = r.w(rows, E, std=0.02 if name == "attn_v" else 0.1)
            t[p + "attn_output.weight"] = r.w(E, h * D)
        elif h:
            t[p + "attn_output.weight"] = r.w(E, E, std=0.1)
        if ff:
            t[p + "ffn_norm.weight"] = r.norm(E)
            t[p + "ffn_gate.weight"] = r.w(ff, E, std=0.1)
            t[p + "ffn_up.weight"] = r.w(ff, E, std=0.1)
            t[p + "ffn_down.weight"] = r.w(E, ff)
    t["output_norm.weight"] = r.norm(E)
    t["output.weight"] = r.w(N_VOCAB, E)
    return t
