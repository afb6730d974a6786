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


def test_hybrid_memory_with_an_indexer_cache_is_refused_not_guessed():
    # llama_memory_hybrid_idx / llama_kv_cache_dsv4 (src/llama-model.cpp create_memory)
    for arch in ("glm5-next", "deepseek4", "qwen4exp"):
        with pytest.raises(ValueError, match="not modelled"):
            read(_meta(arch))


_SSM = {"ssm.conv_kernel": 4, "ssm.inner_size": 128, "ssm.state_size": 16, "ssm.group_count": 2}


def test_hybrid_recurrent_layers_are_those_without_kv_heads():
    # src/models/jamba.cpp, granite-hybrid.cpp, plamo2.cpp: is_recr = n_head_kv(il) == 0
    hp = read(_meta("granitehybrid", **_SSM, **{"attention.head_count_kv": [0, 0, 0, 2] * 3}))
    assert hp.recr == (True, True, True, False) * 3
    assert hp.attn == (False, False, False, True) * 3
    # n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group * d_state), n_embd_s = d_state * d_inner
    assert (hp.n_embd_r, hp.n_embd_s) == (3 * (128 + 2 * 2 * 16), 16 * 128)


def test_falcon_h1_caches_both_in_every_layer():
    hp = read(_meta("falcon-h1", **_SSM))
    assert hp.recr == (True,) * 12 and hp.attn == (True,) * 12


def test_nemotron_h_mlp_layers_hold_neither():
    kv = [0, 2, 0, 0] * 3
    ff = [0, 0, 96, 0] * 3
    hp = read(_meta("nemotron_h", **_SSM, **{"attention.head_count_kv": kv, "feed_forward_length": ff}))
    assert hp.recr == (True, False, False, True) * 3
    assert hp.attn == (False, True, False, False) * 3


def test_qwen3next_every_fourth_layer_attends_and_mtp_layers_hold_nothing():
    hp = read(_meta("qwen3next", **_SSM, **{"nextn_predict_layers": 1}))
    assert hp.recr == (True, True, True, False) * 2 + (True, True, True, False)[:3] + (False,)
    assert hp.attn == (False, False, False, True) * 2 + (False, False, False, False)
    hp = read(_meta("qwen35", **_SSM, **{"full_attention_interval": 3}))
    assert hp.attn == (False, False, True) * 4
    hp = read(_meta("minimax-01", **{"attention.recurrent_layers": [True, False] * 6}))
    assert hp.recr == (True, False) * 6
    # lightning attention: n_embd_s = head_k^2 * n_head, no convolution rows
    assert (hp.n_embd_r, hp.n_embd_s) == (0, 16 * 16 * 4)


def test_lfm2_short_convolution_state_and_window():
    hp = read(_meta("lfm2", **{"shortconv.l_cache": 3, "attention.head_count_kv": [0, 2] * 6,
                               "attention.sliding_window": 128}))
    # n_embd_r = n_embd * (l_cache - 1); no scan state; the window on every attention layer
    assert (hp.n_embd_r, hp.n_embd_s) == (64 * 2, 0)
    assert hp.is_swa == (False, True) * 6 and hp.n_swa == 128


def test_kda_state_rows():
    # src/llama-hparams.cpp: 3 * (d_conv - 1) * n_head * head_dim and head_dim^2 * n_head
    hp = read(_meta("kimi-linear", **{"kda.head_dim": 8, "ssm.conv_kernel": 4, "attention.head_count_kv": [0, 4] * 6}))
    assert (hp.n_embd_r, hp.n_embd_s) == (3 * 3 * 4 * 8, 8 * 8 * 4)


@pytest.mark.parametrize("bad", [{"attention.recurrent_layers": [True] * 3}, {"full_attention_interval": 0},
                                 {"nextn_predict_layers": 13}])
def test_hostile_hybrid_headers_are_one_sentence(bad):
    with pytest.raises(ValueError):
        read(_meta("qwen3next", **_SSM, **bad))
