"""IQ-family dequantizers (ggscope/quant/iquants.py) and their tables (iq_tables.py).

Oracles, all written by others:
* ggml's own dequantization of ggml-quantized tensors (../shared/fixtures/ggml,
  quant-oracle.gguf vs dequant-oracle.gguf, MANIFEST.md section 1), bit for bit;
* gguf-py 0.19.0 ``gguf.quants.dequantize`` on random blocks;
* the table listings of ggml's src/ggml-common.h: sizes, first/middle/last entries as
  printed there, and a SHA-256 of the comma-joined C literals (computed from the
  listing, not from ggscope's tables).
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ggscope.quant import iq_tables
from ggscope.quant.iquants import BLOCK_SHAPES, DEQUANTIZERS

TYPES = list(BLOCK_SHAPES)

# name -> (entries, entries[0], entries[n//2], entries[-1], sha256 of ",".join(C literals))
# from ggml-common.h (ggml/src/ggml-common.h as vendored in llama-cpp-python 0.3.16;
# first, middle and last entries also checked against ggml-org/llama.cpp).
GGML_GRIDS = {
    "iq2xxs_grid": (256, "0x0808080808080808", "0x082b2b0808082b08", "0x2b2b2b1908081908",
                    "2f81983a7bd6e8c528438b08f02af3bd88638be3f675a9bbd13fe722c679e47d"),
    "iq2xs_grid": (512, "0x0808080808080808", "0x190808080808192b", "0x2b2b2b2b2b2b2b2b",
                   "d59ce1ade75acf2507c35a9a6346d0eff1bf3d940e9088b7199eafde06662dbf"),
    "iq2s_grid": (1024, "0x0808080808080808", "0x19080819082b1919", "0x2b2b2b2b2b2b2b2b",
                  "b305d00b386933d7718606b478042a062c07ac7379e17684b973892146b4081e"),
    "iq3xxs_grid": (256, "0x04040404", "0x141c3e04", "0x3e341c04",
                    "d4f2d5c5a7e05943d892ac78c276dbecaaa631ad4b04c2bd6d101970be5951ed"),
    "iq3s_grid": (512, "0x01010101", "0x05090507", "0x0f0f0101",
                  "864edbac7a10457f001599019539764eb05172244d96c7c89710eaa325999bcf"),
    "iq1s_grid": (2048, "0xffffffffffffffff", "0x0000000000ff0100", "0x0101010101010101",
                  "d33f3d4a89bae2954a90f467fc867f8fcdba35359e3f44f4e6b9c9f30964ff1a"),
}
# The fixtures' tensor names are the ggml type names in lower case.
ORACLE_TENSORS = {name: name.lower() for name in TYPES}


# ---------------------------------------------------------------- tables

@pytest.mark.parametrize("grid", list(GGML_GRIDS))
def test_grid_matches_ggml_listing(grid):
    n, first, middle, last, sha = GGML_GRIDS[grid]
    text, width, n_declared = iq_tables.GRIDS[grid]
    literals = ["0x" + w for w in text.split()]
    assert n_declared == n and len(literals) == n
    assert all(len(w) == 2 + 2 * width for w in literals)
    assert (literals[0], literals[n // 2], literals[-1]) == (first, middle, last)
    assert hashlib.sha256(",".join(literals).encode()).hexdigest() == sha


def test_small_tables_match_ggml_listing():
    # kmask_iq2xs, kvalues_iq4nl and the IQ1 deltas as printed in ggml-common.h
    assert iq_tables.KMASK_IQ2XS == (1, 2, 4, 8, 16, 32, 64, 128)
    assert iq_tables.KVALUES_IQ4NL == (-127, -104, -83, -65, -49, -35, -22, -10,
                                       1, 13, 25, 38, 53, 69, 89, 113)
    assert iq_tables.IQ1S_DELTA == iq_tables.IQ1M_DELTA == 0.125
    ks = iq_tables.KSIGNS_IQ2XS
    assert len(ks) == 128 and ks[:8] == (0, 129, 130, 3, 132, 5, 6, 135) and ks[-4:] == (252, 125, 126, 255)
    # ggml's construction: the 8th sign bit gives every pattern an even number of minus signs
    assert all(k == i | (bin(i).count("1") & 1) << 7 for i, k in enumerate(ks))


# ---------------------------------------------------------------- ggml oracle

@pytest.fixture(scope="module")
def oracle_files(shared_fixtures):
    import ggscope

    folder = shared_fixtures / "ggml"
    quant, dequant = folder / "quant-oracle.gguf", folder / "dequant-oracle.gguf"
    if not (quant.is_file() and dequant.is_file()):
        pytest.skip(f"ggml oracle files not found in {folder}")
    if not hasattr(ggscope, "open"):
        pytest.skip("ggscope.open is not available in this checkout")
    return ggscope.open(quant), ggscope.open(dequant)


@pytest.mark.parametrize("name", TYPES)
def test_bit_exact_with_ggml(oracle_files, name):
    quant, dequant = oracle_files
    n_elems, n_bytes = BLOCK_SHAPES[name]
    q = quant.tensor(ORACLE_TENSORS[name])
    assert q.type == name and tuple(q.shape) == (512, 8)
    blocks = np.ascontiguousarray(q.raw()).reshape(-1, n_bytes)
    expected = np.ascontiguousarray(dequant.tensor(ORACLE_TENSORS[name]).raw()).view("<u4")
    got = DEQUANTIZERS[name](blocks)
    assert got.dtype == np.float32 and got.shape == (512 * 8 // n_elems, n_elems)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint32), expected)


# ---------------------------------------------------------------- gguf-py

def _random_blocks(name: str, n: int, seed: int, scales: np.ndarray | None = None) -> np.ndarray:
    """Random bytes with the fp16 super-scale replaced by ``scales`` (default: sane ones)."""
    n_elems, n_bytes = BLOCK_SHAPES[name]
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(n, n_bytes), dtype=np.uint8)
    if scales is None:
        scales = (rng.uniform(1e-4, 0.5, n) * rng.choice([-1, 1], n)).astype(np.float16)
    bits = scales.astype("<f2").view("<u2").astype(np.uint16)
    if name == "IQ1_M":  # the scale's four nibbles are the top nibbles of the four u16 words
        words = blocks[:, 48:56].copy().view("<u2")
        for k in range(4):
            words[:, k] = (words[:, k] & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12)
        blocks[:, 48:56] = words.view(np.uint8)
    else:
        blocks[:, 0:2] = bits.view(np.uint8).reshape(n, 2)
    return blocks


def _gguf_py(name: str, blocks: np.ndarray) -> np.ndarray:
    gq = pytest.importorskip("gguf.quants")
    import gguf

    out = gq.dequantize(blocks.reshape(-1), gguf.GGMLQuantizationType[name])
    return np.asarray(out, dtype=np.float32).reshape(blocks.shape[0], -1)


@pytest.mark.parametrize("name", TYPES)
def test_matches_gguf_py_on_random_blocks(name):
    blocks = _random_blocks(name, 300, seed=len(name) * 7919 + BLOCK_SHAPES[name][1])
    np.testing.assert_array_equal(DEQUANTIZERS[name](blocks).view(np.uint32),
                                  _gguf_py(name, blocks).view(np.uint32))


@pytest.mark.parametrize("name", TYPES)
def test_extreme_scales(name):
    """Every non-NaN fp16 scale (zeros, subnormals, max, infinities) agrees with gguf-py;
    NaN scales give NaN everywhere."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    special = np.array([0.0, -0.0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -14, 65504.0, -65504.0,
                        np.inf, -np.inf], np.float16)
    finite_or_inf = np.concatenate([special, every[::37][~np.isnan(every[::37])]])
    blocks = _random_blocks(name, finite_or_inf.size, seed=3, scales=finite_or_inf)
    with np.errstate(all="ignore"):
        ref = _gguf_py(name, blocks)
    np.testing.assert_array_equal(DEQUANTIZERS[name](blocks).view(np.uint32), ref.view(np.uint32))
    nan_blocks = _random_blocks(name, 64, seed=4, scales=every[np.isnan(every)][::32])
    assert np.isnan(DEQUANTIZERS[name](nan_blocks)).all()


