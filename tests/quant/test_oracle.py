"""Bit-exactness against ggml itself: dequantize every tensor of quant-oracle.gguf and
compare with ggml's own float32 output in dequant-oracle.gguf (fixtures/ggml/MANIFEST.md §1).

Covers every layout ggscope's own codecs decode (the IQ family is tested in
test_iquants.py).  Also checks the big-endian path by byte-swapping the scalar fields of
oracle blocks at the offsets ggml-types.md §2 gives.
"""
from __future__ import annotations

import numpy as np
import pytest

from ggscope.facts.ggml_types import LAYOUTS
from ggscope.quant import dequantize, dequantize_tensor


def _own_tensors(quant_file):
    return [t for t in quant_file.tensors if LAYOUTS[t.layout].codec not in ("iquants", None)]


def test_oracle_covers_every_type_the_manifest_lists(ggml_oracle):
    names = {t.type for t in _own_tensors(ggml_oracle[0])}
    expected = {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K",
                "Q5_K", "Q6_K", "Q8_K", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0", "Q2_0",
                "I8", "I16", "I32", "I64", "F64"}
    assert expected <= names


def test_bit_exact_with_ggml(ggml_oracle):
    quant, deq = ggml_oracle
    bad = []
    for t in _own_tensors(quant):
        want = deq.tensor(t.name)
        assert want.type == "F32"
        got = dequantize_tensor(t)
        assert got.dtype == np.float32 and got.shape == t.np_shape == want.np_shape
        exp = want.raw().view(np.uint32).reshape(want.np_shape)
        if not np.array_equal(got.view(np.uint32), exp):
            bad.append((t.name, t.type, int((got.view(np.uint32) != exp).sum())))
    assert not bad, f"tensors differing from ggml (name, type, n differing elements): {bad}"


# Offsets and widths of multi-byte scalar fields per block (ggml-types.md §2).
_SCALARS = {
    "F16": [(0, 2)], "BF16": [(0, 2)], "F32": [(0, 4)], "F64": [(0, 8)], "I16": [(0, 2)],
    "I32": [(0, 4)], "I64": [(0, 8)], "Q4_0": [(0, 2)], "Q4_1": [(0, 2), (2, 2)],
    "Q5_0": [(0, 2)], "Q5_1": [(0, 2), (2, 2)], "Q8_0": [(0, 2)], "Q2_K": [(80, 2), (82, 2)],
    "Q3_K": [(108, 2)], "Q4_K": [(0, 2), (2, 2)], "Q5_K": [(0, 2), (2, 2)], "Q6_K": [(208, 2)],
    "Q8_K": [(0, 4)], "TQ1_0": [(52, 2)], "TQ2_0": [(64, 2)], "Q1_0": [(0, 2)], "Q2_0": [(0, 2)],
}


@pytest.mark.parametrize("type_name", sorted(_SCALARS))
def test_big_endian_scalar_fields(ggml_oracle, type_name):
    quant, deq = ggml_oracle
    t = next(t for t in quant.tensors if t.type == type_name)
    lay = LAYOUTS[t.layout]
    blocks = t.raw().reshape(-1, lay.block_bytes).copy()
    for off, width in _SCALARS[type_name]:
        blocks[:, off:off + width] = blocks[:, off:off + width][:, ::-1]
    got = dequantize(t.layout, blocks, t.n_elements, byteorder="big")
    assert np.array_equal(got.view(np.uint32), deq.tensor(t.name).raw().view(np.uint32))
