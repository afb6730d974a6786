"""Which tensor records the loaders of the formats before GGUF require, from the header.

Why: these formats declare no tensor count - records simply run to the end of the file -
so a file cut exactly at a record boundary, or missing a layer, parses cleanly.  The
hyper-parameters say which tensors must be there, and each format's loader looks every
one of them up by name and refuses the file when one is missing.  This module is that
knowledge as one table per loader plus one function, so the validator, the corpus
generator and the tests share it.

Sources (the loaders themselves, at the versions named):

* llama.cpp's legacy loader (``llama.cpp`` 2023-03 .. 2023-08, ``llama_model_load_internal``:
  ``ml->get_tensor("tok_embeddings.weight", ...)`` etc., "tensor '%s' is missing from
  model"; ``read_tensor_metadata``: "tensor '%s' should not be %u-dimensional" for
  n_dims outside 1..2) - legacy-formats.md §1.2, §2, §3.
* ggml's gpt-2 / gpt-j examples (``examples/gpt-2/main.cpp`` ``gpt2_model_load``: the
  ``model.tensors`` map of the names below; records are read into ``int32_t ne[2]``) -
  §1.3.
* rwkv.cpp (``rwkv_model_loading.inc`` ``rwkv_set_params`` per architecture version;
  ``rwkv_fread_tensor_header``: dim_count 1..3) - §6.2, §6.6.
* chatglm.cpp (``chatglm.cpp`` model constructors' ``state_dict`` per model type;
  ``read_tensor``: ``0 < ndim <= 4``) - §7.5, §7.6.

``required_tensors(mf)`` returns a ``Required`` (loader, names, optional names, whether
the loader refuses names it does not know, the claimed layer count) or None when the
header does not say enough (damaged, unknown model type).  ``allowed_dims(mf)`` returns
``(loader, lo, hi)``.  Names are built for ``n_layer`` layers only after checking that
the file could hold that many records (each record takes at least 12 bytes): a layer
count the file cannot back yields ``names = None`` and never drives the work.
"""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["required_tensors", "allowed_dims", "loader_name", "MIN_RECORD_BYTES", "Required", "LEGACY_NAMES",
           "LEGACY_FORMATS"]

from dataclasses import dataclass


@dataclass(frozen=True)
class Required:
    loader: str
    names: "list[str] | None"      # None: the layer count cannot be backed by the file
    optional: tuple[str, ...] = ()
    refuses_unknown: bool = False   # the loader refuses a name it does not look up
    vocab_only_ok: bool = False     # the loader can load just the vocabulary (no records)
    n_layer: int = 0
    per_layer: int = 0

MIN_RECORD_BYTES = 12    # n_dims, name length and type words: the smallest tensor record

# The formats llama.cpp wrote before GGUF (its legacy loader reads all three).
LEGACY_FORMATS = ("ggml", "ggmf", "ggjt")

# GGUF tensor names -> the names of the files before GGUF (Meta / early llama.cpp and
# ggml's gpt-2 example): the one table that diff, the forward pass, the summary and the
# required-records rule read (the rule lists missing names in this order).
LEGACY_NAMES = {
    "llama": {
        "token_embd.weight": "tok_embeddings.weight",
        "output_norm.weight": "norm.weight",
        "output.weight": "output.weight",
        "blk.{i}.attn_q.weight": "layers.{i}.attention.wq.weight",
        "blk.{i}.attn_k.weight": "layers.{i}.attention.wk.weight",
        "blk.{i}.attn_v.weight": "layers.{i}.attention.wv.weight",
        "blk.{i}.attn_output.weight": "layers.{i}.attention.wo.weight",
        "blk.{i}.attn_norm.weight": "layers.{i}.attention_norm.weight",
        "blk.{i}.ffn_gate.weight": "layers.{i}.feed_forward.w1.weight",
        "blk.{i}.ffn_down.weight": "layers.{i}.feed_forward.w2.weight",
        "blk.{i}.ffn_up.weight": "layers.{i}.feed_forward.w3.weight",
        "blk.{i}.ffn_norm.weight": "layers.{i}.ffn_norm.weight",
    },
    "gpt2": {
        "token_embd.weight": "model/wte",
        "position_embd.weight": "model/wpe",
        "output_norm.weight": "model/ln_f/g",
        "output_norm.bias": "model/ln_f/b",
        "output.weight": "model/lm_head",
        "blk.{i}.attn_norm.weight": "model/h{i}/ln_1/g",
        "blk.{i}.attn_norm.bias": "model/h{i}/ln_1/b",
        "blk.{i}.ffn_norm.weight": "model/h{i}/ln_2/g",
        "blk.{i}.ffn_norm.bias": "model/h{i}/ln_2/b",
        "blk.{i}.attn_qkv.weight": "model/h{i}/attn/c_attn/w",
        "blk.{i}.attn_qkv.bias": "model/h{i}/attn/c_attn/b",
        "blk.{i}.attn_output.weight": "model/h{i}/attn/c_proj/w",
        "blk.{i}.attn_output.bias": "model/h{i}/attn/c_proj/b",
        "blk.{i}.ffn_up.weight": "model/h{i}/mlp/c_fc/w",
        "blk.{i}.ffn_up.bias": "model/h{i}/mlp/c_fc/b",
        "blk.{i}.ffn_down.weight": "model/h{i}/mlp/c_proj/w",
        "blk.{i}.ffn_down.bias": "model/h{i}/mlp/c_proj/b",
    },
}


