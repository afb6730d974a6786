"""The block-layout families both statistics engines decode: one table.

Why: the fused decode + statistics kernels exist twice -- compiled ahead of time in C
(``ggscope/_cstats.c``, used when the install built it) and by numba
(``ggscope.stats.fused``, the fallback) -- and both must agree on every layout's decoder
family, its constant arguments and its lookup tables.  This module is that one table,
free of numba so the C route imports nothing heavy.

``SPECS``: layout name -> (decoder family, constant arguments, table kind).  The family
is named for the numba decoder in ``ggscope.stats.fused``; ``_cstats.families()`` maps the
same names to its C decoders.  ``tables(kind) -> (g1, g2)``: the float32 tables a
family reads (2-D, C-contiguous), from ``ggscope.quant``.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ggscope.facts.layouts import RWKV100_SAME

__all__ = ["SPECS", "tables"]

# ---------------------------------------------------------------- the layout table
# layout -> (decoder, constant arguments after ``out``, tables).  Tables: "" none,
# "iq4" kvalues, "mx"/"nv" E2M1 values and the scale byte table, else grids of
# ggscope.quant.iquants.  Historical rows mirror facts.layouts.HISTORICAL_ROWS.

NIB = "_dec_nibbles"
SPECS: dict[str, tuple[str, tuple, str]] = {
    # nibbles: d_at, wide(f32), m_at, qh_at, qs_at, half, interleaved, bias, outlier_at
    "Q4_0": (NIB, (0, 0, -1, -1, 2, 16, 0, 8, -1), ""),
    "Q4_1": (NIB, (0, 0, 2, -1, 4, 16, 0, 0, -1), ""),
    "Q5_0": (NIB, (0, 0, -1, 2, 6, 16, 0, 16, -1), ""),
    "Q5_1": (NIB, (0, 0, 2, 4, 8, 16, 0, 0, -1), ""),
    "Q4_0_QNT0": (NIB, (0, 1, -1, -1, 4, 16, 1, 8, -1), ""),
    "Q4_0_QNT1": (NIB, (0, 1, -1, -1, 4, 16, 0, 8, -1), ""),
    "Q4_1_QNT0": (NIB, (0, 1, 4, -1, 8, 16, 1, 0, -1), ""),
    "Q4_1_QNT1": (NIB, (0, 1, 4, -1, 8, 16, 0, 0, -1), ""),
    "Q4_2": (NIB, (0, 0, -1, -1, 2, 8, 1, 8, -1), ""),
    "Q4_3": (NIB, (0, 0, 2, -1, 4, 8, 1, 0, -1), ""),
    "Q5_0_QNT0": (NIB, (0, 0, -1, 2, 6, 16, 1, 16, -1), ""),
    "Q5_1_QNT0": (NIB, (0, 0, 2, 4, 8, 16, 1, 0, -1), ""),
    "Q4_1_O": (NIB, (0, 0, 2, -1, 8, 16, 1, 0, 4), ""),
    # int8: d_at, wide, qs_at, n
    "Q8_0": ("_dec_int8", (0, 0, 2, 32), ""),
    "Q8_1": ("_dec_int8", (0, 0, 4, 32), ""),
    "Q8_0_QNT0": ("_dec_int8", (0, 1, 4, 32), ""),
    "Q8_K": ("_dec_int8", (0, 1, 4, 256), ""),
    # 1- and 2-bit codes: d_at, qs_at, n, bits, row
    "Q1_0": ("_dec_crumbs", (0, 2, 128, 1, 0), ""),
    "Q2_0": ("_dec_crumbs", (0, 2, 64, 2, 0), ""),
    "TQ2_0": ("_dec_crumbs", (64, 0, 256, 2, 1), ""),
    "TQ1_0": ("_dec_tq1_0", (), ""),
    "Q2_K": ("_dec_q2_k", (), ""),
    "Q3_K": ("_dec_q3_k", (), ""),
    "Q4_K": ("_dec_q45_k", (16, 0), ""),
    "Q5_K": ("_dec_q45_k", (48, 1), ""),
    "Q6_K": ("_dec_q6_k", (), ""),
    # 16-value tables: mode, groups, span
    "IQ4_NL": ("_dec_table4", (0, 1, 32), "iq4"),
    "IQ4_XS": ("_dec_table4", (1, 8, 32), "iq4"),
    "MXFP4": ("_dec_table4", (2, 1, 32), "mx"),
    "NVFP4": ("_dec_table4", (3, 4, 16), "nv"),
    "IQ2_XXS": ("_dec_iq2", (0,), "iq2xxs_grid"),
    "IQ2_XS": ("_dec_iq2", (1,), "iq2xs_grid"),
    "IQ2_S": ("_dec_iq2", (2,), "iq2s_grid"),
    "IQ3_XXS": ("_dec_iq3", (0,), "iq3xxs_grid"),
    "IQ3_S": ("_dec_iq3", (1,), "iq3s_grid"),
    "IQ1_S": ("_dec_iq1", (0,), "iq1"),
    "IQ1_M": ("_dec_iq1", (1,), "iq1"),
}
# rwkv.cpp version 100 wrote the upstream layouts of its day (facts.layouts.RWKV100_SAME)
SPECS.update({old: SPECS[same] for old, same in RWKV100_SAME.items()})


_NONE = np.zeros((1, 1), np.float32)


@lru_cache(maxsize=None)
def tables(kind: str) -> tuple[np.ndarray, np.ndarray]:
    from ggscope.quant import fp4  # lazy: 4 more modules only when used
    from ggscope.quant import iquants  # lazy: 3 more modules only when used
    if kind == "":
        return _NONE, _NONE
    if kind == "iq4":
        return iquants._kvalues_f32()[None, :], _NONE
    if kind in ("mx", "nv"):
        return fp4.KVALUES[None, :], (fp4.E8M0_HALF if kind == "mx" else fp4.UE4M3_HALF)[None, :]
    if kind == "iq1":
        return iquants._iq1_grid_delta(), _NONE
    if kind in ("iq2xxs_grid", "iq2xs_grid"):
        return iquants._signed_grid(kind), _NONE
    if kind == "iq3xxs_grid":
        return iquants._grid_f32(kind), iquants._sign_f32_code()
    return iquants._grid_f32(kind), iquants._sign_f32_byte()


