"""Tokenizer construction is linear in the vocabulary's bytes, and only what is used is built.

The cases of issue 23: ``run`` on a 2.6 MB GGUF whose SentencePiece vocabulary is a chain
of prefixes took 119 s and 5.9 GB (the derived merge table held every split of every
piece: n^2/2 merges for n pieces); one 320 KB piece cost 86-151 s (every split of it
sliced: quadratic in its length).  llama.cpp's SPM tokenizer needs no merge table
(src/llama-vocab.cpp ``llm_tokenizer_spm_session``), and neither does ggscope's now.

Work is counted (tests/work_budget.py), not timed; the long piece, whose old cost was
in copying bytes rather than in calls, runs in a child under RLIMIT_CPU and RLIMIT_AS.
The ids are llama.cpp's: its SPM algorithm merges the highest-scoring adjacent pair.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys

import ggscope
from ggscope.model.tokenizer import load
from gguf_writers import KV, GArray, V, write_gguf_py
from tests.conftest import REPO
from work_budget import call_budget


def spm_file(path, tokens, scores=None, types=None):
    n = len(tokens)
    return write_gguf_py(path, kvs=[
        KV("tokenizer.ggml.model", V.STRING, "llama"),
        KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, tuple(tokens))),
        KV("tokenizer.ggml.scores", V.ARRAY, GArray(V.FLOAT32, tuple(scores or [0.0] * n))),
        KV("tokenizer.ggml.token_type", V.ARRAY, GArray(V.INT32, tuple(types or [1] * n))),
        KV("tokenizer.ggml.add_bos_token", V.BOOL, False),
    ])


BYTES = [f"<0x{b:02X}>" for b in range(256)]


CHAIN = ["\u2581"] + ["a" * k for k in range(1, 2001)]       # "▁", "a", "aa", ... (2 MB)


def test_chain_of_prefixes_is_linear(tmp_path):
    """Every split of "a"*k into two pieces is a piece: the old merge table had 2 million
    entries (n^2/2 for n pieces).  Longer pieces score higher here, so llama.cpp merges
    each run of a's into one piece."""
    p = spm_file(tmp_path / "chain.gguf", BYTES + CHAIN,
                 scores=[0.0] * 256 + [0.0] + [float(k) for k in range(1, 2001)],
                 types=[6] * 256 + [1] * len(CHAIN))
    mf = ggscope.open(p)
    with call_budget(60_000):
        tok = load(mf)
        ids = tok.encode("aaa aaaaa")
    assert ids == [256, 256 + 3, 256, 256 + 5]                # ▁ aaa ▁ aaaaa
    assert tok.decode(ids) == "aaa aaaaa"


def test_listing_candidates_builds_no_encoder(tmp_path):
    """``run --tokens`` only shows candidates' text, which the vocabulary array holds."""
    p = spm_file(tmp_path / "chain.gguf", BYTES + CHAIN, types=[6] * 256 + [1] * len(CHAIN))
    mf = ggscope.open(p)
    with call_budget(1_000):                  # 2,257 pieces: not one call per piece
        tok = load(mf)
        labels = [tok.label(i) for i in (0x41, 256, 256 + 4)]
    assert labels == ['"A"', '" "', '"aaaa"']


def test_highest_score_pair_merges_first(tmp_path):
    """llm_tokenizer_spm_session: "abc" with score(ab) > score(bc) gives ab + c; equal
    scores merge the leftmost pair; a character no piece covers falls back to bytes."""
    base = ["\u2581", "a", "b", "c"]
    p = spm_file(tmp_path / "s.gguf", BYTES + base + ["ab", "bc", "\u2581ab"],
                 scores=[0.0] * 256 + [0, 0, 0, 0, 2.0, 1.0, -1.0], types=[6] * 256 + [1] * 7)
    tok = load(ggscope.open(p))
    assert tok.encode("abc") == [256 + 6, 256 + 3]          # "▁ab" (from ▁ + ab), "c"
    p2 = spm_file(tmp_path / "t.gguf", BYTES + base + ["ab", "bc"],
                  scores=[0.0] * 256 + [0, 0, 0, 0, 1.0, 1.0], types=[6] * 256 + [1] * 6)
    tok2 = load(ggscope.open(p2))
    assert tok2.encode("abc") == [256, 256 + 4, 256 + 3]     # "▁", "ab" (leftmost), "c"
    assert tok2.encode("é") == [256, 0xC3, 0xA9]             # bytes of a character not in the vocab


def test_user_defined_pieces_are_cut_out_first(tmp_path):
    """tokenizer_st_partition: a user-defined piece (type 4) is one token wherever it
    occurs, and the text after it gets its own leading space."""
    toks = BYTES + ["\u2581", "a", "b", "<x>"]
    p = spm_file(tmp_path / "u.gguf", toks, types=[6] * 256 + [1, 1, 1, 4])
    tok = load(ggscope.open(p))
    assert tok.encode("a<x>b") == [256, 257, 259, 256, 258]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (30, 30))
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_one_long_piece_is_linear(tmp_path):
    """A 1 MiB piece (the issue's 320 KB one cost 86-151 s): load, encode and list it in a
    child limited to 30 s of CPU and 1 GiB; before, every split of it was sliced."""
    long_piece = "\u2581" + "b" * (1 << 20)
    p = spm_file(tmp_path / "long.gguf", BYTES + ["\u2581", "b", long_piece], types=[6] * 256 + [1] * 3)
    code = ("import sys, ggscope; from ggscope.model.tokenizer import load; "
            "t = load(ggscope.open(sys.argv[1])); "
            "print(t.encode('bb'), len(t.piece(258)))")
    proc = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), preexec_fn=_limited, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("]")[0] == "[256, 257, 257" and proc.stdout.split()[-1] == str((1 << 20) + 1)


def test_probing_vocabularies_match_llama_cpp(tmp_path):
    """Oracle: llama.cpp's ids for the corner cases of its SPM algorithm (equal scores,
    byte fallback, user-defined pieces, phi-3's rstrip, no space prefix, a chain of
    prefixes), recorded by fixtures/spm_oracle.py in fixtures/spm-oracle.json."""
    import json
    import sys
    sys.path.insert(0, str(REPO / "fixtures"))
    import spm_oracle
    record = json.loads((REPO / "fixtures" / "spm-oracle.json").read_text(encoding="utf-8"))
    assert record["texts"] == spm_oracle.TEXTS
    bad = []
    for name, v in spm_oracle.vocabularies().items():
        tok = load(ggscope.open(spm_oracle.write(tmp_path / f"{name}.gguf", v)))
        for text, want in zip(record["texts"], record["ids"][name]):
            if (got := tok.encode(text, add_bos=False)) != want:
                bad.append((name, text, want, got))
    assert not bad, f"{len(bad)} differ from llama.cpp, first: {bad[0]}"
