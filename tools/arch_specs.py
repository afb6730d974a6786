"""The tiny models' architectures: per ``general.architecture`` (or a variant of one), the
keys and the tensors llama.cpp's loader asks for, with seeded random weights.

Why a module of its own: the table is the part that grows with each architecture the
forward pass learns; ``tools.arch_models`` writes any row of it.  What each row is for --
the switch of llama.cpp's src/models/<arch>.cpp it makes bite -- is in its comment.

Contract: ``SPECS[name] = {"seed", "keys", "tensors", optional "arch"}``: ``keys`` the
architecture's GGUF keys and values (float, int, str or list), ``tensors(init)`` a dict
of float32 arrays in numpy order ([n_out, n_in]) drawn from ``Init(seed)``; ``arch``
the ``general.architecture`` when ``name`` is a variant.  The weights: matrices
N(0, 0.02²) (q and k N(0, 0.1²), so the attention pattern -- and a wrong rotary pairing --
moves the logits; gemma's FFN gate and up too), norms 1 + N(0, 0.1²), biases N(0, 0.02²),
drawn in the tensors' order.
"""
from __future__ import annotations

from tools.arch_tensors import (D, E, FF, H, HKV, N_CTX, PD, PE, PFF, PH, Init, common as _common,
                                decoder as _decoder, gptoss as _gptoss, parallel as _parallel,
                                phimoe as _phimoe)
from tools.arch_tensors_moe import (DECI_LAYERS, deci as _deci, ernie45moe as _ernie45moe,
                                    glm4moe as _glm4moe, llama4 as _llama4)

__all__ = ["SPECS", "Init", "N_CTX"]


