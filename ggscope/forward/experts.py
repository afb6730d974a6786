"""Routed experts: llama.cpp's ``build_moe_ffn`` and the shared experts beside it.

Why a module of its own: ``blocks.py`` holds what every decoder block computes; the
mixture-of-experts FFN -- routing by softmax or sigmoid, top-k, renormalised and scaled
weights, always-on shared experts (deepseek2) and the sigmoid gate qwen2moe puts on its
shared expert -- is one mechanism of its own, used by every row of ``traits.TRAITS``
whose file carries an ``ffn_gate_inp`` router -- with DeepSeek-V3's group-limited
top-k where the file splits the experts into groups.

Contract: ``_moe(config, layer, h [T, C]) -> [T, C]`` float32, following ggml-cpu's
numerics as the rest of the engine does (``decoder.py``).
"""
from __future__ import annotations

import numpy as np

from ggscope.forward import WeightError
from ggscope.forward import hparams as _hp
from ggscope.forward.blocks import Layer, _dense_ffn
from ggscope.forward.matmul import linear as _lin
from ggscope.forward.ops import sigmoid, silu
from ggscope.forward.traits import Config

__all__ = ["_moe", "load_moe"]


def _moe(c: Config, L: Layer, h: np.ndarray) -> np.ndarray:
    """llama-graph.cpp build_moe_ffn: route each row to its top-k experts.

    probs = softmax or sigmoid of the router logits; the top k are chosen by probs (+
    exp_probs_b when present, which does not enter the weights); their probs are
    renormalised to sum 1 where the architecture says so (sum clamped as llama.cpp
    does), scaled by expert_weights_scale, and weight each expert's SwiGLU output.
    """
    logits = _lin(h, L.router)                                         # [T, E]
    if L.router_b is not None:
        logits = logits + L.router_b
    if c.moe_gating == "sigmoid":
        probs = sigmoid(logits)
    elif c.moe_gating == "softmax_weight":                             # gpt-oss: softmax after top-k
        probs = logits
    elif c.moe_gating == "sigmoid_before":                             # llama4: top-k by the logits
        probs = sigmoid(logits)
    else:
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    select = probs + L.router_bias if L.router_bias is not None else probs
    if c.moe_gating == "sigmoid_before":
        select = logits
    if c.moe_groups[0] > 1:
        select = _best_groups(select, *c.moe_groups)
    k = c.n_expert_used
    top = np.argsort(-select, axis=-1, kind="stable")[:, :k]          # [T, k]
    weights = np.take_along_axis(probs, top, axis=-1)                  # [T, k]
    if c.moe_gating == "softmax_weight":
        w = np.exp(weights - weights.max(axis=-1, keepdims=True))
        weights = (w / w.sum(axis=-1, keepdims=True)).astype(np.float32)
    if c.moe_norm:
        weights = weights / np.maximum(weights.sum(axis=-1, keepdims=True), np.float32(6.103515625e-5))
    if c.moe_scale:
        weights = weights * np.float32(c.moe_scale)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        row = h[t:t + 1]
        for j in range(k):
            e_id = top[t, j]
            if c.moe_gating == "sigmoid_before":                       # weight_before_ffn
                out[t] += _expert(c, L, (row * weights[t, j]).astype(np.float32), e_id)[0]
            else:
                out[t] += weights[t, j] * _expert(c, L, row, e_id)[0]
    if L.down_shexp is not None:
        shared = _dense_ffn(c, h, L.gate_shexp, None, L.up_shexp, None, L.down_shexp, None)
        if L.shexp_gate is not None:
            shared = shared * _shexp_gate(h, L.shexp_gate)
        out = out + shared
    return out


