"""llama.cpp's load-time retyping of special tokens (ggscope.model.special_tokens).

The oracle cases (Phi-3's ``</s>``) are in test_tokenizer_oracle.py; these hold the
rules of src/llama-vocab.cpp that a small vocabulary can show.
"""
from __future__ import annotations

from ggscope.model.special_tokens import CONTROL, NORMAL, retype

USER = 4


def test_end_of_generation_texts_become_control():
    tokens = ["a", "</s>", "<end_of_turn>", "<s>", "<|endoftext|>"]
    got = retype({}, tokens, [1, USER, USER, USER, 1])
    assert got == [1, CONTROL, CONTROL, USER, CONTROL]          # <s> is not an EOG text


def test_fim_texts_only_when_the_metadata_names_no_id():
    tokens = ["<PRE>", "<|fim_suffix|>"]
    assert retype({}, tokens, [USER, USER]) == [CONTROL, CONTROL]
    meta = {"tokenizer.ggml.fim_pre_token_id": 7}
    assert retype(meta, tokens, [USER, USER]) == [USER, CONTROL]


def test_s_is_normal_beside_tool_response():
    tokens = ["</s>", "<|tool_response>"]
    assert retype({}, tokens, [USER, USER]) == [NORMAL, CONTROL]
    assert retype({}, ["</s>", "<|plamo:eos|>"], [USER, 3]) == [CONTROL, 3]
    assert retype({"tokenizer.ggml.eos_token_id": 1}, ["</s>", "<|plamo:eos|>"], [USER, 3]) == [NORMAL, 3]


def test_input_is_not_changed():
    types = [USER]
    retype({}, ["</s>"], types)
    assert types == [USER]
