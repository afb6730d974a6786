"""LLaMA-family reference forward pass (llama, qwen2) in float32 numpy.

Why: to check what a llama-family file computes (``ggscope run``) without llama.cpp.
One module covers GGUF ``llama`` and ``qwen2`` (qwen2 = llama + q/k/v biases + NeoX
rotary) and the early llama.cpp files (unversioned GGML, GGMF, GGJT) with Meta's tensor
names, which ``_LEGACY_NAMES`` maps once onto the GGUF names.  Per layer::

    x += wo · attn(rope(wq·rms(x) + bq), rope(wk·rms(x) + bk), wv·rms(x) + bv)
    x += w_down · (silu(w_gate·rms(x)) * w_up·rms(x))

Grouped-query attention: query head h reads key/value head h // (n_head / n_head_kv).
Rotary: llama.cpp's "norm" type rotates adjacent pairs (x[2i], x[2i+1]) -- the GGUF and
early converters permute q/k rows into that layout -- and qwen2 uses the "neox" type
(x[i], x[i + n_rot/2]).  RMSNorm eps, rotary base and dimension come from the metadata
(early files: eps 1e-6, base 10000, as the llama.cpp of that time hard-coded).

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None) ->
(logits float32 [n_vocab] after the last token, State)``; State is the key/value cache,
immutable; pass it back to continue (``ggscope run --generate``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import WeightError, WeightMapper, architecture, check_tokens
from .ops import silu

__all__ = ["Config", "Layer", "Weights", "State", "load", "forward", "rms_norm", "rope"]

LEGACY_FORMATS = ("ggml", "ggmf", "ggjt")
LEGACY_RMS_EPS = 1e-6      # early llama.cpp's hard-coded rms_norm eps
DEFAULT_ROPE_BASE = 10000.0
NEOX_ROPE_ARCHS = {"qwen2"}  # llama.cpp LLAMA_ROPE_TYPE_NEOX among the archs we run

# Meta / early llama.cpp tensor names -> GGUF names ("{i}" = layer index)
_LEGACY_NAMES = {
    "token_embd.weight": "tok_embeddings.weight",
    "output_norm.weight": "norm.weight",
    "output.weight": "output.weight",
    "blk.{i}.attn_norm.weight": "layers.{i}.attention_norm.weight",
    "blk.{i}.attn_q.weight": "layers.{i}.attention.wq.weight",
    "blk.{i}.attn_k.weight": "layers.{i}.attention.wk.weight",
    "blk.{i}.attn_v.weight": "layers.{i}.attention.wv.weight",
    "blk.{i}.attn_output.weight": "layers.{i}.attention.wo.weight",
    "blk.{i}.ffn_norm.weight": "layers.{i}.ffn_norm.weight",
    "blk.{i}.ffn_gate.weight": "layers.{i}.feed_forward.w1.weight",
    "blk.{i}.ffn_down.weight": "layers.{i}.feed_forward.w2.weight",
    "blk.{i}.ffn_up.weight": "layers.{i}.feed_forward.w3.weight",
}


@dataclass(frozen=True)
class Config:
    n_vocab: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int
    n_ff: int
    rms_eps: float
    rope_base: float
    rope_neox: bool


@dataclass(frozen=True)
class Layer:
    attn_norm: np.ndarray          # [C]
    wq: np.ndarray                 # [H*D, C]
    wk: np.ndarray                 # [Hkv*D, C]
    wv: np.ndarray                 # [Hkv*D, C]
    wo: np.ndarray                 # [C, H*D]
    bq: np.ndarray | None          # [H*D] (qwen2)
    bk: np.ndarray | None          # [Hkv*D]
    bv: np.ndarray | None          # [Hkv*D]
    ffn_norm: np.ndarray           # [C]
    gate: np.ndarray               # [F, C]
    up: np.ndarray                 # [F, C]
    down: np.ndarray               # [C, F]


@dataclass(frozen=True)
class Weights:
    config: Config
    embed: np.ndarray              # [V, C]
    norm: np.ndarray               # [C]
    output: np.ndarray             # [V, C] (the embedding again when tied)
    layers: tuple[Layer, ...]


@dataclass(frozen=True)
class State:
    keys: tuple[np.ndarray, ...]    # per layer [T, Hkv, D], already rotated
    values: tuple[np.ndarray, ...]  # per layer [T, Hkv, D]

    @property
    def n_past(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0


def _meta_int(model, key: str, default: int | None = None, minimum: int = 1) -> int:
    value = model.metadata.get(key, default)
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise WeightError(f"{model.path}: metadata {key!r} missing or not a number "
                          f"(got {value!r})") from None
    if out < minimum:
        raise WeightError(f"{model.path}: metadata {key!r} must be at least {minimum}, got {out}")
    return out


def _config(model, m: WeightMapper, name) -> Config:
    legacy = model.format in LEGACY_FORMATS
    pre = model.format if legacy else architecture(model)
    emb_ne = m.ne(name("token_embd.weight"))
    if len(emb_ne) != 2:
        raise WeightError(f"{model.path}: token embedding must be 2-D, has ne {list(emb_ne)}")
    n_embd, n_vocab = emb_ne
    if legacy:
        n_head = _meta_int(model, f"{pre}.n_head")
        n_layer = _meta_int(model, f"{pre}.n_layer", minimum=0)
        n_head_kv, eps, base = n_head, LEGACY_RMS_EPS, DEFAULT_ROPE_BASE
        n_rot = _meta_int(model, f"{pre}.n_rot", n_embd // n_head)
    else:
        n_head = _meta_int(model, f"{pre}.attention.head_count")
        n_layer = _meta_int(model, f"{pre}.block_count", minimum=0)
        n_head_kv = _meta_int(model, f"{pre}.attention.head_count_kv", n_head)
        eps = float(model.metadata.get(f"{pre}.attention.layer_norm_rms_epsilon", 1e-5))
        base = float(model.metadata.get(f"{pre}.rope.freq_base", DEFAULT_ROPE_BASE))
        n_rot = _meta_int(model, f"{pre}.rope.dimension_count", n_embd // n_head)
    if n_embd % n_head or n_head % n_head_kv:
        raise WeightError(f"{model.path}: n_embd {n_embd}, n_head {n_head} and n_head_kv "
                          f"{n_head_kv} do not divide evenly")
    head_dim = n_embd // n_head
    if n_rot > head_dim or n_rot % 2:
        raise WeightError(f"{model.path}: rotary dimension {n_rot} must be even and at "
                          f"most the head size {head_dim}")
    gate_ne = m.ne(name("blk.{i}.ffn_gate.weight", 0)) if n_layer else (n_embd, 0)
    return Config(n_vocab=n_vocab, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                  n_head_kv=n_head_kv, head_dim=head_dim, n_rot=n_rot,
                  n_ff=gate_ne[-1] if len(gate_ne) == 2 else 0, rms_eps=eps, rope_base=base,
                  rope_neox=pre in NEOX_ROPE_ARCHS)


def load(model) -> Weights:
    """Map a llama-family file's tensors to float32 arrays, checking names and shapes."""
    arch = "llama" if model.format in LEGACY_FORMATS else architecture(model)
    m = WeightMapper(model, arch)
    legacy = model.format in LEGACY_FORMATS

    def name(gguf: str, i: int | None = None) -> str:
        key = _LEGACY_NAMES[gguf] if legacy else gguf
        return key.replace("{i}", str(i)) if i is not None else key

    c = _config(model, m, name)
    C, V, F, D = c.n_embd, c.n_vocab, c.n_ff, c.head_dim
    Q, KV = c.n_head * D, c.n_head_kv * D

    def bias(n: str, i: int, size: int) -> np.ndarray | None:
        if legacy:
            return None
        full = name(n, i)
        return m.take(full, (size,)) if m.has(full) else None

    layers = []
    for i in range(c.n_layer):
        layers.append(Layer(
            attn_norm=m.take(name("blk.{i}.attn_norm.weight", i), (C,)),
            wq=m.take(name("blk.{i}.attn_q.weight", i), (Q, C)),
            wk=m.take(name("blk.{i}.attn_k.weight", i), (KV, C)),
            wv=m.take(name("blk.{i}.attn_v.weight", i), (KV, C)),
            wo=m.take(name("blk.{i}.attn_output.weight", i), (C, Q)),
            bq=bias("blk.{i}.attn_q.bias", i, Q),
            bk=bias("blk.{i}.attn_k.bias", i, KV),
            bv=bias("blk.{i}.attn_v.bias", i, KV),
            ffn_norm=m.take(name("blk.{i}.ffn_norm.weight", i), (C,)),
            gate=m.take(name("blk.{i}.ffn_gate.weight", i), (F, C)),
            up=m.take(name("blk.{i}.ffn_up.weight", i), (F, C)),
            down=m.take(name("blk.{i}.ffn_down.weight", i), (C, F)),
        ))
    embed = m.take(name("token_embd.weight"), (V, C))
    out_name = name("output.weight")
    output = m.take(out_name, (V, C)) if m.has(out_name) else embed   # tied embeddings
    return Weights(c, embed, m.take(name("output_norm.weight"), (C,)), output, tuple(layers))


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    ms = (x * x).mean(axis=-1, keepdims=True)                       # [T, 1]
    return (x / np.sqrt(ms + np.float32(eps)) * weight).astype(np.float32)  # [T, C]


