"""The gated delta-net (linear attention) layer of llama.cpp's reserve graph: Qwen3-Next, Qwen3.5.

Why: the qwen3next / qwen35 / qwen35moe hybrids put three linear-attention layers before
each full-attention one; their projections, short convolution and state update sit
between the attention inputs and the output in ggml-alloc's plan, so
``ggscope.memory.graph`` calls this module for those layers.  From llama.cpp as vendored
in llama-cpp-python 0.3.36:

* ``build_layer_attn_linear`` (src/models/qwen3next.cpp, qwen35.cpp): the fused QKV
  projection and the z gate (``build_qkvz`` with ``attn_qkv``/``attn_gate``), beta
  (sigmoid) and the decay gate (softplus of alpha plus ``ssm_dt``, times ``ssm_a``) -
  Qwen3-Next from one ``ssm_ba`` projection split in two, Qwen3.5 from ``ssm_beta`` and
  ``ssm_alpha``; the gated RMS norm against SiLU(z) (``build_norm_gated``) and the
  out-projection;
* ``build_conv_state`` and ``build_recurrent_attn`` (src/models/delta-net-base.cpp): the
  convolution over the previous states concatenated with the new columns (the last ones
  copied back), the L2 norms of q and k (``build_gdn_l2_norm``: RMS norm and scale), the
  K-head repeat where Qwen3-Next always makes it and Qwen3.5 only without the fused op,
  and ``ggml_gated_delta_net`` - on the CPU llama.cpp resolves the fused op as supported
  (``llama_context::resolve_fused_ops``) - whose output holds the tokens' rows and then the
  new state, copied back into the cache.

MiniMax-01's lightning attention (``lightning``, src/models/minimax-01.cpp) is the other
linear attention llama.cpp builds from plain ops over a recurrent state.

Contract: ``gdn(b, cur, il, variant)`` and ``lightning(b, cur, il) -> Tensor`` (``variant`` "qwen3next" or "qwen35")
where ``b`` is ``ggscope.memory.graph``'s builder; ``params(meta, arch)`` reads the sizes.
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g
from ggscope.memory.graph_ssm import build_rs

__all__ = ["params", "gdn", "lightning", "la_inputs"]


def params(meta: dict, arch: str) -> dict:
    def k(name, default=0):
        return int(meta.get(f"{arch}.ssm.{name}", default))
    return {"d_conv": k("conv_kernel"), "d_inner": k("inner_size"), "d_state": k("state_size"),
            "n_v": k("time_step_rank"), "n_k": k("group_count")}


def _l2_norm(x):
    x = g.dup("RMS_NORM", x, (x,))
    return g.dup("SCALE", x, (x,))


def gdn(b, cur, il: int, variant: str):
    gf, ns, T = b.gf, b.ns, b.T
    p = b.gdn
    nst = T // ns
    d_inner, hk, nk, nv = p["d_inner"], p["d_state"], p["n_k"], p["n_v"]
    hv = d_inner // nv
    pre = f"blk.{il}."
    n_embd = b.hp.n_embd
    qkv = g.mul_mat(b.w(pre + "attn_qkv.weight", n_embd, 2 * hk * nk + hv * nv), cur)
    qkv = g.reshape(qkv, qkv.ne[0], nst, ns)
    z = g.mul_mat(b.w(pre + "attn_gate.weight", n_embd, hv * nv), cur)
    if variant == "qwen3next":
        ba = g.mul_mat(b.w(pre + "ssm_ba.weight", n_embd, 2 * nv), cur)
        ba = g.reshape(ba, 2 * nv // nk, nk, nst, ns)
        beta = g.view(ba, (nv // nk, nk, nst, ns), (4,) + ba.nb[1:])
        alpha = g.view(ba, (nv // nk, nk, nst, ns), (4,) + ba.nb[1:], offs=(nv // nk) * 4)
        beta = g.unary(g.cont(beta), "SIGMOID")
        alpha = g.cont(alpha, nv, nst, ns)
    else:
        beta = g.mul_mat(b.w(pre + "ssm_beta.weight", n_embd, nv), cur)
        beta = g.unary(g.reshape(beta, 1, nv, nst, ns), "SIGMOID")
        alpha = g.reshape(g.mul_mat(b.w(pre + "ssm_alpha.weight", n_embd, nv), cur), nv, nst, ns)
    alpha = g.dup("ADD", alpha, (alpha, b.w(pre + "ssm_dt.bias", nv)))
    alpha = g.unary(alpha, "SOFTPLUS")
    gate = g.dup("MUL", alpha, (alpha, b.w(pre + "ssm_a", nv)))
    if variant == "qwen3next":
        beta = g.reshape(beta, 1, nv, nst, ns)
    gate = g.reshape(gate, 1, nv, nst, ns)
    # build_conv_state
    ks = p["d_conv"]
    ch = d_inner + 2 * nk * hk
    conv_all = g.weight((b.hp.n_embd_r, b.n_rs), f"cache_r_l{il}")
    ssm_all = g.weight((b.hp.n_embd_s, b.n_rs), f"cache_s_l{il}")
    conv = g.reshape(build_rs(gf, conv_all, b.hp.n_embd_r, ns, b.n_rs, b.rs), ks - 1, ch, ns)
    conv_in = g.concat(conv, g.transpose(qkv), 0)
    last = g.view(conv_in, (ks - 1, ch, ns), (4, conv_in.nb[1], conv_in.nb[2]), offs=(conv_in.ne[0] - (ks - 1)) * 4)
    gf.expand(g.cpy_into(last, g.view(conv_all, ((ks - 1) * ch, ns), (4, conv_all.nb[1]))))
    state = build_rs(gf, ssm_all, b.hp.n_embd_s, ns, b.n_rs, b.rs)
    state = g.reshape(state, hv, hv, nv, ns)
    mix = g.unary(g.op("SSM_CONV", (ch, nst, ns), (conv_in, b.w(pre + "ssm_conv1d.weight", ks, ch))), "SILU")
    nb1 = 4 * (2 * hk * nk + hv * nv)
    q = g.view(mix, (hk, nk, nst, ns), (4, hk * 4, nb1, nb1 * nst))
    k = g.view(mix, (hk, nk, nst, ns), (4, hk * 4, nb1, nb1 * nst), offs=hk * nk * 4)
    v = g.view(mix, (hv, nv, nst, ns), (4, hv * 4, nb1, nb1 * nst), offs=2 * hk * nk * 4)
    q, k = _l2_norm(q), _l2_norm(k)
    if nk != nv and variant == "qwen3next":
        rf = nv // nk
        q = g.reshape(g.op("REPEAT", (hk, rf, nk, nst * ns), (g.reshape(q, hk, 1, nk, nst * ns),)), hk, nv, nst, ns)
        k = g.reshape(g.op("REPEAT", (hk, rf, nk, nst * ns), (g.reshape(k, hk, 1, nk, nst * ns),)), hk, nv, nst, ns)
    # build_recurrent_attn with the fused op (K = 1: the final state only)
    res = g.op("GATED_DELTA_NET", (hv * nv, nst * ns + hv * ns), (q, k, v, gate, beta, state))
    out = g.view(res, (hv, nv, nst, ns))
    new_state = g.view(res, (hv, hv, nv, ns), offs=hv * nv * nst * ns * 4)
    gf.expand(g.cpy_into(new_state, g.view(ssm_all, (b.hp.n_embd_s, ns), (4, ssm_all.nb[1]))))
    z2 = g.reshape(z, hv, nv, nst, ns)
    normed = b.norm(out, b.w(pre + "ssm_norm.weight", hv))
    y = g.dup("MUL", normed, (normed, g.unary(z2, "SILU")))
    y = g.reshape(y, hv * nv, nst, ns)
    cur = g.mul_mat(b.w(pre + "ssm_out.weight", hv * nv, n_embd), y)
    return g.reshape(cur, n_embd, nst * ns)


def la_inputs(b):
    """MiniMax-01's lightning-attention inputs (src/models/minimax-01.cpp ``llm_graph_input_la``):
    the per-head slopes and the q, k and diagonal decays of the micro-batch."""
    if "la" not in b.attn_cache:
        n_head, nst, ns = b.hp.n_head[0], b.T // b.ns, b.ns
        b.attn_cache["la"] = (g.new_input((n_head,), g.F32, "inp_slopes"),
                              g.new_input((1, n_head, nst, ns), g.F32, "inp_q_decay"),
                              g.new_input((1, n_head, nst, ns), g.F32, "inp_k_decay"),
                              g.new_input((nst, nst, n_head, ns), g.F32, "inp_diag_decay"))
    return b.attn_cache["la"]


def lightning(b, cur, il: int):
    """MiniMax-01's lightning-attention layer (the recurrent branch of its graph): fused QKV
    (SiLU), the decays scaled per layer, the intra-block QK with the diagonal decay and the
    inter-block product with the old state, the state decayed and updated (copied back), the
    RMS-normed output gated by a sigmoid, the out-projection."""
    gf, hp, ns, T = b.gf, b.hp, b.ns, b.T
    nst, n_embd, n_head, d, pre = T // ns, hp.n_embd, hp.n_head[il], hp.head_k, f"blk.{il}."
    slopes, q_dec, k_dec, diag_dec = la_inputs(b)
    r_all = g.weight((hp.n_embd_r, b.n_rs), f"cache_r_l{il}")
    gf.expand(build_rs(gf, r_all, hp.n_embd_r, ns, b.n_rs, b.rs))
    slope_rate = g.dup("SCALE", slopes, (slopes,))
    cur = g.reshape(cur, n_embd, nst, 1, ns)
    qkv = g.unary(g.mul_mat(b.w(pre + "attn_qkv.weight", n_embd, 3 * d * n_head), cur), "SILU")
    qkv = g.reshape(qkv, 3 * d, n_head, nst, ns)
    q, k, v = (g.view(qkv, (d, n_head, nst, ns), (4,) + qkv.nb[1:], offs=i * 4 * d) for i in range(3))
    s_all = g.weight((hp.n_embd_s, b.n_rs), f"cache_s_l{il}")
    kv_old = g.reshape(build_rs(gf, s_all, hp.n_embd_s, ns, b.n_rs, b.rs), d, d, n_head, ns)

    def decay(x):
        return g.unary(g.dup("SCALE", x, (x,)), "EXP")
    qd, kd, dd = decay(q_dec), decay(k_dec), decay(diag_dec)
    q_s = g.dup("MUL", q, (q, qd))
    none_diag = g.mul_mat(kv_old, g.permute(q_s, (0, 2, 1, 3)))
    qk = g.mul_mat(g.permute(k, (0, 2, 1, 3)), g.permute(q, (0, 2, 1, 3)))
    qk = g.dup("MUL", qk, (qk, dd))
    v_t = g.cont(g.permute(v, (1, 2, 0, 3)))
    diag = g.mul_mat(v_t, qk)
    out = g.dup("ADD", none_diag, (none_diag, diag))
    gf.expand(out)
    neg = g.dup("SCALE", slope_rate, (slope_rate,))
    block = g.reshape(g.unary(neg, "EXP"), 1, 1, n_head)
    kv_old_s = g.dup("MUL", kv_old, (kv_old, block))
    k_after = g.dup("MUL", k, (k, kd))
    kv_cur = g.mul_mat(g.cont(g.permute(k_after, (1, 2, 0, 3))), v_t)
    kv_new = g.dup("ADD", kv_old_s, (kv_old_s, kv_cur))
    gf.expand(g.cpy_into(kv_new, g.view(s_all, (hp.n_embd_s * ns,))))
    out = g.cont(g.permute(out, (0, 2, 1, 3)))
    out = g.reshape(out, out.ne[0] * out.ne[1], out.ne[2], 1, out.ne[3])
    out = b.norm(out, b.w(pre + "attn_norm_2.weight", d * n_head))
    gate = g.unary(g.mul_mat(b.w(pre + "attn_gate.weight", n_embd, d * n_head), cur), "SIGMOID")
    cur = g.dup("MUL", gate, (gate, out))
    cur = g.mul_mat(b.w(pre + "attn_output.weight", d * n_head, n_embd), cur)
    return g.reshape(cur, cur.ne[0], nst * ns)
