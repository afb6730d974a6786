"""RWKV v5 (5.1 and 5.2, "Eagle") reference forward pass for rwkv.cpp files, float32 numpy.

Why: to check what an rwkv.cpp v5 file computes.  v5 replaces v4's per-channel WKV
with multi-headed matrix-valued state: each of H heads keeps an S x S matrix
``s[h, i, j]`` (i = key channel, j = value channel), updated per token as::

    a     = k[h, :, None] * v[h, None, :]             outer product, [S, S]
    out_h = r[h] @ (u[h, :, None] * a + s[h])         [S]
    s[h]  = a + w[h, :, None] * s[h]

followed by a GroupNorm over the heads (``ln_x``) and the output projection.  The
channel mix is v4's, unchanged.

5.1 vs 5.2 (rwkv.cpp tells them apart by ``att.gate.weight``): 5.1 has one decay and
one bonus per head (``time_decay``/``time_first``, ne [1, 1, H]); 5.2 has one per
channel (``time_decay``/``time_faaaa``, ne [1, S, H]) plus a receptance-like gate
``g = silu(gate @ xg)`` that multiplies the normalized output.  Here 5.1's per-head
values are broadcast over the head's channels, so both run through one code path.
rwkv.cpp's converter stores ``time_decay`` already as ``w = exp(-exp(decay))`` and
5.1's ``time_first`` as ``u = exp(time_first)``; 5.2's ``time_faaaa`` is ``u`` as
trained.  rwkv.cpp defines no other v5 variant (there is no 5.0 file layout).

GroupNorm eps: 1e-5 for both, PyTorch's GroupNorm default, as rwkv.cpp computes it
and as the reference logits for rwkv.cpp's test models need it (eps 64e-5, which
BlinkDL's later inference code uses for models trained with ``head_size_divisor`` 8,
moves the 5.2 test model's logits by up to 1.1).

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None) ->
(logits float32 [n_vocab], State)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import WeightMapper, architecture
from ggscope.forward.ops import group_norm, layer_norm, lerp, linear, silu
from ggscope.forward.rwkv4 import LN_EPS, ChannelMix, Ends, Sizes, feed_tokens

__all__ = ["Config", "Layer", "Weights", "LayerState", "State", "load", "forward",
           "initial_state"]

GN_EPS = 1e-5          # GroupNorm eps of ln_x in 5.1 and 5.2 (see the module docstring)


@dataclass(frozen=True)
class Config:
    sizes: Sizes
    minor: int               # 1 or 2
    n_head: int              # H = ne[2] of blocks.0.att.time_decay (rwkv.cpp's rule)
    head_size: int           # S = n_embed / H
    ln_eps: float
    gn_eps: float


@dataclass(frozen=True)
class Layer:
    ln1_w: np.ndarray        # [C]
    ln1_b: np.ndarray        # [C]
    mix_k: np.ndarray        # [C]
    mix_v: np.ndarray        # [C]
    mix_r: np.ndarray        # [C]
    mix_g: np.ndarray | None  # [C]     5.2 only
    bonus: np.ndarray        # [H, S]   u (5.1: exp(time_first) per head, broadcast)
    decay: np.ndarray        # [H, S]   w = exp(-exp(time_decay)), as stored
    key: np.ndarray          # [C, C]
    value: np.ndarray        # [C, C]
    receptance: np.ndarray   # [C, C]
    gate: np.ndarray | None  # [C, C]   5.2 only
    output: np.ndarray       # [C, C]
    ln_x_w: np.ndarray       # [C]
    ln_x_b: np.ndarray       # [C]
    ln2_w: np.ndarray        # [C]
    ln2_b: np.ndarray        # [C]
    ffn: ChannelMix


@dataclass(frozen=True)
class Weights:
    config: Config
    ends: Ends
    layers: tuple[Layer, ...]


@dataclass(frozen=True)
class LayerState:
    att_x: np.ndarray        # [C]       ln1 output of the previous token
    heads: np.ndarray        # [H, S, S] WKV state, s[h, key channel, value channel]
    ffn_x: np.ndarray        # [C]       ln2 output of the previous token


State = tuple[LayerState, ...]


def _config(m: WeightMapper, s: Sizes, minor: int) -> Config:
    n_head, head_size = m.heads()
    return Config(s, minor, n_head, head_size, LN_EPS, GN_EPS)


def load(model) -> Weights:
    """Map an rwkv.cpp v5.1/v5.2 file's tensors to float32 arrays, checking shapes."""
    arch = architecture(model)
    minor = 2 if arch == "rwkv5.2" else 1
    m = WeightMapper(model, f"rwkv5.{minor}")
    s = Sizes.read(m)
    cfg = _config(m, s, minor)
    C, H, S = s.n_embed, cfg.n_head, cfg.head_size
    layers = []
    for i in range(s.n_layer):
        p = f"blocks.{i}."
        if minor == 2:
            bonus = m.take(p + "att.time_faaaa", (H, S))                       # [H, S]
            decay = m.take(p + "att.time_decay", (H, S))                       # [H, S]
        else:
            ones = np.ones((1, S), dtype=np.float32)                           # [1, S]
            bonus = m.take(p + "att.time_first", (H, 1)) * ones                # [H, S]
            decay = m.take(p + "att.time_decay", (H, 1)) * ones                # [H, S]
        layers.append(Layer(
            ln1_w=m.take(p + "ln1.weight", (C,)), ln1_b=m.take(p + "ln1.bias", (C,)),
            mix_k=m.take(p + "att.time_mix_k", (C,)),
            mix_v=m.take(p + "att.time_mix_v", (C,)),
            mix_r=m.take(p + "att.time_mix_r", (C,)),
            mix_g=m.take(p + "att.time_mix_g", (C,)) if minor == 2 else None,
            bonus=bonus, decay=decay,
            key=m.take(p + "att.key.weight", (C, C)),
            value=m.take(p + "att.value.weight", (C, C)),
            receptance=m.take(p + "att.receptance.weight", (C, C)),
            gate=m.take(p + "att.gate.weight", (C, C)) if minor == 2 else None,
            output=m.take(p + "att.output.weight", (C, C)),
            ln_x_w=m.take(p + "att.ln_x.weight", (C,)),
            ln_x_b=m.take(p + "att.ln_x.bias", (C,)),
            ln2_w=m.take(p + "ln2.weight", (C,)), ln2_b=m.take(p + "ln2.bias", (C,)),
            ffn=ChannelMix.load(m, p, s),
        ))
    return Weights(cfg, Ends.load(m, s), tuple(layers))


