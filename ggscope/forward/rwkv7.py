"""RWKV v7 ("Goose"): its attention for the RWKV engine (``rwkv.py``), rwkv.cpp and GGUF files.

Why: to check what an rwkv.cpp v7 file computes.  v7 replaces v5/v6's "decay then
add" state update with a generalized delta rule.  Per head (S x S state
``s[h, i, j]``, i = value channel, j = key channel)::

    s[h] = s[h] * w[h, None, :] + (s[h] @ -kk[h])[:, None] * (kk * a)[h, None, :]
           + v[h, :, None] * k[h, None, :]
    out_h = s[h] @ r[h]

where ``w = exp(-exp(-0.5) * sigmoid(w0 + lora_w(xw)))`` is the decay, ``kk`` the
L2-normalized ``k * k_k`` (the key being replaced), ``a = sigmoid(a0 + lora_a(xa))``
the in-context learning rate, and ``k`` is rescaled as ``k * (1 + (a - 1) * k_a)``.
Layer 0's ``v`` is remembered as ``v_first`` for the token; later layers blend toward
it by ``sigmoid(v0 + lora_v(xv))`` (value residual).  After a GroupNorm over heads
(eps 64e-5) the output gets a per-head bonus ``sum(r * k * r_k) * v`` and the gate
``g = g2 @ sigmoid(g1 @ xg)``.  The channel mix is ``Wv @ relu(Wk @ (x + sx*x_k))^2``
with no receptance.  Token shift everywhere is ``x + sx * mix``, ``sx = x_prev - x``.

Layout as rwkv.cpp's converter writes it (numpy order): the six mixes concatenated as
``att.x_rwkvag`` [6, 1, C] in the order r, w, k, v, a, g; low-rank matrices
``att.{w,a,v,g}1`` [D, C] and ``att.{w,a,v,g}2`` [C, D] (transposed from PyTorch so
that every projection is ``W @ x``); ``att.r_k`` [H, S]; ``w0/a0/v0/k_k/k_a`` and
``ffn.x_k`` [1, 1, C].  Layer 0 has no ``v0/v1/v2``.  Head count = ne[1] of ``r_k``.

Contract: ``load(model, exact=False) -> rwkv.Weights``; ``forward`` and
``initial_state`` are the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import rwkv
from ggscope.forward.ops import group_norm, l2_normalize, linear, sigmoid, token_shift
from ggscope.forward.rwkv import LN_EPS, Sizes, forward, initial_state

__all__ = ["Config", "Attention", "VERSION", "load", "forward", "initial_state"]

GN_EPS = 64e-5             # ln_x GroupNorm eps (BlinkDL's v7 reference)
NORM_EPS = 1e-12           # floor of the L2 norm of kk (torch F.normalize default)
DECAY_SCALE = np.exp(-0.5)  # w = exp(-DECAY_SCALE * sigmoid(.)): decay factor in (0.545, 1)
DECAY_SCALE_LLAMA_CPP = 0.606531  # the same constant as llama.cpp's rwkv7-base.cpp spells it
N_MIX = 6                  # token-shift mixes in att.x_rwkvag: r w k v a g


@dataclass(frozen=True)
class Config:
    sizes: Sizes
    n_head: int              # H = ne[1] of att.r_k
    head_size: int           # S = ne[0] of att.r_k
    ln_eps: float
    gn_eps: float
    norm_eps: float
    decay_scale: float = float(DECAY_SCALE)


@dataclass(frozen=True)
class Lora:
    """A low-rank projection ``up @ f(down @ x)``."""
    down: np.ndarray         # [D, C]
    up: np.ndarray           # [C, D]


@dataclass(frozen=True)
class Attention:
    mix: np.ndarray          # [6, C]  x_r x_w x_k x_v x_a x_g
    w0: np.ndarray           # [C]
    w_lora: Lora             # tanh inside
    a0: np.ndarray           # [C]
    a_lora: Lora             # identity inside
    v0: np.ndarray | None    # [C]     None in layer 0
    v_lora: Lora | None      # identity inside; None in layer 0
    g_lora: Lora | None      # sigmoid inside; None: no output gate (llama.cpp allows it)
    k_k: np.ndarray          # [C]
    k_a: np.ndarray          # [C]
    r_k: np.ndarray          # [H, S]
    key: np.ndarray          # [C, C]
    value: np.ndarray        # [C, C]
    receptance: np.ndarray   # [C, C]
    output: np.ndarray       # [C, C]
    ln_x_w: np.ndarray | None  # [C]  None: no GroupNorm (llama.cpp allows it)
    ln_x_b: np.ndarray | None  # [C]


def _config(m, s: Sizes) -> Config:
    n_head, head_size = m.heads()
    gguf = m.model.format == "gguf"
    return Config(s, n_head, head_size, getattr(m, "ln_eps", LN_EPS), GN_EPS, NORM_EPS,
                  DECAY_SCALE_LLAMA_CPP if gguf else float(DECAY_SCALE))


def _lora(m, p: str, c: str, C: int) -> Lora:
    down_ne = m.ne(f"{p}att.{c}1")
    D = down_ne[1] if len(down_ne) == 2 else 0
    return Lora(m.take(f"{p}att.{c}1", (D, C)), m.take(f"{p}att.{c}2", (C, D)))


def _attention(m, p: str, cfg: Config, i: int) -> Attention:
    C, H, S = cfg.sizes.n_embed, cfg.n_head, cfg.head_size
    first = i == 0
    # llama.cpp loads g1/g2 and ln_x as optional (time_mix_g1 == NULL: no gate)
    gated = m.has(p + "att.g1") or m.model.format != "gguf"
    normed = m.has(p + "att.ln_x.weight") or m.model.format != "gguf"
    return Attention(
        mix=m.take(p + "att.x_rwkvag", (N_MIX, 1, C)).reshape(N_MIX, C),
        w0=m.take(p + "att.w0", (C,)), w_lora=_lora(m, p, "w", C),
        a0=m.take(p + "att.a0", (C,)), a_lora=_lora(m, p, "a", C),
        v0=None if first else m.take(p + "att.v0", (C,)),
        v_lora=None if first else _lora(m, p, "v", C),
        g_lora=_lora(m, p, "g", C) if gated else None,
        k_k=m.take(p + "att.k_k", (C,)), k_a=m.take(p + "att.k_a", (C,)),
        r_k=m.take(p + "att.r_k", (H, S)),
        key=m.take(p + "att.key.weight", (C, C)), value=m.take(p + "att.value.weight", (C, C)),
        receptance=m.take(p + "att.receptance.weight", (C, C)),
        output=m.take(p + "att.output.weight", (C, C)),
        ln_x_w=m.take(p + "att.ln_x.weight", (C,)) if normed else None,
        ln_x_b=m.take(p + "att.ln_x.bias", (C,)) if normed else None)


def _empty(cfg: Config) -> np.ndarray:
    return np.zeros((cfg.n_head, cfg.head_size, cfg.head_size), dtype=np.float32)   # [H, S, S]


def time_mix(cfg: Config, A: Attention, x: np.ndarray, x_prev: np.ndarray, heads, v_first):
    """v7 attention for one token; returns output, new head state and v_first."""
    H, S = cfg.n_head, cfg.head_size
    sx = token_shift(x, x_prev)                                             # [C]
    xr, xw, xk, xv, xa, xg = x + sx * A.mix                                 # 6 x [C]
    r = linear(A.receptance, xr)                                            # [C]
    k = linear(A.key, xk)                                                   # [C]
    v = linear(A.value, xv)                                                 # [C]
    lw = A.w0 + linear(A.w_lora.up, np.tanh(linear(A.w_lora.down, xw)))    # [C]
    w = np.exp(-np.float32(cfg.decay_scale) * sigmoid(lw)).astype(np.float32)  # [C]
    a = sigmoid(A.a0 + linear(A.a_lora.up, linear(A.a_lora.down, xa)))     # [C]
    kk = l2_normalize((k * A.k_k).reshape(H, S), cfg.norm_eps)              # [H, S]
    k = k * (1 + (a - 1) * A.k_a)                                           # [C]
    if A.v_lora is None:
        v_first = v                                                         # [C]
    else:
        mix = sigmoid(A.v0 + linear(A.v_lora.up, linear(A.v_lora.down, xv)))  # [C]
        v = v + (v_first - v) * mix                                         # [C]
    r, k, v, w, a = (t.reshape(H, S) for t in (r, k, v, w, a))              # 5 x [H, S]
    s = heads                                                               # [H, S, S]
    sa = np.einsum("hij,hj->hi", s, -kk)                                    # [H, S]
    s = (s * w[:, None, :] + sa[:, :, None] * (kk * a)[:, None, :]
         + v[:, :, None] * k[:, None, :]).astype(np.float32)                # [H, S, S]
    out = np.einsum("hij,hj->hi", s, r)                                     # [H, S]
    out = out.reshape(-1)                                                   # [C]
    if A.ln_x_w is not None:
        out = group_norm(out, A.ln_x_w, A.ln_x_b, H, cfg.gn_eps)            # [C]
    bonus = (r * k * A.r_k).sum(axis=-1, keepdims=True) * v                 # [H, S]
    out = out + bonus.reshape(-1)                                           # [C]
    if A.g_lora is not None:
        out = out * linear(A.g_lora.up, sigmoid(linear(A.g_lora.down, xg)))  # [C]
    return linear(A.output, out), s, v_first                                # [C]


VERSION = rwkv.Version(config=_config, attention=_attention, empty=_empty, time_mix=time_mix,
                       ffn_names=None)


def load(model, exact: bool = False) -> rwkv.Weights:
    """An rwkv.cpp or GGUF v7 file's weights, names and shapes checked."""
    return rwkv.load(VERSION, model, exact)
