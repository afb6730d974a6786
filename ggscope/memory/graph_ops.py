"""The ggml calls llama.cpp's graphs are made of, as shapes: what each returns, for the allocator replay.

Why: ``ggscope.memory.galloc`` replays ggml-alloc over a graph of ``Tensor`` shapes; the
graph builders (``ggscope.memory.graph``, ``graph_ssm``) write llama.cpp's model code with
these functions, one per ggml call, each giving the result ggml/src/ggml.c gives (llama.cpp
as vendored in llama-cpp-python 0.3.36): its op, shape, element size and sources, a view
(RESHAPE, VIEW, PERMUTE, TRANSPOSE, and the ops ggml builds with ``ggml_view_tensor``:
SET_ROWS, CPY, in-place SCALE) sharing its source's memory.  ``ggml_dup_tensor`` results
(element-wise ops, norms, RoPE, soft-max) take the first source's shape, contiguous.

Contract: plain functions over ``Tensor``; ``new_input`` marks a graph input, ``weight``
an external tensor; nothing here allocates or reads data.
"""
from __future__ import annotations

from ggscope.facts.ggml_types import type_by_name
from ggscope.memory.galloc import Tensor

__all__ = ["F32", "F16", "I32", "I64", "new_input", "weight", "cache_type", "op", "dup", "view", "reshape", "permute",
           "transpose", "mul_mat", "cont", "get_rows", "concat", "cpy_into", "set_rows", "cast", "glu", "glu1", "unary",
           "hadamard", "nelements"]

F32, F16, I32, I64 = 4, 2, 4, 8


def nelements(a: Tensor) -> int:
    return a.ne[0] * a.ne[1] * a.ne[2] * a.ne[3]


def new_input(ne, esize=F32, name="") -> Tensor:
    """ggml_new_tensor + ggml_set_input: a leaf the allocator places first."""
    t = Tensor("NONE", ne, esize, name=name)
    t.input = True
    return t


def weight(ne, name="", esize=F32, blck=1) -> Tensor:
    """A model weight or a cache tensor: in its own buffer, never placed by the allocator."""
    return Tensor("NONE", ne, esize, external=True, name=name, blck=blck)


def cache_type(name: str) -> tuple[int, int]:
    """(bytes per block, elements per block) of a cache type (ggscope.facts.ggml_types)."""
    t = type_by_name(name.upper())
    return t.block_bytes, t.block_elems


def op(kind, ne, src, esize=F32, name="") -> Tensor:
    return Tensor(kind, ne, esize, src, name=name)


def dup(kind, a, src, name="") -> Tensor:
    """A result shaped by ggml_dup_tensor(a): a's shape and type, contiguous."""
    return Tensor(kind, a.ne, a.esize, src, name=name)


def view(a, ne, nb=None, offs=0, kind="VIEW", src=None) -> Tensor:
    """ggml_view_*d (strides ``nb`` from dim 0; default: a's row strides) or another op built on
    ggml_view_tensor: the result shares a's memory (its root ``view_src``)."""
    ne = tuple(ne) + (1,) * (4 - len(ne))
    if nb is None:
        nb = Tensor("", ne, a.esize, blck=a.blck).nb
    elif len(nb) < 4:
        nb = tuple(nb) + tuple(nb[-1] * ne[i] for i in range(len(nb), 4))
    return Tensor(kind, ne, a.esize, src if src is not None else (a,), nb=nb, view_of=a, offs=offs, blck=a.blck)


def reshape(a, *ne) -> Tensor:
    return view(a, ne, kind="RESHAPE")


def permute(a, axes) -> Tensor:
    """ggml_permute: source dim i goes to ``axes[i]``."""
    ne, nb = [0] * 4, [0] * 4
    for i, ax in enumerate(axes):
        ne[ax], nb[ax] = a.ne[i], a.nb[i]
    return view(a, ne, nb, kind="PERMUTE")


def transpose(a) -> Tensor:
    return permute(a, (1, 0, 2, 3))


def mul_mat(a, b, name="") -> Tensor:
    return op("MUL_MAT", (a.ne[1], b.ne[1], b.ne[2], b.ne[3]), (a, b), name=name)


def cont(a, *ne) -> Tensor:
    return op("CONT", ne or a.ne, (a,), a.esize)


def get_rows(a, b) -> Tensor:
    """ggml_get_rows: rows of ``a`` picked by the ids ``b``, f32 (or i32: the same 4 bytes)."""
    return op("GET_ROWS", (a.ne[0], b.ne[0], b.ne[1], b.ne[2]), (a, b), F32)


def concat(a, b, dim: int) -> Tensor:
    ne = tuple(a.ne[i] + b.ne[i] if i == dim else a.ne[i] for i in range(4))
    return op("CONCAT", ne, (a, b), a.esize)


def cpy_into(a, b) -> Tensor:
    """ggml_cpy(a, b): a view of the destination b."""
    return view(b, b.ne, b.nb, kind="CPY", src=(a, b))


def set_rows(a, b, c) -> Tensor:
    """ggml_set_rows(a, b, c): a view of the destination a; sources (b, c, a)."""
    return view(a, a.ne, a.nb, kind="SET_ROWS", src=(b, c, a))


def cast(a, esize) -> Tensor:
    """ggml_cast: a new tensor whose second source is itself."""
    t = Tensor("CPY", a.ne, esize, (a,))
    t.src = (a, t)
    return t


def glu(a, b, name="SWIGLU") -> Tensor:
    """ggml_*glu_split(a, b): a's shape (GLU is not an in-place op for ggml-alloc); the op is
    named as ggml_op_desc prints it (ggml_glu_op_name)."""
    return op(name, a.ne, (a, b), a.esize)


def glu1(a, name="SWIGLU") -> Tensor:
    """ggml_swiglu(a) and its kin: one input, gate and value halves of each row (ne0 / 2)."""
    return op(name, (a.ne[0] // 2,) + a.ne[1:], (a,), a.esize)


def unary(a, name: str) -> Tensor:
    """ggml_unary (ggml_silu, ggml_sigmoid, ggml_softplus, ...): a's shape, named by its unary op."""
    return dup(name, a, (a,))


def hadamard(cur, rot) -> Tensor:
    """llama_mul_mat_hadamard (src/llama-impl.h): rows of ``rot``'s width times the rotation."""
    n = rot.ne[0]
    count = nelements(cur)
    res = reshape(cur, n, count // n) if cur.contiguous() else cont(cur, n, count // n)
    res = mul_mat(rot, res)
    return reshape(res, *cur.ne)
