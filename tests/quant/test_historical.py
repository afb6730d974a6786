"""Historical layouts on real files: the gpt2-tiny files of fixtures/ggml-legacy, quantized
by ggml's own gpt-2-quantize in three eras from the same f32 weights (see its MANIFEST).

* 2023-04 (QNT0, interleaved nibbles) and 2023-05-18 (QNT1, split halves) Q4_0, Q4_1,
  Q5_0 and Q5_1 hold the same quantized values in a different nibble order: they must
  dequantize to identical floats; the Q8_0 files are byte-identical apart from ftype.
* Every quantized tensor of every era (incl. Q4_2, Q4_3) is close to the f32 original.
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.facts.ggml_types import resolve_type
from ggscope.quant import dequantize

ERAS = {"2023-04": 0, "2023-05-18-qnt1": 1, "2023-05-26-qnt2": 2}
TYPES_BY_ERA = {"2023-04": ["q4_0", "q4_1", "q4_2", "q4_3", "q5_0", "q5_1", "q8_0"],
                "2023-05-18-qnt1": ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"],
                "2023-05-26-qnt2": ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"]}


@pytest.fixture(scope="module")
def legacy_dir(shared_fixtures):
    d = shared_fixtures / "ggml-legacy"
    if not (d / "gpt2-tiny-f32.bin").is_file():
        pytest.skip(f"ggml-legacy fixtures not found in {d}")
    return d


def _tensors(path, era):
    """name -> float32 values of every quantized tensor, decoded with the layout
    resolve_type gives for the era (and checked against the reader's choice)."""
    f = ggscope.open(path)
    assert f.damage is None, f.damage
    out = {}
    for t in f.tensors:
        _, lay = resolve_type("ggml-example", ERAS[era], t.type_id)
        if t.type in ("F32", "F16"):
            continue
        assert t.layout == lay, (t.name, t.layout, lay)
        out[t.name] = dequantize(lay, t.raw(), t.n_elements, name=t.name)
    return out


@pytest.fixture(scope="module")
def original(legacy_dir):
    f = ggscope.open(legacy_dir / "gpt2-tiny-f32.bin")
    return {t.name: t.raw().view(np.float32) for t in f.tensors}


@pytest.mark.parametrize("kind", ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"])
def test_qnt0_and_qnt1_decode_to_the_same_values(legacy_dir, kind):
    a = _tensors(legacy_dir / f"gpt2-tiny-2023-04-{kind}.bin", "2023-04")
    b = _tensors(legacy_dir / f"gpt2-tiny-2023-05-18-qnt1-{kind}.bin", "2023-05-18-qnt1")
    assert a.keys() == b.keys() and len(a) == 10
    for name in a:
        assert np.array_equal(a[name].view(np.uint32), b[name].view(np.uint32)), name


@pytest.mark.parametrize("era,kind", [(e, k) for e, ks in TYPES_BY_ERA.items() for k in ks])
def test_close_to_the_f32_original(legacy_dir, original, era, kind):
    got = _tensors(legacy_dir / f"gpt2-tiny-{era}-{kind}.bin", era)
    assert len(got) == 10
    for name, x in got.items():
        ref = original[name]
        assert x.shape == ref.shape and np.isfinite(x).all()
        err = np.abs(x - ref)
        # Q4_0/Q5_0 use d = max/-8 (/-16): the far end of a block clips one step short,
        # so |error| <= amax/8 (4-bit), amax/16 (5-bit); 8-bit: half a step of amax/127
        bound = 0.126 if kind.startswith("q4") else 0.063 if kind.startswith("q5") else 0.005
        assert err.max() <= bound * np.abs(ref).max(), (name, float(err.max()), float(np.abs(ref).max()))
        assert np.corrcoef(x, ref)[0, 1] > 0.99, name
