"""Tokenizer consistency rules (GG7xx): the embedded vocabulary agrees with itself and the model.

Why: llama.cpp indexes ``scores`` and ``token_type`` by token id and sizes its
embedding lookup by the vocabulary; arrays of different lengths or a special token id
past the end read out of bounds or abort at load time.

Contract: rules read the ``tokenizer.ggml.*`` metadata (lengths of lazy arrays only,
never their contents) and the ``token_embd.weight`` tensor info.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.facts.gguf_schema import TOKEN_ID_RE
from ggscope.rules.base import CheckContext, Finding, Rule, Severity

__all__ = ["RULES", "TokenArrayLength", "SpecialTokenOutOfRange", "VocabEmbeddingRows"]

_TOKENS = "tokenizer.ggml.tokens"


def _node(ctx: CheckContext, key: str):
    p = ctx.mf.metadata_nodes.get(key)
    return ctx.node(p) if p else None


def _len(value) -> int | None:
    try:
        return None if isinstance(value, (str, bytes)) else len(value)
    except TypeError:
        return None


class TokenArrayLength(Rule):
    """What it checks: ``tokenizer.ggml.scores`` and ``token_type`` have as many entries as ``tokens``.

    Why it matters: the spec: "If present, it must have the same length and index as
    tokens"; llama.cpp reads ``scores[i]`` for every token id ``i``.

    Example: 32000 tokens, 31999 scores.

    Reference: the GGUF spec (ggml docs/gguf.md), "Tokenizer: GGML".
    """
    code, name, severity, family = "GG701", "token-array-length", Severity.ERROR, "tokenizer"
    summary = "tokenizer.ggml.scores or token_type length differs from tokens."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        n = _len(ctx.mf.metadata.get(_TOKENS))
        if n is None:
            return
        for key in ("tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
            m = _len(ctx.mf.metadata.get(key)) if key in ctx.mf.metadata else None
            if m is not None and m != n:
                yield ctx.at(_node(ctx, key), f"{key} has {m} entries, {_TOKENS} has {n}")


class SpecialTokenOutOfRange(Rule):
    """What it checks: every ``tokenizer.ggml.*_token_id`` is a valid index into ``tokens``.

    Why it matters: a BOS/EOS id past the vocabulary names no token; llama.cpp warns
    "bad special token" and falls back to a default, so generation stops at the wrong
    place or never.

    Example: 32000 tokens, ``tokenizer.ggml.eos_token_id = 32000``.

    Reference: the GGUF spec (ggml docs/gguf.md), "Tokenizer: Special tokens".
    """
    code, name, severity, family = "GG702", "special-token-out-of-range", Severity.WARNING, "tokenizer"
    summary = "A special token id is not inside the vocabulary."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        n = _len(ctx.mf.metadata.get(_TOKENS))
        if n is None:
            return
        for key, value in ctx.mf.metadata.items():
            # the pattern ends in "_token_id": a key that does not is not matched against it
            if not key.endswith("_token_id") or not TOKEN_ID_RE.fullmatch(key) or isinstance(value, bool) \
                    or not isinstance(value, int):
                continue
            if not 0 <= value < n:
                yield ctx.at(_node(ctx, key), f"{key} = {value} is outside the vocabulary of {n} tokens")


class VocabEmbeddingRows(Rule):
    """What it checks: ``token_embd.weight`` has one row per token of ``tokenizer.ggml.tokens``.

    Why it matters: llama.cpp creates the embedding as ``{n_embd, n_vocab}`` with
    ``n_vocab`` the number of tokens and refuses a tensor of any other shape; a mismatch
    means the vocabulary belongs to another model.

    Example: 32000 tokens, ``token_embd.weight`` of shape [4096, 32001].

    Reference: the GGUF spec (ggml docs/gguf.md), "Tokenizer: GGML" (tokens indexed by token id), "Base
    layers" ``token_embd``.
    """
    code, name, severity, family = "GG703", "vocab-embedding-rows", Severity.ERROR, "tokenizer"
    only_if = "tensors"
    summary = "The token count differs from the rows of token_embd.weight."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        n = _len(ctx.mf.metadata.get(_TOKENS))
        if n is None:
            return
        for t in ctx.mf.tensors:
            if t.name == "token_embd.weight" and len(t.shape) >= 2:
                if t.shape[1] != n:
                    yield ctx.at(ctx.node(t.node_path) if t.node_path else None,
                                 f"token_embd.weight has {t.shape[1]} rows, the vocabulary {n} tokens")
                return


RULES = [TokenArrayLength, SpecialTokenOutOfRange, VocabEmbeddingRows]
