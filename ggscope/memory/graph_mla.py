"""DeepSeek-2's multi-head latent attention in llama.cpp's reserve graph (the MLA path).

Why: deepseek2 models (DeepSeek-V2/V3, and the architectures converted as deepseek2) cache
one compressed row per token (``kv_lora_rank`` plus the RoPE part) instead of K and V;
their attention's intermediate tensors and the K-only cache inputs differ from the standard
block's, so ``ggscope.memory.graph`` calls this module for them.  From llama.cpp as vendored
in llama-cpp-python 0.3.36, src/models/deepseek2.cpp (the MLA branch) and src/llama-graph.cpp
(``build_attn_inp_k``: K row indices and the mask, no rotations; ``build_attn`` for the
K-only cache: Q, V, K expanded, K stored, V a view of the K cache's first ``kv_lora_rank``
values; ``build_attn_mha`` with ``v_mla``: the compressed V decompressed by ``wv_b``, after
flash attention or after KQV):

Q through the LoRA pair (``attn_q_a``, its norm, ``attn_q_b``; or one ``attn_q``), split in
a no-RoPE and a RoPE part; the no-RoPE part absorbed into the latent space by ``attn_k_b``;
the compressed KV row with its RoPE part (``attn_kv_a_mqa``), normed; Q and K concatenated
from their parts.

Contract: ``attn_inputs(b)`` (created once per graph) and ``mla(b, il, cur, pos) -> Tensor``
(the projected attention output), ``b`` being ``ggscope.memory.graph``'s builder;
``params(meta, arch)`` reads the ranks.
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g

__all__ = ["params", "mla", "described"]


def params(meta: dict, arch: str) -> dict:
    def k(name, default=0):
        return int(meta.get(f"{arch}.{name}", default) or default)
    return {"kv_lora": k("attention.kv_lora_rank"), "q_lora": k("attention.q_lora_rank"),
            "k_mla": k("attention.key_length_mla"), "v_mla": k("attention.value_length_mla"),
            "rope": k("rope.dimension_count")}


def described(hp, names, meta) -> bool:
    """The MLA branch with sizes llama.cpp accepts: ranks and head sizes positive, no
    attention temperature input, no expert groups (not replayed)."""
    p = params(meta, hp.arch)
    return (min(p["kv_lora"], p["k_mla"], p["v_mla"], p["rope"]) > 0 and p["k_mla"] > p["rope"]
            and hp.head_k == p["kv_lora"] + p["rope"]
            and f"{hp.arch}.attention.temperature_scale" not in meta
            and int(meta.get(f"{hp.arch}.expert_group_count", 0) or 0) <= 1
            and all(f"blk.{il}.attn_kv_a_mqa.weight" in names for il in range(hp.n_layer)))


def _inputs(b):
    if "k" not in b.attn_cache:
        T = b.T
        k_idxs = g.new_input((T,), g.I64, "attn_inp_k_idxs")
        mask = g.new_input((b.n_kv["kv"], T // b.streams, 1, b.streams), g.F16 if b.fa else g.F32,
                           "attn_inp_kq_mask")
        b.attn_cache["k"] = (k_idxs, mask)
    return b.attn_cache["k"]


def mla(b, il: int, cur, pos):
    hp, T, ns, gf = b.hp, b.T, b.streams, b.gf
    p = b.mla
    pre = f"blk.{il}."
    n_head, n_embd = hp.n_head[il], hp.n_embd
    kv_lora, rope, d_k, d_v = p["kv_lora"], p["rope"], p["k_mla"], p["v_mla"]
    nope = d_k - rope
    if pre + "attn_q.weight" in b.names:
        q = g.mul_mat(b.w(pre + "attn_q.weight", n_embd, d_k * n_head), cur)
    else:
        q = g.mul_mat(b.w(pre + "attn_q_a.weight", n_embd, p["q_lora"]), cur)
        q = b.norm(q, b.w(pre + "attn_q_a_norm.weight", p["q_lora"]))
        q = g.mul_mat(b.w(pre + "attn_q_b.weight", p["q_lora"], d_k * n_head), q)
    q = g.reshape(q, d_k, n_head, T)
    kv_pe = g.mul_mat(b.w(pre + "attn_kv_a_mqa.weight", n_embd, kv_lora + rope), cur)
    row = 4 * (kv_lora + rope)
    kv = g.view(kv_pe, (kv_lora, T), (4, row))
    k_pe = g.view(kv_pe, (rope, 1, T), (4, row, row), offs=4 * kv_lora)
    k_pe = g.dup("ROPE", k_pe, (k_pe, pos))
    kv = b.norm(kv, b.w(pre + "attn_kv_a_norm.weight", kv_lora))
    q_nope = g.view(q, (nope, n_head, T), (4, q.nb[1], q.nb[2]))
    q_pe = g.view(q, (rope, n_head, T), (4, q.nb[1], q.nb[2]), offs=4 * nope)
    q_pe = g.dup("ROPE", q_pe, (q_pe, pos))
    q_nope = g.permute(q_nope, (0, 2, 1, 3))
    q_abs = g.permute(g.mul_mat(b.w(pre + "attn_k_b.weight", nope, kv_lora, n_head), q_nope), (0, 2, 1, 3))
    q = g.concat(q_abs, q_pe, 0)
    kv = g.reshape(kv, kv_lora, 1, T)
    k = g.concat(kv, k_pe, 0)
    v = kv
    # build_attn (the K-only cache)
    k_idxs, mask = _inputs(b)
    for t in (q, v, k):
        gf.expand(t)
    d = kv_lora + rope
    ck = g.weight((d, b.n_kv["kv"], ns), f"cache_k_l{il}", *g.cache_type(b.type_k))
    k2 = g.view(k, (d, T), (k.esize, k.nb[2]))
    gf.expand(g.set_rows(g.reshape(ck, d, b.n_kv["kv"] * ns) if ns > 1 else ck, k2, k_idxs))
    kk = g.view(ck, (d, 1, b.n_kv["kv"], ns), (ck.nb[0], ck.nb[1], ck.nb[1], ck.nb[2]))
    vv = g.view(kk, (kv_lora, 1, b.n_kv["kv"], ns), kk.nb)
    # build_attn_mha with v_mla
    qv = g.view(q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns), (q.nb[0], q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
    qp, kp, vp = g.permute(qv, (0, 2, 1, 3)), g.permute(kk, (0, 2, 1, 3)), g.permute(vv, (0, 2, 1, 3))
    wv_b = b.w(pre + "attn_v_b.weight", kv_lora, d_v, n_head)
    if b.fa:
        if b.type_k == "f32":
            kp, vp = g.cast(kp, g.F16), g.cast(vp, g.F16)
        out = g.op("FLASH_ATTN_EXT", (vp.ne[0], qp.ne[2], qp.ne[1], qp.ne[3]), (qp, kp, vp, mask))
        out = g.permute(out, (0, 2, 1, 3))
        out = g.mul_mat(wv_b, out)
        out = g.cont(g.permute(out, (0, 2, 1, 3)))
        out = g.reshape(out, out.ne[0] * out.ne[1], out.ne[2] * out.ne[3])
    else:
        kq = g.mul_mat(kp, qp, "kq")
        kq = g.dup("SOFT_MAX", kq, (kq, mask))
        vc = g.cont(g.transpose(vp))                     # v is not transposed: made contiguous
        kqv = g.mul_mat(wv_b, g.mul_mat(vc, kq))
        out = g.permute(kqv, (0, 2, 1, 3))
        out = g.cont(out, out.ne[0] * out.ne[1], out.ne[2] * out.ne[3])
    gf.expand(out)
    return g.mul_mat(b.w(pre + "attn_output.weight", d_v * n_head, n_embd), out)
