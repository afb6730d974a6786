"""What distinguishes one transformer decoder from another: llama.cpp's facts as data.

Why: llama.cpp builds each architecture's graph in its own file (src/models/*.cpp), but
those files differ in a handful of switches it hard-codes per architecture -- which
norm, which rotary pairing, whether attention is soft-capped, whether the FFN is gated,
how experts are routed -- plus hyperparameters it reads from the file with defaults of
its own (src/llama-model.cpp ``load_hparams``).  ``TRAITS`` is the first, one row per
GGUF ``general.architecture``; ``read_config`` is the second, giving a ``Config`` that
``decoder.py`` -- the one engine -- runs.  Adding an architecture of this family is a
row here, not a module; the keys only some architectures read are read in
``hparams.py``, and which keys a loader reads at all comes from ``facts.llama_arch``
(generated from the pinned llama.cpp: qwen2vl's norms run with epsilon 0 because its
loader reads none).  Each row is held to llama.cpp's logits on a tiny model of it
(tests/forward/test_llama_cpp_arch.py, test_more_archs.py).

Contract: ``read_config(model, mapper, arch, legacy, name) -> Config`` raises
``WeightError`` (one line) for a missing or impossible hyperparameter; ``name`` maps a
GGUF tensor name to the file's (early llama.cpp / ggml example names for legacy files).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ggscope.forward import WeightError, WeightMapper
from ggscope.forward import hparams as _hp
from ggscope.facts.legacy_tensors import LEGACY_FORMATS, LEGACY_NAMES

__all__ = ["Traits", "TRAITS", "Config", "LEGACY_FORMATS", "LEGACY_NAMES", "read_config"]



@dataclass(frozen=True)
class Traits:
    """What llama.cpp hard-codes for one architecture (never read from the file)."""
    norm: str = "rms"                  # "rms" (RMSNorm) or "layer" (LayerNorm with bias)
    rope: str | None = "norm"          # llama_model_rope_type: "norm" pairs (2i, 2i+1),
                                       # "neox" pairs (i, i + n_rot/2); None: learned positions
    act: str = "silu"                  # FFN activation: "silu", "gelu" (tanh approximation),
                                       # "relu2" (relu(x)², arcee) or "xielu" (the file's, per layer)
    gated: bool = True                 # act(gate·h) * up·h (LLM_FFN_PAR) or act(up·h) (SEQ)
    embed_scale: bool = False          # inputs × sqrt(n_embd) (gemma*.cpp)
    swa_pattern: int = 0               # hparams.set_swa_pattern(n): layer il slides iff il % n < n-1
    swa_default: int = 0               # n_swa when the file has no sliding_window key
    swa_rope_base: float | None = None # rope_freq_base_train_swa (gemma3: 10000)
    attn_softcap: bool = False         # hparams.attn_soft_cap (gemma2)
    q_scale: bool = False              # q pre-scaled by f_attention_scale, kq_scale 1 (gemma)
    wide_scale_layers: tuple[int, ...] = ()  # n_layer of the "27B" type: scale 1/sqrt(n_embd/n_head)
    moe_norm: bool = False             # renormalise the top-k weights (build_moe_ffn norm_w)
    moe_keys: bool = False             # gating func / norm / scale come from the file (deepseek2)
    moe_gating_none: str = "softmax"   # the gating when expert_gating_func is absent or 0 (glm4moe:
                                       # "sigmoid"; deepseek2: softmax, but GLM 4.7 Lite's sigmoid;
                                       # "": none, which llama.cpp aborts on -- dots1)
    rope_n_layers: tuple[int, ...] = ()  # rope only at these block counts (baichuan: the 7B's 32)
    alibi_n_layers: tuple[int, ...] = () # ALiBi, max bias 8, at these block counts (baichuan: 13B's 40)
    llama4: bool = False               # llama4.cpp's attention: chunked windows, q/k RMS-normalised
                                       # after rope, temperature on the layers without rope
    moe_weight_keys: bool = False      # expert_weights_norm / _scale from the file, nothing else
                                       # of deepseek2's keys (bailingmoe)
    attn_out_bias: bool = True         # attn_output.bias added (ernie4-5*.cpp load it, pass NULL)
    moe_step: bool = False             # interleave_moe_layer_step and leading_dense_block_count
                                       # from the file (ernie4_5-moe: experts after the dense lead)
    layer_shapes: bool = False         # heads, KV heads and FFN width per layer (deci)
    nextn: bool = False                # the last nextn_predict_layers blocks are next-token
                                       # prediction layers the trunk does not run (hparams.n_layer())
    mla: bool = False                  # multi-head latent attention (deepseek2.cpp)
    final_softcap_key: bool = False    # reads final_logit_softcapping (gemma2, gemma3)
    short_factors: bool = False        # rope_factors_short when no rope_freqs (phi3 LongRoPE:
                                       # llama.cpp get_rope_factors while n_ctx <= the original)
    ffn_norm: str = "ffn_norm"         # the FFN's pre-norm tensor (seed_oss: post_attention_norm)
    prenorm: bool = True               # attn_norm / ffn_norm before each sublayer (olmo2: none,
                                       # its post-norms only)
    qk_norm: str = "head"              # attn_q/k_norm: "head" [head_k] per head, "full" over the
                                       # whole projection (olmo2), "per_head" [n_head, head_k] (stablelm),
                                       # "late": per head after rope (hunyuan-dense)
    parallel: str = ""                 # "sum": FFN reads the attention's input, x + (attn + ffn)
                                       # (phi2, falcon); "residual": so, as (ffn + x) + attn
                                       # (command-r); "optional": so when a layer has no ffn_norm
                                       # (stablelm 2 12B), x + attn + ffn; "neox": the FFN on
                                       # ffn_norm(x), (ffn + x) + attn, when use_parallel_residual
    nope_step: int = 0                 # n_no_rope_layer_step: layer il has no rope iff
                                       # (il + 1) % n == 0 (smollm3: 4)
    scale_keys: bool = False           # embedding_scale, residual_scale, attention.scale and
                                       # logit_scale from the file (granite.cpp)
    norm_bias: bool = True             # LayerNorms carry a bias (command-r's do not)
    tied_output: bool = False          # output = token_embd even if the file has output.weight
    logit_scale_mul: bool = False      # logits × logit_scale when the file sets it (command-r)
    swa_required: bool = False         # attention.sliding_window must be in the file (cohere2)
    swa_rope_only: bool = False        # rope only on sliding-window layers (cohere2)
    swa_n_layers: tuple[int, ...] = () # sliding windows only at these block counts (exaone4: 64)
    swa_plain_rope: bool = False       # sliding-window layers rope without scaling (olmo2: Olmo 3)
    mrope: str = ""                    # "mrope" (qwen2vl) / "imrope" (qwen3vl): ggml_rope_multi over
                                       # rope.dimension_sections; text has no 4th position
    sinks: bool = False                # attn_sinks: a learned logit per head in the softmax (gpt-oss)
    moe_gating: str = "softmax"        # "softmax_weight": top-k by logit, softmax over the k (gpt-oss);
                                       # "sigmoid_before": top-k by logit, the input × sigmoid(logit)
                                       # before each expert (llama4)
    expert_bias: bool = False          # router and experts carry biases (gpt-oss)
    expert_act: str = "silu"           # "oai": ggml_swiglu_oai, alpha 1.702, limit 7 (gpt-oss)
    temperature: bool = False          # attention.temperature_scale and the YaRN log multiplier
                                       # from the file (mistral3: llama 4's attention temperature)


# general.architecture -> traits, from llama.cpp's llama-model.cpp and src/models/<arch>.cpp
TRAITS: dict[str, Traits] = {
    "llama": Traits(rope="norm", moe_norm=True),                    # llama.cpp: mixtral routes, norm_w
    "qwen2": Traits(rope="neox"),
    "qwen3": Traits(rope="neox"),
    "qwen3moe": Traits(rope="neox", moe_norm=True),
    "phi3": Traits(rope="neox", short_factors=True, q_scale=True),      # phi3.cpp scales q
    "starcoder2": Traits(norm="layer", rope="neox", act="gelu", gated=False),
    "gpt2": Traits(norm="layer", rope=None, act="gelu", gated=False),
    "gemma2": Traits(rope="neox", act="gelu", embed_scale=True, swa_pattern=2, swa_default=4096,
                     attn_softcap=True, q_scale=True, wide_scale_layers=(46,),
                     final_softcap_key=True),
    "gemma3": Traits(rope="neox", act="gelu", embed_scale=True, swa_pattern=6,
                     swa_rope_base=10000.0, q_scale=True, wide_scale_layers=(62,),
                     final_softcap_key=True),
    "deepseek2": Traits(rope="norm", moe_keys=True, mla=True),
    "gemma": Traits(rope="neox", act="gelu", embed_scale=True, q_scale=True),
    "granite": Traits(rope="norm", moe_norm=True, scale_keys=True),
    "granitemoe": Traits(rope="norm", moe_norm=True, scale_keys=True),     # granite.cpp's graph
    "olmo2": Traits(rope="neox", prenorm=False, qk_norm="full", swa_pattern=4, swa_plain_rope=True),
    "qwen2moe": Traits(rope="neox"),                                 # + sigmoid-gated shared expert
    "mistral3": Traits(rope="norm", moe_norm=True, temperature=True),
    "smollm3": Traits(rope="norm", nope_step=4),
    "exaone": Traits(rope="neox"),
    "phi2": Traits(norm="layer", rope="neox", act="gelu", gated=False, q_scale=True, parallel="sum"),
    "stablelm": Traits(norm="layer", rope="neox", parallel="optional", qk_norm="per_head"),
    "falcon": Traits(norm="layer", rope="neox", act="gelu", gated=False, parallel="sum"),
    "qwen2vl": Traits(rope="neox", mrope="mrope"),                     # text: qwen2's graph
    "qwen3vl": Traits(rope="neox", mrope="imrope"),                    # text: qwen3's graph
    "qwen3vlmoe": Traits(rope="neox", mrope="imrope", moe_norm=True),  # text: qwen3moe's graph
    "starcoder": Traits(norm="layer", rope=None, act="gelu", gated=False),   # gpt2's, with MQA
    "internlm2": Traits(rope="norm"),
    "xverse": Traits(rope="norm"),
    "orion": Traits(norm="layer", rope="neox"),
    "seed_oss": Traits(rope="neox", ffn_norm="post_attention_norm"),
    "arcee": Traits(rope="norm", act="relu2", gated=False),
    "olmoe": Traits(rope="neox", qk_norm="full"),                       # softmax top-k, no renorm
    "gpt-oss": Traits(rope="neox", ffn_norm="post_attention_norm", swa_pattern=2, swa_required=True,
                      sinks=True, moe_gating="softmax_weight", expert_bias=True, expert_act="oai"),
    "gptneox": Traits(norm="layer", rope="neox", act="gelu", gated=False, parallel="neox"),
    "glm4": Traits(rope="norm"),                     # sandwich norms, fused gate/up, partial rotary
    "exaone4": Traits(rope="neox", prenorm=False, swa_pattern=4, swa_default=4096,
                      swa_n_layers=(64,), swa_rope_only=True),     # post-norms, per-head q/k norms
    "minicpm": Traits(rope="norm", moe_norm=True, scale_keys=True),    # granite.cpp's graph
    "hunyuan-dense": Traits(rope="neox", qk_norm="late"),
    "ernie4_5": Traits(rope="norm", attn_out_bias=False),
    "phimoe": Traits(rope="neox", short_factors=True, q_scale=True, moe_norm=True),  # phi3's graph
    "nemotron": Traits(norm="layer", rope="neox", act="relu2", gated=False),
    "command-r": Traits(norm="layer", norm_bias=False, parallel="residual", qk_norm="per_head",
                        tied_output=True, logit_scale_mul=True),
    "glm4moe": Traits(rope="neox", ffn_norm="post_attention_norm", moe_keys=True,
                      moe_gating_none="sigmoid", nextn=True),   # + shared experts, dense lead layers
    "baichuan": Traits(rope="norm", rope_n_layers=(32,), alibi_n_layers=(40,)),
    "llama4": Traits(rope="norm", llama4=True, moe_gating="sigmoid_before"),   # + shared expert
    "ernie4_5-moe": Traits(rope="norm", moe_norm=True, moe_step=True, attn_out_bias=False),   # + shared expert
    "hunyuan-moe": Traits(rope="neox", qk_norm="late", moe_norm=True),  # + ungated shared expert
    "dots1": Traits(rope="neox", moe_keys=True, moe_gating_none=""),   # + shared expert
    "bailingmoe": Traits(rope="norm", moe_weight_keys=True),            # + shared expert
    "plamo": Traits(rope="neox", parallel="sum"),                      # FFN on the attention's norm
    "apertus": Traits(rope="neox", act="xielu", gated=False),          # q/k norms' biases unused
    "deci": Traits(rope="norm", layer_shapes=True),           # layer_shapes.py runs its layers
    "cohere2": Traits(norm="layer", norm_bias=False, parallel="residual", tied_output=True,
                      logit_scale_mul=True, swa_pattern=4, swa_required=True, swa_rope_only=True),
}

# hyperparameters early llama.cpp / ggml's gpt-2 example hard-coded
_LEGACY_EPS = {"llama": 1e-6, "gpt2": 1e-5}
DEFAULT_ROPE_BASE = 10000.0


@dataclass(frozen=True)
class Config:
    arch: str
    traits: Traits
    n_vocab: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_k: int                      # per-head query/key width (MLA: nope + rope, expanded)
    head_v: int                      # per-head value width (MLA: value_length_mla)
    n_rot: int
    eps: float
    rope_base: float
    freq_scale: float = 1.0          # 1 / rope.scaling.factor (linear or YaRN)
    yarn: tuple[float, float, float, float] | None = None  # (ext_factor, beta_fast, beta_slow, n_ctx_orig)
    attn_factor: float = 1.0         # rope mscale (ggml_rope_ext attn_factor)
    kq_scale: float = 1.0            # applied to the scores (or to q, for gemma)
    attn_softcap: float = 0.0
    final_softcap: float = 0.0
    n_swa: int = 0                   # sliding window (keys p-W+1 .. p), 0: none
    swa_layers: tuple[bool, ...] = ()
    n_ctx: int = 0                   # learned positions only (gpt2)
    n_expert: int = 0
    n_expert_used: int = 0
    moe_gating: str = "softmax"      # "softmax" or "sigmoid"
    moe_norm: bool = False
    moe_scale: float = 0.0           # 0: no scaling
    n_dense_lead: int = 0
    mla_rank: int = 0                # kv_lora_rank
    mla_nope: int = 0                # qk_nope head dim
    exact: bool = False              # --exact: no ggml rounding anywhere (decoder.load)
    no_rope: tuple[bool, ...] = ()   # per layer: True where the layer skips rope (smollm3, granite)
    embed_mult: float = 0.0          # inputs × f_embedding_scale (llama-graph.cpp build_inp_embd)
    residual_scale: float = 0.0      # sublayer outputs × f_residual_scale before the residual add
    logit_mult: float = 0.0          # logits × 1.0f/f_logit_scale
    parallel: str = ""               # Traits.parallel as this file has it (gptneox: its key)
    attn_temp: tuple[float, int] | None = None   # (f_attn_temp_scale, floor): q × per-position scale
    rope_still: tuple[bool, ...] = ()    # per rotary pair: M-RoPE's 4th section, position 0 for text
    swa_chunked: bool = False        # windows are chunks: keys from floor(p / n_swa)·n_swa (llama4)
    swa_rope_base: float = 0.0       # rope_freq_base_train_swa read from the file (llama4), 0: none
    qk_l2: bool = False              # q, k RMS-normalised (no weight) after rope (llama4 use_kq_norm)
    temp_nope_only: bool = False     # attn_temp only on the layers without rope (llama4)
    xielu: tuple[tuple[float, float, float, float], ...] = ()  # per layer: ggml_xielu's params (apertus)
    layer_shapes: tuple[tuple[int, int, int], ...] = ()  # per layer (n_head, n_head_kv, n_ff): deci
    moe_groups: tuple[int, int] = (0, 0)     # (groups, used): top-k in the best groups (DeepSeek-V3)
    alibi: float = 0.0               # f_max_alibi_bias: scores + slope(head)·-|p_q - p_k| (ggml soft_max)



# ---- configuration from metadata ------------------------------------------------------------

class _Meta:
    """Typed reads of ``<arch>.<key>`` with llama.cpp's defaults; one-line errors."""

    def __init__(self, model, prefix: str) -> None:
        self.model, self.prefix = model, prefix

    def raw(self, key: str):
        return self.model.metadata.get(f"{self.prefix}.{key}")

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.raw(key)
        if isinstance(value, (list, tuple, np.ndarray)):       # per-layer arrays: llama.cpp's n_head(0)
            value = value[0] if len(value) else None
        if value is None:
            value = default
        try:
            out = int(value)
        except (TypeError, ValueError):
            raise WeightError(f"{self.model.path}: metadata {self.prefix}.{key!r} missing or not "
                              f"a number (got {value!r})") from None
        if out < minimum:
            raise WeightError(f"{self.model.path}: metadata {self.prefix}.{key} must be at least "
                              f"{minimum}, got {out}")
        return out

    def float(self, key: str, default: float) -> float:
        value = self.raw(key)
        try:
            out = float(default if value is None else value)
        except (TypeError, ValueError):
            raise WeightError(f"{self.model.path}: metadata {self.prefix}.{key!r} is not a "
                              f"number (got {value!r})") from None
        if not math.isfinite(out):
            raise WeightError(f"{self.model.path}: metadata {self.prefix}.{key} is not finite")
        return out