def initial_state(config: Config) -> State:
    C, H, S = config.sizes.n_embed, config.n_head, config.head_size
    zero = np.zeros(C, dtype=np.float32)                                     # [C]
    heads = np.zeros((H, S, S), dtype=np.float32)                            # [H, S, S]
    return tuple(LayerState(zero, heads, zero) for _ in range(config.sizes.n_layer))


def wkv(r, k, v, bonus, decay, s):
    """One step of the matrix-valued WKV recurrence for all heads at once."""
    a = k[:, :, None] * v[:, None, :]                                        # [H, S, S]
    out = np.einsum("hi,hij->hj", r, bonus[:, :, None] * a + s)              # [H, S]
    s = a + decay[:, :, None] * s                                            # [H, S, S]
    return out.astype(np.float32), s.astype(np.float32)


def time_mix(cfg: Config, L: Layer, x: np.ndarray, st: LayerState):
    H, S = cfg.n_head, cfg.head_size
    r = linear(L.receptance, lerp(x, st.att_x, L.mix_r)).reshape(H, S)      # [H, S]
    k = linear(L.key, lerp(x, st.att_x, L.mix_k)).reshape(H, S)             # [H, S]
    v = linear(L.value, lerp(x, st.att_x, L.mix_v)).reshape(H, S)           # [H, S]
    out, heads = wkv(r, k, v, L.bonus, L.decay, st.heads)                   # [H, S], [H, S, S]
    out = group_norm(out.reshape(-1), L.ln_x_w, L.ln_x_b, H, cfg.gn_eps)    # [C]
    if cfg.minor == 2:
        out = out * silu(linear(L.gate, lerp(x, st.att_x, L.mix_g)))        # [C]
    return linear(L.output, out), heads                                     # [C]


def step(w: Weights, token: int, state: State) -> tuple[np.ndarray, State]:
    cfg = w.config
    x = w.ends.embed(token, cfg.ln_eps)                                      # [C]
    new = []
    for L, st in zip(w.layers, state):
        xa = layer_norm(x, L.ln1_w, L.ln1_b, cfg.ln_eps)                     # [C]
        out, heads = time_mix(cfg, L, xa, st)
        x = x + out                                                          # [C]
        xf = layer_norm(x, L.ln2_w, L.ln2_b, cfg.ln_eps)                     # [C]
        x = x + L.ffn(xf, st.ffn_x)                                          # [C]
        new.append(LayerState(xa, heads, xf))
    return w.ends.logits(x, cfg.ln_eps), tuple(new)


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Feed ``tokens`` one at a time; return the logits after the last one and the state."""
    return feed_tokens(step, initial_state, weights, tokens, state)