def rope(x: np.ndarray, pos: np.ndarray, n_rot: int, base: float, neox: bool) -> np.ndarray:
    """Rotary position embedding of the first ``n_rot`` dims of each head.

    x: [T, H, D]; pos: [T].  "norm" pairs (2i, 2i+1), "neox" pairs (i, i + n_rot/2);
    pair i turns by pos * base^(-2i/n_rot)."""
    half = n_rot // 2
    inv = base ** (-np.arange(half, dtype=np.float64) * 2 / n_rot)     # [n_rot/2]
    ang = pos[:, None].astype(np.float64) * inv[None, :]                 # [T, n_rot/2]
    cos = np.cos(ang)[:, None, :].astype(np.float32)                      # [T, 1, n_rot/2]
    sin = np.sin(ang)[:, None, :].astype(np.float32)
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:n_rot] = a * sin + b * cos
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = a * sin + b * cos
    return out


def _proj(w: np.ndarray, b: np.ndarray | None, x: np.ndarray) -> np.ndarray:
    y = x @ w.T                                                          # [T, out]
    return (y + b if b is not None else y).astype(np.float32)


def attention(c: Config, L: Layer, h: np.ndarray, pos: np.ndarray,
              k_past: np.ndarray, v_past: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Causal GQA self-attention of the new rows ``h`` [T, C] over cache + themselves."""
    T, D = h.shape[0], c.head_dim
    q = _proj(L.wq, L.bq, h).reshape(T, c.n_head, D)                      # [T, H, D]
    k = _proj(L.wk, L.bk, h).reshape(T, c.n_head_kv, D)                   # [T, Hkv, D]
    v = _proj(L.wv, L.bv, h).reshape(T, c.n_head_kv, D)                   # [T, Hkv, D]
    q = rope(q, pos, c.n_rot, c.rope_base, c.rope_neox)
    k = np.concatenate([k_past, rope(k, pos, c.n_rot, c.rope_base, c.rope_neox)])  # [S, Hkv, D]
    v = np.concatenate([v_past, v])                                       # [S, Hkv, D]
    group = c.n_head // c.n_head_kv
    kh = np.repeat(k, group, axis=1).transpose(1, 0, 2)                    # [H, S, D]
    vh = np.repeat(v, group, axis=1).transpose(1, 0, 2)                    # [H, S, D]
    scores = q.transpose(1, 0, 2) @ kh.transpose(0, 2, 1) / np.float32(np.sqrt(D))  # [H, T, S]
    S = k.shape[0]
    causal = np.arange(S)[None, :] > pos[:, None]                          # [T, S]
    scores = np.where(causal[None], -np.inf, scores)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = scores / scores.sum(axis=-1, keepdims=True)                    # [H, T, S]
    out = (probs @ vh).transpose(1, 0, 2).reshape(T, c.n_head * D)         # [T, H*D]
    return (out @ L.wo.T).astype(np.float32), k, v


def initial_state(c: Config) -> State:
    empty = np.zeros((0, c.n_head_kv, c.head_dim), dtype=np.float32)
    return State(tuple(empty for _ in range(c.n_layer)), tuple(empty for _ in range(c.n_layer)))


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Run ``tokens`` after the cached ones; logits after the last token and the cache."""
    c = weights.config
    ids = check_tokens(tokens, c.n_vocab)
    state = initial_state(c) if state is None else state
    pos = np.arange(state.n_past, state.n_past + len(ids))                 # [T]
    x = weights.embed[ids]                                                 # [T, C]
    keys, values = [], []
    for L, kp, vp in zip(weights.layers, state.keys, state.values):
        out, k, v = attention(c, L, rms_norm(x, L.attn_norm, c.rms_eps), pos, kp, vp)
        x = x + out
        h = rms_norm(x, L.ffn_norm, c.rms_eps)                             # [T, C]
        x = x + (silu(h @ L.gate.T) * (h @ L.up.T)) @ L.down.T             # [T, C]
        keys.append(k)
        values.append(v)
    x = rms_norm(x[-1:], weights.norm, c.rms_eps)                          # [1, C]
    logits = (x @ weights.output.T)[0]                                     # [V]
    return logits.astype(np.float32), State(tuple(keys), tuple(values))
