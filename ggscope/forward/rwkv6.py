"""RWKV v6 ("Finch"): its attention for the RWKV engine (``rwkv.py``), rwkv.cpp and GGUF files.

Why: to check what an rwkv.cpp v6 file computes.  v6 keeps v5.2's multi-headed WKV
state and gate, and makes two things depend on the input (data-dependent):

* token shift: the five mixes (w, k, v, r, g) get a low-rank correction computed from
  ``x + sx * maa_x`` (``sx = x_prev - x``): ``m = W2[i] @ tanh(W1 @ xxx)[i]``;
* decay: ``w = exp(-exp(time_decay + Wd2 @ tanh(Wd1 @ xw)))`` per channel and token.

Per head (S x S state ``s[h, i, j]``, i = key channel, j = value channel)::

    a     = k[h, :, None] * v[h, None, :]
    out_h = r[h] @ (u[h, :, None] * a + s[h])
    s[h]  = a + w[h, :, None] * s[h]

then GroupNorm over heads with eps 64e-5 (rwkv.cpp scales by 1/8 and uses eps 1e-5,
which is the same), times ``silu(gate @ xg)``, then the output projection.  The
channel mix uses ``x + sx * maa`` instead of v4's lerp.

Tensor layout as rwkv.cpp's converter writes it (numpy order): ``time_maa_w1``
[5*D, C], ``time_maa_w2`` [5, C, D], ``time_decay_w1`` [D', C], ``time_decay_w2``
[C, D'], ``time_decay``/``time_faaaa`` [H, S].
``time_decay`` is stored as trained (rwkv.cpp applies exp(-exp(.)) in the graph).

GGUF files may halve x after every ``rescale_every_n_layers`` layers (llama.cpp rwkv6.cpp).

Contract: ``load(model, exact=False) -> rwkv.Weights``; ``forward`` and
``initial_state`` are the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import WeightError, rwkv
from ggscope.forward.ops import decay_from_log, group_norm, linear, silu, token_shift
from ggscope.forward.rwkv import LN_EPS, Sizes, forward, initial_state

__all__ = ["Config", "Attention", "VERSION", "load", "forward", "initial_state"]

GN_EPS = 64e-5         # ln_x GroupNorm eps (1e-5 * head_size_divisor 8 squared)
N_MIX = 5              # data-dependent mixes, in the order the file stores them: w k v r g


@dataclass(frozen=True)
class Config:
    sizes: Sizes
    n_head: int              # H = ne[2] of blocks.0.att.time_decay (rwkv.cpp's rule)
    head_size: int           # S = n_embed / H
    mix_rank: int            # D, the low-rank width of the token-shift correction
    decay_rank: int          # D', the low-rank width of the decay correction
    ln_eps: float
    gn_eps: float
    rescale_every: int = 0   # GGUF rescale_every_n_layers: x /= 2 after every n-th layer


@dataclass(frozen=True)
class Attention:
    maa_x: np.ndarray        # [C]
    maa: np.ndarray          # [5, C]      static mixes w, k, v, r, g
    maa_w1: np.ndarray       # [5*D, C]
    maa_w2: np.ndarray       # [5, C, D]
    decay: np.ndarray        # [C]         log-log decay (flattened heads)
    decay_w1: np.ndarray     # [D', C]
    decay_w2: np.ndarray     # [C, D']
    bonus: np.ndarray        # [H, S]      u (time_faaaa)
    key: np.ndarray          # [C, C]
    value: np.ndarray        # [C, C]
    receptance: np.ndarray   # [C, C]
    gate: np.ndarray         # [C, C]
    output: np.ndarray       # [C, C]
    ln_x_w: np.ndarray       # [C]
    ln_x_b: np.ndarray       # [C]


def _config(m, s: Sizes) -> Config:
    n_head, head_size = m.heads()
    w1, d1 = m.ne("blocks.0.att.time_maa_w1"), m.ne("blocks.0.att.time_decay_w1")
    if len(w1) != 2 or w1[1] % N_MIX or len(d1) != 2:
        raise WeightError(
            f"{m.model.path}: cannot read the v6 low-rank widths: time_maa_w1 ne "
            f"{list(w1)} (want [C, 5*D]), time_decay_w1 ne {list(d1)} (want [C, D'])")
    return Config(s, n_head, head_size, w1[1] // N_MIX, d1[1], getattr(m, "ln_eps", LN_EPS),
                  GN_EPS, getattr(m, "rescale_every", 0))


def _mixes(m, p: str, C: int) -> np.ndarray:
    """The five static mixes [5, C]: one fused tensor in GGUF files, else five."""
    if m.has(p + "att.time_maa_fused"):
        return m.take(p + "att.time_maa_fused", (N_MIX, 1, 1, C)).reshape(N_MIX, C)
    return np.stack([m.take(p + f"att.time_maa_{c}", (C,)) for c in "wkvrg"])


def _attention(m, p: str, cfg: Config, i: int) -> Attention:
    C, H, S = cfg.sizes.n_embed, cfg.n_head, cfg.head_size
    D, Dd = cfg.mix_rank, cfg.decay_rank
    return Attention(
        maa_x=m.take(p + "att.time_maa_x", (C,)), maa=_mixes(m, p, C),
        maa_w1=m.take(p + "att.time_maa_w1", (N_MIX * D, C)),
        maa_w2=m.take(p + "att.time_maa_w2", (N_MIX, C, D)),
        decay=m.take(p + "att.time_decay", (H, S)).reshape(C),
        decay_w1=m.take(p + "att.time_decay_w1", (Dd, C)),
        decay_w2=m.take(p + "att.time_decay_w2", (C, Dd)),
        bonus=m.take(p + "att.time_faaaa", (H, S)),
        key=m.take(p + "att.key.weight", (C, C)), value=m.take(p + "att.value.weight", (C, C)),
        receptance=m.take(p + "att.receptance.weight", (C, C)),
        gate=m.take(p + "att.gate.weight", (C, C)), output=m.take(p + "att.output.weight", (C, C)),
        ln_x_w=m.take(p + "att.ln_x.weight", (C,)), ln_x_b=m.take(p + "att.ln_x.bias", (C,)))


def _empty(cfg: Config) -> np.ndarray:
    return np.zeros((cfg.n_head, cfg.head_size, cfg.head_size), dtype=np.float32)   # [H, S, S]


def time_mix(cfg: Config, A: Attention, x: np.ndarray, x_prev: np.ndarray, heads, v_first):
    H, S = cfg.n_head, cfg.head_size
    sx = token_shift(x, x_prev)                                             # [C]
    h = np.tanh(linear(A.maa_w1, x + sx * A.maa_x)).reshape(N_MIX, -1)      # [5, D]
    dyn = np.einsum("icd,id->ic", A.maa_w2, h)                              # [5, C]
    xw, xk, xv, xr, xg = x + sx * (A.maa + dyn)                             # 5 x [C]
    r = linear(A.receptance, xr).reshape(H, S)                              # [H, S]
    k = linear(A.key, xk).reshape(H, S)                                     # [H, S]
    v = linear(A.value, xv).reshape(H, S)                                   # [H, S]
    g = silu(linear(A.gate, xg))                                            # [C]
    lw = A.decay + linear(A.decay_w2, np.tanh(linear(A.decay_w1, xw)))      # [C]
    w = decay_from_log(lw).reshape(H, S)                                    # [H, S]
    a = k[:, :, None] * v[:, None, :]                                       # [H, S, S]
    out = np.einsum("hi,hij->hj", r, A.bonus[:, :, None] * a + heads)       # [H, S]
    heads = (a + w[:, :, None] * heads).astype(np.float32)                  # [H, S, S]
    out = group_norm(out.reshape(-1), A.ln_x_w, A.ln_x_b, H, cfg.gn_eps)    # [C]
    return linear(A.output, out * g), heads, v_first                        # [C]


VERSION = rwkv.Version(config=_config, attention=_attention, empty=_empty, time_mix=time_mix,
                       ffn_names=("time_maa_k", "time_maa_r"),
                       rescale_every=lambda cfg: cfg.rescale_every)


def load(model, exact: bool = False) -> rwkv.Weights:
    """An rwkv.cpp or GGUF v6 file's weights, names and shapes checked."""
    return rwkv.load(VERSION, model, exact)
