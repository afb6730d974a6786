"""ggscope's tokenizer against llama.cpp's on the same vocabulary, text by text.

Oracle: fixtures/tokenizer/<name>.json, written by tools/record_tokenizer_oracle.py
with the llama-cpp-python 0.3.36 binding on the llama.cpp it vendors
(``llama_tokenize(add_special=false, parse_special=false)``): texts chosen for where
tokenizers part -- whitespace and control characters, Hangul, accents, other scripts,
ASCII symbols, special-token spellings -- plus llama.cpp's own test texts.  The
vocabularies are the shared fixtures ../shared/fixtures/llama-vocab, and gemma-3-270m's
(gemma-f16.gguf, 540 MB: in $GGSCOPE_KLD_MODELS when set, else skipped).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ggscope
from conftest import FIXTURES, SHARED_FIXTURES
from ggscope.model.tokenizer import load

RECORDS = sorted((FIXTURES / "tokenizer").glob("*.json"))


@pytest.mark.parametrize("record", RECORDS, ids=[p.stem for p in RECORDS])
def test_tokenizes_as_llama_cpp(record):
    rec = json.loads(record.read_text(encoding="utf-8"))
    vocab = SHARED_FIXTURES / "llama-vocab" / rec["vocab"]
    if not vocab.is_file() and os.environ.get("GGSCOPE_KLD_MODELS"):
        vocab = Path(os.environ["GGSCOPE_KLD_MODELS"]) / rec["vocab"]
    if not vocab.is_file():
        pytest.skip(f"shared fixture not found: {vocab}")
    tok = load(ggscope.open(str(vocab)))
    bad = [(c["text"], c["ids"], got) for c in rec["cases"]
           if (got := tok.encode(c["text"], add_bos=False)) != c["ids"]]
    assert not bad, f"{len(bad)} of {len(rec['cases'])} texts differ from llama.cpp, e.g. {bad[:3]!r}"
