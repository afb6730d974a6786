"""Which RWKV architecture an rwkv.cpp file holds, from its parameter names and shapes.

Why: rwkv.cpp files do not store the architecture; rwkv.cpp's loader works it out
from which parameters exist, and the names, the shapes and the required-tensor list
of every later check depend on the answer.  This module is that one decision, as a
pure function, so the view builder, the validator and the tests share it.

Rules (rwkv.cpp ``rwkv_model_loading.inc``, applied in this order; the last match wins):

==============================================  =========
parameter present                               version
==============================================  =========
(none of the below)                             ``"4"``
``blocks.0.att.ln_x.weight``                    ``"5.1"``
``blocks.0.att.ln_x.weight`` and
``blocks.0.att.gate.weight``                    ``"5.2"``
``blocks.0.att.time_maa_x``                     ``"6"``
``blocks.0.att.r_k``                            ``"7"``
==============================================  =========

``"5.0"`` is never returned.  RWKV-5.0 ("preview") checkpoints have exactly the tensor
set and shapes of rwkv.cpp's v5.1 (``ln_x`` without ``gate``; per-head
``time_decay``/``time_first`` of ne ``[1, 1, n_head]``), and rwkv.cpp loads them as 5.1.
A rwkv.cpp file therefore cannot tell the two apart, and the answer follows rwkv.cpp's
naming, which is also what the file names of rwkv.cpp's test models use (``5v1``).

Shapes give the head geometry (``head_geometry``): for v5 and v6 the head count is
``ne[2]`` of ``blocks.0.att.time_decay``, for v7 ``ne[1]`` of ``blocks.0.att.r_k``;
the head size is ``ne[0]`` of ``blocks.0.ln1.weight`` divided by the head count.
v4 has no heads.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["ARCH_RULES", "arch_version", "head_geometry"]

# (marker parameter, extra parameter that must also be present or None, version),
# checked in order; a later match overrides an earlier one, as in rwkv.cpp's loader.
ARCH_RULES: tuple[tuple[str, str | None, str], ...] = (
    ("blocks.0.att.ln_x.weight", None, "5.1"),
    ("blocks.0.att.ln_x.weight", "blocks.0.att.gate.weight", "5.2"),
    ("blocks.0.att.time_maa_x", None, "6"),
    ("blocks.0.att.r_k", None, "7"),
)
DEFAULT_VERSION = "4"


def arch_version(params: Iterable[tuple[str, Sequence[int]]]) -> str:
    """The RWKV architecture version ("4", "5.1", "5.2", "6", "7") of these parameters.

    ``params`` is ``(name, shape)`` in any order, shape in ggml order; only the names
    decide the version (see the module docstring for the rules).
    """
    names = {name for name, _ in params}
    version = DEFAULT_VERSION
    for marker, also, ver in ARCH_RULES:
        if marker in names and (also is None or also in names):
            version = ver
    return version


def head_geometry(params: Iterable[tuple[str, Sequence[int]]],
                  version: str) -> tuple[int, int] | None:
    """``(head_count, head_size)`` as rwkv.cpp derives it, or None.

    None for v4 (no heads) and when the tensors the rule reads are missing, have too
    few dimensions, or do not divide evenly (a damaged file: the validator says why).
    """
    shapes = {name: tuple(shape) for name, shape in params}
    if version == DEFAULT_VERSION:
        return None
    if version == "7":
        source, axis = shapes.get("blocks.0.att.r_k"), 1
    else:
        source, axis = shapes.get("blocks.0.att.time_decay"), 2
    ln1 = shapes.get("blocks.0.ln1.weight")
    if source is None or ln1 is None or len(source) <= axis or not ln1:
        return None
    head_count = source[axis]
    if head_count <= 0 or ln1[0] % head_count:
        return None
    return head_count, ln1[0] // head_count
