"""RWKV v4 reference forward pass for rwkv.cpp files, in float32 numpy.

Why: to check what an rwkv.cpp v4 file computes (``ggscope run``), independent of
rwkv.cpp.  v4 is also the base every later RWKV version builds on, so the parts they
keep unchanged live here and ``rwkv5/6/7.py`` import them: the file's sizes
(``Sizes``), the embedding + ln0 at the input and ln_out + head at the output
(``Ends``), and the v4 channel mix (``ChannelMix``, reused by v5).

The math follows rwkv.cpp's graph (``rwkv_graph.inc``: ``rwkv_att``, ``rwkv_ffn``)
and BlinkDL's RNN-mode reference.  One token at a time, per layer::

    x += att(ln1(x))      time mix: token shift + the WKV recurrence
    x += ffn(ln2(x))      channel mix: token shift + squared-ReLU MLP

rwkv.cpp's converter stores ``att.time_decay`` already as ``-exp(decay)`` (the
per-step log decay ``w``), and ``time_first`` (``u``) as trained.  The WKV state
(``aa``, ``bb``, ``pp``) keeps numerator, denominator and a running maximum exponent
so that ``exp`` never overflows.

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None) ->
(logits float32 [n_vocab], State)``.  State is immutable; pass it back to continue.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import WeightError, WeightMapper, check_tokens
from ggscope.forward.ops import layer_norm, lerp, linear, relu_squared, sigmoid
from ggscope.forward.rwkv_gguf import GGUFMapper
from ggscope.forward.rwkv_sizes import LN_EPS, Sizes

__all__ = ["mapper_for", "Sizes", "Ends", "ChannelMix", "Config", "Layer", "Weights", "LayerState",
           "State", "load", "forward", "initial_state"]

PP_EMPTY = -1e30       # "no tokens yet" log-scale of the v4 WKV state (rwkv.cpp, ChatRWKV)


# ---- parts shared with later versions ---------------------------------------------

def mapper_for(model, arch: str, exact: bool = False) -> WeightMapper:
    """The weight mapper for ``model``: rwkv.cpp names as stored, or (GGUF files, v6/v7)
    the same names answered through ``rwkv_gguf``'s table of llama.cpp's names.  A GGUF
    file's matrices carry their ggml type, so products round the activations as
    llama.cpp's CPU backend does (unless ``exact``); rwkv.cpp files, whose ggml is not
    the pinned one, are multiplied in plain float32."""
    if model.format == "gguf":
        return GGUFMapper(model, arch, typed=not exact)
    return WeightMapper(model, arch)


@dataclass(frozen=True)
class Ends:
    """Input embedding + ln0, and output ln_out + head: the same in every version."""
    emb: np.ndarray          # [V, C]
    ln0_w: np.ndarray        # [C]
    ln0_b: np.ndarray        # [C]
    ln_out_w: np.ndarray     # [C]
    ln_out_b: np.ndarray     # [C]
    head: np.ndarray         # [V, C]

    @classmethod
    def load(cls, m: WeightMapper, s: Sizes) -> "Ends":
        C, V = s.n_embed, s.n_vocab
        return cls(
            emb=m.take("emb.weight", (V, C)),
            ln0_w=m.take("blocks.0.ln0.weight", (C,)),
            ln0_b=m.take("blocks.0.ln0.bias", (C,)),
            ln_out_w=m.take("ln_out.weight", (C,)),
            ln_out_b=m.take("ln_out.bias", (C,)),
            head=m.take("head.weight", (V, C)),
        )

    def embed(self, token: int, eps: float) -> np.ndarray:
        return layer_norm(self.emb[token], self.ln0_w, self.ln0_b, eps)      # [C]

    def logits(self, x: np.ndarray, eps: float) -> np.ndarray:
        x = layer_norm(x, self.ln_out_w, self.ln_out_b, eps)                # [C]
        return linear(self.head, x)                                          # [V]


@dataclass(frozen=True)
class ChannelMix:
    """The v4 (and v5) FFN: token-shift mixes, squared ReLU, receptance gate."""
    mix_k: np.ndarray        # [C]
    mix_r: np.ndarray        # [C]
    key: np.ndarray          # [F, C]
    value: np.ndarray        # [C, F]
    receptance: np.ndarray   # [C, C]

    @classmethod
    def load(cls, m: WeightMapper, p: str, s: Sizes) -> "ChannelMix":
        C, F = s.n_embed, s.n_ffn
        return cls(
            mix_k=m.take(p + "ffn.time_mix_k", (C,)),
            mix_r=m.take(p + "ffn.time_mix_r", (C,)),
            key=m.take(p + "ffn.key.weight", (F, C)),
            value=m.take(p + "ffn.value.weight", (C, F)),
            receptance=m.take(p + "ffn.receptance.weight", (C, C)),
        )

    def __call__(self, x: np.ndarray, x_prev: np.ndarray) -> np.ndarray:
        xk = lerp(x, x_prev, self.mix_k)                                     # [C]
        xr = lerp(x, x_prev, self.mix_r)                                     # [C]
        r = sigmoid(linear(self.receptance, xr))                             # [C]
        k = relu_squared(linear(self.key, xk))                               # [F]
        return r * linear(self.value, k)                                     # [C]


# ---- v4 -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    sizes: Sizes
    ln_eps: float = LN_EPS


@dataclass(frozen=True)
class Layer:
    ln1_w: np.ndarray        # [C]
    ln1_b: np.ndarray        # [C]
    mix_k: np.ndarray        # [C]
    mix_v: np.ndarray        # [C]
    mix_r: np.ndarray        # [C]
    time_first: np.ndarray   # [C]  u: bonus of the current token
    time_decay: np.ndarray   # [C]  w = -exp(decay), as rwkv.cpp's converter stores it
    key: np.ndarray          # [C, C]
    value: np.ndarray        # [C, C]
    receptance: np.ndarray   # [C, C]
    output: np.ndarray       # [C, C]
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
    att_x: np.ndarray        # [C] ln1 output of the previous token
    aa: np.ndarray           # [C] WKV numerator, scaled by exp(-pp)
    bb: np.ndarray           # [C] WKV denominator, scaled by exp(-pp)
    pp: np.ndarray           # [C] log-scale of aa and bb
    ffn_x: np.ndarray        # [C] ln2 output of the previous token


State = tuple[LayerState, ...]


def load(model) -> Weights:
    """Map an rwkv.cpp v4 file's tensors to float32 arrays, checking names and shapes."""
    m = WeightMapper(model, "rwkv4")
    s = Sizes.read(m)
    C = s.n_embed
    layers = []
    for i in range(s.n_layer):
        p = f"blocks.{i}."
        layers.append(Layer(
            ln1_w=m.take(p + "ln1.weight", (C,)), ln1_b=m.take(p + "ln1.bias", (C,)),
            mix_k=m.take(p + "att.time_mix_k", (C,)),
            mix_v=m.take(p + "att.time_mix_v", (C,)),
            mix_r=m.take(p + "att.time_mix_r", (C,)),
            time_first=m.take(p + "att.time_first", (C,)),
            time_decay=m.take(p + "att.time_decay", (C,)),
            key=m.take(p + "att.key.weight", (C, C)),
            value=m.take(p + "att.value.weight", (C, C)),
            receptance=m.take(p + "att.receptance.weight", (C, C)),
            output=m.take(p + "att.output.weight", (C, C)),
            ln2_w=m.take(p + "ln2.weight", (C,)), ln2_b=m.take(p + "ln2.bias", (C,)),
            ffn=ChannelMix.load(m, p, s),
        ))
    return Weights(Config(s), Ends.load(m, s), tuple(layers))


