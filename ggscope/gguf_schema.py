"""The GGUF metadata schema: standard keys, their types, and each architecture's required keys.

Why: the schema rules (GG6xx), the tokenizer rules (GG7xx) and the key-naming rules
(GG4xx) all need to know which keys the spec standardizes and what type it gives them;
this is the one table of that fact.  Everything here is transcribed from the GGUF spec
(``../shared/seeds/gguf-spec.txt``, ggml ``docs/gguf.md``); each block cites its section.

Contract:

* ``STANDARD_KEYS``: exact key -> spec type name ("uint32", "string", "array[string]", ...).
* ``LLM_KEYS``: key suffix after ``[llm].`` -> spec type name (§2.2, §2.2.1-§2.2.3).
* ``ARCH_REQUIRED``: architecture -> the keys §2.2.4 says "must be present".
* ``expected_type(key, arch)`` -> the spec type of any key, or None when not standard.
* ``type_matches(spec_type, file_type)`` -> "ok", "width" (same kind, other width: the
  spec's "By convention, most counts are uint64 ... readers support both" case) or
  "kind" (a different kind of value: string for a number, ...).
"""
from __future__ import annotations

import re

__all__ = ["STANDARD_KEYS", "LLM_KEYS", "ARCH_REQUIRED", "ARCH_NAME_RE", "DEFAULT_ALIGNMENT",
           "TOKEN_ID_RE", "expected_type", "type_matches", "kind"]

DEFAULT_ALIGNMENT = 32                       # §2.1.1 "If the alignment is not specified, assume it is 32"
ARCH_NAME_RE = re.compile(r"[a-z0-9]+")      # §2.1.1 general.architecture: "[a-z0-9]+"
TOKEN_ID_RE = re.compile(r"tokenizer\.ggml\.[a-z0-9_]+_token_id")   # §2.4.1.1 special tokens

# §2.1.1 Required, §2.1.2 General metadata, §2.1.3 Source metadata
_GENERAL = {
    "general.architecture": "string", "general.quantization_version": "uint32",
    "general.alignment": "uint32",
    "general.name": "string", "general.author": "string", "general.version": "string",
    "general.organization": "string", "general.basename": "string", "general.finetune": "string",
    "general.description": "string", "general.quantized_by": "string", "general.size_label": "string",
    "general.license": "string", "general.license.name": "string", "general.license.link": "string",
    "general.url": "string", "general.doi": "string", "general.uuid": "string",
    "general.repo_url": "string", "general.tags": "array[string]", "general.languages": "array[string]",
    "general.datasets": "array[string]", "general.file_type": "uint32",
    "general.source.url": "string", "general.source.doi": "string", "general.source.uuid": "string",
    "general.source.repo_url": "string", "general.base_model.count": "uint32",
}
# §2.1.3 general.base_model.{id}.*
_BASE_MODEL = {"name": "string", "author": "string", "version": "string", "organization": "string",
               "url": "string", "doi": "string", "uuid": "string", "repo_url": "string"}
_BASE_MODEL_RE = re.compile(r"general\.base_model\.\d+\.([a-z_]+)")

# §2.4 Tokenizer: §2.4.1 GGML, §2.4.1.1 special tokens, §2.4.2 Hugging Face, §2.4.3 Other
_TOKENIZER = {
    "tokenizer.ggml.model": "string", "tokenizer.ggml.tokens": "array[string]",
    "tokenizer.ggml.scores": "array[float32]", "tokenizer.ggml.token_type": "array[int32]",
    "tokenizer.ggml.merges": "array[string]", "tokenizer.ggml.added_tokens": "array[string]",
    "tokenizer.ggml.bos_token_id": "uint32", "tokenizer.ggml.eos_token_id": "uint32",
    "tokenizer.ggml.unknown_token_id": "uint32", "tokenizer.ggml.separator_token_id": "uint32",
    "tokenizer.ggml.padding_token_id": "uint32",
    "tokenizer.huggingface.json": "string", "tokenizer.rwkv.world": "string",
    "tokenizer.chat_template": "string",
}

STANDARD_KEYS: dict[str, str] = {**_GENERAL, **_TOKENIZER}

