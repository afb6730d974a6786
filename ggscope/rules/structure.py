"""Structure rules (GG1xx): exactly what ggml's own reader refuses.

Why: a file that ``gguf_init_from_file`` (ggml ``src/gguf.cpp``) refuses loads in no
ggml-based program, whatever else is right with it.  This family mirrors that reader,
no more and no less, so that ``tests/rules/test_ggml_verdicts.py`` can hold it to
ggml's own verdicts: every file ggml refuses gets an error here, every file it accepts
gets nothing here.  What the spec forbids but ggml lets through lives in ``values``.

Contract: a damaged file is seen through ``mf.damage`` (the error node) plus the
partial tree; ``damage_kind(mf)`` maps each kind of damage to exactly one rule, for
every format (the damage rules GG101, GG103, GG104, GG117, GG118 and the legacy GG902
together cover whatever any format's parse stops at, so ``validate`` calls a file
damaged exactly when ``ggscope.open`` and ``info`` do).  The header
facts ggml computes (its alignment, the expected offset of each tensor, the size of the
data section) are computed once here by ``ggml_layout(mf)`` and shared with the
alignment and tensors families.  Damage of a tensor's *data* range is not header
damage: GG116 and the tensors family judge it.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from ggscope.facts import ggml_types
from ggscope.facts.upstream_overlay import GGUF_MAX_ARRAY_ELEMENTS, GGUF_MAX_STRING_LENGTH
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted

__all__ = ["RULES", "GGMLLayout", "ggml_layout", "damage_kind", "kv_nodes", "tensor_nodes",
           "GGML_MAX_DIMS", "GGML_MAX_NAME", "INT64_MAX", "SIZE_MAX"]

GGUF_VERSION = 3              # the newest version ggml reads
GGML_MAX_DIMS = 4
GGML_MAX_NAME = 64            # ggml refuses names of 64 bytes or more (room for the NUL)
GGUF_DEFAULT_ALIGNMENT = 32
INT64_MAX = (1 << 63) - 1
SIZE_MAX = (1 << 64) - 1
GGUF_TYPE_UINT32, GGUF_TYPE_ARRAY = 4, 9
GGUF_TYPE_NAMES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
                   "string", "array", "uint64", "int64", "float64")

_REF = "ggml src/gguf.cpp, gguf_init_from_file"


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


def _tensor_ne(ti) -> list[int]:
    return [int(x) for x in ti["dims"].value]


def _raw(mf, node) -> bytes:
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


def _pad(n: int, a: int) -> int:
    return (n + a - 1) // a * a if a > 0 else n


def _nbytes(ti) -> int | None:
    """ggml_nbytes for a tensor info node, None when ggml cannot size the type."""
    try:
        t = ggml_types.type_by_id(int(ti["type"].value))
    except (KeyError, ValueError, IndexError, TypeError):
        return None
    be, bb = _block(t)
    if not be or not bb:
        return None
    n = 1
    for d in _tensor_ne(ti):
        n *= d
    return n // be * bb


def _block(t) -> tuple[int, int]:
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
    data_start = _pad(header_end, a) if header_end is not None and a > 0 else None
    expected, size = [], 0
    for ti in tis:
        expected.append(size)
        nb = _nbytes(ti)
        if nb is None or size is None:
            size = None
            continue
        size += _pad(nb, a) if a > 0 else nb
        if size > SIZE_MAX:
            size = None
    lay = GGMLLayout(a, header_end, data_start, tuple(expected), size)
    cache["layout"] = lay
    return lay


# --- damage --------------------------------------------------------------------------

_NUM = re.compile(r"\d+")


_NEED_REASONS = (re.compile(r"^\d+ (?:elements|strings) .*?need (?:at least )?(\d+) bytes"),
                 re.compile(r"^size (\d+) runs past"))
# A count or length whose bytes exceed the whole file this many times over is no file cut
# short (a truncated file's counts were written for a file somewhat longer than the cut)
# but a corrupt or hostile value: 2**32 - 1 tokens in a 1 MB file, a 2**60-element array.
HOSTILE_FACTOR = 1024


def claimed_bytes(reason: str) -> int | None:
    """The bytes a count or length in a damage reason needs, if the reason names one."""
    for pat in _NEED_REASONS:
        m = pat.match(reason)
        if m:
            return int(m.group(1))
    return None


def damage_kind(mf) -> str | None:
    """Which rule owns ``mf.damage``: a rule name, or None (no damage, or data damage).

    A count or length is hostile (count-cannot-fit) when the bytes it needs exceed the
    whole file ``HOSTILE_FACTOR`` times over, or when the elements it counts take no
    bytes at all; a count whose bytes merely stop early is a truncation (a GGUF file cut
    to 30 bytes, whose entry count asks for a few hundred bytes, is truncated).
    """
    d = mf.damage
    if d is None:
        return None
    gguf = mf.format == "gguf"
    if gguf and re.fullmatch(r"tensor_infos\[\d+\]/data", d.path):
        return None                       # a data range, judged by GG116 and GG5xx
    reason = d.error or ""
    if gguf and d.path == "magic":
        return "bad-magic"
    if gguf and ("no case of the switch" in reason or reason.startswith("nesting deeper than")):
        return "invalid-value-type"
    if mf.extra.get("damage_type_error"):
        return "legacy-type-invalid"      # the record's type code has no size (GG902)
    if "consume no bytes" in reason:
        return "count-cannot-fit"
    need = claimed_bytes(reason)
    if need is not None and need > HOSTILE_FACTOR * max(mf.source.size, 1):
        return "count-cannot-fit"
    if need is not None or "(truncated)" in reason:
        return "truncated-file"
    return "unreadable-field"


class _DamageRule(Rule):
    kind: str = ""
    formats = ("*",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if damage_kind(ctx.mf) == self.name:
            d = ctx.mf.damage
            yield ctx.at(d, self.message(d, ctx.mf), start=d.start, end=d.start)

    def message(self, d, mf) -> str:
        return f"{_reader(mf)} refuses this file: {d.path or 'the file'}: {d.error}"


_READERS = {"gguf": "ggml", "ggml": "the GGML loader", "ggmf": "llama.cpp's legacy loader",
            "ggjt": "llama.cpp's legacy loader", "rwkv.cpp": "rwkv.cpp", "chatglm.cpp": "chatglm.cpp",
            "bit1": "the BIT1 reader"}


def _reader(mf) -> str:
    return _READERS.get(mf.format, "its reader")


class BadMagic(_DamageRule):
    """What it checks: the file starts with the four bytes ``GGUF``.

    Why it matters: ggml's reader compares the magic first and refuses anything else
    ("invalid magic characters"); a ``.gguf`` file without it is not GGUF at all.

    Example: ggml test-gguf's HEADER_BAD_MAGIC file (``FUGG``).

    Reference: gguf-spec §1.2 ``gguf_header_t.magic``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG101", "bad-magic", Severity.ERROR, "structure"
    summary = "The file does not start with the GGUF magic."
    formats = ("gguf",)   # other formats are told by their magic: a wrong one is no known format

    @classmethod
    def finding_for(cls, path: str, first: bytes) -> Finding:
        return Finding(cls.code, cls.severity, path,
                       f"ggml refuses this file: magic {quoted(first[:4])}, expected \"GGUF\"", "magic",
                       0, min(4, len(first)), "/seq/0", cls.name)


