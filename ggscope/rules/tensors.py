"""Tensor rules (GG5xx): names, data bounds and overlaps, as the spec sees them.

Why: the structure family says what ggml refuses (shape, type, block divisibility -
GG113 -, name length - GG108 -, ggml's exact offsets - GG114).  This family judges the
tensors themselves: a name llama.cpp will not look up, tensor data that is not in the
file (including header-only files, which ggml's metadata reads accept and GG116 leaves
alone), and two tensors sharing bytes.  A tensor's byte size is ggml's: elements /
block elements x block bytes (``common.ggml_nbytes``, from ``ggml_types``).

Contract: rules read ``tensor_rows``/``ggml_layout`` and need an undamaged header for
anything positional (``data_start`` is None otherwise).  The spec's own 64-byte name
limit is not a rule: ggml's stricter limit (GG108) already covers every name it would
flag.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import ggml_layout, tensor_field, tensor_rows
from ggscope.rules.tensor_names import is_standard

__all__ = ["RULES", "NonstandardTensorName", "TensorDataPastEnd", "OverlappingTensors", "TrailingBytes"]

_MAX_NAMED = 5


def _arch(mf) -> str | None:
    a = mf.metadata.get("general.architecture")
    return a if isinstance(a, str) else None


class NonstandardTensorName(Rule):
    """What it checks: in a file whose ``general.architecture`` gguf-py knows, every
    tensor name is one of that architecture's standard names (``token_embd.weight``,
    ``blk.N.attn_q.weight``, ...) in gguf-py's ``MODEL_TENSORS``.

    Why it matters: llama.cpp finds weights by these names and refuses a model with a
    tensor it does not expect ("wrong number of tensors") or without one it needs; a
    converter that keeps the PyTorch names (``model.layers.0.self_attn.q_proj.weight``)
    writes a file that loads nowhere.  Other architectures: no finding.

    Example: ``layers.0.attention.wq.weight`` in a llama file.

    Reference: the GGUF spec (ggml docs/gguf.md), "Standardized tensor names"; llama.cpp gguf-py
    ``gguf/constants.py`` ``MODEL_TENSORS``.
    """
    code, name, severity, family = "GG501", "nonstandard-tensor-name", Severity.WARNING, "tensors"
    only_if = "tensors"
    summary = "A tensor name is not a standard name of the file's architecture."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        arch = _arch(ctx.mf)
        if arch is None or is_standard(arch, "token_embd.weight") is None:
            return
        for i, n in enumerate(tensor_rows(ctx.mf).names):
            if isinstance(n, str) and is_standard(arch, n) is False:
                yield ctx.at(tensor_field(ctx.mf, i, "name"), f"tensor {quoted(n)} is not a standard {arch} tensor name "
                             "(token_embd, output_norm, output, blk.N.attn_q, ...)")


class TensorDataPastEnd(Rule):
    """What it checks: every tensor's data, ``[data start + offset, + byte size)``, lies
    inside the file - also in a header-only file that declares tensors but ends where
    its data section starts.

    Why it matters: reading such a tensor reads past the end of the file (a crash or
    garbage through mmap).  ggml refuses a data section that is too short (GG116) but
    accepts a header-only file for metadata reads, so a header-only file ends up here:
    fine as a vocabulary or metadata file, useless as a model.

    Example: a model truncated to its header; a tensor whose offset points 1 GiB past
    the end.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.offset``,
    ``gguf_file_t.tensor_data``.
    """
    code, name, severity, family = "GG502", "tensor-data-past-end", Severity.ERROR, "tensors"
    only_if = "tensors"
    summary = "A tensor's data lies (partly) past the end of the file."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        size = ctx.mf.source.size
        if lay.data_start is None or size < lay.data_start:
            return                              # no header, or ends inside the padding: GG115
        bad = []
        rows = tensor_rows(ctx.mf)
        for i, (nb, off) in enumerate(zip(rows.nbytes, rows.offsets)):
            if nb is None or nb == 0:
                continue
            end = lay.data_start + off + nb
            if end > size:
                bad.append((i, end))
        if not bad:
            return
        first, end = bad[0]
        names = ", ".join(quoted(rows.names[i]) for i, _ in bad[:_MAX_NAMED])
        more = f" and {len(bad) - _MAX_NAMED} more" if len(bad) > _MAX_NAMED else ""
        if size == lay.data_start:
            yield ctx.at(None, f"header-only file: it ends at {size}, where its data section starts, but "
                         f"declares {len(bad)} tensor(s) with data ({names}{more})",
                         start=lay.header_end, end=size)
        else:
            yield ctx.at(tensor_field(ctx.mf, first, "offset"),
                         f"{len(bad)} tensor(s) end past the end of the file ({size} bytes): "
                         f"{names}{more}; the first ends at {end}")


class OverlappingTensors(Rule):
    """What it checks: no two tensors' data ranges share a byte.

    Why it matters: overlapping tensors alias each other: writing one changes the
    other, and at least one of them holds the wrong weights.  ggml refuses most such
    files through its offset check (GG114), but only names the first misplaced tensor;
    this rule names the pairs.

    Example: two tensors with the same offset.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.offset``.
    """
    code, name, severity, family = "GG503", "overlapping-tensors", Severity.ERROR, "tensors"
    only_if = "tensors"
    summary = "Two tensors' data ranges overlap."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        rows = tensor_rows(ctx.mf)
        spans = [(off, off + nb, i) for i, (nb, off) in enumerate(zip(rows.nbytes, rows.offsets)) if nb]
        spans.sort(key=lambda s: (s[0], s[1]))
        reach, owner = -1, None
        for start, end, i in spans:
            if owner is not None and start < reach:
                yield ctx.at(tensor_field(ctx.mf, i, "offset"), f"tensor {quoted(rows.names[i])} [{start}, {end}) overlaps "
                             f"tensor {quoted(rows.names[owner])}, which ends at {reach} (offsets relative to the data "
                             "section)")
            if end > reach:
                reach, owner = end, i


class TrailingBytes(Rule):
    """What it checks: the file ends where its data section ends - the last tensor's data
    padded to the alignment (or, with no tensors, the header padded to it).

    Why it matters: ggml reads exactly the data section and ignores what follows, so
    the file loads; but bytes nobody reads mean a writer that lost count, a second file
    concatenated onto this one, or something hidden in the model.  A warning: no reader
    refuses the file.

    Example: a GGUF file with 4 KiB of zeros appended.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_file_t`` (the data section is the
    file's last
    part); ggml src/gguf.cpp, gguf_init_from_file (reads ``data_size`` bytes and stops).
    """
    code, name, severity, family = "GG504", "trailing-bytes", Severity.WARNING, "tensors"
    summary = "Bytes follow the end of the data section."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None:
            return
        lay = ggml_layout(ctx.mf)
        if lay.data_start is None or (lay.expected and lay.data_size is None):
            return
        end = lay.data_start + (lay.data_size or 0)
        size = ctx.mf.source.size
        if size > end:
            yield ctx.at(None, f"{size - end} bytes follow the end of the data section at {end}; "
                         "no reader reads them", start=end, end=size)


RULES = [NonstandardTensorName, TensorDataPastEnd, OverlappingTensors, TrailingBytes]
