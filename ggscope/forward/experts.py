"""Routed experts: llama.cpp's ``build_moe_ffn`` and the shared experts beside it.

Why a module of its own: ``blocks.py`` holds what every decoder block computes; the
mixture-of-experts FFN -- routing by softmax or sigmoid, top-k, renormalised and scaled
weights, always-on shared experts (deepseek2) and the sigmoid gate qwen2moe puts on its
shared expert -- is one mechanism of its own, used by every row of ``traits.TRAITS``
whose file carries an ``ffn_gate_inp`` router.

Contract: ``_moe(config, layer, h [T, C]) -> [T, C]`` float32, following ggml-cpu's
numerics as the rest of the engine does (``decoder.py``).
"""
from __future__ import annotations

import numpy as np

from ggscope.forward.blocks import Layer, _dense_ffn
from ggscope.forward.matmul import linear as _lin
from ggscope.forward.ops import sigmoid, silu
from ggscope.forward.traits import Config

__all__ = ["_moe"]


def _moe(c: Config, L: Layer, h: np.ndarray) -> np.ndarray:
    """llama-graph.cpp build_moe_ffn: route each row to its top-k experts.

    probs = softmax or sigmoid of the router logits; the top k are chosen by probs (+
    exp_probs_b when present, which does not enter the weights); their probs are
    renormalised to sum 1 where the architecture says so (sum clamped as llama.cpp
    does), scaled by expert_weights_scale, and weight each expert's SwiGLU output.
    """
    logits = _lin(h, L.router)                                         # [T, E]
    if c.moe_gating == "sigmoid":
        probs = sigmoid(logits)
    else:
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    select = probs + L.router_bias if L.router_bias is not None else probs
    k = c.n_expert_used
    top = np.argsort(-select, axis=-1, kind="stable")[:, :k]          # [T, k]
    weights = np.take_along_axis(probs, top, axis=-1)                  # [T, k]
    if c.moe_norm:
        weights = weights / np.maximum(weights.sum(axis=-1, keepdims=True), np.float32(6.103515625e-5))
    if c.moe_scale:
        weights = weights * np.float32(c.moe_scale)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        row = h[t:t + 1]
        for j in range(k):
            e_id = top[t, j]
            y = _lin(silu(_lin(row, L.gate_exps[e_id])) * _lin(row, L.up_exps[e_id]), L.down_exps[e_id])
            out[t] += weights[t, j] * y[0]
    if L.down_shexp is not None:
        shared = _dense_ffn(c, h, L.gate_shexp, None, L.up_shexp, None, L.down_shexp, None)
        if L.shexp_gate is not None:
            shared = shared * _shexp_gate(h, L.shexp_gate)
        out = out + shared
    return out


def _shexp_gate(h: np.ndarray, gate: np.ndarray) -> np.ndarray:
    """qwen2moe.cpp's shared-expert gate: g = ffn_gate_inp_shexp · h per row, then
    ``ggml_div(ggml_silu(g), g)`` -- sigmoid(g) as silu(g) / g, which llama.cpp computes
    (so a g of exactly 0 gives NaN there too).  [T, 1]."""
    g = _lin(h, gate[None, :])                                         # [T, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (silu(g) / g).astype(np.float32)
