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
llama_token_type values (3 = control, 1 = normal); the input is not changed.  The same
rules one token at a time, for a reader that does not decode the whole vocabulary:
``type_reader(meta, stored, retyped, n, has, text_at) -> type_of(id, text)``.
"""
from __future__ import annotations

import operator
from collections.abc import Callable

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


def as_id(value) -> int | None:
    """A metadata value as a token id (any integer type), else None."""
    try:
        return operator.index(value)
    except TypeError:
        return None


def control_texts(meta: dict) -> frozenset[str]:
    """The texts llama.cpp makes control tokens for this file's metadata."""
    return EOG_TEXTS.union(*(texts for key, texts in ROLE_TEXTS.values() if meta.get(key) is None))


def s_is_normal(meta: dict, has, text_at) -> bool:
    """Whether ``</s>`` is a normal token: the end-of-generation set holds it with
    ``<|tool_response>`` or ``<|plamo:eos|>`` (a control text, or the EOS id's text).
    ``has(text)`` says whether a token has that text, ``text_at(id)`` a token's text."""
    if not has("</s>"):
        return False
    control = control_texts(meta)
    eos = meta.get("tokenizer.ggml.eos_token_id")       # in llama.cpp's EOG set by id
    at_eos = text_at(eos)
    return any((t in control and has(t)) or at_eos == t for t in _S_IS_NORMAL_WITH)


def token_type(text: str, stored: int, control: frozenset[str], s_normal: bool) -> int:
    """One token's type as llama.cpp uses it (``control_texts``, ``s_is_normal``)."""
    if text in control:
        return NORMAL if s_normal and text == "</s>" else CONTROL
    return stored


def type_reader(meta: dict, stored, retyped: bool, n: int, has, text_at) -> Callable[[int, str], int]:
    """``type_of(id, text)`` for a vocabulary of ``n`` tokens read one token at a time:
    the ``stored`` type (``tokenizer.ggml.token_type``; NORMAL past the end of a short or
    missing array), with ``retyped`` (a GGUF file) the type ``retype`` gives.  ``has(text)``
    and ``text_at(id)`` read the vocabulary only for ``</s>`` (``s_is_normal``), once."""
    stored = stored if stored is not None and len(stored) else ()
    control = control_texts(meta) if retyped else frozenset()
    memo: dict[str, bool] = {}

    def stored_at(i: int) -> int:
        return int(stored[i]) if i < len(stored) else NORMAL

    def at(i) -> str | None:
        i = as_id(i)
        return text_at(i) if i is not None and 0 <= i < n else None

    def type_of(i: int, text: str) -> int:
        if text not in control:
            return stored_at(i)
        if "s" not in memo:
            memo["s"] = s_is_normal(meta, has, at)
        return token_type(text, stored_at(i), control, memo["s"])
    return type_of


def retype(meta: dict, tokens: list[str], types: list[int]) -> list[int]:
    control = control_texts(meta)
    present = set(tokens) & (control | _S_IS_NORMAL_WITH)   # set look-ups only: no call per token

    def text_at(i):
        i = as_id(i)
        return tokens[i] if i is not None and 0 <= i < len(tokens) else None
    s_normal = s_is_normal(meta, present.__contains__, text_at)
    out = list(types)
    for i, text in enumerate(tokens):
        if text in present:
            out[i] = token_type(text, out[i], control, s_normal)
    return out
