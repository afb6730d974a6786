"""``sources.in_vocabulary``: a template's markers that are special tokens are answered
from the special tokens' texts (once per file); only the others are compared with the
vocabulary's strings (``vocab_bytes.is_token``) - with the same answers."""
from __future__ import annotations

import pytest

import ggscope
from ggscope.rules import vocab_bytes
from ggscope.rules.templates import sources


@pytest.fixture
def phi3(shared_fixtures):
    path = shared_fixtures / "llama-vocab" / "ggml-vocab-phi-3.gguf"
    if not path.exists():
        pytest.skip(f"{path.name} not in the shared fixtures (../shared/fixtures/llama-vocab)")
    mf = ggscope.open(str(path))
    yield mf
    mf.close()


def _counting(monkeypatch) -> list:
    asked: list = []
    real = vocab_bytes.is_token

    def counted(strings, needles):
        asked.extend(needles)
        return real(strings, needles)
    monkeypatch.setattr(vocab_bytes, "is_token", counted)
    return asked


def test_special_markers_are_not_searched_in_the_vocabulary(phi3, monkeypatch):
    asked = _counting(monkeypatch)
    tokens = phi3.metadata["tokenizer.ggml.tokens"]
    special = [t for t in sources.special_tokens(phi3)[1] if t][:5]
    assert special, "phi-3's vocabulary has special tokens"
    got = sources.in_vocabulary(phi3, special)
    assert got == {t: True for t in special}
    assert asked == []                        # every one answered from the special tokens
    # a plain token and a text that is no token still go to the byte comparison
    plain = tokens[1000]
    got = sources.in_vocabulary(phi3, [special[0], plain, "<|no such marker|>"])
    assert got == {special[0]: True, plain: True, "<|no such marker|>": False}
    assert asked == [plain.encode("utf-8", "surrogateescape"), b"<|no such marker|>"]


def test_answers_match_the_byte_comparison(phi3):
    tokens = phi3.metadata["tokenizer.ggml.tokens"]
    texts = list(dict.fromkeys([*sources.special_tokens(phi3)[1][:20], tokens[5], tokens[31000],
                                "<|im_start|>", "<|end|>", "<|user|>", "", "\ufffd"]))
    want = dict(zip(texts, vocab_bytes.is_token(tokens, [t.encode("utf-8", "surrogateescape") for t in texts])))
    assert sources.in_vocabulary(phi3, texts) == want
