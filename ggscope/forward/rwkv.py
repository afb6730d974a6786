"""The RWKV family (v4, v5.1/5.2, v6, v7) as one engine whose differences are a table.

Why: every RWKV version runs the same block -- ``x += att(ln1(x)); x += ffn(ln2(x))``,
one token at a time, each half token-shifted against the previous token's normed
input -- between the same ends (embedding + ln0, ln_out + head).  What changes from
version to version is the attention ("time mix": its weights, its recurrent state,
its arithmetic), the channel mix's names and whether it has a receptance gate, and two
details (v6 GGUF files halve x every n layers; v7 threads the first layer's values
through the others).  So the loop, the state, the ends and the channel mix live here
once, and each ``rwkvN.py`` holds only its ``Version``: how to read its attention
weights and what its time mix computes (rwkv.cpp's ``rwkv_graph.inc`` and llama.cpp
as vendored in llama-cpp-python 0.3.36, src/models/rwkv6*.cpp / rwkv7*.cpp).

GGUF files (v6, v7) are multiplied as llama.cpp's CPU backend multiplies them --
activations rounded to each weight type's dot-product format (``WeightMapper(typed=
True)``) -- unless ``exact``; rwkv.cpp files, whose ggml is not the pinned one, are
multiplied in plain float32 either way.

Contract: ``load(version, model, exact=False) -> Weights``; ``forward(weights, tokens,
state=None) -> (logits float32 [n_vocab], State)``; ``initial_state(weights)``.
State is immutable (a tuple of ``LayerState``); pass it back to continue.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ggscope.forward import WeightMapper, architecture, check_tokens
from ggscope.forward.ops import layer_norm, lerp, linear, relu_squared, sigmoid, token_shift
from ggscope.forward.rwkv_gguf import GGUFMapper
from ggscope.forward.rwkv_sizes import LN_EPS, Sizes

__all__ = ["Version", "Ends", "ChannelMix", "Block", "Weights", "LayerState", "State",
           "mapper_for", "load", "forward", "initial_state", "LN_EPS", "Sizes"]


@dataclass(frozen=True)
class Version:
    """What one RWKV version brings to the engine."""
    config: Callable[[WeightMapper, Sizes], Any]           # -> the version's Config (.sizes, .ln_eps)
    attention: Callable[[WeightMapper, str, Any, int], Any]  # (m, "blocks.i.", cfg, i) -> weights
    empty: Callable[[Any], Any]                            # cfg -> one layer's empty attention state
    time_mix: Callable                                     # (cfg, att, x, x_prev, s, v_first) -> (out, s, v_first)
    ffn_names: tuple[str, str] | None                      # (mix_k, mix_r) names; None: v7's mix without receptance
    rescale_every: Callable[[Any], int] = lambda cfg: 0     # x /= 2 after every n-th layer (0: never)


def mapper_for(model, arch: str, exact: bool = False) -> WeightMapper:
    """rwkv.cpp names as stored, or (GGUF files, v6/v7) the same names answered through
    ``rwkv_gguf``'s table of llama.cpp's names, with typed matrices unless ``exact``."""
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
        return cls(emb=m.take("emb.weight", (V, C)),
                   ln0_w=m.take("blocks.0.ln0.weight", (C,)), ln0_b=m.take("blocks.0.ln0.bias", (C,)),
                   ln_out_w=m.take("ln_out.weight", (C,)), ln_out_b=m.take("ln_out.bias", (C,)),
                   head=m.take("head.weight", (V, C)))

    def embed(self, token: int, eps: float) -> np.ndarray:
        return layer_norm(np.asarray(self.emb[token]), self.ln0_w, self.ln0_b, eps)   # [C]

    def logits(self, x: np.ndarray, eps: float) -> np.ndarray:
        return linear(self.head, layer_norm(x, self.ln_out_w, self.ln_out_b, eps))    # [V]


@dataclass(frozen=True)
class ChannelMix:
    """The FFN: token-shifted inputs, squared ReLU, and (v4-v6) a receptance gate::

        out = value @ relu(key @ mixed(mix_k))^2
        v4-v6: out *= sigmoid(receptance @ mixed(mix_r))

    ``mixed(m)`` is v4/v5's ``x*m + x_prev*(1 - m)`` (``time_mix_*``) or v6/v7's
    ``x + (x_prev - x)*m`` (``time_maa_*`` / ``x_k``).
    """
    mix_k: np.ndarray                 # [C]
    key: np.ndarray                   # [F, C]
    value: np.ndarray                 # [C, F]
    mix_r: np.ndarray | None = None   # [C]
    receptance: np.ndarray | None = None  # [C, C]
    lerp: bool = False                # v4/v5's mixing

    @classmethod
    def load(cls, m: WeightMapper, p: str, s: Sizes, names: tuple[str, str] | None) -> "ChannelMix":
        C, F = s.n_embed, s.n_ffn
        k_name, r_name = names if names is not None else ("x_k", None)
        return cls(mix_k=m.take(f"{p}ffn.{k_name}", (C,)),
                   key=m.take(p + "ffn.key.weight", (F, C)), value=m.take(p + "ffn.value.weight", (C, F)),
                   mix_r=m.take(f"{p}ffn.{r_name}", (C,)) if r_name else None,
                   receptance=m.take(p + "ffn.receptance.weight", (C, C)) if r_name else None,
                   lerp=k_name.startswith("time_mix"))

    def __call__(self, x: np.ndarray, x_prev: np.ndarray) -> np.ndarray:
        if self.lerp:
            mixed = lambda m: lerp(x, x_prev, m)                             # noqa: E731
        else:
            sx = token_shift(x, x_prev)                                      # [C]
            mixed = lambda m: x + sx * m                                     # noqa: E731
        out = linear(self.value, relu_squared(linear(self.key, mixed(self.mix_k))))  # [C]
        if self.receptance is None:
            return out
        return sigmoid(linear(self.receptance, mixed(self.mix_r))) * out    # [C]


@dataclass(frozen=True)
class Block:
    ln1_w: np.ndarray        # [C]
    ln1_b: np.ndarray        # [C]
    att: Any                 # the version's attention weights
    ln2_w: np.ndarray        # [C]
    ln2_b: np.ndarray        # [C]
    ffn: ChannelMix


@dataclass(frozen=True)
class Weights:
    version: Version
    config: Any
    ends: Ends
    layers: tuple[Block, ...]


@dataclass(frozen=True)
class LayerState:
    att_x: np.ndarray        # [C] ln1 output of the previous token
    att: Any                 # the version's recurrent attention state
    ffn_x: np.ndarray        # [C] ln2 output of the previous token


State = tuple[LayerState, ...]


def load(version: Version, model, exact: bool = False) -> Weights:
    """Map an rwkv.cpp or GGUF file's tensors to float32 arrays, checking names and shapes."""
    m = mapper_for(model, architecture(model), exact)
    s = Sizes.read(m)
    cfg = version.config(m, s)
    C = s.n_embed
    layers = []
    for i in range(s.n_layer):
        p = f"blocks.{i}."
        layers.append(Block(
            ln1_w=m.take(p + "ln1.weight", (C,)), ln1_b=m.take(p + "ln1.bias", (C,)),
            att=version.attention(m, p, cfg, i),
            ln2_w=m.take(p + "ln2.weight", (C,)), ln2_b=m.take(p + "ln2.bias", (C,)),
            ffn=ChannelMix.load(m, p, s, version.ffn_names)))
    return Weights(version, cfg, Ends.load(m, s), tuple(layers))


