"""The byte layouts of ggml blocks, as data: one entry per layout any era wrote.

Why a module of its own: the layouts are a table that the type table (``ggml_types``)
turns into ``LAYOUTS``, and that the dequantizers and the statistics kernels key on.
Contract: ``Layout`` is frozen; ``CURRENT_FIELDS`` draws today's layouts (keyed by type
name), ``HISTORICAL_ROWS`` the layouts of earlier eras and forks, ``BIT1_LAYOUT`` the
BIT1 exporter's sign bits; ``SCALES`` and ``RWKV100_SAME`` are the structured facts
code reads (``Layout.scale``, ``Layout.same_as``) - nothing parses the drawings.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layout", "CURRENT_FIELDS", "HISTORICAL_ROWS", "BIT1_LAYOUT", "RWKV100_SAME", "SCALES"]


@dataclass(frozen=True)
class Layout:
    """The byte layout of one block, as some era of ggml (or a fork) wrote it.

    ``type_name`` is the ggml type the layout encodes; ``fields`` draws the block
    (offset: field), for people; ``scale`` is the one field code reads from it - where
    the block's scale ``d`` is (``SCALES``); ``codec`` is the ``ggscope.quant`` module
    holding its dequantizer (``None`` when ggscope has none); ``same_as`` names the
    layout whose decoder reads these bytes; ``source`` cites the shared docs.
    """
    name: str
    type_name: str
    block_elems: int
    block_bytes: int
    fields: str
    codec: str | None
    era: str = "current"
    source: str = "ggml-types.md §2"
    row_padded: bool = False     # rows end on a whole block (BIT1): see tensor_layout
    scale: "tuple[int, str] | None" = None   # (byte offset, "f16"/"f32") of the block scale d
    same_as: str | None = None   # another name of the same bytes (rwkv.cpp version 100: RWKV100_SAME)


# --- block layouts --------------------------------------------------------------------
# Current layouts: one per non-removed type, keyed by the type name (ggml-types.md §2).
CURRENT_FIELDS: dict[str, tuple[str, str]] = {
    # name: (codec module, fields)
    "F32": ("floats", "0: f32"),
    "F16": ("floats", "0: f16"),
    "BF16": ("floats", "0: bf16 (upper half of an f32)"),
    "F64": ("floats", "0: f64"),
    "I8": ("floats", "0: i8"),
    "I16": ("floats", "0: i16"),
    "I32": ("floats", "0: i32"),
    "I64": ("floats", "0: i64"),
    "Q4_0": ("legacy", "0: f16 d; 2: u8 qs[16] (split halves)"),
    "Q4_1": ("legacy", "0: f16 d; 2: f16 m; 4: u8 qs[16] (split halves)"),
    "Q5_0": ("legacy", "0: f16 d; 2: u8 qh[4]; 6: u8 qs[16] (split halves)"),
    "Q5_1": ("legacy", "0: f16 d; 2: f16 m; 4: u8 qh[4]; 8: u8 qs[16] (split halves)"),
    "Q8_0": ("legacy", "0: f16 d; 2: i8 qs[32]"),
    "Q8_1": ("legacy", "0: f16 d; 2: f16 s; 4: i8 qs[32]"),
    "Q2_K": ("kquants", "0: u8 scales[16]; 16: u8 qs[64]; 80: f16 d; 82: f16 dmin"),
    "Q3_K": ("kquants", "0: u8 hmask[32]; 32: u8 qs[64]; 96: u8 scales[12]; 108: f16 d"),
    "Q4_K": ("kquants", "0: f16 d; 2: f16 dmin; 4: u8 scales[12]; 16: u8 qs[128]"),
    "Q5_K": ("kquants", "0: f16 d; 2: f16 dmin; 4: u8 scales[12]; 16: u8 qh[32]; 48: u8 qs[128]"),
    "Q6_K": ("kquants", "0: u8 ql[128]; 128: u8 qh[64]; 192: i8 scales[16]; 208: f16 d"),
    "Q8_K": ("kquants", "0: f32 d; 4: i8 qs[256]; 260: i16 bsums[16]"),
    "IQ2_XXS": ("iquants", "0: f16 d; 2: u16 qs[32]"),
    "IQ2_XS": ("iquants", "0: f16 d; 2: u16 qs[32]; 66: u8 scales[8]"),
    "IQ3_XXS": ("iquants", "0: f16 d; 2: u8 qs[96]"),
    "IQ1_S": ("iquants", "0: f16 d; 2: u8 qs[32]; 34: u16 qh[8]"),
    "IQ4_NL": ("iquants", "0: f16 d; 2: u8 qs[16]"),
    "IQ3_S": ("iquants", "0: f16 d; 2: u8 qs[64]; 66: u8 qh[8]; 74: u8 signs[32]; 106: u8 scales[4]"),
    "IQ2_S": ("iquants", "0: f16 d; 2: u8 qs[64]; 66: u8 qh[8]; 74: u8 scales[8]"),
    "IQ4_XS": ("iquants", "0: f16 d; 2: u16 scales_h; 4: u8 scales_l[4]; 8: u8 qs[128]"),
    "IQ1_M": ("iquants", "0: u8 qs[32]; 32: u8 qh[16]; 48: u8 scales[8]"),
    "TQ1_0": ("ternary", "0: u8 qs[48]; 48: u8 qh[4]; 52: f16 d"),
    "TQ2_0": ("ternary", "0: u8 qs[64]; 64: f16 d"),
    "MXFP4": ("fp4", "0: u8 e (E8M0); 1: u8 qs[16] (E2M1 codes, split halves)"),
    "NVFP4": ("fp4", "0: u8 d[4] (UE4M3 per 16 elems); 4: u8 qs[32] (E2M1 codes)"),
    "Q1_0": ("lowbit", "0: f16 d; 2: u8 qs[16] (1 bit per element, LSB first)"),
    "Q2_0": ("lowbit", "0: f16 d; 2: u8 qs[16] (2 bits per element)"),
}

# Historical layouts (legacy-formats.md §5, §6.4; ggml-types.md §4.3).
# (name, type, elems, bytes, fields, codec, era, source)
HISTORICAL_ROWS: tuple[tuple, ...] = (
    ("Q4_0_QNT0", "Q4_0", 32, 20, "0: f32 d; 4: u8 qs[16] (interleaved)", "historical",
     "2023-03-11 -> 2023-05-12 (GGML/GGMF, GGJT v1, ggml examples qntvr 0)", "legacy-formats.md §5.1 [L02] [L07]"),
    ("Q4_0_QNT1", "Q4_0", 32, 20, "0: f32 d; 4: u8 qs[16] (split halves)", "historical",
     "2023-05-12 -> 2023-05-19 (GGJT v2, ggml examples qntvr 1)", "legacy-formats.md §5.1 [L23]"),
    ("Q4_1_QNT0", "Q4_1", 32, 24, "0: f32 d; 4: f32 m; 8: u8 qs[16] (interleaved)", "historical",
     "2023-03-17 -> 2023-05-12", "legacy-formats.md §5.2 [L03] [L07]"),
    ("Q4_1_QNT1", "Q4_1", 32, 24, "0: f32 d; 4: f32 m; 8: u8 qs[16] (split halves)", "historical",
     "2023-05-12 -> 2023-05-19", "legacy-formats.md §5.2 [L23]"),
    ("Q4_2", "Q4_2", 16, 10, "0: f16 d; 2: u8 qs[8] (interleaved)", "historical",
     "2023-04-18 -> 2023-05-12", "legacy-formats.md §5.3 [L17] [L21]"),
    ("Q4_3", "Q4_3", 16, 12, "0: f16 d; 2: f16 m; 4: u8 qs[8] (interleaved)", "historical",
     "2023-04-20 -> 2023-04-28", "legacy-formats.md §5.4 [L18] [L21]"),
    ("Q5_0_QNT0", "Q5_0", 32, 22, "0: f16 d; 2: u8 qh[4]; 6: u8 qs[16] (interleaved)", "historical",
     "2023-04-26 -> 2023-05-12", "legacy-formats.md §5.5 [L21]"),
    ("Q5_1_QNT0", "Q5_1", 32, 24, "0: f16 d; 2: f16 m; 4: u8 qh[4]; 8: u8 qs[16] (interleaved)", "historical",
     "2023-04-26 -> 2023-05-12", "legacy-formats.md §5.5 [L21]"),
    ("Q8_0_QNT0", "Q8_0", 32, 36, "0: f32 d; 4: i8 qs[32]", "historical",
     "2023-04-25 -> 2023-05-19 (GGJT v1/v2, qntvr 0 and 1)", "legacy-formats.md §5.6 [L20] [L23]"),
    ("Q4_1_O", "Q4_1_O", 32, 24,
     "0: f16 d; 2: f16 m; 4: u16 outlier_index; 6: f16 outlier_value; 8: u8 qs[16] (interleaved)",
     "historical", "rwkv.cpp 2023-04-07 -> 2023-04-29", "legacy-formats.md §5.8 [R03]"),
    # rwkv.cpp version 100: the ggml layouts of the time (legacy-formats.md §6.4).  The
    # fork rwkv.cpp built against (2023-04-17 -> 05-08) is not public; these are the
    # upstream layouts of the same dates, hence their own names.
    ("Q4_0_RWKV100", "Q4_0", 32, 20, "0: f32 d; 4: u8 qs[16] (interleaved)", "historical",
     "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    ("Q4_1_RWKV100", "Q4_1", 32, 24, "0: f32 d; 4: f32 m; 8: u8 qs[16] (interleaved)", "historical",
     "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    ("Q4_2_RWKV100", "Q4_2", 16, 10, "0: f16 d; 2: u8 qs[8] (interleaved)", "historical",
     "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    ("Q4_3_RWKV100", "Q4_3", 16, 12, "0: f16 d; 2: f16 m; 4: u8 qs[8] (interleaved)", "historical",
     "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    ("Q5_0_RWKV100", "Q5_0", 32, 22, "0: f16 d; 2: u8 qh[4]; 6: u8 qs[16] (interleaved)", "historical",
     "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    ("Q5_1_RWKV100", "Q5_1", 32, 24, "0: f16 d; 2: f16 m; 4: u8 qh[4]; 8: u8 qs[16] (interleaved)",
     "historical", "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    ("Q8_0_RWKV100", "Q8_0", 32, 36, "0: f32 d; 4: i8 qs[32]", "historical",
     "rwkv.cpp version 100", "legacy-formats.md §6.4"),
    # Repacked AArch64 layouts of removed ids: rows are interleaved in groups of 4 or 8,
    # so a block cannot be decoded alone; ggscope measures them but does not decode them.
    ("Q4_0_4_4", "Q4_0_4_4", 32, 18, "Q4_0 blocks of 4 rows interleaved in 4-byte units", None,
     "GGUF 2024-07-10 -> 2024-12-07", "ggml-types.md §4.1 [G24]"),
    ("Q4_0_4_8", "Q4_0_4_8", 32, 18, "Q4_0 blocks of 4 rows interleaved in 8-byte units", None,
     "GGUF 2024-07-10 -> 2024-12-07", "ggml-types.md §4.1 [G24]"),
    ("Q4_0_8_8", "Q4_0_8_8", 32, 18, "Q4_0 blocks of 8 rows interleaved in 8-byte units", None,
     "GGUF 2024-07-10 -> 2024-12-07", "ggml-types.md §4.1 [G24]"),
    ("IQ4_NL_4_4", "IQ4_NL_4_4", 32, 18, "IQ4_NL blocks of 4 rows interleaved", None,
     "GGUF 2024-11-28 -> 2024-12-07", "ggml-types.md §4.1 [G26]"),
    ("IQ4_NL_4_8", "IQ4_NL_4_8", 32, 18, "IQ4_NL blocks of 4 rows interleaved", None,
     "GGUF 2024-11-28 -> 2024-12-07", "ggml-types.md §4.1 [G26]"),
    ("IQ4_NL_8_8", "IQ4_NL_8_8", 32, 18, "IQ4_NL blocks of 8 rows interleaved", None,
     "GGUF 2024-11-28 -> 2024-12-07", "ggml-types.md §4.1 [G26]"),
)


# BIT1 sign bits (the BIT1 exporter's ``pack_bits_rows``): element j of a row is bit j % 64 of u64 word j // 64,
# little-endian, bit 1 = +1 and bit 0 = -1; each row starts on a new word.
BIT1_LAYOUT = Layout("BIT1_PACKED", "BIT1_PACKED", 64, 8,
                     "0: u64 sign bits, LSB first (1 = +1, 0 = -1); rows padded to whole words",
                     "bit1", "BIT1 exporter v18", "legacy-formats.md §8", row_padded=True)


# rwkv.cpp version 100 layout -> the upstream layout of the same bytes (legacy-formats.md
# §6.4): one table for the dequantizers (quant.historical) and the fused kernels
# (stats.fused_specs).
RWKV100_SAME: dict[str, str] = {
    "Q4_0_RWKV100": "Q4_0_QNT0", "Q4_1_RWKV100": "Q4_1_QNT0", "Q4_2_RWKV100": "Q4_2",
    "Q4_3_RWKV100": "Q4_3", "Q5_0_RWKV100": "Q5_0_QNT0", "Q5_1_RWKV100": "Q5_1_QNT0",
    "Q8_0_RWKV100": "Q8_0_QNT0",
}

# layout -> (byte offset, float type) of its block scale ``d``, as the field drawings
# above show it (tests/test_ggml_types.py holds the two together); read by the stats'
# scale pass and the deep block-scale rule.  Layouts without one (floats, NVFP4's byte
# scales, MXFP4's exponent, BIT1) are absent.
SCALES: dict[str, tuple[int, str]] = {
    "Q4_0": (0, "f16"), "Q4_1": (0, "f16"), "Q5_0": (0, "f16"), "Q5_1": (0, "f16"), "Q8_0": (0, "f16"),
    "Q8_1": (0, "f16"), "Q2_K": (80, "f16"), "Q3_K": (108, "f16"), "Q4_K": (0, "f16"), "Q5_K": (0, "f16"),
    "Q6_K": (208, "f16"), "Q8_K": (0, "f32"), "IQ2_XXS": (0, "f16"), "IQ2_XS": (0, "f16"),
    "IQ3_XXS": (0, "f16"), "IQ1_S": (0, "f16"), "IQ4_NL": (0, "f16"), "IQ3_S": (0, "f16"),
    "IQ2_S": (0, "f16"), "IQ4_XS": (0, "f16"), "TQ1_0": (52, "f16"), "TQ2_0": (64, "f16"),
    "Q1_0": (0, "f16"), "Q2_0": (0, "f16"), "Q4_0_QNT0": (0, "f32"), "Q4_0_QNT1": (0, "f32"),
    "Q4_1_QNT0": (0, "f32"), "Q4_1_QNT1": (0, "f32"), "Q4_2": (0, "f16"), "Q4_3": (0, "f16"),
    "Q5_0_QNT0": (0, "f16"), "Q5_1_QNT0": (0, "f16"), "Q8_0_QNT0": (0, "f32"), "Q4_1_O": (0, "f16"),
}
SCALES.update({old: SCALES[same] for old, same in RWKV100_SAME.items()})
