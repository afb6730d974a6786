"""What one transformer decoder block computes: norms, rotary, attention, feed-forward.

Why a module of its own: ``decoder.py`` maps a file's tensors to weights and runs the
blocks in order; what happens inside a block -- RMS/LayerNorm, rotary embeddings with
linear and YaRN scaling, grouped-query or latent (MLA) attention with soft-capping and
sliding windows, dense FFNs -- is here (attention in ``attention.py``, routed experts in
``experts.py``), as pure functions of a
``traits.Config``, one block's ``Layer`` and the activations, following ggml-cpu's
numerics (see ``decoder.py``).  ``w`` in the attention functions is the decoder's
``Weights``: only its ``rope_freqs`` is read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ggscope.forward import ggml_ops
from ggscope.forward.matmul import linear as _lin
from ggscope.forward.ops import layer_norm, relu_squared, silu
from ggscope.forward.traits import Config

__all__ = ["Layer", "rms_norm", "gelu", "rope", "xielu"]


@dataclass
class Layer:
    """One block's float32 weights in numpy order; None where the file has none."""
    attn_norm: np.ndarray
    attn_norm_b: np.ndarray | None = None
    attn_norm_2: np.ndarray | None = None; attn_norm_2_b: np.ndarray | None = None   # falcon-40b
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
    shexp_gate: np.ndarray | None = None                               # ffn_gate_inp_shexp [C] (qwen2moe)
    router_b: np.ndarray | None = None                                 # gpt-oss: router and expert biases
    gate_exps_b: np.ndarray | None = None; up_exps_b: np.ndarray | None = None   # [E, F]
    down_exps_b: np.ndarray | None = None                              # [E, C]
    attn_sinks: np.ndarray | None = None                               # gpt-oss: a sink logit per head


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis, as ggml-cpu computes
    ggml_rms_norm then mul (ops.cpp ggml_compute_forward_rms_norm_f32): each square in
    float32 summed in double (ggml_float), the mean rounded to float, ``scale =
    1.0f/sqrtf(mean + eps)``, then ``x*scale*w`` left to right.  Summing in float32
    instead moves ~30 % of the outputs by an ulp, and a Q8_0 activation rounding right
    after turns some of those into a different integer (x·127/amax lands on .5 exactly
    more often than chance: 39 of 81920 in gemma-3-270m's first attention input)."""
    x = np.asarray(x, dtype=np.float32)
    ms = ((x * x).astype(np.float64).sum(axis=-1, keepdims=True) / x.shape[-1]).astype(np.float32)
    scale = np.float32(1) / np.sqrt(ms + np.float32(eps))
    return ((x * scale) * weight).astype(np.float32)


def _gelu_exact(x: np.ndarray) -> np.ndarray:
    k = np.float32(np.sqrt(2.0 / np.pi))
    return (0.5 * x * (1 + np.tanh(k * x * (1 + np.float32(0.044715) * x * x)))).astype(np.float32)


def _gelu_ggml(x: np.ndarray) -> np.ndarray:
    """ggml_gelu_f32 (ggml-cpu/vec.h) as the compiled library evaluates it in float32:
    ``0.5f*x*(1.0f + tanhf(SQRT_2_OVER_PI*x*(1.0f + GELU_COEF_A*x*x)))`` with the inner
    ``1 + A*x*x`` contracted to one fused multiply-add (GCC's default -ffp-contract=fast
    on an FMA target, as llama.cpp's native build is) and tanhf correctly rounded
    (numpy's float32 tanh is not: 234 of the 65536 table entries came out one fp16 step
    off, e.g. gelu(-2.014) and every x below about -5 that ggml's table holds as 0)."""
    x = np.asarray(x, dtype=np.float32)
    inner = ((np.float32(0.044715) * x).astype(np.float64) * x + 1.0).astype(np.float32)
    t = np.tanh(((np.float32(0.79788456080286535587989211986876) * x) * inner)
                .astype(np.float64)).astype(np.float32)
    return (np.float32(0.5) * x * (np.float32(1) + t)).astype(np.float32)


_GELU_TABLE: np.ndarray | None = None


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation, as ggml-cpu computes it (GGML_GELU_FP16): 0 below -10,
    x above 10, else the input rounded to fp16 looked up in a 65536-entry fp16 table of
    gelu (ggml_table_gelu_f16, filled by ggml_cpu_init from ``_gelu_ggml``) -- GPT-2's
    gelu_new, gemma's gelu_pytorch_tanh."""
    global _GELU_TABLE
    if _GELU_TABLE is None:
        codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
        with np.errstate(invalid="ignore", over="ignore"):
            table = _gelu_ggml(codes.astype(np.float32)).astype(np.float16).astype(np.float32)
        nan = np.isnan(table)         # a quiet NaN of the input's sign, as x86 and ggml's conversion give
        table[nan] = np.copysign(np.float32(np.nan), codes.astype(np.float32))[nan]
        _GELU_TABLE = table
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = _GELU_TABLE[x.astype(np.float16).view(np.uint16)]
    return np.where(x <= -10, np.float32(0), np.where(x >= 10, x, y)).astype(np.float32)


def _yarn_ramp(low: float, high: float, n: int) -> np.ndarray:
    y = (np.arange(n, dtype=np.float32) - np.float32(low)) / np.float32(max(0.001, high - low))
    return (np.float32(1) - np.clip(y, 0, 1)).astype(np.float32)


def _yarn_corr_dims(n_rot: int, n_ctx_orig: float, base: float, beta_fast: float,
                    beta_slow: float) -> tuple[float, float]:
    def dim(n_rotations: float) -> float:
        return n_rot * math.log(n_ctx_orig / (n_rotations * 2 * math.pi)) / (2 * math.log(base))
    return max(0.0, math.floor(dim(beta_fast))), min(n_rot - 1.0, math.ceil(dim(beta_slow)))


def _f32(v) -> np.ndarray:
    """A float64 result rounded once to float32: what a correctly rounded libm call
    (powf, cosf, sinf) returns for float32 arguments."""
    return np.asarray(v, dtype=np.float64).astype(np.float32)


def rope(x: np.ndarray, pos: np.ndarray, n_rot: int, base: float, neox: bool,
         freq_scale: float = 1.0, freq_factors: np.ndarray | None = None,
         yarn: tuple[float, float, float, float] | None = None,
         attn_factor: float = 1.0, libm: bool = True, still: tuple[bool, ...] = ()) -> np.ndarray:
    """Rotary position embedding of the first ``n_rot`` dims of each head (ggml_rope_ext).

    x: [T, H, D]; pos: [T].  "norm" rotates pairs (2i, 2i+1), "neox" pairs (i, i + n_rot/2);
    θ_i = pos · base^(-2i/n_rot) / freq_factors[i], interpolated by ``freq_scale`` and, with
    YaRN, ramped between interpolation and extrapolation as ggml's ``rope_yarn`` does.
    The angles are float32 as ggml-cpu's ``ggml_rope_cache_init`` builds them: a running
    product ``theta *= theta_scale`` with ``theta_scale = powf(base, -2.0f/n_rot)``, so
    the rounding of each step carries into the next (at position 127 the last pair's angle
    is off the exact one by up to ~1e-5 relative, which the logits of a long-context model
    feel), and cos / sin are the C library's cosf / sinf (``ggml_ops.rope_cos_sin``; glibc's
    are not correctly rounded: 1 % of gemma-3-270m's rotated q differed by an ulp) unless
    ``libm`` is False (``--exact``: correctly rounded, as before the kernels).
    """
    half = n_rot // 2
    ext, corr = 0.0, (0.0, 0.0)
    if yarn is not None and yarn[0] != 0.0:
        ext = yarn[0]
        corr = _yarn_corr_dims(n_rot, yarn[3], base, yarn[1], yarn[2])
    got = _rope_angles(pos, n_rot, base, freq_scale, freq_factors, ext, corr, attn_factor, libm)
    if any(still):                                   # M-RoPE's 4th section: position 0 for text
        at0 = _rope_angles(np.zeros_like(pos), n_rot, base, freq_scale, freq_factors, ext, corr,
                           attn_factor, libm)
        mask = np.array(still)
        got = tuple(np.where(mask, a0, a) for a, a0 in zip(got, at0))
    cos, sin = got[0][:, None, :], got[1][:, None, :]                     # [T, 1, n_rot/2]
    out = x.astype(np.float32, copy=True)
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        lo, hi = slice(0, half), slice(half, n_rot)
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        lo, hi = slice(0, n_rot, 2), slice(1, n_rot, 2)
    # rotate_pairs: x0*cos - x1*sin and x0*sin + x1*cos, the first product fused into
    # the subtraction / addition (fma; float64 holds the float32 product exactly)
    a64 = a.astype(np.float64)
    out[..., lo] = _f32(a64 * cos - (b * sin))
    out[..., hi] = _f32(a64 * sin + (b * cos))
    return out


def _rope_angles(pos, n_rot, base, freq_scale, freq_factors, ext, corr, attn_factor, libm):
    got = None
    if libm:
        got = ggml_ops.rope_cos_sin(pos, n_rot, base, freq_scale, freq_factors, ext, corr, attn_factor)
    if got is None:                                  # no compiled extension: numpy's libm, not ggml's
        got = _rope_cos_sin(pos, n_rot, base, freq_scale, freq_factors, ext, corr, attn_factor)
    return got


def _rope_cos_sin(pos: np.ndarray, n_rot: int, base: float, freq_scale: float,
                  freq_factors: np.ndarray | None, ext: float, corr: tuple[float, float],
                  attn_factor: float) -> tuple[np.ndarray, np.ndarray]:
    """``ggml_ops.rope_cos_sin`` in numpy: each libm call correctly rounded (glibc's cosf
    and sinf are not: about 1 % of the values differ by an ulp)."""
    half = n_rot // 2
    scale = _f32(np.float64(np.float32(base)) ** np.float64(np.float32(-2.0 / n_rot)))
    theta = np.empty((pos.shape[0], half), dtype=np.float32)              # [T, n_rot/2]
    t = pos.astype(np.float32)
    for i in range(half):
        theta[:, i] = t
        t = t * scale
    extrap = theta if freq_factors is None else theta / freq_factors.astype(np.float32)[:half]
    fs = np.float32(freq_scale)
    angle = fs * extrap
    mscale = np.float32(attn_factor)
    if ext != 0.0:
        mix = _yarn_ramp(corr[0], corr[1], half)[None, :] * np.float32(ext)
        angle = angle * (np.float32(1) - mix) + extrap * mix
        mscale = mscale * (np.float32(1) + np.float32(0.1) * _f32(math.log(1.0 / float(fs))))
    return (_f32(np.cos(angle.astype(np.float64))) * mscale,
            _f32(np.sin(angle.astype(np.float64))) * mscale)


def _norm(c: Config, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """llama-graph.cpp build_norm: LayerNorm or RMSNorm, times the weight, plus the bias
    where the file has one -- for RMSNorm too (phimoe's norms carry biases)."""
    if c.traits.norm == "layer":
        return layer_norm(x, w, b if b is not None else np.float32(0), c.eps)
    y = rms_norm(x, w, c.eps)
    return y if b is None else (y + b).astype(np.float32)


def _act(c: Config, x: np.ndarray) -> np.ndarray:
    """The FFN activation; GELU through ggml's fp16 table, or computed (``c.exact``)."""
    if c.traits.act == "gelu":
        return _gelu_exact(np.asarray(x, np.float32)).astype(np.float32) if c.exact else gelu(x)
    if c.traits.act == "relu2":                      # LLM_FFN_RELU_SQR: ggml_sqr(ggml_relu(x))
        return relu_squared(x)
    return silu(x)


def xielu(x: np.ndarray, alpha_n: float, alpha_p: float, beta: float, eps: float) -> np.ndarray:
    """ggml-cpu unary-ops.cpp op_xielu, in float: alpha_p·x·x + beta·x for x > 0, else
    (expm1f(min(x, eps)) - x)·alpha_n + beta·x; alpha_n and alpha_p as ggml_xielu stores
    them (beta + softplus(alpha_n), softplus(alpha_p): ``hparams.xielu``)."""
    f32 = np.float32
    x = np.asarray(x, f32)
    an, ap, b = f32(alpha_n), f32(alpha_p), f32(beta)
    pos = ap * x * x + b * x
    neg = (np.expm1(np.minimum(x, f32(eps))) - x) * an + b * x
    return np.where(x > 0, pos, neg).astype(f32)


def _dense_ffn(c: Config, h: np.ndarray, gate, gate_b, up, up_b, down, down_b,
               il: int = 0) -> np.ndarray:
    u = _lin(h, up, up_b)
    if c.xielu:                                                        # apertus: per-layer xIELU
        a = xielu(u, *c.xielu[il])
    elif not c.traits.gated:
        a = _act(c, u)
    elif gate is None:                                                 # fused [gate; up]
        half = u.shape[-1] // 2
        a = _glu(c, u[:, :half], u[:, half:])
    else:
        a = _glu(c, _lin(h, gate, gate_b), u)
    return _lin(a, down, down_b)


def _glu(c: Config, g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """act(g) * u; GEGLU as ggml_vec_geglu_f32 (ggml-cpu/vec.h) computes it: a gate at or
    below -10 gives +0 itself, not 0 * u (which is -0 for a negative u); SwiGLU through
    ggml's own kernel (``ggml_ops.swiglu``) where the extension is built."""
    if c.traits.act == "silu" and not c.exact:
        a = ggml_ops.swiglu(g, u)                     # ggml's vector expf, bit for bit
        if a is not None:
            return a
    a = _act(c, g) * u
    if c.traits.act == "gelu" and not c.exact:
        a = np.where(g <= -10, np.float32(0), a).astype(np.float32)
    return a
