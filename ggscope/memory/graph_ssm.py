"""The recurrent-state parts of llama.cpp's reserve graph: ``build_rs`` and the Mamba-2 mixer.

Why: hybrid models (granitehybrid, falcon-h1) interleave or pair attention with Mamba-2
layers, whose state reads, convolution and scan sit between the attention inputs and the
output in ggml-alloc's plan; ``ggscope.memory.graph`` calls this module for those layers.
From llama.cpp as vendored in llama-cpp-python 0.3.36:

* ``build_rs`` (src/llama-graph.cpp): the state tensor reshaped to rows, a zero-sized
  in-place clear (``ggml_scale_inplace``, a view), the rows of the sequences in the batch
  (``get_state_rows``, by default ``ggml_get_rows`` with ``rs_s_copy``), and the copy of the
  other cells' rows back into the cache (zero rows in the reserve: ``n_rs`` = the batch's
  sequences), each expanded into the graph where llama.cpp expands it;
* ``build_mamba2_layer`` (src/models/mamba-base.cpp): the in-projection viewed as z, xBC
  and dt; the convolution over the previous ``d_conv - 1`` states concatenated with xBC
  (its last columns copied back into the conv state); bias and SiLU in place; the scan
  (``ggml_ssm_scan``: y and the final states in one f32 tensor, the states copied back);
  the D skip, the z gate (SwiGLU), the grouped RMS norm, the out-projection.
  ``n_rs_seq`` (rollback snapshots) is 0, so one state per sequence is written (K = 1).

Mamba-1 (``build_mamba_layer``, src/models/mamba.cpp's "mamba" architecture) is the same
state handling around one head per channel: x and z from the in-projection, the
convolution, dt / B / C from ``ssm_x`` (RMS-normed when the file asks), dt's own projection.

LFM2's short convolution (``shortconv``) uses the same state read and write-back.

Contract: ``rs_input(n_rs) -> (s_copy, main, extra)``; ``mamba2(b, ctx, cur, il)``,
``mamba1(b, ctx, cur, il)`` and ``shortconv(b, cur, il) -> Tensor``
where ``b`` is the graph builder (its ``gf``, weights and sizes) and ``ctx`` the ssm
hyperparameters read by ``ssm_params(meta, arch)``.
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g

__all__ = ["ssm_params", "rs_input", "build_rs", "mamba1", "mamba2", "shortconv"]


def ssm_params(meta: dict, arch: str) -> dict:
    def k(name, default=0):
        return int(meta.get(f"{arch}.ssm.{name}", default))
    return {"d_conv": k("conv_kernel"), "d_inner": k("inner_size"), "d_state": k("state_size"),
            "n_head": k("time_step_rank"), "n_group": k("group_count", 1)}


def rs_input(n_rs: int, n_seqs: int):
    """build_rs_inp_impl: ``rs_s_copy`` (i32, one per cell) and its main / extra views."""
    s_copy = g.new_input((n_rs,), g.I32, "rs_s_copy")
    main = g.view(s_copy, (n_seqs,), offs=0)
    extra = g.view(s_copy, (n_rs - n_seqs,), offs=n_seqs * 4)
    return s_copy, main, extra


def build_rs(gf, s, state_size: int, n_seqs: int, n_rs: int, rs, get_rows=None):
    """llm_graph_context::build_rs for the reserve (rs_head 0, rs_zero 0)."""
    _, main, extra = rs
    states = g.reshape(s, state_size, s.ne[1])
    zero = g.view(states, (state_size,))
    gf.expand(g.view(zero, zero.ne, zero.nb, kind="SCALE"))          # ggml_scale_inplace: a view
    out = get_rows(states, main) if get_rows else g.get_rows(states, main)
    gf.expand(out)
    states_extra = g.get_rows(states, extra)
    dst = g.view(s, (state_size, n_rs - n_seqs), offs=n_seqs * s.nb[1])
    gf.expand(g.cpy_into(states_extra, dst))
    return out


def mamba2(b, p: dict, cur, il: int):
    """llm_build_mamba_base::build_mamba2_layer."""
    gf, ns, T = b.gf, b.ns, b.T
    nst = T // ns
    d_conv, d_inner, d_state, n_head, n_group = p["d_conv"], p["d_inner"], p["d_state"], p["n_head"], p["n_group"]
    head_dim = d_inner // n_head
    ch = d_inner + 2 * n_group * d_state
    n_embd_r, n_embd_s = (d_conv - 1) * ch, d_state * d_inner
    pre = f"blk.{il}."
    conv_all = g.weight((n_embd_r, b.n_rs), f"cache_r_l{il}")
    ssm_all = g.weight((n_embd_s, b.n_rs), f"cache_s_l{il}")
    conv = build_rs(gf, conv_all, n_embd_r, ns, b.n_rs, b.rs)
    conv = g.reshape(conv, d_conv - 1, ch, ns)
    zxbcdt = g.mul_mat(b.w(pre + "ssm_in.weight", b.hp.n_embd, 2 * d_inner + 2 * n_group * d_state + n_head), cur)
    zxbcdt = g.reshape(zxbcdt, zxbcdt.ne[0], nst, ns)
    nb1, nb2 = zxbcdt.nb[1], zxbcdt.nb[2]
    z = g.view(zxbcdt, (head_dim, n_head, nst, ns), (4, head_dim * 4, nb1, nb2))
    xbc = g.view(zxbcdt, (ch, nst, ns), (4, nb1, nb2), offs=d_inner * 4)
    dt = g.view(zxbcdt, (n_head, nst, ns), (4, nb1, nb2), offs=(2 * d_inner + 2 * n_group * d_state) * 4)
    conv_x = g.concat(conv, g.transpose(xbc), 0)
    last = g.view(conv_x, (d_conv - 1, ch, ns), (4, conv_x.nb[1], conv_x.nb[2]), offs=nst * 4)
    gf.expand(g.cpy_into(last, g.view(conv_all, (n_embd_r, ns), (4, conv_all.nb[1]))))
    xbc = g.op("SSM_CONV", (ch, nst, ns), (conv_x, b.w(pre + "ssm_conv1d.weight", d_conv, ch)))
    bias = b.w(pre + "ssm_conv1d.bias", ch)
    if bias is not None:
        xbc = g.dup("ADD", xbc, (xbc, bias))
    xbc = g.unary(xbc, "SILU")
    x = g.view(xbc, (head_dim, n_head, nst, ns), (4, head_dim * 4, xbc.nb[1], xbc.nb[2]))
    B = g.view(xbc, (d_state, n_group, nst, ns), (4, d_state * 4, xbc.nb[1], xbc.nb[2]), offs=d_inner * 4)
    C = g.view(xbc, (d_state, n_group, nst, ns), (4, d_state * 4, xbc.nb[1], xbc.nb[2]),
               offs=(d_inner + n_group * d_state) * 4)
    dt = g.cont(dt)
    dt = g.dup("ADD", dt, (dt, b.w(pre + "ssm_dt.bias", n_head)))
    A = b.w(pre + "ssm_a", 1, n_head)

    def scan_rows(states, ids):
        ssm = g.reshape(states, d_state, head_dim, n_head, b.n_rs)
        return g.op("SSM_SCAN", (g.nelements(x) + d_state * head_dim * n_head * ids.ne[0],),
                    (ssm, x, dt, A, B, C, ids))

    y_ssm = build_rs(gf, ssm_all, n_embd_s, ns, b.n_rs, b.rs, scan_rows)
    gf.expand(g.cpy_into(g.view(y_ssm, (n_embd_s, ns, 1), (4, n_embd_s * 4, n_embd_s * 4 * ns),
                                offs=g.nelements(x) * 4),
                         g.view(ssm_all, (n_embd_s, ns, 1), (4, ssm_all.nb[1], ssm_all.nb[1] * b.n_rs))))
    y = g.view(y_ssm, (head_dim, n_head, nst, ns), (4, x.nb[1], n_head * x.nb[1], nst * n_head * x.nb[1]))
    xd = g.dup("MUL", x, (x, b.w(pre + "ssm_d", 1, n_head)))
    y = g.dup("ADD", y, (y, xd))
    y = g.glu(g.cont(z), y)
    norm = b.w(pre + "ssm_norm.weight", d_inner // n_group, n_group)
    if norm is not None:
        y = g.reshape(y, d_inner // n_group, n_group, nst, ns)
        y = b.norm(y, norm)
    y = g.reshape(y, d_inner, nst * ns)
    return g.mul_mat(b.w(pre + "ssm_out.weight", d_inner, b.hp.n_embd), y)


def mamba1(b, p: dict, cur, il: int):
    """llm_build_mamba_base::build_mamba_layer (Mamba-1: one head per channel, x_proj for dt,
    B and C, their RMS norms where the file has them or ``ssm.dt_b_c_rms`` says so)."""
    gf, ns, T = b.gf, b.ns, b.T
    nst = T // ns
    d_conv, d_inner, d_state, dt_rank = p["d_conv"], p["d_inner"], p["d_state"], p["n_head"]
    pre = f"blk.{il}."
    conv_all = g.weight((b.hp.n_embd_r, b.n_rs), f"cache_r_l{il}")
    ssm_all = g.weight((b.hp.n_embd_s, b.n_rs), f"cache_s_l{il}")
    conv = g.reshape(build_rs(gf, conv_all, b.hp.n_embd_r, ns, b.n_rs, b.rs), d_conv - 1, d_inner, ns)
    cur = g.reshape(cur, cur.ne[0], nst, ns)
    xz = g.mul_mat(b.w(pre + "ssm_in.weight", b.hp.n_embd, 2 * d_inner), cur)
    x = g.view(xz, (d_inner, nst, ns), (4, xz.nb[1], xz.nb[2]))
    z = g.view(xz, (d_inner, nst, ns), (4, xz.nb[1], xz.nb[2]), offs=d_inner * 4)
    conv_x = g.concat(conv, g.transpose(x), 0)
    last = g.view(conv_x, (d_conv - 1, d_inner, ns), (4, conv_x.nb[1], conv_x.nb[2]), offs=nst * 4)
    gf.expand(g.cpy_into(last, g.view(conv_all, ((d_conv - 1) * d_inner * ns,))))
    x = g.op("SSM_CONV", (d_inner, nst, ns), (conv_x, b.w(pre + "ssm_conv1d.weight", d_conv, d_inner)))
    x = g.dup("ADD", x, (x, b.w(pre + "ssm_conv1d.bias", d_inner)))
    x = g.unary(x, "SILU")
    x_db = g.mul_mat(b.w(pre + "ssm_x.weight", d_inner, dt_rank + 2 * d_state), x)
    dt = g.view(x_db, (dt_rank, nst, ns), (4, x_db.nb[1], x_db.nb[2]))
    B = g.view(x_db, (d_state, 1, nst, ns), (4, d_state * 4, x_db.nb[1], x_db.nb[2]), offs=4 * dt_rank)
    C = g.view(x_db, (d_state, 1, nst, ns), (4, d_state * 4, x_db.nb[1], x_db.nb[2]), offs=4 * (dt_rank + d_state))
    norms = [b.w(pre + f"ssm_{n}_norm.weight", 1) for n in ("dt", "b", "c")]
    if int(b.meta.get(f"{b.hp.arch}.ssm.dt_b_c_rms", 0) or 0) or all(n is not None for n in norms):
        dt, B, C = (b.norm(t, w) for t, w in zip((dt, B, C), norms))
    else:
        dt = g.cont(dt)
    dt = g.mul_mat(b.w(pre + "ssm_dt.weight", dt_rank, d_inner), dt)
    dt = g.dup("ADD", dt, (dt, b.w(pre + "ssm_dt.bias", d_inner)))
    xs = g.reshape(x, 1, d_inner, nst, ns)

    def scan_rows(states, ids):
        ssm = g.reshape(states, d_state, 1, d_inner, b.n_rs)
        return g.op("SSM_SCAN", (g.nelements(xs) + d_state * d_inner * ids.ne[0],),
                    (ssm, xs, dt, b.w(pre + "ssm_a", d_state, d_inner), B, C, ids))

    y_ssm = build_rs(gf, ssm_all, b.hp.n_embd_s, ns, b.n_rs, b.rs, scan_rows)
    gf.expand(g.cpy_into(g.view(y_ssm, (d_state * d_inner * ns,), offs=xs.nb[3] * xs.ne[3]),
                         g.view(ssm_all, (d_state * d_inner * ns,))))
    y = g.view(y_ssm, (d_inner, nst, ns), (4, xs.nb[2], xs.nb[3]))
    xd = g.dup("MUL", x, (x, b.w(pre + "ssm_d", d_inner)))
    y = g.dup("ADD", y, (y, xd))
    y = g.glu(g.cont(z), y)
    cur = g.mul_mat(b.w(pre + "ssm_out.weight", d_inner, b.hp.n_embd), y)
    return g.reshape(cur, cur.ne[0], nst * ns)


def shortconv(b, cur, il: int):
    """LFM2's short-convolution block (src/models/lfm2.cpp ``build_shortconv_block``, causal):
    in-projection to B, C and x, B*x convolved over the previous ``l_cache - 1`` columns (the
    last ones copied back into the state), C times the result, out-projection."""
    gf, ns, T = b.gf, b.ns, b.T
    nst, n_embd = T // ns, b.hp.n_embd
    d_conv = int(b.meta.get(f"{b.hp.arch}.shortconv.l_cache", 0)) - 1
    pre = f"blk.{il}."
    cur = g.reshape(cur, n_embd, nst, ns)
    bcx = g.mul_mat(b.w(pre + "shortconv.in_proj.weight", n_embd, 3 * n_embd), cur)
    nb = (4, bcx.nb[1], bcx.nb[2])
    bb, c, x = (g.view(bcx, (n_embd, nst, ns), nb, offs=i * n_embd * 4) for i in range(3))
    bx = g.transpose(g.dup("MUL", bb, (bb, x)))
    state = g.weight((b.hp.n_embd_r, b.n_rs), f"cache_r_l{il}")
    conv = g.reshape(build_rs(gf, state, b.hp.n_embd_r, ns, b.n_rs, b.rs), d_conv, n_embd, ns)
    bx = g.concat(conv, bx, 0)
    snap = g.view(bx, (d_conv, bx.ne[1], bx.ne[2]), (4, bx.nb[1], bx.nb[2]), offs=(bx.ne[0] - d_conv) * 4)
    gf.expand(g.cpy_into(snap, g.view(state, (d_conv * n_embd, ns), (4, state.nb[1]))))
    conv_out = g.op("SSM_CONV", (n_embd, nst, ns), (bx, b.w(pre + "shortconv.conv.weight", d_conv + 1, n_embd)))
    y = g.dup("MUL", c, (c, conv_out))
    y = g.mul_mat(b.w(pre + "shortconv.out_proj.weight", n_embd, n_embd), y)
    return g.reshape(y, y.ne[0], nst * ns)
