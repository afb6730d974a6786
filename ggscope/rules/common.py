"""What several rule families read of a parsed file, computed in one place.

Why: the structure, alignment, tensors and values families all need the metadata
entries and tensor infos that parsed completely, ggml's layout facts (alignment, each
tensor's expected offset, the data size) and which rule owns the damage; computed once
here, each family reads the same answer.  Contract: every function takes a
``ModelFile`` and never raises for a damaged one; ``ggml_layout`` is cached in
``mf.extra``.  The numbers are ggml's (ggml src/gguf.cpp, gguf_init_from_file, as
vendored in llama-cpp-python 0.3.36).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ggscope.facts import ggml_types
from ggscope.ksy.damage import Damage

__all__ = ["GGMLLayout", "ggml_layout", "ggml_alignment", "ggml_nbytes", "damage_kind", "claimed_bytes",
           "kv_nodes", "tensor_nodes", "tensor_ne", "raw_bytes", "type_facts", "block_sizes", "pad",
           "HOSTILE_FACTOR", "GGUF_VERSION", "GGML_MAX_DIMS", "GGML_MAX_NAME", "GGUF_DEFAULT_ALIGNMENT",
           "INT64_MAX", "SIZE_MAX", "GGUF_TYPE_UINT32", "GGUF_TYPE_ARRAY", "GGUF_TYPE_NAMES"]

GGUF_VERSION = 3              # the newest version ggml reads
GGML_MAX_DIMS = 4
GGML_MAX_NAME = 64            # ggml refuses names of 64 bytes or more (room for the NUL)
GGUF_DEFAULT_ALIGNMENT = 32
INT64_MAX = (1 << 63) - 1
SIZE_MAX = (1 << 64) - 1
GGUF_TYPE_UINT32, GGUF_TYPE_ARRAY = 4, 9
GGUF_TYPE_NAMES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
                   "string", "array", "uint64", "int64", "float64")


def kv_nodes(mf) -> list:
    """The metadata entry nodes that parsed completely (in file order)."""
    kvs = mf.root.child("metadata_kv")
    if kvs is None:
        return []
    d = mf.damage.path if mf.damage is not None else None
    out = []
    for kv in kvs.children:
        if kv.end is None or kv.error is not None or (d is not None and (d == kv.path or d.startswith(kv.path + "/"))):
            break
        out.append(kv)
    return out


def tensor_nodes(mf) -> list:
    """The tensor info nodes whose fields up to ``offset`` parsed completely."""
    infos = mf.root.child("tensor_infos")
    if infos is None:
        return []
    out = []
    for ti in infos.children:
        off = ti.child("offset")
        if off is None or off.end is None or off.error is not None:
            break
        out.append(ti)
    return out


def tensor_ne(ti) -> list[int]:
    return [int(x) for x in ti["dims"].value]


def raw_bytes(mf, node) -> bytes:
    if node is None or node.end is None:
        return b""
    return bytes(mf.source.read(node.start, node.end))


@dataclass(frozen=True)
class GGMLLayout:
    """The data layout ggml derives from a parsed header.

    ``alignment``: general.alignment when it is a uint32 entry, else 32 (ggml's rule);
    ``header_end``: end of the last tensor info; ``data_start``: header_end padded;
    ``expected``: per tensor, the offset ggml requires (previous end, padded);
    ``data_size``: the padded sum ggml reads as the data blob (None if it overflows).
    """
    alignment: int
    header_end: int | None
    data_start: int | None
    expected: tuple[int, ...]
    data_size: int | None


def pad(n: int, a: int) -> int:
    return (n + a - 1) // a * a if a > 0 else n


def ggml_nbytes(ti) -> int | None:
    """ggml_nbytes for a tensor info node, None when ggml cannot size the type."""
    try:
        t = ggml_types.type_by_id(int(ti["type"].value))
    except (KeyError, ValueError, IndexError, TypeError):
        return None
    be, bb = block_sizes(t)
    if not be or not bb:
        return None
    n = 1
    for d in tensor_ne(ti):
        n *= d
    return n // be * bb


def block_sizes(t) -> tuple[int, int]:
    """Block elements and bytes as today's ggml knows them (0, 0 for removed types)."""
    return (0, 0) if t.removed else (int(t.block_elems), int(t.block_bytes))


def ggml_alignment(mf) -> int:
    for kv in kv_nodes(mf):
        if kv["key"]["data"].value == "general.alignment" and kv["type"].value == GGUF_TYPE_UINT32:
            return int(kv["value"].value)
    return GGUF_DEFAULT_ALIGNMENT


def ggml_layout(mf) -> GGMLLayout:
    cache = mf.extra.setdefault("_ggscope_validate", {})
    if "layout" in cache:
        return cache["layout"]
    a = ggml_alignment(mf)
    tis = tensor_nodes(mf)
    header_end = None
    if damage_kind(mf) is None:
        last = tis[-1]["offset"] if tis else (mf.root.child("metadata_kv") or mf.root.child("header"))
        header_end = last.end if last is not None else None
    data_start = pad(header_end, a) if header_end is not None and a > 0 else None
    expected, size = [], 0
    for ti in tis:
        expected.append(size)
        nb = ggml_nbytes(ti)
        if nb is None or size is None:
            size = None
            continue
        size += pad(nb, a) if a > 0 else nb
        if size > SIZE_MAX:
            size = None
    lay = GGMLLayout(a, header_end, data_start, tuple(expected), size)
    cache["layout"] = lay
    return lay


def type_facts(code: int) -> tuple[str, int, int] | None:
    try:
        t = ggml_types.type_by_id(code)
    except (KeyError, ValueError, IndexError, TypeError):
        return None
    be, bb = block_sizes(t)
    return (t.name, be, bb) if be and bb else None


# --- which rule owns the damage ---------------------------------------------------------

_DATA_RANGE = re.compile(r"tensor_infos\[\d+\]/data")      # a node path, never file text
# A count or length whose bytes exceed the whole file this many times over is no file cut
# short (a truncated file's counts were written for a file somewhat longer than the cut)
# but a corrupt or hostile value: 2**32 - 1 tokens in a 1 MB file, a 2**60-element array.
HOSTILE_FACTOR = 1024


def claimed_bytes(damage: Damage | None) -> int | None:
    """The bytes a count or a size claims (``count-too-large``, ``size-past-end``), if it is one."""
    if damage is None or damage.kind not in ("count-too-large", "size-past-end"):
        return None
    return int(damage.expected)


def damage_kind(mf) -> str | None:
    """Which rule owns ``mf.damage``: a rule name, or None (no damage, or data damage).

    Decided on the damage's data (``ksy.damage``), never on its words.  A count or
    length is hostile (count-cannot-fit) when the bytes it needs exceed the whole file
    ``HOSTILE_FACTOR`` times over, or when the elements it counts take no bytes at all;
    a count whose bytes merely stop early is a truncation (a GGUF file cut to 30 bytes,
    whose entry count asks for a few hundred bytes, is truncated).  An expression that
    failed because another field did counts as that field's damage (``Damage.cause``).
    """
    d = mf.damage
    if d is None:
        return None
    gguf = mf.format == "gguf"
    if gguf and _DATA_RANGE.fullmatch(d.path):
        return None                       # a data range, judged by GG116 and GG5xx
    if gguf and d.path == "magic":
        return "bad-magic"
    data = d.damage
    kinds = {x.kind for x in data.chain()} if data is not None else set()
    if gguf and ("no-case" in kinds or (data is not None and data.kind == "too-deep")):
        return "invalid-value-type"
    if mf.extra.get("damage_type_error"):
        return "legacy-type-invalid"      # the record's type code has no size (GG902)
    if "zero-size-elements" in kinds:
        return "count-cannot-fit"
    need = claimed_bytes(data)
    if need is not None and need > HOSTILE_FACTOR * max(mf.source.size, 1):
        return "count-cannot-fit"
    if need is not None or "truncated" in kinds:
        return "truncated-file"
    return "unreadable-field"
