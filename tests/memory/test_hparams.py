"""ggscope.memory.hparams: llama.cpp's hyperparameter derivation (src/llama-model.cpp,
src/llama-hparams.cpp), on hand-written headers including hostile ones."""
from __future__ import annotations

import pytest

from ggscope.memory.hparams import read


def _meta(arch="gemma3", **kv):
    m = {"general.architecture": arch, f"{arch}.block_count": 12, f"{arch}.embedding_length": 64,
         f"{arch}.attention.head_count": 4, "tokenizer.ggml.tokens": ["a"] * 10}
    m.update({f"{arch}.{k}": v for k, v in kv.items()})
    return m


def test_gemma3_pattern_every_sixth_layer_is_global():
    hp = read(_meta(**{"attention.sliding_window": 512}))
    # set_swa_pattern(6): il % 6 < 5 is SWA
    assert hp.is_swa == tuple(i % 6 < 5 for i in range(12))
    assert hp.n_swa == 512 and hp.head_k == 16 and hp.n_head_kv == (4,) * 12


def test_gemma3_without_window_has_no_swa_and_gemma2_defaults_to_4096():
    assert not read(_meta()).swa_any
    hp = read(_meta("gemma2"))
    assert hp.n_swa == 4096 and hp.is_swa[:4] == (True, False, True, False)


def test_pattern_array_and_per_layer_kv_heads():
    hp = read(_meta(**{"attention.sliding_window": 8, "attention.sliding_window_pattern": [True, False] * 6,
                       "attention.head_count_kv": [1, 2] * 6}))
    assert hp.is_swa == (True, False) * 6
    assert [hp.n_embd_k_gqa(i) for i in range(2)] == [16, 32]


@pytest.mark.parametrize("bad", [{"block_count": 10 ** 9}, {"attention.head_count_kv": [1, 2]},
                                 {"attention.sliding_window": 4, "attention.sliding_window_pattern": [True] * 3},
                                 {"block_count": "x"}])
def test_claims_the_header_cannot_back_are_one_sentence(bad):
    with pytest.raises(ValueError):
        read(_meta(**bad))


def test_recurrent_state_sizes():
    m = _meta("mamba", **{"ssm.conv_kernel": 4, "ssm.inner_size": 128, "ssm.state_size": 16})
    hp = read(m)
    assert (hp.n_embd_r, hp.n_embd_s) == (3 * 128, 16 * 128)
    hp = read(_meta("rwkv6", **{"wkv.head_size": 64}))
    assert (hp.n_embd_r, hp.n_embd_s) == (2 * 64, 64 * 64)


def test_shared_kv_layers_add_no_cache():
    # gemma4: n_layer_kv_from_start = n_layer - shared_kv_layers (src/models/gemma4.cpp)
    hp = read(_meta("gemma4", **{"attention.sliding_window": 512, "attention.shared_kv_layers": 4,
                                 "attention.sliding_window_pattern": [True] * 11 + [False]}))
    assert hp.kv_layers == 8
    with pytest.raises(ValueError, match="per-layer array"):
        read(_meta("gemma4", **{"attention.sliding_window": 512}))


def test_hybrid_memory_is_refused_not_guessed():
    with pytest.raises(ValueError, match="not modelled"):
        read(_meta("jamba"))
