"""The generated loader table's API: GGUF key names, defaults and tensor names per architecture.

Why: ``ggscope.facts.llama_arch`` is generated data in llama.cpp's own terms (``LLM_KV_``
enums, hparams fields, ``%d`` name templates); the loader rules and the memory estimator
both need the same translations into GGUF keys, default values and tensor names, so they
live here once.

Contract:

* ``spec(arch)`` -> ``Arch`` or None (``ggscope.facts.llama_arch_types`` documents it).
* ``key(kv, arch)`` -> the GGUF key (``"ATTENTION_HEAD_COUNT"``, ``"llama"`` ->
  ``"llama.attention.head_count"``).
* ``default(h, arch)`` -> the value llama.cpp uses when ``h`` is absent: the field's preset in
  load_arch_hparams, else its initial value in llama_hparams, else None.
* ``tensor_name(t, block)`` / ``tensor_pattern(t)`` -> the tensor's GGUF name for a block, and
  a compiled regex whose group 1 is the block index (None group for non-block tensors).
* ``is_block(t)`` -> whether the tensor is per block (``blk.%d``).
"""
from __future__ import annotations

import re
from functools import lru_cache

from ggscope.facts import llama_arch as gen

__all__ = ["spec", "key", "default", "tensor_name", "tensor_pattern", "is_block", "PINNED"]

PINNED = gen.PINNED


def spec(arch: str | None):
    return gen.ARCHS.get(arch) if arch and arch != "clip" else None


def key(kv: str, arch: str) -> str:
    name = gen.KV_NAMES[kv]
    return name % arch if "%s" in name else name


def default(h, arch: str):
    s = gen.ARCHS.get(arch)
    if s is not None and h.dest in s.preset:
        return s.preset[h.dest]
    return gen.HPARAM_DEFAULTS.get(h.dest)


def is_block(t) -> bool:
    return "%d" in gen.TENSOR_NAMES[t.tensor]


def tensor_name(t, block: int | None) -> str:
    name = gen.TENSOR_NAMES[t.tensor]
    if "%d" in name:
        name = name.replace("%d", str(block), 1)
    return f"{name}.{t.suffix}" if t.suffix else name


@lru_cache(maxsize=None)
def tensor_pattern(t) -> re.Pattern:
    rx = re.escape(gen.TENSOR_NAMES[t.tensor]).replace("%d", r"(\d+)")
    return re.compile(rx + (r"\." + re.escape(t.suffix) if t.suffix else "") + r"$")
