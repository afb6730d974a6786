"""Mamba (selective state-space model) reference forward pass for GGUF files, in float32 numpy.

Why: Mamba has no attention and no KV cache; what it computes is a recurrence, so it is
its own module rather than a row of the transformer table.  The math is llama.cpp's
graph for ``LLM_ARCH_MAMBA`` (``src/models/mamba.cpp`` and ``build_mamba_layer`` in
``src/models/graph-context-mamba.cpp``) and ggml's CPU ``ssm_conv`` / ``ssm_scan``
kernels (``ggml/src/ggml-cpu/ops.cpp``).  Per layer, one token at a time::

    h      = rms_norm(x) * attn_norm
    x', z  = split(ssm_in @ h)                        d_inner each
    x'     = silu(conv1d over the last d_conv x' + conv bias)   (zeros before token 0)
    dt,B,C = split(ssm_x @ x')                        dt_rank, d_state, d_state
    dt     = softplus(ssm_dt @ dt + dt bias)          softplus(v) = v if v > 20
    s      = s * exp(dt[:, None] * A) + (dt * x')[:, None] * B[None, :]
    y      = s @ C + D * x'
    x     += ssm_out @ (y * silu(z))

then ``output @ rms_norm(x) * output_norm`` (``output`` falls back to the embedding,
as llama.cpp does when the file has none).  ``ssm_a`` is stored already negative (the
converter writes ``-exp(A_log)``), ``A`` in numpy order is ``[d_inner, d_state]``.
FalconMamba-style files (``mamba.ssm.dt_b_c_rms`` true) RMS-normalise dt, B and C
before use, without weights, as llama.cpp does.

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None) ->
(logits float32 [n_vocab], State)``; State is immutable, pass it back to continue.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ggscope.forward import WeightError, WeightMapper, check_tokens
from ggscope.forward.ops import linear, silu

__all__ = ["Config", "Layer", "Weights", "LayerState", "State", "load", "forward",
           "initial_state", "rms_norm", "softplus"]

SOFTPLUS_LINEAR = 20.0     # ggml_compute_softplus_f32: x itself above this


@dataclass(frozen=True)
class Config:
    n_vocab: int
    n_embd: int              # C
    n_layer: int
    d_inner: int             # E
    d_state: int             # N
    d_conv: int              # K
    dt_rank: int             # R
    rms_eps: float
    dt_b_c_rms: bool


@dataclass(frozen=True)
class Layer:
    norm: np.ndarray         # [C]
    in_proj: np.ndarray      # [2E, C]  rows: x then z
    conv_w: np.ndarray       # [E, K]   oldest input first
    conv_b: np.ndarray       # [E]
    x_proj: np.ndarray       # [R + 2N, E]  rows: dt, B, C
    dt_proj: np.ndarray      # [E, R]
    dt_b: np.ndarray         # [E]
    A: np.ndarray            # [E, N]   negative
    D: np.ndarray            # [E]
    out_proj: np.ndarray     # [C, E]


@dataclass(frozen=True)
class Weights:
    config: Config
    embed: np.ndarray        # [V, C]
    layers: tuple[Layer, ...]
    norm: np.ndarray         # [C]
    output: np.ndarray       # [V, C]


@dataclass(frozen=True)
class LayerState:
    conv: np.ndarray         # [K-1, E]  the previous K-1 inputs of the convolution
    ssm: np.ndarray          # [E, N]


State = tuple[LayerState, ...]


def rms_norm(x: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) over the last axis (ggml_rms_norm)."""
    ms = (x * x).mean(axis=-1, keepdims=True)                                 # [..., 1]
    return (x / np.sqrt(ms + np.float32(eps))).astype(np.float32)             # [..., C]


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)), linear above 20 as ggml's kernel."""
    with np.errstate(over="ignore"):
        soft = np.log1p(np.exp(np.minimum(x, SOFTPLUS_LINEAR)))
    return np.where(x > SOFTPLUS_LINEAR, x, soft).astype(np.float32)


def _meta_int(m: WeightMapper, key: str) -> int:
    value = m.model.metadata.get(f"mamba.{key}")
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise WeightError(f"{m.model.path}: mamba needs the integer key mamba.{key} "
                          f"(llama.cpp reads it in llama_model_mamba::load_arch_hparams), "
                          f"got {value!r}") from None
    if n <= 0:
        raise WeightError(f"{m.model.path}: mamba.{key} must be positive, got {n}")
    return n


