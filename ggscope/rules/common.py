"""What several rule families read of a parsed file, computed in one place.

Why: the structure, alignment, tensors and values families all need the metadata
entries and tensor infos that parsed completely, ggml's layout facts (alignment, each
tensor's expected offset, the data size) and which rule owns the damage; computed once
here, each family reads the same answer.  Contract: every function takes a
``ModelFile`` and never raises for a damaged one; ``kv_nodes``, ``kv_rows``, ``tensor_rows`` and
``ggml_layout`` are cached in ``mf.extra``.  The numbers are ggml's (ggml src/gguf.cpp, gguf_init_from_file, as
vendored in llama-cpp-python 0.3.36).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple

from ggscope.facts import ggml_types
from ggscope.ksy.damage import Damage
from ggscope.ksy.node import Node
from ggscope.ksy.records import RecordArray

__all__ = ["chat_templates_of", "GGMLLayout", "ggml_layout", "ggml_alignment", "ggml_nbytes", "damage_kind", "claimed_bytes",
           "kv_nodes", "KV", "kv_rows", "tensor_nodes", "TensorRows", "tensor_rows", "tensor_node", "tensor_field", "tensor_ne",
           "raw_bytes", "type_facts", "block_sizes", "pad",
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


def file_cache(mf) -> dict:
    """What a validate run of ``mf`` keeps for the next rule: one dict in ``mf.extra``
    (under a ``_`` key, which ``info`` does not show), the one place its name is written."""
    return mf.extra.get("_ggscope_validate") or mf.extra.setdefault("_ggscope_validate", {})


def per_file(mf, key, make):
    """``make()`` once per file: kept in ``file_cache(mf)`` under ``key`` for every rule after."""
    cache = file_cache(mf)
    try:
        return cache[key]
    except KeyError:
        out = cache[key] = make()
        return out


def chat_templates_of(mf) -> list:
    """``model.summary.chat_templates`` of the file's metadata, once per file: the
    runner's "template" precondition and the template family ask the same question."""
    def make() -> list:
        from ggscope.model.summary import chat_templates  # start-up: imported when a file is checked, not with every family
        return chat_templates(mf.metadata)
    return per_file(mf, "chat_templates", make)


def kv_nodes(mf) -> list:
    """The metadata entry nodes that parsed completely (in file order; cached in
    ``mf.extra``: ten rules read them, none changes the list)."""
    cache = file_cache(mf)
    hit = cache.get("kv_nodes")
    if hit is not None:
        return hit
    kvs = mf.root.child("metadata_kv")
    d = mf.damage.path if mf.damage is not None else None
    out = []
    for kv in kvs.children if kvs is not None else ():
        if kv.end is None or kv.damage is not None or (d is not None and (d == kv.path or d.startswith(kv.path + "/"))):
            break
        out.append(kv)
    cache["kv_nodes"] = out
    return out


class KV(NamedTuple):
    """One complete metadata entry (of ``kv_nodes``) with the parts rules read, looked up once.

    ``node`` the entry, ``key_node`` its ``key`` (a gguf string: ``len``, ``data``),
    ``data`` the key's ``data`` node, ``key`` its decoded value, ``type_node``/``type`` the
    value type, ``value`` the value node, ``elem_type`` an array's element type (None for a
    scalar)."""
    node: Node
    key_node: Node
    data: Node
    key: object
    type_node: Node
    type: object
    value: Node
    elem_type: object


def kv_rows(mf) -> list[KV]:
    """``kv_nodes`` as ``KV`` rows (cached in ``mf.extra``): the node lookups every
    metadata rule made per entry, made once per file."""
    def make() -> list[KV]:
        out = []
        new = tuple.__new__
        for kv in kv_nodes(mf):
            # the fields where the spec lays them out in every complete entry (key, type,
            # value; a string's len, data; an array's type first), else looked up by name
            kids = kv.children
            if len(kids) == 3 and kids[0].name == "key" and kids[1].name == "type" and kids[2].name == "value":
                k, t, v = kids
            else:
                k, t, v = kv["key"], kv["type"], kv["value"]
            kids = k.children
            data = kids[1] if len(kids) == 2 and kids[1].name == "data" else k["data"]
            tv = t.value
            et = None
            if tv == GGUF_TYPE_ARRAY:
                kids = v.children
                et = (kids[0] if kids and kids[0].name == "type" else v["type"]).value
            out.append(new(KV, (kv, k, data, data.value, t, tv, v, et)))
        return out
    return per_file(mf, "kv_rows", make)


def tensor_nodes(mf) -> list:
    """The tensor info nodes whose fields up to ``offset`` parsed completely.

    Builds a node tree per tensor: rules read ``tensor_rows`` instead and ask
    ``tensor_node`` for the one node a finding points at."""
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