# §2.2 LLM, §2.2.1 Attention, §2.2.2 RoPE, §2.2.2.1 Scaling, §2.2.3 SSM (key after "[llm].")
LLM_KEYS: dict[str, str] = {
    "context_length": "uint64", "embedding_length": "uint64", "block_count": "uint64",
    "feed_forward_length": "uint64", "use_parallel_residual": "bool", "tensor_data_layout": "string",
    "expert_count": "uint32", "expert_used_count": "uint32",
    "attention.head_count": "uint64", "attention.head_count_kv": "uint64",
    "attention.max_alibi_bias": "float32", "attention.clamp_kqv": "float32",
    "attention.layer_norm_epsilon": "float32", "attention.layer_norm_rms_epsilon": "float32",
    "attention.key_length": "uint32", "attention.value_length": "uint32",
    "rope.dimension_count": "uint64", "rope.freq_base": "float32",
    "rope.scaling.type": "string", "rope.scaling.factor": "float32",
    "rope.scaling.original_context_length": "uint32", "rope.scaling.finetuned": "bool",
    "rope.scale_linear": "float32",
    "ssm.conv_kernel": "uint32", "ssm.inner_size": "uint32", "ssm.state_size": "uint32",
    "ssm.time_step_rank": "uint32",
    # §2.2.4.9 RWKV, §2.2.4.10 Whisper
    "architecture_version": "uint32", "encoder.mels_count": "uint64",
}

# §2.2.4 Models: "Each key specified _must_ be present."
_COMMON = ("context_length", "embedding_length", "block_count")
ARCH_REQUIRED: dict[str, tuple[str, ...]] = {
    "llama": _COMMON + ("feed_forward_length", "rope.dimension_count", "attention.head_count",
                        "attention.layer_norm_rms_epsilon"),                          # §2.2.4.1
    "mpt": _COMMON + ("attention.head_count", "attention.alibi_bias_max", "attention.clip_kqv",
                      "attention.layer_norm_epsilon"),                                # §2.2.4.2
    "gptneox": _COMMON + ("use_parallel_residual", "rope.dimension_count", "attention.head_count",
                          "attention.layer_norm_epsilon"),                            # §2.2.4.3
    "gptj": _COMMON + ("rope.dimension_count", "attention.head_count",
                       "attention.layer_norm_epsilon"),                               # §2.2.4.4
    "gpt2": _COMMON + ("attention.head_count", "attention.layer_norm_epsilon"),      # §2.2.4.5
    "bloom": _COMMON + ("feed_forward_length", "attention.head_count",
                        "attention.layer_norm_epsilon"),                              # §2.2.4.6
    "falcon": _COMMON + ("attention.head_count", "attention.head_count_kv", "attention.use_norm",
                         "attention.layer_norm_epsilon"),                             # §2.2.4.7
    "mamba": _COMMON + ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                        "attention.layer_norm_rms_epsilon"),                          # §2.2.4.8
    "rwkv": ("architecture_version", "context_length", "block_count", "embedding_length",
             "feed_forward_length"),                                                  # §2.2.4.9
    "whisper": ("encoder.context_length", "encoder.embedding_length", "encoder.block_count",
                "encoder.mels_count", "encoder.attention.head_count", "decoder.context_length",
                "decoder.embedding_length", "decoder.block_count",
                "decoder.attention.head_count"),                                      # §2.2.4.10
}

_KINDS = {"uint8": "int", "int8": "int", "uint16": "int", "int16": "int", "uint32": "int",
          "int32": "int", "uint64": "int", "int64": "int", "float32": "float", "float64": "float",
          "bool": "bool", "string": "string"}


def kind(type_name: str) -> str:
    """"int", "float", "bool", "string", "array[<kind>]" or "unknown"."""
    if type_name.startswith("array[") and type_name.endswith("]"):
        return f"array[{kind(type_name[6:-1])}]"
    return _KINDS.get(type_name, "unknown")


def expected_type(key: str, arch: str | None = None) -> str | None:
    """The spec type of ``key`` (None when the spec does not standardize it)."""
    if key in STANDARD_KEYS:
        return STANDARD_KEYS[key]
    m = _BASE_MODEL_RE.fullmatch(key)
    if m:
        return _BASE_MODEL.get(m.group(1))
    if arch and key.startswith(arch + "."):
        rest = key[len(arch) + 1:]
        if arch == "whisper" and rest.startswith(("encoder.", "decoder.")):
            rest = rest.split(".", 1)[1]      # §2.2.4.10: share the definitions of [llm].*
        return LLM_KEYS.get(rest)
    return None


def type_matches(spec_type: str, file_type: str) -> str:
    """"ok", "width" (same kind, another width) or "kind" (another kind of value)."""
    if spec_type == file_type:
        return "ok"
    if kind(spec_type) == kind(file_type):
        return "width"
    return "kind"
