"""Self-attention of one decoder block, as llama.cpp's graphs build it.

Why a module of its own: ``blocks.py`` holds the pieces every block is made of (norms,
rotary, GELU, the dense FFN); attention -- q/k/v projections and their norms, rotary per
layer (sliding-window bases, layers without rope, M-RoPE), Mistral 3's temperature,
grouped-query or latent (MLA, deepseek2) attention over the key/value cache, soft-capping,
sliding windows, F16-cache rounding and ggml-cpu's flash attention -- is one job, and the
one that grows with each architecture.

Contract: ``_attention(config, weights, layer, h [T, C], pos [T], swa, k_past, v_past,
f16, flash, nope) -> (out [T, C], keys, values)``, the cache extended by the new rows;
numerics as ggml-cpu computes them (see ``decoder.py``).
"""
from __future__ import annotations

import numpy as np

from ggscope.forward import ggml_ops
from ggscope.forward.blocks import Layer, _norm, rms_norm, rope
from ggscope.forward.matmul import linear as _lin, round_activations
from ggscope.forward.traits import Config

__all__ = ["_attention", "load_mla"]


def _attend(c: Config, q: np.ndarray, k: np.ndarray, v: np.ndarray, pos: np.ndarray,
            swa: bool, f16: bool, flash: bool = False, sinks: np.ndarray | None = None) -> np.ndarray:
    """Causal attention of q [T, H, Dk] over k [S, Hkv, Dk], v [S, Hkv, Dv] -> [T, H, Dv].

    Query head h reads key/value head h // (H / Hkv) (GQA).  The scores are scaled by
    ``kq_scale`` (gemma's q is pre-scaled instead), soft-capped s -> cap·tanh(s/cap)
    where the architecture caps them, and masked causally and, on sliding-window
    layers, to the last ``n_swa`` positions (llama.cpp LLAMA_SWA_TYPE_STANDARD).  With
    an F16 cache, q and the probabilities are rounded to F16 as ggml-cpu rounds what it
    multiplies by an F16 k or v (the cache itself already holds rounded values).
    ``flash`` is ggml-cpu's tiled flash attention instead (what llama.cpp runs when
    flash attention is on -- llama-perplexity's default on a CPU -- and a batch has at
    least GGML_FA_TILE_Q = 64 rows: ggml-cpu/ops.cpp
    ggml_compute_forward_flash_attn_ext_tiled): k and v are read from the F16 cache
    as float32, q and the probabilities stay float32 -- computed by ggml's kernel in
    its own order (``ggml_ops.flash_attention``) where the extension is built.
    """
    T, H = q.shape[0], q.shape[1]
    S, Hkv = k.shape[0], k.shape[1]
    key_pos = np.arange(S)
    masked = key_pos[None, :] > pos[:, None]                           # [T, S]
    if swa and c.n_swa and c.swa_chunked:         # LLAMA_SWA_TYPE_CHUNKED: the query's chunk only
        masked |= key_pos[None, :] < (pos[:, None] // c.n_swa) * c.n_swa
    elif swa and c.n_swa:
        masked |= pos[:, None] - key_pos[None, :] >= c.n_swa
    if flash and (T >= ggml_ops.FA_TILE_Q or f16) and sinks is None and not c.alibi:
        # ggml-cpu's kernels themselves, bit for bit (ggml_ops; None without the extension):
        # tiled for 64 rows or more, else its one-row path (which only an F16 cache takes here)
        mask = np.where(masked, np.float32(-np.inf), np.float32(0))
        scale = 1.0 if c.traits.q_scale else c.kq_scale
        out = ggml_ops.flash_attention(q, k, v, mask, scale, c.attn_softcap or 0.0)
        if out is not None:
            return out
    if f16 and not flash:
        q = _f16(q)
    g = H // Hkv
    qh = q.transpose(1, 0, 2).reshape(Hkv, g * T, q.shape[2])          # [Hkv, g*T, Dk]
    scores = qh @ k.transpose(1, 2, 0)                                 # [Hkv, g*T, S]
    scores = scores.reshape(Hkv, g, T, S).reshape(H, T, S)
    if not c.traits.q_scale:
        scores = scores * np.float32(c.kq_scale)
    if c.attn_softcap:
        cap = np.float32(c.attn_softcap)
        scores = np.tanh(scores / cap) * cap
    if c.alibi:
        scores = scores + _alibi_bias(H, c.alibi, pos, key_pos, flash)
    scores = np.where(masked[None], np.float32(-np.inf), scores)
    top = scores.max(axis=-1, keepdims=True)
    if sinks is not None:                         # ggml soft_max with sinks: in the max and the sum
        top = np.maximum(top, sinks[:, None, None])
    scores = np.exp(scores - top)
    total = scores.sum(axis=-1, keepdims=True)
    if sinks is not None:
        total = total + np.exp(sinks[:, None, None] - top)
    probs = (scores / total).astype(np.float32)
    if f16 and not flash:
        probs = _f16(probs)
    out = probs.reshape(Hkv, g * T, S) @ v.transpose(1, 0, 2)          # [Hkv, g*T, Dv]
    return out.reshape(H, T, -1).transpose(1, 0, 2)                    # [T, H, Dv]


def _alibi_slopes(n_head: int, max_bias: float) -> np.ndarray:
    """ggml-cpu ops.cpp soft_max: head h's slope m0^(h+1) below n_head_log2 (the largest
    power of two at most n_head), else m1^(2(h - n_head_log2) + 1); m0 = 2^(-max_bias /
    n_head_log2), m1 = 2^(-max_bias/2 / n_head_log2), powf in float.  [n_head]."""
    f32 = np.float32
    log2 = 1 << int(np.floor(np.log2(n_head)))
    m0 = np.power(f32(2), f32(-max_bias) / f32(log2), dtype=f32)
    m1 = np.power(f32(2), f32(-max_bias / 2) / f32(log2), dtype=f32)
    return np.array([np.power(m0, f32(h + 1), dtype=f32) if h < log2 else
                     np.power(m1, f32(2 * (h - log2) + 1), dtype=f32) for h in range(n_head)], f32)


def _alibi_bias(n_head: int, max_bias: float, pos: np.ndarray, key_pos: np.ndarray,
                flash: bool) -> np.ndarray:
    """What ggml's soft_max_ext adds to the scores: slope(head) × the mask, which llama.cpp
    fills with -|p_q - p_k| (llama-kv-cache.cpp, use_alibi) -- in F16 under flash attention
    (llama-graph.cpp build_attn_inp_kq_mask), so distances past 2048 round.  [H, T, S]."""
    dist = -np.abs(pos[:, None] - key_pos[None, :]).astype(np.float32)
    if flash:
        dist = _f16(dist)
    return _alibi_slopes(n_head, max_bias)[:, None, None] * dist[None]


def _rope(c: Config, w, x: np.ndarray, pos: np.ndarray, swa: bool) -> np.ndarray:
    if c.traits.rope is None:
        return x
    base = c.rope_base
    freq_scale, yarn, attn_factor = c.freq_scale, c.yarn, c.attn_factor
    if swa and c.swa_rope_base:                                        # llama4: the file's, scale kept
        base = c.swa_rope_base
    elif swa and c.traits.swa_rope_base is not None:
        base, freq_scale, yarn = c.traits.swa_rope_base, 1.0, None    # rope_freq_*_train_swa
    elif swa and c.traits.swa_plain_rope:                              # olmo2.cpp: scale 1, no YaRN
        freq_scale, yarn, attn_factor = 1.0, None, 1.0
    return rope(x, pos, c.n_rot, base, c.traits.rope == "neox", freq_scale, w.rope_freqs,
                yarn, attn_factor, libm=not c.exact, still=c.rope_still)


def _temperature(pos: np.ndarray, scale: float, floor: int, offset: float = 0.0) -> np.ndarray:
    """llm_graph_input_attn_temp::set_input: ``log(floor((pos + offset) / floor_scale) + 1.0) *
    f_attn_temp_scale + 1.0`` (offset 0, llama4's 1) -- the quotient and its floor in float,
    the rest in double, stored as float.  [T]."""
    q = np.floor((pos.astype(np.float32) + np.float32(offset)) / np.float32(floor)).astype(np.float64)
    return (np.log(q + 1.0) * np.float64(np.float32(scale)) + 1.0).astype(np.float32)


def _f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float32)