class UnsupportedVersion(Rule):
    """What it checks: the GGUF version is 2 or 3.

    Why it matters: ggml refuses version 0, no longer loads version 1 ("GGUFv1 is no
    longer supported") and refuses versions newer than it knows (3).

    Example: ggml test-gguf's HEADER_BAD_VERSION_0 / _1 / _FUTURE files.

    Reference: gguf-spec §1.2 ``gguf_header_t.version``; ggml src/gguf.cpp, gguf_init_from_file.
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


class CountCannotFit(_DamageRule):
    """What it checks: every count and length (tensors, entries, array elements, string
    bytes) fits in the file, and the header counts are non-negative as int64.

    Why it matters: ggml reads ``n_tensors`` and ``n_kv`` as int64 and refuses negative
    ones, and refuses any string or array longer than the bytes left.  Such a value is a
    corrupt or hostile header, not a big model.

    Example: ggml test-gguf's HEADER_BAD_N_KV (n_kv = -1) and KV_BAD_KEY_SIZE files.

    Reference: gguf-spec §1.2 ``gguf_header_t``, ``gguf_string_t``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG103", "count-cannot-fit", Severity.ERROR, "structure"
    summary = "A count or length is negative or larger than the file."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for field in ("num_tensors", "num_kv"):
            node = ctx.node(f"header/{field}")
            if node is not None and node.value is not None and int(node.value) > INT64_MAX:
                yield ctx.at(node, f"{field} = {int(node.value) - (1 << 64)} as int64; ggml refuses a "
                             "negative count")
                return
        yield from super().check(ctx)

    def message(self, d, mf) -> str:
        return (f"{d.path}: {d.error}; the count or length cannot fit the {mf.source.size}-byte file, "
                f"{_reader(mf)} refuses it")