@dataclass(frozen=True)
class TensorRows:
    """The tensor infos that parsed completely (those ``tensor_nodes`` returns), as
    columns: one Python list per field, in file order.

    ``names`` are decoded as the spec decodes them (UTF-8, undecodable bytes as
    surrogates); ``name_spans`` are the absolute ``[start, end)`` of each name's bytes;
    ``offset_end`` is where the last complete record ends (None: no record);
    ``records`` the scanned array when the engine scanned one (else None).
    """
    names: list
    name_spans: list
    n_dims: list
    dims: list
    types: list
    offsets: list
    offset_end: int | None
    records: RecordArray | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    @cached_property
    def nbytes(self) -> list:
        """ggml_nbytes of each tensor, None when ggml cannot size its type."""
        per_code: dict = {}
        out = []
        for code, ne in zip(self.types, self.dims):
            bs = per_code.get(code)
            if bs is None:
                f = type_facts(code)
                bs = per_code[code] = (f[1], f[2]) if f is not None else (0, 0)
            if not bs[0]:
                out.append(None)
                continue
            n = 1
            for d in ne:
                n *= d
            out.append(n // bs[0] * bs[1])
        return out


def tensor_rows(mf) -> TensorRows:
    """The complete tensor infos as columns (cached in ``mf.extra``).

    Work and memory are linear in the records the file holds and independent of how
    many rules read them: a scanned array (``ksy.records.RecordArray``) is read column
    by column in bulk, with no node per tensor; otherwise the nodes are read once.
    """
    cache = file_cache(mf)
    hit = cache.get("rows")
    if hit is not None:
        return hit
    infos = mf.root.child("tensor_infos")
    recs = infos.value if infos is not None else None
    if isinstance(recs, RecordArray):
        names = recs.column("name")
        width = names.width
        starts = names.offsets() + width
        spans = list(zip(starts.tolist(), (starts + names.lengths()).tolist()))
        dims = recs.column("dims")
        j = [f.id for f in recs.plan].index("offset")
        rows = TensorRows(names.tolist(), spans, recs.column("n_dims").tolist(), dims.rows(),
                          recs.column("type").tolist(), recs.column("offset").tolist(),
                          int(recs.field_ends(j)[-1]) if len(recs) else None, recs)
    else:
        tis = tensor_nodes(mf)
        rows = TensorRows([ti["name"]["data"].value for ti in tis],
                          [(ti["name"]["data"].start, ti["name"]["data"].end) for ti in tis],
                          [int(ti["n_dims"].value) for ti in tis], [tensor_ne(ti) for ti in tis],
                          [int(ti["type"].value) for ti in tis], [int(ti["offset"].value) for ti in tis],
                          tis[-1]["offset"].end if tis else None)
    cache["rows"] = rows
    return rows


def tensor_node(mf, i: int):
    """The node of tensor info ``i``."""
    return mf.root["tensor_infos"].children[i]


def tensor_field(mf, i: int, field: str):
    """Where field ``field`` of tensor info ``i`` is - what a finding about it points at.

    For scanned records a stand-in ``Node`` with the real node's path, byte range, type
    and spec path, made from the record offsets: building the real node evaluates the
    record's instances, which would make a rule that flags every tensor cost a parse
    per tensor.  Otherwise the real node.
    """
    rows = tensor_rows(mf)
    recs = rows.records
    if recs is None:
        return tensor_node(mf, i)[field]
    ids = [f.id for f in recs.plan]
    j = ids.index(field)
    start = int(recs.offsets[i, j])
    if j + 1 < len(ids):
        end = int(recs.offsets[i, j + 1])
    else:
        end = int(recs.offsets[i + 1, 0]) if i + 1 < len(recs) else int(recs.end)
    like = _field_template(mf, field)
    return Node(field, f"{mf.root['tensor_infos'].path}[{i}]/{field}", like.ktype, start, end, None, like.doc,
                like.spec_path)


def _field_template(mf, field: str):
    cache = file_cache(mf)
    key = ("field", field)
    if key not in cache:
        cache[key] = tensor_node(mf, 0)[field]
    return cache[key]


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
    for kv in kv_rows(mf):
        if kv.key == "general.alignment" and kv.type == GGUF_TYPE_UINT32:
            return int(kv.value.value)
    return GGUF_DEFAULT_ALIGNMENT


def ggml_layout(mf) -> GGMLLayout:
    cache = file_cache(mf)
    if "layout" in cache:
        return cache["layout"]
    a = ggml_alignment(mf)
    rows = tensor_rows(mf)
    header_end = None
    if damage_kind(mf) is None:
        if len(rows):
            header_end = rows.offset_end
        else:
            last = mf.root.child("metadata_kv") or mf.root.child("header")
            header_end = last.end if last is not None else None
    data_start = pad(header_end, a) if header_end is not None and a > 0 else None
    expected, size = [], 0
    for nb in rows.nbytes:
        expected.append(size)
        if nb is None or size is None:
            size = None
            continue
        size += pad(nb, a) if a > 0 else nb
        if size > SIZE_MAX:
            size = None
    lay = GGMLLayout(a, header_end, data_start, tuple(expected), size)
    cache["layout"] = lay
    return lay


@lru_cache(maxsize=256)
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
