"""The attention of llama.cpp's reserve graph, as shapes: inputs, projections, the KV store, attention.

Why: ``ggscope.memory.graph`` builds the graph ggml-alloc is replayed over; attention is the
part every decoder block shares and where the KQ masks, the cache views and the rotations
enter.  From llama.cpp as vendored in llama-cpp-python 0.3.36, src/llama-graph.cpp and
src/llama-kv-cache.cpp:

* ``build_attn_inp_kv`` / ``build_attn_inp_kv_iswa``: per cache the K and V row indices
  (i64; V per element of ``n_embd_v_gqa_max`` without flash attention, the V cache being
  transposed), the KQ mask ``n_kv x n_tokens`` (f16 with flash attention) and, with a
  quantized cache, the Hadamard rotations (``build_input_k_rot``: the largest power of two
  from 64 dividing the head size; ``build_input_v_rot``: 64);
* ``build_qkv``: separate Q/K/V projections with optional biases and clamp, or one fused
  product viewed three ways; optional Q/K norms, RoPE, Q scales (Gemma, Phi-3); Qwen3-Next
  and Qwen3.5's gated Q (``build_layer_attn``);
* ``build_attn``: the rotations (``llama_mul_mat_hadamard``), the expands (Q, V, K - or Q, K,
  V in the iSWA variant), the stores ``cpy_k``/``cpy_v`` as SET_ROWS into cache views (V
  made contiguous or padded first where llama.cpp does), ``build_attn_mha`` (flash
  attention, or KQ, soft-cap, soft-max in place and KQV), the output projection.

Contract: functions over ``ggscope.memory.graph``'s builder ``b``: ``attention(b, il, cur,
pos) -> Tensor`` (the projected attention output) and ``attn_inputs(b, cache)``.
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g

__all__ = ["attention", "attn_inputs", "QUANTIZED"]

QUANTIZED = {"q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}


def attn_inputs(b, cache: str):
    """build_attn_inp_kv_impl's inputs for one cache (created once; they join the graph
    where first used): K/V row indices, the mask over the cache's cells, the rotations."""
    if cache not in b.attn_cache:
        T, d = b.T, b.hp.head_k
        n_gqa_max = max(b.hp.n_embd_v_gqa(il) for il in range(b.hp.n_layer))
        k_idxs = g.new_input((T,), g.I64, "attn_inp_k_idxs")
        v_idxs = g.new_input((T if b.fa else T * n_gqa_max,), g.I64, "attn_inp_v_idxs")
        mask = g.new_input((b.n_kv[cache], T // b.streams, 1, b.streams), g.F16 if b.fa else g.F32,
                           "attn_inp_kq_mask")
        k_rot = v_rot = None
        if b.hp.hybrid and b.iswa:                      # build_inp_mem_hybrid_iswa builds no rotations
            pass
        elif b.type_k in QUANTIZED and d % 64 == 0:
            nrot = 64
            while d % (nrot * 2) == 0:
                nrot *= 2
            k_rot = g.new_input((nrot, nrot), g.F32, "attn_inp_k_rot")
        if b.type_v in QUANTIZED and d % 64 == 0 and not (b.hp.hybrid and b.iswa):
            v_rot = g.new_input((64, 64), g.F32, "attn_inp_v_rot")
        b.attn_cache[cache] = (k_idxs, v_idxs, mask, k_rot, v_rot)
    return b.attn_cache[cache]


def attention(b, il, cur, pos):
    """build_qkv, optional Q/K norms, RoPE, build_attn, the output projection."""
    hp, T, pre = b.hp, b.T, f"blk.{il}."
    n_embd, n_head, n_head_kv, d = hp.n_embd, hp.n_head[il], hp.n_head_kv[il], hp.head_k
    n_gqa = d * n_head_kv
    if b.spec.get("q_gate"):
        return gated_attention(b, il, cur, pos)
    clamp = b.key("attention.clamp_kqv") > 0         # hparams.f_clamp_kqv
    wqkv = b.w(pre + "attn_qkv.weight", n_embd, d * n_head + 2 * n_gqa)
    if wqkv is not None:                                # build_qkv's fused path: views of one product
        qkv = b.lin(wqkv, cur, b.w(pre + "attn_qkv.bias", d * n_head + 2 * n_gqa))
        qkv = g.dup("CLAMP", qkv, (qkv,)) if clamp else qkv
        nb = (4, 4 * d, qkv.nb[1])
        q = g.view(qkv, (d, n_head, T), nb)
        k = g.view(qkv, (d, n_head_kv, T), nb, offs=4 * d * n_head)
        v = g.view(qkv, (d, n_head_kv, T), nb, offs=4 * (d * n_head + n_gqa))
    else:
        q = b.lin(b.w(pre + "attn_q.weight", n_embd, d * n_head), cur, b.w(pre + "attn_q.bias", d * n_head))
        q = g.dup("CLAMP", q, (q,)) if clamp else q
        k = b.lin(b.w(pre + "attn_k.weight", n_embd, n_gqa), cur, b.w(pre + "attn_k.bias", n_gqa))
        k = g.dup("CLAMP", k, (k,)) if clamp else k
        v = b.lin(b.w(pre + "attn_v.weight", n_embd, n_gqa), cur, b.w(pre + "attn_v.bias", n_gqa))
        v = g.dup("CLAMP", v, (v,)) if clamp else v
        q, k, v = g.reshape(q, d, n_head, T), g.reshape(k, d, n_head_kv, T), g.reshape(v, d, n_head_kv, T)
    qk_norm = b.spec.get("qk_norm")
    if qk_norm == "2d":                                 # mpt: LayerNorm over whole rows, if present
        qk_norm = None
        if pre + "attn_q_norm.weight" in b.names:
            q = g.reshape(b.norm(g.reshape(q, d * n_head, T), b.w(pre + "attn_q_norm.weight", d * n_head),
                                    b.w(pre + "attn_q_norm.bias", d * n_head), "NORM"), d, n_head, T)
            k = g.reshape(b.norm(g.reshape(k, n_gqa, T), b.w(pre + "attn_k_norm.weight", n_gqa),
                                    b.w(pre + "attn_k_norm.bias", n_gqa), "NORM"), d, n_head_kv, T)
    if qk_norm:
        q = b.norm(q, b.w(pre + "attn_q_norm.weight", d))
    if pos is not None:
        q = g.dup("ROPE", q, (q, pos))
    if qk_norm:
        k = b.norm(k, b.w(pre + "attn_k_norm.weight", d))
    if pos is not None:
        k = g.dup("ROPE", k, (k, pos))
    if b.spec.get("q_scale") or b.spec["block"] == "gemma":   # ggml_scale(Qcur, ...)
        q = g.dup("SCALE", q, (q,))
    cur = kv_attn(b, il, q, k, v)
    return b.lin(b.w(pre + "attn_output.weight", d * n_head, n_embd), cur,
                    b.w(pre + "attn_output.bias", n_embd))


def gated_attention(b, il, cur, pos):
    """Qwen3-Next / Qwen3.5 attention (build_layer_attn): Q and a sigmoid gate in one
    projection, Q/K norms, RoPE, attention without an output weight, gate, projection."""
    hp, T, pre = b.hp, b.T, f"blk.{il}."
    n_embd, n_head, n_head_kv, d = hp.n_embd, hp.n_head[il], hp.n_head_kv[il], hp.head_k
    q_full = b.lin(b.w(pre + "attn_q.weight", n_embd, 2 * d * n_head), cur,
                      b.w(pre + "attn_q.bias", 2 * d * n_head))
    k = b.lin(b.w(pre + "attn_k.weight", n_embd, d * n_head_kv), cur, b.w(pre + "attn_k.bias", d * n_head_kv))
    v = b.lin(b.w(pre + "attn_v.weight", n_embd, d * n_head_kv), cur, b.w(pre + "attn_v.bias", d * n_head_kv))
    if b.spec["q_gate"] == "4d":
        q_full = g.reshape(q_full, 2 * d, n_head, T, 1)
    nb = (4, 2 * d * 4, 2 * d * n_head * 4)
    q = g.view(q_full, (d, n_head, T), nb)
    gate = g.view(q_full, (d, n_head, T), nb, offs=d * 4)
    k, v = g.reshape(k, d, n_head_kv, T), g.reshape(v, d, n_head_kv, T)
    q = b.norm(q, b.w(pre + "attn_q_norm.weight", d))
    k = b.norm(k, b.w(pre + "attn_k_norm.weight", d))
    q, k = g.dup("ROPE", q, (q, pos)), g.dup("ROPE", k, (k, pos))
    cur = kv_attn(b, il, q, k, v)
    gate = g.cont(gate, d * n_head, T)
    gate = g.unary(gate, "SIGMOID")
    return g.mul_mat(b.w(pre + "attn_output.weight", d * n_head, n_embd), g.dup("MUL", cur, (cur, gate)))


def kv_attn(b, il, q, k, v):
    """llm_graph_context::build_attn (the KV-cache variant) and build_attn_mha."""
    gf, hp, T, ns = b.gf, b.hp, b.T, b.streams
    cache = "kv (swa)" if b.iswa and hp.is_swa[il] else "kv"
    n_kv = b.n_kv[cache]
    k_idxs, v_idxs, mask, k_rot, v_rot = attn_inputs(b, cache)
    sink_w = b.w(f"blk.{il}.attn_sinks.weight", hp.n_head[il])       # gpt-oss: ggml_*_add_sinks
    sinks = (sink_w,) if sink_w is not None else ()
    d, n_head_kv = hp.head_k, hp.n_head_kv[il]
    n_gqa = d * n_head_kv
    n_gqa_max = max(hp.n_embd_v_gqa(i) for i in range(hp.n_layer))
    if k_rot is not None:
        q, k = g.hadamard(q, k_rot), g.hadamard(k, k_rot)
    if v_rot is not None:
        v = g.hadamard(v, v_rot)
    for t in ((q, k, v) if b.iswa else (q, v, k)):    # the iSWA variant expands K before V
        gf.expand(t)
    ck = g.weight((n_gqa, n_kv, ns), f"cache_k_l{il}", *g.cache_type(b.type_k))
    cv = g.weight((n_gqa if b.fa else n_gqa_max, n_kv, ns), f"cache_v_l{il}", *g.cache_type(b.type_v))
    # cpy_k / cpy_v: SET_ROWS into the caches (external: nothing placed here)
    kv2 = g.view(k, (n_gqa, T), (k.esize, k.nb[2]))
    gf.expand(g.set_rows(g.reshape(ck, n_gqa, n_kv * ns) if ns > 1 else ck, kv2, k_idxs))
    if b.fa:
        vv = g.view(v, (n_gqa, T), (v.esize, v.nb[2]))
        dst = g.reshape(cv, n_gqa, n_kv * ns) if ns > 1 else cv
    else:
        vv = g.reshape(v, n_gqa, T) if v.nb[2] == v.esize * n_gqa else g.cont(v, n_gqa, T)
        if n_gqa < n_gqa_max:
            vv = g.op("PAD", (n_gqa_max, T), (vv,))
        vv = g.reshape(vv, 1, g.nelements(vv))
        dst = g.reshape(cv, 1, g.nelements(cv))
    gf.expand(g.set_rows(dst, vv, v_idxs))
    kk = g.view(ck, (d, n_head_kv, n_kv, ns), (ck.nb[0], ck.nb[1] * d // n_gqa, ck.nb[1], ck.nb[2]))
    if b.fa:                                         # get_k / get_v (v transposed without FA)
        vk = g.view(cv, (d, n_head_kv, n_kv, ns), (cv.nb[0], cv.nb[1] * d // n_gqa, cv.nb[1], cv.nb[2]))
    else:
        vk = g.view(cv, (n_kv, n_head_kv, d, ns), (cv.nb[0], cv.esize * n_kv * d, cv.esize * n_kv, cv.nb[2]))
    qv = g.view(q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns), (q.nb[0], q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
    qp, kp, vp = g.permute(qv, (0, 2, 1, 3)), g.permute(kk, (0, 2, 1, 3)), g.permute(vk, (0, 2, 1, 3))
    if b.fa:
        if b.type_k == "f32":
            kp = g.cast(kp, g.F16)
        if b.type_v == "f32":
            vp = g.cast(vp, g.F16)
        cur = g.op("FLASH_ATTN_EXT", (vp.ne[0], qp.ne[2], qp.ne[1], qp.ne[3]), (qp, kp, vp, mask) + sinks)
        cur = g.reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
    else:
        kq = g.mul_mat(kp, qp, "kq")
        if b.spec.get("attn_softcap"):               # hparams.attn_soft_cap
            kq = g.unary(g.dup("SCALE", kq, (kq,)), "TANH")
            kq = g.dup("SCALE", kq, (kq,))
        kq = g.dup("SOFT_MAX", kq, (kq, mask) + sinks)
        kqv = g.mul_mat(vp, kq, "kqv")
        cur = g.permute(kqv, (0, 2, 1, 3))
        cur = g.cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
    gf.expand(cur)
    if v_rot is not None:
        cur = g.hadamard(cur, v_rot)
    return cur