class InvalidValueType(Rule):
    """What it checks: every metadata value type is one of the 13 GGUF types, and no
    array holds arrays.

    Why it matters: ggml refuses an unknown type code ("invalid GGUF type") and refuses
    an array whose element type is array: it has no reader for nested arrays.

    Example: ggml test-gguf's KV_BAD_TYPE files (type 13).

    Reference: gguf-spec §1.2 ``gguf_metadata_value_type``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG104", "invalid-value-type", Severity.ERROR, "structure"
    summary = "A metadata value type is unknown, or an array holds arrays."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if damage_kind(ctx.mf) == self.name:
            d = ctx.mf.damage
            if (d.error or "").startswith("nesting deeper than"):
                kv = ctx.node(d.path.split("/", 1)[0])      # the entry, not a path 64 levels long
                key = kv.child("key") if kv is not None else None
                name = key.child("data") if key is not None else None
                what = f"key {name.value!r}" if name is not None and name.value is not None else "an entry"
                yield ctx.at(kv if kv is not None else d,
                             f"{what} holds arrays nested {d.path.count('elems[')} levels deep and more "
                             f"(parsing stops at offset {d.start}: {d.error}); ggml refuses nested arrays",
                             start=d.start, end=d.start)
                return
            t = ctx.node(d.path.rsplit("/", 1)[0] + "/type") if "/" in d.path else None
            code = f" {t.value}" if t is not None and t.value is not None else ""
            yield ctx.at(d, f"unknown GGUF value type{code}; ggml refuses it", start=d.start, end=d.start)
        for kv in kv_nodes(ctx.mf):
            if kv["type"].value == GGUF_TYPE_ARRAY and kv["value"]["type"].value == GGUF_TYPE_ARRAY:
                yield ctx.at(kv["value"]["type"], f"key {kv['key']['data'].value!r}: an array of arrays; "
                             "ggml refuses nested arrays")


class EmptyKey(Rule):
    """What it checks: no metadata key is empty.

    Why it matters: ggml refuses a zero-length key ("key N is empty").

    Example: ggml test-gguf's KV_EMPTY_KEY files.

    Reference: gguf-spec §1.2 ``gguf_metadata_kv_t.key``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG105", "empty-key", Severity.ERROR, "structure"
    summary = "A metadata key is empty."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for i, kv in enumerate(kv_nodes(ctx.mf)):
            k = kv["key"]
            if k.end - k.start <= (4 if ctx.mf.version == 1 else 8):
                yield ctx.at(k, f"metadata key {i} is empty")


class DuplicateKey(Rule):
    """What it checks: no two metadata entries have the same key.

    Why it matters: ggml refuses a file with a duplicate key; other readers silently
    keep the first or the last value, so the file means different things to each.

    Example: ggml test-gguf's KV_DUPLICATE_KEY files.

    Reference: gguf-spec §1.2; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG106", "duplicate-key", Severity.ERROR, "structure"
    summary = "Two metadata entries have the same key."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        seen: dict[bytes, int] = {}
        for i, kv in enumerate(kv_nodes(ctx.mf)):
            raw = _raw(ctx.mf, kv["key"]["data"])
            if raw in seen:
                yield ctx.at(kv["key"], f"key {kv['key']['data'].value!r} repeats entry {seen[raw]}")
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

    Reference: gguf-spec §1.3 ``general.alignment``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG107", "invalid-alignment", Severity.ERROR, "structure"
    summary = "general.alignment is not a uint32 power of two."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for kv in kv_nodes(ctx.mf):
            if kv["key"]["data"].value != "general.alignment":
                continue
            t = kv["type"].value
            if t != GGUF_TYPE_UINT32:
                tn = GGUF_TYPE_NAMES[t] if 0 <= t < len(GGUF_TYPE_NAMES) else str(t)
                yield ctx.at(kv["type"], f"general.alignment must be uint32, is {tn}")
                return
            a = int(kv["value"].value)
            if a == 0 or a & (a - 1):
                yield ctx.at(kv["value"], f"general.alignment {a} is not a power of two")
            return


class TensorNameTooLong(Rule):
    """What it checks: every tensor name is shorter than 64 bytes.

    Why it matters: ggml stores names in ``char name[GGML_MAX_NAME]`` (64, with the NUL)
    and refuses a name of 64 bytes or more ("tensor name N is too long").

    Example: ggml test-gguf's TENSORS_BAD_NAME_SIZE files (87 bytes).

    Reference: gguf-spec §1.2 ``gguf_tensor_info_t.name``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG108", "tensor-name-too-long", Severity.ERROR, "structure"
    summary = "A tensor name is 64 bytes or longer."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for ti in tensor_nodes(ctx.mf):
            n = ti["name"]["data"]
            ln = n.end - n.start
            if ln >= GGML_MAX_NAME:
                yield ctx.at(ti["name"], f"tensor name is {ln} bytes; ggml allows at most {GGML_MAX_NAME - 1}")


