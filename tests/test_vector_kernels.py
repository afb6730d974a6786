"""Pass two on AVX-512 (csrc/_cstats_z.h) at the places a vector driver can slip: the
first and last pieces of a call (a piece's pairs are counted behind the groups that
write them, so the tail of every piece is counted apart), a single block, values
exactly on bin edges, a constant tensor (every pair on one counter), one whose counters
pass 16 bits (flushed before they wrap), scales large enough that a piece's float32
sums overflow, and big-endian scales.

Each case runs the same blocks through the vector drivers and through the portable
ones (``vector_bins(False)``) and holds both to numpy: every value's bin by the float32
formula of ``piece_pairs`` (the histogram exactly), the zero count exactly, the sums
against float64 sums of ``ggscope.quant.dequantize``'s values.
"""
from __future__ import annotations

import numpy as np
import pytest

from ggscope.facts.ggml_types import LAYOUTS
from ggscope.stats import cstats
from tests.test_fused import finite_blocks, reference

pytestmark = pytest.mark.skipif(cstats._cstats is None or not cstats._cstats.vector_bins(),
                                reason="no AVX-512 BW/VL/DQ/VBMI/BITALG and FMA here (or no C build): "
                                       "the portable drivers run")

VECTOR_LAYOUTS = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q8_0", "IQ4_NL", "IQ4_XS", "MXFP4"]
PIECE = cstats.PIECE


def _both(layout: str, blocks: np.ndarray, big: bool, lo: np.float32, scale: np.float32, top: int,
          shift: np.float32) -> dict[bool, tuple[np.ndarray, int, float, float, float]]:
    """(histogram, zeros, s1, s2, sa) from the vector drivers (True) and the portable ones."""
    out = {}
    try:
        for on in (True, False):
            cstats._cstats.vector_bins(on)
            table = np.zeros(1 << 16, np.int64)
            s1, s2, sa, z = cstats.bin_pass(layout, blocks, big, lo, scale, np.int32(top), shift, table,
                                            np.empty(PIECE, np.uint8))
            square = table.reshape(256, 256)
            out[on] = (square.sum(axis=0) + square.sum(axis=1), z, s1, s2, sa)
    finally:
        cstats._cstats.vector_bins(True)
    return out


def _check(layout: str, blocks: np.ndarray, big: bool, lo=None, scale=None, bins: int = 64, shift=None) -> None:
    x = reference(layout, blocks, big).reshape(-1)
    assert np.isfinite(x).all()
    lo = np.float32(x.min()) if lo is None else np.float32(lo)
    if scale is None:
        span = np.float64(x.max()) - np.float64(lo)
        scale = np.float32(bins / span) if span > 0 else np.float32(1.0)
    shift = np.float32(x.astype(np.float64).mean()) if shift is None else np.float32(shift)
    want = np.bincount(np.clip(((x - lo) * scale).astype(np.int32), 0, bins - 1), minlength=256)
    d = x.astype(np.float64) - np.float64(shift)
    for on, (hist, z, s1, s2, sa) in _both(layout, blocks, big, lo, scale, bins - 1, shift).items():
        assert np.array_equal(hist, want), ("vector" if on else "portable", np.nonzero(hist != want))
        assert z == int((x == 0).sum()), on
        assert np.isfinite([s1, s2, sa]).all(), on
        # float32 sums of the values themselves, less n * shift in float64 (add_piece)
        assert abs(s1 - d.sum()) <= 3e-5 * np.abs(x.astype(np.float64)).sum() + 1e-30, on
        assert s2 == pytest.approx((d * d).sum(), rel=3e-5, abs=1e-30), on
        assert sa == pytest.approx(np.abs(x.astype(np.float64)).sum(), rel=3e-5, abs=1e-30), on


