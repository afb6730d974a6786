"""Standard tensor names per architecture: what GG501 reads, from gguf-py at run time.

Why: llama.cpp looks every weight up by name (``token_embd.weight``,
``blk.0.attn_q.weight``, ...) and refuses a model with a missing or an extra tensor, so
a converter that spells a name differently makes a file no llama.cpp build loads.  The
per-architecture lists are llama.cpp's gguf-py ``MODEL_TENSORS`` / ``TENSOR_NAMES``, read
through ``ggscope.facts.upstream`` so they follow the installed package.

Contract: ``is_standard(arch, name)`` says whether ``name`` (with an optional
``.weight``/``.bias``/``.scale``/``.scales`` suffix) is one of ``arch``'s names; an
architecture gguf-py does not know has no opinion (None).
"""
from __future__ import annotations

import re

from ggscope.facts import upstream

__all__ = ["SUFFIXES", "is_standard", "split_name"]

SUFFIXES = ("weight", "bias", "scale", "scales")
_BLOCK = re.compile(r"blk\.(\d+)\.(.+)")


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
    entry = upstream.arch_tensors(arch)
    if entry is None:
        return None
    in_block, stem = split_name(name)
    return stem in (entry[1] if in_block else entry[0])
