"""RWKV v6 ("Finch") reference forward pass for rwkv.cpp files, in float32 numpy.

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

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None) ->
(logits float32 [n_vocab], State)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import WeightError, WeightMapper
from ggscope.forward.ops import decay_from_log, group_norm, layer_norm, linear, relu_squared, sigmoid, silu, token_shift
from ggscope.forward.rwkv4 import LN_EPS, Ends, Sizes, feed_tokens, mapper_for

__all__ = ["Config", "Layer", "Weights", "LayerState", "State", "load", "forward",
           "initial_state"]

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
class Layer:
    ln1_w: np.ndarray        # [C]
    ln1_b: np.ndarray        # [C]
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
    ln2_w: np.ndarray        # [C]
    ln2_b: np.ndarray        # [C]
    ffn_maa_k: np.ndarray    # [C]
    ffn_maa_r: np.ndarray    # [C]
    ffn_key: np.ndarray      # [F, C]
    ffn_value: np.ndarray    # [C, F]
    ffn_receptance: np.ndarray  # [C, C]


@dataclass(frozen=True)
class Weights:
    config: Config
    ends: Ends
    layers: tuple[Layer, ...]


@dataclass(frozen=True)
class LayerState:
    att_x: np.ndarray        # [C]       ln1 output of the previous token
    heads: np.ndarray        # [H, S, S] WKV state
    ffn_x: np.ndarray        # [C]       ln2 output of the previous token


State = tuple[LayerState, ...]


def _config(m: WeightMapper, s: Sizes) -> Config:
    n_head, head_size = m.heads()
    w1, d1 = m.ne("blocks.0.att.time_maa_w1"), m.ne("blocks.0.att.time_decay_w1")
    if len(w1) != 2 or w1[1] % N_MIX or len(d1) != 2:
        raise WeightError(
            f"{m.model.path}: cannot read the v6 low-rank widths: time_maa_w1 ne "
            f"{list(w1)} (want [C, 5*D]), time_decay_w1 ne {list(d1)} (want [C, D'])")
    return Config(s, n_head, head_size, w1[1] // N_MIX, d1[1], getattr(m, "ln_eps", LN_EPS),
                  GN_EPS, getattr(m, "rescale_every", 0))


def _mixes(m: WeightMapper, p: str, C: int) -> np.ndarray:
    """The five static mixes [5, C]: one fused tensor in GGUF files, else five."""
    if m.has(p + "att.time_maa_fused"):
        return m.take(p + "att.time_maa_fused", (N_MIX, 1, 1, C)).reshape(N_MIX, C)
    return np.stack([m.take(p + f"att.time_maa_{c}", (C,)) for c in "wkvrg"])


def load(model, exact: bool = False) -> Weights:
    """Map an rwkv.cpp or GGUF v6 file's tensors to float32 arrays, checking names and shapes."""
    m = mapper_for(model, "rwkv6", exact)
    s = Sizes.read(m)
    cfg = _config(m, s)
    C, F, H, S = s.n_embed, s.n_ffn, cfg.n_head, cfg.head_size
    D, Dd = cfg.mix_rank, cfg.decay_rank
    layers = []
    for i in range(s.n_layer):
        p = f"blocks.{i}."
        layers.append(Layer(
            ln1_w=m.take(p + "ln1.weight", (C,)), ln1_b=m.take(p + "ln1.bias", (C,)),
            maa_x=m.take(p + "att.time_maa_x", (C,)),
            maa=_mixes(m, p, C),
            maa_w1=m.take(p + "att.time_maa_w1", (N_MIX * D, C)),
            maa_w2=m.take(p + "att.time_maa_w2", (N_MIX, C, D)),
            decay=m.take(p + "att.time_decay", (H, S)).reshape(C),
            decay_w1=m.take(p + "att.time_decay_w1", (Dd, C)),
            decay_w2=m.take(p + "att.time_decay_w2", (C, Dd)),
            bonus=m.take(p + "att.time_faaaa", (H, S)),
            key=m.take(p + "att.key.weight", (C, C)),
            value=m.take(p + "att.value.weight", (C, C)),
            receptance=m.take(p + "att.receptance.weight", (C, C)),
            gate=m.take(p + "att.gate.weight", (C, C)),
            output=m.take(p + "att.output.weight", (C, C)),
            ln_x_w=m.take(p + "att.ln_x.weight", (C,)),
            ln_x_b=m.take(p + "att.ln_x.bias", (C,)),
            ln2_w=m.take(p + "ln2.weight", (C,)), ln2_b=m.take(p + "ln2.bias", (C,)),
            ffn_maa_k=m.take(p + "ffn.time_maa_k", (C,)),
            ffn_maa_r=m.take(p + "ffn.time_maa_r", (C,)),
            ffn_key=m.take(p + "ffn.key.weight", (F, C)),
            ffn_value=m.take(p + "ffn.value.weight", (C, F)),
            ffn_receptance=m.take(p + "ffn.receptance.weight", (C, C)),
        ))
    return Weights(cfg, Ends.load(m, s), tuple(layers))