def _attention(c: Config, w, L: Layer, h: np.ndarray, pos: np.ndarray, swa: bool,
               k_past: np.ndarray, v_past: np.ndarray, f16: bool, flash: bool = False,
               nope: bool = False):
    """Self-attention of the new rows h [T, C]: (output [T, C], keys, values) with the cache.
    ``nope``: this layer skips rope (smollm3's every 4th)."""
    T, H, Hkv, Dk, Dv = h.shape[0], c.n_head, c.n_head_kv, c.head_k, c.head_v
    if c.traits.mla:
        return _mla(c, w, L, h, pos, k_past, v_past, f16, flash)
    if L.wqkv is not None:
        qkv = _lin(h, L.wqkv, L.bqkv)
        q, k, v = np.split(qkv, [H * Dk, H * Dk + Hkv * Dk], axis=-1)
    else:
        q, k, v = _lin(h, L.wq, L.bq), _lin(h, L.wk, L.bk), _lin(h, L.wv, L.bv)
    full = c.traits.qk_norm == "full"             # olmo2: over [T, H·Dk] before the head split
    if full and L.q_norm is not None:
        q, k = rms_norm(q, L.q_norm, c.eps), rms_norm(k, L.k_norm, c.eps)
    q, k, v = q.reshape(T, H, Dk), k.reshape(T, Hkv, Dk), v.reshape(T, Hkv, Dv)
    # per head: RMSNorm, or (stablelm, a weight row per head) LayerNorm without bias; before
    # rope, or after it (hunyuan-dense: "late")
    late = c.traits.qk_norm == "late"
    if L.q_norm is not None and not full and not late:
        q = _norm(c, q, L.q_norm, None)
    if L.k_norm is not None and not full and not late:
        k = _norm(c, k, L.k_norm, None)
    if not nope:
        q, k = _rope(c, w, q, pos, swa), _rope(c, w, k, pos, swa)
    if late and L.q_norm is not None:
        q, k = rms_norm(q, L.q_norm, c.eps), rms_norm(k, L.k_norm, c.eps)
    if c.qk_l2 and not nope:                      # llama4.cpp: Llama4TextL2Norm after rope
        q, k = rms_norm(q, np.float32(1), c.eps), rms_norm(k, np.float32(1), c.eps)
    if c.attn_temp is not None and (nope or not c.temp_nope_only):   # mistral3 / llama4.cpp
        q = q * _temperature(pos, *c.attn_temp)[:, None, None]
    if c.traits.q_scale:
        q = q * np.float32(c.kq_scale)
    store = _f16 if f16 else (lambda a: a.astype(np.float32))
    k = np.concatenate([k_past, store(k)])
    v = np.concatenate([v_past, store(v)])
    out = _attend(c, q, k, v, pos, swa, f16, flash, L.attn_sinks).reshape(T, H * Dv)
    return _lin(out, L.wo, L.bo), k, v


