"""Data sidecars (GG1124-GG1127): control vectors and importance matrices, judged by their readers.

Why: a control vector (``general.architecture = controlvector``, written by
llama-cvector-generator, read by ``--control-vector``) and an importance matrix
(``general.type = imatrix``, written by llama-imatrix, read by ``llama-quantize --imatrix``)
are not models.  Judged as one, a control vector is an "unknown architecture" and an
importance matrix lacks ``general.architecture``; neither is what their own readers
refuse.  These rules check what those readers check - common/common.cpp
``common_control_vector_load_one`` and ``llama_adapter_cvec::apply``; common/imatrix-loader.cpp
``common_imatrix_load`` and tools/quantize/quantize.cpp ``load_imatrix`` - and, with
``validate --base MODEL``, what they check against the model (src/llama-quant.cpp: an
entry whose size is not the weight's ``ne[0] * ne[2]`` aborts the quantization).

Contract: rules need an undamaged header; one finding per cause, in the order the reader
meets them (the reader stops at the first).  Work is one pass over the tensor infos; no
tensor data is read.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from ggscope.core.escape import llama_quoted
from ggscope.facts.llama_arch import PINNED
from ggscope.rules.base import CheckContext, Finding, Rule, Severity
from ggscope.rules.sidecar import base_for, base_hparam, kind_of

__all__ = ["RULES", "stoi"]

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_STOI = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def stoi(text: str) -> int | None:
    """C++ ``std::stoi``: leading white space, a sign, digits, the rest ignored; None where
    it throws (no digits, or outside int)."""
    m = _STOI.match(text)
    if m is None:
        return None
    v = int(m.group(1))
    return v if _INT_MIN <= v <= _INT_MAX else None


def _n_dims(shape) -> int:
    """ggml_n_dims: the highest dimension larger than 1, counted from 1."""
    n = 1
    for i, d in enumerate(shape):
        if d > 1:
            n = i + 1
    return n


def _nelements(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _directions(ctx: CheckContext):
    """(problem or None, n_embd, [(layer index, tensor)]) as common_control_vector_load_one reads them."""
    n_embd, dirs = -1, []
    if not ctx.mf.tensors:
        return ("no direction tensors found (llama.cpp skips the file and the load fails)", None), n_embd, dirs
    for t in ctx.mf.tensors:
        prefix, dot, rest = t.name.partition(".")
        idx = stoi(rest) if dot and prefix == "direction" else None
        if idx is None or idx < 0:
            return ("invalid/unparsable direction tensor layer index", t), n_embd, dirs
        if idx == 0:
            return ("invalid (zero) direction tensor layer index", t), n_embd, dirs
        if t.type != "F32":
            return (f"invalid (non-F32) direction tensor type ({t.type})", t), n_embd, dirs
        if _n_dims(t.shape) != 1:
            return ("invalid (non-1D) direction tensor shape", t), n_embd, dirs
        n = _nelements(t.shape)
        if n_embd == -1:
            n_embd = n
        elif n != n_embd:
            return (f"direction tensor does not match previous dimensions ({n} values, the first had {n_embd})", t), \
                n_embd, dirs
        if n_embd * idx > _INT_MAX:
            return (f"n_embd x layer index ({n_embd} x {idx}) overflows int in common_control_vector_load_one: "
                    "undefined behaviour (a vector of the wrapped size, then writes past it)", t), n_embd, dirs
        dirs.append((idx, t))
    return None, n_embd, dirs


class ControlVectorRefused(Rule):
    """What it checks: a control vector (``general.architecture = controlvector``) is one
    llama.cpp's ``--control-vector`` reader accepts.

    Why it matters: common_control_vector_load_one reads every tensor as ``direction.<layer>``
    (``std::stoi`` of what follows the first dot), F32, one-dimensional, all of one length, and
    no layer 0; the first tensor that is not makes it skip the file "due to invalid direction
    tensors" ("no valid control vector files passed"): the reader refuses the file and the
    program runs without it.  A file with no tensors fails the same way.  ``n_embd`` times a
    layer index beyond ``INT_MAX`` overflows the ``int`` product that sizes its buffer.

    Example: ``direction.0``; a direction stored as F16; ``direction.3`` with 4096 values
    after ``direction.1`` with 2048.

    Reference: common/common.cpp ``common_control_vector_load_one``, ``common_init_from_params``;
    tools/cvector-generator/cvector-generator.cpp ``export_gguf`` (the writer).
    """
    code, name, severity, family = "GG1124", "control-vector-refused", Severity.ERROR, "loader"
    only_if = "control-vector"
    summary = "A control vector llama.cpp's --control-vector reader refuses."
    source = f"{PINNED}: common/common.cpp common_control_vector_load_one"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None or kind_of(ctx.mf) != "control-vector":
            return
        problem = _directions(ctx)[0]
        if problem is not None:
            msg, t = problem
            where = ctx.node(t.node_path) if t is not None else None
            yield ctx.at(where, msg if t is None else f"{llama_quoted(t.name)}: {msg}")


class ControlVectorMismatch(Rule):
    """What it checks: with ``validate --base MODEL``, the control vector's width is the
    model's ``n_embd`` and its directions name layers the model has.

    Why it matters: ``llama_adapter_cvec::apply`` refuses a vector of another width ("control
    vector n_embd does not match model": error); directions for layer ``n_layer`` or beyond
    are read and then silently never applied (warning: the file loads but does less than it
    says).

    Example: a 4096-wide vector made for a 7B model applied to a 2048-wide 1B model.

    Reference: src/llama-adapter.cpp ``llama_adapter_cvec::apply``.
    """
    code, name, severity, family = "GG1125", "control-vector-mismatch", Severity.ERROR, "loader"
    only_if = "control-vector"
    summary = "A control vector that does not fit the --base model."
    source = f"{PINNED}: src/llama-adapter.cpp llama_adapter_cvec::apply"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        base = base_for(ctx, "control-vector")
        if base is None:
            return
        problem, n_embd, dirs = _directions(ctx)
        want, n_layer = base_hparam(base, "embedding_length"), base_hparam(base, "block_count")
        if problem is not None or not isinstance(want, int) or isinstance(want, bool):
            return
        if n_embd != want:
            yield ctx.at(ctx.node(dirs[0][1].node_path),
                         f"control vector n_embd does not match model ({n_embd} values, the model's n_embd is {want})")
            return
        if isinstance(n_layer, int) and not isinstance(n_layer, bool):
            beyond = sorted({i for i, _ in dirs if i >= n_layer})
            if beyond:
                t = next(t for i, t in dirs if i == beyond[0])
                yield ctx.at(ctx.node(t.node_path), f"directions for layer{'s' if len(beyond) > 1 else ''} "
                             f"{', '.join(map(str, beyond[:8]))}{', …' if len(beyond) > 8 else ''} are never applied: "
                             f"llama.cpp applies layers 1..{n_layer - 1} of this {n_layer}-layer model",
                             severity=Severity.WARNING)


def _imatrix_pairs(mf) -> dict[str, list]:
    """name -> [in_sum2 tensor or None, counts tensor or None], sorted as std::map sorts."""
    pairs: dict[str, list] = {}
    for t in mf.tensors:
        if t.name.endswith(".in_sum2") and len(t.name) > 8:
            pairs.setdefault(t.name[:-8], [None, None])[0] = t
        elif t.name.endswith(".counts") and len(t.name) > 7:
            pairs.setdefault(t.name[:-7], [None, None])[1] = t
    return dict(sorted(pairs.items(), key=lambda kv: kv[0].encode("utf-8", "surrogateescape")))


class ImatrixRefused(Rule):
    """What it checks: an importance matrix (``general.type = imatrix``) is one
    ``llama-quantize --imatrix`` reads.

    Why it matters: common_imatrix_load refuses a file without tensors ("no data"), an entry
    whose ``.in_sum2`` or ``.counts`` half is missing ("mismatched sums and counts") or not
    F32; ``load_imatrix`` exits on a file without ``imatrix.datasets``,
    ``imatrix.chunk_count`` and ``imatrix.chunk_size`` ("missing imatrix metadata"); a
    ``chunk_count`` or ``chunk_size`` that is not one uint32 fails ``gguf_get_val_u32``'s
    GGML_ASSERT (abort); an entry whose ``.counts`` has no values divides by zero (SIGFPE).

    Example: ``blk.0.attn_q.weight.in_sum2`` without ``blk.0.attn_q.weight.counts``;
    ``imatrix.chunk_count`` stored as int32.

    Reference: common/imatrix-loader.cpp ``common_imatrix_load``; tools/quantize/quantize.cpp
    ``load_imatrix``; ggml/src/gguf.cpp ``gguf_get_val_u32``; tools/imatrix/imatrix.cpp (the writer).
    """
    code, name, severity, family = "GG1126", "imatrix-refused", Severity.ERROR, "loader"
    only_if = "imatrix"
    summary = "An importance matrix llama-quantize --imatrix refuses or crashes on."
    source = f"{PINNED}: common/imatrix-loader.cpp common_imatrix_load; tools/quantize/quantize.cpp load_imatrix"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        if mf.damage is not None or kind_of(mf) != "imatrix":
            return
        nodes, types = mf.metadata_nodes, mf.metadata_types
        if not mf.tensors:
            yield ctx.at(ctx.node(nodes.get("general.type", "")), "no data in file (the importance matrix has no tensors)")
            return
        keys = ("imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size")
        for key in keys[1:]:
            if key in types and types[key] != "uint32":
                yield ctx.at(ctx.node(nodes.get(key, "")), f"{key} is {types[key]}, not one uint32: "
                             "GGML_ASSERT in gguf_get_val_u32 fails (the process aborts)")
                return
        pairs = _imatrix_pairs(mf)
        for name, (sums, counts) in pairs.items():
            t = sums or counts
            if sums is None or counts is None:
                yield ctx.at(ctx.node(t.node_path), f"mismatched sums and counts for {llama_quoted(name)}")
                return
            if sums.type != "F32" or counts.type != "F32":
                yield ctx.at(ctx.node(t.node_path), f"sums and counts for {llama_quoted(name)} must be F32")
                return
        missing = [k for k in keys if k not in types]
        if missing:
            yield ctx.at(ctx.node(nodes.get("general.type", "")),
                         f"missing imatrix metadata ({', '.join(missing)}): llama-quantize exits")
            return
        for name, (sums, counts) in pairs.items():
            if _nelements(counts.shape) == 0:
                yield ctx.at(ctx.node(counts.node_path), f"{llama_quoted(name)}.counts has no values: "
                             "load_imatrix divides by their number (SIGFPE)")
                return


class ImatrixMismatch(Rule):
    """What it checks: with ``validate --base MODEL``, each importance-matrix entry that
    names a weight of the model has that weight's size (``ne[0] * ne[2]``), and the matrix
    names at least one of the model's weights.

    Why it matters: llama_model_quantize throws "imatrix size N is different from tensor size
    M" for any weight but the token embeddings (error); a matrix made for another model
    names none of its weights and is silently unused (warning).

    Example: an imatrix of a split-expert Mixtral applied to a merged-expert conversion.

    Reference: src/llama-quant.cpp ``llama_model_quantize_impl``, ``tensor_name_match_token_embd``.
    """
    code, name, severity, family = "GG1127", "imatrix-mismatch", Severity.ERROR, "loader"
    only_if = "imatrix"
    summary = "An importance matrix that does not fit the --base model's weights."
    source = f"{PINNED}: src/llama-quant.cpp llama_model_quantize_impl"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        base = base_for(ctx, "imatrix")
        if base is None:
            return
        weights = {t.name: t for t in base.tensors if _n_dims(t.shape) >= 2}
        pairs = {n: p for n, p in _imatrix_pairs(mf).items() if p[0] is not None}
        if weights and pairs and not any(n in weights for n in pairs):
            yield ctx.at(ctx.node(mf.metadata_nodes.get("general.type", "")),
                         f"none of the {len(pairs)} entries names a weight of the base model: the matrix is not used",
                         severity=Severity.WARNING)
            return
        for name, (sums, _) in pairs.items():
            t = weights.get(name)
            if t is None or name in ("token_embd.weight", "per_layer_token_embd.weight"):
                continue
            shape = list(t.shape) + [1] * (4 - len(t.shape))
            want, have = shape[0] * shape[2], _nelements(sums.shape)
            if want != have:
                yield ctx.at(ctx.node(sums.node_path),
                             f"imatrix size {have} is different from tensor size {want} for {llama_quoted(name)}")
                return


RULES = [ControlVectorRefused, ControlVectorMismatch, ImatrixRefused, ImatrixMismatch]
