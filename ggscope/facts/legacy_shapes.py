"""The shapes the loaders of the formats before GGUF ask for, from the header.

Why: a tensor whose two dimensions are swapped has the right byte size, so the record
walk, the data size and every name rule pass - and the model is not the one its writer
made.  Each loader refuses it: llama.cpp's 2023 loader looks every tensor up with the
shape it expects (``get_tensor(name, {ne...})``: "llama.cpp: tensor '%s' has wrong
shape; expected %s, got %s"); ggml's gpt-2 and gpt-j examples compare ``ne[0]``/``ne[1]``
("tensor '%s' has wrong shape in model file: got [%d, %d], expected [%d, %d]");
chatglm.cpp's ``ModelLoader::read_tensor`` compares every dimension ("tensor ... shape
mismatch at dim %d") and the dtype; rwkv.cpp checks the embedding in
``rwkv_model_loading.inc`` and aborts in its graph's ``ggml_mul_mat`` on any other
operand whose inner dimension does not match.  This module is that knowledge as one
table per loader (beside ``legacy_tensors``' table of names) and one engine,
``shape_mismatches(mf)``, linear in the number of records.

Contract: ``shape_mismatches(mf)`` returns ``(loader, [ShapeMismatch])`` or None when
the format has no table or the header lacks a size the table needs.  Tensors the table
does not name are left alone (the name rules report them).  Sizes are compared, never
used to allocate or to loop.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ggscope.facts.ggml_types import GGML_FTYPE, GGML_FTYPE_HISTORICAL
from ggscope.facts.legacy_tensors import _GPT2, _GPTJ, _LLAMA, _kind

__all__ = ["shape_mismatches", "ShapeMismatch", "example_type_mismatches"]

# The shape (ne order) each loader asks for, by name pattern.  A dimension is a symbol,
# optionally times a factor ("3E"); ``_symbols`` gives each format's symbols from its
# header - or, where the loader itself takes a size from a tensor (rwkv.cpp's
# ``ffn_key_size = layers[0].ffn_key->ne[1]``), from that tensor as the loader does.
# Sources: llama.cpp's 2023 loader (``llama_model_load_internal``: ``get_tensor(name,
# {n_embd, n_vocab})`` ...), ggml's examples/gpt-2 and gpt-j ``main.cpp`` (the
# ``ggml_new_tensor_*d`` calls of ``*_model_load``), rwkv.cpp ``rwkv_model_loading.inc``
# and the ``ggml_mul_mat`` operands of its graphs, chatglm.cpp's model constructors
# (``Linear(in, out)`` = ne [in, out], ``Embedding`` = [hidden, vocab], norms [hidden]).
_LLAMA_SHAPES = {
    "tok_embeddings.weight": "E V", "norm.weight": "E", "output.weight": "E V",
    "layers.{i}.attention.wq.weight": "E E", "layers.{i}.attention.wk.weight": "E K",
    "layers.{i}.attention.wv.weight": "E K", "layers.{i}.attention.wo.weight": "E E",
    "layers.{i}.attention_norm.weight": "E", "layers.{i}.ffn_norm.weight": "E",
    "layers.{i}.feed_forward.w1.weight": "E F", "layers.{i}.feed_forward.w2.weight": "F E",
    "layers.{i}.feed_forward.w3.weight": "E F"}
_GPT2_SHAPES = {
    "model/wte": "E V", "model/wpe": "E C", "model/ln_f/g": "E", "model/ln_f/b": "E", "model/lm_head": "E V",
    "model/h{i}/ln_1/g": "E", "model/h{i}/ln_1/b": "E", "model/h{i}/ln_2/g": "E", "model/h{i}/ln_2/b": "E",
    "model/h{i}/attn/c_attn/w": "E 3E", "model/h{i}/attn/c_attn/b": "3E", "model/h{i}/attn/c_proj/w": "E E",
    "model/h{i}/attn/c_proj/b": "E", "model/h{i}/mlp/c_fc/w": "E 4E", "model/h{i}/mlp/c_fc/b": "4E",
    "model/h{i}/mlp/c_proj/w": "4E E", "model/h{i}/mlp/c_proj/b": "E"}
_GPTJ_SHAPES = {
    "transformer.wte.weight": "E V", "transformer.ln_f.weight": "E", "transformer.ln_f.bias": "E",
    "lm_head.weight": "E V", "lm_head.bias": "V", "transformer.h.{i}.ln_1.weight": "E",
    "transformer.h.{i}.ln_1.bias": "E", "transformer.h.{i}.attn.q_proj.weight": "E E",
    "transformer.h.{i}.attn.k_proj.weight": "E E", "transformer.h.{i}.attn.v_proj.weight": "E E",
    "transformer.h.{i}.attn.out_proj.weight": "E E", "transformer.h.{i}.mlp.fc_in.weight": "E 4E",
    "transformer.h.{i}.mlp.fc_in.bias": "4E", "transformer.h.{i}.mlp.fc_out.weight": "4E E",
    "transformer.h.{i}.mlp.fc_out.bias": "E"}
_RWKV_SHAPES = {   # emb.weight: RwkvHeader (GG908) checks it, as rwkv.cpp does, against the header
    "head.weight": "E V", "blocks.0.ln0.weight": "E", "blocks.0.ln0.bias": "E", "ln_out.weight": "E",
    "ln_out.bias": "E", **{f"blocks.{{i}}.{n}": "E" for n in (
        "ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "att.ln_x.weight", "att.ln_x.bias",
        "att.time_mix_k", "att.time_mix_v", "att.time_mix_r", "att.time_mix_g", "ffn.time_mix_k",
        "ffn.time_mix_r", "att.time_maa_x", "att.time_maa_w", "att.time_maa_k", "att.time_maa_v",
        "att.time_maa_r", "att.time_maa_g", "ffn.time_maa_k", "ffn.time_maa_r")},
    **{f"blocks.{{i}}.{n}": "E E" for n in (
        "att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight",
        "att.gate.weight", "ffn.receptance.weight")},
    "blocks.{i}.ffn.key.weight": "E FF", "blocks.{i}.ffn.value.weight": "FF E",
    "blocks.{i}.att.time_maa_w1": "E 5DM", "blocks.{i}.att.time_maa_w2": "DM E 5",
    "blocks.{i}.att.time_decay_w1": "E DD", "blocks.{i}.att.time_decay_w2": "DD E",
    "blocks.{i}.att.w1": "E DW", "blocks.{i}.att.w2": "DW E", "blocks.{i}.att.a1": "E DA",
    "blocks.{i}.att.a2": "DA E", "blocks.{i}.att.g1": "E DG", "blocks.{i}.att.g2": "DG E",
    "blocks.{i}.att.v1": "E DV", "blocks.{i}.att.v2": "DV E", "blocks.{i}.att.x_rwkvag": "E 1 6",
    "blocks.{i}.att.r_k": "HS HC",
    **{f"blocks.{{i}}.{n}": "E 1 1" for n in ("att.w0", "att.a0", "att.v0", "att.k_k", "att.k_a", "ffn.x_k")}}
# rwkv.cpp sizes read from a tensor (name, axis), not from the header
_RWKV_FROM_TENSOR = {"FF": ("blocks.0.ffn.key.weight", 1), "DM": ("blocks.0.att.time_maa_w2", 0),
                     "DD": ("blocks.0.att.time_decay_w1", 1), "DW": ("blocks.0.att.w1", 1),
                     "DA": ("blocks.0.att.a1", 1), "DG": ("blocks.0.att.g1", 1), "DV": ("blocks.1.att.v1", 1),
                     # v7: the head split, from layer 0 (every layer's r_k multiplies the same heads)
                     "HS": ("blocks.0.att.r_k", 0), "HC": ("blocks.0.att.r_k", 1)}


def _glm(prefix: str, layer: str, shapes: dict[str, str]) -> dict[str, str]:
    """chatglm.cpp names: ``L:`` entries are per layer, the others global."""
    return {(layer + k[2:] if k.startswith("L:") else prefix + k): v for k, v in shapes.items()}


_CHATGLM_SHAPES = {
    1: _glm("transformer.", "transformer.layers.{i}.", {
        "word_embeddings.weight": "H V", "final_layernorm.weight": "H", "final_layernorm.bias": "H",
        "L:input_layernorm.weight": "H", "L:input_layernorm.bias": "H",
        "L:attention.query_key_value.weight": "H 3H", "L:attention.query_key_value.bias": "3H",
        "L:attention.dense.weight": "H H", "L:attention.dense.bias": "H",
        "L:post_attention_layernorm.weight": "H", "L:post_attention_layernorm.bias": "H",
        "L:mlp.dense_h_to_4h.weight": "H I", "L:mlp.dense_h_to_4h.bias": "I",
        "L:mlp.dense_4h_to_h.weight": "I H", "L:mlp.dense_4h_to_h.bias": "H"}),
    2: _glm("transformer.", "transformer.encoder.layers.{i}.", {
        "embedding.word_embeddings.weight": "H V", "encoder.final_layernorm.weight": "H",
        "output_layer.weight": "H V", "L:input_layernorm.weight": "H",
        "L:self_attention.query_key_value.weight": "H Q", "L:self_attention.query_key_value.bias": "Q",
        "L:self_attention.dense.weight": "H H", "L:post_attention_layernorm.weight": "H",
        "L:mlp.dense_h_to_4h.weight": "H 2I", "L:mlp.dense_4h_to_h.weight": "I H"}),
    1024: _glm("model.", "model.layers.{i}.", {
        "embed_tokens.weight": "H V", "norm.weight": "H", "L:input_layernorm.weight": "H",
        "L:self_attn.W_pack.weight": "H 3H", "L:self_attn.o_proj.weight": "H H",
        "L:post_attention_layernorm.weight": "H", "L:mlp.gate_proj.weight": "H I",
        "L:mlp.down_proj.weight": "I H", "L:mlp.up_proj.weight": "H I"}),
    1280: _glm("model.", "model.layers.{i}.", {
        "embed_tokens.weight": "H V", "norm.weight": "H", "L:input_layernorm.weight": "H",
        "L:self_attn.qkv_proj.weight": "H 3H", "L:self_attn.qkv_proj.bias": "3H",
        "L:self_attn.o_proj.weight": "H H", "L:self_attn.o_proj.bias": "H",
        "L:post_attention_layernorm.weight": "H", "L:mlp.gate_proj.weight": "H I",
        "L:mlp.up_proj.weight": "H I", "L:mlp.down_proj.weight": "I H"}),
}
_CHATGLM_SHAPES[1024]["lm_head.weight"] = _CHATGLM_SHAPES[1280]["lm_head.weight"] = "H V"
for _t in (3, 4):
    _CHATGLM_SHAPES[_t] = _CHATGLM_SHAPES[2]
_CHATGLM_SHAPES[1025] = _CHATGLM_SHAPES[1024]

_SYMBOL_NAMES = {"E": "n_embd", "V": "n_vocab", "C": "n_ctx", "F": "n_ff", "K": "n_embd_gqa", "H": "hidden_size",
                 "I": "intermediate_size", "Q": "hidden_size + 2 * kv_channels * num_kv_heads",
                 "FF": "ffn_key_size", "DM": "time_maa_w2.ne[0]", "DD": "time_decay_w1.ne[1]",
                 "DW": "w1.ne[1]", "DA": "a1.ne[1]", "DG": "g1.ne[1]", "DV": "v1.ne[1]",
                 "HS": "head_size", "HC": "head_count"}
_LAYER_INDEX = re.compile(r"(?<=[./]h)\d+(?=/)|(?<=\.)\d+(?=\.)")


@dataclass(frozen=True)
class ShapeMismatch:
    tensor: object            # the TensorInfo
    expected: tuple[int, ...]
    meaning: str              # the expected shape in the loader's terms, e.g. "(n_embd, n_vocab)"


def _int(md, key):
    v = md.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _symbols(mf, k: str, by_name: dict) -> tuple[str, dict[str, str], dict[str, int]] | None:
    """(loader, pattern -> shape, symbol -> value) for ``mf``, or None when the header
    does not say enough (or the format has no shape table)."""
    md = mf.metadata
    if k in ("llama", "gpt-2", "gpt-j"):
        p = mf.format
        sym = {"E": _int(md, f"{p}.n_embd"), "V": _int(md, f"{p}.n_vocab"), "C": _int(md, f"{p}.n_ctx")}
        if k != "llama":
            return (_GPT2 if k == "gpt-2" else _GPTJ)[0], (_GPT2_SHAPES if k == "gpt-2" else _GPTJ_SHAPES), sym
        e, mult, heads = sym["E"], _int(md, f"{p}.n_mult"), _int(md, f"{p}.n_head")
        if e is None or not mult or mult < 0:
            return None
        sym["F"] = ((2 * (4 * e) // 3 + mult - 1) // mult) * mult
        # LLaMA-2 70B GGJT v3 files: wk/wv are [n_embd, n_embd / n_gqa] (n_gqa given to the loader by -gqa)
        wk = by_name.get("layers.0.attention.wk.weight")
        kv = wk.shape[1] if wk is not None and len(wk.shape) == 2 and wk.shape[0] == e else e
        sym["K"] = kv if kv and e % kv == 0 and heads and heads % (e // kv) == 0 else e
        return _LLAMA[0], _LLAMA_SHAPES, sym
    if k == "rwkv.cpp":
        sym = {"E": _int(md, "rwkv_cpp.n_embed"), "V": _int(md, "rwkv_cpp.n_vocab")}
        for s, (name, axis) in _RWKV_FROM_TENSOR.items():
            t = by_name.get(name)
            if t is not None and len(t.shape) > axis:
                sym[s] = t.shape[axis]
        return "rwkv.cpp (rwkv_model_loading.inc and its graph's ggml_mul_mat operands)", _RWKV_SHAPES, sym
    if k == "chatglm.cpp":
        table = _CHATGLM_SHAPES.get(md.get("chatglm_cpp.model_type", 1))
        h, heads = _int(md, "chatglm_cpp.hidden_size"), _int(md, "chatglm_cpp.num_attention_heads")
        if table is None or h is None:
            return None
        kv = next((_int(md, f"chatglm_cpp.{key}") for key in ("num_kv_heads", "num_key_value_heads")
                   if f"chatglm_cpp.{key}" in md), heads)
        inter = _int(md, "chatglm_cpp.intermediate_size") if "chatglm_cpp.intermediate_size" in md else 4 * h
        sym = {"H": h, "V": _int(md, "chatglm_cpp.vocab_size"), "I": inter,
               "Q": h + 2 * (h // heads) * kv if heads and kv is not None and heads > 0 else None}
        return "chatglm.cpp's ModelLoader::read_tensor", table, sym
    return None


def _resolve(shape: str, sym: dict[str, int | None]) -> tuple[tuple[int, ...], str] | None:
    dims, words = [], []
    for part in shape.split():
        m = re.fullmatch(r"(\d*)([A-Z]*)", part)
        factor, name = int(m.group(1) or 1), m.group(2)
        value = sym.get(name) if name else 1
        if value is None:
            return None
        dims.append(factor * value)
        words.append((f"{factor} * " if m.group(1) and name else "") + _SYMBOL_NAMES.get(name, name)
                     if name else str(factor))
    return tuple(dims), "(" + ", ".join(words) + ")"


def shape_mismatches(mf) -> tuple[str, list[ShapeMismatch]] | None:
    """(loader, the tensors whose shape differs from what the loader asks for), in file
    order; None when the format or header gives no expectation.  One pass over the
    tensor records; tensors the table does not name are left to the name rules."""
    k = _kind(mf)
    by_name = {t.name: t for t in mf.tensors}
    found = _symbols(mf, k, by_name) if k else None
    if found is None:
        return None
    loader, table, sym = found
    parts = 1
    if k == "llama" and mf.format in ("ggml", "ggmf"):
        # multi-part files of 2023-03: every 2-D tensor is one shard (llama.cpp inferred
        # n_parts = n_embd / ne[0] of tok_embeddings.weight in the first part)
        tok = by_name.get("tok_embeddings.weight")
        e = sym.get("E")
        if tok is not None and len(tok.shape) == 2 and e and tok.shape[1] == sym.get("V") and 0 < tok.shape[0] < e \
                and e % tok.shape[0] == 0 and e // tok.shape[0] in (2, 4, 8):
            parts = e // tok.shape[0]
            sym["K"] = e        # no grouped-query attention before GGJT v3: wk/wv are n_embd wide
    out, cache = [], {}
    for t in mf.tensors:
        name = t.name
        pattern = name if name in table else _LAYER_INDEX.sub("{i}", name, count=1)
        shape = table.get(pattern)
        if shape is None:
            continue
        if shape not in cache:
            cache[shape] = _resolve(shape, sym)
        got = cache[shape]
        if got is None:
            continue
        expected, meaning = got
        if parts > 1 and len(expected) == 2:
            axis = 0 if pattern in ("tok_embeddings.weight", "layers.{i}.attention.wo.weight",
                                    "layers.{i}.feed_forward.w2.weight") else 1
            expected = tuple(d // parts if a == axis else d for a, d in enumerate(expected))
            meaning += f", split in {parts} parts along ne[{axis}]"
        if tuple(t.shape) != expected:
            out.append(ShapeMismatch(t, expected, meaning))
    return loader, out


# ggml's gpt-2/gpt-j examples create these tensors with ``wtype`` (the header ftype's
# type, ``ggml_ftype_to_ggml_type``), every other one F32; the loader then refuses a
# record whose type has another size: "tensor '%s' has wrong size in model file"
_WTYPE = {"gpt-2": {"model/wte", "model/lm_head", "model/h{i}/attn/c_attn/w", "model/h{i}/attn/c_proj/w",
                    "model/h{i}/mlp/c_fc/w", "model/h{i}/mlp/c_proj/w"},
          "gpt-j": {"transformer.wte.weight", "lm_head.weight", "transformer.h.{i}.attn.q_proj.weight",
                    "transformer.h.{i}.attn.k_proj.weight", "transformer.h.{i}.attn.v_proj.weight",
                    "transformer.h.{i}.attn.out_proj.weight", "transformer.h.{i}.mlp.fc_in.weight",
                    "transformer.h.{i}.mlp.fc_out.weight"}}


def example_type_mismatches(mf) -> tuple[str, str, list[tuple[object, str]]] | None:
    """For a gpt-2/gpt-j example file: (loader, wtype, [(tensor, expected type)]) of the
    tensors whose type is not the one the loader creates; None for other files or an
    ftype without a weight type (the loader stops on it: "invalid model file")."""
    k = _kind(mf)
    if k not in _WTYPE:
        return None
    ftype = mf.metadata.get(f"{mf.format}.file_type", mf.metadata.get(f"{mf.format}.ftype"))
    name = {**GGML_FTYPE, **GGML_FTYPE_HISTORICAL}.get(ftype % 1000) if isinstance(ftype, int) else None
    if name is None or not name.startswith(("ALL_", "MOSTLY_")) or "SOME" in name:
        return None
    wtype = name.split("_", 1)[1]
    table, out = _WTYPE[k], []
    for t in mf.tensors:
        pattern = t.name if t.name in table else _LAYER_INDEX.sub("{i}", t.name, count=1)
        want = wtype if pattern in table else "F32"
        if t.type is not None and t.type != want and (pattern in table or pattern in (
                _GPT2_SHAPES if k == "gpt-2" else _GPTJ_SHAPES)):
            out.append((t, want))
    return (_GPT2 if k == "gpt-2" else _GPTJ)[0], wtype, out