def _mla(c: Config, w, L: Layer, h: np.ndarray, pos: np.ndarray,
         k_past: np.ndarray, v_past: np.ndarray, f16: bool, flash: bool = False):
    """deepseek2.cpp's multi-head latent attention, in its absorbed form when the file has
    attn_k_b / attn_v_b: a single shared key/value head over the normalised latent
    (plus the shared rope key), each query head's non-rope part mapped into latent space
    by k_b, and each head's latent output expanded by v_b.  Older files (attn_kv_b)
    expand keys and values per head first, as llama.cpp does for them."""
    T, H, R, rot, nope = h.shape[0], c.n_head, c.mla_rank, c.n_rot, c.mla_nope
    store = _f16 if f16 else (lambda a: a.astype(np.float32))
    q = _lin(rms_norm(_lin(h, L.wq_a), L.q_a_norm, c.eps), L.wq_b) if L.wq_a is not None else _lin(h, L.wq)
    q = q.reshape(T, H, nope + rot)
    q_nope, q_pe = q[..., :nope], _rope(c, w, q[..., nope:], pos, False)
    kv = _lin(h, L.wkv_a)                                              # [T, R + rot]
    latent = rms_norm(kv[:, :R], L.kv_a_norm, c.eps)                   # [T, R]
    k_pe = _rope(c, w, kv[:, None, R:], pos, False)                    # [T, 1, rot]
    if L.wk_b is not None:
        q_nope = round_activations(q_nope, getattr(L.wk_b, "vec_dot", None))
        q_abs = np.einsum("thn,hrn->thr", q_nope, np.asarray(L.wk_b))   # [T, H, R]
        qc = np.concatenate([q_pe, q_abs], axis=-1)                    # rope first, as llama.cpp
        k = np.concatenate([k_past, store(np.concatenate([k_pe, latent[:, None, :]], axis=-1))])
        v = np.concatenate([v_past, store(latent[:, None, :])])        # [S, 1, R]
        o = _attend(c, qc, k, v, pos, False, f16, flash)               # [T, H, R]
        o = round_activations(o, getattr(L.wv_b, "vec_dot", None))
        o = np.einsum("thr,hvr->thv", o, np.asarray(L.wv_b))           # [T, H, Dv]
    else:
        kvb = _lin(latent, L.wkv_b).reshape(T, H, nope + c.head_v)
        k_new = np.concatenate([np.broadcast_to(k_pe, (T, H, rot)), kvb[..., :nope]], axis=-1)
        qc = np.concatenate([q_pe, q_nope], axis=-1)
        k = np.concatenate([k_past, store(k_new)])
        v = np.concatenate([v_past, store(kvb[..., nope:])])
        o = _attend(c, qc, k, v, pos, False, f16, flash)
    return _lin(o.reshape(T, -1), L.wo, L.bo), k, v


