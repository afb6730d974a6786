"""GPT-2 reference forward pass in float32 numpy (GGUF ``gpt2`` and ggml-example files).

Why: to check what a GPT-2 file computes (``ggscope run``) without ggml.  Two layouts
carry the same model: GGUF ``gpt2`` (``blk.N.attn_qkv`` ...) and the unversioned
``ggml`` files of ggml's gpt-2 example (``model/hN/attn/c_attn/w`` ...), whose
converter stores every matrix as [out][in] like GGUF does; ``_LEGACY_NAMES`` maps the
latter onto the former once.  Per layer (pre-LayerNorm)::

    x += c_proj · attn(split3(c_attn · ln_1(x)))     causal multi-head attention
    x += mlp_proj · gelu(c_fc · ln_2(x))             GELU: tanh approximation (gelu_new)

then ``logits = lm_head · ln_f(x)``, ``lm_head`` being the token embedding when the
file has no separate output matrix.  The h5 converter's files keep Conv1D's [in][out]
layout; ggml's own example rejects them and so does the shape check here.

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None) ->
(logits float32 [n_vocab], State)``; State is the key/value cache, pass it back to
continue.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import WeightError, WeightMapper, check_tokens
from .ops import layer_norm

__all__ = ["Config", "Layer", "Weights", "State", "load", "forward", "gelu"]

LEGACY_LN_EPS = 1e-5     # ggml gpt-2 example's hard-coded LayerNorm eps

_LEGACY_NAMES = {
    "token_embd.weight": "model/wte",
    "position_embd.weight": "model/wpe",
    "output_norm.weight": "model/ln_f/g",
    "output_norm.bias": "model/ln_f/b",
    "output.weight": "model/lm_head",
    "blk.{i}.attn_norm.weight": "model/h{i}/ln_1/g",
    "blk.{i}.attn_norm.bias": "model/h{i}/ln_1/b",
    "blk.{i}.attn_qkv.weight": "model/h{i}/attn/c_attn/w",
    "blk.{i}.attn_qkv.bias": "model/h{i}/attn/c_attn/b",
    "blk.{i}.attn_output.weight": "model/h{i}/attn/c_proj/w",
    "blk.{i}.attn_output.bias": "model/h{i}/attn/c_proj/b",
    "blk.{i}.ffn_norm.weight": "model/h{i}/ln_2/g",
    "blk.{i}.ffn_norm.bias": "model/h{i}/ln_2/b",
    "blk.{i}.ffn_up.weight": "model/h{i}/mlp/c_fc/w",
    "blk.{i}.ffn_up.bias": "model/h{i}/mlp/c_fc/b",
    "blk.{i}.ffn_down.weight": "model/h{i}/mlp/c_proj/w",
    "blk.{i}.ffn_down.bias": "model/h{i}/mlp/c_proj/b",
}


@dataclass(frozen=True)
class Config:
    n_vocab: int
    n_ctx: int
    n_embd: int
    n_layer: int
    n_head: int
    n_ff: int
    ln_eps: float


@dataclass(frozen=True)
class Layer:
    ln1_w: np.ndarray; ln1_b: np.ndarray          # [C]
    qkv_w: np.ndarray; qkv_b: np.ndarray          # [3C, C], [3C]
    proj_w: np.ndarray; proj_b: np.ndarray        # [C, C], [C]
    ln2_w: np.ndarray; ln2_b: np.ndarray          # [C]
    fc_w: np.ndarray; fc_b: np.ndarray            # [F, C], [F]
    down_w: np.ndarray; down_b: np.ndarray        # [C, F], [C]


@dataclass(frozen=True)
class Weights:
    config: Config
    wte: np.ndarray           # [V, C]
    wpe: np.ndarray           # [n_ctx, C]
    lnf_w: np.ndarray         # [C]
    lnf_b: np.ndarray         # [C]
    head: np.ndarray          # [V, C]
    layers: tuple[Layer, ...]


@dataclass(frozen=True)
class State:
    keys: tuple[np.ndarray, ...]      # per layer [T, H, D]
    values: tuple[np.ndarray, ...]

    @property
    def n_past(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0


def _meta_int(model, key: str) -> int:
    try:
        value = int(model.metadata[key])
    except (KeyError, TypeError, ValueError):
        raise WeightError(f"{model.path}: metadata {key!r} missing or not a number") from None
    if value <= 0:
        raise WeightError(f"{model.path}: metadata {key!r} must be positive, got {value}")
    return value


def load(model) -> Weights:
    """Map a GPT-2 file's tensors to float32 arrays, checking names and shapes."""
    legacy = model.format != "gguf"
    m = WeightMapper(model, "gpt2")

    def name(gguf: str, i: int | None = None) -> str:
        key = _LEGACY_NAMES[gguf] if legacy else gguf
        return key.replace("{i}", str(i)) if i is not None else key

    if legacy:
        pre = model.format
        n_layer, n_head = _meta_int(model, f"{pre}.n_layer"), _meta_int(model, f"{pre}.n_head")
        eps = LEGACY_LN_EPS
    else:
        n_layer = _meta_int(model, "gpt2.block_count")
        n_head = _meta_int(model, "gpt2.attention.head_count")
        eps = float(model.metadata.get("gpt2.attention.layer_norm_epsilon", 1e-5))
    emb = m.ne(name("token_embd.weight"))
    pos = m.ne(name("position_embd.weight"))
    if len(emb) != 2 or len(pos) != 2:
        raise WeightError(f"{model.path}: token/position embeddings must be 2-D")
    C, V = emb
    n_ctx = pos[1]
    if C % n_head:
        raise WeightError(f"{model.path}: n_embd {C} is not a multiple of n_head {n_head}")
    F = m.ne(name("blk.{i}.ffn_up.weight", 0))[-1] if n_layer else 0
    c = Config(V, n_ctx, C, n_layer, n_head, F, eps)
    layers = []
    for i in range(n_layer):
        t = lambda n, shape: m.take(name(n, i), shape)  # noqa: E731
        layers.append(Layer(
            t("blk.{i}.attn_norm.weight", (C,)), t("blk.{i}.attn_norm.bias", (C,)),
            t("blk.{i}.attn_qkv.weight", (3 * C, C)), t("blk.{i}.attn_qkv.bias", (3 * C,)),
            t("blk.{i}.attn_output.weight", (C, C)), t("blk.{i}.attn_output.bias", (C,)),
            t("blk.{i}.ffn_norm.weight", (C,)), t("blk.{i}.ffn_norm.bias", (C,)),
            t("blk.{i}.ffn_up.weight", (F, C)), t("blk.{i}.ffn_up.bias", (F,)),
            t("blk.{i}.ffn_down.weight", (C, F)), t("blk.{i}.ffn_down.bias", (C,)),
        ))
    wte = m.take(name("token_embd.weight"), (V, C))
    head = m.take(name("output.weight"), (V, C)) if m.has(name("output.weight")) else wte
    return Weights(c, wte, m.take(name("position_embd.weight"), (n_ctx, C)),
                   m.take(name("output_norm.weight"), (C,)),
                   m.take(name("output_norm.bias"), (C,)), head, tuple(layers))


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation (GPT-2's ``gelu_new``, ggml's ``ggml_gelu``)."""
    k = np.float32(np.sqrt(2.0 / np.pi))
    return (0.5 * x * (1 + np.tanh(k * (x + np.float32(0.044715) * x ** 3)))).astype(np.float32)


def initial_state(c: Config) -> State:
    empty = np.zeros((0, c.n_head, c.n_embd // c.n_head), dtype=np.float32)
    return State(tuple(empty for _ in range(c.n_layer)), tuple(empty for _ in range(c.n_layer)))


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Run ``tokens`` after the cached ones; logits after the last token and the cache."""
    c = weights.config
    ids = check_tokens(tokens, c.n_vocab)
    state = initial_state(c) if state is None else state
    T, P, H, D = len(ids), state.n_past, c.n_head, c.n_embd // c.n_head
    if P + T > c.n_ctx:
        raise WeightError(f"{P + T} tokens exceed the model's context of {c.n_ctx}")
    pos = np.arange(P, P + T)
    x = weights.wte[ids] + weights.wpe[pos]                                # [T, C]
    keys, values = [], []
    for L, kp, vp in zip(weights.layers, state.keys, state.values):
        h = layer_norm(x, L.ln1_w, L.ln1_b, c.ln_eps)                      # [T, C]
        qkv = h @ L.qkv_w.T + L.qkv_b                                      # [T, 3C]
        q, k, v = (a.reshape(T, H, D) for a in np.split(qkv, 3, axis=-1))  # [T, H, D]
        k, v = np.concatenate([kp, k]), np.concatenate([vp, v])           # [S, H, D]
        scores = q.transpose(1, 0, 2) @ k.transpose(1, 2, 0) / np.float32(np.sqrt(D))  # [H, T, S]
        causal = np.arange(k.shape[0])[None, :] > pos[:, None]             # [T, S]
        scores = np.where(causal[None], -np.inf, scores)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        att = (e / e.sum(axis=-1, keepdims=True)) @ v.transpose(1, 0, 2)   # [H, T, D]
        x = x + att.transpose(1, 0, 2).reshape(T, c.n_embd) @ L.proj_w.T + L.proj_b
        h = layer_norm(x, L.ln2_w, L.ln2_b, c.ln_eps)
        x = x + gelu(h @ L.fc_w.T + L.fc_b) @ L.down_w.T + L.down_b       # [T, C]
        keys.append(k.astype(np.float32))
        values.append(v.astype(np.float32))
    x = layer_norm(x[-1], weights.lnf_w, weights.lnf_b, c.ln_eps)          # [C]
    return (weights.head @ x).astype(np.float32), State(tuple(keys), tuple(values))
