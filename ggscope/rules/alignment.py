"""Alignment and padding rules (GG3xx): the spec's layout of the data section.

Why: the spec requires every tensor offset to be a multiple of ``ALIGNMENT`` and fills
the gaps - after the tensor infos and after each tensor - with 0x00 bytes.  ggml only
checks that offsets match its own layout (GG114) and never reads the padding, so a
writer that leaks memory or stale data into the padding, or a hand-edited offset, is
invisible to it; an mmap-ing reader that trusts alignment is not.

Contract: the alignment and the data section start are ggml's, computed once by
``structure.ggml_layout``; nothing is judged on a file whose header is damaged
(``data_start`` is None then).  Padding reads are bounded by the alignment (at most
1 MiB per gap) and by the file size.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import ggml_layout, pad, tensor_field, tensor_rows

__all__ = ["RULES", "MisalignedTensorOffset", "NonZeroHeaderPadding", "NonZeroTensorPadding"]


def _first_nonzero(ctx: CheckContext, start: int, end: int) -> int | None:
    """Absolute offset of the first non-zero byte in ``[start, end)`` clipped to the file."""
    end = min(end, ctx.mf.source.size)
    if end <= start:
        return None
    raw = bytes(ctx.mf.source.read(start, end))
    stripped = raw.lstrip(b"\0")
    return None if not stripped else start + len(raw) - len(stripped)


class MisalignedTensorOffset(Rule):
    """What it checks: every tensor offset is a multiple of the alignment
    (``general.alignment``, default 32).

    Why it matters: the spec: the offset "must be a multiple of ``ALIGNMENT``".  Readers
    that map tensor data straight from the file (mmap, SIMD loads) rely on it; ggml
    refuses the file too, but reports only the first offset that differs from its
    layout (GG114) - this rule names every misaligned one.

    Example: a tensor at offset 36 with the default alignment 32.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.offset``.
    """
    code, name, severity, family = "GG301", "misaligned-tensor-offset", Severity.ERROR, "alignment"
    only_if = "tensors"
    summary = "A tensor offset is not a multiple of the alignment."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        a = ggml_layout(ctx.mf).alignment
        if a <= 0 or a & (a - 1):
            return                                  # GG107 owns a broken alignment
        rows = tensor_rows(ctx.mf)
        for i, off in enumerate(rows.offsets):
            if off % a:
                yield ctx.at(tensor_field(ctx.mf, i, "offset"), f"tensor {quoted(rows.names[i])} has offset {off}, "
                             f"not a multiple of the alignment {a}")


class NonZeroHeaderPadding(Rule):
    """What it checks: the padding between the end of the tensor infos and the start of
    the data section is all 0x00 bytes.

    Why it matters: the spec: "Where required, the file is padded with 0x00 bytes".
    Non-zero padding means the writer put the data section somewhere else than readers
    look for it (tensor data written unpadded, shifted by a few bytes), or leaked
    memory into the file.

    Example: a writer that forgot to pad: the first tensor's bytes start right after
    the tensor infos, so the "padding" holds tensor data.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_file_t._padding``.
    """
    code, name, severity, family = "GG302", "nonzero-header-padding", Severity.WARNING, "alignment"
    summary = "The padding before the data section is not all zero bytes."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        if lay.header_end is None or lay.data_start is None:
            return
        at = _first_nonzero(ctx, lay.header_end, lay.data_start)
        if at is not None:
            yield ctx.at(None, f"padding byte at {at} is 0x{ctx.mf.source.read(at, at + 1)[0]:02x}; "
                         f"the {lay.data_start - lay.header_end} bytes before the data section "
                         "should be 0x00", start=lay.header_end, end=min(lay.data_start, ctx.mf.source.size))


class NonZeroTensorPadding(Rule):
    """What it checks: the bytes between the end of each tensor's data and the next
    multiple of the alignment are all 0x00.

    Why it matters: the spec pads with 0x00 bytes.  Non-zero bytes there mean the
    tensor is larger than its shape says (a wrong type or shape in the tensor info) or
    the writer leaked memory into the file.

    Example: a Q8_0 tensor whose info says 32 elements but whose writer wrote 64.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_file_t.tensor_data``.
    """
    code, name, severity, family = "GG303", "nonzero-tensor-padding", Severity.WARNING, "alignment"
    only_if = "tensors"
    summary = "The padding after a tensor's data is not all zero bytes."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        if lay.data_start is None or lay.alignment <= 0:
            return
        a = lay.alignment
        rows = tensor_rows(ctx.mf)
        for name, nb, off in zip(rows.names, rows.nbytes, rows.offsets):
            if nb is None or off % a:
                continue
            start = lay.data_start + off + nb
            at = _first_nonzero(ctx, start, lay.data_start + pad(off + nb, a))
            if at is not None:
                yield ctx.at(None, f"tensor {quoted(name)}: padding byte at {at} after its "
                             f"{nb} bytes is 0x{ctx.mf.source.read(at, at + 1)[0]:02x}, should be 0x00",
                             start=start, end=lay.data_start + pad(off + nb, a))


RULES = [MisalignedTensorOffset, NonZeroHeaderPadding, NonZeroTensorPadding]
