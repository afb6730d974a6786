"""What llama.cpp's model loader reads and creates, per architecture: one table.

Why: the loader family (GG11xx) predicts whether llama.cpp loads a file.  llama.cpp
decides that in ``src/llama-model.cpp``: ``load_hparams`` reads typed keys (a missing
required key or a key of another GGUF type throws), ``load_tensors`` calls
``create_tensor(name, {ne...}, flags)`` once per weight (a missing required tensor or any
other shape throws; ``done_getting_tensors`` throws when the file holds a tensor that was
never created).  This module is that code as data - one entry per architecture - and
``ggscope.rules.loader_engine`` is the one engine that runs it.  Read from llama.cpp
``src/llama-model.cpp`` (load_hparams / load_tensors, 2026 master as stored by the search
tool) case by case; names of keys and tensors are gguf-py's (``gguf.constants.Keys`` and
``MODEL_TENSOR``), so they follow the installed package.

Contract:

* ``LOADER_KEYS``: keys ``llama_model_loader``'s constructor reads from every file.
* ``COMMON_KEYS``: keys ``load_hparams`` reads for every architecture, before its switch.
* ``ARCHS[name]``: ``Arch(keys, derive, checks, tensors)``.

  - ``keys``: ``(gguf-py Keys attribute, C type, required)``; required is a bool or a
    condition over the common variables; C type is ``u32``, ``f32``,
    ``bool``, ``str`` or ``u32[]`` (``get_key_or_arr``: a scalar or a per-layer array).
  - ``derive``: ``(variable, expression)`` evaluated in order after the common
    variables (see ``loader_engine``), e.g. qwen3moe's ``n_ff_exp``.
  - ``checks``: ``(condition, message)``: when the condition holds llama.cpp throws or
    asserts with that message.
  - ``tensors``: ``T(tensor, suffix, shape, required, when, block)``: ``tensor`` is a
    ``gguf.constants.MODEL_TENSOR`` member name, ``shape`` the ``ne`` list as expressions,
    ``when`` a condition (per layer for block tensors, variable ``i``).

Expressions are Python over integer variables: ``n_embd``, ``n_vocab``, ``n_layer``,
``n_ctx_train``, ``n_head``, ``n_head_kv``, ``n_ff``, ``head_k``, ``head_v``, ``n_rot``,
``n_embd_k_gqa``, ``n_embd_v_gqa``, ``n_embd_gqa``, ``n_expert``, ``n_expert_used``,
``longrope``, each arch key's value under its last name segment (``q_lora_rank``; 0 when
absent) and whatever ``derive`` adds; ``//`` is C's integer division.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["T", "Arch", "LOADER_KEYS", "COMMON_KEYS", "ARCHS", "N_ROT_CHECKED", "LLAMA_MAX_LAYERS", "ROPE_SCALING_TYPES",
           "TOKENIZER_MODELS", "BPE_MODELS", "MERGES_OPTIONAL_PRE", "SOURCE"]

SOURCE = "llama.cpp src/llama-model.cpp (llama_model::load_hparams, load_tensors)"

LLAMA_MAX_LAYERS = 512                     # src/llama-hparams.h; get_key_or_arr: "n > N_MAX"
ROPE_SCALING_TYPES = ("none", "linear", "yarn", "longrope")   # LLAMA_ROPE_SCALING_TYPES; else GGML_ASSERT
N_ROT_CHECKED = frozenset({"llama", "deci", "falcon"})         # "invalid n_rot: %u, expected %u"
# src/llama-vocab.cpp llama_vocab::impl::load: the tokenizer.ggml.model values it knows
# (2026 master; hybriddna/whitespace/gemma4 are the newest); anything else throws
# "unknown tokenizer: '%s'".  BPE models need merges, except the kimi-k2 pre-tokenizer.
TOKENIZER_MODELS = ("no_vocab", "none", "llama", "bert", "gpt2", "hybriddna", "whitespace", "t5", "rwkv", "plamo2",
                    "gemma4")
BPE_MODELS = ("gpt2", "hybriddna", "whitespace", "gemma4")
MERGES_OPTIONAL_PRE = ("kimi-k2",)


@dataclass(frozen=True)
class T:
    tensor: str                     # gguf.constants.MODEL_TENSOR member
    suffix: str | None              # "weight", "bias", "scales" or None (ssm_a)
    shape: tuple[str, ...]
    required: bool = True
    when: str | None = None


@dataclass(frozen=True)
class Arch:
    keys: tuple[tuple[str, str, bool | str], ...]
    tensors: tuple[T, ...]
    derive: tuple[tuple[str, str], ...] = ()
    checks: tuple[tuple[str, str], ...] = ()


# llama_model_loader's constructor, for every file: general.file_type read as u32 (into
# ftype), split.count as u16 (n_split) - src/llama-model-loader.cpp
LOADER_KEYS: tuple[tuple[str, str, bool], ...] = (
    ("General.FILE_TYPE", "u32", False),
    ("Split.LLM_KV_SPLIT_COUNT", "u16", False),
)

COMMON_KEYS: tuple[tuple[str, str, bool], ...] = (
    ("General.NAME", "str", False),
    ("LLM.CONTEXT_LENGTH", "u32", True),
    ("LLM.EMBEDDING_LENGTH", "u32", True),
    ("LLM.BLOCK_COUNT", "u32", True),
    ("LLM.EXPERT_COUNT", "u32", False),
    ("LLM.EXPERT_USED_COUNT", "u32", False),
    ("LLM.EXPERT_GROUP_COUNT", "u32", False),
    ("LLM.EXPERT_GROUP_USED_COUNT", "u32", False),
    ("LLM.FEED_FORWARD_LENGTH", "u32[]", False),
    ("Attention.HEAD_COUNT", "u32[]", False),
    ("Attention.HEAD_COUNT_KV", "u32[]", False),
    ("Rope.SCALING_FINETUNED", "bool", False),
    ("Rope.SCALING_ORIG_CTX_LEN", "u32", False),
    ("Rope.FREQ_BASE", "f32", False),
    ("Rope.SCALING_TYPE", "str", False),
    ("Rope.SCALING_FACTOR", "f32", False),
    ("Rope.SCALING_ATTN_FACTOR", "f32", False),
    ("Attention.KEY_LENGTH", "u32", False),       # read only when n_head > 0
    ("Attention.VALUE_LENGTH", "u32", False),
    ("Rope.DIMENSION_COUNT", "u32", False),
    ("LLM.VOCAB_SIZE", "u32", False),
)

_RMS = ("Attention.LAYERNORM_RMS_EPS", "f32", True)
_EPS = ("Attention.LAYERNORM_EPS", "f32", True)

# --- tensor groups shared by several architectures --------------------------------
_TOK = T("TOKEN_EMBD", "weight", ("n_embd", "n_vocab"))
_ONORM = T("OUTPUT_NORM", "weight", ("n_embd",))
_ONORM_B = T("OUTPUT_NORM", "bias", ("n_embd",))
_OUT_OPT = T("OUTPUT", "weight", ("n_embd", "n_vocab"), required=False)   # else token_embd, TENSOR_DUPLICATED
_OUT = T("OUTPUT", "weight", ("n_embd", "n_vocab"))
_NORM = T("ATTN_NORM", "weight", ("n_embd",))
_NORM_B = T("ATTN_NORM", "bias", ("n_embd",))
_FNORM = T("FFN_NORM", "weight", ("n_embd",))
_FNORM_B = T("FFN_NORM", "bias", ("n_embd",))
_Q_HK = T("ATTN_Q", "weight", ("n_embd", "head_k * n_head"))
_K_GQA = T("ATTN_K", "weight", ("n_embd", "n_embd_k_gqa"))
_V_GQA = T("ATTN_V", "weight", ("n_embd", "n_embd_v_gqa"))
_O_HK = T("ATTN_OUT", "weight", ("head_k * n_head", "n_embd"))
_Q_E = T("ATTN_Q", "weight", ("n_embd", "n_embd"))
_K_G = T("ATTN_K", "weight", ("n_embd", "n_embd_gqa"))
_V_G = T("ATTN_V", "weight", ("n_embd", "n_embd_gqa"))
_O_E = T("ATTN_OUT", "weight", ("n_embd", "n_embd"))
_QKV = T("ATTN_QKV", "weight", ("n_embd", "n_embd + 2 * n_embd_gqa"))
_QKV_B = T("ATTN_QKV", "bias", ("n_embd + 2 * n_embd_gqa",))
_GATE = T("FFN_GATE", "weight", ("n_embd", "n_ff"))
_DOWN = T("FFN_DOWN", "weight", ("n_ff", "n_embd"))
_UP = T("FFN_UP", "weight", ("n_embd", "n_ff"))
_QK_NORM = (T("ATTN_K_NORM", "weight", ("head_k",)), T("ATTN_Q_NORM", "weight", ("head_k",)))
_MOE = (T("FFN_GATE_INP", "weight", ("n_embd", "n_expert")),
        T("FFN_GATE_EXP", "weight", ("n_embd", "n_ff_exp", "n_expert")),
        T("FFN_DOWN_EXP", "weight", ("n_ff_exp", "n_embd", "n_expert")),
        T("FFN_UP_EXP", "weight", ("n_embd", "n_ff_exp", "n_expert")))
_ROPE_FREQS = (T("ROPE_FREQS", "weight", ("n_rot // 2",), required=False, when="not longrope"),
               T("ROPE_FACTORS_LONG", "weight", ("n_rot // 2",), required=False, when="longrope"),
               T("ROPE_FACTORS_SHORT", "weight", ("n_rot // 2",), required=False, when="longrope"))

_MOE_REQUIRED = (("n_expert == 0", "n_expert must be > 0"), ("n_expert_used == 0", "n_expert_used must be > 0"))


def _opt(t: T, when: str | None = None) -> T:
    return T(t.tensor, t.suffix, t.shape, False, when or t.when)


def _when(when: str, *ts: T) -> tuple[T, ...]:
    return tuple(T(t.tensor, t.suffix, t.shape, t.required, when) for t in ts)


ARCHS: dict[str, Arch] = {
    # case LLM_ARCH_LLAMA (shared with refact, minicpm, granite): optional q/k/v/o and MLP
    # biases, optional output (tied embeddings), dense or MoE feed-forward by n_expert.
    "llama": Arch(
        keys=(_RMS,),
        tensors=(_TOK, _ONORM, _OUT_OPT, *_ROPE_FREQS,
                 _NORM, _Q_HK, _K_GQA, _V_GQA, _O_HK,
                 T("ATTN_Q", "bias", ("n_embd",), False), T("ATTN_K", "bias", ("n_embd_gqa",), False),
                 T("ATTN_V", "bias", ("n_embd_gqa",), False), T("ATTN_OUT", "bias", ("n_embd",), False),
                 _FNORM,
                 *_when("n_expert == 0", _GATE, _DOWN, _UP,
                        T("FFN_GATE", "bias", ("n_ff",), False), T("FFN_DOWN", "bias", ("n_embd",), False),
                        T("FFN_UP", "bias", ("n_ff",), False)),
                 *_when("n_expert > 0",
                        T("FFN_GATE_INP", "weight", ("n_embd", "n_expert")),
                        T("FFN_GATE_EXP", "weight", ("n_embd", "n_ff", "n_expert"), False),
                        T("FFN_DOWN_EXP", "weight", ("n_ff", "n_embd", "n_expert")),
                        T("FFN_UP_EXP", "weight", ("n_embd", "n_ff", "n_expert"))))),
    # case LLM_ARCH_FALCON: fused qkv, optional second attention norm (falcon-40b).
    "falcon": Arch(
        keys=(_EPS,),
        tensors=(_TOK, _ONORM, _ONORM_B, _OUT_OPT, _NORM, _NORM_B,
                 T("ATTN_NORM_2", "weight", ("n_embd",), False), T("ATTN_NORM_2", "bias", ("n_embd",), False),
                 _QKV, _O_E, _DOWN, _UP)),
    # case LLM_ARCH_MPT: alibi (max_alibi_bias required, clamp_kqv optional), every bias
    # optional, optional position embeddings and qk norms, AWQ activation scales.
    "mpt": Arch(
        keys=(_EPS, ("Attention.CLAMP_KQV", "f32", False), ("Attention.MAX_ALIBI_BIAS", "f32", True)),
        tensors=(_TOK, T("POS_EMBD", "weight", ("n_embd", "n_ctx_train"), False), _ONORM, _opt(_ONORM_B), _OUT_OPT,
                 _NORM, _opt(_NORM_B), _QKV, _opt(_QKV_B), _O_E, T("ATTN_OUT", "bias", ("n_embd",), False),
                 _FNORM, _opt(_FNORM_B), _DOWN, T("FFN_DOWN", "bias", ("n_embd",), False),
                 _UP, T("FFN_UP", "bias", ("n_ff",), False),
                 T("ATTN_Q_NORM", "weight", ("n_embd",), False), T("ATTN_Q_NORM", "bias", ("n_embd",), False),
                 T("ATTN_K_NORM", "weight", ("n_embd",), False), T("ATTN_K_NORM", "bias", ("n_embd",), False),
                 T("FFN_ACT", "scales", ("n_ff",), False))),
    # case LLM_ARCH_QWEN2 (and qwen2vl, dream): q/k/v biases required, output optional.
    "qwen2": Arch(
        keys=(("LLM.POOLING_TYPE", "u32", False), _RMS),
        tensors=(_TOK, _ONORM, _OUT_OPT, T("OUTPUT", "bias", ("n_vocab",), False),
                 _NORM, _Q_E, _K_G, _V_G, _O_E,
                 T("ATTN_Q", "bias", ("n_embd",)), T("ATTN_K", "bias", ("n_embd_gqa",)),
                 T("ATTN_V", "bias", ("n_embd_gqa",)),
                 _FNORM, _GATE, _DOWN, _UP)),
    # case LLM_ARCH_QWEN3: per-head q/k RMS norms, optional rerank head.
    "qwen3": Arch(
        keys=(("LLM.POOLING_TYPE", "u32", False), _RMS),
        tensors=(_TOK, _ONORM, _OUT_OPT, T("CLS_OUT", "weight", ("n_embd", "*"), False),
                 _NORM, _Q_HK, _K_G, _V_G, _O_HK, *_QK_NORM, _FNORM, _GATE, _DOWN, _UP)),
    # case LLM_ARCH_QWEN3MOE: experts of n_ff_exp (default n_ff / n_expert_used).
    "qwen3moe": Arch(
        keys=(("LLM.EXPERT_FEED_FORWARD_LENGTH", "u32", False), _RMS),
        derive=(("n_ff_exp", "expert_feed_forward_length or (n_ff // n_expert_used if n_expert_used else 0)"),),
        checks=_MOE_REQUIRED,
        tensors=(_TOK, _ONORM, _OUT_OPT, _NORM, _Q_HK, _K_G, _V_G, _O_HK, *_QK_NORM, _FNORM, *_MOE)),
    # case LLM_ARCH_PHI3: fused qkv (not required), up projection of 2 * n_ff.
    "phi3": Arch(
        keys=(_RMS, ("Attention.SLIDING_WINDOW", "u32", False)),
        tensors=(_TOK, _ONORM, _OUT_OPT, _NORM, _opt(_QKV), _O_E, _FNORM, _DOWN,
                 T("FFN_UP", "weight", ("n_embd", "2 * n_ff")),
                 T("ROPE_FACTORS_LONG", "weight", ("n_rot // 2",), False),
                 T("ROPE_FACTORS_SHORT", "weight", ("n_rot // 2",), False))),
    # case LLM_ARCH_GPT2: learned positions, every bias required, output optional.
    "gpt2": Arch(
        keys=(_EPS,),
        tensors=(_TOK, T("POS_EMBD", "weight", ("n_embd", "n_ctx_train")), _ONORM, _ONORM_B, _OUT_OPT,
                 _NORM, _NORM_B, _QKV, _QKV_B, _O_E, T("ATTN_OUT", "bias", ("n_embd",)),
                 _FNORM, _FNORM_B, _DOWN, T("FFN_DOWN", "bias", ("n_embd",)), _UP, T("FFN_UP", "bias", ("n_ff",)))),
    # case LLM_ARCH_GEMMA2: output is always token_embd (an output.weight is never created).
    "gemma2": Arch(
        keys=(("Attention.SLIDING_WINDOW", "u32", False), _RMS,
              ("LLM.ATTN_LOGIT_SOFTCAPPING", "f32", False), ("LLM.FINAL_LOGIT_SOFTCAPPING", "f32", False)),
        tensors=(_TOK, _ONORM, _NORM, _Q_HK, _K_GQA, _V_GQA, _O_HK, T("ATTN_POST_NORM", "weight", ("n_embd",)),
                 _FNORM, _GATE, _UP, _DOWN, T("FFN_POST_NORM", "weight", ("n_embd",)))),
    # case LLM_ARCH_GEMMA3: sliding_window required, optional output, q/k norms.
    "gemma3": Arch(
        keys=(("Attention.SLIDING_WINDOW", "u32", True), _RMS),
        tensors=(_TOK, _ONORM, _OUT_OPT, _NORM, _Q_HK, _K_GQA, _V_GQA, _O_HK,
                 T("ATTN_POST_NORM", "weight", ("n_embd",)), *_QK_NORM,
                 _FNORM, _GATE, _UP, _DOWN, T("FFN_POST_NORM", "weight", ("n_embd",)))),
    # case LLM_ARCH_STARCODER2: LayerNorm with biases, every projection bias required.
    "starcoder2": Arch(
        keys=(_EPS,),
        tensors=(_TOK, _ONORM, _ONORM_B, _OUT_OPT, _NORM, _NORM_B, _Q_E, _K_G, _V_G, _O_E,
                 T("ATTN_Q", "bias", ("n_embd",)), T("ATTN_K", "bias", ("n_embd_gqa",)),
                 T("ATTN_V", "bias", ("n_embd_gqa",)), T("ATTN_OUT", "bias", ("n_embd",)),
                 _FNORM, _FNORM_B, _DOWN, _UP, T("FFN_DOWN", "bias", ("n_embd",)), T("FFN_UP", "bias", ("n_ff",)))),
    # case LLM_ARCH_DEEPSEEK2: multi-head latent attention (split k_b/v_b when the *_mla
    # lengths are set, else the legacy kv_b), lite models (27 layers) without q LoRA,
    # dense leading blocks, shared experts.
    "deepseek2": Arch(
        keys=(_RMS, ("LLM.LEADING_DENSE_BLOCK_COUNT", "u32", True),
              ("Attention.Q_LORA_RANK", "u32", "n_layer != 27"),          # not read for lite models
              ("Attention.KV_LORA_RANK", "u32", True),
              ("Attention.KEY_LENGTH_MLA", "u32", False), ("Attention.VALUE_LENGTH_MLA", "u32", False),
              ("LLM.EXPERT_FEED_FORWARD_LENGTH", "u32", True), ("LLM.EXPERT_SHARED_COUNT", "u32", True),
              ("LLM.EXPERT_WEIGHTS_SCALE", "f32", True), ("LLM.EXPERT_WEIGHTS_NORM", "bool", False),
              ("LLM.EXPERT_GATING_FUNC", "u32", False), ("Rope.SCALING_YARN_LOG_MUL", "f32", False)),
        derive=(("is_lite", "n_layer == 27"),
                ("is_mla", "key_length_mla != 0 and value_length_mla != 0"),
                ("head_k_mla", "key_length_mla if is_mla else head_k"),
                ("head_v_mla", "value_length_mla if is_mla else head_v"),
                ("n_ff_exp", "expert_feed_forward_length"),
                ("n_ff_shexp", "expert_feed_forward_length * expert_shared_count")),
        checks=tuple((f"n_layer > leading_dense_block_count and ({c})", m) for c, m in _MOE_REQUIRED),
        tensors=(_TOK, _ONORM, _OUT, _NORM,
                 T("ATTN_Q_A_NORM", "weight", ("q_lora_rank",), when="not is_lite"),
                 T("ATTN_KV_A_NORM", "weight", ("kv_lora_rank",)),
                 T("ATTN_Q_A", "weight", ("n_embd", "q_lora_rank"), when="not is_lite"),
                 T("ATTN_Q_B", "weight", ("q_lora_rank", "n_head * head_k_mla"), when="not is_lite"),
                 T("ATTN_Q", "weight", ("n_embd", "n_head * head_k_mla"), when="is_lite"),
                 T("ATTN_KV_A_MQA", "weight", ("n_embd", "kv_lora_rank + n_rot")),
                 T("ATTN_K_B", "weight", ("head_k_mla - n_rot", "kv_lora_rank", "n_head"), when="is_mla"),
                 T("ATTN_V_B", "weight", ("kv_lora_rank", "head_v_mla", "n_head"), when="is_mla"),
                 T("ATTN_KV_B", "weight", ("kv_lora_rank", "n_head * (head_k_mla - n_rot + head_v_mla)"),
                   when="not is_mla"),
                 T("ATTN_OUT", "weight", ("n_head * head_v_mla", "n_embd")),
                 _FNORM,
                 *_when("i < leading_dense_block_count", _GATE, _DOWN, _UP),
                 *_when("i >= leading_dense_block_count", *_MOE,
                        T("FFN_EXP_PROBS_B", "bias", ("n_expert",), False),
                        T("FFN_GATE_SHEXP", "weight", ("n_embd", "n_ff_shexp")),
                        T("FFN_DOWN_SHEXP", "weight", ("n_ff_shexp", "n_embd")),
                        T("FFN_UP_SHEXP", "weight", ("n_embd", "n_ff_shexp"))))),
    # case LLM_ARCH_OPENAI_MOE ("gpt-oss"): attention sinks, biased experts, required
    # output, heads of n_rot.
    "gpt-oss": Arch(
        keys=(_RMS, ("LLM.EXPERT_FEED_FORWARD_LENGTH", "u32", True), ("Attention.SLIDING_WINDOW", "u32", True)),
        derive=(("n_ff_exp", "expert_feed_forward_length"),),
        tensors=(_TOK, _ONORM, _OUT, _NORM, T("ATTN_POST_NORM", "weight", ("n_embd",)),
                 T("ATTN_Q", "weight", ("n_embd", "n_head * n_rot")),
                 T("ATTN_K", "weight", ("n_embd", "n_head_kv * n_rot")),
                 T("ATTN_V", "weight", ("n_embd", "n_head_kv * n_rot")),
                 T("ATTN_OUT", "weight", ("n_head * n_rot", "n_embd")),
                 T("ATTN_SINKS", "weight", ("n_head",)), *_MOE,
                 T("ATTN_Q", "bias", ("n_head * n_rot",)), T("ATTN_K", "bias", ("n_head_kv * n_rot",)),
                 T("ATTN_V", "bias", ("n_head_kv * n_rot",)), T("ATTN_OUT", "bias", ("n_embd",)),
                 T("FFN_GATE_INP", "bias", ("n_expert",)), T("FFN_GATE_EXP", "bias", ("n_ff_exp", "n_expert")),
                 T("FFN_DOWN_EXP", "bias", ("n_embd", "n_expert")), T("FFN_UP_EXP", "bias", ("n_ff_exp", "n_expert")))),
}
