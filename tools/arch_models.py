"""Tiny random-weight GGUF models of the decoders the forward pass learned after the
shared fixtures, written deterministically so llama.cpp's logits recorded once
(``tools/record_arch_logits.py``) hold for the models a test writes again.

Why a module: the held-to-llama.cpp tests (tests/forward/test_more_archs.py) need, per
architecture, a file llama.cpp loads -- the keys and tensors its loader asks for
(``ggscope.facts.llama_arch``, generated from llama.cpp as vendored in
llama-cpp-python 0.3.36: src/models/<arch>.cpp ``load_arch_hparams`` /
``load_arch_tensors``) -- with weights that make each architecture's own switch bite
(a residual scale, a layer without rope, a full-width q norm).  No model file is checked
in: the test writes it into its tmp_path and compares the sha256 with the record.

Contract: ``write(name, encoding, path) -> Path`` writes ``SPECS[name]`` in ``"F32"`` or
``"Q8_0"`` (gguf-py's GGUFWriter and quantizer; the same bytes on every run);
``SEQ`` is the token sequence the logits are recorded for; ``sha256(path)``.
The architectures' keys and weights are in ``tools.arch_specs``, the vocabulary in
``tools.arch_vocab``.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from tools.arch_specs import SPECS, Init
from tools.arch_vocab import BOS, EOS, MERGES, N_VOCAB, PAD, SEQ, TOKEN_TYPES, TOKENS

__all__ = ["SPECS", "SEQ", "N_VOCAB", "write", "sha256", "arch_of"]


_KEEP_F32 = re.compile(r"norm|bias|ffn_gate_inp|token_embd_norm")


def _quantized(name: str, a: np.ndarray) -> bool:
    """What llama.cpp's converters quantize: matrices whose rows fill Q8_0 blocks, not
    norms, biases or the router."""
    return a.ndim >= 2 and a.shape[-1] % 32 == 0 and not _KEEP_F32.search(name)


def write(name: str, encoding: str, path: str | Path) -> Path:
    """Write ``SPECS[name]`` -- an architecture, or a variant of one whose spec names its
    ``arch`` -- as a GGUF file in ``encoding`` ("F32" or "Q8_0")."""
    import gguf
    if encoding not in ("F32", "Q8_0"):
        raise ValueError(f"encoding must be F32 or Q8_0, not {encoding!r}")
    spec, path = SPECS[name], Path(path)
    arch = spec.get("arch", name)
    tensors = spec["tensors"](Init(spec["seed"]))
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"Tiny {name} test")
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if encoding == "F32" else gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, value in spec["keys"].items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, list):
            w.add_array(key, value)
        else:
            w.add_uint32(key, value)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(TOKENS)
    w.add_token_types(TOKEN_TYPES)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_pad_token_id(PAD)
    w.add_add_bos_token(True)
    for name, a in tensors.items():
        if encoding == "Q8_0" and _quantized(name, a):
            q8 = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(a, q8), raw_dtype=q8)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def arch_of(name: str) -> str:
    """The ``general.architecture`` of ``SPECS[name]``."""
    return SPECS[name].get("arch", name)


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
