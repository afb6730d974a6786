"""RWKV v4: its attention for the RWKV engine (``rwkv.py``), rwkv.cpp files.

The math follows rwkv.cpp's graph (``rwkv_graph.inc``: ``rwkv_att``) and BlinkDL's
RNN-mode reference: token-shift mixes ``x*m + x_prev*(1 - m)`` for r, k and v, then
the per-channel WKV recurrence.  rwkv.cpp's converter stores ``att.time_decay``
already as ``-exp(decay)`` (the per-step log decay ``w``), and ``time_first`` (``u``)
as trained.  The WKV state (``aa``, ``bb``, ``pp``) keeps numerator, denominator and
a running maximum exponent so that ``exp`` never overflows.

Contract: ``load(model, exact=False) -> rwkv.Weights``; ``forward`` and
``initial_state`` are the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import rwkv
from ggscope.forward.ops import lerp, linear, sigmoid
from ggscope.forward.rwkv import LN_EPS, Sizes, forward, initial_state

__all__ = ["Config", "Attention", "VERSION", "load", "forward", "initial_state"]

PP_EMPTY = -1e30       # "no tokens yet" log-scale of the v4 WKV state (rwkv.cpp, ChatRWKV)


@dataclass(frozen=True)
class Config:
    sizes: Sizes
    ln_eps: float = LN_EPS


@dataclass(frozen=True)
class Attention:
    mix_k: np.ndarray        # [C]
    mix_v: np.ndarray        # [C]
    mix_r: np.ndarray        # [C]
    time_first: np.ndarray   # [C]  u: bonus of the current token
    time_decay: np.ndarray   # [C]  w = -exp(decay), as rwkv.cpp's converter stores it
    key: np.ndarray          # [C, C]
    value: np.ndarray        # [C, C]
    receptance: np.ndarray   # [C, C]
    output: np.ndarray       # [C, C]


def _attention(m, p: str, cfg: Config, i: int) -> Attention:
    C = cfg.sizes.n_embed
    return Attention(
        mix_k=m.take(p + "att.time_mix_k", (C,)), mix_v=m.take(p + "att.time_mix_v", (C,)),
        mix_r=m.take(p + "att.time_mix_r", (C,)),
        time_first=m.take(p + "att.time_first", (C,)), time_decay=m.take(p + "att.time_decay", (C,)),
        key=m.take(p + "att.key.weight", (C, C)), value=m.take(p + "att.value.weight", (C, C)),
        receptance=m.take(p + "att.receptance.weight", (C, C)),
        output=m.take(p + "att.output.weight", (C, C)))


def _empty(cfg: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(aa, bb, pp): numerator and denominator scaled by exp(-pp), and pp."""
    zero = np.zeros(cfg.sizes.n_embed, dtype=np.float32)                     # [C]
    return zero, zero, np.full(cfg.sizes.n_embed, PP_EMPTY, dtype=np.float32)


def time_mix(cfg: Config, A: Attention, x: np.ndarray, x_prev: np.ndarray, state, v_first):
    """v4 attention for one token: the output and the new (aa, bb, pp)."""
    aa, bb, pp = state
    r = sigmoid(linear(A.receptance, lerp(x, x_prev, A.mix_r)))            # [C]
    k = linear(A.key, lerp(x, x_prev, A.mix_k))                             # [C]
    v = linear(A.value, lerp(x, x_prev, A.mix_v))                           # [C]
    # output: past (aa/bb at scale pp) plus the current token with bonus u
    ww = A.time_first + k                                                   # [C]
    q = np.maximum(pp, ww)                                                  # [C]
    e1, e2 = np.exp(pp - q), np.exp(ww - q)                                 # [C], [C]
    wkv = (e1 * aa + e2 * v) / (e1 * bb + e2)                               # [C]
    # state: decay the past by w, add the current token without bonus
    ww = pp + A.time_decay                                                  # [C]
    q = np.maximum(ww, k)                                                   # [C]
    e1, e2 = np.exp(ww - q), np.exp(k - q)                                  # [C], [C]
    new = ((e1 * aa + e2 * v).astype(np.float32), (e1 * bb + e2).astype(np.float32),
           q.astype(np.float32))
    return linear(A.output, r * wkv), new, v_first                          # [C]


VERSION = rwkv.Version(config=lambda m, s: Config(s), attention=_attention, empty=_empty,
                       time_mix=time_mix, ffn_names=("time_mix_k", "time_mix_r"))


def load(model, exact: bool = False) -> rwkv.Weights:
    """An rwkv.cpp v4 file's weights, names and shapes checked."""
    return rwkv.load(VERSION, model, exact)