def _blocks_per_piece(layout: str) -> int:
    return max(1, PIECE // LAYOUTS[layout].block_elems)


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_piece_heads_and_tails(layout, big):
    """1 block, fewer blocks than the counting lag, one piece exactly, one piece and a
    block, and several pieces with an odd tail: every pair counted once."""
    per = _blocks_per_piece(layout)
    rng = np.random.default_rng(sum(map(ord, layout)) + 11 * big)
    for n in sorted({1, 2, 3, per - 1, per, per + 1, 3 * per + 5} - {0}):
        _check(layout, finite_blocks(layout, n, rng, big), big)


@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_a_constant_tensor(layout):
    """Every value the same (a block repeated): all pairs on one counter, which must
    neither lose nor double a count; bins of one value (min == max) as ggscope widens them."""
    rng = np.random.default_rng(5)
    one = finite_blocks(layout, 1, rng, False)
    blocks = np.repeat(one, 4 * _blocks_per_piece(layout) + 3, axis=0)
    x = reference(layout, one, False).reshape(-1)
    _check(layout, blocks, False, lo=np.float32(x.min()) - np.float32(0.5), scale=np.float32(64 / (np.float64(x.max()) - x.min() + 1.0)))


@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_a_counter_past_16_bits(layout):
    """The vector drivers count pairs in 16-bit counters and flush them into the table
    before one could wrap: every value of 600 Ki in the first bin puts all pairs of a
    lane on one counter, about 150 Ki of them, across several flushes and a partial last
    piece."""
    rng = np.random.default_rng(17)
    per_block = LAYOUTS[layout].block_elems
    blocks = finite_blocks(layout, 600_000 // per_block + 3, rng, False)
    x = reference(layout, blocks, False).reshape(-1)
    span = np.float64(x.max()) - np.float64(x.min())
    _check(layout, blocks, False, lo=np.float32(x.min()) - np.float32(0.5), scale=np.float32(0.5 / (span + 1.0)))
    assert len(x) // 4 > 65535                              # pairs per lane, all on counter (0, 0)


def _k4_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The 12 scale bytes of Q4_K / Q5_K blocks from their eight 6-bit scales and mins
    (rows), packed as ggml's get_scale_min_k4 reads them."""
    q = np.zeros((len(sc), 12), np.uint8)
    q[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    q[:, 4:8] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    q[:, 8:12] = (sc[:, 4:] & 0xF) | ((m[:, 4:] & 0xF) << 4)
    return q


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", ["Q4_K", "Q5_K"])
def test_k_quant_zeros(layout, big):
    """Q4_K / Q5_K look for zero values only in blocks where one can be (c * dl == ml for a
    code c): blocks whose min is exactly 1, 3 or 15 steps of their scale (dmin = d, m = k * sc)
    have zeros at that code, among blocks that have none and blocks with zero scales."""
    rng = np.random.default_rng(23 + big)
    per = _blocks_per_piece(layout)
    blocks = finite_blocks(layout, 4 * per + 3, rng, big)
    n = len(blocks)
    k = rng.choice([1, 3, 15], n)[:, None]
    sc = rng.integers(1, 64, (n, 8)) // k
    keep = rng.random(n) < 0.3                            # these keep their random scales and mins
    packed = _k4_scales(sc.astype(np.uint8), (sc * k).astype(np.uint8))
    blocks[~keep, 4:16] = packed[~keep]
    blocks[~keep, 2:4] = blocks[~keep, 0:2]               # dmin = d
    x = reference(layout, blocks, big)
    assert np.isfinite(x).all()
    assert (x[~keep] == 0).sum() > 100 and (x == 0).all(axis=1).sum() < n
    _check(layout, blocks, big)


@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_bins_clamped_at_both_ends(layout):
    """A range narrower than the values (as a file changed between the passes would give):
    values below lo go to the first bin, values beyond the last bin to the last one, and
    products beyond the int32 range (scale 2^40) to the first, as the float32 formula of
    piece_pairs does."""
    rng = np.random.default_rng(31)
    blocks = finite_blocks(layout, 2 * _blocks_per_piece(layout) + 1, rng, False)
    x = reference(layout, blocks, False).reshape(-1)
    mid, span = np.float64(np.median(x)), np.float64(x.max()) - np.float64(x.min())
    _check(layout, blocks, False, lo=np.float32(mid), scale=np.float32(64 / (0.1 * span + 1e-30)))
    with np.errstate(invalid="ignore"):                 # numpy's cast of those: INT_MIN, as cvttps2dq
        _check(layout, blocks, False, lo=np.float32(x.min()), scale=np.float32(2.0 ** 40 / (span + 1e-30)))


def test_values_on_bin_edges():
    """Q8_0 with scale 1: the values are the integers -128..127 and, with lo = -128 and
    scale 1/4, every fourth one lies exactly on a bin edge: each must go to the bin it
    starts (the float32 product is exact there), the top value to the last bin."""
    n = 40
    blocks = np.zeros((n, LAYOUTS["Q8_0"].block_bytes), np.uint8)
    blocks[:, 0:2] = np.array([1.0] * n, "<f2").view(np.uint8).reshape(n, 2)
    q = (np.arange(n * 32) % 256 - 128).astype(np.int8)
    blocks[:, 2:] = q.view(np.uint8).reshape(n, 32)
    _check("Q8_0", blocks, False, lo=np.float32(-128.0), scale=np.float32(0.25))
    x = reference("Q8_0", blocks, False).reshape(-1)
    assert set(np.unique(x[::4] % 4)) <= {0.0}            # the edges are really hit


def test_mxfp4_sums_that_overflow_float32():
    """MXFP4 scales up to 2^(0xF0-128): values near 2^112, whose squares overflow a float32
    sum: the vector pass takes such a piece again in float64, like the portable one."""
    rng = np.random.default_rng(3)
    per = _blocks_per_piece("MXFP4")
    blocks = finite_blocks("MXFP4", 3 * per + 7, rng, False)
    blocks[per: per + 5, 0] = 0xF0                         # inside the second piece only
    x = reference("MXFP4", blocks, False).reshape(-1)
    assert np.isfinite(x).all() and np.float64(np.abs(x).max()) ** 2 > np.finfo(np.float32).max
    _check("MXFP4", blocks, False)


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_pass_one_is_the_portable_one(layout, big):
    """Pass one on AVX-512 (the block bounds of Q4_K/Q5_K in vector lanes) against the
    portable one and numpy: the same min and max, the same scale codes counted, and a
    non-finite scale refused by both with its counts taken back."""
    rng = np.random.default_rng(sum(map(ord, layout)) + 3 * big)
    blocks = finite_blocks(layout, 5 * _blocks_per_piece(layout) + 3, rng, big)
    x = reference(layout, blocks, big)
    got = {}
    try:
        for on in (True, False):
            cstats._cstats.vector_bins(on)
            codes = np.zeros(1 << 16, np.int64)
            r = cstats.range_pass(layout, blocks, big, codes, 0)
            assert r is not None, on
            assert (np.float32(r[0]), np.float32(r[1])) == (x.min(), x.max()), on
            got[on] = codes
            bad = blocks.copy()
            bad[len(bad) // 2, 0:2] = np.array([np.inf], ">f2" if big else "<f2").view(np.uint8)
            if layout == "MXFP4":
                bad[len(bad) // 2, 0] = 0xFF                 # E8M0 NaN
            with np.errstate(all="ignore"):
                if np.isfinite(reference(layout, bad, big)).all():
                    continue
            codes = np.zeros(1 << 16, np.int64)
            assert cstats.range_pass(layout, bad, big, codes, 0) is None, on
            assert not codes.any(), on
    finally:
        cstats._cstats.vector_bins(True)
    assert np.array_equal(got[True], got[False])
    assert got[True].sum() == len(blocks)


def _scaled(layout: str, block: np.ndarray, big: bool) -> np.ndarray:
    """``block`` with its first scale a little larger in magnitude (values c * d grow by
    about 0.4 %, MXFP4's power-of-two scale doubles)."""
    out = block.copy()
    if layout == "MXFP4":
        out[0] = min(int(out[0]) + 1, 0xFE)
        return out
    kind = ">f2" if big else "<f2"
    d = out[0:2].view(kind)[0]
    out[0:2] = np.array([np.float16(d) * np.float16(1.0039)], kind).view(np.uint8)
    return out


# layout -> (byte, value) settings that put a block's lowest and highest code in it
_EXTREMES = {"Q8_0": [(2, 0x80), (3, 0x7F)], "Q4_0": [(2, 0xF0)], "Q4_1": [(4, 0xF0)],
             "Q5_0": [(6, 0xF0), (2, 0x00), (4, 0x01)], "Q5_1": [(8, 0xF0), (4, 0x00), (6, 0x01)]}


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("layout", VECTOR_LAYOUTS)
def test_a_block_just_beyond_the_range_so_far_is_decoded(layout, big):
    """The blocks holding the min and max come early, then copies of them with a slightly
    larger scale inside a later batch: their bounds exceed the range found so far by a
    fraction of a percent, so a bound even slightly too tight would skip them."""
    per = _blocks_per_piece(layout)
    rng = np.random.default_rng(sum(map(ord, layout)) + 5 * big)
    blocks = finite_blocks(layout, 3 * per + 5, rng, big)
    for at, value in _EXTREMES.get(layout, []):        # every block reaches its bounds exactly
        blocks[:, at] = value
    with np.errstate(all="ignore"):
        x = reference(layout, blocks, big)
        for k, at in ((int(x.max(axis=1).argmax()), 2 * per + 7), (int(x.min(axis=1).argmin()), 2 * per + 9)):
            blocks[[0, 1][at == 2 * per + 9]] = blocks[k]
            blocks[at] = _scaled(layout, blocks[k], big)
        x = reference(layout, blocks, big)
    assert np.isfinite(x).all()
    try:
        for on in (True, False):
            cstats._cstats.vector_bins(on)
            r = cstats.range_pass(layout, blocks, big)
            assert r is not None and (np.float32(r[0]), np.float32(r[1])) == (x.min(), x.max()), on
    finally:
        cstats._cstats.vector_bins(True)
