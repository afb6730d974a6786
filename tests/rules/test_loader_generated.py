"""The generated loader table is what tools/gen_llama_arch.py makes from the pinned source,
and the engine runs it for architectures the hand-checked table does not hold.

The source is the llama.cpp vendored in llama-cpp-python 0.3.36: set LLAMA_CPP_SOURCE to its
directory (vendor/llama.cpp of the unpacked sdist); the slow variant downloads the sdist.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ggscope.facts import llama_arch as gen
from tools import gen_llama_arch, llama_arch_calls

CHECKED_IN = Path(gen_llama_arch.OUT)


def _source() -> Path:
    d = os.environ.get("LLAMA_CPP_SOURCE")
    if not d or not (Path(d) / "src" / "llama-arch.cpp").exists():
        pytest.skip("LLAMA_CPP_SOURCE does not name the pinned llama.cpp source (vendor/llama.cpp of "
                    "llama-cpp-python 0.3.36's sdist)")
    return Path(d)


def test_checked_in_table_is_what_the_script_makes():
    assert gen_llama_arch.generate(_source()) == CHECKED_IN.read_text()


@pytest.mark.slow
def test_checked_in_table_is_what_the_script_makes_from_the_sdist(tmp_path):
    try:
        root = gen_llama_arch.sdist_dir(tmp_path)
    except Exception as e:  # noqa: BLE001 - no network: nothing to compare with
        pytest.skip(f"pip download {gen_llama_arch.PINNED_PACKAGE} failed: {e}")
    assert gen_llama_arch.generate(root) == CHECKED_IN.read_text()


def test_every_architecture_with_a_model_class_is_in_the_table():
    # llama_model_mapping has a class for all but gptj (and the "(unknown)" placeholder)
    assert set(gen.ARCH_NAMES.values()) - set(gen.ARCHS) == {"gptj", "(unknown)"}
    assert len(gen.ARCHS) >= 150


def test_the_walker_sees_loops_conditions_and_flags():
    body = gen_llama_arch.strip_comments('''
        tok = create_tensor(tn(LLM_TENSOR_TOKEN_EMBD, "weight"), {n_embd, n_vocab}, 0);
        for (int i = 0; i < n_layer; ++i) {
            if (hparams.is_swa(i)) layer.a = create_tensor(tn(LLM_TENSOR_ATTN_NORM, "weight", i), {n_embd}, 0);
            layer.b = create_tensor(tn(LLM_TENSOR_FFN_NORM, "bias", i), {n_embd / 2}, TENSOR_NOT_REQUIRED);
        }
        // create_tensor(tn(LLM_TENSOR_OUTPUT, "weight"), {1}, 0);
        output = create_tensor(tn(LLM_TENSOR_OUTPUT, "weight"), {n_embd, n_vocab}, TENSOR_DUPLICATED);
    ''')
    names = {"LLM_TENSOR_TOKEN_EMBD": "token_embd", "LLM_TENSOR_ATTN_NORM": "blk.%d.attn_norm",
             "LLM_TENSOR_FFN_NORM": "blk.%d.ffn_norm", "LLM_TENSOR_OUTPUT": "output"}
    rows, dynamic, _ = llama_arch_calls.tensor_rows(body, names)
    assert not dynamic
    got = {(r[0], r[1]): (r[2], r[3], r[5], bool(r[6])) for r in rows}
    assert got == {("TOKEN_EMBD", "weight"): (("n_embd", "n_vocab"), True, None, False),
                   ("ATTN_NORM", "weight"): (("n_embd",), True, "n_layer", True),
                   ("FFN_NORM", "bias"): (("n_embd // 2",), False, "n_layer", False)}
