"""Early llama.cpp vocabularies, WordPiece pieces, and token text for listing candidates.

Oracles:

* ../shared/fixtures/llama-legacy/ggml-vocab-{ggmf,ggjt}-v1.bin (MANIFEST-vocab.md):
  LLaMA's vocabulary as llama.cpp wrote it in March 2023, "▁" stored as a plain space.
  llama.cpp tokenizes "Hello world" as [15043, 3186] (the issue), and the vocabulary is
  LLaMA's, so llama.cpp's own test vectors for ``ggml-vocab-llama-spm.gguf``
  (../shared/fixtures/llama-vocab, ``.inp``/``.out``) must come out of the legacy files
  too.
* ../shared/fixtures/llama-cpp-arch/tokenization.json: llama.cpp's ``token_to_piece`` of
  each token of the test sentence (byte-level BPE), which ``Tokenizer.piece`` must give.
* The WordPiece vocabulary stores "▁" for a word start (convert_hf_to_gguf.py's
  ``phantom``), which ``piece`` shows as a space, as llama.cpp does.
"""
from __future__ import annotations

import json

import pytest

import ggscope
from ggscope.core.escape import escape_label
from ggscope.model.tokenizer import load
from test_tokenizer_llama_vocab import read_cases


def _open(path):
    if not path.is_file():
        pytest.skip(f"shared fixture not found: {path}")
    return ggscope.open(str(path))


@pytest.mark.parametrize("name", ["ggml-vocab-ggjt-v1.bin", "ggml-vocab-ggmf-v1.bin"])
def test_legacy_vocab_spaces(name, shared_fixtures):
    tok = load(_open(shared_fixtures / "llama-legacy" / name))
    assert tok.encode("Hello world", add_bos=False) == [15043, 3186]
    assert tok.encode("Hello world") == [1, 15043, 3186]
    assert tok.decode([15043, 3186]) == "Hello world"


@pytest.mark.parametrize("name", ["ggml-vocab-ggjt-v1.bin", "ggml-vocab-ggmf-v1.bin"])
def test_legacy_vocab_reproduces_llama_cpp_spm_vectors(name, shared_fixtures, capsys):
    if not (shared_fixtures / "llama-vocab" / "ggml-vocab-llama-spm.gguf.out").is_file():
        pytest.skip("llama-vocab fixtures absent")
    tok = load(_open(shared_fixtures / "llama-legacy" / name))
    cases = read_cases("llama-spm")
    bad = [(text, want, got) for text, want in cases
           if (got := tok.encode(text, add_bos=False)) != want]
    with capsys.disabled():
        print(f"\n{name}: {len(cases) - len(bad)} of {len(cases)} llama.cpp vectors exact")
    assert not bad, f"{len(bad)} differ, first: {bad[0]!r}"


def test_legacy_byte_pieces(shared_fixtures):
    tok = load(_open(shared_fixtures / "llama-legacy" / "ggml-vocab-ggjt-v1.bin"))
    assert tok.piece_bytes(3 + 0xF0) == b"\xf0"      # byte pieces: id = byte + 3
    assert tok.label(3 + 0x0A) == '"\\n"'
    assert tok.piece(15043) == " Hello"


def test_wordpiece_pieces(shared_fixtures):
    tok = load(_open(shared_fixtures / "llama-vocab" / "ggml-vocab-bert-bge.gguf"))
    ids = tok.encode("Führer", add_bos=False)
    assert [tok.piece(i) for i in ids] == [" fu", "hrer"]
    assert tok.piece(101) == "[CLS]"


def test_pieces_match_llama_cpp_token_to_piece(shared_fixtures):
    arch = shared_fixtures / "llama-cpp-arch"
    record = json.loads((arch / "tokenization.json").read_text(encoding="utf-8")) \
        if (arch / "tokenization.json").is_file() else pytest.skip("llama-cpp-arch absent")
    name, case = next(iter(record["files"].items()))
    tok = load(_open(arch / name))
    assert [tok.piece(i) for i in case["tokens"]] == case["pieces"]
    assert tok.label(case["tokens"][2]) == '" world"'          # not 'Ġworld'


def test_rwkv_cpp_byte_pieces(shared_fixtures):
    tok = load(_open(shared_fixtures / "rwkv" / "tiny-rwkv-4v0-660K-FP32.bin"))
    assert tok.label(ord("A")) == '"A"' and tok.label(10) == '"\\n"' and tok.label(0xE2) == '"\\xe2"'


def test_escape_label():
    assert escape_label("a\x1b[31mb") == "a\\x1b[31mb"
    assert escape_label('q"\\') == 'q\\"\\\\'
    assert escape_label("\u202e") == "\\u202e"                 # bidi override
    assert escape_label(b"\xe2\x96") == "\\xe2\\x96"             # incomplete UTF-8
    assert escape_label("é 🦙") == "é 🦙"


def test_legacy_tiny_unigram_vocab(shared_fixtures):
    """llama-legacy/MANIFEST.md: the llama-tiny prompt ids are BOS + SentencePiece's own
    encoding of "hello world" ([1, 3, 22, 6, 4, 4, 10, 3, 24, 20, 4, 12]); id 3 is "▁",
    stored as a plain space."""
    tok = load(_open(shared_fixtures / "llama-legacy" / "llama-tiny-ggjt-v1-f16.bin"))
    assert tok.encode("hello world") == [1, 3, 22, 6, 4, 4, 10, 3, 24, 20, 4, 12]
