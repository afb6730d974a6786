"""Value rules (GG2xx): what the GGUF spec forbids in values and ggml lets through.

Why: ggml's reader (mirrored by the structure family) copies bools, strings and
dimensions without judging them, so a file can load and still break the spec: a bool
byte of 2 (the spec calls such a file invalid), strings that are not UTF-8, tensors
with no elements, an alignment that is a power of two but not a multiple of 8.  Other
readers (gguf-py, Rust and Go parsers) reject or misread such files.

Contract: rules read the parsed node tree through ``kv_rows``/``tensor_rows`` (only
entries that parsed completely) and point at the offending node.  Strings are decoded
with ``errors="surrogateescape"``, so a lone surrogate U+DC80..U+DCFF in a decoded
string marks a byte that is not UTF-8; its raw bytes are read back from the source.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from ggscope.ksy.strings import StringArray
from ggscope.rules import vocab_bytes
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import GGUF_TYPE_ARRAY, GGUF_TYPE_UINT32, kv_rows, tensor_field, tensor_node, tensor_rows

__all__ = ["RULES", "InvalidBool", "StringNotUtf8", "NameNotUtf8", "ZeroSizeDimension",
           "AlignmentNotMultipleOf8"]

GGUF_TYPE_BOOL, GGUF_TYPE_STRING = 7, 8
_ESCAPED = re.compile("[\udc80-\udcff]")
_MAX_REPORTED = 5           # per entry: the first few bad elements are named, the rest counted


def _raw(ctx: CheckContext, node) -> bytes:
    return bytes(ctx.mf.source.read(node.start, node.end)) if node is not None and node.end is not None else b""


def _bad_utf8(s) -> bool:
    return isinstance(s, str) and _ESCAPED.search(s) is not None


def _values_of_type(ctx: CheckContext, gguf_type: int) -> Iterator[tuple[str, object, bool]]:
    """(key, node, is_array) for every value of ``gguf_type``: a scalar's value node, or
    the ``elems`` node of an array of that type, arrays of arrays walked down."""
    def walk(key, arr):
        et, elems = arr["type"].value, arr.child("elems")
        if elems is None or elems.end is None:
            return
        if et == gguf_type:
            yield key, elems, True
        elif et == GGUF_TYPE_ARRAY:
            for sub in elems.children:
                yield from walk(key, sub)
    for kv in kv_rows(ctx.mf):
        if kv.type == gguf_type:
            yield kv.key, kv.value, False
        elif kv.type == GGUF_TYPE_ARRAY and (kv.elem_type == gguf_type or kv.elem_type == GGUF_TYPE_ARRAY):
            yield from walk(kv.key, kv.value)


def _scalars_clean(ctx: CheckContext) -> bool:
    """Whether every scalar string value is UTF-8, by one search over them joined (a
    newline escapes no byte): then no scalar is looked at one by one.  False when one is
    not, or when a value is no str."""
    texts = []
    for kv in kv_rows(ctx.mf):
        if kv.type == GGUF_TYPE_STRING:
            kids = kv.value.children
            data = kids[1] if len(kids) == 2 and kids[1].name == "data" else kv.value.child("data")
            if data is not None:
                texts.append(data.value)
    try:
        return _ESCAPED.search("\n".join(texts)) is None
    except TypeError:
        return False


class InvalidBool(Rule):
    """What it checks: every bool value, scalar or in an array, is the byte 0 or 1.

    Why it matters: the spec defines bool as "1-byte value where 0 is false and 1 is
    true. Anything else is invalid, and should be considered either invalid or
    undefined behaviour."  ggml copies the byte into a C ``bool``, whose other values
    are undefined behaviour; Python readers see 2 as true, C++ compilers may not.

    Example: ``tokenizer.ggml.add_bos_token`` stored as the byte 0x02.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_metadata_value_type``
    (GGUF_METADATA_VALUE_TYPE_BOOL).
    """
    code, name, severity, family = "GG201", "invalid-bool", Severity.ERROR, "values"
    summary = "A bool value is a byte other than 0 or 1."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for key, node, is_array in _values_of_type(ctx, GGUF_TYPE_BOOL):
            if not is_array:
                b = int(node.value)
                if b not in (0, 1):
                    yield ctx.at(node, f"key {quoted(key)}: bool byte is {b}, the spec allows only 0 or 1")
                continue
            vals = np.frombuffer(_raw(ctx, node), dtype=np.uint8)
            bad = np.flatnonzero(vals > 1)
            if bad.size:
                first = int(bad[0])
                yield ctx.at(node, f"key {quoted(key)}: {bad.size} bool element(s) are neither 0 nor 1 "
                             f"(first: element {first} = {int(vals[first])})",
                             start=node.start + first, end=node.start + first + 1)


class StringNotUtf8(Rule):
    """What it checks: every string value, scalar or in an array, is valid UTF-8.

    Why it matters: the spec defines a GGUF string as "a UTF-8 non-null-terminated
    string".  ggml does not check; gguf-py decodes with ``utf-8`` strictly and fails on
    the file, and tokenizers that build their vocabulary from these strings crash or
    mis-tokenize.

    Example: a vocabulary token stored as the single byte 0xff.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_string_t``.
    """
    code, name, severity, family = "GG202", "string-not-utf8", Severity.ERROR, "values"
    summary = "A string value is not valid UTF-8."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        clean = _scalars_clean(ctx)
        for key, node, is_array in _values_of_type(ctx, GGUF_TYPE_STRING):
            if not is_array:
                if clean:
                    continue
                data = node.child("data")
                if data is not None and _bad_utf8(data.value):
                    yield ctx.at(data, f"key {quoted(key)}: value is not UTF-8: {quoted(_raw(ctx, data)[:40])}")
                continue
            strings = node.value
            if isinstance(strings, StringArray):          # bulk check on the raw bytes
                bad = vocab_bytes.invalid_utf8(strings, vocab_bytes.memo_of(ctx.mf))  # the loader's pass, if it ran
            else:
                bad = [i for i, s in enumerate(strings or ()) if _bad_utf8(s)]
            if not bad:
                continue
            shown = ", ".join(f"{i} ({quoted(strings.raw(i)[:20])})" if hasattr(strings, "raw") else str(i)
                              for i in bad[:_MAX_REPORTED])
            more = f" and {len(bad) - _MAX_REPORTED} more" if len(bad) > _MAX_REPORTED else ""
            yield ctx.at(node.children[bad[0]], f"key {quoted(key)}: {len(bad)} string element(s) are not UTF-8: "
                         f"element {shown}{more}")


class NameNotUtf8(Rule):
    """What it checks: every metadata key and tensor name is valid UTF-8.

    Why it matters: keys and tensor names are GGUF strings, which the spec defines as
    UTF-8 (keys must even be ASCII: GG401 judges that).  Readers that decode names
    strictly (gguf-py) fail on the whole file, and a name with stray bytes matches no
    lookup.

    Example: the tensor name ``b"blk.0.attn_q\\xff.weight"``.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_metadata_kv_t.key``,
    ``gguf_tensor_info_t.name``.
    """
    code, name, severity, family = "GG203", "name-not-utf8", Severity.ERROR, "values"
    summary = "A metadata key or tensor name is not valid UTF-8."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        kvs = kv_rows(ctx.mf)
        try:                    # one search over the keys joined (a newline escapes no byte) ...
            clean = _ESCAPED.search("\n".join([kv.key for kv in kvs])) is None
        except TypeError:       # ... when every key is a str
            clean = False
        for kv in () if clean else kvs:
            if _bad_utf8(kv.key):
                yield ctx.at(kv.key_node, f"metadata key is not UTF-8: {quoted(_raw(ctx, kv.data)[:40])}")
        rows = tensor_rows(ctx.mf)
        for i, name in enumerate(rows.names):
            if _bad_utf8(name):
                ti = tensor_node(ctx.mf, i)
                yield ctx.at(ti["name"], f"tensor name is not UTF-8: {quoted(_raw(ctx, ti['name']['data'])[:40])}")


class ZeroSizeDimension(Rule):
    """What it checks: no tensor has a dimension of 0.

    Why it matters: a tensor with a zero dimension has no elements and no data; ggml
    accepts it, but it is a converter bug (an empty weight that a model then
    multiplies by), and loaders that divide by a dimension or map zero bytes fail.

    Example: ``token_embd.weight`` with shape ``(4096, 0)``.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.dimensions``.
    """
    code, name, severity, family = "GG204", "zero-size-dimension", Severity.WARNING, "values"
    only_if = "tensors"
    summary = "A tensor has a dimension of 0 (no elements)."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        rows = tensor_rows(ctx.mf)
        for i, ne in enumerate(rows.dims):
            if 0 in ne:
                yield ctx.at(tensor_field(ctx.mf, i, "dims"), f"tensor {quoted(rows.names[i])} has shape {tuple(ne)}: "
                             f"dimension {ne.index(0)} is 0, so it has no elements")


class AlignmentNotMultipleOf8(Rule):
    """What it checks: ``general.alignment``, when it is a uint32 power of two, is a
    multiple of 8.

    Why it matters: the spec: the alignment "must be a multiple of 8".  ggml accepts 1,
    2 and 4 (GG107 judges other values), but tensor data aligned to less than 8 bytes
    breaks readers that map 8-byte elements (F64, I64) straight from the file.

    Example: ``general.alignment = 4``.

    Reference: the GGUF spec (ggml docs/gguf.md), "Standardized key-value pairs" ``general.alignment``.
    """
    code, name, severity, family = "GG205", "alignment-not-multiple-of-8", Severity.ERROR, "values"
    summary = "general.alignment is not a multiple of 8."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for kv in kv_rows(ctx.mf):
            if kv.key != "general.alignment" or kv.type != GGUF_TYPE_UINT32:
                continue
            a = int(kv.value.value)
            if a and not a & (a - 1) and a % 8:
                yield ctx.at(kv.value, f"general.alignment {a} is not a multiple of 8")
            return


RULES = [InvalidBool, StringNotUtf8, NameNotUtf8, ZeroSizeDimension, AlignmentNotMultipleOf8]
