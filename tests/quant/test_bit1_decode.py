"""BIT1 sign bits decode to ±1, checked against an independent reading of the exporter's layout.

Oracle: the exporter's description (../shared/seeds/bit1-export.txt, ``pack_bits_rows``):
row ``r`` of a BitLinear is ``ceil(d_in / 64)`` u64 words, little-endian; weight ``k`` is
bit ``k % 64`` of word ``k // 64``; bit 1 = +1, bit 0 = -1; unused high bits pad the last
word.  This test decodes the bytes itself, with shifts on u64 words, locating the sections
by ggscope's BIT1 writer (``bit1_sections``, written from the description, not from
ggscope's spec), and replays the writer's random signs for the round trip.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import ggscope
from ggscope.cli import main
from ggscope.quant import dequantize, iter_dequantized
from bit1_writer import bit1_sections, write_bit1

SHAPES = {
    "ragged": dict(vocab_size=37, d_model=100, n_layers=1, n_heads=3, d_ff=70),
    "aligned": dict(vocab_size=16, d_model=128, n_layers=2, n_heads=2, d_ff=64),
}


def _signs(raw: bytes, rows: int, d: int) -> np.ndarray:
    """The exporter's rows decoded with u64 shifts: (rows, d) float32 of ±1."""
    words = np.frombuffer(raw, dtype="<u8").reshape(rows, (d + 63) // 64)
    k = np.arange(d)
    bits = (words[:, k // 64] >> (k % 64).astype(np.uint64)) & np.uint64(1)
    return np.where(bits == 1, 1.0, -1.0).astype(np.float32)


def _bit_sections(dims):
    """(node path, rows, row width) of every sign-bit section."""
    width = {"q_proj": ("d_model", "d_model"), "k_proj": ("d_model", "d_model"),
             "v_proj": ("d_model", "d_model"), "o_proj": ("d_model", "d_model"),
             "gate": ("d_model", "d_ff"), "up": ("d_model", "d_ff"), "down": ("d_ff", "d_model")}
    for s in bit1_sections(**dims):
        if not s.path.endswith("words"):
            continue
        if s.path in ("embedding/words", "out_codebook/words"):
            yield s, dims["vocab_size"], dims["d_model"]
        else:
            d_in, d_out = width[s.path.split("/")[1]]
            yield s, dims[d_out], dims[d_in]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_every_sign_tensor_matches_independent_decoding(kind, tmp_path):
    dims = SHAPES[kind]
    path = tmp_path / f"{kind}.bit1"
    write_bit1(path, seed=7, **dims)
    raw = path.read_bytes()
    model = ggscope.open(str(path))
    by_node = {t.node_path: t for t in model.tensors}
    n = 0
    for section, rows, d in _bit_sections(dims):
        want = _signs(raw[section.start:section.end], rows, d)
        got = by_node[section.path].dequantize()
        assert got.shape == (rows, d) and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        n += 1
    assert n == 2 + 7 * dims["n_layers"]


def test_round_trip_with_the_writers_signs(tmp_path):
    dims = SHAPES["ragged"]
    path = tmp_path / "m.bit1"
    write_bit1(path, seed=3, **dims)
    rng = np.random.default_rng(3)            # the writer draws the embedding's signs first
    signs = rng.integers(0, 2, size=(dims["vocab_size"], dims["d_model"]), dtype=np.uint8)
    got = ggscope.open(str(path)).tensor("embedding.weight_bits").dequantize()
    np.testing.assert_array_equal(got, 2.0 * signs - 1.0)


def test_padding_bits_are_not_read(tmp_path):
    dims = SHAPES["ragged"]
    clean, dirty = tmp_path / "clean.bit1", tmp_path / "dirty.bit1"
    write_bit1(clean, seed=5, **dims)
    write_bit1(dirty, seed=5, dirty_tail_bits=True, **dims)
    a, b = ggscope.open(str(clean)), ggscope.open(str(dirty))
    for ta in a.tensors:
        if ta.layout == "BIT1_PACKED":
            np.testing.assert_array_equal(ta.dequantize(), b.tensor(ta.name).dequantize())


def test_whole_word_rows_stream_in_chunks():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 1 << 63, size=(3, 2), dtype=np.uint64)
    raw = words.astype("<u8").tobytes()
    want = _signs(raw, 3, 128).reshape(-1)
    np.testing.assert_array_equal(dequantize("BIT1_PACKED", raw, 384), want)
    np.testing.assert_array_equal(np.concatenate(list(iter_dequantized("BIT1_PACKED", raw, 384, 64))), want)


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_stats_cli_reads_bit1(kind, tmp_path, capsys):
    dims = SHAPES[kind]
    path = tmp_path / f"{kind}.bit1"
    write_bit1(path, seed=11, **dims)
    assert main(["stats", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["tensors"] if isinstance(doc, dict) else doc
    stats = {r["name"]: r for r in rows}
    raw = path.read_bytes()
    section = next(s for s in bit1_sections(**dims) if s.path == "out_codebook/words")
    want = _signs(raw[section.start:section.end], dims["vocab_size"], dims["d_model"])
    got = stats["out_codebook.weight_bits"]
    assert (got["min"], got["max"]) == (-1.0, 1.0)
    assert got["mean"] == pytest.approx(float(want.mean()), abs=1e-6)
    assert got["zeros"] == 0


def test_diff_compares_bit1_numerically(tmp_path, capsys):
    dims = SHAPES["ragged"]
    a, b = tmp_path / "a.bit1", tmp_path / "b.bit1"
    write_bit1(a, seed=1, **dims)
    write_bit1(b, seed=2, **dims)
    assert main(["diff", "--json", str(a), str(b)]) == 1
    doc = json.loads(capsys.readouterr().out)
    t = next(t for t in doc["tensors"] if t["name"] == "embedding.weight_bits")
    ra, rb = a.read_bytes(), b.read_bytes()
    s = next(s for s in bit1_sections(**dims) if s.path == "embedding/words")
    x = _signs(ra[s.start:s.end], dims["vocab_size"], dims["d_model"]).astype(np.float64)
    y = _signs(rb[s.start:s.end], dims["vocab_size"], dims["d_model"]).astype(np.float64)
    assert t["max_abs"] == 2.0
    assert t["cosine"] == pytest.approx(float((x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum())), abs=1e-9)
    assert "error" not in t or not t["error"]