# arch -> (seed, keys(arch), tensors(init)); what each one's switch is, in its note
SPECS: dict[str, dict] = {
    # gemma.cpp: embeddings × sqrt(n_embd), q × 1/sqrt(head) after rope, GELU-gated FFN, tied
    # output (gate and up N(0, 0.1²): the activation's shape, not only its slope at 0, matters)
    "gemma": dict(seed=2001, keys=_common("gemma", 2, 10000.0, 1e-6),
                  tensors=lambda r: _decoder(r, tied=True, ffn_std=0.1)),
    # granite.cpp: embedding_scale, attention.scale, residual_scale, 1/logit_scale
    "granite": dict(seed=2002, keys=_common("granite", 2, 10000.0, **{
                        "embedding_scale": 12.0, "residual_scale": 0.22,
                        "attention.scale": 0.125, "logit_scale": 0.25}),
                    tensors=lambda r: _decoder(r)),
    # olmo2.cpp: no pre-norms, q/k RMSNorm over the full projection, post-attention/FFN norms
    "olmo2": dict(seed=2003, keys=_common("olmo2", 2, 500000.0, 1e-6),
                  tensors=lambda r: _decoder(r, prenorm=False, full_qk_norm=True, post_norms=True)),
    # qwen2moe.cpp: q/k/v biases, softmax top-2 of 4 experts (no renormalisation), a shared
    # expert weighted by sigmoid(ffn_gate_inp_shexp · h)
    "qwen2moe": dict(seed=2004, keys=_common("qwen2moe", 2, 1000000.0, 1e-6, **{
                         "expert_count": 4, "expert_used_count": 2,
                         "expert_feed_forward_length": 32,
                         "expert_shared_feed_forward_length": 64}),
                     tensors=lambda r: _decoder(r, qkv_bias=True, moe=(4, 32, 64))),
    # mistral3.cpp (text part): llama's graph, normal rotary, tied output when no output.weight
    "mistral3": dict(seed=2005, keys=_common("mistral3", 2, 1000000.0),
                     tensors=lambda r: _decoder(r, tied=True)),
    # smollm3.cpp: every 4th layer (il + 1) % 4 == 0 without rope
    "smollm3": dict(seed=2006, keys=_common("smollm3", 4, 10000.0, 1e-6),
                    tensors=lambda r: _decoder(r, layers=4, tied=True)),
    # exaone.cpp: llama's graph with NeoX rotary
    "exaone": dict(seed=2007, keys=_common("exaone", 2, 10000.0),
                   tensors=lambda r: _decoder(r)),
    # phi2.cpp: LayerNorm, fused QKV with bias, NeoX rotary on 8 of 24 dims, q pre-scaled, the
    # GELU MLP reading the attention's input (parallel residual), output with bias
    "phi2": dict(seed=2008, keys=_common("phi2", 2, 10000.0, dims=(PE, PH, PH, PD, PFF), n_rot=8,
                                         layer_norm=True),
                 tensors=lambda r: _parallel(r, hkv=PH, fused=True, qkv_bias=True, out_bias=True,
                                             gated=False, ffn_bias=True, ffn_norm=False,
                                             output_bias=True)),
    # stablelm.cpp (StableLM 2 1.6B): LayerNorm, q/k/v biases, NeoX rotary on 6 of 24 dims,
    # sequential residual with a LayerNorm before the SwiGLU FFN
    "stablelm": dict(seed=2009, keys=_common("stablelm", 2, 10000.0, dims=(PE, PH, PH, PD, PFF),
                                             n_rot=6, layer_norm=True),
                     tensors=lambda r: _parallel(r, hkv=PH, fused=False, qkv_bias=True,
                                                 out_bias=False, gated=True, ffn_bias=False,
                                                 ffn_norm=True)),
    # stablelm.cpp (StableLM 2 12B): no ffn_norm, so the FFN reads the attention's input
    # (parallel residual), and per-head q/k LayerNorms with a weight row per head; GQA 4/2
    "stablelm-12b": dict(arch="stablelm", seed=2010,
                         keys=_common("stablelm", 2, 10000.0, dims=(PE, PH, 2, PD, PFF), n_rot=6,
                                      layer_norm=True),
                         tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                     out_bias=False, gated=True, ffn_bias=False,
                                                     ffn_norm=False, head_norms=True)),
    # falcon.cpp (Falcon 7B): multi-query attention (one K/V head), fused QKV, NeoX rotary on the
    # whole head, the GELU MLP beside the attention on the same LayerNorm (parallel residual)
    "falcon": dict(seed=2011, keys=_common("falcon", 2, 10000.0, dims=(PE, PH, 1, PD, PFF),
                                           layer_norm=True),
                   tensors=lambda r: _parallel(r, hkv=1, fused=True, qkv_bias=False,
                                               out_bias=False, gated=False, ffn_bias=False,
                                               ffn_norm=False)),
    # falcon.cpp (Falcon 40B): the attention reads its own LayerNorm (attn_norm_2), GQA 4/2
    "falcon-40b": dict(arch="falcon", seed=2012,
                       keys=_common("falcon", 2, 10000.0, dims=(PE, PH, 2, PD, PFF), layer_norm=True),
                       tensors=lambda r: _parallel(r, hkv=2, fused=True, qkv_bias=False,
                                                   out_bias=False, gated=False, ffn_bias=False,
                                                   ffn_norm=False, norm_2=True)),
    # command-r.cpp (Command R, Aya): LayerNorm without bias, the SwiGLU FFN beside the attention
    # on the same norm, summed as (ffn + x) + attn; output always token_embd; logits × logit_scale
    "command-r": dict(seed=2013, keys=_common("command-r", 2, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                              layer_norm=True, logit_scale=0.0625),
                      tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                  out_bias=False, gated=True, ffn_bias=False,
                                                  ffn_norm=False, norm_bias=False, tied=True)),
    # cohere2.cpp (Command R7B, Command A): command-r with a window of 4 on layers 0-2 of each 4,
    # which alone have rope (layer 3 is global without it)
    "cohere2": dict(seed=2014, keys=_common("cohere2", 4, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                            layer_norm=True, logit_scale=0.25,
                                            **{"attention.sliding_window": 4}),
                    tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                out_bias=False, gated=True, ffn_bias=False,
                                                ffn_norm=False, norm_bias=False, tied=True,
                                                layers=4)),
    # cohere2 with the layers that slide given per layer (attention.sliding_window_pattern as
    # an array: llama.cpp's load_swa_pattern reads it before the period)
    "cohere2-pattern": dict(arch="cohere2", seed=2015,
                            keys=_common("cohere2", 4, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                         layer_norm=True, logit_scale=0.25,
                                         **{"attention.sliding_window": 3,
                                            "attention.sliding_window_pattern":
                                                [False, True, True, False]}),
                            tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                        out_bias=False, gated=True, ffn_bias=False,
                                                        ffn_norm=False, norm_bias=False, tied=True,
                                                        layers=4)),
    # granite-moe.cpp (granite.cpp's graph): granite's multipliers around softmax top-2 of 4
    # experts, renormalised, plus an ungated shared expert (GraniteMoeShared)
    "granitemoe": dict(seed=2017, keys=_common("granitemoe", 2, 10000.0, dims=(E, H, HKV, D, 32), **{
                           "embedding_scale": 12.0, "residual_scale": 0.22,
                           "attention.scale": 0.125, "logit_scale": 0.25, "expert_count": 4,
                           "expert_used_count": 2, "expert_shared_feed_forward_length": 64}),
                       tensors=lambda r: _decoder(r, moe=(4, 32, 64), shexp_gate=False)),
    # mistral3.cpp (Ministral 3): llama 4's attention temperature (q × log(floor(pos/4) + 1)·0.3
    # + 1, the floor n_ctx_orig_yarn) and YaRN with a log multiplier (mscale_all_dim) of 0.5
    "mistral3-yarn": dict(arch="mistral3", seed=2018, keys=_common("mistral3", 2, 1000000.0, **{
                              "attention.temperature_scale": 0.3, "rope.scaling.type": "yarn",
                              "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 4,
                              "rope.scaling.yarn_beta_fast": 16.0,
                              "rope.scaling.yarn_beta_slow": 2.0,
                              "rope.scaling.yarn_log_multiplier": 0.5}),
                          tensors=lambda r: _decoder(r, tied=True)),
    # qwen2vl.cpp, text only: qwen2 with M-RoPE over sections (1, 1, 1, 5) -- a text token's
    # positions are (p, p, p, 0), so the last 5 of each head's 8 rotary pairs stay still; an
    # epsilon of 1e-3 that llama.cpp's qwen2vl loader does not read (it runs with 0)
    "qwen2vl": dict(seed=2019, keys=_common("qwen2vl", 2, 10000.0, 1e-3, **{
                        "rope.dimension_sections": [1, 1, 1, 5]}),
                    tensors=lambda r: _decoder(r, qkv_bias=True)),
    # qwen3vl.cpp, text only: qwen3 (per-head q/k norms) with interleaved M-RoPE over (3, 1, 1, 3):
    # pairs 4, 5 and 7 fall to the 4th position and stay still
    "qwen3vl": dict(seed=2020, keys=_common("qwen3vl", 2, 10000.0, 1e-6, **{
                        "rope.dimension_sections": [3, 1, 1, 3]}),
                    tensors=lambda r: _decoder(r, head_qk_norm=True)),
    # qwen3vlmoe.cpp, text only: qwen3moe (softmax top-2 of 4, renormalised) with interleaved M-RoPE
    "qwen3vlmoe": dict(seed=2021, keys=_common("qwen3vlmoe", 2, 10000.0, 1e-6, **{
                           "rope.dimension_sections": [3, 1, 1, 3], "expert_count": 4,
                           "expert_used_count": 2, "expert_feed_forward_length": 32}),
                       tensors=lambda r: _decoder(r, head_qk_norm=True, moe=(4, 32, 0),
                                                  shexp_gate=False)),
    # starcoder.cpp (StarCoder / SantaCoder): gpt2's learned positions, LayerNorms and GELU MLP
    # with biases, multi-query attention through a fused QKV
    "starcoder": dict(seed=2022, keys=_common("starcoder", 2, 10000.0, dims=(PE, PH, 1, PD, PFF),
                                              layer_norm=True),
                      tensors=lambda r: {**_parallel(r, hkv=1, fused=True, qkv_bias=True,
                                                     out_bias=True, gated=False, ffn_bias=True,
                                                     ffn_norm=True),
                                         "position_embd.weight": r.w(N_CTX, PE)}),
    # internlm2.cpp and xverse.cpp: llama's graph
    "internlm2": dict(seed=2023, keys=_common("internlm2", 2, 1000000.0),
                      tensors=lambda r: _decoder(r)),
    "xverse": dict(seed=2024, keys=_common("xverse", 2, 10000.0, 1e-6),
                   tensors=lambda r: _decoder(r)),
    # orion.cpp: llama's graph with LayerNorms (weight and bias) and NeoX rotary
    "orion": dict(seed=2025, keys=_common("orion", 2, 10000.0, dims=(PE, PH, PH, PD, PFF),
                                          layer_norm=True),
                  tensors=lambda r: _parallel(r, hkv=PH, fused=False, qkv_bias=False,
                                              out_bias=False, gated=True, ffn_bias=False,
                                              ffn_norm=True)),
    # seed-oss.cpp: qwen2-like (q/k/v biases, NeoX), the FFN's norm stored as post_attention_norm
    "seed_oss": dict(seed=2026, keys=_common("seed_oss", 2, 10000.0, 1e-6),
                     tensors=lambda r: _decoder(r, qkv_bias=True, ffn_norm="post_attention_norm")),
    # arcee.cpp (AFM): an ungated FFN with relu(x)² (LLM_FFN_RELU_SQR)
    "arcee": dict(seed=2027, keys=_common("arcee", 2, 10000.0),
                  tensors=lambda r: _decoder(r, gated=False, ffn_std=0.1)),
    # olmoe.cpp: q/k RMSNorm over n_embd (no GQA), softmax top-2 of 4 experts, not renormalised
    "olmoe": dict(seed=2028, keys=_common("olmoe", 2, 10000.0, dims=(E, H, H, D, 32), **{
                      "expert_count": 4, "expert_used_count": 2}),
                  tensors=lambda r: _decoder(r, hkv=H, full_qk_norm=True, moe=(4, 32, 0),
                                             shexp_gate=False)),
    # openai-moe.cpp (gpt-oss): a window of 4 on even layers, attention sinks, softmax over the
    # top-2 of 4 biased router logits, biased experts through swiglu_oai
    "gpt-oss": dict(seed=2029, keys=_common("gpt-oss", 2, 150000.0, dims=(E, H, HKV, D, 32), **{
                        "attention.sliding_window": 4, "expert_count": 4, "expert_used_count": 2,
                        "expert_feed_forward_length": 32, "attention.key_length": D,
                        "attention.value_length": D}),
                    tensors=lambda r: _gptoss(r)),
    # gptneox.cpp (Pythia, GPT-NeoX): LayerNorms, fused QKV, NeoX rotary on 6 of 24 dims, a GELU
    # MLP on its own norm of the layer's input, summed (ffn + x) + attn (use_parallel_residual)
    "gptneox": dict(seed=2030, keys=_common("gptneox", 2, 10000.0, dims=(PE, PH, PH, PD, PFF),
                                            n_rot=6, layer_norm=True, use_parallel_residual=True),
                    tensors=lambda r: _parallel(r, hkv=PH, fused=True, qkv_bias=True, out_bias=True,
                                                gated=False, ffn_bias=True, ffn_norm=True)),
    # the same with use_parallel_residual false: the residual sequential, as gpt2's
    "gptneox-seq": dict(arch="gptneox", seed=2031,
                        keys=_common("gptneox", 2, 10000.0, dims=(PE, PH, PH, PD, PFF), n_rot=6,
                                     layer_norm=True, use_parallel_residual=False),
                        tensors=lambda r: _parallel(r, hkv=PH, fused=True, qkv_bias=True,
                                                    out_bias=True, gated=False, ffn_bias=True,
                                                    ffn_norm=True)),
    # glm4.cpp (GLM-4 0414): q/k/v biases, normal rotary on 8 of 16 dims, post-attention and
    # post-FFN norms, [gate; up] fused in ffn_up
    "glm4": dict(seed=2032, keys=_common("glm4", 2, 10000.0, n_rot=8),
                 tensors=lambda r: _decoder(r, qkv_bias=True, post_norms=True, fused_up=True)),
    # exaone4.cpp (EXAONE 4 1.2B layout): no pre-norms, per-head q/k RMSNorm, post-norms
    "exaone4": dict(seed=2033, keys=_common("exaone4", 2, 1000000.0),
                    tensors=lambda r: _decoder(r, prenorm=False, head_qk_norm=True, post_norms=True)),
    # exaone4.cpp (the 32B's 64 layers): a window of 4 on layers 0-2 of each 4, which alone rope
    "exaone4-64": dict(arch="exaone4", seed=2034, keys=_common("exaone4", 64, 1000000.0, **{
                           "attention.sliding_window": 4}),
                       tensors=lambda r: _decoder(r, layers=64, prenorm=False, head_qk_norm=True,
                                                  post_norms=True)),
    # minicpm.cpp (granite.cpp's graph) in an older file without the keys: llama.cpp's defaults,
    # embedding × 12, residual × 1.4/sqrt(n_layer), logits × n_embd/256
    "minicpm": dict(seed=2035, keys=_common("minicpm", 2, 10000.0),
                    tensors=lambda r: _decoder(r)),
    # minicpm with the multipliers in the file (newer exports)
    "minicpm-keys": dict(arch="minicpm", seed=2036, keys=_common("minicpm", 2, 10000.0, **{
                             "embedding_scale": 8.0, "residual_scale": 0.5, "logit_scale": 0.5}),
                         tensors=lambda r: _decoder(r)),
    # hunyuan-vl.cpp's graph for hunyuan-dense (Hunyuan dense text models): NeoX rotary, then
    # per-head q/k RMSNorm after it
    "hunyuan-dense": dict(seed=2037, keys=_common("hunyuan-dense", 2, 10000.0),
                          tensors=lambda r: _decoder(r, head_qk_norm=True)),
    # ernie4-5.cpp (ERNIE 4.5 dense): llama's graph
    "ernie4_5": dict(seed=2038, keys=_common("ernie4_5", 2, 500000.0),
                     tensors=lambda r: _decoder(r, tied=True)),
    # phimoe.cpp (Phi-3.5-MoE, phi3.cpp's graph): RMSNorms with biases, q × 1/sqrt(head) after
    # rope, softmax top-2 of 4 experts renormalised, output with bias
    "phimoe": dict(seed=2040, keys=_common("phimoe", 2, 10000.0, dims=(E, H, HKV, D, 32), **{
                       "expert_count": 4, "expert_used_count": 2}),
                   tensors=lambda r: _phimoe(r)),
    # nemotron.cpp: LayerNorms with bias, NeoX rotary on 12 of 24 dims, ungated relu² FFN
    "nemotron": dict(seed=2041, keys=_common("nemotron", 2, 10000.0, dims=(PE, PH, 2, PD, PFF),
                                             n_rot=12, layer_norm=True),
                     tensors=lambda r: _parallel(r, hkv=2, fused=False, qkv_bias=False,
                                                 out_bias=False, gated=False, ffn_bias=False,
                                                 ffn_norm=True)),
    # olmo2.cpp with a sliding window (Olmo 3): layers 0-2 of each 4 slide, with plain rope;
    # the global layer 3 ropes with YaRN (factor 4 over an original context of 32)
    "olmo3": dict(arch="olmo2", seed=2016,
                  keys=_common("olmo2", 4, 500000.0, 1e-6, **{
                      "attention.sliding_window": 4, "rope.scaling.type": "yarn",
                      "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 32}),
                  tensors=lambda r: _decoder(r, layers=4, prenorm=False, full_qk_norm=True,
                                             post_norms=True)),
    # olmo3 with YaRN keys llama.cpp's olmo2 loader does not read (betas, ext_factor): it runs
    # with ext_factor 1 and llama_hparams' betas 32 and 1
    "olmo3-betas": dict(arch="olmo2", seed=2039,
                        keys=_common("olmo2", 4, 500000.0, 1e-6, **{
                            "attention.sliding_window": 4, "rope.scaling.type": "yarn",
                            "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 32,
                            "rope.scaling.yarn_beta_fast": 4.0, "rope.scaling.yarn_beta_slow": 2.0,
                            "rope.scaling.yarn_ext_factor": 0.5}),
                        tensors=lambda r: _decoder(r, layers=4, prenorm=False, full_qk_norm=True,
                                                   post_norms=True)),
    # glm4-moe.cpp (GLM-4.5 / 4.6 / 4.7): q/k/v biases, per-head q/k norms, NeoX rotary on 8 of
    # 16 dims, the FFN's norm stored as post_attention_norm, a dense first layer, then sigmoid
    # routing (expert_gating_func absent: llama.cpp's default for glm4moe) top-2 of 4 chosen with
    # exp_probs_b, renormalised, × expert_weights_scale, plus a shared expert
    "glm4moe": dict(seed=2042, keys=_common("glm4moe", 3, 1000000.0, n_rot=8, **{
                        "expert_count": 4, "expert_used_count": 2, "expert_shared_count": 1,
                        "expert_feed_forward_length": 32, "leading_dense_block_count": 1,
                        "expert_weights_norm": True, "expert_weights_scale": 2.5}),
                    tensors=lambda r: _glm4moe(r)),
    # GLM-4.5 as published: its last block a next-token-prediction layer (nextn_predict_layers 1)
    # that the trunk does not run; softmax routing given in the file, not renormalised
    "glm4moe-nextn": dict(arch="glm4moe", seed=2043, keys=_common("glm4moe", 4, 1000000.0, n_rot=8, **{
                              "expert_count": 4, "expert_used_count": 2, "expert_shared_count": 1,
                              "expert_feed_forward_length": 32, "leading_dense_block_count": 1,
                              "expert_gating_func": 1, "nextn_predict_layers": 1}),
                          tensors=lambda r: _glm4moe(r, layers=4, nextn=1, qk_norm=False, tied=True)),
    # baichuan.cpp: the model type by block count -- 7B (32 layers) ropes, 13B (40) has ALiBi
    # (max bias 8), any other count neither (LLM_TYPE_UNKNOWN: no position information at all)
    "baichuan": dict(seed=2044, keys=_common("baichuan", 2, 10000.0, 1e-6),
                     tensors=lambda r: _decoder(r)),
    "baichuan-7b": dict(arch="baichuan", seed=2045, keys=_common("baichuan", 32, 10000.0, 1e-6),
                        tensors=lambda r: _decoder(r, layers=32)),
    "baichuan-13b": dict(arch="baichuan", seed=2046, keys=_common("baichuan", 40, 10000.0, 1e-6),
                         tensors=lambda r: _decoder(r, layers=40)),
    # llama4.cpp (Llama 4 Scout / Maverick text): normal rotary on layers 0-2 of each 4 with q and
    # k RMS-normalised after it (no weight; not for 128 experts), layer 3 without rope and with
    # the attention temperature, chunked attention (8192) on the rope layers, every 2nd layer
    # routed: top-2 of 4 by router logit, the input × sigmoid(logit) before each expert, a
    # shared expert beside
    "llama4": dict(seed=2047, keys=_common("llama4", 4, 500000.0, **{
                       "expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32,
                       "interleave_moe_layer_step": 2}),
                   tensors=lambda r: _llama4(r)),
    # ernie4-5-moe.cpp (ERNIE 4.5 21B-A3B, 300B-A47B): a dense first layer, then softmax top-2 of
    # 4 chosen with exp_probs_b and renormalised, a shared expert; biased attention output
    "ernie4_5-moe": dict(seed=2048, keys=_common("ernie4_5-moe", 3, 500000.0, **{
                             "expert_count": 4, "expert_used_count": 2,
                             "expert_feed_forward_length": 32,
                             "expert_shared_feed_forward_length": 64,
                             "interleave_moe_layer_step": 1, "leading_dense_block_count": 1}),
                         tensors=lambda r: _ernie45moe(r)),
    # hunyuan-moe.cpp (Hunyuan-A13B): NeoX rotary, then per-head q/k RMSNorm, softmax top-2 of 4
    # experts of feed_forward_length renormalised, plus an ungated shared expert of its own width
    "hunyuan-moe": dict(seed=2049, keys=_common("hunyuan-moe", 2, 10000.0, dims=(E, H, HKV, D, 32), **{
                            "expert_count": 4, "expert_used_count": 2,
                            "expert_feed_forward_length": 32,
                            "expert_shared_feed_forward_length": 64}),
                        tensors=lambda r: _decoder(r, head_qk_norm=True, moe=(4, 32, 64),
                                                   shexp_gate=False)),
    # dots1.cpp (dots.llm1): no GQA, per-head q/k RMSNorm before NeoX rotary, a dense first layer,
    # then sigmoid top-2 of 4 chosen with exp_probs_b, renormalised, × 2.5, and a shared expert
    "dots1": dict(seed=2050, keys=_common("dots1", 3, 10000.0, dims=(E, H, H, D, FF), **{
                      "expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32,
                      "expert_shared_count": 1, "leading_dense_block_count": 1,
                      "expert_weights_norm": True, "expert_weights_scale": 2.5,
                      "expert_gating_func": 2}),
                  tensors=lambda r: _ernie45moe(r, shared=1, qk_norm=True, hkv=H, out_bias=False)),
    # bailingmoe.cpp (Ling / Ling-lite): every layer routed -- softmax top-2 of 4, renormalised and
    # × 2 as the file says -- plus a shared expert; normal rotary; the file's
    # leading_dense_block_count is read but not used by the graph (every layer routes)
    "bailingmoe": dict(seed=2051, keys=_common("bailingmoe", 2, 600000.0, **{
                           "expert_count": 4, "expert_used_count": 2,
                           "expert_feed_forward_length": 32, "expert_shared_count": 1,
                           "expert_weights_norm": True, "expert_weights_scale": 2.0,
                           "leading_dense_block_count": 1}),
                       tensors=lambda r: _decoder(r, moe=(4, 32, 32), shexp_gate=False)),
    # plamo.cpp (PLaMo 13B): NeoX rotary, the SwiGLU FFN beside the attention on the same RMSNorm
    # (no ffn_norm), summed (ffn + attn) + x
    "plamo": dict(seed=2052, keys=_common("plamo", 2, 10000.0, 1e-6),
                  tensors=lambda r: _decoder(r, ffn_norm="")),
    # apertus.cpp (Apertus): per-head q/k RMSNorm before NeoX rotary (their biases loaded, not
    # used), an ungated FFN through xIELU with per-layer alpha_n / alpha_p / beta / eps (global
    # xielu.* keys), output bias on the attention
    "apertus": dict(seed=2053, keys={**_common("apertus", 2, 12000000.0),
                                     "xielu.alpha_n": [0.8, 1.6], "xielu.alpha_p": [0.8, 0.3],
                                     "xielu.beta": [0.5, 0.25], "xielu.eps": [-1e-6, -1e-6]},
                    tensors=lambda r: {**_decoder(r, head_qk_norm=True, gated=False, ffn_std=0.1),
                                       **{f"blk.{i}.attn_{n}_norm.bias": r.b(D)
                                          for i in range(2) for n in ("q", "k")}}),
    # deci.cpp (Llama-3_1-Nemotron 51B / Ultra): per-layer head counts and FFN widths -- layer 0
    # attention, 1 "linear attention" (wo on the norm, n_head_kv 0), 2 attention without an FFN
    # (deci.cpp's `continue` keeps the layer's input: its attention is dropped), 3 an FFN alone
    "deci": dict(seed=2054, keys={**_common("deci", 4, 500000.0), **{
                     f"deci.{k}": [layer[j] for layer in DECI_LAYERS] for j, k in enumerate(
                         ("attention.head_count", "attention.head_count_kv", "feed_forward_length"))}},
                 tensors=lambda r: _deci(r)),
    # glm4moe with group-limited routing (DeepSeek-V3's n_group / topk_group, read for every
    # architecture): 8 experts in 4 groups, a group scored by the sum of its top 2 selection
    # probabilities, the top 2 groups kept, the top 2 experts chosen among them
    "glm4moe-groups": dict(arch="glm4moe", seed=2055, keys=_common("glm4moe", 3, 1000000.0, n_rot=8, **{
                               "expert_count": 8, "expert_used_count": 2, "expert_shared_count": 1,
                               "expert_feed_forward_length": 32, "leading_dense_block_count": 1,
                               "expert_weights_norm": True, "expert_weights_scale": 2.5,
                               "expert_group_count": 4, "expert_group_used_count": 2}),
                           tensors=lambda r: _glm4moe(r, n_exp=8)),
    # llama4.cpp's Maverick type (128 experts): no q/k norm after rope; top-1 routing; the chunked
    # layers rope with their own base (rope.freq_base_swa)
    "llama4-128e": dict(arch="llama4", seed=2056, keys=_common("llama4", 4, 500000.0, **{
                            "expert_count": 128, "expert_used_count": 1,
                            "expert_feed_forward_length": 16, "interleave_moe_layer_step": 2,
                            "rope.freq_base_swa": 10000.0}),
                        tensors=lambda r: _llama4(r, n_exp=128, ff=16)),
    # ernie4-5.cpp creates ffn_gate_exps not required: without it build_moe_ffn's experts are
    # silu(up) (no shared expert here: its width key absent)
    "ernie4_5-moe-nogate": dict(arch="ernie4_5-moe", seed=2057, keys=_common("ernie4_5-moe", 3, 500000.0, **{
                                    "expert_count": 4, "expert_used_count": 2,
                                    "expert_feed_forward_length": 32,
                                    "interleave_moe_layer_step": 1, "leading_dense_block_count": 1}),
                                tensors=lambda r: _ernie45moe(r, shared=0, gate=False)),
}