class DuplicateTensorName(Rule):
    """What it checks: no two tensors have the same name.

    Why it matters: ggml refuses the file ("duplicate tensor name"); a loader looking a
    weight up by name would get one of them at random.

    Example: ggml test-gguf's TENSORS_DUPLICATE_NAME files.

    Reference: gguf-spec §1.2 ``gguf_tensor_info_t.name``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG109", "duplicate-tensor-name", Severity.ERROR, "structure"
    summary = "Two tensors have the same name."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        seen: dict[bytes, int] = {}
        for i, ti in enumerate(tensor_nodes(ctx.mf)):
            raw = _raw(ctx.mf, ti["name"]["data"]).split(b"\0", 1)[0]   # ggml compares C strings
            if raw in seen:
                yield ctx.at(ti["name"], f"tensor name {ti['name']['data'].value!r} repeats tensor {seen[raw]}")
            else:
                seen[raw] = i


class TooManyDims(Rule):
    """What it checks: every tensor has at most 4 dimensions.

    Why it matters: ggml tensors have ``GGML_MAX_DIMS`` = 4 dimensions; ggml refuses more.

    Example: ggml test-gguf's TENSORS_BAD_N_DIMS files (5).

    Reference: gguf-spec §1.2 ``gguf_tensor_info_t.n_dimensions``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG110", "too-many-dims", Severity.ERROR, "structure"
    summary = "A tensor has more than 4 dimensions."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        infos = ctx.mf.root.child("tensor_infos")
        for ti in (infos.children if infos is not None else ()):
            nd = ti.child("n_dims")
            if nd is None or nd.value is None:
                break
            if int(nd.value) > GGML_MAX_DIMS:
                yield ctx.at(nd, f"{int(nd.value)} dimensions; ggml allows at most {GGML_MAX_DIMS}")


class BadDimension(Rule):
    """What it checks: every dimension is non-negative as int64 and the element count is
    representable (ggml's ``INT64_MAX`` overflow test).

    Why it matters: ggml reads dimensions as int64 and refuses negative ones and shapes
    whose element count overflows int64; sizes computed from them would wrap around.

    Example: ggml test-gguf's TENSORS_BAD_SHAPE (-1) and TENSORS_NE_TOO_BIG files.

    Reference: gguf-spec §1.2 ``gguf_tensor_info_t.dimensions``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG111", "bad-dimension", Severity.ERROR, "structure"
    summary = "A tensor dimension is negative or the element count overflows int64."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for ti in tensor_nodes(ctx.mf):
            if int(ti["n_dims"].value) > GGML_MAX_DIMS:
                continue
            ne = _tensor_ne(ti) + [1] * GGML_MAX_DIMS
            ne = ne[:GGML_MAX_DIMS]
            neg = [j for j, d in enumerate(ne) if d > INT64_MAX]
            if neg:
                yield ctx.at(ti["dims"], f"dimension {neg[0]} is {ne[neg[0]] - (1 << 64)} as int64; "
                             "ggml refuses negative dimensions")
                continue
            prod = ne[0]
            for j in range(1, GGML_MAX_DIMS):
                if ne[j] != 0 and INT64_MAX // ne[j] <= prod:
                    yield ctx.at(ti["dims"], f"shape {tuple(ne)} has at least INT64_MAX elements")
                    break
                prod *= ne[j]


def _type_facts(code: int) -> tuple[str, int, int] | None:
    try:
        t = ggml_types.type_by_id(code)
    except (KeyError, ValueError, IndexError, TypeError):
        return None
    be, bb = _block(t)
    return (t.name, be, bb) if be and bb else None


class UnknownTensorType(Rule):
    """What it checks: every tensor type is a ggml type that still has a block size.

    Why it matters: ggml refuses type ids at or above ``GGML_TYPE_COUNT`` and cannot size
    removed types (Q4_2, Q4_3, the Q4_0_4_4 family); their data cannot be located.

    Example: ggml test-gguf's TENSORS_BAD_TYPE files (43).

    Reference: gguf-spec §1.2 ``ggml_type``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG112", "unknown-tensor-type", Severity.ERROR, "structure"
    summary = "A tensor has an unknown or removed ggml type."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for ti in tensor_nodes(ctx.mf):
            code = int(ti["type"].value)
            if _type_facts(code) is None:
                yield ctx.at(ti["type"], f"ggml type {code} is unknown or removed")