def initial_state(config: Config) -> State:
    C = config.sizes.n_embed
    zero = np.zeros(C, dtype=np.float32)                                     # [C]
    empty = np.full(C, PP_EMPTY, dtype=np.float32)                           # [C]
    return tuple(LayerState(zero, zero, zero, empty, zero) for _ in range(config.sizes.n_layer))


def time_mix(L: Layer, x: np.ndarray, st: LayerState) -> tuple[np.ndarray, tuple]:
    """v4 attention for one token; returns the output and the new (aa, bb, pp)."""
    r = sigmoid(linear(L.receptance, lerp(x, st.att_x, L.mix_r)))          # [C]
    k = linear(L.key, lerp(x, st.att_x, L.mix_k))                           # [C]
    v = linear(L.value, lerp(x, st.att_x, L.mix_v))                         # [C]
    # output: past (aa/bb at scale pp) plus the current token with bonus u
    ww = L.time_first + k                                                   # [C]
    q = np.maximum(st.pp, ww)                                               # [C]
    e1, e2 = np.exp(st.pp - q), np.exp(ww - q)                              # [C], [C]
    wkv = (e1 * st.aa + e2 * v) / (e1 * st.bb + e2)                         # [C]
    # state: decay the past by w, add the current token without bonus
    ww = st.pp + L.time_decay                                               # [C]
    q = np.maximum(ww, k)                                                   # [C]
    e1, e2 = np.exp(ww - q), np.exp(k - q)                                  # [C], [C]
    aa, bb = e1 * st.aa + e2 * v, e1 * st.bb + e2                           # [C], [C]
    return linear(L.output, r * wkv), (aa, bb, q)                           # [C]


def step(w: Weights, token: int, state: State) -> tuple[np.ndarray, State]:
    eps = w.config.ln_eps
    x = w.ends.embed(token, eps)                                                # [C]
    new = []
    for L, st in zip(w.layers, state):
        xa = layer_norm(x, L.ln1_w, L.ln1_b, eps)                            # [C]
        out, (aa, bb, pp) = time_mix(L, xa, st)
        x = x + out                                                          # [C]
        xf = layer_norm(x, L.ln2_w, L.ln2_b, eps)                            # [C]
        x = x + L.ffn(xf, st.ffn_x)                                          # [C]
        new.append(LayerState(xa, aa.astype(np.float32), bb.astype(np.float32),
                              pp.astype(np.float32), xf))
    return w.ends.logits(x, eps), tuple(new)


def feed_tokens(step, initial_state, weights, tokens: list[int], state=None):
    """The token loop every RWKV version shares: ``step`` one token at a time from ``state``
    (a fresh ``initial_state(config)`` when None); the logits after the last token, and the state."""
    ids = check_tokens(tokens, weights.config.sizes.n_vocab)
    state = initial_state(weights.config) if state is None else state
    logits = np.zeros(weights.config.sizes.n_vocab, dtype=np.float32)
    for t in ids:
        logits, state = step(weights, t, state)
    return logits.astype(np.float32), state


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Feed ``tokens`` one at a time; return the logits after the last one and the state."""
    return feed_tokens(step, initial_state, weights, tokens, state)