def _best_groups(select: np.ndarray, groups: int, used: int) -> np.ndarray:
    """build_moe_ffn's group-limited routing (DeepSeek-V3): the experts split into
    ``groups`` consecutive groups, each scored by the sum of its two best selection values
    (argsort_top_k 2, get_rows, sum_rows), the ``used`` best groups kept and the others'
    experts set to -inf before the top-k.  [T, E]."""
    T, E = select.shape
    grouped = select.reshape(T, groups, E // groups)
    best2 = -np.sort(-grouped, axis=-1, kind="stable")[..., :2]
    score = (best2[..., 0] + best2[..., 1]) if best2.shape[-1] == 2 else best2[..., 0]
    keep = np.argsort(-score, axis=-1, kind="stable")[:, :used]                  # [T, used]
    mask = np.zeros((T, groups), bool)
    np.put_along_axis(mask, keep, True, axis=-1)
    return np.where(np.repeat(mask, E // groups, axis=-1), select, np.float32(-np.inf))


def _expert(c: Config, L: Layer, row: np.ndarray, e: int) -> np.ndarray:
    """One expert's FFN on one row: SwiGLU, or gpt-oss's -- biased experts and ggml's
    swiglu_oai: x = min(gate, 7), y = clamp(up, -7, 7), x / (1 + expf(-1.702 x)) (y + 1)."""
    u = _lin(row, L.up_exps[e])
    if L.gate_exps is None:                       # no gate (ernie4_5-moe may): silu(up)
        return _lin(silu(u), L.down_exps[e])
    g = _lin(row, L.gate_exps[e])
    if L.gate_exps_b is not None:
        g, u = g + L.gate_exps_b[e], u + L.up_exps_b[e]
    if c.traits.expert_act == "oai":
        x, y = np.minimum(g, np.float32(7)), np.clip(u, np.float32(-7), np.float32(7))
        a = (x / (np.float32(1) + np.exp(np.float32(1.702) * -x)) * (y + np.float32(1))).astype(np.float32)
    else:
        a = silu(g) * u
    y = _lin(a, L.down_exps[e])
    return y + L.down_exps_b[e] if L.down_exps_b is not None else y


def _shexp_gate(h: np.ndarray, gate: np.ndarray) -> np.ndarray:
    """qwen2moe.cpp's shared-expert gate: g = ffn_gate_inp_shexp · h per row, then
    ``ggml_div(ggml_silu(g), g)`` -- sigmoid(g) as silu(g) / g, which llama.cpp computes
    (so a g of exactly 0 gives NaN there too).  [T, 1]."""
    g = _lin(h, gate[None, :])                                         # [T, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (silu(g) / g).astype(np.float32)


def load_moe(L: Layer, c: Config, i: int, req, opt, width, path: str) -> None:
    """The routed (and shared) experts of block i, as llama.cpp's loaders create them."""
    C, E = c.n_embd, c.n_expert
    if not E or not c.n_expert_used:
        raise WeightError(f"{path}: layer {i} routes to experts but expert_count / "
                          f"expert_used_count are missing")
    F = width("blk.{i}.ffn_down_exps.weight", i, 0)
    L.router = req("blk.{i}.ffn_gate_inp.weight", i, (E, C))
    L.router_bias = opt("blk.{i}.exp_probs_b.bias", i, (E,))
    gate = opt if _hp.optional_tensor(c.arch, "FFN_GATE_EXPS") else req
    L.gate_exps = gate("blk.{i}.ffn_gate_exps.weight", i, (E, F, C))
    L.up_exps = req("blk.{i}.ffn_up_exps.weight", i, (E, F, C))
    L.down_exps = req("blk.{i}.ffn_down_exps.weight", i, (E, C, F))
    if c.traits.expert_bias:                      # gpt-oss: the router and every expert biased
        L.router_b = req("blk.{i}.ffn_gate_inp.bias", i, (E,))
        L.gate_exps_b = req("blk.{i}.ffn_gate_exps.bias", i, (E, F))
        L.up_exps_b = req("blk.{i}.ffn_up_exps.bias", i, (E, F))
        L.down_exps_b = req("blk.{i}.ffn_down_exps.bias", i, (E, C))
    down = opt("blk.{i}.ffn_down_shexp.weight", i, None)
    if down is not None:
        if down.ndim != 2 or down.shape[0] != C:
            raise WeightError(f"{path}: blk.{i}.ffn_down_shexp has numpy shape {down.shape}, "
                              f"expected ({C}, n_ff_shexp)")
        Fs = down.shape[1]
        L.down_shexp = down
        L.gate_shexp = req("blk.{i}.ffn_gate_shexp.weight", i, (Fs, C))
        L.up_shexp = req("blk.{i}.ffn_up_shexp.weight", i, (Fs, C))
        L.shexp_gate = opt("blk.{i}.ffn_gate_inp_shexp.weight", i, (C,))
