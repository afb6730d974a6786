"""Mamba, RWKV6 and RWKV7 GGUF files against the logits the real llama.cpp computed.

Oracle: ../shared/fixtures/llama-cpp-arch (MANIFEST.md there).  Each tiny random-weight
model was run by llama.cpp (llama-cpp-python 0.3.36) on the fixed token sequence
(``fixtures.json`` ``tokens_seq``) and on the test sentence as llama.cpp tokenized it
(``tokenization.json``); row i of a logits file is the prediction after token i.
The recurrent models have no KV cache, so the default and the ``f32kv`` logits are the
same and the MANIFEST's tolerances for them are 1e-5, for Q8_0 files too once the
activations are rounded to Q8_0 before each product as llama.cpp's CPU backend does
(ggscope's default arithmetic; measured: 1.2e-7).  The exact mode -- the weights
simply dequantized -- is what the MANIFEST allows 5e-2 for, and it must be further
than 1e-5 from llama.cpp (else the tolerance would not tell the two apart).  Every
position must have llama.cpp's argmax.

``test_tokenizer_matches_llama_cpp`` covers every file of the folder (transformers
too): ggscope's tokenizer must give llama.cpp's ids for the sentence, and each id
must read back as llama.cpp's piece.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.forward import architecture, module_for
from ggscope.model.tokenizer import load as load_tokenizer

ARCH = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "llama-cpp-arch"
TOLERANCE = {"F32": 1e-5, "Q8_0": 1e-5}     # MANIFEST.md "Suggested tolerances", Q8_0 rounded
EXACT_Q8_0 = 5e-2                            # the dequantized model (--exact) on Q8_0 files
MODELS = {"mamba": "Tiny-Mamba-106K", "rwkv6": "Tiny-RWKV6-627K", "rwkv7": "Tiny-RWKV7-558K"}
CASES = [(arch, enc) for arch in MODELS for enc in ("F32", "Q8_0")]


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"shared fixture not found: {path.resolve()}")
    return path


def _json(name: str) -> dict:
    return json.loads(_need(ARCH / name).read_text(encoding="utf-8"))


def _per_position(model, tokens: list[int], exact: bool = False) -> np.ndarray:
    """The logits after each token: the recurrent state carried one token at a time."""
    module = module_for(model)
    weights = module.load(model, exact=exact)
    rows, state = [], None
    for t in tokens:
        logits, state = module.forward(weights, [t], state)
        rows.append(logits)
    return np.stack(rows)


def _sequences(stem: str) -> list[tuple[str, list[int], Path]]:
    fixed = _json("fixtures.json")["tokens_seq"]
    text = _json("tokenization.json")["files"][f"{stem}.gguf"]["tokens"]
    return [("fixed", fixed, ARCH / f"logits-{stem}.npy"),
            ("fixed f32kv", fixed, ARCH / "extra" / f"logits-f32kv-{stem}.npy"),
            ("text", text, ARCH / "extra" / f"logits-text-{stem}.npy"),
            ("text f32kv", text, ARCH / "extra" / f"logits-text-f32kv-{stem}.npy")]


@pytest.mark.parametrize("arch, enc", CASES, ids=[f"{a}-{e}" for a, e in CASES])
def test_logits_match_llama_cpp(arch, enc, capsys):
    stem = f"{MODELS[arch]}-v1.0-{enc}"
    model = ggscope.open(str(_need(ARCH / f"{stem}.gguf")))
    assert architecture(model) == arch
    for what, tokens, oracle in _sequences(stem):
        want = np.load(_need(oracle))
        got = _per_position(model, tokens)
        assert got.shape == want.shape
        delta = float(np.abs(got - want).max())
        with capsys.disabled():
            print(f"\n{stem} {what}: max |logit diff| {delta:.3g} vs llama.cpp")
        assert delta <= TOLERANCE[enc], f"{what}: max |diff| {delta} > {TOLERANCE[enc]}"
        assert (got.argmax(axis=1) == want.argmax(axis=1)).all(), f"{what}: argmax differs"


@pytest.mark.parametrize("arch", list(MODELS))
def test_exact_mode_is_the_dequantized_model(arch):
    """--exact on a Q8_0 file: no activation rounding, so farther from llama.cpp than the
    default's tolerance but within the MANIFEST's figure for dequantized weights."""
    stem = f"{MODELS[arch]}-v1.0-Q8_0"
    model = ggscope.open(str(_need(ARCH / f"{stem}.gguf")))
    tokens = _json("fixtures.json")["tokens_seq"]
    want = np.load(_need(ARCH / f"logits-{stem}.npy"))
    delta = float(np.abs(_per_position(model, tokens, exact=True) - want).max())
    assert TOLERANCE["Q8_0"] * 10 < delta <= EXACT_Q8_0


def test_wrong_recurrence_is_caught():
    """The tolerance tells a mistake apart: Mamba without its D skip term fails it."""
    from ggscope.forward import mamba
    stem = f"{MODELS['mamba']}-v1.0-F32"
    model = ggscope.open(str(_need(ARCH / f"{stem}.gguf")))
    weights = mamba.load(model)
    broken = mamba.Weights(weights.config, weights.embed,
                           tuple(type(L)(**{**L.__dict__, "D": np.zeros_like(L.D)})
                                 for L in weights.layers), weights.norm, weights.output)
    tokens = _json("fixtures.json")["tokens_seq"]
    rows, state = [], None
    for t in tokens:
        logits, state = mamba.forward(broken, [t], state)
        rows.append(logits)
    want = np.load(_need(ARCH / f"logits-{stem}.npy"))
    assert np.abs(np.stack(rows) - want).max() > 100 * TOLERANCE["F32"]


def _files() -> list[str]:
    if not ARCH.is_dir():
        return []
    return sorted(p.name for p in ARCH.glob("*.gguf"))


@pytest.mark.parametrize("name", _files() or ["(fixtures absent)"])
def test_tokenizer_matches_llama_cpp(name):
    record = _json("tokenization.json")
    case = record["files"].get(name)
    if case is None:
        pytest.skip(f"{name}: no tokenization recorded")
    tok = load_tokenizer(ggscope.open(str(_need(ARCH / name))))
    assert tok.encode(record["text"], add_bos=record["add_bos"]) == case["tokens"]
    assert [tok.piece(i) for i in case["tokens"]] == case["pieces"]


@pytest.mark.parametrize("arch, needle", [
    ("mamba", "mamba.embedding_length"),
    ("rwkv6", "rwkv6.embedding_length"),
    ("rwkv7", "rwkv7.embedding_length"),
])
def test_missing_hyperparameters_are_one_line_errors(arch, needle, tmp_path):
    """A GGUF file naming the architecture but lacking its keys: a WeightError naming
    the key, never a traceback from numpy."""
    from ggscope.core.errors import GGScopeError
    from ggscope.forward import run
    from gguf_writers import T, TensorSpec, write_gguf_py
    path = write_gguf_py(tmp_path / "m.gguf", arch=arch, tensors=[
        TensorSpec("token_embd.weight", T.F32, np.ones((4, 8), np.float32)),
        TensorSpec("blk.0.channel_mix_key.weight", T.F32, np.ones((16, 8), np.float32))])
    with pytest.raises(GGScopeError, match=needle):
        run(ggscope.open(str(path)), [1])
