"""RWKV-6 and RWKV-7 blocks in llama.cpp's reserve graph: token shift, time mix (WKV6/7), channel mix.

Why: rwkv6 models keep no KV cache but a token-shift and a WKV state per layer; their
block's many element-wise steps (in place where ggml-alloc allows) and the WKV6 output
(the tokens' rows then the new state) decide the compute buffer, so
``ggscope.memory.graph`` calls this module for them.  From llama.cpp as vendored in
llama-cpp-python 0.3.36: src/models/rwkv6.cpp (the layer: the shift states read through
``build_rwkv_token_shift_load``, the previous token's rows concatenated in front, the
time mix, the residual, the second norm, the new shift states stored, the last layer's
rows picked, the channel mix, the residual and the optional halving every
``rescale_every_n_layers``), src/models/rwkv6-base.cpp (``build_rwkv6_time_mix``: the
five interpolations from one LoRA (``time_mix_w1``/``w2``, fused or per-target lerps), R,
K, V and the gate (SiLU), the decay LoRA and its exp(-exp()), ``ggml_rwkv_wkv6`` over the
state, the state copied back, the per-head group norm; ``build_rwkv6_channel_mix``);
src/models/rwkv7.cpp and rwkv7-base.cpp for RWKV-7 (the same layer around
``build_rwkv7_time_mix``: all interpolations at once, the decay, value-residual, gate and
in-context-learning-rate LoRAs, the first layer's V kept for every later layer,
``ggml_rwkv_wkv7``, the group norm and the bonus term; a two-matrix channel mix).

Contract: ``layer(b, il, inpL, out_ids) -> Tensor`` (the layer's output, the next inpL);
``described(hp, names, meta) -> bool``.
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g
from ggscope.memory.graph_ssm import build_rs

__all__ = ["described", "layer"]


def described(hp, names, meta) -> bool:
    """RWKV-6 proper (not the Qwen2-distilled variant without ``time_mix_first``), two shift
    rows, heads dividing the width, the LoRA widths in the file."""
    a = hp.arch
    head = int(meta.get(f"{a}.wkv.head_size", 0) or 0)
    common = (head > 0 and hp.n_embd % head == 0 and int(meta.get(f"{a}.token_shift_count", 2) or 2) == 2)
    if a == "rwkv7":
        ranks = [int(meta.get(f"{a}.attention.{n}_lora_rank", 0) or 0)
                 for n in ("decay", "iclr", "value_residual_mix")]
        return common and min(ranks) > 0 and all(f"blk.{il}.time_mix_lerp_fused.weight" in names
                                                 for il in range(hp.n_layer))
    return (a == "rwkv6" and common
            and int(meta.get(f"{a}.time_mix_extra_dim", 0) or 0) > 0
            and int(meta.get(f"{a}.time_decay_extra_dim", 0) or 0) > 0
            and not any(int(x) for x in _per_layer(meta.get(f"{a}.attention.head_count_kv", 0)))
            and all(f"blk.{il}.time_mix_first.weight" in names for il in range(hp.n_layer)))


def _per_layer(v):
    return v if isinstance(v, (list, tuple)) else [v]


def _lerp_add(x, sx, cur, b, name):
    """ggml_add(ggml_mul(ggml_add(x, lerp), sx), cur) - each step in place where it may be."""
    lerp = b.w(name, x.ne[0])
    x = g.dup("ADD", x, (x, lerp))
    x = g.dup("MUL", x, (x, sx))
    return g.dup("ADD", x, (x, cur))


def _time_mix(b, il, cur, x_prev):
    hp, T, pre = b.hp, b.T, f"blk.{il}."
    n_embd = hp.n_embd
    head = int(b.meta[f"{hp.arch}.wkv.head_size"])
    n_head = n_embd // head
    lora = int(b.meta[f"{hp.arch}.time_mix_extra_dim"])
    lora_w = int(b.meta[f"{hp.arch}.time_decay_extra_dim"])
    sx = g.dup("SUB", x_prev, (x_prev, cur))
    sx = g.reshape(sx, n_embd, T)
    cur = g.reshape(cur, n_embd, T)
    xxx = g.dup("MUL", sx, (sx, b.w(pre + "time_mix_lerp_x.weight", n_embd)))
    xxx = g.dup("ADD", xxx, (xxx, cur))
    xxx = g.unary(g.mul_mat(b.w(pre + "time_mix_w1.weight", n_embd, 5 * lora), xxx), "TANH")
    xxx = g.reshape(xxx, lora, 1, 5, T)
    xxx = g.cont(g.permute(xxx, (0, 1, 3, 2)))
    w2 = g.reshape(b.w(pre + "time_mix_w2.weight", lora, n_embd, 5), lora, n_embd, 1, 5)
    xxx = g.mul_mat(w2, xxx)
    fused = pre + "time_mix_lerp_fused.weight" in b.names
    if fused:
        sx3, cur3 = g.reshape(sx, n_embd, 1, T), g.reshape(cur, n_embd, 1, T)
        xxx = g.dup("ADD", xxx, (xxx, b.w(pre + "time_mix_lerp_fused.weight", n_embd, 1, 1, 5)))
        xxx = g.dup("MUL", xxx, (xxx, sx3))
        xxx = g.dup("ADD", xxx, (xxx, cur3))
    views = [g.view(xxx, (n_embd, T), (4, xxx.nb[1]), offs=i * n_embd * T * 4) for i in range(5)]
    if not fused:
        views = [_lerp_add(v, sx, cur, b, pre + f"time_mix_lerp_{n}.weight") for v, n in zip(views, "wkvrg")]
    xw, xk, xv, xr, xg = views
    r = b.lin(b.w(pre + "time_mix_receptance.weight", n_embd, n_embd), xr,
              b.w(pre + "time_mix_receptance.bias", n_embd))
    k = b.lin(b.w(pre + "time_mix_key.weight", n_embd, n_embd), xk, b.w(pre + "time_mix_key.bias", n_embd))
    v = b.lin(b.w(pre + "time_mix_value.weight", n_embd, n_embd), xv, b.w(pre + "time_mix_value.bias", n_embd))
    gate = g.unary(g.mul_mat(b.w(pre + "time_mix_gate.weight", n_embd, n_embd), xg), "SILU")
    k, v, r = (g.reshape(t, head, n_head, T) for t in (k, v, r))
    w = g.unary(g.mul_mat(b.w(pre + "time_mix_decay_w1.weight", n_embd, lora_w), xw), "TANH")
    w = g.mul_mat(b.w(pre + "time_mix_decay_w2.weight", lora_w, n_embd), w)
    w = g.dup("ADD", w, (w, b.w(pre + "time_mix_decay.weight", n_embd)))
    w = g.unary(g.unary(g.unary(w, "EXP"), "NEG"), "EXP")
    w = g.reshape(w, head, n_head, T)
    s_all = g.weight((hp.n_embd_s, b.n_rs), f"cache_s_l{il}")
    state = build_rs(b.gf, s_all, hp.n_embd_s, b.ns, b.n_rs, b.rs)
    first = b.w(pre + "time_mix_first.weight", head, n_head)
    out = g.op("RWKV_WKV6", (head * n_head, T + head * b.ns), (k, v, r, first, w, state))
    cur = g.view(out, (n_embd * T,))
    new_state = g.view(out, (n_embd * head * b.ns,), offs=n_embd * T * 4)
    b.gf.expand(g.cpy_into(new_state, g.view(s_all, (hp.n_embd_s * b.ns,))))
    cur = g.reshape(cur, head, n_head, T)
    cur = g.dup("NORM", cur, (cur,))
    cur = g.reshape(cur, n_embd, T)
    cur = g.dup("MUL", cur, (cur, b.w(pre + "time_mix_ln.weight", n_embd)))
    cur = g.dup("ADD", cur, (cur, b.w(pre + "time_mix_ln.bias", n_embd)))
    cur = g.dup("MUL", cur, (cur, gate))
    cur = g.mul_mat(b.w(pre + "time_mix_output.weight", n_embd, n_embd), cur)
    return g.reshape(cur, n_embd, T // b.ns, b.ns)


def _time_mix7(b, il, cur, x_prev):
    """build_rwkv7_time_mix: six (or five) interpolations at once, the LoRAs of decay, value
    residual (from the first layer's V, kept alive to the last layer), gate and in-context
    learning rate, ``ggml_rwkv_wkv7``, the group norm and the bonus term."""
    hp, T, pre, ns = b.hp, b.T, f"blk.{il}.", b.ns
    n_embd = hp.n_embd
    head = int(b.meta[f"{hp.arch}.wkv.head_size"])
    hc = n_embd // head

    def rank(name):
        return int(b.meta.get(f"{hp.arch}.attention.{name}_lora_rank", 0) or 0)
    gating = pre + "time_mix_g1.weight" in b.names and pre + "time_mix_g2.weight" in b.names
    sx = g.dup("SUB", x_prev, (x_prev, cur))
    sx = g.op("REPEAT", (n_embd, T // ns, ns, 6 if gating else 5), (sx,))
    xxx = g.dup("MUL", sx, (sx, b.w(pre + "time_mix_lerp_fused.weight", n_embd, 1, 1, 6 if gating else 5)))
    xxx = g.dup("ADD", xxx, (xxx, cur))
    xr, xw, xk, xv, xa, *xg = (g.view(xxx, (n_embd, T), (4, xxx.nb[1]), offs=i * n_embd * T * 4)
                              for i in range(6 if gating else 5))

    def lora(x, n1, n2, r, act=None):
        y = g.mul_mat(b.w(pre + n1, n_embd, r), x)
        y = g.unary(y, act) if act else y
        return g.mul_mat(b.w(pre + n2, r, n_embd), y)
    r = g.mul_mat(b.w(pre + "time_mix_receptance.weight", n_embd, n_embd), xr)
    w = lora(xw, "time_mix_w1.weight", "time_mix_w2.weight", rank("decay"), "TANH")
    w = g.dup("ADD", w, (w, b.w(pre + "time_mix_w0.weight", n_embd)))
    w = g.unary(w, "SIGMOID")
    w = g.unary(g.dup("SCALE", w, (w,)), "EXP")
    k = g.mul_mat(b.w(pre + "time_mix_key.weight", n_embd, n_embd), xk)
    v = g.mul_mat(b.w(pre + "time_mix_value.weight", n_embd, n_embd), xv)
    if b.v_first is None:
        b.v_first = v
    else:
        mix = lora(xv, "time_mix_v1.weight", "time_mix_v2.weight", rank("value_residual_mix"))
        mix = g.unary(g.dup("ADD", mix, (mix, b.w(pre + "time_mix_v0.weight", n_embd))), "SIGMOID")
        d = g.dup("SUB", b.v_first, (b.v_first, v))
        v = g.dup("ADD", v, (v, g.dup("MUL", d, (d, mix))))
    gate = lora(xg[0], "time_mix_g1.weight", "time_mix_g2.weight", rank("gate"), "SIGMOID") if gating else None
    a = lora(xa, "time_mix_a1.weight", "time_mix_a2.weight", rank("iclr"))
    a = g.unary(g.dup("ADD", a, (a, b.w(pre + "time_mix_a0.weight", n_embd))), "SIGMOID")
    kk = g.dup("MUL", k, (k, b.w(pre + "time_mix_k_k.weight", n_embd)))
    kk = g.dup("L2_NORM", g.reshape(kk, head, hc, T), (g.reshape(kk, head, hc, T),))
    ka = g.dup("MUL", k, (k, b.w(pre + "time_mix_k_a.weight", n_embd)))
    aka = g.dup("MUL", a, (a, ka))
    k = g.dup("ADD", k, (k, g.dup("SUB", aka, (aka, ka))))
    r, w, k, v, a = (g.reshape(t, head, hc, T) for t in (r, w, k, v, a))
    s_all = g.weight((hp.n_embd_s, b.n_rs), f"cache_s_l{il}")
    state = build_rs(b.gf, s_all, hp.n_embd_s, ns, b.n_rs, b.rs)
    out = g.op("RWKV_WKV7", (head * hc, T + head * ns),
               (r, w, k, v, g.unary(kk, "NEG"), g.dup("MUL", kk, (kk, a)), state))
    cur = g.view(out, (n_embd * T,))
    b.gf.expand(g.cpy_into(g.view(out, (n_embd * head * ns,), offs=n_embd * T * 4),
                           g.view(s_all, (hp.n_embd_s * ns,))))
    if pre + "time_mix_ln.weight" in b.names and pre + "time_mix_ln.bias" in b.names:
        cur = g.reshape(g.dup("NORM", g.reshape(cur, head, hc, T), (g.reshape(cur, head, hc, T),)), n_embd, T)
        cur = g.dup("MUL", cur, (cur, b.w(pre + "time_mix_ln.weight", n_embd)))
        cur = g.dup("ADD", cur, (cur, b.w(pre + "time_mix_ln.bias", n_embd)))
    else:
        cur = g.reshape(cur, n_embd, T)
    kr = g.dup("MUL", k, (k, r))
    kr = g.dup("MUL", kr, (kr, g.reshape(b.w(pre + "time_mix_r_k.weight", n_embd), head, hc)))
    rk = g.op("SUM_ROWS", (1, hc, T), (kr,))
    vrk = g.dup("MUL", v, (v, rk))
    cur = g.dup("ADD", cur, (cur, g.reshape(vrk, n_embd, T)))
    if gating:
        cur = g.dup("MUL", cur, (cur, gate))
    cur = g.mul_mat(b.w(pre + "time_mix_output.weight", n_embd, n_embd), cur)
    return g.reshape(cur, n_embd, T // ns, ns)


def _channel_mix7(b, il, cur, x_prev):
    pre, n_embd, n_ff = f"blk.{il}.", b.hp.n_embd, b.hp.n_ff
    sx = g.dup("SUB", x_prev, (x_prev, cur))
    xk = g.dup("MUL", sx, (sx, b.w(pre + "channel_mix_lerp_k.weight", n_embd)))
    xk = g.dup("ADD", xk, (xk, cur))
    k = g.unary(g.mul_mat(b.w(pre + "channel_mix_key.weight", n_embd, n_ff), xk), "RELU")
    k = g.dup("SQR", k, (k,))
    return g.mul_mat(b.w(pre + "channel_mix_value.weight", n_ff, n_embd), k)


def _channel_mix(b, il, cur, x_prev):
    pre, n_embd, n_ff = f"blk.{il}.", b.hp.n_embd, b.hp.n_ff
    sx = g.dup("SUB", x_prev, (x_prev, cur))
    xk = g.dup("MUL", sx, (sx, b.w(pre + "channel_mix_lerp_k.weight", n_embd)))
    xk = g.dup("ADD", xk, (xk, cur))
    xr = g.dup("MUL", sx, (sx, b.w(pre + "channel_mix_lerp_r.weight", n_embd)))
    xr = g.dup("ADD", xr, (xr, cur))
    r = g.unary(g.mul_mat(b.w(pre + "channel_mix_receptance.weight", n_embd, n_embd), xr), "SIGMOID")
    k = g.unary(g.mul_mat(b.w(pre + "channel_mix_key.weight", n_embd, n_ff), xk), "RELU")
    k = g.dup("SQR", k, (k,))
    return g.dup("MUL", r, (r, g.mul_mat(b.w(pre + "channel_mix_value.weight", n_ff, n_embd), k)))


def layer(b, il: int, inpL, out_ids):
    hp, T, ns = b.hp, b.T, b.ns
    nst, n_embd, pre = T // ns, hp.n_embd, f"blk.{il}."
    inpL = g.reshape(inpL, n_embd, nst, ns)
    r_all = g.weight((hp.n_embd_r, b.n_rs), f"cache_r_l{il}")
    shift = g.reshape(build_rs(b.gf, r_all, hp.n_embd_r, ns, b.n_rs, b.rs), n_embd, 2, ns)
    att_shift = g.view(shift, (n_embd, 1, ns), (4, shift.nb[1], shift.nb[2]))
    ffn_shift = g.view(shift, (n_embd, 1, ns), (4, shift.nb[1], shift.nb[2]), offs=n_embd * 4)
    att_norm = b.norm(inpL, b.w(pre + "attn_norm.weight", n_embd), b.w(pre + "attn_norm.bias", n_embd), "NORM")
    x_prev = g.concat(att_shift, g.view(att_norm, (n_embd, nst - 1, ns), (4, att_norm.nb[1], att_norm.nb[2])), 1)
    rwkv7 = hp.arch == "rwkv7"
    cur = (_time_mix7 if rwkv7 else _time_mix)(b, il, att_norm, x_prev)
    ffn_inp = g.dup("ADD", cur, (cur, inpL))
    ffn_norm = b.norm(ffn_inp, b.w(pre + "attn_norm_2.weight", n_embd), b.w(pre + "attn_norm_2.bias", n_embd), "NORM")
    x_prev = g.concat(ffn_shift, g.view(ffn_norm, (n_embd, nst - 1, ns), (4, ffn_norm.nb[1], ffn_norm.nb[2])), 1)
    last = (nst - 1) * n_embd * 4
    shift = g.concat(g.view(att_norm, (n_embd, 1, ns), (4, att_norm.nb[1], att_norm.nb[2]), offs=last),
                     g.view(ffn_norm, (n_embd, 1, ns), (4, ffn_norm.nb[1], ffn_norm.nb[2]), offs=last), 1)
    b.gf.expand(g.cpy_into(g.view(shift, (n_embd * ns * 2,)), g.view(r_all, (hp.n_embd_r * ns,))))
    ffn_inp, ffn_norm, x_prev = (g.reshape(t, n_embd, T) for t in (ffn_inp, ffn_norm, x_prev))
    if il == hp.n_layer - 1:
        ffn_inp, ffn_norm, x_prev = (g.get_rows(t, out_ids) for t in (ffn_inp, ffn_norm, x_prev))
    cur = (_channel_mix7 if rwkv7 else _channel_mix)(b, il, ffn_norm, x_prev)
    cur = g.dup("ADD", cur, (cur, ffn_inp))
    every = 0 if rwkv7 else int(b.meta.get(f"{hp.arch}.rescale_every_n_layers", 0) or 0)
    if every and (il + 1) % every == 0:
        cur = g.dup("SCALE", cur, (cur,))
    return cur
