"""The fused decode + statistics passes against the numpy codecs, in both engines:
numba's (ggscope.stats.fused) and the C extension built at install (ggscope.stats.cstats).

The fused kernels never return decoded values, so each block is checked through what
they compute from it: min and max exactly, every value's bin on a 256-bin histogram
of that one block exactly (the same float32 formula numpy evaluates here), the zero
count exactly, and the centred sums and |x| against float64 sums of
``ggscope.quant.dequantize``.  A decoding slip in any element changes one of those.
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf.constants import GGML_QUANT_SIZES

import ggscope
from ggscope.stats import cstats
from ggscope.stats import fused
from ggscope.facts.ggml_types import LAYOUTS
from ggscope.quant import dequantize
from ggscope.stats.tensors import tensor_stats
from tests.gguf_writers import TensorSpec, quantized_tensor, write_gguf_py

# the float scalar fields of every layout, from the one block-layout table
_FIELD = re.compile(r"(\d+): (f16|f32) (\w+)(?!\[)")
SCALES = {name: [(int(at), kind) for at, kind, _ in _FIELD.findall(LAYOUTS[name].fields)] for name in fused.FUSED_LAYOUTS}


def _engines():
    """Both engines; the C one is built by every install with a C compiler (setup.py),
    so its absence fails where a compiler is present instead of skipping silently."""
    yield pytest.param(fused, id="numba")
    yield pytest.param(cstats, id="c", marks=pytest.mark.skipif(
        cstats._cstats is None and shutil.which("cc") is None, reason="no C compiler: ggscope._cstats not built"))


ENGINES = list(_engines())


def test_the_extension_is_built_where_a_compiler_is():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on PATH")
    how = "not built into this tree: pip install -e . (or python setup.py build_ext --inplace), see setup.py"
    assert cstats._cstats is not None, f"ggscope.stats._cstats {how}"
    import ggscope.report.jsonable as J
    assert J._cjson is not None, f"ggscope.report._cjson {how}"
    assert cstats.FUSED_LAYOUTS == fused.FUSED_LAYOUTS


def _put(blocks: np.ndarray, at: int, kind: str, values: np.ndarray, big: bool) -> None:
    raw = values.astype(("<" if not big else ">") + ("f2" if kind == "f16" else "f4"))
    blocks[:, at:at + raw.itemsize] = raw.view(np.uint8).reshape(len(values), raw.itemsize)


def finite_blocks(layout: str, n: int, rng: np.random.Generator, big: bool) -> np.ndarray:
    """Random blocks whose every code byte is random and whose scales are finite: both
    signs, zero, subnormal and large magnitudes."""
    lay = LAYOUTS[layout]
    blocks = rng.integers(0, 256, size=(n, lay.block_bytes), dtype=np.uint8)
    for at, kind in SCALES[layout]:
        mag = rng.choice([0.0, 6e-8, 1e-5, 3e-3, 0.02, 1.0, 300.0, 60000.0], size=n)
        _put(blocks, at, kind, mag * rng.uniform(0.5, 1.0, n) * rng.choice([-1.0, 1.0], n), big)
    if layout == "Q4_1_O":                              # an outlier inside the block half the time
        idx = rng.integers(0, 64, n).astype("<u2" if not big else ">u2")
        blocks[:, 4:6] = idx.view(np.uint8).reshape(n, 2)
    if layout == "IQ1_M":                               # d: the top nibbles of four u16 words
        d = (rng.choice([0.0, 6e-8, 0.02, 1.0, 300.0], n) * rng.choice([-1.0, 1.0], n)).astype("<f2").view("<u2")
        for w in range(4):
            blocks[:, 49 + 2 * w] = (blocks[:, 49 + 2 * w] & 0x0F) | (((d >> (4 * w)) & 0xF) << 4).astype(np.uint8)
    if layout == "MXFP4":                               # squares of 12 * 2^(e-128) stay finite
        blocks[:, 0] = rng.integers(0, 180, n)
    return blocks


def reference(layout: str, blocks: np.ndarray, big: bool) -> np.ndarray:
    lay = LAYOUTS[layout]
    return dequantize(layout, blocks.reshape(-1), blocks.shape[0] * lay.block_elems,
                      "big" if big else "little").reshape(blocks.shape[0], lay.block_elems)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", sorted(fused.FUSED_LAYOUTS))
def test_every_block_agrees_with_the_numpy_codec(layout, big, engine):
    rng = np.random.default_rng(sum(map(ord, layout)) + big)
    blocks = finite_blocks(layout, 300, rng, big)
    values = reference(layout, blocks, big)
    idx = np.empty(2048, np.uint8)
    # all blocks at once: pass one may skip blocks whose scales bound them inside the
    # running range (the C engine), and must still find the exact extremes
    for part in (blocks, blocks[::-1].copy(), np.concatenate([blocks[:50], blocks[:50] * 0 + blocks[7:8]])):
        whole = reference(layout, part, big)
        got = engine.range_pass(layout, part, big)
        assert got is not None and (got[0], got[1]) == (whole.min(), whole.max())
    for b in range(blocks.shape[0]):
        x = values[b]
        one = blocks[b:b + 1]
        lo, hi, total = engine.range_pass(layout, one, big)
        assert (lo, hi) == (x.min(), x.max()), b
        if not np.isnan(total):                     # scale_range's layouts have no sum
            assert abs(total - x.astype(np.float64).sum()) <= 3e-5 * np.abs(x.astype(np.float64)).sum(), b
        if lo == hi:
            continue
        bins = 256
        scale = np.float32(bins / (np.float64(hi) - np.float64(lo)))
        shift = np.float32(x.astype(np.float64).mean())
        table = np.zeros(1 << 16, np.int64)
        s1, s2, sa, z = engine.bin_pass(layout, one, big, np.float32(lo), scale, np.int32(bins - 1), shift, table, idx)
        want = np.clip(((x - np.float32(lo)) * scale).astype(np.int32), 0, bins - 1)
        square = table.reshape(256, 256)
        got = square.sum(axis=0) + square.sum(axis=1)
        assert np.array_equal(got, np.bincount(want, minlength=256)), b
        # float32 partial sums of 256 values: a few units in 1e-5 (of the values' own
        # magnitudes: the sum of x - shift is the sum of x less n * shift); a mis-decoded
        # element moves them by about its own share, 1/256
        d = x.astype(np.float64) - np.float64(shift)
        assert abs(s1 - d.sum()) <= 3e-5 * np.abs(x.astype(np.float64)).sum(), b
        assert s2 == pytest.approx((d * d).sum(), rel=3e-5), b
        assert sa == pytest.approx(np.abs(x.astype(np.float64)).sum(), rel=3e-5), b
        assert z == (x == 0).sum(), b


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("layout", sorted(fused.FUSED_LAYOUTS))
def test_a_non_finite_scale_is_refused(layout, engine):
    """A chunk is refused exactly when the numpy codec decodes a NaN or Inf from it --
    and a non-finite ``d`` always does."""
    blocks = finite_blocks(layout, 8, np.random.default_rng(3), False)
    blocks[:, -4:] |= 0x11                          # no all-zero codes to hide a NaN scale
    cases = [(at, kind, bad) for at, kind in SCALES[layout] for bad in (np.inf, -np.inf, np.nan)]
    if layout == "MXFP4":
        cases.append((0, "e8m0", 255))
    if layout == "IQ1_M":
        cases += [(0, "iq1_m", 0x7C00), (0, "iq1_m", 0x7E00)]
    refused = 0
    for at, kind, bad in cases:
        damaged = blocks.copy()
        if kind == "e8m0":
            damaged[5, 0] = bad
            damaged[5, 1:] = 0x77
        elif kind == "iq1_m":
            for w in range(4):
                damaged[5, 49 + 2 * w] = (damaged[5, 49 + 2 * w] & 0x0F) | (((bad >> (4 * w)) & 0xF) << 4)
        else:
            _put(damaged[5:6], at, kind, np.array([bad]), False)
        with np.errstate(all="ignore"):
            finite = np.isfinite(reference(layout, damaged, False)).all()
        got = engine.range_pass(layout, damaged, False)
        assert (got is not None) == finite, (at, bad)
        if engine is cstats and SCALES[layout] and SCALES[layout][0][1] == "f16":
            table = np.zeros(1 << 16, np.int64)       # scale codes are counted only for a range returned
            again = engine.range_pass(layout, damaged, False, table, SCALES[layout][0][0])
            assert (again is not None) == finite
            assert table.sum() == (damaged.shape[0] if finite else 0), (at, bad)
        refused += got is None
    assert refused >= 1 or not cases, "a non-finite d must be refused"   # NVFP4: UE4M3 has no NaN/Inf
    assert engine.range_pass(layout, np.delete(blocks, 5, axis=0), False) is not None


def _numpy_route(monkeypatch):
    monkeypatch.setattr(fused, "FUSED_LAYOUTS", frozenset())
    monkeypatch.setattr(cstats, "FUSED_LAYOUTS", frozenset())


@pytest.mark.parametrize("kernels", ["numba", "c"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_stats_equal_the_numpy_route(tmp_path, monkeypatch, endian, kernels):
    """tensor_stats on the fused route and, forced, on the numpy codecs: the same."""
    if kernels == "c" and cstats._cstats is None:
        pytest.skip("ggscope.stats._cstats not built")
    monkeypatch.setenv("GGSCOPE_KERNELS", kernels)
    rng = np.random.default_rng(11)
    specs = []
    for layout in sorted(fused.FUSED_LAYOUTS & set(Q.__members__)):       # the layouts gguf-py writes
        if GGML_QUANT_SIZES[Q[layout]] != (LAYOUTS[layout].block_elems, LAYOUTS[layout].block_bytes):
            continue                                                # gguf-py 0.19's Q8_1 is 40 bytes
        lay = LAYOUTS[layout]
        blocks = finite_blocks(layout, 96, rng, endian == "big")
        specs.append(TensorSpec(f"r.{layout}", Q[layout], blocks.reshape(6, -1)))
        if layout in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"):   # gguf-py quantizes these
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


@pytest.mark.parametrize("kernels", ["numba", "c"])
def test_a_skewed_tensor_is_centred_again(tmp_path, monkeypatch, kernels):
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
    if kernels == "c" and cstats._cstats is None:
        pytest.skip("ggscope.stats._cstats not built")
    monkeypatch.setenv("GGSCOPE_KERNELS", kernels)
    path = write_gguf_py(tmp_path / "skew.gguf", tensors=[TensorSpec("w", Q.Q8_0, blocks.reshape(64, -1))])
    x = reference("Q8_0", blocks, False).reshape(-1).astype(np.float64)
    with ggscope.open(str(path)) as mf:
        s = mf.tensor("w").stats()
    assert (s["min"], s["max"]) == (x.min(), x.max())
    assert s["mean"] == pytest.approx(x.mean(), rel=1e-9)
    assert s["std"] == pytest.approx(x.std(), rel=1e-6)


def test_every_decodable_block_layout_is_fused():
    """Each layout with a codec and more than one element per block has a fused path
    (one-element layouts are the codes route or read in place; BIT1's row-padded sign
    bits are counted, not decoded: tests/formats/test_bit1.py)."""
    want = {name for name, lay in LAYOUTS.items()
            if lay.codec is not None and lay.block_elems > 1 and not lay.row_padded}
    assert fused.FUSED_LAYOUTS == want


@pytest.mark.parametrize("kernels", ["numba", "c"])
def test_handcrafted_fixtures_agree_with_numpy(shared_fixtures, monkeypatch, kernels):
    """Every tensor of ggml's handcrafted valid files (random bytes: NaN, huge and tiny
    scales) through the compiled route: count, extremes and the histogram equal numpy's
    on the dequantized values.  Tiny values made the re-centred pass two drop its
    histogram (all bins 0) before the second run was kept."""
    import glob
    import ggscope.stats.tensors as S
    if kernels == "c" and cstats._cstats is None:
        pytest.skip("ggscope.stats._cstats not built")
    files = sorted(glob.glob(str(shared_fixtures / "ggml" / "handcrafted" / "DATA_SUCCESS*.gguf")))
    if not files:
        pytest.skip("no ggml/handcrafted/DATA_SUCCESS*.gguf in ../shared/fixtures")
    monkeypatch.setenv("GGSCOPE_KERNELS", kernels)
    monkeypatch.setattr(S, "_numpy_spent", 1 << 40)                  # compiled kernels even for small tensors
    checked = 0
    for path in files:
        with ggscope.open(path) as mf:
            for t in mf.tensors:
                if t.layout not in fused.FUSED_LAYOUTS:
                    continue
                with np.errstate(all="ignore"):
                    x = t.dequantize().astype(np.float64).reshape(-1)
                x = x[np.isfinite(x)]
                s = tensor_stats(t, chunk_elems=4096, threads=2)
                assert s["finite"] == x.size, (path, t.name)
                if not x.size:
                    continue
                assert (s["min"], s["max"]) == (x.min(), x.max()), (path, t.name)
                edges = np.asarray(s["histogram"]["edges"])
                if np.all(np.isfinite(np.diff(edges))):
                    assert sum(s["histogram"]["counts"]) == x.size, (path, t.name)
                checked += 1
    assert checked > 50


C_ONLY = pytest.mark.skipif(cstats._cstats is None, reason="ggscope._cstats not built (no C compiler at install)")


def _bits(x: np.ndarray) -> np.ndarray:
    """The float32 bits, every NaN as one (a NaN's sign and payload carry nothing a
    diff or a statistic reads; which NaN an operation on a NaN scale gives is the
    compiler's business)."""
    b = np.ascontiguousarray(x, np.float32).view(np.uint32).copy()
    b[np.isnan(x)] = 0x7FC00000
    return b


@C_ONLY
@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", sorted(cstats.FUSED_LAYOUTS))
def test_decode_is_the_numpy_codec_bit_for_bit(layout, big):
    """``cstats.decode`` (diff's values, issue 27.4) gives every element the numpy codec
    gives, Inf included, NaN where it gives NaN: random code bytes, finite scales of every magnitude, then
    blocks of wholly random bytes (non-finite scales too); one block and an odd count, so
    the last block's padded path runs."""
    rng = np.random.default_rng(11)
    lay = LAYOUTS[layout]
    for blocks in (finite_blocks(layout, 97, rng, big), rng.integers(0, 256, (97, lay.block_bytes), np.uint8),
                   finite_blocks(layout, 1, rng, big)):
        with np.errstate(all="ignore"):
            want = reference(layout, blocks, big).reshape(-1)
        out = np.full(blocks.shape[0] * lay.block_elems + 8, 7.0, np.float32)   # 8 guard values
        cstats.decode(layout, blocks, big, out[:-8])
        assert np.array_equal(_bits(out[:-8]), _bits(want)), layout
        assert (out[-8:] == 7.0).all(), "decode wrote past its output"


@C_ONLY
def test_decode_refuses_an_output_too_small():
    blocks = finite_blocks("Q8_0", 4, np.random.default_rng(1), False)
    with pytest.raises(ValueError):
        cstats.decode("Q8_0", blocks, False, np.empty(4 * 32 - 1, np.float32))
    with pytest.raises(ValueError):
        cstats.decode("Q8_0", blocks, False, np.empty(4 * 32, np.float64))


@pytest.mark.parametrize("kernels", ["numba", "c"])
@pytest.mark.parametrize("layout", ["Q8_0", "Q4_K", "IQ2_XXS", "F16"])
def test_diff_decode_is_dequantize(monkeypatch, kernels, layout):
    """``ggscope.diff.sums.decode``: the same float32 bits as ``dequantize`` on either
    engine (C for the fused layouts, the numpy codec otherwise) and the same error for
    data that is not whole blocks."""
    from ggscope.diff.sums import decode
    monkeypatch.setenv("GGSCOPE_KERNELS", kernels)
    lay = LAYOUTS[layout]
    rng = np.random.default_rng(5)
    raw = (finite_blocks(layout, 40, rng, False) if layout in SCALES
           else rng.integers(0, 256, (40, lay.block_bytes), np.uint8))
    n = 40 * lay.block_elems
    with np.errstate(all="ignore"):
        want = dequantize(layout, raw.reshape(-1), n)
        got = decode(lay, raw.reshape(-1), n)
    assert got.dtype == np.float32 and np.array_equal(_bits(got), _bits(want))
    with pytest.raises(ValueError) as theirs:
        dequantize(layout, raw.reshape(-1)[:-1], n)
    with pytest.raises(ValueError) as ours:
        decode(lay, raw.reshape(-1)[:-1], n)
    assert str(ours.value) == str(theirs.value)


VECTOR_LAYOUTS = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q8_0", "IQ4_NL", "IQ4_XS", "MXFP4"]


@C_ONLY
@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_the_vector_pass_two_is_the_portable_one(layout, big):
    """Pass two on AVX-512 (csrc/_cstats_z.h) against the portable drivers and numpy, at
    the default 64 bins (the vector drivers' case) over many pieces of random blocks with
    scales of both signs and every magnitude: the same histogram exactly (each value's
    bin by piece_pairs' float32 formula), the same zeros, sums within float32-per-piece
    rounding of float64 ones."""
    if not cstats._cstats.vector_bins():
        pytest.skip("this CPU has no AVX-512 BW/VL/DQ/VBMI/BITALG: the portable drivers run")
    rng = np.random.default_rng(sum(map(ord, layout)) + 7 * big)
    blocks = finite_blocks(layout, 40 * 256 // LAYOUTS[layout].block_elems + 3, rng, big)
    x = reference(layout, blocks, big).reshape(-1)
    lo, hi, bins = x.min(), x.max(), 64
    scale = np.float32(bins / (np.float64(hi) - np.float64(lo)))
    shift = np.float32(x.astype(np.float64).mean())
    want = np.bincount(np.clip(((x - np.float32(lo)) * scale).astype(np.int32), 0, bins - 1), minlength=256)
    d = x.astype(np.float64) - np.float64(shift)
    got = {}
    try:
        for on in (True, False):
            cstats._cstats.vector_bins(on)
            table = np.zeros(1 << 16, np.int64)
            s1, s2, sa, z = cstats.bin_pass(layout, blocks, big, np.float32(lo), scale, np.int32(bins - 1), shift,
                                            table, np.empty(2048, np.uint8))
            square = table.reshape(256, 256)
            got[on] = (square.sum(axis=0) + square.sum(axis=1), z)
            assert np.array_equal(got[on][0], want), on
            assert z == (x == 0).sum(), on
            assert abs(s1 - d.sum()) <= 3e-5 * np.abs(d).sum(), on
            assert s2 == pytest.approx((d * d).sum(), rel=3e-5), on
            assert sa == pytest.approx(np.abs(x.astype(np.float64)).sum(), rel=3e-5), on
    finally:
        cstats._cstats.vector_bins(True)
