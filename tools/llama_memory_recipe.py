"""Rebuild a model's header from a ``fixtures/llama_memory`` recipe (tools/record_llama_memory.py).

The GGUF written has the recorded metadata (the vocabulary's per-token arrays as that
many placeholder tokens) and the recorded tensors in file order with their types and
shapes, zero data: byte-for-byte the same tensor layout, so the same offsets and mapped
range, which is all ``ggscope.memory`` reads.  Deterministic.
"""
from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "llama_memory"


def records() -> list[Path]:
    return sorted(RECORDS.glob("*.json"))


def build(rec: dict, path: Path) -> Path:
    r = rec["recipe"]
    meta = r["metadata"]
    arch = meta["general.architecture"]["value"]
    w = gguf.GGUFWriter(str(path), arch)
    w.data_alignment = r["alignment"]
    for key, v in meta.items():
        if key in ("general.architecture", "general.alignment"):
            continue
        t = v["type"]
        if t == "vocab":
            n = v["n"]
            # SentencePiece-style placeholders: the 256 byte tokens first (llama.cpp's SPM
            # vocabulary looks up <0x0A>), then one distinct text per id
            if key == "tokenizer.ggml.tokens":
                w.add_array(key, [f"<0x{i:02X}>" if i < 256 else f"<t{i}>" for i in range(n)])
            elif key == "tokenizer.ggml.scores":
                w.add_array(key, [0.0] * n)
            elif key == "tokenizer.ggml.merges":
                w.add_array(key, ["a b"] * n)
            else:
                w.add_array(key, [6 if i < 256 else 1 for i in range(n)])
        elif t == "array":
            sub = gguf.GGUFValueType[v["sub"]]
            w.add_key_value(key, v["value"], gguf.GGUFValueType.ARRAY, sub_type=sub)
        else:
            w.add_key_value(key, v["value"], gguf.GGUFValueType[t])
    for name, tname, shape in r["tensors"]:
        qt = gguf.GGMLQuantizationType[tname]
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        n = int(np.prod(shape))
        nbytes = n // bs * ts
        np_shape = list(reversed(shape))
        raw_shape = np_shape[:-1] + [np_shape[-1] // bs * ts]
        w.add_tensor_info(name, raw_shape if qt not in (gguf.GGMLQuantizationType.F32,) else np_shape,
                          np.dtype(np.uint8) if qt != gguf.GGMLQuantizationType.F32 else np.dtype(np.float32),
                          nbytes, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    with open(path, "ab") as f:
        f.seek(0, 2)
        pos = f.tell()
        start = (pos + r["alignment"] - 1) // r["alignment"] * r["alignment"]
        end = start
        for name, tname, shape in r["tensors"]:
            qt = gguf.GGMLQuantizationType[tname]
            bs, ts = gguf.GGML_QUANT_SIZES[qt]
            nb = int(np.prod(shape)) // bs * ts
            end = (end + r["alignment"] - 1) // r["alignment"] * r["alignment"] + nb
        f.truncate(end)
    w.close()
    return path


def load(p: Path) -> dict:
    return json.loads(p.read_text())


def decoder(arch: str, n_layer: int, n_embd: int, n_head: int, n_head_kv: int, head_dim: int, n_ff: int,
            n_vocab: int, n_ctx_train: int = 131072, wtype: str = "Q8_0", extra: dict | None = None) -> dict:
    """A recipe for a decoder with real widths (llama, qwen2, gemma2, gemma3, falcon, mpt, gpt-oss),
    the tensors ``load_tensors`` creates for it, and an SPM vocabulary of ``n_vocab``."""
    def kv(t, v):
        return {"type": t, "value": v}
    meta = {"general.architecture": kv("STRING", arch), "general.name": kv("STRING", f"synthetic-{arch}"),
            "general.quantization_version": kv("UINT32", 2),
            f"{arch}.context_length": kv("UINT32", n_ctx_train), f"{arch}.embedding_length": kv("UINT32", n_embd),
            f"{arch}.block_count": kv("UINT32", n_layer), f"{arch}.feed_forward_length": kv("UINT32", n_ff),
            f"{arch}.attention.head_count": kv("UINT32", n_head),
            f"{arch}.attention.head_count_kv": kv("UINT32", n_head_kv),
            f"{arch}.attention.key_length": kv("UINT32", head_dim),
            f"{arch}.attention.value_length": kv("UINT32", head_dim),
            f"{arch}.attention.layer_norm_rms_epsilon": kv("FLOAT32", 1e-6),
            "tokenizer.ggml.model": kv("STRING", "llama"),
            "tokenizer.ggml.tokens": {"type": "vocab", "n": n_vocab},
            "tokenizer.ggml.scores": {"type": "vocab", "n": n_vocab},
            "tokenizer.ggml.token_type": {"type": "vocab", "n": n_vocab}}
    if arch == "llama":
        meta[f"{arch}.rope.dimension_count"] = kv("UINT32", head_dim)
    for k, v in (extra or {}).items():
        meta[f"{arch}.{k}"] = kv("UINT32", v)
    q, k_ = n_head * head_dim, n_head_kv * head_dim
    ts = [["token_embd.weight", wtype, [n_embd, n_vocab]]]
    if arch in ("falcon", "mpt"):
        # fused QKV, LayerNorm, ungated FFN (llama.cpp case LLM_ARCH_FALCON / LLM_ARCH_MPT)
        del meta[f"{arch}.attention.layer_norm_rms_epsilon"]
        meta[f"{arch}.attention.layer_norm_epsilon"] = kv("FLOAT32", 1e-5)
        if arch == "mpt":
            meta["mpt.attention.max_alibi_bias"] = kv("FLOAT32", 8.0)
        for i in range(n_layer):
            b = f"blk.{i}."
            ts += [[b + "attn_norm.weight", "F32", [n_embd]], [b + "attn_qkv.weight", wtype, [n_embd, q + 2 * k_]],
                   [b + "attn_output.weight", wtype, [q, n_embd]], [b + "ffn_up.weight", wtype, [n_embd, n_ff]],
                   [b + "ffn_down.weight", wtype, [n_ff, n_embd]]]
            ts += [[b + "attn_norm.bias", "F32", [n_embd]]] if arch == "falcon" else \
                  [[b + "ffn_norm.weight", "F32", [n_embd]]]
        ts += [["output_norm.weight", "F32", [n_embd]]]
        if arch == "falcon":
            ts += [["output_norm.bias", "F32", [n_embd]], ["output.weight", wtype, [n_embd, n_vocab]]]
        return {"metadata": meta, "tensors": ts, "alignment": 32}
    if arch == "gpt-oss":
        # attention sinks, biased MXFP4 experts (llama.cpp case LLM_ARCH_OPENAI_MOE)
        n_exp, n_ff_exp = extra["expert_count"], extra["expert_feed_forward_length"]
        for i in range(n_layer):
            b = f"blk.{i}."
            ts += [[b + "attn_norm.weight", "F32", [n_embd]], [b + "post_attention_norm.weight", "F32", [n_embd]],
                   [b + "attn_q.weight", wtype, [n_embd, q]], [b + "attn_k.weight", wtype, [n_embd, k_]],
                   [b + "attn_v.weight", wtype, [n_embd, k_]], [b + "attn_output.weight", wtype, [q, n_embd]],
                   [b + "attn_q.bias", "F32", [q]], [b + "attn_k.bias", "F32", [k_]], [b + "attn_v.bias", "F32", [k_]],
                   [b + "attn_output.bias", "F32", [n_embd]], [b + "attn_sinks.weight", "F32", [n_head]],
                   [b + "ffn_gate_inp.weight", "F32", [n_embd, n_exp]], [b + "ffn_gate_inp.bias", "F32", [n_exp]],
                   [b + "ffn_gate_exps.weight", "MXFP4", [n_embd, n_ff_exp, n_exp]],
                   [b + "ffn_up_exps.weight", "MXFP4", [n_embd, n_ff_exp, n_exp]],
                   [b + "ffn_down_exps.weight", "MXFP4", [n_ff_exp, n_embd, n_exp]],
                   [b + "ffn_gate_exps.bias", "F32", [n_ff_exp, n_exp]],
                   [b + "ffn_up_exps.bias", "F32", [n_ff_exp, n_exp]],
                   [b + "ffn_down_exps.bias", "F32", [n_embd, n_exp]]]
        ts += [["output_norm.weight", "F32", [n_embd]], ["output.weight", wtype, [n_embd, n_vocab]]]
        return {"metadata": meta, "tensors": ts, "alignment": 32}
    for i in range(n_layer):
        b = f"blk.{i}."
        ts += [[b + "attn_norm.weight", "F32", [n_embd]], [b + "attn_q.weight", wtype, [n_embd, q]],
               [b + "attn_k.weight", wtype, [n_embd, k_]], [b + "attn_v.weight", wtype, [n_embd, k_]],
               [b + "attn_output.weight", wtype, [q, n_embd]], [b + "ffn_gate.weight", wtype, [n_embd, n_ff]],
               [b + "ffn_up.weight", wtype, [n_embd, n_ff]], [b + "ffn_down.weight", wtype, [n_ff, n_embd]]]
        if arch == "qwen2":
            ts += [[b + "attn_q.bias", "F32", [q]], [b + "attn_k.bias", "F32", [k_]], [b + "attn_v.bias", "F32", [k_]]]
        if arch in ("gemma2", "gemma3"):
            ts += [[b + "post_attention_norm.weight", "F32", [n_embd]], [b + "post_ffw_norm.weight", "F32", [n_embd]]]
        if arch == "gemma3":
            ts += [[b + "attn_q_norm.weight", "F32", [head_dim]], [b + "attn_k_norm.weight", "F32", [head_dim]]]
        ts += [[b + "ffn_norm.weight", "F32", [n_embd]]]
    ts += [["output_norm.weight", "F32", [n_embd]]]
    if arch in ("llama", "qwen2"):
        ts += [["output.weight", wtype, [n_embd, n_vocab]]]
    return {"metadata": meta, "tensors": ts, "alignment": 32}
