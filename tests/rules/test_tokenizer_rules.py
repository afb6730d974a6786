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


def test_every_token_id_key_out_of_range_is_named_and_no_other_key(tmp_path):
    """GG702 names each ``tokenizer.ggml.*_token_id`` integer outside the vocabulary - ids
    just past the end included, and a key named like one but spelled otherwise never."""
    from ggscope.facts.gguf_schema import TOKEN_ID_RE
    assert TOKEN_ID_RE.pattern.endswith("_token_id")      # the rule asks the name's end first
    kvs = [TOKENS, KV("tokenizer.ggml.bos_token_id", V.UINT32, 3), KV("tokenizer.ggml.eos_token_id", V.UINT32, 2),
           KV("tokenizer.ggml.my_custom_token_id", V.UINT64, 99), KV("tokenizer.ggml.pad_token_idx", V.UINT32, 99),
           KV("tokenizer.ggml.Mask_token_id", V.UINT32, 99), KV("general.eos_token_id", V.UINT32, 99),
           KV("tokenizer.ggml.sep_token_id", V.INT32, -1), KV("tokenizer.ggml.cls_token_id", V.BOOL, True),
           KV("tokenizer.ggml.unk_token_id", V.STRING, "7")]
    got = sorted(f.message for f in findings(gguf(tmp_path, kvs=kvs)) if f.code == "GG702")
    assert got == ["tokenizer.ggml.bos_token_id = 3 is outside the vocabulary of 3 tokens",
                   "tokenizer.ggml.my_custom_token_id = 99 is outside the vocabulary of 3 tokens",
                   "tokenizer.ggml.sep_token_id = -1 is outside the vocabulary of 3 tokens"], got