def test_nan_scale_sign_follows_ggml_release_build():
    # Observed with ggml-quants.c built by GCC 12.2 at -O3 (the oracle's build): the
    # +-1 sign factor becomes a sign flip, so a NaN scale's sign bit is XORed by the
    # element's sign (gguf-py keeps the NaN's sign).  The scale bytes of every block are
    # +NaN, so the output sign bits are the sign bits of the same blocks with scale 1.
    for name in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"):
        ones = _random_blocks(name, 32, seed=5, scales=np.ones(32, np.float16))
        nans = ones.copy()
        nans[:, 0:2] = np.array([0x00, 0x7E], np.uint8)          # +qNaN, little-endian
        got = DEQUANTIZERS[name](nans)
        assert np.isnan(got).all()
        np.testing.assert_array_equal(np.signbit(got), np.signbit(DEQUANTIZERS[name](ones)))


# ---------------------------------------------------------------- API

def _to_big_endian(name: str, blocks: np.ndarray) -> np.ndarray:
    """Swap the fields ggml-common.h declares as ggml_half / uint16_t (the codec contract)."""
    big = blocks.copy()
    spans = {"IQ2_XXS": [(0, 66)], "IQ2_XS": [(0, 66)], "IQ1_S": [(0, 2), (34, 50)],
             "IQ4_XS": [(0, 4)], "IQ1_M": []}.get(name, [(0, 2)])
    for start, end in spans:
        big[:, start:end] = blocks[:, start:end].reshape(len(blocks), -1, 2)[:, :, ::-1].reshape(len(blocks), -1)
    return big


