"""Standard tensor names per architecture: the one table GG501 reads.

Why: llama.cpp looks every weight up by name (``token_embd.weight``,
``blk.0.attn_q.weight``, ...) and refuses a model with a missing or an extra tensor, so
a converter that spells a name differently makes a file no llama.cpp build loads.  The
GGUF spec (§3 "Standardized tensor names") gives the scheme - base layers ``AA.weight``
/ ``AA.bias``, blocks ``blk.N.BB.weight`` / ``blk.N.BB.bias`` - and llama.cpp's gguf-py
(``gguf.constants.MODEL_TENSORS``) the per-architecture lists; this table is those
lists for the architectures below (the spec's ``pos_embd`` is spelled
``position_embd`` in real files).  ggscope does not import gguf at run time;
``tests/rules/test_tensors.py`` checks this table against gguf-py.

Contract: ``ARCH_TENSORS[arch]`` is ``(base names, block names)``; ``is_standard(arch,
name)`` says whether ``name`` (with an optional ``.weight``/``.bias``/``.scale``
suffix) is one of them; an architecture not in the table has no opinion (None).
"""
from __future__ import annotations

import re

__all__ = ["ARCH_TENSORS", "SUFFIXES", "is_standard", "split_name"]

SUFFIXES = ("weight", "bias", "scale")
_BLOCK = re.compile(r"blk\.(\d+)\.(.+)")


def _arch(base: str, block: str) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(base.split()), frozenset(block.split())


ARCH_TENSORS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "llama": _arch("output output_norm rope_freqs token_embd",
                   "attn_k attn_norm attn_output attn_q attn_rot_embd attn_v ffn_down ffn_down_exps ffn_gate ffn_gate_exps ffn_gate_inp ffn_norm ffn_up ffn_up_exps"),
    "gpt2": _arch("output output_norm position_embd token_embd",
                  "attn_norm attn_output attn_qkv ffn_down ffn_norm ffn_up"),
    "falcon": _arch("output output_norm token_embd",
                    "attn_norm attn_norm_2 attn_output attn_qkv ffn_down ffn_up"),
    "mpt": _arch("output output_norm position_embd token_embd",
                 "attn_k_norm attn_norm attn_output attn_q_norm attn_qkv ffn ffn_down ffn_norm ffn_up"),
    "gptneox": _arch("output output_norm token_embd",
                     "attn_norm attn_output attn_qkv ffn_down ffn_norm ffn_up"),
    "gptj": _arch("output output_norm token_embd",
                  "attn_k attn_norm attn_output attn_q attn_v ffn_down ffn_up"),
    "bloom": _arch("output output_norm token_embd token_embd_norm",
                   "attn_norm attn_output attn_qkv ffn_down ffn_norm ffn_up"),
    "qwen2": _arch("output output_norm rope_freqs token_embd",
                   "attn_k attn_norm attn_output attn_q attn_v ffn_down ffn_gate ffn_norm ffn_up"),
    "phi2": _arch("output output_norm token_embd",
                  "attn_k attn_norm attn_output attn_q attn_qkv attn_v ffn_down ffn_norm ffn_up"),
    "phi3": _arch("output output_norm rope_factors_long rope_factors_short token_embd",
                  "attn_k attn_norm attn_output attn_q attn_qkv attn_v ffn_down ffn_norm ffn_up"),
    "gemma": _arch("output_norm token_embd",
                   "attn_k attn_norm attn_output attn_q attn_v ffn_down ffn_gate ffn_norm ffn_up"),
    "starcoder": _arch("output output_norm position_embd token_embd",
                       "attn_norm attn_output attn_qkv ffn_down ffn_norm ffn_up"),
    "starcoder2": _arch("output output_norm rope_freqs token_embd",
                        "attn_k attn_norm attn_output attn_q attn_rot_embd attn_v ffn_down ffn_norm ffn_up"),
    "refact": _arch("output output_norm token_embd",
                    "attn_k attn_norm attn_output attn_q attn_v ffn_down ffn_gate ffn_norm ffn_up"),
    "baichuan": _arch("output output_norm rope_freqs token_embd",
                      "attn_k attn_norm attn_output attn_q attn_rot_embd attn_v ffn_down ffn_gate ffn_norm ffn_up"),
    "bert": _arch("cls cls.output output_norm position_embd token_embd token_embd_norm token_types",
                  "attn_k attn_output attn_output_norm attn_q attn_qkv attn_v ffn_down ffn_up layer_output_norm"),
    "mamba": _arch("output output_norm token_embd",
                   "attn_norm ssm_a ssm_conv1d ssm_d ssm_dt ssm_in ssm_out ssm_x"),
    "rwkv6": _arch("output output_norm token_embd token_embd_norm",
                   "attn_norm attn_norm_2 channel_mix_key channel_mix_lerp_k channel_mix_lerp_r channel_mix_receptance channel_mix_value time_mix_decay time_mix_decay_w1 time_mix_decay_w2 time_mix_first time_mix_gate time_mix_key time_mix_lerp_fused time_mix_lerp_g time_mix_lerp_k time_mix_lerp_r time_mix_lerp_v time_mix_lerp_w time_mix_lerp_x time_mix_ln time_mix_output time_mix_receptance time_mix_value time_mix_w1 time_mix_w2"),
}


def split_name(name: str) -> tuple[bool, str]:
    """(is a block tensor, stem without ``blk.N.`` and without a known suffix)."""
    m = _BLOCK.fullmatch(name)
    stem = m.group(2) if m else name
    head, dot, tail = stem.rpartition(".")
    if dot and tail in SUFFIXES:
        stem = head
    return m is not None, stem


def is_standard(arch: str, name: str) -> bool | None:
    """Whether ``name`` is a standard tensor name of ``arch`` (None: unknown arch)."""
    entry = ARCH_TENSORS.get(arch)
    if entry is None:
        return None
    in_block, stem = split_name(name)
    return stem in (entry[1] if in_block else entry[0])
