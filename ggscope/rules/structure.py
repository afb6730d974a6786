"""Structure rules (GG1xx): exactly what ggml's own reader refuses.

Why: a file that ``gguf_init_from_file`` (ggml ``src/gguf.cpp``) refuses loads in no
ggml-based program, whatever else is right with it.  This family mirrors that reader,
no more and no less, so that ``tests/rules/test_ggml_verdicts.py`` can hold it to
ggml's own verdicts: every file ggml refuses gets an error here, every file it accepts
gets nothing here.  What the spec forbids but ggml lets through lives in ``values``.

Contract: a damaged file is seen through ``mf.damage`` (the error node) plus the
partial tree; ``common.damage_kind(mf)`` maps each kind of damage to exactly one rule,
for every format (the damage rules GG101, GG103, GG104, GG117, GG118 in ``damage`` and
the legacy GG902 together cover whatever any format's parse stops at, so ``validate``
calls a file damaged exactly when ``ggscope.open`` and ``info`` do).  The header facts
ggml computes (its alignment, the expected offset of each tensor, the size of the data
section) are computed once by ``common.ggml_layout(mf)`` and shared with the alignment
and tensors families.  Damage of a tensor's *data* range is not header damage: GG116
and the tensors family judge it.  ``RULES`` lists this module's rules (the header),
the damage rules (``damage``) and the tensor-info rules (``structure_tensors``): one
family.
"""
from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat

from ggscope.facts.upstream_overlay import GGUF_MAX_ARRAY_ELEMENTS, GGUF_MAX_STRING_LENGTH
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import (GGML_MAX_DIMS, GGML_MAX_NAME, GGUF_TYPE_ARRAY, GGUF_TYPE_NAMES,  # noqa: F401
                                  GGUF_TYPE_UINT32, GGUF_VERSION, INT64_MAX, SIZE_MAX, GGMLLayout, damage_kind,
                                  ggml_layout, kv_nodes, kv_rows, raw_bytes, tensor_nodes)
from ggscope.rules.damage import BadMagic, CountCannotFit, InvalidValueType, TruncatedFile, UnreadableField
from ggscope.rules.structure_tensors import (BadDimension, DataSectionPastEnd, DuplicateTensorName,
                                             RowNotBlockMultiple, TensorNameTooLong, TooManyDims,
                                             TruncatedTensorData, UnexpectedTensorOffset, UnknownTensorType)

# the helpers' home is ``common``; the names stay importable from here as before
__all__ = ["RULES", "BadMagic", "GGMLLayout", "ggml_layout", "damage_kind", "kv_nodes", "tensor_nodes",
           "GGML_MAX_DIMS", "GGML_MAX_NAME", "INT64_MAX", "SIZE_MAX"]


class UnsupportedVersion(Rule):
    """What it checks: the GGUF version is 2 or 3.

    Why it matters: ggml refuses version 0, no longer loads version 1 ("GGUFv1 is no
    longer supported") and refuses versions newer than it knows (3).

    Example: ggml test-gguf's HEADER_BAD_VERSION_0 / _1 / _FUTURE files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_header_t.version``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG102", "unsupported-version", Severity.ERROR, "structure"
    summary = "The GGUF version is not one ggml loads (2 or 3)."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        node = ctx.node("header/version")
        if node is None or node.value is None:
            return
        v = int(node.value)
        if v == 0:
            yield ctx.at(node, "version 0 is not a GGUF version; ggml refuses it")
        elif v == 1:
            yield ctx.at(node, "GGUF version 1 is no longer supported by ggml; convert it to version 3")
        elif v > GGUF_VERSION:
            yield ctx.at(node, f"version {v} is newer than {GGUF_VERSION}, the newest ggml reads")


class EmptyKey(Rule):
    """What it checks: no metadata key is empty.

    Why it matters: ggml refuses a zero-length key ("key N is empty").

    Example: ggml test-gguf's KV_EMPTY_KEY files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_metadata_kv_t.key``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG105", "empty-key", Severity.ERROR, "structure"
    summary = "A metadata key is empty."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for i, kv in enumerate(kv_rows(ctx.mf)):
            k = kv.key_node
            if k.end - k.start <= (4 if ctx.mf.version == 1 else 8):
                yield ctx.at(k, f"metadata key {i} is empty")


