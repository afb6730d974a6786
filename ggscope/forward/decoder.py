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

with the architecture's variations: no pre-norms (olmo2, exaone4), a parallel residual
(the FFN reads the attention's input or its own norm of x, and the three are summed in
the order its graph adds them: phi2, falcon, stablelm 2 12B, command-r, gptneox), and
multipliers on the embedding, each sublayer's output and the logits (granite, minicpm),
ALiBi instead of rope (baichuan 13B), chunked attention and experts fed their weighted
input (llama4), group-limited routing (DeepSeek-V3), and layers of their own shapes --
no attention, no FFN, a "linear" attention (deci: ``layer_shapes.py``).
Then ``logits = output(norm(x))``, scaled or soft-capped where the architecture says so.
This module maps the tensors to weights and runs the blocks; what a block computes is in
``blocks.py``, ``attention.py`` and ``experts.py``.

Numerics follow llama.cpp's CPU backend: activations are rounded as ggml-cpu rounds
them for each weight's type (``matmul.py``) and, where the compiled kernels are built
(``ggml_ops``), the products, flash attention, rope angles and SwiGLU are ggml's own
arithmetic, bit for bit; GELU goes through ggml's fp16 table, and
the token embedding stays in the file's encoding (rows decoded on lookup; a tied output
streams it).  A matrix only multiplied by, of a type ``ggml_ops`` multiplies from its
blocks (``ggml_ops.Q0_TYPES``), stays as its blocks (``matmul.Packed``): llama.cpp's
arithmetic never reads its float32 values, which are decoded only if something needs
them (``--exact`` loads float32; a product ggml_ops declines decodes once).  Every other
weight is decoded once, at load, by the compiled decoders (``loading``) to one float32
array -- up to ``loading.DECODED_BUDGET`` bytes of matrices; the matrices past it stay in
the file's encoding and are decoded for each product that needs their values, to the
same values.

Contract: ``load(model, exact=False) -> Weights`` (``exact``: no ggml rounding, the
dequantized model as transformers computes it); ``forward(weights, tokens, state=None,
all_logits=False, kv_f16=False) -> (logits, State)``: logits after the last token
(``[n_vocab]``), or after every new token (``[T, n_vocab]``) with ``all_logits``
(from the ``i``-th with ``logits_from=i``);
``State`` is the key/value cache (immutable; pass it back to continue), F32 unless
``kv_f16`` asks for llama.cpp's default F16 cache.  The file must stay open.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ggscope.core.errors import FileChanged, GGScopeError
from ggscope.forward import WeightError, WeightMapper, architecture, check_tokens
from ggscope.forward import ggml_ops, loading
from ggscope.forward.loading import Budget
from ggscope.forward.matmul import StreamedRows, linear as _lin, typed as _typed
from ggscope.forward.attention import _attention, load_mla
from ggscope.forward.blocks import Layer, _dense_ffn, _norm, gelu, rms_norm, rope
from ggscope.forward.experts import _moe, load_moe
from ggscope.forward import layer_shapes
from ggscope.forward.traits import LEGACY_FORMATS, LEGACY_NAMES, TRAITS, Config, Traits, read_config
from ggscope.forward import UnsupportedArchitecture

