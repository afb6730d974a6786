"""Decoder layers whose shapes differ one from the next: per-layer head counts and FFN widths.

Why a module of its own: ``decoder.py`` runs layers that all have attention and an FFN
of the widths the file's scalars give.  deci.cpp (Llama-3_1-Nemotron 51B / Ultra, from
NVIDIA's neural architecture search) reads ``attention.head_count``,
``attention.head_count_kv`` and ``feed_forward_length`` as one number per layer, and a
layer may then have grouped-query attention with its own KV head count, a "linear
attention" (``n_head_kv`` 0: attn_output alone on the normalised input), no attention
(``n_head`` 0: the input goes to the FFN as it is, without a residual add), or no FFN
(``n_ff`` 0: llama.cpp's graph ``continue``s, keeping the layer's *input* as its output --
the attention computed there is dropped).  This module reads those shapes, loads such a
layer and runs it, as llama.cpp as vendored in llama-cpp-python 0.3.36 does
(src/models/deci.cpp).

Contract: (``hparams.layer_shapes`` reads ``Config.layer_shapes``, (n_head, n_head_kv,
n_ff) per layer); ``load(layer, config, i, req, opt)`` fills a
``blocks.Layer``; ``block(config, weights, layer, il, x, pos, k_past, v_past, f16,
flash, first) -> (x, keys, values)``, ``x`` cut to its rows from ``first`` on (the
last layer's logits rows, as the decoder asks); a layer without attention extends the
cache by zero-width rows, so every layer's cache counts the positions.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ggscope.forward.attention import _attention
from ggscope.forward.blocks import Layer, _dense_ffn, rms_norm
from ggscope.forward.matmul import linear as _lin
from ggscope.forward.traits import Config

__all__ = ["load", "block", "kv_heads"]

def kv_heads(c: Config, il: int) -> int:
    """The KV heads layer il caches (0 without attention or with the linear one)."""
    h, hkv, _ = c.layer_shapes[il]
    return hkv if h else 0


def load(L: Layer, c: Config, i: int, req, opt) -> None:
    """deci.cpp load_arch_tensors for block i: attn_norm and q/k/v/o, or attn_norm and a
    square attn_output (linear attention), or neither; ffn_norm and gate/up/down of the
    layer's width, with optional biases, unless its n_ff is 0; attn_output.bias optional."""
    C, D = c.n_embd, c.head_k
    h, hkv, ff = c.layer_shapes[i]
    if h:
        L.attn_norm = req("blk.{i}.attn_norm.weight", i, (C,))
    if h and hkv:
        L.wq = req("blk.{i}.attn_q.weight", i, (h * D, C))
        L.wk = req("blk.{i}.attn_k.weight", i, (hkv * D, C))
        L.wv = req("blk.{i}.attn_v.weight", i, (hkv * c.head_v, C))
        L.wo = req("blk.{i}.attn_output.weight", i, (C, h * c.head_v))
    elif h:
        L.wo = req("blk.{i}.attn_output.weight", i, (C, C))
    L.bo = opt("blk.{i}.attn_output.bias", i, (C,))
    if ff:
        L.ffn_norm = req("blk.{i}.ffn_norm.weight", i, (C,))
        L.gate, L.gate_b = req("blk.{i}.ffn_gate.weight", i, (ff, C)), opt("blk.{i}.ffn_gate.bias", i, (ff,))
        L.up, L.up_b = req("blk.{i}.ffn_up.weight", i, (ff, C)), opt("blk.{i}.ffn_up.bias", i, (ff,))
        L.down, L.down_b = req("blk.{i}.ffn_down.weight", i, (C, ff)), opt("blk.{i}.ffn_down.bias", i, (C,))


def block(c: Config, w, L: Layer, il: int, x: np.ndarray, pos: np.ndarray,
          k_past: np.ndarray, v_past: np.ndarray, f16: bool, flash: bool, first: int):
    """deci.cpp's layer il on the rows x [T, C]."""
    h_count, hkv, ff = c.layer_shapes[il]
    T = x.shape[0]
    inp = x
    if h_count and hkv:
        cl = replace(c, n_head=h_count, n_head_kv=hkv)
        cur, k, v = _attention(cl, w, L, rms_norm(x, L.attn_norm, c.eps), pos, False,
                               k_past, v_past, f16, flash)
    else:
        k = np.concatenate([k_past, np.zeros((T, 0, k_past.shape[2]), np.float32)])
        v = np.concatenate([v_past, np.zeros((T, 0, v_past.shape[2]), np.float32)])
        # "linear attention": wo on the norm, without its bias; no attention: the input itself
        cur = _lin(rms_norm(x, L.attn_norm, c.eps), L.wo) if h_count else x
    if first:
        cur, inp, x = cur[first:], inp[first:], x[first:]
    if not ff:                                   # `continue`: the layer's input goes on
        return x, k, v
    ffn_inp = (cur + inp).astype(np.float32) if h_count else cur
    f = _dense_ffn(c, rms_norm(ffn_inp, L.ffn_norm, c.eps), L.gate, L.gate_b, L.up, L.up_b,
                   L.down, L.down_b, il)
    return (f + ffn_inp).astype(np.float32), k, v
