"""The one table of ggml tensor types, their block layouts and every file format's type codes.

Why: the validator (sizes, divisibility), stats, diff, the forward pass and the
dequantizers all need the same facts about a tensor type -- how many elements a block
holds, how many bytes it takes, how its bytes are laid out -- and the integer a file
stores means different things in different formats and eras.  Everything reads these
tables; nothing else hard-codes a block size.

Contract
--------
* ``TYPES``: every ggml type id 0..42 (``enum ggml_type`` today) as a frozen
  ``GGMLType``.  Removed ids (4, 5, 31-33, 36-38) are present with ``removed=True`` and
  the block size they had while they existed.
* ``LAYOUTS``: block layouts keyed by name.  Every current type's layout is keyed by its
  type name ("Q4_K"); historical byte layouts have their own names ("Q4_0_QNT0", ...).
  ``Layout.codec`` names the module of ``ggscope.quant`` whose ``DEQUANTIZERS`` decodes
  it (``None``: no decoder, e.g. the repacked AArch64 layouts).  ``BIT1_PACKED`` is not
  a ggml layout: BIT1 files' sign bits, 64 per u64 word, each row padded to whole
  words; ``tensor_layout(name, ne0)`` gives the layout of one tensor, which for such
  row-padded layouts with a ragged last word is one block per row.  The layout tables
  themselves live in ``layouts`` (``Layout.scale``: where the block scale is;
  ``Layout.same_as``: rwkv.cpp version 100's names for upstream layouts).
* ``type_by_id``, ``type_by_name`` (case-insensitive, "q4_k" works), ``layout``,
  ``tensor_nbytes(type_or_layout, ne)`` and ``resolve_type(format, version, code)``
  which maps a stored type code to ``(type name, layout name)`` or raises ``ValueError``
  with a message fit for a finding.
* Enums: ``GGML_FTYPE`` (ggml's example programs), ``LLAMA_FTYPE`` (llama.cpp's
  ``file_type``), ``RWKV_TYPES`` (rwkv.cpp's data-type enum).

Sources (tags as in the shared docs): ids, names, sizes and field offsets of today's
types: ggml-types.md §2 [G-HEAD ggml.h, ggml.c type_traits, ggml-common.h]; history of
ids: ggml-types.md §4 and legacy-formats.md §4.2; historical block layouts:
legacy-formats.md §5 and ggml-types.md §4.3; GGJT per-version type codes:
legacy-formats.md §3.3; ggml example files and their qntvr: legacy-formats.md §1.3 and
the ggml-legacy fixture MANIFEST; rwkv.cpp: legacy-formats.md §6.3/§6.4; chatglm.cpp:
legacy-formats.md §7.3; ``ggml_ftype``: ggml-types.md §3; ``llama_ftype``:
legacy-formats.md §4.1.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Union

from ggscope.facts.layouts import BIT1_LAYOUT, CURRENT_FIELDS, HISTORICAL_ROWS, RWKV100_SAME, SCALES, Layout

__all__ = [
    "GGMLType", "Layout", "TYPES", "TYPES_BY_NAME", "LAYOUTS", "QK_K", "tensor_layout", "RWKV100_SAME",
    "GGML_FTYPE", "GGML_FTYPE_HISTORICAL", "LLAMA_FTYPE", "RWKV_TYPES", "FORMATS",
    "type_by_id", "type_by_name", "layout", "tensor_nbytes", "resolve_type",
]

QK_K = 256          # super-block size of K-quants, IQ2/IQ3/IQ1/IQ4_XS, TQ types [G-HEAD ggml-common.h]


@dataclass(frozen=True)
class GGMLType:
    """One ``enum ggml_type`` value.

    ``name`` is the enum spelling without ``GGML_TYPE_`` ("Q4_K"), ``type_name`` ggml's
    ``type_traits[].type_name`` ("q4_K").  Removed ids keep the sizes of their era.
    """
    id: int
    name: str
    type_name: str
    block_elems: int
    block_bytes: int
    is_quantized: bool
    removed: bool = False
    note: str = ""

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.block_bytes / self.block_elems


# --- the type table -------------------------------------------------------------------
# (id, name, type_name, block elems, block bytes, quantized, removed, note)
# ggml-types.md §2 [G-HEAD]; removed ids from ggml-types.md §4.1 and §4.3.
_TYPE_ROWS: tuple[tuple, ...] = (
    (0, "F32", "f32", 1, 4, False, False, ""),
    (1, "F16", "f16", 1, 2, False, False, ""),
    (2, "Q4_0", "q4_0", 32, 18, True, False, ""),
    (3, "Q4_1", "q4_1", 32, 20, True, False, ""),
    (4, "Q4_2", "q4_2", 16, 10, True, True,
     "2023-04-18 -> 2023-05-12 (legacy-formats.md §5.3); today 'DEPRECATED', size 0"),
    (5, "Q4_3", "q4_3", 16, 12, True, True,
     "2023-04-20 -> 2023-04-28 (legacy-formats.md §5.4); today 'DEPRECATED', size 0"),
    (6, "Q5_0", "q5_0", 32, 22, True, False, ""),
    (7, "Q5_1", "q5_1", 32, 24, True, False, ""),
    (8, "Q8_0", "q8_0", 32, 34, True, False, ""),
    (9, "Q8_1", "q8_1", 32, 36, True, False, "intermediate dot-product type; 36 bytes since 2024-03-12 [L36]"),
    (10, "Q2_K", "q2_K", 256, 84, True, False, ""),
    (11, "Q3_K", "q3_K", 256, 110, True, False, ""),
    (12, "Q4_K", "q4_K", 256, 144, True, False, ""),
    (13, "Q5_K", "q5_K", 256, 176, True, False, ""),
    (14, "Q6_K", "q6_K", 256, 210, True, False, ""),
    (15, "Q8_K", "q8_K", 256, 292, True, False, "intermediate dot-product type, not used for weights"),
    (16, "IQ2_XXS", "iq2_xxs", 256, 66, True, False, ""),
    (17, "IQ2_XS", "iq2_xs", 256, 74, True, False, ""),
    (18, "IQ3_XXS", "iq3_xxs", 256, 98, True, False, ""),
    (19, "IQ1_S", "iq1_s", 256, 50, True, False, ""),
    (20, "IQ4_NL", "iq4_nl", 32, 18, True, False, ""),
    (21, "IQ3_S", "iq3_s", 256, 110, True, False, ""),
    (22, "IQ2_S", "iq2_s", 256, 82, True, False, ""),
    (23, "IQ4_XS", "iq4_xs", 256, 136, True, False, ""),
    (24, "I8", "i8", 1, 1, False, False, "id pinned 2024-03-14; drifted before (ggml-types.md §4.1)"),
    (25, "I16", "i16", 1, 2, False, False, "id pinned 2024-03-14"),
    (26, "I32", "i32", 1, 4, False, False, "id pinned 2024-03-14"),
    (27, "I64", "i64", 1, 8, False, False, ""),
    (28, "F64", "f64", 1, 8, False, False, ""),
    (29, "IQ1_M", "iq1_m", 256, 56, True, False, ""),
    (30, "BF16", "bf16", 1, 2, False, False, ""),
    (31, "Q4_0_4_4", "q4_0_4x4", 32, 18, True, True,
     "2024-07-10 -> 2024-12-07: Q4_0 blocks repacked 4 rows x 4 bytes for AArch64 [G24] [G27]"),
    (32, "Q4_0_4_8", "q4_0_4x8", 32, 18, True, True, "2024-07-10 -> 2024-12-07, repacked Q4_0 [G24] [G27]"),
    (33, "Q4_0_8_8", "q4_0_8x8", 32, 18, True, True, "2024-07-10 -> 2024-12-07, repacked Q4_0 [G24] [G27]"),
    (34, "TQ1_0", "tq1_0", 256, 54, True, False, ""),
    (35, "TQ2_0", "tq2_0", 256, 66, True, False, ""),
    (36, "IQ4_NL_4_4", "iq4_nl_4x4", 32, 18, True, True, "2024-11-28 -> 2024-12-07, repacked IQ4_NL [G26] [G27]"),
    (37, "IQ4_NL_4_8", "iq4_nl_4x8", 32, 18, True, True, "2024-11-28 -> 2024-12-07, repacked IQ4_NL [G26] [G27]"),
    (38, "IQ4_NL_8_8", "iq4_nl_8x8", 32, 18, True, True, "2024-11-28 -> 2024-12-07, repacked IQ4_NL [G26] [G27]"),
    (39, "MXFP4", "mxfp4", 32, 17, True, False, ""),
    (40, "NVFP4", "nvfp4", 64, 36, True, False, ""),
    (41, "Q1_0", "q1_0", 128, 18, True, False, ""),
    (42, "Q2_0", "q2_0", 64, 18, True, False, ""),
)

TYPES: tuple[GGMLType, ...] = tuple(GGMLType(*row) for row in _TYPE_ROWS)
GGML_TYPE_COUNT = len(TYPES)        # 43 [G-HEAD ggml.h]
TYPES_BY_NAME: dict[str, GGMLType] = {t.name: t for t in TYPES}
_BY_LOWER: dict[str, GGMLType] = {}
for _t in TYPES:
    _BY_LOWER[_t.name.lower()] = _t
    _BY_LOWER[_t.type_name.lower()] = _t
assert all(t.id == i for i, t in enumerate(TYPES)), "TYPES must be indexed by id"


def _build_layouts() -> dict[str, Layout]:
    out: dict[str, Layout] = {}
    for t in TYPES:
        if t.removed:
            continue
        codec, fields = CURRENT_FIELDS[t.name]
        out[t.name] = Layout(t.name, t.name, t.block_elems, t.block_bytes, fields, codec, scale=SCALES.get(t.name))
    for row in HISTORICAL_ROWS:
        out[row[0]] = Layout(*row, scale=SCALES.get(row[0]), same_as=RWKV100_SAME.get(row[0]))
    out[BIT1_LAYOUT.name] = BIT1_LAYOUT
    return out


def tensor_layout(name: str, ne0: int) -> Layout | None:
    """The layout of one tensor of layout ``name`` with rows of ``ne0`` elements: the
    table's entry, except that a row-padded layout (BIT1) whose rows end inside a block
    becomes one block per row (``ne0`` elements in the padded row's bytes); None for an
    unknown name."""
    lay = LAYOUTS.get(name)
    if lay is None or not lay.row_padded or ne0 <= 0 or ne0 % lay.block_elems == 0:
        return lay
    blocks = -(-int(ne0) // lay.block_elems)
    return dataclasses.replace(lay, block_elems=int(ne0), block_bytes=blocks * lay.block_bytes)


LAYOUTS: dict[str, Layout] = _build_layouts()


# --- enums ----------------------------------------------------------------------------
# ggml_ftype today (ggml-types.md §3 [G-HEAD ggml.h]); stored by ggml's example programs
# as ftype + 1000 * qntvr (legacy-formats.md §1.3).
GGML_FTYPE: dict[int, str] = {
    -1: "UNKNOWN", 0: "ALL_F32", 1: "MOSTLY_F16", 2: "MOSTLY_Q4_0", 3: "MOSTLY_Q4_1",
    4: "MOSTLY_Q4_1_SOME_F16", 7: "MOSTLY_Q8_0", 8: "MOSTLY_Q5_0", 9: "MOSTLY_Q5_1",
    10: "MOSTLY_Q2_K", 11: "MOSTLY_Q3_K", 12: "MOSTLY_Q4_K", 13: "MOSTLY_Q5_K", 14: "MOSTLY_Q6_K",
    15: "MOSTLY_IQ2_XXS", 16: "MOSTLY_IQ2_XS", 17: "MOSTLY_IQ3_XXS", 18: "MOSTLY_IQ1_S",
    19: "MOSTLY_IQ4_NL", 20: "MOSTLY_IQ3_S", 21: "MOSTLY_IQ2_S", 22: "MOSTLY_IQ4_XS",
    23: "MOSTLY_IQ1_M", 24: "MOSTLY_BF16", 25: "MOSTLY_MXFP4", 26: "MOSTLY_NVFP4",
    27: "MOSTLY_Q1_0", 28: "MOSTLY_Q2_0",
}
# Values that existed only in 2023 (ggml-types.md §3 history [G05] [G06] [G08]).
GGML_FTYPE_HISTORICAL: dict[int, str] = {5: "MOSTLY_Q4_2", 6: "MOSTLY_Q4_3"}

# llama.cpp llama_ftype, the header word `ftype` of GGML/GGMF/GGJT and GGUF's
# general.file_type (legacy-formats.md §4.1).  5 and 6 are removed; 33-35 removed.
LLAMA_FTYPE: dict[int, str] = {
    0: "ALL_F32", 1: "MOSTLY_F16", 2: "MOSTLY_Q4_0", 3: "MOSTLY_Q4_1", 4: "MOSTLY_Q4_1_SOME_F16",
    5: "MOSTLY_Q4_2", 6: "MOSTLY_Q4_3", 7: "MOSTLY_Q8_0", 8: "MOSTLY_Q5_0", 9: "MOSTLY_Q5_1",
    10: "MOSTLY_Q2_K", 11: "MOSTLY_Q3_K_S", 12: "MOSTLY_Q3_K_M", 13: "MOSTLY_Q3_K_L",
    14: "MOSTLY_Q4_K_S", 15: "MOSTLY_Q4_K_M", 16: "MOSTLY_Q5_K_S", 17: "MOSTLY_Q5_K_M",
    18: "MOSTLY_Q6_K", 19: "MOSTLY_IQ2_XXS", 20: "MOSTLY_IQ2_XS", 21: "MOSTLY_Q2_K_S",
    22: "MOSTLY_IQ3_XS", 23: "MOSTLY_IQ3_XXS", 24: "MOSTLY_IQ1_S", 25: "MOSTLY_IQ4_NL",
    26: "MOSTLY_IQ3_S", 27: "MOSTLY_IQ3_M", 28: "MOSTLY_IQ2_S", 29: "MOSTLY_IQ2_M",
    30: "MOSTLY_IQ4_XS", 31: "MOSTLY_IQ1_M", 32: "MOSTLY_BF16", 33: "MOSTLY_Q4_0_4_4",
    34: "MOSTLY_Q4_0_4_8", 35: "MOSTLY_Q4_0_8_8", 36: "MOSTLY_TQ1_0", 37: "MOSTLY_TQ2_0",
    1024: "GUESSED",
}
LLAMA_FTYPE_REMOVED = frozenset({5, 6, 33, 34, 35})

# rwkv.cpp data types (legacy-formats.md §6.3): rwkv id -> (name, ggml type name or None,
# layout in version 100, layout in version 101).  None: no such type in that version.
RWKV_TYPES: dict[int, tuple[str, str | None, str | None, str | None]] = {
    0: ("FP32", "F32", "F32", "F32"),
    1: ("FP16", "F16", "F16", "F16"),
    2: ("Q4_0", "Q4_0", "Q4_0_RWKV100", "Q4_0"),
    3: ("Q4_1", "Q4_1", "Q4_1_RWKV100", "Q4_1"),
    4: ("Q4_1_O", None, "Q4_1_O", None),
    5: ("Q4_2", "Q4_2", "Q4_2_RWKV100", None),
    6: ("Q4_3", "Q4_3", "Q4_3_RWKV100", None),
    7: ("Q5_0", "Q5_0", "Q5_0_RWKV100", "Q5_0"),
    8: ("Q5_1", "Q5_1", "Q5_1_RWKV100", "Q5_1"),
    9: ("Q8_0", "Q8_0", "Q8_0_RWKV100", "Q8_0"),
    10: ("Q8_1", "Q8_1", None, "Q8_1"),
    11: ("Q2_K", "Q2_K", None, "Q2_K"),
    12: ("Q3_K", "Q3_K", None, "Q3_K"),
    13: ("Q4_K", "Q4_K", None, "Q4_K"),
    14: ("Q5_K", "Q5_K", None, "Q5_K"),
    15: ("Q6_K", "Q6_K", None, "Q6_K"),
    16: ("Q8_K", "Q8_K", None, "Q8_K"),
}

# Per-era code -> layout tables of the legacy llama.cpp / ggml-example containers.
# Pre-#1405 ("QNT0"): interleaved nibbles, f32 scales in Q4_0/Q4_1/Q8_0.
_LEGACY_QNT0: dict[int, str] = {0: "F32", 1: "F16", 2: "Q4_0_QNT0", 3: "Q4_1_QNT0", 4: "Q4_2",
                                5: "Q4_3", 6: "Q5_0_QNT0", 7: "Q5_1_QNT0", 8: "Q8_0_QNT0"}
# #1405 -> #1508 ("QNT1"): split halves, still f32 scales (legacy-formats.md §3.3, §1.3).
_LEGACY_QNT1: dict[int, str] = {0: "F32", 1: "F16", 2: "Q4_0_QNT1", 3: "Q4_1_QNT1", 6: "Q5_0",
                                7: "Q5_1", 8: "Q8_0_QNT0"}
# 2023-03 llama.cpp files (GGML unversioned, GGMF): file codes 0..3 (legacy-formats.md §4.2).
_LEGACY_2023_03: dict[int, str] = {0: "F32", 1: "F16", 2: "Q4_0_QNT0", 3: "Q4_1_QNT0"}
# Removed ids that were legal in GGUF files for a while (ggml-types.md §2, §4.1).
_GGUF_REPACKED: frozenset[int] = frozenset({31, 32, 33, 36, 37, 38})
_CHATGLM: frozenset[int] = frozenset({0, 1, 2, 3, 6, 7, 8})      # legacy-formats.md §7.3

FORMATS = ("gguf", "ggml", "ggmf", "ggjt", "ggml-example", "rwkv.cpp", "chatglm.cpp")


# --- lookups --------------------------------------------------------------------------
def type_by_id(type_id: int) -> GGMLType:
    """The ``GGMLType`` with this id; ``ValueError`` for ids outside 0..42."""
    if not isinstance(type_id, int) or not 0 <= type_id < len(TYPES):
        raise ValueError(f"unknown ggml type id {type_id!r} (valid: 0..{len(TYPES) - 1})")
    return TYPES[type_id]


def type_by_name(name: str) -> GGMLType:
    """Look a type up by enum name or type_name, case-insensitively ("Q4_K", "q4_k", "q4_K")."""
    t = _BY_LOWER.get(str(name).strip().lower())
    if t is None:
        raise ValueError(f"unknown ggml type name {name!r}")
    return t


def layout(name: "str | Layout | GGMLType") -> Layout:
    """A layout by name (exact, then case-insensitive); a current type name gives its layout."""
    if isinstance(name, Layout):
        return name
    if isinstance(name, GGMLType):
        name = name.name
    lay = LAYOUTS.get(name)
    if lay is None:
        folded = {k.lower(): v for k, v in LAYOUTS.items()}
        lay = folded.get(str(name).lower())
        if lay is None:
            t = _BY_LOWER.get(str(name).lower())
            lay = LAYOUTS.get(t.name) if t is not None else None
    if lay is None:
        raise ValueError(f"unknown block layout {name!r}")
    return lay


_TypeOrLayout = Union[str, int, GGMLType, Layout]


def _sizes(type_or_layout: _TypeOrLayout) -> tuple[str, int, int]:
    if isinstance(type_or_layout, int) and not isinstance(type_or_layout, bool):
        t = type_by_id(type_or_layout)
        return t.name, t.block_elems, t.block_bytes
    if isinstance(type_or_layout, GGMLType):
        return type_or_layout.name, type_or_layout.block_elems, type_or_layout.block_bytes
    lay = layout(type_or_layout)
    return lay.name, lay.block_elems, lay.block_bytes


def tensor_nbytes(type_or_layout: _TypeOrLayout, ne: Iterable[int]) -> int:
    """Bytes of a tensor with dims ``ne`` (ggml order): n_elements / block_elems * block_bytes.

    ``ValueError`` when a dim is negative or ``ne[0]`` is not a whole number of blocks
    (ggml requires whole blocks per row [G-HEAD ggml.c ggml_row_size]).
    """
    name, elems, nbytes = _sizes(type_or_layout)
    ne = [int(d) for d in ne]
    if any(d < 0 for d in ne):
        raise ValueError(f"negative dimension in {ne}")
    n = 1
    for d in ne:
        n *= d
    row = ne[0] if ne else 1
    if row % elems:
        raise ValueError(f"{name}: row length ne[0]={row} is not a multiple of the block size {elems}")
    return n // elems * nbytes


def _current(code: int, what: str) -> tuple[str, str]:
    t = type_by_id(code)
    if t.removed:
        raise ValueError(f"{what}: type id {code} ({t.name}) was removed; {t.note}")
    return t.name, t.name


def resolve_type(format: str, version: "int | str | None", code: int,
                 *, header_ftype: int | None = None) -> tuple[str, str]:
    """Map a stored per-tensor type code to ``(ggml type name, layout name)``.

    ``format``/``version``:
      * ``"gguf"`` (any version): today's ids; ids 31-33/36-38 give their repacked
        layouts (legal in GGUF 2024-07 -> 2024-12), 4/5 are an error.
      * ``"ggml"`` (unversioned llama.cpp, 2023-03) and ``"ggmf"`` (v1): file codes 0..3.
      * ``"ggjt"`` version 1, 2 or 3 (legacy-formats.md §3.3); in v1 code 6 is the
        one-day Q8_0 when ``header_ftype`` is 7 (MOSTLY_Q8_0), else Q5_0.
      * ``"ggml-example"`` with ``version`` = qntvr (header ftype // 1000): 0, 1 or 2.
      * ``"rwkv.cpp"`` version 100 or 101 (rwkv's own enum, legacy-formats.md §6.3).
      * ``"chatglm.cpp"``: ggml ids 0, 1, 2, 3, 6, 7, 8 with today's layouts.
    Raises ``ValueError`` naming format, version and code when the code is not valid there.
    """
    what = f"{format} v{version}" if version is not None else format
    if not isinstance(code, int) or isinstance(code, bool):
        raise ValueError(f"{what}: type code {code!r} is not an integer")
    if format == "gguf":
        t = type_by_id(code) if 0 <= code < len(TYPES) else None
        if t is None:
            raise ValueError(f"{what}: unknown ggml type id {code} (valid: 0..{len(TYPES) - 1})")
        if t.id in _GGUF_REPACKED:
            return t.name, t.name
        return _current(code, what)
    if format in ("ggml", "ggmf"):
        table = _LEGACY_2023_03
    elif format == "ggjt":
        if version == 1:
            if code == 6 and header_ftype == 7:
                return "Q8_0", "Q8_0_QNT0"      # 2023-04-25 Q8_0 (legacy-formats.md §3.3)
            table = _LEGACY_QNT0
        elif version == 2:
            table = _LEGACY_QNT1
        elif version == 3:
            if code in (4, 5, 9) or code > 15:
                raise ValueError(f"{what}: type code {code} cannot occur in a GGJT v3 file")
            return _current(code, what)
        else:
            raise ValueError(f"ggjt: unknown version {version!r} (known: 1, 2, 3)")
    elif format == "ggml-example":
        if version == 0:
            if code == 6 and header_ftype is not None and header_ftype % 1000 == 7:
                return "Q8_0", "Q8_0_QNT0"
            table = _LEGACY_QNT0
        elif version == 1:
            table = _LEGACY_QNT1
        elif version == 2:
            return _current(code, what)
        else:
            raise ValueError(f"ggml-example: unknown quantization version {version!r} (known: 0, 1, 2)")
    elif format == "rwkv.cpp":
        if version not in (100, 101):
            raise ValueError(f"rwkv.cpp: unknown file version {version!r} (known: 100, 101)")
        row = RWKV_TYPES.get(code)
        lay = None if row is None else (row[2] if version == 100 else row[3])
        if row is None or lay is None:
            raise ValueError(f"{what}: rwkv data type {code} is not valid in this version")
        return LAYOUTS[lay].type_name, lay
    elif format == "chatglm.cpp":
        if code not in _CHATGLM:
            raise ValueError(f"{what}: ggml type id {code} is not one chatglm.cpp writes "
                             f"({sorted(_CHATGLM)})")
        return _current(code, what)
    else:
        raise ValueError(f"unknown format {format!r} (known: {', '.join(FORMATS)})")
    lay = table.get(code)
    if lay is None:
        raise ValueError(f"{what}: type code {code} is not valid in this format/era "
                         f"(valid: {sorted(table)})")
    return LAYOUTS[lay].type_name, lay
