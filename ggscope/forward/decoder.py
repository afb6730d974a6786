"""The transformer decoder family as one engine whose differences are data.

Why: llama.cpp has one graph builder per architecture (src/models/*.cpp), but those
builders differ in a handful of switches -- which norm, which rotary pairing, whether
attention is soft-capped, whether the FFN is gated, routed or both.  Copying a module
per architecture would copy every bug; instead ``traits.TRAITS`` holds, per GGUF
``general.architecture``, the switches llama.cpp hard-codes for it (its
``llama_model_rope_type``, ``load_hparams`` defaults and ``src/models/<arch>.cpp``), and
``traits.Config`` holds what the file's metadata says.  What a file *carries* -- biases,
per-head q/k norms, post-attention / post-FFN norms, fused QKV or gate/up, an MoE
router, shared experts, a separate output matrix -- is read from which tensors exist,
as llama.cpp's loader does with ``TENSOR_NOT_REQUIRED``.  Per layer::

    h  = norm(x);  a = attention(h)          # GQA / MLA, rope, soft-cap, sliding window
    x += post_attn_norm(a)                   # the post norm only where the file has one
    h  = norm(x);  f = ffn(h)                # dense (gated or not) or routed experts
    x += post_ffw_norm(f)

then ``logits = output(norm(x))``, soft-capped where the architecture says so.

Numerics follow llama.cpp's CPU backend: activations are rounded as ggml-cpu rounds
them for each weight's type (``matmul.py``), GELU goes through ggml's fp16 table, and
the token embedding stays in the file's encoding (rows decoded on lookup; a tied output
streams it).  Every other weight is dequantized once, at load, to one float32 array.

Contract: ``load(model) -> Weights``; ``forward(weights, tokens, state=None,
all_logits=False, kv_f16=False) -> (logits, State)``: logits after the last token
(``[n_vocab]``), or after every new token (``[T, n_vocab]``) with ``all_logits``;
``State`` is the key/value cache (immutable; pass it back to continue), F32 unless
``kv_f16`` asks for llama.cpp's default F16 cache.  The file must stay open.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ggscope.core.errors import FileChanged, GGScopeError
from ggscope.forward import WeightError, WeightMapper, architecture, check_tokens
from ggscope.forward.matmul import StreamedRows, linear as _lin, round_activations, typed as _typed
from ggscope.forward.ops import layer_norm, sigmoid, silu
from ggscope.forward.traits import LEGACY_FORMATS, LEGACY_NAMES, TRAITS, Config, Traits, read_config

__all__ = ["Traits", "TRAITS", "Config", "Layer", "Weights", "State", "load", "forward",
           "rms_norm", "rope", "gelu", "LEGACY_FORMATS"]


@dataclass
class Layer:
    """One block's float32 weights in numpy order; None where the file has none."""
    attn_norm: np.ndarray
    attn_norm_b: np.ndarray | None = None
    wq: np.ndarray | None = None; bq: np.ndarray | None = None
    wk: np.ndarray | None = None; bk: np.ndarray | None = None
    wv: np.ndarray | None = None; bv: np.ndarray | None = None
    wqkv: np.ndarray | None = None; bqkv: np.ndarray | None = None
    wo: np.ndarray | None = None; bo: np.ndarray | None = None
    q_norm: np.ndarray | None = None
    k_norm: np.ndarray | None = None
    post_attn_norm: np.ndarray | None = None
    # MLA (deepseek2)
    wq_a: np.ndarray | None = None; q_a_norm: np.ndarray | None = None; wq_b: np.ndarray | None = None
    wkv_a: np.ndarray | None = None; kv_a_norm: np.ndarray | None = None
    wk_b: np.ndarray | None = None; wv_b: np.ndarray | None = None     # [H, rank, nope], [H, v, rank]
    wkv_b: np.ndarray | None = None                                    # older files: [H*(nope+v), rank]
    # FFN
    ffn_norm: np.ndarray | None = None
    ffn_norm_b: np.ndarray | None = None
    gate: np.ndarray | None = None; gate_b: np.ndarray | None = None
    up: np.ndarray | None = None; up_b: np.ndarray | None = None
    down: np.ndarray | None = None; down_b: np.ndarray | None = None
    post_ffw_norm: np.ndarray | None = None
    router: np.ndarray | None = None                                   # [E, C]
    router_bias: np.ndarray | None = None                              # exp_probs_b [E]
    gate_exps: np.ndarray | None = None                                # [E, F, C]
    up_exps: np.ndarray | None = None                                  # [E, F, C]
    down_exps: np.ndarray | None = None                                # [E, C, F]
    gate_shexp: np.ndarray | None = None
    up_shexp: np.ndarray | None = None
    down_shexp: np.ndarray | None = None