def _config(m: WeightMapper) -> Config:
    meta = m.model.metadata
    n_embd, n_layer = _meta_int(m, "embedding_length"), _meta_int(m, "block_count")
    n_layer = m.blocks(n_layer, lambda i: f"blk.{i}.attn_norm.weight", "mamba.block_count")
    emb = m.ne("token_embd.weight")
    if len(emb) != 2 or emb[0] != n_embd:
        raise WeightError(f"{m.model.path}: token_embd.weight has ne {list(emb)}, "
                          f"want [{n_embd}, n_vocab]")
    eps = meta.get("mamba.attention.layer_norm_rms_epsilon")
    if eps is None:
        raise WeightError(f"{m.model.path}: mamba needs mamba.attention.layer_norm_rms_epsilon")
    return Config(
        n_vocab=emb[1], n_embd=n_embd, n_layer=n_layer,
        d_inner=_meta_int(m, "ssm.inner_size"), d_state=_meta_int(m, "ssm.state_size"),
        d_conv=_meta_int(m, "ssm.conv_kernel"), dt_rank=_meta_int(m, "ssm.time_step_rank"),
        rms_eps=float(eps), dt_b_c_rms=bool(meta.get("mamba.ssm.dt_b_c_rms", False)))


def load(model, exact: bool = False) -> Weights:
    """Map a GGUF Mamba file's tensors to float32 arrays, checking names and shapes."""
    m = WeightMapper(model, "mamba", typed=not exact)
    cfg = _config(m)
    C, E, N, K, R, V = cfg.n_embd, cfg.d_inner, cfg.d_state, cfg.d_conv, cfg.dt_rank, cfg.n_vocab
    layers = []
    for i in range(cfg.n_layer):
        p = f"blk.{i}."
        layers.append(Layer(
            norm=m.take(p + "attn_norm.weight", (C,)),
            in_proj=m.take(p + "ssm_in.weight", (2 * E, C)),
            conv_w=m.take(p + "ssm_conv1d.weight", (E, K)),
            conv_b=m.take(p + "ssm_conv1d.bias", (E,)),
            x_proj=m.take(p + "ssm_x.weight", (R + 2 * N, E)),
            dt_proj=m.take(p + "ssm_dt.weight", (E, R)),
            dt_b=m.take(p + "ssm_dt.bias", (E,)),
            A=m.take(p + "ssm_a", (E, N)),
            D=m.take(p + "ssm_d", (E,)),
            out_proj=m.take(p + "ssm_out.weight", (C, E)),
        ))
    embed = m.take("token_embd.weight", (V, C))
    output = m.take("output.weight", (V, C)) if m.has("output.weight") else embed
    return Weights(cfg, embed, tuple(layers), m.take("output_norm.weight", (C,)), output)


def initial_state(config: Config) -> State:
    conv = np.zeros((config.d_conv - 1, config.d_inner), dtype=np.float32)   # [K-1, E]
    ssm = np.zeros((config.d_inner, config.d_state), dtype=np.float32)      # [E, N]
    return tuple(LayerState(conv, ssm) for _ in range(config.n_layer))


def mixer(cfg: Config, L: Layer, h: np.ndarray, st: LayerState) -> tuple[np.ndarray, LayerState]:
    """One token through one Mamba block (after its norm); the output and the new state."""
    E, N, R = cfg.d_inner, cfg.d_state, cfg.dt_rank
    xz = linear(L.in_proj, h)                                                 # [2E]
    x, z = xz[:E], xz[E:]                                                     # [E], [E]
    window = np.concatenate([st.conv, x[None, :]])                           # [K, E]
    x = silu((window.T * L.conv_w).sum(axis=-1) + L.conv_b)                  # [E]
    dbc = linear(L.x_proj, x)                                                 # [R + 2N]
    dt, B, Cv = dbc[:R], dbc[R:R + N], dbc[R + N:]                            # [R], [N], [N]
    if cfg.dt_b_c_rms:
        dt, B, Cv = (rms_norm(v, cfg.rms_eps) for v in (dt, B, Cv))
    dt = softplus(linear(L.dt_proj, dt) + L.dt_b)                             # [E]
    s = st.ssm * np.exp(dt[:, None] * L.A) + (dt * x)[:, None] * B[None, :]  # [E, N]
    s = s.astype(np.float32)
    y = s @ Cv + L.D * x                                                      # [E]
    out = linear(L.out_proj, (y * silu(z)).astype(np.float32))               # [C]
    return out, LayerState(window[1:], s)


def step(w: Weights, token: int, state: State) -> tuple[np.ndarray, State]:
    cfg = w.config
    x = w.embed[token]                                                        # [C]
    new = []
    for L, st in zip(w.layers, state):
        out, st = mixer(cfg, L, rms_norm(x, cfg.rms_eps) * L.norm, st)
        x = (x + out).astype(np.float32)                                      # [C]
        new.append(st)
    return linear(w.output, rms_norm(x, cfg.rms_eps) * w.norm), tuple(new)   # [V]


def forward(weights: Weights, tokens: list[int], state: State | None = None
            ) -> tuple[np.ndarray, State]:
    """Feed ``tokens`` one at a time; return the logits after the last one and the state."""
    ids = check_tokens(tokens, weights.config.n_vocab)
    state = initial_state(weights.config) if state is None else state
    logits = np.zeros(weights.config.n_vocab, dtype=np.float32)
    for t in ids:
        logits, state = step(weights, t, state)
    return logits, state