def load_mla(L: Layer, c: Config, i: int, req, opt) -> None:
    """deepseek2's latent-attention weights of block i: q through a low-rank pair or one
    attn_q; attn_k_b / attn_v_b, or the older attn_kv_b."""
    C, H, R, rot, nope = c.n_embd, c.n_head, c.mla_rank, c.n_rot, c.mla_nope
    Q = H * c.head_k
    # q through a low-rank pair (attn_q_a, attn_q_a_norm, attn_q_b), or one attn_q (the lite models)
    L.q_a_norm = opt("blk.{i}.attn_q_a_norm.weight", i, None)
    if L.q_a_norm is not None:
        q_rank = L.q_a_norm.shape[0]
        L.wq_a = req("blk.{i}.attn_q_a.weight", i, (q_rank, C))
        L.wq_b = req("blk.{i}.attn_q_b.weight", i, (Q, q_rank))
    else:
        L.wq = req("blk.{i}.attn_q.weight", i, (Q, C))
    L.wkv_a = req("blk.{i}.attn_kv_a_mqa.weight", i, (R + rot, C))
    L.kv_a_norm = req("blk.{i}.attn_kv_a_norm.weight", i, (R,))
    L.wk_b = opt("blk.{i}.attn_k_b.weight", i, (H, R, nope))
    if L.wk_b is not None:
        L.wv_b = req("blk.{i}.attn_v_b.weight", i, (H, c.head_v, R))
    else:
        L.wkv_b = req("blk.{i}.attn_kv_b.weight", i, (H * (nope + c.head_v), R))