def initial_state(weights: Weights) -> State:
    cfg = weights.config
    zero = np.zeros(cfg.sizes.n_embed, dtype=np.float32)                     # [C]
    return tuple(LayerState(zero, weights.version.empty(cfg), zero) for _ in weights.layers)


def step(w: Weights, token: int, state: State) -> tuple[np.ndarray, State]:
    cfg, version = w.config, w.version
    eps, every = cfg.ln_eps, version.rescale_every(cfg)
    x = w.ends.embed(token, eps)                                             # [C]
    v_first = None
    new = []
    for i, (L, st) in enumerate(zip(w.layers, state)):
        xa = layer_norm(x, L.ln1_w, L.ln1_b, eps)                            # [C]
        out, att, v_first = version.time_mix(cfg, L.att, xa, st.att_x, st.att, v_first)
        x = x + out                                                          # [C]
        xf = layer_norm(x, L.ln2_w, L.ln2_b, eps)                            # [C]
        x = x + L.ffn(xf, st.ffn_x)                                          # [C]
        if every and (i + 1) % every == 0:
            x = (x * np.float32(0.5)).astype(np.float32)                     # llama.cpp rwkv6.cpp
        new.append(LayerState(xa, att, xf))
    return w.ends.logits(x, eps), tuple(new)


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Feed ``tokens`` one at a time; the logits after the last one, and the state."""
    ids = check_tokens(tokens, weights.config.sizes.n_vocab)
    state = initial_state(weights) if state is None else state
    logits = np.zeros(weights.config.sizes.n_vocab, dtype=np.float32)
    for t in ids:
        logits, state = step(weights, t, state)
    return logits.astype(np.float32), state