class RowNotBlockMultiple(Rule):
    """What it checks: each tensor's row length ne[0] is a multiple of its type's block
    size, and its byte size fits in size_t.

    Why it matters: quantized rows are whole blocks; ggml refuses a row that is not
    ("not a multiple of block size") and a byte size above SIZE_MAX.

    Example: ggml test-gguf's TENSORS_NE_TOO_BIG and TENSORS_NBYTES_TOO_BIG files.

    Reference: gguf-spec §1.2; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG113", "row-not-block-multiple", Severity.ERROR, "structure"
    summary = "A row is not whole blocks of the type, or the byte size overflows."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for ti in tensor_nodes(ctx.mf):
            facts = _type_facts(int(ti["type"].value))
            ne = _tensor_ne(ti)
            if facts is None or any(d > INT64_MAX for d in ne):
                continue
            tname, be, bb = facts
            ne0 = ne[0] if ne else 1
            if ne0 % be:
                yield ctx.at(ti["dims"], f"ne[0] = {ne0} is not a multiple of {tname}'s block size {be}")
                continue
            n = 1
            for d in ne:
                n *= d
            if n // be > SIZE_MAX // bb:
                yield ctx.at(ti["dims"], f"{n} elements of {tname} need more than SIZE_MAX bytes")


class UnexpectedTensorOffset(Rule):
    """What it checks: each tensor's offset is exactly where the previous tensor ends,
    padded to the alignment (the first at 0).

    Why it matters: ggml lays tensors out back to back and refuses any other offset
    ("has offset X, expected Y"), so gaps, reordering and overlaps all fail to load.

    Example: ggml test-gguf's TENSORS_BAD_OFFSET and DATA_INCONSISTENT_ALIGN files.

    Reference: gguf-spec §1.2 ``gguf_tensor_info_t.offset``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG114", "unexpected-tensor-offset", Severity.ERROR, "structure"
    summary = "A tensor does not start where the previous one ends (padded)."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        for ti, exp in zip(tensor_nodes(ctx.mf), lay.expected):
            got = int(ti["offset"].value)
            if got != exp:
                yield ctx.at(ti["offset"], f"tensor {ti['name']['data'].value!r} has offset {got}, "
                             f"expected {exp} (previous tensor's end padded to {lay.alignment})")
                return      # ggml stops at the first; every later one would repeat it


