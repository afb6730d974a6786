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

RECORDS = Path(__file__).resolve().parents[2] / "fixtures" / "llama_memory"


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
            if key == "tokenizer.ggml.tokens":
                w.add_array(key, [f"<t{i}>" for i in range(n)])
            elif key == "tokenizer.ggml.scores":
                w.add_array(key, [0.0] * n)
            elif key == "tokenizer.ggml.merges":
                w.add_array(key, ["a b"] * n)
            else:
                w.add_array(key, [1] * n)
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
