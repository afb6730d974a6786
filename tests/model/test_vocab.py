"""The vocabulary read where it lies (ggscope.model.vocab) and the encoder built per text.

Oracles: llama.cpp's own tokenizer test vectors (../shared/fixtures/llama-vocab: the
texts of ``ggml-vocab-llama-spm.gguf.inp`` and the ids in ``.out``), and brute force:
``Vocab.near`` must hold every piece of the vocabulary that occurs in a text (also
after a space prefix), checked against all 32,000 pieces for every one of those texts.
What the encoder reads is counted (``StringArray.tolist``, ``StringArray.raw``), not timed.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import ggscope
from ggscope.ksy import strings
from ggscope.ksy.strings import StringArray
from ggscope.model.special_tokens import retype, type_reader
from ggscope.model.tokenizer import load
from ggscope.model.vocab import Vocab
from gguf_writers import KV, GArray, V, write_gguf_py
from test_tokenizer_llama_vocab import read_cases

SPACE = "\u2581"


def _spm(shared_fixtures):
    path = shared_fixtures / "llama-vocab" / "ggml-vocab-llama-spm.gguf"
    if not path.with_name(path.name + ".out").is_file():
        pytest.skip(f"shared fixture not found: {path}")
    return ggscope.open(str(path))


def test_encoding_reads_only_the_pieces_the_text_can_use(shared_fixtures, monkeypatch):
    mf = _spm(shared_fixtures)
    seen: Counter = Counter()
    for name in ("tolist", "raw"):
        real = getattr(StringArray, name)
        monkeypatch.setattr(StringArray, name, lambda self, *a, _r=real, _n=name: (seen.update([_n]), _r(self, *a))[1])
    take = StringArray.take                    # the batched read: the pieces it was asked for
    monkeypatch.setattr(StringArray, "take", lambda self, ids: (seen.update({"raw": len(ids)}), take(self, ids))[1])
    tok = load(mf)
    assert tok.encode("Hello world", add_bos=False) == [15043, 3186]       # llama.cpp's ids
    assert seen["tolist"] == 0
    assert 0 < seen["raw"] < 320               # of 32,000 pieces: those within "▁Hello▁world" and its bytes


def test_near_holds_every_piece_a_text_contains(shared_fixtures):
    pieces = [p for p in Vocab(_spm(shared_fixtures).metadata["tokenizer.ggml.tokens"]).texts() if p]
    vocab = Vocab(_spm(shared_fixtures).metadata["tokenizer.ggml.tokens"])      # left undecoded
    for text, _ in read_cases("llama-spm"):
        spaced = text.replace(" ", SPACE)
        near = vocab.near([text, spaced], [f"<0x{b:02X}>" for b in spaced.encode("utf-8", "surrogatepass")], SPACE)
        starts = [SPACE + spaced[i:] for i in range(len(spaced) + 1)]
        want = {p for p in pieces if p in text or p in spaced or any(s.startswith(p) for s in starts)}
        assert want <= near.keys(), (text, sorted(want - near.keys())[:5])
        assert all(ids == sorted(ids) for ids in near.values())


def test_find_gives_every_id_of_a_text():
    arr = _array(["a", "<s>", "a", "abcdefghij", "abcdefghik", ""])
    vocab = Vocab(arr)
    assert vocab.find(["a", "abcdefghik", "zz"]) == {"a": [0, 2], "abcdefghik": [4]}
    assert vocab.text(3) == "abcdefghij" and len(vocab) == 6


def _array(texts: list[str], tail: bytes = b"") -> StringArray:
    """A GGUF-style contiguous array (8-byte little-endian lengths), the last strings at the
    very end of the buffer."""
    raw = [t.encode("utf-8") for t in texts]
    blob = b"".join(len(r).to_bytes(8, "little") + r + tail for r in raw)
    arr = np.frombuffer(blob, dtype=np.uint8)
    return StringArray(arr, 0, np.array([len(r) for r in raw], dtype=np.uint16), 8, "utf-8", tail=len(tail))


@pytest.mark.parametrize("tail", [b"", b"\x01\x02\x03\x04"])
def test_heads_compiled_and_numpy_agree(monkeypatch, tail):
    texts = ["", "a", "ab", "abcdefgh", "abcdefghijkl", "\u2581the", "x" * 300, "", "é", "xyz"]
    want = [int.from_bytes(t.encode("utf-8")[:8], "little") for t in texts]
    got = _array(texts, tail).heads().tolist()
    monkeypatch.setattr(strings, "_cscan", None)
    assert _array(texts, tail).heads().tolist() == want == got


@pytest.mark.parametrize("name", ["phi-3", "llama-spm", "gpt-2"])
def test_type_reader_is_retype_one_token_at_a_time(shared_fixtures, name):
    path = shared_fixtures / "llama-vocab" / f"ggml-vocab-{name}.gguf"
    if not path.is_file():
        pytest.skip(f"shared fixture not found: {path}")
    meta = ggscope.open(str(path)).metadata
    vocab = Vocab(meta["tokenizer.ggml.tokens"])
    stored = [int(t) for t in meta["tokenizer.ggml.token_type"]]
    type_of = type_reader(meta, meta["tokenizer.ggml.token_type"], True, len(vocab),
                          lambda t: bool(vocab.find([t])), vocab.text)
    assert [type_of(i, t) for i, t in enumerate(vocab.texts())] == retype(meta, vocab.texts(), stored)


@pytest.mark.parametrize("meta, texts", [
    ({}, ["</s>", "<|tool_response>", "a"]),                                   # </s> becomes normal
    ({"tokenizer.ggml.eos_token_id": 1}, ["</s>", "<|plamo:eos|>"]),         # ... with plamo's EOS
    ({}, ["</s>", "<|plamo:eos|>"]),                                           # plamo's text alone: control
    ({"tokenizer.ggml.eot_token_id": 0}, ["<|eot_id|>", "<end_of_turn>"]),    # EOG texts stay control
])
def test_type_reader_special_cases(meta, texts):
    types = [4] * len(texts)
    type_of = type_reader(meta, types, True, len(texts), lambda t: t in texts, texts.__getitem__)
    assert [type_of(i, t) for i, t in enumerate(texts)] == retype(meta, texts, types)


@pytest.mark.parametrize("kvs", [
    lambda: [KV("tokenizer.ggml.scores", V.ARRAY, GArray(V.STRING, ("a",) * 5))],
    lambda: [KV("tokenizer.ggml.scores", V.FLOAT32, 1.0)],
    lambda: [KV("tokenizer.ggml.token_type", V.ARRAY, GArray(V.STRING, ("x",) * 5))],
], ids=["string-scores", "scalar-scores", "string-types"])
def test_a_vocabulary_that_is_not_numbers_is_one_error(tmp_path, kvs):
    """Scores and types are read one token at a time now; a file whose arrays are not
    numbers is still one TokenizerError naming the key, never a traceback at a read."""
    from ggscope.model.tokenizer import TokenizerError
    pieces = ("<unk>", SPACE, "h", "i", SPACE + "h")
    path = write_gguf_py(tmp_path / "v.gguf", kvs=[KV("tokenizer.ggml.model", V.STRING, "llama"),
                                                   KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, pieces)),
                                                   *kvs()])
    with pytest.raises(TokenizerError, match=r"tokenizer\.ggml\.(scores|token_type) is not an array of numbers"):
        tok = load(ggscope.open(str(path)))
        tok.encode("hi h")


def test_the_encoder_over_a_texts_pieces_is_the_encoder_over_all(shared_fixtures):
    """Exactness of reading only ``near``'s pieces: the same ids as ``SpmVocab.over`` the
    whole decoded vocabulary, on llama.cpp's test texts and on texts made to reach the
    byte fallback, lone surrogates (escaped and not) and the space prefix."""
    from ggscope.model.spm import SpmVocab
    tok = load(_spm(shared_fixtures))
    whole = SpmVocab.over({t: ids for t, ids in _by_text(tok.vocab.texts()).items()}, tok.type_of,
                          tok.engine.score_of, tok.engine.add_space_prefix, tok.engine.rstrip_user)
    texts = [t for t, _ in read_cases("llama-spm")] + [
        "", " ", "  a", "\u00e9\u4e2d\U0001f600", "a\udc80b", "a\ud800b\udd00c\udc9f", "\x00\x01 \t\n", "\u2581\u2581x"]
    bad = [(t, got, want) for t in texts if (got := tok.engine.encode(t)) != (want := whole.encode(t))]
    assert not bad, bad[:3]


def _by_text(texts):
    index: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        index.setdefault(t, []).append(i)
    return index