def _from_names(arch: str, loader: str, optional: tuple[str, ...] = ()) -> tuple:
    """(loader, global names, per-layer names with {i}) from ``LEGACY_NAMES``."""
    names = [n for n in LEGACY_NAMES[arch].values() if n not in optional]
    return loader, tuple(n for n in names if "{i}" not in n), tuple(n for n in names if "{i}" in n)


# loader key -> (human name, global names, per-layer names with {i})
_LLAMA = _from_names("llama", "llama.cpp's legacy loader")
_GPT2 = _from_names("gpt2", "ggml's gpt-2 example loader", optional=("model/lm_head",))
_GPTJ = ("ggml's gpt-j example loader",
         ("transformer.wte.weight", "transformer.ln_f.weight", "transformer.ln_f.bias",
          "lm_head.weight", "lm_head.bias"),
         tuple(f"transformer.h.{{i}}.{n}" for n in (
             "ln_1.weight", "ln_1.bias", "attn.q_proj.weight", "attn.k_proj.weight",
             "attn.v_proj.weight", "attn.out_proj.weight", "mlp.fc_in.weight", "mlp.fc_in.bias",
             "mlp.fc_out.weight", "mlp.fc_out.bias")))

_RWKV_ALWAYS = ("emb.weight", "blocks.0.ln0.weight", "blocks.0.ln0.bias", "ln_out.weight",
                "ln_out.bias", "head.weight")
_RWKV_LAYER = ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "ffn.key.weight", "ffn.value.weight")
_V4_ATT = ("att.time_mix_k", "att.time_mix_v", "att.time_mix_r", "att.time_first", "att.time_decay",
           "att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight")
_V4_FFN = ("ffn.time_mix_k", "ffn.time_mix_r", "ffn.receptance.weight")
_RWKV_ARCH = {
    "4": _V4_ATT + _V4_FFN,
    "5.1": _V4_ATT + ("att.ln_x.weight", "att.ln_x.bias") + _V4_FFN,
    "5.2": ("att.time_mix_k", "att.time_mix_v", "att.time_mix_r", "att.time_mix_g", "att.time_faaaa",
            "att.time_decay", "att.key.weight", "att.value.weight", "att.receptance.weight",
            "att.output.weight", "att.gate.weight", "att.ln_x.weight", "att.ln_x.bias") + _V4_FFN,
    "6": ("att.time_maa_x", "att.time_maa_w", "att.time_maa_k", "att.time_maa_v", "att.time_maa_r",
          "att.time_maa_g", "att.time_maa_w1", "att.time_maa_w2", "att.time_faaaa", "att.time_decay",
          "att.time_decay_w1", "att.time_decay_w2", "att.key.weight", "att.value.weight",
          "att.receptance.weight", "att.gate.weight", "att.output.weight", "att.ln_x.weight",
          "att.ln_x.bias", "ffn.time_maa_k", "ffn.time_maa_r", "ffn.receptance.weight"),
    "7": ("att.x_rwkvag", "att.w0", "att.w1", "att.w2", "att.a0", "att.a1", "att.a2", "att.g1", "att.g2",
          "att.r_k", "att.k_k", "att.k_a", "att.key.weight", "att.value.weight",
          "att.receptance.weight", "att.output.weight", "att.ln_x.weight", "att.ln_x.bias", "ffn.x_k"),
}
_RWKV_V7_NOT_LAYER0 = ("att.v0", "att.v1", "att.v2")

_CHATGLM1 = ("chatglm.cpp's ChatGLM loader",
             ("transformer.word_embeddings.weight", "transformer.final_layernorm.weight",
              "transformer.final_layernorm.bias"),
             tuple(f"transformer.layers.{{i}}.{n}" for n in (
                 "input_layernorm.weight", "input_layernorm.bias", "attention.query_key_value.weight",
                 "attention.query_key_value.bias", "attention.dense.weight", "attention.dense.bias",
                 "post_attention_layernorm.weight", "post_attention_layernorm.bias",
                 "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight",
                 "mlp.dense_4h_to_h.bias")))
_CHATGLM2 = ("chatglm.cpp's ChatGLM2/3/4 loader",
             ("transformer.embedding.word_embeddings.weight", "transformer.encoder.final_layernorm.weight",
              "transformer.output_layer.weight"),
             tuple(f"transformer.encoder.layers.{{i}}.{n}" for n in (
                 "input_layernorm.weight", "self_attention.query_key_value.weight",
                 "self_attention.query_key_value.bias", "self_attention.dense.weight",
                 "post_attention_layernorm.weight", "mlp.dense_h_to_4h.weight",
                 "mlp.dense_4h_to_h.weight")))
