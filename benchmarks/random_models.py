"""The random models the forward-pass benchmarks load: shaped like Gemma 3 270M (Q4_K_M, the
types llama-quantize gives each tensor) and like a 234M or 1.26G llama (F16 or Q8_0),
their weights random codes scaled to about N(0, 0.02), written with gguf-py.

Why apart: forward_vs_transformers.py times them against transformers and
forward_load.py times loading the 1.26G one against reading its bytes; how they are
written is one mechanism, used by both.

Contract: each ``write_*`` writes one GGUF file at ``path`` deterministically from
``seed`` and returns its parameter count.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


# ---- the 270M gemma3-shaped Q4_K_M file -------------------------------------------------------

GEMMA3_270M = dict(n_vocab=262144, n_embd=640, n_layer=18, n_head=4, n_head_kv=1, head_dim=256,
                   n_ff=2048, n_ctx=32768, swa=512)


def _use_more_bits(i: int, n: int) -> bool:
    """llama.cpp llama-quant.cpp use_more_bits: the layers Q4_K_M gives more bits."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _qtype(want, n_cols: int):
    """llama.cpp's fallback when a row is not a whole number of 256-element K blocks."""
    from gguf import GGMLQuantizationType as Q
    if n_cols % 256 == 0:
        return want
    return {Q.Q4_K: Q.Q5_0, Q.Q6_K: Q.Q8_0}[want]