def initial_state(config: Config) -> State:
    C, H, S = config.sizes.n_embed, config.n_head, config.head_size
    zero = np.zeros(C, dtype=np.float32)                                     # [C]
    heads = np.zeros((H, S, S), dtype=np.float32)                            # [H, S, S]
    return tuple(LayerState(zero, heads, zero) for _ in range(config.sizes.n_layer))


def time_mix(cfg: Config, L: Layer, x: np.ndarray, st: LayerState):
    H, S = cfg.n_head, cfg.head_size
    sx = token_shift(x, st.att_x)                                           # [C]
    h = np.tanh(linear(L.maa_w1, x + sx * L.maa_x)).reshape(N_MIX, -1)      # [5, D]
    dyn = np.einsum("icd,id->ic", L.maa_w2, h)                              # [5, C]
    xw, xk, xv, xr, xg = x + sx * (L.maa + dyn)                             # 5 x [C]
    r = linear(L.receptance, xr).reshape(H, S)                              # [H, S]
    k = linear(L.key, xk).reshape(H, S)                                     # [H, S]
    v = linear(L.value, xv).reshape(H, S)                                   # [H, S]
    g = silu(linear(L.gate, xg))                                            # [C]
    lw = L.decay + linear(L.decay_w2, np.tanh(linear(L.decay_w1, xw)))      # [C]
    w = decay_from_log(lw).reshape(H, S)                                    # [H, S]
    a = k[:, :, None] * v[:, None, :]                                       # [H, S, S]
    out = np.einsum("hi,hij->hj", r, L.bonus[:, :, None] * a + st.heads)    # [H, S]
    heads = (a + w[:, :, None] * st.heads).astype(np.float32)               # [H, S, S]
    out = group_norm(out.reshape(-1), L.ln_x_w, L.ln_x_b, H, cfg.gn_eps)    # [C]
    return linear(L.output, out * g), heads                                 # [C]


def channel_mix(L: Layer, x: np.ndarray, x_prev: np.ndarray) -> np.ndarray:
    sx = token_shift(x, x_prev)                                             # [C]
    r = sigmoid(linear(L.ffn_receptance, x + sx * L.ffn_maa_r))             # [C]
    k = relu_squared(linear(L.ffn_key, x + sx * L.ffn_maa_k))               # [F]
    return r * linear(L.ffn_value, k)                                       # [C]


def step(w: Weights, token: int, state: State) -> tuple[np.ndarray, State]:
    cfg = w.config
    x = w.ends.embed(token, cfg.ln_eps)                                      # [C]
    new = []
    for i, (L, st) in enumerate(zip(w.layers, state)):
        xa = layer_norm(x, L.ln1_w, L.ln1_b, cfg.ln_eps)                     # [C]
        out, heads = time_mix(cfg, L, xa, st)
        x = x + out                                                          # [C]
        xf = layer_norm(x, L.ln2_w, L.ln2_b, cfg.ln_eps)                     # [C]
        x = x + channel_mix(L, xf, st.ffn_x)                                 # [C]
        if cfg.rescale_every and (i + 1) % cfg.rescale_every == 0:
            x = (x * np.float32(0.5)).astype(np.float32)                     # llama.cpp rwkv6.cpp
        new.append(LayerState(xa, heads, xf))
    return w.ends.logits(x, cfg.ln_eps), tuple(new)


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Feed ``tokens`` one at a time; return the logits after the last one and the state."""
    return feed_tokens(step, initial_state, weights, tokens, state)