class DataSectionPastEnd(Rule):
    """What it checks: a file with tensors reaches at least the start of its data
    section (the tensor infos' end padded to the alignment).

    Why it matters: ggml seeks there before anything else and refuses the file when it
    cannot ("failed to seek to beginning of data section"): the header is not padded.

    Example: ggml test-gguf's TENSORS_INCONSISTENT_ALIGN files.

    Reference: gguf-spec §1.2 ``gguf_file_t._padding``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG115", "data-section-past-end", Severity.ERROR, "structure"
    summary = "The file ends before its data section starts."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        if not tensor_nodes(ctx.mf) or lay.data_start is None or lay.header_end is None:
            return
        if ctx.mf.source.size < lay.data_start:
            yield ctx.at(None, f"the data section starts at {lay.data_start} (header end {lay.header_end} "
                         f"padded to {lay.alignment}) but the file has {ctx.mf.source.size} bytes",
                         start=lay.header_end, end=ctx.mf.source.size)


class TruncatedTensorData(Rule):
    """What it checks: when a file has a data section, it holds every tensor, each
    padded to the alignment, and the padded total fits in size_t.

    Why it matters: ggml reads the data section as one blob of that padded size and
    refuses a file one byte short ("failed to read tensor data binary blob").  A file
    that ends exactly where its data section starts is a header-only file, which ggml's
    metadata reads accept; the tensors family reports its missing data instead.

    Example: ggml test-gguf's DATA_NOT_ENOUGH_DATA files.

    Reference: gguf-spec §1.2 ``gguf_file_t.tensor_data``; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG116", "truncated-tensor-data", Severity.ERROR, "structure"
    summary = "The data section is shorter than its tensors need."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        size = ctx.mf.source.size
        if not lay.expected or lay.data_start is None or size <= lay.data_start:
            return
        if lay.data_size is None:
            yield ctx.at(None, "the tensors' padded sizes add up to more than SIZE_MAX bytes",
                         start=lay.data_start, end=size)
        elif lay.data_start + lay.data_size > size:
            yield ctx.at(None, f"the data section needs {lay.data_size} bytes (tensors padded to "
                         f"{lay.alignment}) but only {size - lay.data_start} remain",
                         start=lay.data_start, end=size)


class TruncatedFile(_DamageRule):
    """What it checks: the file holds every field its header and records announce - in
    GGUF the header, metadata and tensor infos; in the formats before GGUF every
    hyper-parameter, vocabulary entry and tensor record, data included.

    Why it matters: a file cut short - an interrupted download or copy - cannot be read
    past the cut.  ggml refuses it ("failed to read ..."); llama.cpp's legacy loader
    (``llama_file::read_raw``: "unexpectedly reached end of file"), rwkv.cpp
    (``rwkv_fread_*`` fail, "Failed to read ...") and chatglm.cpp's loader
    (``ModelLoader::read_*``) stop the same way.

    Example: any GGUF file truncated inside its metadata; an rwkv.cpp file cut inside
    the data of its last parameter.

    Reference: gguf-spec §1.2 ``gguf_file_t``; ggml src/gguf.cpp, gguf_init_from_file;
    legacy-formats.md §1-8.
    """
    code, name, severity, family = "GG117", "truncated-file", Severity.ERROR, "structure"
    summary = "The file ends inside a field its header or records announce."

    def message(self, d, mf) -> str:
        return f"the file ends inside {d.path or 'the header'} at offset {d.start}: {d.error}"


class UnreadableField(_DamageRule):
    """What it checks: every field the format's layout defines can be read - its value
    decides the next field's place, size or type in a way the format allows.

    Why it matters: when a field cannot be interpreted (a byte-order word that is
    neither byte order, a size expression that cannot be evaluated), the format's own
    reader cannot go on either, and everything after that field is unreadable.

    Example: a GGUF file whose version word reads as neither little- nor big-endian.

    Reference: the format's Kaitai spec in formats/*.ksy; design.md (damage is a node).
    """
    code, name, severity, family = "GG118", "unreadable-field", Severity.ERROR, "structure"
    summary = "Parsing stops at a field that cannot be interpreted."

    def message(self, d, mf) -> str:
        return f"parsing stops at {d.path or 'the file'} (offset {d.start}): {d.error}"


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
        for kv in kv_nodes(ctx.mf):
            key = kv["key"]["data"].value
            for node in (kv["key"]["len"], kv["value"].child("len")):
                if node is not None and node.value is not None and int(node.value) > GGUF_MAX_STRING_LENGTH:
                    yield ctx.at(node, f"key {_printable(key)}: string length {int(node.value)} exceeds ggml's "
                                 f"maximum {GGUF_MAX_STRING_LENGTH}")
            if kv["type"].value != GGUF_TYPE_ARRAY:
                continue
            n = kv["value"].child("num_elems")
            if n is not None and n.value is not None and int(n.value) > GGUF_MAX_ARRAY_ELEMENTS:
                yield ctx.at(n, f"key {_printable(key)}: {int(n.value)} array elements exceed ggml's maximum "
                             f"{GGUF_MAX_ARRAY_ELEMENTS}")
                continue
            elems = kv["value"].child("elems")
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
