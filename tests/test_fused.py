"""ggscope.fused (decoding fused with the statistics passes) against the numpy codecs.

The fused kernels never return decoded values, so each block is checked through what
they compute from it: min and max exactly, every value's bin on a 256-bin histogram
of that one block exactly (the same float32 formula numpy evaluates here), the zero
count exactly, and the centred sums and |x| against float64 sums of
``ggscope.quant.dequantize``.  A decoding slip in any element changes one of those.
"""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

import ggscope
from ggscope import fused
from ggscope.ggml_types import LAYOUTS
from ggscope.quant import dequantize
from ggscope.stats import tensor_stats
from tests.gguf_writers import TensorSpec, quantized_tensor, write_gguf_py

# byte offsets of the f16 fields (and IQ4_XS's u16 scales_h) that the file's byte order applies to
WORDS = {"Q4_0": (0,), "Q8_0": (0,), "Q4_K": (0, 2), "Q6_K": (208,), "IQ4_XS": (0, 2)}


def finite_blocks(layout: str, n: int, rng: np.random.Generator, big: bool) -> np.ndarray:
    """Random blocks whose every code byte is random and whose f16 scales are finite:
    both signs, zero, subnormal and large magnitudes."""
    lay = LAYOUTS[layout]
    blocks = rng.integers(0, 256, size=(n, lay.block_bytes), dtype=np.uint8)
    for at in WORDS[layout]:
        if layout == "IQ4_XS" and at == 2:
            continue                                   # scales_h: any 16 bits are valid
        mag = rng.choice([0.0, 6e-8, 1e-5, 3e-3, 0.02, 1.0, 300.0, 60000.0], size=n)
        d = (mag * rng.uniform(0.5, 1.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float16)
        blocks[:, at:at + 2] = d.view(np.uint8).reshape(n, 2)
    if big:
        for at in WORDS[layout]:
            blocks[:, [at, at + 1]] = blocks[:, [at + 1, at]]
    return blocks


def reference(layout: str, blocks: np.ndarray, big: bool) -> np.ndarray:
    lay = LAYOUTS[layout]
    return dequantize(layout, blocks.reshape(-1), blocks.shape[0] * lay.block_elems,
                      "big" if big else "little").reshape(blocks.shape[0], lay.block_elems)


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", sorted(fused.LAYOUTS))
def test_every_block_agrees_with_the_numpy_codec(layout, big):
    rng = np.random.default_rng(sum(map(ord, layout)) + big)
    blocks = finite_blocks(layout, 300, rng, big)
    values = reference(layout, blocks, big)
    idx = np.empty(2048, np.uint8)
    for b in range(blocks.shape[0]):
        x = values[b]
        one = blocks[b:b + 1]
        lo, hi = fused.range_pass(layout, one, big)
        assert (lo, hi) == (x.min(), x.max()), b
        if lo == hi:
            continue
        bins = 256
        scale = np.float32(bins / (np.float64(hi) - np.float64(lo)))
        shift = np.float32(x.astype(np.float64).mean())
        table = np.zeros(1 << 16, np.int64)
        s1, s2, sa, z = fused.bin_pass(layout, one, big, np.float32(lo), scale, np.int32(bins - 1), shift, table, idx)
        want = np.clip(((x - np.float32(lo)) * scale).astype(np.int32), 0, bins - 1)
        square = table.reshape(256, 256)
        got = square.sum(axis=0) + square.sum(axis=1)
        assert np.array_equal(got, np.bincount(want, minlength=256)), b
        # float32 partial sums of 256 values: a few units in 1e-5; a mis-decoded element
        # moves them by about its own share, 1/256
        d = x.astype(np.float64) - np.float64(shift)
        assert abs(s1 - d.sum()) <= 3e-5 * np.abs(d).sum(), b
        assert s2 == pytest.approx((d * d).sum(), rel=3e-5), b
        assert sa == pytest.approx(np.abs(x.astype(np.float64)).sum(), rel=3e-5), b
        assert z == (x == 0).sum(), b


@pytest.mark.parametrize("layout", sorted(fused.LAYOUTS))
def test_a_non_finite_scale_is_refused(layout):
    blocks = finite_blocks(layout, 8, np.random.default_rng(3), False)
    for at in WORDS[layout][:1 if layout == "IQ4_XS" else 2]:
        for bad in (np.inf, -np.inf, np.nan):
            damaged = blocks.copy()
            damaged[5, at:at + 2] = np.array([bad], np.float16).view(np.uint8)
            assert fused.range_pass(layout, damaged, False) is None, (at, bad)
    assert fused.range_pass(layout, np.delete(blocks, 5, axis=0), False) is not None


def _numpy_route(monkeypatch):
    monkeypatch.setattr(fused, "LAYOUTS", frozenset())


@pytest.mark.parametrize("endian", ["little", "big"])
def test_stats_equal_the_numpy_route(tmp_path, monkeypatch, endian):
    """tensor_stats on the fused route and, forced, on the numpy codecs: the same."""
    rng = np.random.default_rng(11)
    specs = []
    for layout in sorted(fused.LAYOUTS):
        lay = LAYOUTS[layout]
        blocks = finite_blocks(layout, 96, rng, endian == "big")
        specs.append(TensorSpec(f"r.{layout}", Q[layout], blocks.reshape(6, -1)))
        if layout in ("Q4_0", "Q8_0"):                # gguf-py quantizes these: realistic blocks
            spec = quantized_tensor(f"q.{layout}", Q[layout], (256, 24), rng)
            if endian == "little":
                specs.append(spec)
        assert blocks.shape[0] * lay.block_elems % 6 == 0
    path = write_gguf_py(tmp_path / f"m_{endian}.gguf", tensors=specs, endian=endian)
    with ggscope.open(str(path)) as mf:
        fast = {t.name: tensor_stats(t, chunk_elems=1000, threads=2) for t in mf.tensors}
        _numpy_route(monkeypatch)
        slow = {t.name: tensor_stats(t, chunk_elems=1000, threads=2) for t in mf.tensors}
    for name, s in fast.items():
        r = slow[name]
        for k in ("count", "finite", "nan", "inf", "zeros", "min", "max", "histogram", "block_scales"):
            assert s[k] == r[k], (name, k)
        assert abs(s["mean"] - r["mean"]) <= 1e-6 * r["std"], name
        for k in ("std", "abs_mean"):
            assert s[k] == pytest.approx(r[k], rel=1e-6), (name, k)


def test_a_skewed_tensor_is_centred_again(tmp_path):
    """The fused range pass has no sum: pass two centres on the middle of the range, and
    runs again around the mean when that middle is far from it.  Here values sit near
    1000 with one outlier at -1016: around the middle (~ -4), float32 sums would lose
    the standard deviation (~ 45) to cancellation."""
    rng = np.random.default_rng(5)
    n = 4096
    blocks = np.zeros((n, 34), np.uint8)
    blocks[:, 0:2] = np.array([8.0], np.float16).view(np.uint8)
    blocks[:, 2:] = rng.integers(124, 127, size=(n, 32), dtype=np.int8).view(np.uint8)
    blocks[7, 2] = np.array([-127], np.int8).view(np.uint8)[0]
    path = write_gguf_py(tmp_path / "skew.gguf", tensors=[TensorSpec("w", Q.Q8_0, blocks.reshape(64, -1))])
    x = reference("Q8_0", blocks, False).reshape(-1).astype(np.float64)
    with ggscope.open(str(path)) as mf:
        s = mf.tensor("w").stats()
    assert (s["min"], s["max"]) == (x.min(), x.max())
    assert s["mean"] == pytest.approx(x.mean(), rel=1e-9)
    assert s["std"] == pytest.approx(x.std(), rel=1e-6)
