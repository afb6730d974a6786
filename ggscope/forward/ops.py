"""Pure numpy kernels shared by the reference forward passes.

Why: every architecture module (``rwkv4.py`` ... ``rwkv7.py``) should read like the
paper's equations, so the arithmetic they share lives here once, as small pure
functions over float32 arrays.  Nothing here knows a tensor name or a file format.

Contract: inputs are float32 numpy arrays, outputs are new float32 arrays (inputs are
never modified); constants such as eps come in as arguments, never as literals inside
a kernel.  Shape comments use ``C`` = n_embed, ``H`` = heads, ``S`` = head size,
``F`` = FFN width, ``D`` = low-rank width, ``V`` = vocabulary.
"""
from __future__ import annotations

import numpy as np

from ggscope.forward.matmul import linear as _mul_mat

__all__ = [
    "layer_norm", "group_norm", "linear", "sigmoid", "silu", "relu_squared",
    "token_shift", "lerp", "l2_normalize", "decay_from_log",
]


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * weight + bias."""
    mean = x.mean(axis=-1, keepdims=True)                         # [..., 1]
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)          # [..., 1] biased variance
    y = (x - mean) / np.sqrt(var + np.float32(eps))               # [..., C]
    return (y * weight + bias).astype(np.float32)                 # [..., C]


def group_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray,
               n_groups: int, eps: float) -> np.ndarray:
    """GroupNorm of one vector of C channels split into ``n_groups`` equal groups."""
    g = x.reshape(n_groups, -1)                                   # [G, C/G]
    mean = g.mean(axis=-1, keepdims=True)                         # [G, 1]
    var = ((g - mean) ** 2).mean(axis=-1, keepdims=True)          # [G, 1]
    y = ((g - mean) / np.sqrt(var + np.float32(eps))).reshape(-1)  # [C]
    return (y * weight + bias).astype(np.float32)                 # [C]


def linear(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w @ x`` for a weight in numpy shape (out, in), i.e. ggml's ``mul_mat(w, x)``:
    a weight loaded with its ggml type (``WeightMapper(typed=True)``) first rounds x
    as ggml-cpu does for that type (``matmul.linear``); a plain array does not."""
    if getattr(w, "vec_dot", None) is not None and np.ndim(x) == 1:
        return _mul_mat(np.asarray(x, np.float32)[None, :], w)[0].astype(np.float32)
    return (w @ x).astype(np.float32)                             # [out] = [out, in] @ [in]


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function, written so that large |x| never overflows ``exp``."""
    e = np.exp(-np.abs(x))                                        # [...] in (0, 1]
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(np.float32)  # [...]


def silu(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) (a.k.a. swish)."""
    return (x * sigmoid(x)).astype(np.float32)                    # [...]


def relu_squared(x: np.ndarray) -> np.ndarray:
    """relu(x) ** 2, RWKV's channel-mix activation."""
    r = np.maximum(x, 0)                                          # [...]
    return (r * r).astype(np.float32)                             # [...]


def token_shift(x: np.ndarray, x_prev: np.ndarray) -> np.ndarray:
    """The difference to the previous token's input, ``x_prev - x`` (v6/v7 "sx")."""
    return (x_prev - x).astype(np.float32)                        # [C]


def lerp(x: np.ndarray, x_prev: np.ndarray, mix: np.ndarray) -> np.ndarray:
    """Token-shift mix of v4/v5: ``x * mix + x_prev * (1 - mix)``."""
    return (x * mix + x_prev * (1 - mix)).astype(np.float32)      # [C]


def l2_normalize(x: np.ndarray, eps: float) -> np.ndarray:
    """Each row divided by max(its L2 norm, eps) (torch ``F.normalize`` semantics)."""
    norm = np.sqrt((x * x).sum(axis=-1, keepdims=True))          # [..., 1]
    return (x / np.maximum(norm, np.float32(eps))).astype(np.float32)  # [..., S]


def decay_from_log(w: np.ndarray) -> np.ndarray:
    """Per-channel decay factor ``exp(-exp(w))`` in (0, 1) from a log-log decay ``w``."""
    return np.exp(-np.exp(w)).astype(np.float32)                  # [...]
