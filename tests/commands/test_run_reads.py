"""``ggscope run --tokens`` reads of the vocabulary the candidates it prints, counted.

Issue 28 item 5: the whole ``run`` must cost about its forward pass, yet on Gemma 3 the
tokenizer turned all 262,144 pieces into Python strings (and, for a prompt, a dict: 0.17
s) to print five candidates.  Counted here, not timed, on the TinyLlama fixture (a
runnable model): ``--tokens`` reads each printed candidate's piece and nothing else - no
whole-array decode (``StringArray.tolist``), no encoder.  What ``--prompt`` reads is
counted in tests/model/test_vocab.py on a real 32,000-piece SentencePiece vocabulary.
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

import ggscope
from ggscope.cli import main
from ggscope.ksy.strings import StringArray
from ggscope.model import tokenizer
from tests.conftest import REPO

TINYLLAMA = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


@pytest.fixture
def reads(monkeypatch):
    """Counts: whole-array decodes, single pieces read, encoders built."""
    if not TINYLLAMA.exists():
        pytest.skip(f"{TINYLLAMA} missing: run fixtures/make_fixtures.py")
    seen: Counter = Counter()
    n_vocab = len(ggscope.open(str(TINYLLAMA)).metadata["tokenizer.ggml.tokens"])

    def counted(name, real, vocab_only=False):
        def wrapper(*a, **k):
            if not vocab_only or len(a[0]) == n_vocab:     # the vocabulary, not the tensor names
                seen[name] += 1
            return real(*a, **k)
        return wrapper
    monkeypatch.setattr(StringArray, "tolist", counted("tolist", StringArray.tolist, True))
    monkeypatch.setattr(StringArray, "raw", counted("piece", StringArray.raw, True))
    for build in ("_build_llama", "_build_gpt2", "_build_bert"):
        monkeypatch.setattr(tokenizer, build, counted("encoder", getattr(tokenizer, build)))
    return seen


def test_tokens_reads_only_the_candidates_pieces(reads, capsys):
    assert main(["run", str(TINYLLAMA), "--tokens", "317,72,101", "--top-k", "5", "--json"]) == 0
    top = json.loads(capsys.readouterr().out)["top"]
    assert len(top) == 5 and all(isinstance(t["token"], str) for t in top)
    assert reads["tolist"] == 0 and reads["encoder"] == 0
    assert reads["piece"] <= 5                 # one read a candidate


def test_tokens_text_output_reads_each_candidate_at_most_twice(reads, capsys):
    assert main(["run", str(TINYLLAMA), "--tokens", "317,72,101", "--top-k", "5"]) == 0
    assert "rank" in capsys.readouterr().out
    assert reads["tolist"] == 0 and reads["encoder"] == 0
    assert reads["piece"] <= 10                # the JSON text and the escaped label


def test_prompt_builds_one_encoder(reads, capsys):
    assert main(["run", str(TINYLLAMA), "--prompt", "Hello", "--top-k", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"][0] == 317        # BOS
    assert reads["encoder"] == 1


def test_candidates_come_from_a_partition_not_a_sort_of_the_vocabulary(reads, capsys, monkeypatch):
    import numpy as np
    sorted_sizes = []
    real = np.argsort
    monkeypatch.setattr(np, "argsort", lambda a, *x, **k: (sorted_sizes.append(np.size(a)), real(a, *x, **k))[1])
    assert main(["run", str(TINYLLAMA), "--tokens", "317,72,101", "--top-k", "5", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["top"]) == 5
    assert sorted_sizes and max(sorted_sizes) <= 5


@pytest.mark.parametrize("k", [0, 1, 3, 7, 40, 41, 50])
def test_top_ids_is_a_stable_sort_of_the_logits(k):
    """Ties by id, NaN last, +-inf in place: as ``argsort(-logits, kind="stable")[:k]``."""
    import numpy as np
    from ggscope.commands.run import top_ids
    rng = np.random.default_rng(k)
    x = rng.integers(-3, 4, size=41).astype(np.float32)              # many ties
    x[[2, 9]] = np.nan
    x[[5, 30]] = np.inf
    x[11] = -np.inf
    want = np.argsort(-np.nan_to_num(x, nan=-np.inf), kind="stable")[:k]
    assert top_ids(x, k).tolist() == want.tolist()
