"""Which spec reads a legacy llama.cpp, ggml-example or chatglm.cpp file.

Why: three of the legacy formats share magics with each other or with a sibling, so the
first four bytes alone do not decide (legacy-formats.md §0):

* ``ggmf`` (bytes "fmgg") is llama.cpp's GGMF when the version word is 1 and rwkv.cpp
  when it is 100 or 101; only version 1 is ours (rwkv.cpp has its own sniffer).
* The ASCII bytes "ggml" are chatglm.cpp, which writes the magic as four characters;
  ggml.c-style writers store the number 0x67676d6c little-endian, i.e. the bytes "lmgg".
  (A big-endian ggml.c file would also start with "ggml"; none is known.)
* "lmgg" (unversioned GGML) is written both by llama.cpp's first converters (LLaMA,
  2023-03) and by ggml's example programs (gpt-2, gpt-j, ...), with different headers.

How the last case is decided (the "hyper-parameter block" rule). Words are
little-endian 32-bit, ``w[k]`` at offset ``4*k``; ``w[1]`` is ``n_vocab`` in both:

=========  ===========================================  ==================================
producer   header words after the magic                 word at 28 / word at 32
=========  ===========================================  ==================================
llama.cpp  n_vocab n_embd n_mult n_head n_layer n_rot   ftype (0..4) / length of token 0
           ftype, then the tokens directly
gpt-2      n_vocab n_ctx n_embd n_head n_layer ftype,   **n_vocab again** / length of
           then an explicit vocabulary count            token 0
gpt-j      n_vocab n_ctx n_embd n_head n_layer n_rot    ftype / **n_vocab again**
           ftype, then an explicit vocabulary count
=========  ===========================================  ==================================

The example programs repeat ``n_vocab`` as a vocabulary count right after their header
(their loaders reject a mismatch); llama.cpp does not. So: ``w[7] == n_vocab`` means
gpt-2 style, ``w[8] == n_vocab`` (with ``w[7]`` a plausible ftype, below 1000 × 10)
means gpt-j style, and neither means llama.cpp. llama.cpp could only be mistaken for an
example file if its ftype (at most 4) or the byte length of its first token (" ⁇ ",
5 bytes, in every LLaMA converter) equalled ``n_vocab``; no real vocabulary is that
small. ``n_vocab`` must also be positive (a zero count would match trivially).

Contract: ``sniff(head, size)`` takes the first bytes of a file (36 are needed for the
"lmgg" rule to see both candidate vocabulary counts; a shorter, truncated file is
handed to the llama.cpp spec, whose walk reports the damage) and the file size, and returns the spec id
("ggml_llama", "ggml_example", "chatglm_cpp") or None when the file is none of these.
It never raises. ``RULES`` is the table of magics, versions and checks it applies, in
order; ``describe(spec_id)`` gives a human name for messages.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Rule", "RULES", "sniff", "describe", "hparams_style"]

_LLAMA_FTYPE_MAX = 18            # llama_ftype values a pre-GGUF file can hold (§4.1)
_QNTVR_FACTOR = 1000             # GGML_QNT_VERSION_FACTOR (§1.3)
_QNTVR_MAX = 9                   # header ftype < 10 000: quantization versions 0..2 exist


@dataclass(frozen=True)
class Rule:
    """One identification rule: magic bytes at offset 0, then a check on what follows."""
    spec: str                    # formats/<spec>.ksy
    name: str                    # what a message calls the format
    magic: bytes                 # bytes 0..3 as stored in the file
    versions: tuple[int, ...]    # accepted u32 at offset 4; () = no version word
    style: str | None            # required ``hparams_style`` ("lmgg" files only)
    check: str                   # the discriminating test, in words (shown in docs/errors)


RULES: tuple[Rule, ...] = (
    Rule("ggml_llama", "llama.cpp GGJT", b"tjgg", (1, 2, 3), None,
         "version word 1, 2 or 3 at offset 4"),
    Rule("ggml_llama", "llama.cpp GGMF", b"fmgg", (1,), None,
         "version word 1 at offset 4 (100/101 is rwkv.cpp)"),
    Rule("ggml_example", "ggml example GGML (gpt-2 style)", b"lmgg", (), "gpt-2",
         "word at offset 28 repeats n_vocab (explicit vocabulary count)"),
    Rule("ggml_example", "ggml example GGML (gpt-j style)", b"lmgg", (), "gpt-j",
         "word at offset 32 repeats n_vocab and the word at 28 is a plausible ftype"),
    Rule("ggml_llama", "llama.cpp unversioned GGML", b"lmgg", (), "llama",
         "no vocabulary count after the 7 header words; ftype at offset 28 is 0..18"),
    Rule("chatglm_cpp", "chatglm.cpp", b"ggml", (), None,
         "the 4 ASCII bytes 'ggml' (ggml.c writers store 'lmgg')"),
)

_NAMES = {"ggml_llama": "llama.cpp GGML/GGMF/GGJT", "ggml_example": "ggml example GGML (gpt-2/gpt-j)",
          "chatglm_cpp": "chatglm.cpp"}


def describe(spec: str) -> str:
    """A human name for a spec id this module returns."""
    return _NAMES.get(spec, spec)


def _words(head: bytes, n: int) -> tuple[int, ...] | None:
    if len(head) < 4 * n:
        return None
    return struct.unpack_from(f"<{n}I", head, 0)


def hparams_style(head: bytes) -> str | None:
    """For an "lmgg" file: "llama", "gpt-2" or "gpt-j" by the hyper-parameter rule above.

    None when the magic is not "lmgg", or the words fit no producer (no repeated n_vocab
    and an ftype above llama.cpp's 18). A head too short to show the words at 28 and 32
    (a truncated file) is read as llama.cpp's; its walk then reports where it ends.
    """
    if head[:4] != b"lmgg" or len(head) < 8:
        return None
    w = struct.unpack_from(f"<{min(9, len(head) // 4)}I", head, 0)
    n_vocab = w[1]
    if n_vocab and len(w) > 7 and w[7] == n_vocab:
        return "gpt-2"
    if n_vocab and len(w) > 8 and w[8] == n_vocab and w[7] < _QNTVR_FACTOR * (_QNTVR_MAX + 1):
        return "gpt-j"
    return "llama" if len(w) < 8 or w[7] <= _LLAMA_FTYPE_MAX else None


def sniff(head: bytes, size: int) -> str | None:
    """The spec id for a file starting with ``head`` (see the module docstring), or None."""
    try:
        head = bytes(head[:64])
    except (TypeError, ValueError):
        return None
    if len(head) < 4 or size < 4:
        return None
    version = _words(head, 2)
    style = hparams_style(head)
    for rule in RULES:
        if head[:4] != rule.magic:
            continue
        if rule.versions and (version is None or version[1] not in rule.versions):
            continue
        if rule.style is not None and style != rule.style:
            continue
        return rule.spec
    return None