def read_config(model, m: WeightMapper, arch: str, legacy: bool, name) -> Config:
    t = TRAITS[arch]
    meta = _Meta(model, model.format if legacy else arch)
    emb = m.ne(name("token_embd.weight"))
    if len(emb) != 2:
        raise WeightError(f"{model.path}: token embedding must be 2-D, has ne {list(emb)}")
    n_embd, n_vocab = emb
    n_head = meta.int("n_head" if legacy else "attention.head_count")
    n_layer = meta.int("n_layer" if legacy else "block_count", minimum=0)
    if t.nextn and not legacy:             # llama_hparams::n_layer(): n_layer_all - n_layer_nextn
        nextn = meta.int("nextn_predict_layers", 0, minimum=0)
        if nextn > n_layer:
            raise WeightError(f"{model.path}: {meta.prefix}.nextn_predict_layers {nextn} exceeds "
                              f"block_count {n_layer} (llama.cpp refuses the file)")
        n_layer -= nextn
    first = "blk.{i}.attn_norm.weight" if t.prenorm else "blk.{i}.attn_output.weight"

    def block_tensor(i: int) -> str:             # deci: a layer may have no attention, or no FFN
        full = name(first, i)
        return name("blk.{i}.ffn_norm.weight", i) if t.layer_shapes and not m.has(full) else full
    n_layer = m.blocks(n_layer, block_tensor,
                       f"{meta.prefix}.{'n_layer' if legacy else 'block_count'}")
    if legacy:
        n_head_kv, eps, base = n_head, _LEGACY_EPS[arch], DEFAULT_ROPE_BASE
        head_k = head_v = n_embd // n_head
        n_rot = meta.int("n_rot", head_k) if t.rope else 0
    else:
        n_head_kv = meta.int("attention.head_count_kv", n_head)
        eps = meta.float("attention.layer_norm_epsilon" if t.norm == "layer"
                         else "attention.layer_norm_rms_epsilon", 1e-5)
        if not _hp.reads_eps(arch, t.norm):
            eps = 0.0
        base = meta.float("rope.freq_base", DEFAULT_ROPE_BASE)
        head_k = meta.int("attention.key_length", n_embd // n_head)
        head_v = meta.int("attention.value_length", n_embd // n_head)
        n_rot = meta.int("rope.dimension_count", head_k) if t.rope else 0
    if n_head % n_head_kv or (not t.mla and n_embd % n_head and not meta.raw("attention.key_length")):
        raise WeightError(f"{model.path}: n_embd {n_embd}, n_head {n_head} and n_head_kv "
                          f"{n_head_kv} do not divide evenly")
    extra: dict = {}
    if t.mla:
        rank = meta.int("attention.kv_lora_rank")
        k_mla = meta.int("attention.key_length_mla", 0, minimum=0)
        v_mla = meta.int("attention.value_length_mla", 0, minimum=0)
        if not (k_mla and v_mla):           # files before MLA: heads expanded through wkv_b
            k_mla, v_mla = head_k, head_v
        extra.update(mla_rank=rank, mla_nope=k_mla - n_rot)
        head_k, head_v = k_mla, v_mla       # the heads' widths after expansion by wv_b
        if k_mla <= n_rot:
            raise WeightError(f"{model.path}: MLA key width {k_mla} must exceed rope width {n_rot}")
    if t.rope and not base > 0:
        raise WeightError(f"{model.path}: rope.freq_base must be positive, got {base}")
    if t.rope and (n_rot % 2 or n_rot > head_k or n_rot <= 0):
        raise WeightError(f"{model.path}: rotary dimension {n_rot} must be even and at "
                          f"most the head size {head_k}")
    # rope scaling (llama.cpp: rope.scaling.type / factor; YaRN's ext_factor 1 when type is yarn)
    factor = meta.float("rope.scaling.factor", 0.0) if not legacy else 0.0
    kind = str(meta.raw("rope.scaling.type") or ("linear" if factor else "none"))
    freq_scale = 1.0 / factor if factor and kind in ("linear", "yarn") else 1.0
    yarn = None
    attn_factor = meta.float("rope.scaling.attn_factor", 1.0) if not legacy else 1.0
    if kind == "yarn" and freq_scale != 1.0:
        n_ctx_orig = meta.int("rope.scaling.original_context_length",
                              meta.int("context_length", 2048))
        # ext_factor: llama.cpp's context parameter, 1 for YaRN (no key is read); the betas:
        # llama_hparams' 32 and 1 unless the architecture's loader reads the keys (mistral3)
        betas = _hp.reads(arch, "ROPE_SCALING_YARN_BETA_FAST")
        yarn = (1.0, meta.float("rope.scaling.yarn_beta_fast", 32.0) if betas else 32.0,
                meta.float("rope.scaling.yarn_beta_slow", 1.0) if betas else 1.0, float(n_ctx_orig))
    # attention scale
    kq_scale = float(np.float32(1) / np.sqrt(np.float32(head_k)))    # 1.0f/sqrtf(float(n_embd_head))
    if t.wide_scale_layers and n_layer in t.wide_scale_layers:
        kq_scale = 1.0 / math.sqrt(n_embd / n_head)
    if t.mla:
        # deepseek2.cpp: mscale = attn_factor·(1 + yarn_log_mul·ln(1/freq_scale)), kq × mscale²;
        # the rope's own YaRN magnitude is cancelled (llama.cpp discussion 7416)
        log_mul = meta.float("rope.scaling.yarn_log_multiplier", 0.0)
        mscale = attn_factor * (1.0 + log_mul * math.log(1.0 / freq_scale))
        kq_scale = mscale * mscale / math.sqrt(head_k)
        if yarn is not None:
            attn_factor = 1.0 / (1.0 + 0.1 * math.log(1.0 / freq_scale))
    # sliding window
    n_swa, swa_layers = 0, tuple(False for _ in range(n_layer))
    if t.swa_pattern and not legacy and (not t.swa_n_layers or n_layer in t.swa_n_layers):
        if t.swa_required and meta.raw("attention.sliding_window") is None:
            raise WeightError(f"{model.path}: metadata {meta.prefix}.attention.sliding_window "
                              "missing (llama.cpp requires it)")
        n_swa = meta.int("attention.sliding_window", t.swa_default or 0, minimum=0)
        if n_swa:
            swa_layers = _hp.swa_layers(meta, t.swa_pattern, n_layer)
        if t.swa_rope_only:                     # cohere2: the global layers have no rope
            extra.update(no_rope=tuple(not s for s in swa_layers))
    _hp.experts(model, meta, t, arch, legacy, n_layer, n_vocab, extra)
    if t.nope_step:
        extra.update(no_rope=tuple((il + 1) % t.nope_step == 0 for il in range(n_layer)))
    if t.logit_scale_mul:
        if arch == "cohere2" and meta.raw("logit_scale") is None:
            raise WeightError(f"{model.path}: metadata cohere2.logit_scale missing (llama.cpp "
                              "requires it)")
        extra.update(logit_mult=meta.float("logit_scale", 0.0))
    if t.scale_keys:
        _hp.scales(model, meta, extra, n_layer, n_embd)
        if extra.get("kq_scale"):
            kq_scale = extra.pop("kq_scale")
        else:
            extra.pop("kq_scale", None)
    extra.update(parallel=t.parallel)
    if t.parallel == "neox" and not legacy:            # gptneox.cpp: hparams.use_par_res, required
        if meta.raw("use_parallel_residual") is None:
            raise WeightError(f"{model.path}: metadata {meta.prefix}.use_parallel_residual missing "
                              "(llama.cpp requires it)")
        extra.update(parallel="neox" if meta.raw("use_parallel_residual") else "")
    if arch in ("glm4", "glm4moe", "hunyuan-dense") and not legacy:
        _hp.mrope_unsupported(model, meta, nextn_ok=t.nextn)
    if t.mrope and not legacy:
        extra.update(rope_still=_hp.mrope_still(model, meta, t.mrope, n_rot, head_k))
    if not legacy:
        _hp.layers(model, meta, t, n_layer, extra)
    if t.llama4 and not legacy:
        _hp.llama4(model, meta, extra, n_layer, base)
        n_swa, swa_layers = extra.pop("n_swa"), extra.pop("swa_layers")
    if t.temperature and not legacy:
        attn_factor = _hp.temperature(model, meta, extra, yarn, freq_scale, attn_factor)
    n_ctx = 0
    if t.rope is None:
        pos = m.ne(name("position_embd.weight"))
        if len(pos) != 2 or pos[0] != n_embd:
            raise WeightError(f"{model.path}: position embedding must be [n_ctx, {n_embd}]")
        n_ctx = pos[1]
    return Config(
        arch=arch, traits=t, n_vocab=n_vocab, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
        n_head_kv=n_head_kv, head_k=head_k, head_v=head_v, n_rot=n_rot, eps=eps, rope_base=base,
        freq_scale=freq_scale, yarn=yarn, attn_factor=attn_factor, kq_scale=kq_scale,
        attn_softcap=meta.float("attn_logit_softcapping", 0.0) if t.attn_softcap else 0.0,
        final_softcap=meta.float("final_logit_softcapping", 0.0) if t.final_softcap_key else 0.0,
        n_swa=n_swa, swa_layers=swa_layers, n_ctx=n_ctx, **extra)