def _random_blocks(rng: np.random.Generator, qtype, rows: int, cols: int) -> np.ndarray:
    """Random quant codes with f16 scales sized so the weights come out ~N(0, 0.02)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as Q
    block, size = GGML_QUANT_SIZES[qtype]
    n_blocks = rows * cols // block
    data = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)

    def f16(offset: int, mean: float) -> None:
        d = (mean * (1 + 0.1 * rng.standard_normal(n_blocks))).astype("<f2")
        data[:, offset:offset + 2] = d.view(np.uint8).reshape(n_blocks, 2)

    if qtype == Q.Q8_0:          # d · q, q uniform in [-128, 127] (std 74)
        f16(0, 0.02 / 74)
    elif qtype == Q.Q5_0:        # d · (q - 16), q in [0, 31] (std 9.2)
        f16(0, 0.02 / 9.2)
    elif qtype == Q.Q4_K:        # d·sc·q - dmin·m, 6-bit sc/m (mean 31.5), q in [0, 15]
        f16(0, 0.02 / (31.5 * 4.6))
        f16(2, 7.5 * 0.02 / (31.5 * 4.6))
    elif qtype == Q.Q6_K:        # d · sc · (q - 32), int8 sc (std 74), q in [0, 63] (std 18.5)
        f16(208, 0.02 / (74 * 18.5))
    else:
        raise ValueError(qtype)
    return data.reshape(rows, cols // block * size)


def write_gemma3_270m(path: Path, seed: int = 0) -> int:
    """Write the model; returns its parameter count."""
    import gguf
    from gguf import GGMLQuantizationType as Q
    g = GEMMA3_270M
    rng = np.random.default_rng(seed)
    C, H, Hkv, D, F, L = g["n_embd"], g["n_head"], g["n_head_kv"], g["head_dim"], g["n_ff"], g["n_layer"]
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_name("Random Gemma3 270M-shaped")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    w.add_context_length(g["n_ctx"])
    w.add_embedding_length(C)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_sliding_window(g["swa"])
    w.add_vocab_size(g["n_vocab"])
    n_params = 0

    def quant(name: str, rows: int, cols: int, want) -> None:
        nonlocal n_params
        qtype = _qtype(want, cols)
        w.add_tensor(name, _random_blocks(rng, qtype, rows, cols), raw_dtype=qtype)
        n_params += rows * cols

    def norm(name: str, n: int) -> None:
        nonlocal n_params
        w.add_tensor(name, (1 + 0.1 * rng.standard_normal(n)).astype(np.float32))
        n_params += n

    quant("token_embd.weight", g["n_vocab"], C, Q.Q6_K)        # tied output: the output's type
    for i in range(L):
        more = _use_more_bits(i, L)
        norm(f"blk.{i}.attn_norm.weight", C)
        quant(f"blk.{i}.attn_q.weight", H * D, C, Q.Q4_K)
        quant(f"blk.{i}.attn_k.weight", Hkv * D, C, Q.Q4_K)
        quant(f"blk.{i}.attn_v.weight", Hkv * D, C, Q.Q6_K if more else Q.Q4_K)
        norm(f"blk.{i}.attn_q_norm.weight", D)
        norm(f"blk.{i}.attn_k_norm.weight", D)
        quant(f"blk.{i}.attn_output.weight", C, H * D, Q.Q4_K)
        norm(f"blk.{i}.post_attention_norm.weight", C)
        norm(f"blk.{i}.ffn_norm.weight", C)
        quant(f"blk.{i}.ffn_gate.weight", F, C, Q.Q4_K)
        quant(f"blk.{i}.ffn_up.weight", F, C, Q.Q4_K)
        quant(f"blk.{i}.ffn_down.weight", C, F, Q.Q6_K if more else Q.Q4_K)
        norm(f"blk.{i}.post_ffw_norm.weight", C)
    norm("output_norm.weight", C)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n_params


# ---- the 234M llama-shaped F16 / Q8_0 files (for --baseline) ---------------------------------

LLAMA_234M = dict(n_vocab=32000, n_embd=1024, n_layer=15, n_head=16, n_head_kv=4, n_ff=2816, n_ctx=4096)
# Issue 27 item 5's load goal: a llama with 1.26 G parameters (TinyLlama's width and heads,
# 24 layers, FFN 6016, a 36000-token untied vocabulary), Q8_0 matrices.
LLAMA_1260M = dict(n_vocab=36000, n_embd=2048, n_layer=24, n_head=32, n_head_kv=4, n_ff=6016, n_ctx=4096)


def write_llama_234m(path: Path, encoding: str = "Q8_0", seed: int = 0, shape: dict = LLAMA_234M) -> int:
    """A llama-shaped model every ggscope tree since the first llama forward pass loads (the
    gemma3 one is newer), its matrices ``encoding`` ("Q8_0" or "F16"), of ``shape``
    (LLAMA_234M, or LLAMA_1260M for the load goal); returns its parameter count."""
    import gguf
    from gguf import GGMLQuantizationType as Q
    g = shape
    rng = np.random.default_rng(seed)
    C, H, Hkv, F, L, V = g["n_embd"], g["n_head"], g["n_head_kv"], g["n_ff"], g["n_layer"], g["n_vocab"]
    D = C // H
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(f"Random Llama {'1.26B' if shape is LLAMA_1260M else '234M'}-shaped")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if encoding == "Q8_0" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(g["n_ctx"])
    w.add_embedding_length(C)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_rope_dimension_count(D)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(1e4)
    w.add_vocab_size(V)
    n_params = 0

    def quant(name: str, rows: int, cols: int) -> None:
        nonlocal n_params
        if encoding == "Q8_0":
            w.add_tensor(name, _random_blocks(rng, Q.Q8_0, rows, cols), raw_dtype=Q.Q8_0)
        else:
            w.add_tensor(name, (rng.standard_normal((rows, cols), np.float32) * np.float32(0.02)).astype(np.float16))
        n_params += rows * cols

    def norm(name: str, n: int) -> None:
        nonlocal n_params
        w.add_tensor(name, (1 + 0.1 * rng.standard_normal(n)).astype(np.float32))
        n_params += n

    quant("token_embd.weight", V, C)
    for i in range(L):
        norm(f"blk.{i}.attn_norm.weight", C)
        quant(f"blk.{i}.attn_q.weight", H * D, C)
        quant(f"blk.{i}.attn_k.weight", Hkv * D, C)
        quant(f"blk.{i}.attn_v.weight", Hkv * D, C)
        quant(f"blk.{i}.attn_output.weight", C, H * D)
        norm(f"blk.{i}.ffn_norm.weight", C)
        quant(f"blk.{i}.ffn_gate.weight", F, C)
        quant(f"blk.{i}.ffn_up.weight", F, C)
        quant(f"blk.{i}.ffn_down.weight", C, F)
    norm("output_norm.weight", C)
    quant("output.weight", V, C)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n_params
