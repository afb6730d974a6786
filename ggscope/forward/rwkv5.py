"""RWKV v5 (5.1 and 5.2, "Eagle"): its attention for the RWKV engine (``rwkv.py``).

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

Contract: ``load(model, exact=False) -> rwkv.Weights``; ``forward`` and
``initial_state`` are the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import rwkv
from ggscope.forward.ops import group_norm, lerp, linear, silu
from ggscope.forward.rwkv import LN_EPS, Sizes, forward, initial_state

__all__ = ["Config", "Attention", "VERSION", "load", "forward", "initial_state"]

GN_EPS = 1e-5          # GroupNorm eps of ln_x in 5.1 and 5.2 (see the module docstring)


@dataclass(frozen=True)
class Config:
    sizes: Sizes
    minor: int               # 1 or 2 (5.2: the file has att.gate.weight)
    n_head: int              # H = ne[2] of blocks.0.att.time_decay (rwkv.cpp's rule)
    head_size: int           # S = n_embed / H
    ln_eps: float
    gn_eps: float


@dataclass(frozen=True)
class Attention:
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


def _config(m, s: Sizes) -> Config:
    n_head, head_size = m.heads()
    return Config(s, 2 if m.arch == "rwkv5.2" else 1, n_head, head_size, LN_EPS, GN_EPS)


def _attention(m, p: str, cfg: Config, i: int) -> Attention:
    C, H, S = cfg.sizes.n_embed, cfg.n_head, cfg.head_size
    v52 = cfg.minor == 2
    if v52:
        bonus = m.take(p + "att.time_faaaa", (H, S))                           # [H, S]
        decay = m.take(p + "att.time_decay", (H, S))                           # [H, S]
    else:
        ones = np.ones((1, S), dtype=np.float32)                               # [1, S]
        bonus = m.take(p + "att.time_first", (H, 1)) * ones                    # [H, S]
        decay = m.take(p + "att.time_decay", (H, 1)) * ones                    # [H, S]
    return Attention(
        mix_k=m.take(p + "att.time_mix_k", (C,)), mix_v=m.take(p + "att.time_mix_v", (C,)),
        mix_r=m.take(p + "att.time_mix_r", (C,)),
        mix_g=m.take(p + "att.time_mix_g", (C,)) if v52 else None,
        bonus=bonus, decay=decay,
        key=m.take(p + "att.key.weight", (C, C)), value=m.take(p + "att.value.weight", (C, C)),
        receptance=m.take(p + "att.receptance.weight", (C, C)),
        gate=m.take(p + "att.gate.weight", (C, C)) if v52 else None,
        output=m.take(p + "att.output.weight", (C, C)),
        ln_x_w=m.take(p + "att.ln_x.weight", (C,)), ln_x_b=m.take(p + "att.ln_x.bias", (C,)))


def _empty(cfg: Config) -> np.ndarray:
    return np.zeros((cfg.n_head, cfg.head_size, cfg.head_size), dtype=np.float32)   # [H, S, S]


def wkv(r, k, v, bonus, decay, s):
    """One step of the matrix-valued WKV recurrence for all heads at once."""
    a = k[:, :, None] * v[:, None, :]                                        # [H, S, S]
    out = np.einsum("hi,hij->hj", r, bonus[:, :, None] * a + s)              # [H, S]
    s = a + decay[:, :, None] * s                                            # [H, S, S]
    return out.astype(np.float32), s.astype(np.float32)


def time_mix(cfg: Config, A: Attention, x: np.ndarray, x_prev: np.ndarray, heads, v_first):
    H, S = cfg.n_head, cfg.head_size
    r = linear(A.receptance, lerp(x, x_prev, A.mix_r)).reshape(H, S)        # [H, S]
    k = linear(A.key, lerp(x, x_prev, A.mix_k)).reshape(H, S)               # [H, S]
    v = linear(A.value, lerp(x, x_prev, A.mix_v)).reshape(H, S)             # [H, S]
    out, heads = wkv(r, k, v, A.bonus, A.decay, heads)                      # [H, S], [H, S, S]
    out = group_norm(out.reshape(-1), A.ln_x_w, A.ln_x_b, H, cfg.gn_eps)    # [C]
    if cfg.minor == 2:
        out = out * silu(linear(A.gate, lerp(x, x_prev, A.mix_g)))          # [C]
    return linear(A.output, out), heads, v_first                            # [C]


VERSION = rwkv.Version(config=_config, attention=_attention, empty=_empty, time_mix=time_mix,
                       ffn_names=("time_mix_k", "time_mix_r"))


def load(model, exact: bool = False) -> rwkv.Weights:
    """An rwkv.cpp v5.1 / v5.2 file's weights, names and shapes checked."""
    return rwkv.load(VERSION, model, exact)
