"""The vocabulary of the tiny models ``tools.arch_models`` writes, and the sequence they run.

Why a module of its own: every tiny model carries the same tokenizer -- GPT-2's 256 byte
tokens, ``N_MERGES`` merges learned greedily on a fixed corpus, three control tokens -- as
a "gpt2" model with the "gpt-2" pre-tokenizer, which llama.cpp's vocabulary loader
accepts; building it is a job apart from the weights (``tools.arch_specs``) and the
writing (``tools.arch_models``).

Contract: ``TOKENS``, ``TOKEN_TYPES`` (1 normal, 3 control), ``MERGES``, ``N_VOCAB``,
``BOS`` / ``EOS`` / ``PAD`` and ``SEQ`` (the 12 token ids the logits are recorded for),
the same on every run.
"""
from __future__ import annotations

import re
from collections import Counter

__all__ = ["TOKENS", "TOKEN_TYPES", "MERGES", "N_VOCAB", "BOS", "EOS", "PAD", "SEQ"]

N_MERGES = 40
SPECIALS = ("<|bos|>", "<|eos|>", "<|pad|>")
CORPUS = ("Hello world, this is a test. The quick brown fox jumps over the lazy dog. "
          "There is nothing to learn here: this is only the tiny test model of the test.\n")


def _byte_table() -> list[str]:
    """GPT-2's reversible byte -> printable character table, indexed by byte."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def _tokenizer() -> tuple[list[str], list[int], list[str]]:
    b2u = _byte_table()
    words = Counter(tuple(b2u[b] for b in w.encode())
                    for w in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", CORPUS))
    tokens, merges = list(b2u), []
    while len(merges) < N_MERGES:
        pairs: Counter = Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[a, b] += n
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        merges.append(f"{a} {b}")
        if a + b not in tokens:
            tokens.append(a + b)
        merged: Counter = Counter()
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == (a, b):
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    types = [1] * len(tokens) + [3] * len(SPECIALS)                 # NORMAL, then CONTROL
    return tokens + list(SPECIALS), types, merges


TOKENS, TOKEN_TYPES, MERGES = _tokenizer()
N_VOCAB = len(TOKENS)
BOS, EOS, PAD = (TOKENS.index(s) for s in SPECIALS)
SEQ = [BOS, 72, 101, 108, 32, 119, 111, 33, 10, 20, 30, 44]        # 12 tokens: past a 4-layer period