@pytest.mark.parametrize("name", TYPES)
def test_big_endian_fields(name):
    blocks = _random_blocks(name, 50, seed=11)
    little = DEQUANTIZERS[name](blocks)
    np.testing.assert_array_equal(
        DEQUANTIZERS[name](_to_big_endian(name, blocks), byteorder="big").view(np.uint32),
        little.view(np.uint32))


@pytest.mark.parametrize("name", TYPES)
def test_out_argument_and_empty_input(name):
    n_elems, n_bytes = BLOCK_SHAPES[name]
    blocks = _random_blocks(name, 6, seed=2)
    out = np.full((6, n_elems), np.nan, np.float32)
    assert DEQUANTIZERS[name](blocks, "little", out) is out
    np.testing.assert_array_equal(out, DEQUANTIZERS[name](blocks))
    strided = np.zeros((6, 2 * n_elems), np.float32)[:, ::2]
    DEQUANTIZERS[name](blocks, out=strided)
    np.testing.assert_array_equal(strided, out)
    assert DEQUANTIZERS[name](blocks[:0]).shape == (0, n_elems)


@pytest.mark.parametrize("bad", [
    np.zeros((2, 7), np.uint8),                 # wrong block width
    np.zeros(66 * 2, np.uint8),                 # flat
    np.zeros((2, 66), np.int16),                # wrong dtype
    b"\0" * 132,                                # not an array
])
def test_rejects_misuse_with_value_error(bad):
    with pytest.raises(ValueError, match="IQ2_XXS"):
        DEQUANTIZERS["IQ2_XXS"](bad)


def test_rejects_bad_byteorder_and_out():
    blocks = np.zeros((2, 66), np.uint8)
    with pytest.raises(ValueError, match="byteorder"):
        DEQUANTIZERS["IQ2_XXS"](blocks, byteorder="middle")
    with pytest.raises(ValueError, match="out"):
        DEQUANTIZERS["IQ2_XXS"](blocks, out=np.zeros((2, 256), np.float64))