@dataclass(frozen=True)
class Weights:
    config: Config
    embed: StreamedRows                      # [V, C], left in the file's encoding
    output_norm: np.ndarray                  # [C]
    output_norm_b: np.ndarray | None
    output: np.ndarray                       # [V, C] (the embedding itself when tied)
    output_b: np.ndarray | None
    positions: np.ndarray | None             # [n_ctx, C] learned (gpt2)
    rope_freqs: np.ndarray | None            # [n_rot/2] frequency divisors
    layers: tuple[Layer, ...] = field(default=())


@dataclass(frozen=True)
class State:
    keys: tuple[np.ndarray, ...]    # per layer [S, Hkv, Dk], already rotated
    values: tuple[np.ndarray, ...]  # per layer [S, Hkv, Dv]
    kv_f16: bool = False            # cache in F16 as llama.cpp's default (values rounded)

    @property
    def n_past(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0


# ---- loading --------------------------------------------------------------------------------

def load(model) -> Weights:
    """Map a decoder file's tensors to float32 arrays, checking names and shapes."""
    legacy = model.format in LEGACY_FORMATS
    arch = architecture(model)
    if arch not in TRAITS:
        from ggscope.forward import UnsupportedArchitecture
        raise UnsupportedArchitecture(model.path, arch, model.format)
    m = WeightMapper(model, arch)
    names = LEGACY_NAMES[arch] if legacy else None

    def name(gguf: str, i: int | None = None) -> str:
        key = names.get(gguf, "") if names is not None else gguf
        return key.replace("{i}", str(i)) if i is not None else key

    c = read_config(model, m, arch, legacy, name)
    C, V, H, Hkv = c.n_embd, c.n_vocab, c.n_head, c.n_head_kv

    def take(full: str, shape) -> np.ndarray:
        return _typed(m.take(full, shape), model.tensor(full).type)

    def opt(gguf: str, i: int | None, shape) -> np.ndarray | None:
        """The tensor if the file has it; ``shape`` None takes the stored one (a width
        that is itself a hyperparameter, such as q_lora_rank)."""
        full = name(gguf, i)
        if not (full and m.has(full)):
            return None
        return take(full, tuple(reversed(m.ne(full))) if shape is None else shape)

    def req(gguf: str, i: int | None, shape) -> np.ndarray:
        full = name(gguf, i)
        if not full:
            raise WeightError(f"{model.path}: {arch} needs tensor {gguf!r}, which a "
                              f"{model.format} file cannot hold")
        return take(full, shape)

    def width(gguf: str, i: int, axis: int = -1) -> int:
        """A dimension read from a stored tensor (ggml order: ne[-1] = rows)."""
        return m.ne(name(gguf, i))[axis]

    layers = []
    for i in range(c.n_layer):
        L = Layer(attn_norm=req("blk.{i}.attn_norm.weight", i, (C,)),
                  attn_norm_b=opt("blk.{i}.attn_norm.bias", i, (C,)))
        if c.traits.norm == "layer" and L.attn_norm_b is None:
            L.attn_norm_b = req("blk.{i}.attn_norm.bias", i, (C,))
        Q, K, Vw = H * c.head_k, Hkv * c.head_k, Hkv * c.head_v
        if c.traits.mla:
            _load_mla(L, c, i, req, opt)
        elif m.has(name("blk.{i}.attn_qkv.weight", i)):
            L.wqkv = req("blk.{i}.attn_qkv.weight", i, (Q + K + Vw, C))
            L.bqkv = opt("blk.{i}.attn_qkv.bias", i, (Q + K + Vw,))
        else:
            L.wq, L.bq = req("blk.{i}.attn_q.weight", i, (Q, C)), opt("blk.{i}.attn_q.bias", i, (Q,))
            L.wk, L.bk = req("blk.{i}.attn_k.weight", i, (K, C)), opt("blk.{i}.attn_k.bias", i, (K,))
            L.wv, L.bv = req("blk.{i}.attn_v.weight", i, (Vw, C)), opt("blk.{i}.attn_v.bias", i, (Vw,))
        O = H * c.head_v
        L.wo, L.bo = req("blk.{i}.attn_output.weight", i, (C, O)), opt("blk.{i}.attn_output.bias", i, (C,))
        if not c.traits.mla:
            L.q_norm = opt("blk.{i}.attn_q_norm.weight", i, (c.head_k,))
            L.k_norm = opt("blk.{i}.attn_k_norm.weight", i, (c.head_k,))
        L.post_attn_norm = opt("blk.{i}.post_attention_norm.weight", i, (C,))
        L.ffn_norm = req("blk.{i}.ffn_norm.weight", i, (C,))
        L.ffn_norm_b = opt("blk.{i}.ffn_norm.bias", i, (C,))
        if c.traits.norm == "layer" and L.ffn_norm_b is None:
            L.ffn_norm_b = req("blk.{i}.ffn_norm.bias", i, (C,))
        L.post_ffw_norm = opt("blk.{i}.post_ffw_norm.weight", i, (C,))
        if not legacy and m.has(name("blk.{i}.ffn_gate_inp.weight", i)) and i >= c.n_dense_lead:
            _load_moe(L, c, i, req, opt, width, model.path)
        else:
            F = width("blk.{i}.ffn_down.weight", i, 0)
            if c.traits.gated and not m.has(name("blk.{i}.ffn_gate.weight", i)):
                # fused gate/up (phi3): the first F rows are the gate, the last F the up
                L.up = req("blk.{i}.ffn_up.weight", i, (2 * F, C))
            else:
                if c.traits.gated:
                    L.gate, L.gate_b = req("blk.{i}.ffn_gate.weight", i, (F, C)), opt("blk.{i}.ffn_gate.bias", i, (F,))
                L.up = req("blk.{i}.ffn_up.weight", i, (F, C))
            L.up_b = opt("blk.{i}.ffn_up.bias", i, (L.up.shape[0],))
            L.down, L.down_b = req("blk.{i}.ffn_down.weight", i, (C, F)), opt("blk.{i}.ffn_down.bias", i, (C,))
        layers.append(L)
    embed = _embedding(model, m, name("token_embd.weight"), (V, C))
    out_name = name("output.weight")
    output = take(out_name, (V, C)) if out_name and m.has(out_name) else embed   # tied
    norm = req("output_norm.weight", None, (C,))
    norm_b = opt("output_norm.bias", None, (C,))
    positions = req("position_embd.weight", None, (c.n_ctx, C)) if c.traits.rope is None else None
    rope_freqs = None
    if c.traits.rope and not legacy:
        rope_freqs = opt("rope_freqs.weight", None, (c.n_rot // 2,))
        if rope_freqs is None and c.traits.short_factors:
            rope_freqs = opt("rope_factors_short.weight", None, (c.n_rot // 2,))
    return Weights(c, embed, norm, norm_b, output, opt("output.bias", None, (V,)),
                   positions, rope_freqs, tuple(layers))


def _embedding(model, m: WeightMapper, full: str, shape: tuple[int, int]) -> StreamedRows:
    """token_embd checked like any weight but left in the file (llama.cpp's get_rows)."""
    info = m._info(full)
    stored = tuple(reversed(tuple(info.shape)))
    if stored != shape:
        raise WeightError(f"{model.path}: tensor {full!r} has numpy shape {stored} "
                          f"(ggml ne {list(info.shape)}), {m.arch} expects {shape}")
    try:
        return StreamedRows(info, shape, f"{model.path}: tensor {full!r} ({info.type})")
    except FileChanged:                     # the file on disk, not this tensor: one line, exit 2
        raise
    except (GGScopeError, NotImplementedError, ValueError) as exc:
        raise WeightError(f"{model.path}: tensor {full!r} ({info.type}) could not be "
                          f"decoded: {exc}") from None


def _load_mla(L: Layer, c: Config, i: int, req, opt) -> None:
    C, H, R, rot, nope = c.n_embd, c.n_head, c.mla_rank, c.n_rot, c.mla_nope
    Q = H * c.head_k
    # q through a low-rank pair (attn_q_a, attn_q_a_norm, attn_q_b), or one attn_q (the lite models)
    L.q_a_norm = opt("blk.{i}.attn_q_a_norm.weight", i, None)
    if L.q_a_norm is not None:
        q_rank = L.q_a_norm.shape[0]
        L.wq_a = req("blk.{i}.attn_q_a.weight", i, (q_rank, C))
        L.wq_b = req("blk.{i}.attn_q_b.weight", i, (Q, q_rank))
    else:
        L.wq = req("blk.{i}.attn_q.weight", i, (Q, C))
    L.wkv_a = req("blk.{i}.attn_kv_a_mqa.weight", i, (R + rot, C))
    L.kv_a_norm = req("blk.{i}.attn_kv_a_norm.weight", i, (R,))
    L.wk_b = opt("blk.{i}.attn_k_b.weight", i, (H, R, nope))
    if L.wk_b is not None:
        L.wv_b = req("blk.{i}.attn_v_b.weight", i, (H, c.head_v, R))
    else:
        L.wkv_b = req("blk.{i}.attn_kv_b.weight", i, (H * (nope + c.head_v), R))


def _load_moe(L: Layer, c: Config, i: int, req, opt, width, path: str) -> None:
    C, E = c.n_embd, c.n_expert
    if not E or not c.n_expert_used:
        raise WeightError(f"{path}: layer {i} routes to experts but expert_count / "
                          f"expert_used_count are missing")
    F = width("blk.{i}.ffn_down_exps.weight", i, 0)
    L.router = req("blk.{i}.ffn_gate_inp.weight", i, (E, C))
    L.router_bias = opt("blk.{i}.exp_probs_b.bias", i, (E,))
    L.gate_exps = req("blk.{i}.ffn_gate_exps.weight", i, (E, F, C))
    L.up_exps = req("blk.{i}.ffn_up_exps.weight", i, (E, F, C))
    L.down_exps = req("blk.{i}.ffn_down_exps.weight", i, (E, C, F))
    down = opt("blk.{i}.ffn_down_shexp.weight", i, None)
    if down is not None:
        if down.ndim != 2 or down.shape[0] != C:
            raise WeightError(f"{path}: blk.{i}.ffn_down_shexp has numpy shape {down.shape}, "
                              f"expected ({C}, n_ff_shexp)")
        Fs = down.shape[1]
        L.down_shexp = down
        L.gate_shexp = req("blk.{i}.ffn_gate_shexp.weight", i, (Fs, C))
        L.up_shexp = req("blk.{i}.ffn_up_shexp.weight", i, (Fs, C))


# ---- kernels --------------------------------------------------------------------------------

def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (ggml_rms_norm then mul)."""
    ms = (x * x).mean(axis=-1, keepdims=True)                       # [..., 1]
    return (x / np.sqrt(ms + np.float32(eps)) * weight).astype(np.float32)


def _gelu_exact(x: np.ndarray) -> np.ndarray:
    k = np.float32(np.sqrt(2.0 / np.pi))
    return (0.5 * x * (1 + np.tanh(k * x * (1 + np.float32(0.044715) * x * x)))).astype(np.float32)


_GELU_TABLE: np.ndarray | None = None


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation, as ggml-cpu computes it (GGML_GELU_FP16): 0 below -10,
    x above 10, else the input rounded to fp16 looked up in a 65536-entry fp16 table of
    gelu (ggml_table_gelu_f16) -- GPT-2's gelu_new, gemma's gelu_pytorch_tanh."""
    global _GELU_TABLE
    if _GELU_TABLE is None:
        codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
        with np.errstate(invalid="ignore", over="ignore"):
            _GELU_TABLE = _gelu_exact(codes.astype(np.float32)).astype(np.float16).astype(np.float32)
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = _GELU_TABLE[x.astype(np.float16).view(np.uint16)]
    return np.where(x <= -10, np.float32(0), np.where(x >= 10, x, y)).astype(np.float32)


def _yarn_ramp(low: float, high: float, n: int) -> np.ndarray:
    y = (np.arange(n, dtype=np.float64) - low) / max(0.001, high - low)
    return 1.0 - np.clip(y, 0.0, 1.0)


def _yarn_corr_dims(n_rot: int, n_ctx_orig: float, base: float, beta_fast: float,
                    beta_slow: float) -> tuple[float, float]:
    def dim(n_rotations: float) -> float:
        return n_rot * math.log(n_ctx_orig / (n_rotations * 2 * math.pi)) / (2 * math.log(base))
    return max(0.0, math.floor(dim(beta_fast))), min(n_rot - 1.0, math.ceil(dim(beta_slow)))


def rope(x: np.ndarray, pos: np.ndarray, n_rot: int, base: float, neox: bool,
         freq_scale: float = 1.0, freq_factors: np.ndarray | None = None,
         yarn: tuple[float, float, float, float] | None = None,
         attn_factor: float = 1.0) -> np.ndarray:
    """Rotary position embedding of the first ``n_rot`` dims of each head (ggml_rope_ext).

    x: [T, H, D]; pos: [T].  "norm" rotates pairs (2i, 2i+1), "neox" pairs (i, i + n_rot/2);
    θ_i = pos · base^(-2i/n_rot) / freq_factors[i], interpolated by ``freq_scale`` and, with
    YaRN, ramped between interpolation and extrapolation as ggml's ``rope_yarn`` does.
    """
    half = n_rot // 2
    i = np.arange(half, dtype=np.float64)
    inv = base ** (-2.0 * i / n_rot)                                    # [n_rot/2]
    if freq_factors is not None:
        inv = inv / freq_factors.astype(np.float64)
    extrap = pos.astype(np.float64)[:, None] * inv[None, :]             # [T, n_rot/2]
    theta = extrap * freq_scale
    mscale = attn_factor
    if yarn is not None and yarn[0] != 0.0:
        ext, beta_fast, beta_slow, n_ctx_orig = yarn
        low, high = _yarn_corr_dims(n_rot, n_ctx_orig, base, beta_fast, beta_slow)
        mix = _yarn_ramp(low, high, half)[None, :] * ext
        theta = theta * (1 - mix) + extrap * mix
        mscale *= 1.0 + 0.1 * math.log(1.0 / freq_scale)
    cos = (np.cos(theta) * mscale).astype(np.float32)[:, None, :]      # [T, 1, n_rot/2]
    sin = (np.sin(theta) * mscale).astype(np.float32)[:, None, :]
    out = x.astype(np.float32, copy=True)
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:n_rot] = a * sin + b * cos
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = a * sin + b * cos
    return out


def _norm(c: Config, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    if c.traits.norm == "layer":
        return layer_norm(x, w, b if b is not None else np.float32(0), c.eps)
    return rms_norm(x, w, c.eps)


def _act(c: Config, x: np.ndarray) -> np.ndarray:
    return gelu(x) if c.traits.act == "gelu" else silu(x)


def _attend(c: Config, q: np.ndarray, k: np.ndarray, v: np.ndarray, pos: np.ndarray,
            swa: bool, f16: bool) -> np.ndarray:
    """Causal attention of q [T, H, Dk] over k [S, Hkv, Dk], v [S, Hkv, Dv] -> [T, H, Dv].

    Query head h reads key/value head h // (H / Hkv) (GQA).  The scores are scaled by
    ``kq_scale`` (gemma's q is pre-scaled instead), soft-capped s -> cap·tanh(s/cap)
    where the architecture caps them, and masked causally and, on sliding-window
    layers, to the last ``n_swa`` positions (llama.cpp LLAMA_SWA_TYPE_STANDARD).  With
    an F16 cache, q and the probabilities are rounded to F16 as ggml-cpu rounds what it
    multiplies by an F16 k or v (the cache itself already holds rounded values).
    """
    if f16:
        q = _f16(q)
    T, H = q.shape[0], q.shape[1]
    S, Hkv = k.shape[0], k.shape[1]
    g = H // Hkv
    qh = q.transpose(1, 0, 2).reshape(Hkv, g * T, q.shape[2])          # [Hkv, g*T, Dk]
    scores = qh @ k.transpose(1, 2, 0)                                 # [Hkv, g*T, S]
    scores = scores.reshape(Hkv, g, T, S).reshape(H, T, S)
    if not c.traits.q_scale:
        scores = scores * np.float32(c.kq_scale)
    if c.attn_softcap:
        cap = np.float32(c.attn_softcap)
        scores = np.tanh(scores / cap) * cap
    key_pos = np.arange(S)
    masked = key_pos[None, :] > pos[:, None]                           # [T, S]
    if swa and c.n_swa:
        masked |= pos[:, None] - key_pos[None, :] >= c.n_swa
    scores = np.where(masked[None], np.float32(-np.inf), scores)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = (scores / scores.sum(axis=-1, keepdims=True)).astype(np.float32)
    if f16:
        probs = _f16(probs)
    out = probs.reshape(Hkv, g * T, S) @ v.transpose(1, 0, 2)          # [Hkv, g*T, Dv]
    return out.reshape(H, T, -1).transpose(1, 0, 2)                    # [T, H, Dv]


def _rope(c: Config, w: Weights, x: np.ndarray, pos: np.ndarray, swa: bool) -> np.ndarray:
    if c.traits.rope is None:
        return x
    base = c.rope_base
    freq_scale, yarn = c.freq_scale, c.yarn
    if swa and c.traits.swa_rope_base is not None:
        base, freq_scale, yarn = c.traits.swa_rope_base, 1.0, None    # rope_freq_*_train_swa
    return rope(x, pos, c.n_rot, base, c.traits.rope == "neox", freq_scale, w.rope_freqs,
                yarn, c.attn_factor)


def _f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float32)


def _attention(c: Config, w: Weights, L: Layer, h: np.ndarray, pos: np.ndarray, swa: bool,
               k_past: np.ndarray, v_past: np.ndarray, f16: bool):
    """Self-attention of the new rows h [T, C]: (output [T, C], keys, values) with the cache."""
    T, H, Hkv, Dk, Dv = h.shape[0], c.n_head, c.n_head_kv, c.head_k, c.head_v
    if c.traits.mla:
        return _mla(c, w, L, h, pos, k_past, v_past, f16)
    if L.wqkv is not None:
        qkv = _lin(h, L.wqkv, L.bqkv)
        q, k, v = np.split(qkv, [H * Dk, H * Dk + Hkv * Dk], axis=-1)
    else:
        q, k, v = _lin(h, L.wq, L.bq), _lin(h, L.wk, L.bk), _lin(h, L.wv, L.bv)
    q, k, v = q.reshape(T, H, Dk), k.reshape(T, Hkv, Dk), v.reshape(T, Hkv, Dv)
    if L.q_norm is not None:
        q = rms_norm(q, L.q_norm, c.eps)
    if L.k_norm is not None:
        k = rms_norm(k, L.k_norm, c.eps)
    q, k = _rope(c, w, q, pos, swa), _rope(c, w, k, pos, swa)
    if c.traits.q_scale:
        q = q * np.float32(c.kq_scale)
    store = _f16 if f16 else (lambda a: a.astype(np.float32))
    k = np.concatenate([k_past, store(k)])
    v = np.concatenate([v_past, store(v)])
    out = _attend(c, q, k, v, pos, swa, f16).reshape(T, H * Dv)
    return _lin(out, L.wo, L.bo), k, v


def _mla(c: Config, w: Weights, L: Layer, h: np.ndarray, pos: np.ndarray,
         k_past: np.ndarray, v_past: np.ndarray, f16: bool):
    """deepseek2.cpp's multi-head latent attention, in its absorbed form when the file has
    attn_k_b / attn_v_b: a single shared key/value head over the normalised latent
    (plus the shared rope key), each query head's non-rope part mapped into latent space
    by k_b, and each head's latent output expanded by v_b.  Older files (attn_kv_b)
    expand keys and values per head first, as llama.cpp does for them."""
    T, H, R, rot, nope = h.shape[0], c.n_head, c.mla_rank, c.n_rot, c.mla_nope
    store = _f16 if f16 else (lambda a: a.astype(np.float32))
    q = _lin(rms_norm(_lin(h, L.wq_a), L.q_a_norm, c.eps), L.wq_b) if L.wq_a is not None else _lin(h, L.wq)
    q = q.reshape(T, H, nope + rot)
    q_nope, q_pe = q[..., :nope], _rope(c, w, q[..., nope:], pos, False)
    kv = _lin(h, L.wkv_a)                                              # [T, R + rot]
    latent = rms_norm(kv[:, :R], L.kv_a_norm, c.eps)                   # [T, R]
    k_pe = _rope(c, w, kv[:, None, R:], pos, False)                    # [T, 1, rot]
    if L.wk_b is not None:
        q_nope = round_activations(q_nope, getattr(L.wk_b, "vec_dot", None))
        q_abs = np.einsum("thn,hrn->thr", q_nope, np.asarray(L.wk_b))   # [T, H, R]
        qc = np.concatenate([q_pe, q_abs], axis=-1)                    # rope first, as llama.cpp
        k = np.concatenate([k_past, store(np.concatenate([k_pe, latent[:, None, :]], axis=-1))])
        v = np.concatenate([v_past, store(latent[:, None, :])])        # [S, 1, R]
        o = _attend(c, qc, k, v, pos, False, f16)                      # [T, H, R]
        o = round_activations(o, getattr(L.wv_b, "vec_dot", None))
        o = np.einsum("thr,hvr->thv", o, np.asarray(L.wv_b))           # [T, H, Dv]
    else:
        kvb = _lin(latent, L.wkv_b).reshape(T, H, nope + c.head_v)
        k_new = np.concatenate([np.broadcast_to(k_pe, (T, H, rot)), kvb[..., :nope]], axis=-1)
        qc = np.concatenate([q_pe, q_nope], axis=-1)
        k = np.concatenate([k_past, store(k_new)])
        v = np.concatenate([v_past, store(kvb[..., nope:])])
        o = _attend(c, qc, k, v, pos, False, f16)
    return _lin(o.reshape(T, -1), L.wo, L.bo), k, v


def _dense_ffn(c: Config, h: np.ndarray, gate, gate_b, up, up_b, down, down_b) -> np.ndarray:
    u = _lin(h, up, up_b)
    if not c.traits.gated:
        a = _act(c, u)
    elif gate is None:                                                 # fused [gate; up]
        half = u.shape[-1] // 2
        a = _act(c, u[:, :half]) * u[:, half:]
    else:
        a = _act(c, _lin(h, gate, gate_b)) * u
    return _lin(a, down, down_b)


def _moe(c: Config, L: Layer, h: np.ndarray) -> np.ndarray:
    """llama-graph.cpp build_moe_ffn: route each row to its top-k experts.

    probs = softmax or sigmoid of the router logits; the top k are chosen by probs (+
    exp_probs_b when present, which does not enter the weights); their probs are
    renormalised to sum 1 where the architecture says so (sum clamped as llama.cpp
    does), scaled by expert_weights_scale, and weight each expert's SwiGLU output.
    """
    logits = _lin(h, L.router)                                         # [T, E]
    if c.moe_gating == "sigmoid":
        probs = sigmoid(logits)
    else:
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    select = probs + L.router_bias if L.router_bias is not None else probs
    k = c.n_expert_used
    top = np.argsort(-select, axis=-1, kind="stable")[:, :k]          # [T, k]
    weights = np.take_along_axis(probs, top, axis=-1)                  # [T, k]
    if c.moe_norm:
        weights = weights / np.maximum(weights.sum(axis=-1, keepdims=True), np.float32(6.103515625e-5))
    if c.moe_scale:
        weights = weights * np.float32(c.moe_scale)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        row = h[t:t + 1]
        for j in range(k):
            e_id = top[t, j]
            y = _lin(silu(_lin(row, L.gate_exps[e_id])) * _lin(row, L.up_exps[e_id]), L.down_exps[e_id])
            out[t] += weights[t, j] * y[0]
    if L.down_shexp is not None:
        out = out + _dense_ffn(c, h, L.gate_shexp, None, L.up_shexp, None, L.down_shexp, None)
    return out


def initial_state(w: Weights, kv_f16: bool = False) -> State:
    """The empty cache (F32, or F16 as llama.cpp's default cache type).  MLA in its absorbed form caches one shared head: the rope key
    and the normalised latent; files with attn_kv_b cache every head expanded."""
    c = w.config
    if c.traits.mla and all(L.wkv_b is None for L in w.layers):
        shapes = ((1, c.n_rot + c.mla_rank), (1, c.mla_rank))
    elif c.traits.mla:
        shapes = ((c.n_head, c.head_k), (c.n_head, c.head_v))
    else:
        shapes = ((c.n_head_kv, c.head_k), (c.n_head_kv, c.head_v))
    return State(tuple(np.zeros((0, *shapes[0]), np.float32) for _ in range(c.n_layer)),
                 tuple(np.zeros((0, *shapes[1]), np.float32) for _ in range(c.n_layer)), kv_f16)


def forward(weights: Weights, tokens: list[int], state: State | None = None,
            all_logits: bool = False, kv_f16: bool = False) -> tuple[np.ndarray, State]:
    """Run ``tokens`` after the cached ones; the logits and the extended cache.

    ``kv_f16`` (for a new cache) keeps keys and values in F16 as llama.cpp's default
    cache does; F32 (the default here) is llama.cpp's ``--cache-type-k/v f32``."""
    c = weights.config
    ids = check_tokens(tokens, c.n_vocab)
    state = initial_state(weights, kv_f16) if state is None else state
    P, T = state.n_past, len(ids)
    pos = np.arange(P, P + T)                                          # [T]
    x = weights.embed.rows(ids)                                        # [T, C]
    if weights.positions is not None:
        if P + T > c.n_ctx:
            raise WeightError(f"{P + T} tokens exceed the model's context of {c.n_ctx}")
        x = x + weights.positions[pos]
    if c.traits.embed_scale:
        x = x * np.float32(math.sqrt(c.n_embd))
    keys, values = [], []
    for il, (L, kp, vp) in enumerate(zip(weights.layers, state.keys, state.values)):
        swa = c.swa_layers[il] if c.swa_layers else False
        a, k, v = _attention(c, weights, L, _norm(c, x, L.attn_norm, L.attn_norm_b), pos, swa,
                             kp, vp, state.kv_f16)
        if L.post_attn_norm is not None:
            a = rms_norm(a, L.post_attn_norm, c.eps)
        x = x + a
        h = _norm(c, x, L.ffn_norm, L.ffn_norm_b)
        if L.router is not None:
            f = _moe(c, L, h)
        else:
            f = _dense_ffn(c, h, L.gate, L.gate_b, L.up, L.up_b, L.down, L.down_b)
        if L.post_ffw_norm is not None:
            f = rms_norm(f, L.post_ffw_norm, c.eps)
        x = (x + f).astype(np.float32)
        keys.append(k)
        values.append(v)
    rows = x if all_logits else x[-1:]
    h = _norm(c, rows, weights.output_norm, weights.output_norm_b)
    logits = _lin(h, weights.output, weights.output_b)                 # [T', V]
    if c.final_softcap:
        cap = np.float32(c.final_softcap)
        logits = np.tanh(logits / cap) * cap
    logits = logits.astype(np.float32)
    return (logits if all_logits else logits[0]), State(tuple(keys), tuple(values), state.kv_f16)
