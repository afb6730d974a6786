"""ggscope's loader verdict against the real llama.cpp loader on the generated corpus.

tools/loader_corpus.py writes tiny models of every architecture it can fill from the
generated table, plus variants changed in one way each, and recorded what llama-cpp-python
0.3.36 (on its vendored llama.cpp) did with each file: fixtures/llama_loader_verdicts.json.
The files are regenerated here (deterministic) and each gets ``validate``'s verdict:
an error-level loader finding exactly when llama.cpp refused or crashed, naming the cause
llama.cpp printed (``CAUSES``).  Adapters are judged against the base model they were
applied to (``validate --base``).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from ggscope.rules import by_code
from ggscope.validate.runner import validate_file
from tools import loader_corpus

VERDICTS = loader_corpus.VERDICTS

# llama.cpp's error line -> the rules that name that cause
CAUSES = [
    (r"wrong number of tensors|too many tensors", {"GG1109"}),
    (r"has wrong shape", {"GG1108"}),
    (r"tensor '.*' not found|missing tensor", {"GG1107"}),
    (r"key not found in model", {"GG1103"}),
    (r"has wrong type|wrong array length", {"GG1104", "GG1105"}),
    (r"GGML_ASSERT|invalid n_rot|n_expert|model needs|requires|cannot have", {"GG1105", "GG1111"}),
    (r"pre-tokenizer|tokenizer|vocab", {"GG1106"}),
    (r"CLIP cannot be used as main model", {"GG1121"}),
    (r"lora|LoRA", {"GG1122"}),
    (r"unknown model architecture|unsupported model architecture", {"GG1101"}),
]


# Files llama.cpp refuses or aborts on where ggscope finds no error, each for a reason the
# generated table cannot express yet (kept here so that a new miss fails, and so does a
# miss that starts agreeing - then remove it):
KNOWN_MISSES = {
    # a GGML_ASSERT while building the graph (ggml.c or the model's graph) over values the
    # table does not derive (n_embd_r(), tensor element counts, n_slot)
    "arwkv7.base.gguf", "chameleon.base.gguf", "falcon-h1.base.gguf", "minicpm3.base.gguf", "plm.base.gguf",
    "pockettts.base.gguf", "t5encoder.base.gguf",
    # tensors created under conditions the table does not evaluate (a loop over n_phys
    # layers, is_mamba_layer from an array key, jamba's per-layer expert layout, t5's
    # decoder blocks counted by dec_n_layer)
    "hy_v3.base.gguf", "jamba.base.gguf", "nanbeige.base.gguf", "plamo2.base.gguf", "t5.base.gguf",
    # the vocabulary loader's lookup of phi3's special tokens (unordered_map::at)
    "phi3.base.gguf",
}
# both refuse, for another cause: hrm_text asserts n_layer() == n_slot (a local of
# load_arch_hparams) before the missing tensor ggscope names
OTHER_CAUSE = {"hrm_text.base.gguf"}


def _record():
    if not VERDICTS.is_file():
        pytest.skip(f"no {VERDICTS.name}: run python -m tools.loader_corpus record")
    return json.loads(VERDICTS.read_text())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loader-corpus")
    loader_corpus.write_corpus(folder)
    return folder


def _cause(reason: str) -> set[str]:
    for rx, codes in CAUSES:
        if re.search(rx, reason):
            return codes
    return set()


def judge(folder: Path, case: dict) -> tuple[bool, set[str]]:
    opts = {"base": str(folder / case["base"])} if "base" in case else None
    found = validate_file(str(folder / case["file"]), select=("loader",), options=opts)
    errors = {f.code for f in found if f.severity.value == "error" and (r := by_code(f.code)) and r.family == "loader"}
    return bool(errors), errors


def test_the_corpus_is_the_recorded_one(corpus):
    rec = _record()
    written = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in corpus.glob("*.gguf")}
    assert written == {c["file"]: c["sha256"] for c in rec["cases"]}


def test_the_corpus_covers_forty_architectures_with_a_model_that_loads():
    rec = _record()
    loads = {c["arch"] for c in rec["cases"] if c["mutation"] == "base" and c["llama_cpp"] == "loads"}
    assert len(loads) >= 40, sorted(loads)
    kinds = {c["mutation"] for c in rec["cases"]}
    assert {"missing-key", "wrong-type", "per-layer-array", "missing-required-tensor", "missing-optional-tensor",
            "wrong-shape", "bad-head-count", "unknown-pre-tokenizer", "projector-as-main", "adapter",
            "adapter-missing-half"} <= kinds


def test_validate_agrees_with_llama_cpp_on_every_file(corpus):
    rec = _record()
    disagree, misses, other = [], set(), set()
    for case in rec["cases"]:
        refused, errors = judge(corpus, case)
        if case["llama_cpp"] == "loads":
            if refused:
                disagree.append((case["file"], "loads", sorted(errors)))
        elif not refused:
            misses.add(case["file"])
            if case["file"] not in KNOWN_MISSES:
                disagree.append((case["file"], case["llama_cpp"], case["reason"], "no error"))
        elif _cause(case["reason"]) and not errors & _cause(case["reason"]):
            other.add(case["file"])
            if case["file"] not in OTHER_CAUSE:
                disagree.append((case["file"], case["reason"], "other cause", sorted(errors)))
    assert not disagree, f"{len(disagree)} of {len(rec['cases'])}: {disagree}"
    assert misses == KNOWN_MISSES and other == OTHER_CAUSE     # a fixed miss: take it off the lists
