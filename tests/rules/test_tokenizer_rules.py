"""Tokenizer rules GG701-GG703 on gguf-py files."""
import numpy as np
from gguf_writers import KV, GArray, T, TensorSpec, V

from _helpers import findings, gguf

TOKENS = KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, ("a", "b", "c")))


def test_consistent(tmp_path):
    p = gguf(tmp_path, kvs=[TOKENS, KV("tokenizer.ggml.scores", V.ARRAY, GArray(V.FLOAT32, (0.0, 0.0, 0.0))),
                            KV("tokenizer.ggml.eos_token_id", V.UINT32, 2)],
             tensors=[TensorSpec("token_embd.weight", T.F32, np.zeros((3, 4), np.float32))])
    assert not [f for f in findings(p) if f.code.startswith("GG7")]


def test_lengths_ids_rows(tmp_path):
    p = gguf(tmp_path, kvs=[TOKENS, KV("tokenizer.ggml.token_type", V.ARRAY, GArray(V.INT32, (1, 1))),
                            KV("tokenizer.ggml.bos_token_id", V.UINT32, 3)],
             tensors=[TensorSpec("token_embd.weight", T.F32, np.zeros((4, 4), np.float32))])
    got = sorted(f.code for f in findings(p) if f.code.startswith("GG7"))
    assert got == ["GG701", "GG702", "GG703"]