_BAICHUAN = ("chatglm.cpp's Baichuan loader",
             ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"),
             tuple(f"model.layers.{{i}}.{n}" for n in (
                 "input_layernorm.weight", "self_attn.W_pack.weight", "self_attn.o_proj.weight",
                 "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight",
                 "mlp.up_proj.weight")))
_INTERNLM = ("chatglm.cpp's InternLM loader",
             ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"),
             tuple(f"model.layers.{{i}}.{n}" for n in (
                 "input_layernorm.weight", "self_attn.qkv_proj.weight", "self_attn.o_proj.weight",
                 "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                 "mlp.down_proj.weight")))
_CHATGLM_BY_TYPE = {1: _CHATGLM1, 2: _CHATGLM2, 3: _CHATGLM2, 4: _CHATGLM2, 1024: _BAICHUAN,
                    1025: _BAICHUAN, 1280: _INTERNLM}

# n_dims each loader accepts: (lo, hi)
_DIMS = {"llama": (1, 2), "gpt-2": (1, 2), "gpt-j": (1, 2), "rwkv.cpp": (1, 3), "chatglm.cpp": (1, 4)}
_DIMS_LOADER = {"llama": _LLAMA[0], "gpt-2": _GPT2[0], "gpt-j": _GPTJ[0],
                "rwkv.cpp": "rwkv.cpp (rwkv_fread_tensor_header)", "chatglm.cpp": "chatglm.cpp's loader"}



def _kind(mf) -> str | None:
    if mf.format in ("ggmf", "ggjt"):
        return "llama"
    if mf.format == "ggml":
        style = mf.extra.get("hparams_style")
        return style if style in ("gpt-2", "gpt-j") else ("llama" if "hparams_style" not in mf.extra else None)
    if mf.format in ("rwkv.cpp", "chatglm.cpp"):
        return mf.format
    return None


def loader_name(mf) -> str:
    k = _kind(mf)
    return _DIMS_LOADER.get(k, f"the {mf.format} loader") if k else f"the {mf.format} loader"


def allowed_dims(mf) -> tuple[str, int, int] | None:
    k = _kind(mf)
    if k is None:
        return None
    lo, hi = _DIMS[k]
    return _DIMS_LOADER[k], lo, hi


def _layers(mf, key: str) -> int | None:
    n = mf.metadata.get(key)
    return n if isinstance(n, int) else None


def _backed(mf, n: int, per_layer: int) -> bool:
    """Whether the file could hold the records of ``n`` layers (else: build no names)."""
    return 0 <= n * max(per_layer, 1) * MIN_RECORD_BYTES <= mf.source.size


def _expand(globals_: Sequence[str], per_layer: Sequence[str], n: int) -> list[str]:
    out = list(globals_)
    for i in range(n):
        out.extend(p.format(i=i) for p in per_layer)
    return out


def _required(mf, loader, g, per, n, **kw) -> Required:
    names = _expand(g, per, n) if _backed(mf, n, len(per)) else None
    return Required(loader, names, n_layer=n, per_layer=len(per), **kw)


def required_tensors(mf) -> Required | None:
    """What ``mf``'s loader looks up, from its header, or None when unknown."""
    k = _kind(mf)
    if k in ("llama", "gpt-2", "gpt-j"):
        loader, g, per = {"llama": _LLAMA, "gpt-2": _GPT2, "gpt-j": _GPTJ}[k]
        n = _layers(mf, f"{mf.format}.n_layer")
        # llama.cpp: "file contained more tensors than expected"; gpt-2/gpt-j main.cpp:
        # "unknown tensor '%s' in model file" (model/lm_head: Cerebras-GPT, optional)
        return None if n is None else _required(mf, loader, g, per, n, refuses_unknown=True,
                                                vocab_only_ok=k == "llama",
                                                optional=("model/lm_head",) if k == "gpt-2" else ())
    if k == "rwkv.cpp":
        # no marker parameter (or no parameter at all): rwkv.cpp's default, v4
        arch = mf.metadata.get("rwkv_cpp.arch_version") or "4"
        n = _layers(mf, "rwkv_cpp.n_layer")
        if arch not in _RWKV_ARCH or n is None:
            return None
        per = [f"blocks.{{i}}.{p}" for p in _RWKV_LAYER + _RWKV_ARCH[arch]]
        req = _required(mf, f"rwkv.cpp (rwkv_set_params, RWKV v{arch})", _RWKV_ALWAYS, per, n)
        if arch == "7" and req.names is not None:
            req.names.extend(f"blocks.{i}.{p}" for i in range(1, n) for p in _RWKV_V7_NOT_LAYER0)
        return req
    if k == "chatglm.cpp":
        row = _CHATGLM_BY_TYPE.get(mf.metadata.get("chatglm_cpp.model_type", 1))
        n = None
        for key in ("chatglm_cpp.num_hidden_layers", "chatglm_cpp.num_layers"):
            if key in mf.metadata:
                n = _layers(mf, key)
                break
        if row is None or n is None:
            return None
        loader, g, per = row
        return _required(mf, loader, g, per, n)
    return None
