"""The mixture-of-experts feed-forward of llama.cpp's reserve graph (``build_moe_ffn``).

Why: in MoE models the expert FFN's activations (``n_ff_exp x n_expert_used`` per token,
the router's probabilities and the selected experts' weights) decide the layers' peak;
``ggscope.memory.graph`` calls this module for a layer whose file has ``ffn_gate_inp``.
From llama.cpp as vendored in llama-cpp-python 0.3.36, src/llama-graph.cpp
``build_moe_ffn`` with the softmax gating, SiLU and the weights normalised (``norm_w``),
as src/models/llama.cpp, qwen3moe.cpp, qwen3next.cpp and qwen35moe.cpp call it (jamba.cpp
without normalising the weights): router
logits, soft-max, the top ``n_expert_used`` (``ggml_argsort_top_k``: an argsort and a
view), their probabilities gathered, summed, clamped and divided; the up and gate
projections of the selected experts (``ggml_mul_mat_id``), SwiGLU, the down projection,
times the weights, then the experts' rows summed one view at a time (each step expanded
into the graph).  A shared expert (``ffn_*_shexp``) is a plain ``build_ffn`` beside it,
gated by a sigmoid of ``ffn_gate_inp_shexp`` when the file has that tensor (Qwen3-Next,
Qwen3.5-MoE).  gpt-oss's variant: router and expert biases (``ggml_add_id``), the
soft-max over the selected logits only (``SOFTMAX_WEIGHT`` gating) and SwiGLU-OAI.

Contract: ``moe(b, cur, il) -> Tensor`` where ``b`` is ``ggscope.memory.graph``'s builder.
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g

__all__ = ["moe", "n_expert"]


def n_expert(b) -> int:
    return int(b.meta.get(f"{b.hp.arch}.expert_count", 0))


def _mul_mat_id(w, cur, ids, n_out):
    """ggml_mul_mat_id(as, b, ids): [as->ne[1], ids->ne[0], b->ne[2]], f32."""
    return g.op("MUL_MAT_ID", (n_out, ids.ne[0], cur.ne[2], 1), (w, cur, ids))


def _add_id(b, name, x, ids):
    """ggml_add_id: a per-expert bias, in place (ADD_ID is one of ggml-alloc's in-place ops)."""
    bias = b.w(name, x.ne[0], 1)
    return x if bias is None else g.dup("ADD_ID", x, (x, bias, ids))


def _gating(b) -> tuple[str, bool]:
    """(gating function, norm_w): the architecture's, or for deepseek2 the file's
    ``expert_gating_func`` (1 softmax, 2 sigmoid, 3 softmax of the chosen weights; unset:
    sigmoid for 47/48 layers over 154880 tokens, else softmax, as load_arch_hparams says)
    and ``expert_weights_norm``."""
    spec, hp, meta = b.spec, b.hp, b.meta
    if spec.get("moe_gating") != "file":
        return spec.get("moe_gating", "softmax"), spec.get("moe_norm_w", True)
    func = int(meta.get(f"{hp.arch}.expert_gating_func", 0) or 0)
    if func == 0:
        func = 2 if hp.n_layer in (47, 48) and hp.n_vocab == 154880 else 1
    return ({1: "softmax", 2: "sigmoid", 3: "softmax_weight"}.get(func, "softmax"),
            bool(meta.get(f"{hp.arch}.expert_weights_norm", False)))


def moe(b, cur, il: int):
    hp, gf = b.hp, b.gf
    pre = f"blk.{il}."
    n_embd, T = cur.ne[0], cur.ne[1]
    n_exp, n_used, n_ff = n_expert(b), hp.n_expert_used, hp.n_ff_exp or hp.n_ff
    logits = b.lin(b.w(pre + "ffn_gate_inp.weight", n_embd, n_exp), cur, b.w(pre + "ffn_gate_inp.bias", n_exp))
    gating, norm_w = _gating(b)
    softmax_weight = gating == "softmax_weight"
    probs = (logits if softmax_weight else g.unary(logits, "SIGMOID") if gating == "sigmoid" else
             g.dup("SOFT_MAX", logits, (logits,)))
    probs_b = b.w(pre + "exp_probs_b.bias", n_exp)
    selection = g.dup("ADD", probs, (probs, probs_b)) if probs_b is not None else probs
    sorted_ = g.op("ARGSORT", selection.ne, (selection,), g.I32)
    selected = g.view(sorted_, (n_used, sorted_.ne[1], sorted_.ne[2], sorted_.ne[3]), sorted_.nb)
    weights = g.get_rows(g.reshape(probs, 1, n_exp, T), selected)
    if softmax_weight:                                  # LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT
        weights = g.reshape(weights, n_used, T)
        weights = g.dup("SOFT_MAX", weights, (weights,))
        weights = g.reshape(weights, 1, n_used, T)
    if norm_w:                                          # norm_w: the weights summed to one
        weights = g.reshape(weights, n_used, T)
        wsum = g.op("SUM_ROWS", (1, T), (weights,))
        wsum = g.dup("CLAMP", wsum, (wsum,))
        weights = g.dup("DIV", weights, (weights, wsum))
        weights = g.reshape(weights, 1, n_used, T)
    w_scale = float(b.meta.get(f"{hp.arch}.expert_weights_scale", 0) or 0)
    if w_scale not in (0.0, 1.0):
        weights = g.dup("SCALE", weights, (weights,))
    gf.expand(weights)
    x = g.reshape(cur, n_embd, 1, T)
    up = _add_id(b, pre + "ffn_up_exps.bias", _mul_mat_id(b.w(pre + "ffn_up_exps.weight", n_embd, n_ff, n_exp), x,
                                                           selected, n_ff), selected)
    gate = _add_id(b, pre + "ffn_gate_exps.bias", _mul_mat_id(b.w(pre + "ffn_gate_exps.weight", n_embd, n_ff, n_exp),
                                                               x, selected, n_ff), selected)
    act = g.glu(gate, up, b.spec.get("moe_act", "SWIGLU"))
    experts = _mul_mat_id(b.w(pre + "ffn_down_exps.weight", n_ff, n_embd, n_exp), act, selected, n_embd)
    experts = _add_id(b, pre + "ffn_down_exps.bias", experts, selected)
    experts = g.dup("MUL", experts, (experts, weights))
    gf.expand(experts)
    views = []
    for i in range(n_used):
        v = g.view(experts, (n_embd, T), (4, experts.nb[2]), offs=i * experts.nb[1])
        gf.expand(v)
        views.append(v)
    out = views[0]
    for v in views[1:]:
        out = g.dup("ADD", out, (out, v))
        gf.expand(out)
    if n_used == 1:
        out = g.cont(out)
    if b.w(pre + "ffn_up_shexp.weight", 1) is None:
        return out
    n_ff_sh = int(b.meta.get(f"{hp.arch}.expert_shared_feed_forward_length", 0)) or n_ff
    up = g.mul_mat(b.w(pre + "ffn_up_shexp.weight", n_embd, n_ff_sh), cur)
    gate = g.mul_mat(b.w(pre + "ffn_gate_shexp.weight", n_embd, n_ff_sh), cur)
    shexp = g.mul_mat(b.w(pre + "ffn_down_shexp.weight", n_ff_sh, n_embd), g.glu(gate, up))
    gate_w = b.w(pre + "ffn_gate_inp_shexp.weight", n_embd, 1)
    if gate_w is not None:
        sg = g.mul_mat(gate_w, cur)
        sg = g.unary(sg, "SIGMOID")
        shexp = g.dup("MUL", shexp, (shexp, sg))
    return g.dup("ADD", out, (out, shexp))
