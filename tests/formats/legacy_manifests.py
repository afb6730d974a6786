"""What the MANIFEST.md files of ../shared/fixtures say about the legacy model files.

Why: the fixtures' producers wrote down, per file, the header values, tensor counts and
tensor type counts (a Markdown table) and, in prose, the model each file holds (tensor
names and shapes). Those statements are the oracle for the legacy-format tests: this
module reads the tables from the MANIFEST files themselves and restates the prose model
descriptions as tensor lists, so a test never compares ggscope with numbers taken from
ggscope.

Contract: ``llama_legacy(dir)``, ``ggml_legacy(dir)`` and ``chatglm(dir)`` return one
``Expected`` per model file listed in the folder's MANIFEST. ``tensors`` maps each tensor
name to ``(shape, type)`` with the shape in the order the *file* stores it (ggml ``ne``
order for GGML/GGMF/GGJT and gpt-2 files, PyTorch order for chatglm.cpp) and the type as
ggml spells it ("F32", "Q4_0").
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Expected", "llama_legacy", "ggml_legacy", "chatglm", "table_rows", "type_counts"]


@dataclass(frozen=True)
class Expected:
    file: str
    size: int
    n_tensors: int
    type_counts: dict[str, int]
    header: dict[str, object] = field(default_factory=dict)
    tensors: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    n_vocab_entries: int | None = None


def table_rows(manifest: Path) -> list[list[str]]:
    """Cells of every Markdown table row whose first cell names a ``.bin`` file."""
    rows = []
    for line in manifest.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].endswith(".bin"):
            rows.append(cells)
    return rows


def _type_counts(text: str) -> dict[str, int]:
    return dict(ast.literal_eval(text))


# ------------------------------------------------------------------------ llama-legacy

def _llama_tensors(n_embd: int, n_vocab: int, n_layer: int, n_ff: int, wtype: str
                   ) -> dict[str, tuple[tuple[int, ...], str]]:
    """LLaMA tensor names and ne shapes (legacy-formats.md §1.2); 1-D tensors are F32."""
    t = {"tok_embeddings.weight": ((n_embd, n_vocab), wtype),
         "norm.weight": ((n_embd,), "F32"),
         "output.weight": ((n_embd, n_vocab), wtype)}
    for i in range(n_layer):
        p = f"layers.{i}."
        for w in ("wq", "wk", "wv", "wo"):
            t[f"{p}attention.{w}.weight"] = ((n_embd, n_embd), wtype)
        t[f"{p}attention_norm.weight"] = ((n_embd,), "F32")
        t[f"{p}ffn_norm.weight"] = ((n_embd,), "F32")
        t[f"{p}feed_forward.w1.weight"] = ((n_embd, n_ff), wtype)
        t[f"{p}feed_forward.w3.weight"] = ((n_embd, n_ff), wtype)
        t[f"{p}feed_forward.w2.weight"] = ((n_ff, n_embd), wtype)
    return t


_FTYPE_TYPE = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1"}


def llama_legacy(folder: Path) -> list[Expected]:
    """llama-legacy/MANIFEST.md table + MANIFEST-vocab.md (+ legacy-formats.md §3.4)."""
    out = []
    # "All have n_vocab 32, n_mult 256, n_rot = n_embd/n_head = 128."
    for cells in table_rows(folder / "MANIFEST.md"):
        name, size, _sha, magic, version, n_embd, n_head, n_layer, ftype, n_t, types = cells[:11]
        n_embd, n_head, n_layer, ftype = int(n_embd), int(n_head), int(n_layer), int(ftype)
        # llama-tiny: "intermediate 512"; llama0L has no layers (n_ff unused).
        tensors = _llama_tensors(n_embd, 32, n_layer, 512, _FTYPE_TYPE[ftype])
        header = {"magic": magic, "version": None if version == "None" else int(version),
                  "n_vocab": 32, "n_embd": n_embd, "n_mult": 256, "n_head": n_head,
                  "n_layer": n_layer, "n_rot": 128, "ftype": ftype}
        out.append(Expected(name, int(size), int(n_t), _type_counts(types), header, tensors, 32))
    # MANIFEST-vocab.md: 32000 scored entries, no tensors; header values from
    # legacy-formats.md §3.4 (n_vocab 32000, n_embd 4096, n_mult 256, n_head 32,
    # n_layer 32, n_rot 128, ftype 1), 432 610 bytes each.
    vocab_header = {"n_vocab": 32000, "n_embd": 4096, "n_mult": 256, "n_head": 32,
                    "n_layer": 32, "n_rot": 128, "ftype": 1, "version": 1}
    text = (folder / "MANIFEST-vocab.md").read_text(encoding="utf-8")
    for fname, magic in (("ggml-vocab-ggmf-v1.bin", "ggmf"), ("ggml-vocab-ggjt-v1.bin", "ggjt")):
        assert fname in text, f"{fname} not described in MANIFEST-vocab.md"
        out.append(Expected(fname, 432610, 0, {}, {**vocab_header, "magic": magic}, {}, 32000))
    return out


# ------------------------------------------------------------------------- ggml-legacy

def _gpt2_tensors(wtype: str, h5conv: bool) -> dict[str, tuple[tuple[int, ...], str]]:
    """The tiny GPT-2 (n_vocab 256, n_ctx 64, n_embd 64, n_layer 2, n_inner 256).

    Cerebras converter: Conv1D matrices transposed to [out][in] (ne = [in, out]),
    `model/lm_head` written; quantized/F16: wte, lm_head and the four matrices per layer.
    h5 converter: only mlp.c_proj transposed, wpe also F16, no lm_head.
    """
    e, v, c, f = 64, 256, 64, 256
    t = {"model/wte": ((e, v), wtype),
         "model/wpe": ((e, c), wtype if h5conv else "F32"),
         "model/ln_f/g": ((e,), "F32"), "model/ln_f/b": ((e,), "F32")}
    if not h5conv:
        t["model/lm_head"] = ((e, v), wtype)
    for i in range(2):
        p = f"model/h{i}/"
        for ln in ("ln_1", "ln_2"):
            t[f"{p}{ln}/g"] = ((e,), "F32")
            t[f"{p}{ln}/b"] = ((e,), "F32")
        # numpy shape of the stored matrix, ne is its reverse
        c_attn = (3 * e, e) if not h5conv else (e, 3 * e)
        c_fc = (f, e) if not h5conv else (e, f)
        t[f"{p}attn/c_attn/w"] = (tuple(reversed(c_attn)), wtype)
        t[f"{p}attn/c_attn/b"] = ((3 * e,), "F32")
        t[f"{p}attn/c_proj/w"] = ((e, e), wtype)
        t[f"{p}attn/c_proj/b"] = ((e,), "F32")
        t[f"{p}mlp/c_fc/w"] = (tuple(reversed(c_fc)), wtype)
        t[f"{p}mlp/c_fc/b"] = ((f,), "F32")
        t[f"{p}mlp/c_proj/w"] = ((f, e), wtype)     # stored [out=64][in=256] in both
        t[f"{p}mlp/c_proj/b"] = ((e,), "F32")
    return t


def ggml_legacy(folder: Path) -> list[Expected]:
    """ggml-legacy/MANIFEST.md: gpt-2 files of three quantization eras."""
    out = []
    for cells in table_rows(folder / "MANIFEST.md"):
        name, size, _sha, ftype, n_t, types = cells[:6]
        counts = _type_counts(types)
        wtype = next((k for k in counts if k != "F32"), "F32")
        tensors = _gpt2_tensors(wtype, "h5conv" in name)
        header = {"n_vocab": 256, "n_ctx": 64, "n_embd": 64, "n_head": 4, "n_layer": 2,
                  "ftype": int(ftype)}
        out.append(Expected(name, int(size), int(n_t), counts, header, tensors, 256))
    return out


# ----------------------------------------------------------------------------- chatglm

_GLM_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0"}


def _chatglm1_tensors(wtype: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """ChatGLM-6B layout, hidden 64, inner 256, vocab 256, 2 layers (PyTorch order)."""
    h, ff = 64, 256
    t = {"transformer.word_embeddings.weight": ((256, h), wtype)}
    for i in range(2):
        p = f"transformer.layers.{i}."
        t.update({
            p + "input_layernorm.weight": ((h,), "F32"), p + "input_layernorm.bias": ((h,), "F32"),
            p + "attention.query_key_value.weight": ((3 * h, h), wtype),
            p + "attention.query_key_value.bias": ((3 * h,), "F32"),
            p + "attention.dense.weight": ((h, h), wtype), p + "attention.dense.bias": ((h,), "F32"),
            p + "post_attention_layernorm.weight": ((h,), "F32"),
            p + "post_attention_layernorm.bias": ((h,), "F32"),
            p + "mlp.dense_h_to_4h.weight": ((ff, h), wtype), p + "mlp.dense_h_to_4h.bias": ((ff,), "F32"),
            p + "mlp.dense_4h_to_h.weight": ((h, ff), wtype), p + "mlp.dense_4h_to_h.bias": ((h,), "F32"),
        })
    t["transformer.final_layernorm.weight"] = ((h,), "F32")
    t["transformer.final_layernorm.bias"] = ((h,), "F32")
    return t


def _chatglm2_tensors(wtype: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """ChatGLM2/3 layout: hidden 64, kv groups 2 x 16 channels, ffn 128, vocab 256."""
    h, qkv, ff = 64, 128, 128
    t = {"transformer.embedding.word_embeddings.weight": ((256, h), wtype)}
    for i in range(2):
        p = f"transformer.encoder.layers.{i}."
        t.update({
            p + "input_layernorm.weight": ((h,), "F32"),
            p + "self_attention.query_key_value.weight": ((qkv, h), wtype),
            p + "self_attention.query_key_value.bias": ((qkv,), "F32"),
            p + "self_attention.dense.weight": ((h, h), wtype),
            p + "post_attention_layernorm.weight": ((h,), "F32"),
            p + "mlp.dense_h_to_4h.weight": ((2 * ff, h), wtype),
            p + "mlp.dense_4h_to_h.weight": ((h, ff), wtype),
        })
    t["transformer.encoder.final_layernorm.weight"] = ((h,), "F32")
    t["transformer.output_layer.weight"] = ((256, h), wtype)
    return t


_V2_FIELDS = ("dtype", "vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads",
              "num_hidden_layers", "intermediate_size", "norm_eps", "num_virtual_tokens",
              "rope_theta", "max_length", "eos_token_id", "pad_token_id")
_V1_FIELDS = ("dtype", "vocab_size", "hidden_size", "num_attention_heads", "num_hidden_layers",
              "intermediate_size", "max_length", "bos_token_id", "eos_token_id", "pad_token_id",
              "sep_token_id")
_V0_FIELDS = ("vocab_size", "hidden_size", "num_attention_heads", "num_layers",
              "max_sequence_length", "bos_token_id", "eos_token_id", "gmask_token_id",
              "mask_token_id", "pad_token_id", "dtype")


def chatglm(folder: Path) -> list[Expected]:
    """chatglm/MANIFEST.md: the 'decoded header' column spells out every header value."""
    out = []
    for cells in table_rows(folder / "MANIFEST.md"):
        name, size, _sha, decoded = cells[:4]
        m_type = re.search(r"model_type=(\d+)", decoded)
        m_ver = re.search(r"(?:config_)?version=(\d+)", decoded)
        m_cfg = re.search(r"config\([^)]*\)=(\([^)]*\))", decoded)
        m_sp = re.search(r"sp_model_bytes=(\d+)", decoded)
        m_nt = re.search(r"tensors=(\d+)", decoded)
        m_ty = re.search(r"types=(\{[^}]*\})", decoded)
        assert m_cfg and m_sp and m_nt and m_ty, f"cannot read MANIFEST row for {name}"
        values = ast.literal_eval(m_cfg.group(1))
        model_type = int(m_type.group(1)) if m_type else None
        version = int(m_ver.group(1)) if m_ver and m_type else None
        if version is None:
            fields = _V0_FIELDS
        elif version == 2:
            fields = _V2_FIELDS
        else:
            fields = _V1_FIELDS + (("num_kv_heads",) if model_type in (2, 3) else ())
        assert len(fields) == len(values), (name, fields, values)
        config = dict(zip(fields, values))
        header = {"model_type": model_type, "version": version, "config": config,
                  "tokenizer_bytes": int(m_sp.group(1))}
        wtype = _GLM_TYPES[config["dtype"]]
        tensors = _chatglm1_tensors(wtype) if name.startswith("chatglm1") else _chatglm2_tensors(wtype)
        out.append(Expected(name, int(size), int(m_nt.group(1)), _type_counts(m_ty.group(1)),
                            header, tensors))
    return out


def type_counts(types: list[str]) -> dict[str, int]:
    """Counter of type names as a plain dict (for comparing with a MANIFEST row)."""
    return dict(Counter(types))


def fixture_file(folder: Path, name: str) -> Path:
    """``folder/name``, or skip the test with the reason when the shared fixture is absent."""
    import pytest
    path = folder / name
    if not path.is_file():
        pytest.skip(f"shared fixture not found: {path.resolve()}")
    return path


def cut_inside(spec_id: str, data: bytes, field: str):
    """Parse ``data`` whole, cut it in the middle of ``field`` and parse the cut copy.

    Returns (cut offset, ParseResult of the cut copy).
    """
    from ggscope.ksy.node import find
    from ggscope.source.mapped import ByteSource
    from ggscope.ksy import parse
    node = find(parse(spec_id, ByteSource(data)).root, field)
    assert node is not None and node.end > node.start, field
    cut = (node.start + node.end) // 2 if node.end - node.start > 1 else node.start
    return cut, parse(spec_id, ByteSource(data[:cut]))