__all__ = ["Traits", "TRAITS", "Config", "Layer", "Weights", "State", "load", "forward",
           "rms_norm", "rope", "gelu", "LEGACY_FORMATS"]


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
    flash: bool = False             # attention as ggml-cpu's tiled flash attention

    @property
    def n_past(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0


# ---- loading --------------------------------------------------------------------------------

# The matrices the blocks only multiply by (``linear``): of a type ggml_ops multiplies from
# its blocks, or past the load's decoded budget, they stay in the file's encoding
# (``matmul.Packed``).
_PRODUCTS = frozenset({"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "attn_q_a",
                       "attn_q_b", "attn_kv_a_mqa", "attn_kv_b", "ffn_gate", "ffn_up", "ffn_down",
                       "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "output"})

def load(model, exact: bool = False) -> Weights:
    """Map a decoder file's tensors to float32 arrays, checking names and shapes.

    ``exact``: the model the weights mean, as transformers' GGUF path computes it --
    weights dequantized to float32, activations never rounded to the weight type's
    dot-product format, GELU computed rather than looked up in ggml's fp16 table."""
    legacy = model.format in LEGACY_FORMATS
    arch = architecture(model)
    if arch not in TRAITS:
        raise UnsupportedArchitecture(model.path, arch, model.format)
    m = WeightMapper(model, arch)
    names = LEGACY_NAMES[arch] if legacy else None

    def name(gguf: str, i: int | None = None) -> str:
        key = names.get(gguf, "") if names is not None else gguf
        return key.replace("{i}", str(i)) if i is not None else key

    c = read_config(model, m, arch, legacy, name)
    if exact:
        c = replace(c, exact=True)
    C, V, H, Hkv = c.n_embd, c.n_vocab, c.n_head, c.n_head_kv

    # the arena holds at most the file's matrices (an alignment's slack each); a small
    # model reserves no more than it uses
    budget = Budget(loading.DECODED_BUDGET,
                    sum(4 * (t.n_elements + Budget.ALIGN) for t in model.tensors if len(t.shape) == 2))

    def take(full: str, shape, gguf: str = "") -> np.ndarray:
        """``full`` decoded (tagged with llama.cpp's rounding unless ``exact``), or packed
        when ``gguf`` names a matrix only multiplied by and the budget is spent."""
        stem = gguf.split(".")[-2:-1]
        product = len(shape) == 2 and bool(stem) and stem[0] in _PRODUCTS
        slot = budget.take(math.prod(shape)) if product else None
        try:
            if product and slot is None:                             # decoded for each product
                return m.packed(full, shape, rounded=not exact)
            if product and not exact and model.tensor(full).type in ggml_ops.Q0_TYPES:
                # multiplied from its blocks by ggml's kernels: decoded (into its slot, once)
                # only if a product ggml_ops declines, or attribution, needs the values
                return m.packed(full, shape, slot=slot)
            if exact:
                return m.take(full, shape, slot)                     # plain float32: no rounding
            values, info = m.take(full, shape, slot), model.tensor(full)
            # Q4_1 / Q5_1: block mins; Q8_0, Q4_0, ...: the blocks ggml_ops multiplies (matmul.typed)
            raw = info.raw() if info.type in ("Q4_1", "Q5_1", *ggml_ops.Q0_TYPES) else None
            return _typed(values, info.type, raw)
        except ValueError as exc:       # blocks that do not tile the claimed shape: the file's fault
            raise WeightError(f"{model.path}: tensor {full!r} ({model.tensor(full).type}): its blocks do "
                              f"not fit its shape: {exc}") from None

    def opt(gguf: str, i: int | None, shape) -> np.ndarray | None:
        """The tensor if the file has it; ``shape`` None takes the stored one (a width
        that is itself a hyperparameter, such as q_lora_rank)."""
        full = name(gguf, i)
        if not (full and m.has(full)):
            return None
        return take(full, tuple(reversed(m.ne(full))) if shape is None else shape, gguf)

    def req(gguf: str, i: int | None, shape) -> np.ndarray:
        full = name(gguf, i)
        if not full:
            raise WeightError(f"{model.path}: {arch} needs tensor {gguf!r}, which a "
                              f"{model.format} file cannot hold")
        return take(full, shape, gguf)

    def width(gguf: str, i: int, axis: int = -1) -> int:
        """A dimension read from a stored tensor (ggml order: ne[-1] = rows)."""
        return m.ne(name(gguf, i))[axis]

    layers = []
    for i in range(c.n_layer):
        if c.layer_shapes:                                # deci: each layer its own shape
            L = Layer(attn_norm=None)
            layer_shapes.load(L, c, i, req, opt)
            layers.append(L)
            continue
        pre, par = c.traits.prenorm, c.parallel           # olmo2: no norm before the sublayers
        L = Layer(attn_norm=req("blk.{i}.attn_norm.weight", i, (C,)) if pre else None,
                  attn_norm_b=opt("blk.{i}.attn_norm.bias", i, (C,)))
        if par == "sum":                        # falcon-40b: attention reads its own norm
            L.attn_norm_2 = opt("blk.{i}.attn_norm_2.weight", i, (C,))
            L.attn_norm_2_b = opt("blk.{i}.attn_norm_2.bias", i, (C,))
        if c.traits.norm == "layer" and c.traits.norm_bias and L.attn_norm_b is None:
            L.attn_norm_b = req("blk.{i}.attn_norm.bias", i, (C,))
        Q, K, Vw = H * c.head_k, Hkv * c.head_k, Hkv * c.head_v
        if c.traits.mla:
            load_mla(L, c, i, req, opt)
        elif m.has(name("blk.{i}.attn_qkv.weight", i)):
            L.wqkv = req("blk.{i}.attn_qkv.weight", i, (Q + K + Vw, C))
            L.bqkv = opt("blk.{i}.attn_qkv.bias", i, (Q + K + Vw,))
        else:
            L.wq, L.bq = req("blk.{i}.attn_q.weight", i, (Q, C)), opt("blk.{i}.attn_q.bias", i, (Q,))
            L.wk, L.bk = req("blk.{i}.attn_k.weight", i, (K, C)), opt("blk.{i}.attn_k.bias", i, (K,))
            L.wv, L.bv = req("blk.{i}.attn_v.weight", i, (Vw, C)), opt("blk.{i}.attn_v.bias", i, (Vw,))
        O = H * c.head_v
        L.wo = req("blk.{i}.attn_output.weight", i, (C, O))
        L.bo = opt("blk.{i}.attn_output.bias", i, (C,)) if c.traits.attn_out_bias else None
        if c.traits.sinks:
            L.attn_sinks = req("blk.{i}.attn_sinks.weight", i, (H,))
        if c.traits.qk_norm == "full":          # olmo2: over the whole projection
            L.q_norm = req("blk.{i}.attn_q_norm.weight", i, (Q,))
            L.k_norm = req("blk.{i}.attn_k_norm.weight", i, (K,))
        elif c.traits.qk_norm == "per_head":    # stablelm 2 12B: a weight row per head
            L.q_norm = opt("blk.{i}.attn_q_norm.weight", i, (H, c.head_k))
            L.k_norm = opt("blk.{i}.attn_k_norm.weight", i, (Hkv, c.head_k))
        elif not c.traits.mla:
            L.q_norm = opt("blk.{i}.attn_q_norm.weight", i, (c.head_k,))
            L.k_norm = opt("blk.{i}.attn_k_norm.weight", i, (c.head_k,))
        fn = c.traits.ffn_norm                  # seed_oss: its "post-attention" norm is the FFN's
        if fn != "post_attention_norm":
            L.post_attn_norm = opt("blk.{i}.post_attention_norm.weight", i, (C,))
        # "sum", "residual": no ffn_norm; "optional": parallel without one; "neox": on the input
        L.ffn_norm = (opt if par == "optional" else req)(f"blk.{{i}}.{fn}.weight", i, (C,)) \
            if pre and par in ("", "optional", "neox") else None
        L.ffn_norm_b = opt("blk.{i}.ffn_norm.bias", i, (C,))
        if c.traits.norm == "layer" and c.traits.norm_bias and L.ffn_norm is not None and L.ffn_norm_b is None:
            L.ffn_norm_b = req("blk.{i}.ffn_norm.bias", i, (C,))
        L.post_ffw_norm = opt("blk.{i}.post_ffw_norm.weight", i, (C,))
        if not legacy and m.has(name("blk.{i}.ffn_gate_inp.weight", i)) and i >= c.n_dense_lead:
            load_moe(L, c, i, req, opt, width, model.path)
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
    if exact:
        embed.vec_dot = None                                         # a tied output: x unrounded
    out_name = name("output.weight")
    untied = out_name and m.has(out_name) and not c.traits.tied_output   # command-r: always tied
    output = take(out_name, (V, C), "output.weight") if untied else embed
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


def initial_state(w: Weights, kv_f16: bool = False, flash: bool = False) -> State:
    """The empty cache (F32, or F16 as llama.cpp's default cache type).  MLA in its absorbed form caches one shared head: the rope key
    and the normalised latent; files with attn_kv_b cache every head expanded."""
    c = w.config
    if c.traits.mla and all(L.wkv_b is None for L in w.layers):
        shapes = ((1, c.n_rot + c.mla_rank), (1, c.mla_rank))
    elif c.traits.mla:
        shapes = ((c.n_head, c.head_k), (c.n_head, c.head_v))
    else:
        shapes = ((c.n_head_kv, c.head_k), (c.n_head_kv, c.head_v))
    def kv(il: int, shape: tuple[int, int]) -> np.ndarray:
        heads = layer_shapes.kv_heads(c, il) if c.layer_shapes else shape[0]
        return np.zeros((0, heads, shape[1]), np.float32)
    return State(tuple(kv(il, shapes[0]) for il in range(c.n_layer)),
                 tuple(kv(il, shapes[1]) for il in range(c.n_layer)), kv_f16, flash)


def forward(weights: Weights, tokens: list[int], state: State | None = None,
            all_logits: bool = False, kv_f16: bool = False,
            logits_from: int | None = None, flash_attn: bool = False,
            hidden: list | None = None) -> tuple[np.ndarray, State]:
    """Run ``tokens`` after the cached ones; the logits and the extended cache.

    ``logits_from=i`` gives the logits of every new token from the ``i``-th on
    (``[T - i, n_vocab]``: what llama.cpp's batch asks for with its ``logits`` flags),
    so the output projection costs only the rows that are scored.
    ``kv_f16`` (for a new cache) keeps keys and values in F16 as llama.cpp's default
    cache does; F32 (the default here) is llama.cpp's ``--cache-type-k/v f32``."""
    c = weights.config
    ids = check_tokens(tokens, c.n_vocab)
    state = initial_state(weights, kv_f16, flash_attn) if state is None else state
    P, T = state.n_past, len(ids)
    pos = np.arange(P, P + T)                                          # [T]
    x = weights.embed.rows(ids)                                        # [T, C]
    if weights.positions is not None:
        if P + T > c.n_ctx:
            raise WeightError(f"{P + T} tokens exceed the model's context of {c.n_ctx}")
        x = x + weights.positions[pos]
    if c.embed_mult:                                                   # build_inp_embd's f_embedding_scale
        x = x * np.float32(c.embed_mult)
    if c.traits.embed_scale:
        x = x * np.float32(math.sqrt(c.n_embd))
    # the rows whose logits are asked for: llama.cpp's graphs keep only these after the
    # last layer's attention (ggml_get_rows(cur, inp_out_ids)), so that layer's FFN runs on
    # them alone -- and with one row, ggml multiplies by vec_dot, not by a matrix kernel
    first = max(0, min(int(logits_from), T - 1)) if logits_from is not None else (0 if all_logits else T - 1)
    keys, values = [], []
    for il, (L, kp, vp) in enumerate(zip(weights.layers, state.keys, state.values)):
        if c.layer_shapes:                                             # deci.cpp's layers
            cut = first if il == len(weights.layers) - 1 else 0
            x, k, v = layer_shapes.block(c, weights, L, il, x, pos, kp, vp, state.kv_f16,
                                         state.flash, cut)
        else:
            x, k, v = _layer(c, weights, L, il, x, pos, kp, vp, state, first)
        keys.append(k)
        values.append(v)
        if hidden is not None:                 # each layer's output, for per-layer attribution
            start = max(0, min(int(logits_from or 0), T - 1)) - (T - x.shape[0])   # x may be cut already
            hidden.append(x[max(0, start):].copy())
    if logits_from is not None:
        all_logits = True
    rows = x if all_logits else x[-1:]
    h = _norm(c, rows, weights.output_norm, weights.output_norm_b)
    logits = _lin(h, weights.output, weights.output_b)                 # [T', V]
    if c.logit_mult:                                                   # granite: × 1/logit_scale
        logits = logits * np.float32(c.logit_mult)
    if c.final_softcap:
        cap = np.float32(c.final_softcap)
        logits = np.tanh(logits / cap) * cap
    logits = logits.astype(np.float32)
    return (logits if all_logits else logits[0]), State(tuple(keys), tuple(values), state.kv_f16,
                                                        state.flash)


def _layer(c: Config, weights: Weights, L: Layer, il: int, x: np.ndarray, pos: np.ndarray,
           kp: np.ndarray, vp: np.ndarray, state: State, first: int):
    """Block il of the family on the rows x: (x, keys, values), x cut to the rows from
    ``first`` on in the last layer."""
    swa = c.swa_layers[il] if c.swa_layers else False
    nope = c.no_rope[il] if c.no_rope else False
    h = x if L.attn_norm is None else _norm(c, x, L.attn_norm, L.attn_norm_b)
    h2 = h if L.attn_norm_2 is None else _norm(c, x, L.attn_norm_2, L.attn_norm_2_b)  # falcon-40b
    a, k, v = _attention(c, weights, L, h2, pos, swa, kp, vp, state.kv_f16, state.flash, nope)
    if il == len(weights.layers) - 1 and first:
        a, x, h = a[first:], x[first:], h[first:]
    if L.post_attn_norm is not None:
        a = rms_norm(a, L.post_attn_norm, c.eps)
    if c.residual_scale:                                           # granite
        a = a * np.float32(c.residual_scale)
    if c.parallel not in ("sum", "residual", "neox"):             # the FFN reads the layer's input
        x = x + a
    if L.ffn_norm is not None:
        h = _norm(c, x, L.ffn_norm, L.ffn_norm_b)
    elif not c.traits.prenorm:                                     # olmo2: the residual itself
        h = x                                                      # (else parallel: attn's input)
    if L.router is not None:
        f = _moe(c, L, h)
    else:
        f = _dense_ffn(c, h, L.gate, L.gate_b, L.up, L.up_b, L.down, L.down_b, il)
    if L.post_ffw_norm is not None:
        f = rms_norm(f, L.post_ffw_norm, c.eps)
    if c.residual_scale:
        f = f * np.float32(c.residual_scale)
    x = ((a + f) + x if c.parallel == "sum" else (f + x) + a
         if c.parallel in ("residual", "neox") else x + f).astype(np.float32)
    return x, k, v
