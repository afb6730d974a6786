"""The token types llama.cpp actually uses: its load-time retyping of special tokens.

Why: a GGUF file's ``tokenizer.ggml.token_type`` is not the last word.  When llama.cpp
loads a vocabulary it recognises end-of-generation and fill-in-the-middle tokens by
their text and marks them control tokens even where the converter stored them as
user-defined -- Gemma 3 stores ``</s>`` (id 212) and Phi-3 ``</s>`` (id 2) as
user-defined, and llama.cpp logs "control-looking token ... its type will be
overridden".  The type decides tokenization: user-defined tokens are matched in any
text, control tokens only when special tokens are parsed (never for a plain prompt or
llama-perplexity's text).  So ggscope must retype as llama.cpp does before it matches.

The rules (llama.cpp as vendored in llama-cpp-python 0.3.36, src/llama-vocab.cpp,
``llama_vocab::impl::load``, the loops over ``token_to_id``):

* every token whose text is in ``EOG_TEXTS`` becomes control;
* for each of EOT, EOM and the six FIM roles whose id the metadata does not give
  (``tokenizer.ggml.<role>_token_id``), a token whose text is in that role's list
  becomes control (llama.cpp takes the first such token in its hash map's order;
  a vocabulary with two candidates for one role is retyped here in both);
* when the end-of-generation set holds ``</s>`` together with ``<|tool_response>`` or
  ``<|plamo:eos|>``, ``</s>`` is a normal token instead.

Contract: ``retype(meta, tokens, types) -> list[int]``, a new list of
llama_token_type values (3 = control, 1 = normal); the input is not changed.
"""
from __future__ import annotations

CONTROL, NORMAL = 3, 1

EOG_TEXTS = frozenset([
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
])

# role -> (the metadata key that names its id, the texts llama.cpp recognises)
ROLE_TEXTS: dict[str, tuple[str, frozenset[str]]] = {
    "eot": ("tokenizer.ggml.eot_token_id", frozenset([
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
        "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"])),
    "eom": ("tokenizer.ggml.eom_token_id", frozenset(["<|eom_id|>"])),
    "fim_pre": ("tokenizer.ggml.fim_pre_token_id", frozenset([
        "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
        "<|code_prefix|>", "<|prefix|>"])),
    "fim_suf": ("tokenizer.ggml.fim_suf_token_id", frozenset([
        "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
        "<|code_suffix|>", "<|suffix|>"])),
    "fim_mid": ("tokenizer.ggml.fim_mid_token_id", frozenset([
        "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
        "<|code_middle|>", "<|middle|>"])),
    "fim_pad": ("tokenizer.ggml.fim_pad_token_id", frozenset([
        "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"])),
    "fim_rep": ("tokenizer.ggml.fim_rep_token_id", frozenset([
        "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"])),
    "fim_sep": ("tokenizer.ggml.fim_sep_token_id", frozenset(["<|file_sep|>"])),
}
_S_IS_NORMAL_WITH = frozenset(["<|tool_response>", "<|plamo:eos|>"])


def retype(meta: dict, tokens: list[str], types: list[int]) -> list[int]:
    out = list(types)
    roles = frozenset().union(*(texts for key, texts in ROLE_TEXTS.values() if meta.get(key) is None))
    control = EOG_TEXTS | roles
    eog_s = False
    normal_s_marker = False
    eos = meta.get("tokenizer.ggml.eos_token_id")       # in llama.cpp's EOG set by id
    for i, text in enumerate(tokens):           # set look-ups only: no call per token
        if text in control:
            out[i] = CONTROL
            if text == "</s>":
                eog_s = True
        if text in _S_IS_NORMAL_WITH and (text in control or i == eos):
            normal_s_marker = True
    if eog_s and normal_s_marker:
        for i, text in enumerate(tokens):
            if text == "</s>":
                out[i] = NORMAL
    return out