class DuplicateKey(Rule):
    """What it checks: no two metadata entries have the same key.

    Why it matters: ggml refuses a file with a duplicate key; other readers silently
    keep the first or the last value, so the file means different things to each.

    Example: ggml test-gguf's KV_DUPLICATE_KEY files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure"; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG106", "duplicate-key", Severity.ERROR, "structure"
    summary = "Two metadata entries have the same key."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        rows = kv_rows(ctx.mf)
        keys = [kv.key for kv in rows]
        if all(map(isinstance, keys, repeat((str, bytes)))) and len(set(keys)) == len(keys):
            return      # the parser decodes a key one to one (UTF-8 with surrogate escapes, or its bytes)
        seen: dict[bytes, int] = {}
        for i, kv in enumerate(rows):
            raw = raw_bytes(ctx.mf, kv.data)
            if raw in seen:
                yield ctx.at(kv.key_node, f"key {quoted(kv.key)} repeats entry {seen[raw]}")
            else:
                seen[raw] = i


class InvalidAlignment(Rule):
    """What it checks: ``general.alignment``, when present, is a uint32 that is a
    non-zero power of two.

    Why it matters: ggml refuses any other type ("must be of type u32"), zero, or a
    value that is not a power of two ("alignment N is not a power of 2"); it sets no upper
    limit (a 2 MiB alignment loads).  Every tensor offset is padded to this value, so a
    wrong one moves every tensor.

    Example: ggml test-gguf's KV_BAD_ALIGN (13) and KV_WRONG_TYPE_ALIGN (int32) files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``general.alignment``; ggml src/gguf.cpp,
    gguf_init_from_file.
    """
    code, name, severity, family = "GG107", "invalid-alignment", Severity.ERROR, "structure"
    summary = "general.alignment is not a uint32 power of two."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for kv in kv_rows(ctx.mf):
            if kv.key != "general.alignment":
                continue
            t = kv.type
            if t != GGUF_TYPE_UINT32:
                tn = GGUF_TYPE_NAMES[t] if 0 <= t < len(GGUF_TYPE_NAMES) else str(t)
                yield ctx.at(kv.type_node, f"general.alignment must be uint32, is {tn}")
                return
            a = int(kv.value.value)
            if a == 0 or a & (a - 1):
                yield ctx.at(kv.value, f"general.alignment {a} is not a power of two")
            return


class ReaderLimitExceeded(Rule):
    """What it checks: no string is longer than 1 GiB and no array has more than 2^30
    elements.

    Why it matters: ggml's reader refuses them outright (``GGUF_MAX_STRING_LENGTH``,
    ``GGUF_MAX_ARRAY_ELEMENTS``, both 1024*1024*1024, since 2026-02-27: "string length N
    exceeds maximum"), even when the file holds the bytes; gguf-py reads such files, so
    a file can pass one reader and fail ggml's.

    Example: a token list of 1,073,741,825 one-byte strings.

    Reference: ggml src/gguf.cpp ``gguf_reader::read`` (ggml 4773cde1, 2026-02-27); ggscope.upstream_overlay.
    """
    code, name, severity, family = "GG120", "reader-limit-exceeded", Severity.ERROR, "structure"
    summary = "A string is over 1 GiB or an array over 2^30 elements (ggml refuses)."
    source = "ggml src/gguf.cpp GGUF_MAX_STRING_LENGTH / GGUF_MAX_ARRAY_ELEMENTS (2026-02-27)"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        least = min(GGUF_MAX_STRING_LENGTH, GGUF_MAX_ARRAY_ELEMENTS)
        for kv in kv_rows(ctx.mf):
            # an entry of at most 2**30 bytes holds no longer string and no more elements
            # (every element takes a byte or more): its fields are not looked up
            if kv.node.end - kv.node.start <= least:
                continue
            key = kv.key
            for node in (kv.key_node["len"], kv.value.child("len")):
                if node is not None and node.value is not None and int(node.value) > GGUF_MAX_STRING_LENGTH:
                    yield ctx.at(node, f"key {_printable(key)}: string length {int(node.value)} exceeds ggml's "
                                 f"maximum {GGUF_MAX_STRING_LENGTH}")
            if kv.type != GGUF_TYPE_ARRAY:
                continue
            n = kv.value.child("num_elems")
            if n is not None and n.value is not None and int(n.value) > GGUF_MAX_ARRAY_ELEMENTS:
                yield ctx.at(n, f"key {_printable(key)}: {int(n.value)} array elements exceed ggml's maximum "
                             f"{GGUF_MAX_ARRAY_ELEMENTS}")
                continue
            elems = kv.value.child("elems")
            lens = getattr(elems.value, "lens", None) if elems is not None else None
            if lens is not None and len(lens) and elems.end - elems.start > GGUF_MAX_STRING_LENGTH:
                longest = int(lens.max())
                if longest > GGUF_MAX_STRING_LENGTH:
                    yield ctx.at(elems, f"key {_printable(key)}: an element string of {longest} bytes exceeds "
                                 f"ggml's maximum {GGUF_MAX_STRING_LENGTH}")


def _printable(key) -> str:
    return quoted(key if isinstance(key, (str, bytes)) else str(key))[:80]


RULES = [BadMagic, UnsupportedVersion, CountCannotFit, InvalidValueType, EmptyKey, DuplicateKey,
         InvalidAlignment, TensorNameTooLong, DuplicateTensorName, TooManyDims, BadDimension,
         UnknownTensorType, RowNotBlockMultiple, UnexpectedTensorOffset, DataSectionPastEnd,
         TruncatedTensorData, TruncatedFile, UnreadableField, ReaderLimitExceeded]
