"""Rules for the formats before GGUF (GG9xx): GGJT alignment, type codes per version, BIT1 size and padding.

Why: the legacy containers have no metadata to check, but each has invariants of its
own that its loader relied on: GGJT aligns tensor data to 32 bytes for mmap; rwkv.cpp
and llama.cpp changed the meaning of quantized type codes between versions (a version-
100 rwkv.cpp file cannot hold Q8_1 or K-quants, version 101 dropped Q4_1_O/Q4_2/Q4_3);
a BIT1 file is exactly the size its header implies and keeps unused sign bits zero.

Contract: rules apply to every format except ``gguf`` and read only the ModelFile
(``extra["type_errors"]`` is where the views record a code invalid in that version).
The BIT1 padding check streams the row tails, a bounded number of rows at a time.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .base import CheckContext, Finding, Rule, Severity

__all__ = ["RULES", "LEGACY_FORMATS", "GgjtAlignment", "LegacyTypeInvalid", "Bit1Size", "Bit1PaddingBits"]

LEGACY_FORMATS = ("ggml", "ggmf", "ggjt", "ggml-example", "rwkv.cpp", "chatglm.cpp", "bit1")
GGJT_ALIGNMENT = 32
_ROWS_PER_CHUNK = 1 << 16


def _tnode(ctx: CheckContext, t):
    return ctx.node(t.node_path) if t.node_path else None


class GgjtAlignment(Rule):
    """What it checks: in a GGJT file every tensor's data starts at a multiple of 32.

    Why it matters: GGJT exists to be mmap-able; llama.cpp's GGJT loader skips to the
    next multiple of 32 before each tensor, so data written elsewhere is read shifted.

    Example: a GGJT v3 tensor whose data starts at offset 0x1234.

    Reference: gguf-spec.txt §5.1 ("GGJT: Aligns the tensors"); legacy-formats.md.
    """
    code, name, severity, family = "GG901", "ggjt-alignment", Severity.ERROR, "legacy"
    summary = "GGJT tensor data is not aligned to 32 bytes."
    formats = ("ggjt",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        align = ctx.mf.alignment or GGJT_ALIGNMENT
        for t in ctx.mf.tensors:
            if t.offset % align:
                yield ctx.at(_tnode(ctx, t), f"tensor {t.name!r} data starts at {t.offset:#x}, "
                             f"not a multiple of {align}")


class LegacyTypeInvalid(Rule):
    """What it checks: each tensor's type code exists in the file's format version.

    Why it matters: the same code meant different block layouts in different versions;
    rwkv.cpp version 100 has no K-quants and version 101 has no Q4_1_O/Q4_2/Q4_3, so such a
    code means a corrupt file or one written by a fork.

    Example: an rwkv.cpp version-101 file with data type 5 (Q4_2).

    Reference: legacy-formats.md §6.3 (rwkv.cpp types by version), §4.2 (llama.cpp).
    """
    code, name, severity, family = "GG902", "legacy-type-invalid", Severity.ERROR, "legacy"
    summary = "A tensor type code is not valid in this format version."
    formats = LEGACY_FORMATS

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        errors = ctx.mf.extra.get("type_errors") or {}
        by_name = {t.name: t for t in ctx.mf.tensors}
        for name, why in errors.items():
            t = by_name.get(name)
            yield ctx.at(_tnode(ctx, t) if t else None, f"tensor {name!r}: {why}")
        stopped = ctx.mf.extra.get("damage_type_error")
        if stopped and ctx.mf.damage is not None:
            d = ctx.mf.damage
            yield ctx.at(d, f"{stopped}: the type's block size is unknown, so the record's data "
                         "size and every later record cannot be read", start=d.start, end=d.start)


class Bit1Size(Rule):
    """What it checks: a BIT1 file is exactly as long as its header implies.

    Why it matters: BIT1 has no directory; every section's place follows from the
    header.  Extra bytes mean the header and the data disagree (a wrong dimension), so
    every section after the first wrong one is read from the wrong place.

    Example: a BIT1 file with 8 bytes appended.

    Reference: bit1-export.txt; legacy-formats.md §8.
    """
    code, name, severity, family = "GG903", "bit1-size", Severity.ERROR, "legacy"
    summary = "The BIT1 file size differs from the size its header implies."
    formats = ("bit1",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None or not ctx.mf.tensors:
            return              # a short file is damage, reported by the structure rules
        end = max(t.offset + t.nbytes for t in ctx.mf.tensors)
        size = ctx.mf.source.size
        if size != end:
            yield ctx.at(None, f"file is {size} bytes, the header implies {end} "
                         f"({size - end:+d} bytes)", start=min(end, size), end=max(end, size))


class Bit1PaddingBits(Rule):
    """What it checks: the unused high bits of each BIT1 sign row's last word are zero.

    Why it matters: rows are padded to whole 64-bit words; the exporter writes zeros
    there.  Set padding bits mean the row length in the header is wrong (or the data
    damaged) - a reader trusting them would count signs that do not exist.

    Example: ``d_model = 100``; bits 100..127 of a row are not all zero.

    Reference: bit1-export.txt; legacy-formats.md §8.
    """
    code, name, severity, family = "GG904", "bit1-padding-bits", Severity.ERROR, "legacy"
    summary = "Unused padding bits of a BIT1 sign row are set."
    formats = ("bit1",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        size = ctx.mf.source.size
        for t in ctx.mf.tensors:
            if t.layout != "BIT1_PACKED" or len(t.shape) < 2 or t.shape[0] % 64 == 0:
                continue
            words = -(-t.shape[0] // 64)
            row_bytes = 8 * words
            rows = t.shape[1]
            if t.offset + rows * row_bytes > size:
                continue
            mask = np.uint64(~((1 << (t.shape[0] % 64)) - 1) & 0xFFFFFFFFFFFFFFFF)
            for r0 in range(0, rows, _ROWS_PER_CHUNK):
                r1 = min(rows, r0 + _ROWS_PER_CHUNK)
                start = t.offset + r0 * row_bytes
                buf = np.frombuffer(ctx.mf.source.read(start, t.offset + r1 * row_bytes), dtype="<u8")
                tails = buf.reshape(r1 - r0, words)[:, -1]
                bad = np.flatnonzero(tails & mask)
                if bad.size:
                    row = r0 + int(bad[0])
                    at = t.offset + row * row_bytes + row_bytes - 8
                    yield ctx.at(None, f"tensor {t.name!r} row {row}: padding bits above bit "
                                 f"{t.shape[0] % 64} of the last word are set", start=at, end=at + 8)
                    break


RULES = [GgjtAlignment, LegacyTypeInvalid, Bit1Size, Bit1PaddingBits]
