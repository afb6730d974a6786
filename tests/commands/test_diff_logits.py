"""``ggscope diff A B --logits TEXT`` in-process: JSON shape, the KL against two
separate ``ggscope run --json`` passes, exit codes, unsupported architectures."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ggscope.cli import main
from gguf_writers import T, TensorSpec, write_gguf_py
from tests.conftest import REPO

Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
Q4 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
BIT1 = REPO / "ggscope" / "examples" / "tiny-2L-64d.bit1"
PROMPT = "The capital of France is"


@pytest.fixture
def pair():
    if not (Q8.exists() and Q4.exists()):
        pytest.skip("TinyLlama fixtures missing: run fixtures/make_fixtures.py")
    return str(Q8), str(Q4)


def _run_logits(capsys, path, ids) -> np.ndarray:
    assert main(["run", path, "--tokens", ",".join(map(str, ids)), "--json"]) == 0
    return np.array(json.loads(capsys.readouterr().out)["logits"], np.float64)


def test_json_logits_object_matches_two_run_passes(pair, capsys):
    assert main(["diff", "--json", *pair, "--logits", PROMPT]) == 1
    doc = json.loads(capsys.readouterr().out)
    lg = doc["logits"]
    assert {"tokens", "kl_mean", "kl_max", "top1_agreement", "positions", "notes", "n_vocab"} <= set(lg)
    assert lg["architecture_a"] == lg["architecture_b"] == "llama" and lg["n_vocab"] == 320
    assert len(lg["positions"]) == len(lg["tokens"]) and lg["tokens"][0] == 317     # BOS first
    assert doc["tensors"], "--logits alone still runs the tensor comparison"
    # independent: the last position's KL from two separate `ggscope run --json` passes
    la = _run_logits(capsys, pair[0], lg["tokens"])
    lb = _run_logits(capsys, pair[1], lg["tokens"])
    p = np.exp(la - la.max()); p /= p.sum()
    q = np.exp(lb - lb.max()); q /= q.sum()
    last = lg["positions"][-1]
    assert last["kl"] == pytest.approx(float(np.sum(p * np.log(p / q))), rel=1e-3, abs=1e-6)
    assert (last["top1_a"], last["top1_b"]) == (int(la.argmax()), int(lb.argmax()))
    kls = [x["kl"] for x in lg["positions"]]
    assert lg["kl_mean"] == pytest.approx(np.mean(kls)) and lg["kl_max"] == max(kls)
    agree = np.mean([x["top1_a"] == x["top1_b"] for x in lg["positions"]])
    assert lg["top1_agreement"] == pytest.approx(agree)


def test_same_file_exit_0_and_metadata_only(pair, capsys):
    assert main(["diff", "--json", "--metadata-only", pair[0], pair[0], "--logits-tokens", "317,72,101"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tensors"] == [] and doc["logits"]["tokens"] == [317, 72, 101]
    assert doc["logits"]["kl_max"] == 0.0 and doc["logits"]["top1_agreement"] == 1.0


def test_plain_and_rich_text(pair, capsys):
    assert main(["diff", "--metadata-only", "--color", "never", *pair, "--logits-tokens", "317 72"]) == 1
    out = capsys.readouterr().out
    assert "KL(A‖B)" in out and "top-1 agreement" in out and "logits over 2 positions" in out
    assert main(["diff", "--metadata-only", "--color", "always", *pair, "--logits-tokens", "317"]) == 1
    assert "next-token distributions" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["bit1", "jamba"])
def test_unsupported_architecture_exit_2_names_supported(kind, tmp_path, capsys):
    if kind == "bit1":
        if not BIT1.exists():
            pytest.skip(f"{BIT1} missing")
        path = str(BIT1)
    else:
        path = str(write_gguf_py(tmp_path / "m.gguf", arch="jamba",
                                 tensors=[TensorSpec("token_embd.weight", T.F32, np.ones((4, 8), np.float32))]))
    # bit1 has no vocabulary: the architecture is still what is reported, not the tokenizer
    opt = ["--logits", "hi"] if kind == "bit1" else ["--logits-tokens", "1"]
    assert main(["diff", path, path, *opt]) == 2
    err = capsys.readouterr().err
    assert "no reference forward pass" in err and "supported:" in err and "llama" in err and "rwkv4" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_bad_token_ids_exit_2(pair, capsys):
    assert main(["diff", *pair, "--logits-tokens", "1,x"]) == 2
    assert "--logits-tokens wants integers" in capsys.readouterr().err
    assert main(["diff", *pair, "--logits-tokens", "99999"]) == 2
    assert "outside the vocabulary" in capsys.readouterr().err


def test_positions_show_token_text(shared_fixtures, capsys):
    arch = shared_fixtures / "llama-cpp-arch"
    a, b = arch / "Tiny-RWKV6-627K-v1.0-F32.gguf", arch / "Tiny-RWKV6-627K-v1.0-Q8_0.gguf"
    if not a.is_file():
        pytest.skip("llama-cpp-arch fixtures absent")
    argv = ["diff", "--metadata-only", str(a), str(b), "--logits", "Hello world, this is a test."]
    assert main([*argv, "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert '288 " world"' in out and '317 "<|bos|>"' in out and "Ġ" not in out
    assert main([*argv, "--json"]) == 1
    pos = json.loads(capsys.readouterr().out)["logits"]["positions"]
    assert [p["token_text"] for p in pos][:3] == ["<|bos|>", "Hello", " world"]
