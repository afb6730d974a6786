"""BIT1: the generator, and generated files through ggscope's engine and the BIT1 view.

Oracles: the worked sizes of legacy-formats.md §8.3, the bit convention of the
exporter's description (decoded here with numpy, independently of ggscope), the node
ranges of the official Kaitai compiler's parser (differential check, skipped without
node), and the section list the writer produces from the description.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from ggscope.ksy.node import find
from ggscope.source.mapped import ByteSource
from ggscope.ksy import parse
from ggscope.model.views.bit1 import build
from bit1_writer import bit1_bytes, bit1_sections, bit1_size, main, write_bit1

REPO = Path(__file__).resolve().parents[2]
DIMS = ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff")
WORKED = [((256, 64, 1, 4, 256), 17_720), ((7, 65, 2, 3, 130), 24_784),
          ((32_000, 512, 8, 8, 2048), 8_759_592)]
SHAPES = [(7, 65, 2, 3, 130), (1, 1, 0, 1, 1), (3, 127, 1, 5, 63), (10, 128, 2, 1, 192),
          (0, 64, 1, 0, 64)]


def _kw(dims) -> dict:
    return dict(zip(DIMS, dims))


def _open(data: bytes):
    source = ByteSource(data)
    result = parse("bit1", source)
    return result, build(result.root, source, "<memory>")


# ---------------------------------------------------------------- the generator

@pytest.mark.parametrize("dims,size", WORKED)
def test_writer_produces_the_worked_sizes(tmp_path: Path, dims, size: int) -> None:
    path = tmp_path / "m.bit1"
    assert write_bit1(path, **_kw(dims)) == size == path.stat().st_size == bit1_size(**_kw(dims))


def test_writer_is_deterministic_per_seed(tmp_path: Path) -> None:
    kw = _kw((7, 65, 2, 3, 130))
    write_bit1(tmp_path / "a", seed=3, **kw)
    assert (tmp_path / "a").read_bytes() == bit1_bytes(seed=3, **kw)
    assert bit1_bytes(seed=3, **kw) != bit1_bytes(seed=4, **kw)


def test_header_and_bit_convention_follow_the_description() -> None:
    kw = _kw((5, 65, 1, 2, 70))
    data = bit1_bytes(max_seq_len=99, **kw)
    magic, *words, scale = struct.unpack_from("<4s7Iq", data)
    assert magic == b"BIT1" and words == [1, 5, 65, 1, 2, 70, 99] and scale == 65536
    emb = np.frombuffer(data, "<u8", count=5 * 2, offset=40).reshape(5, 2)
    assert np.all(emb[:, 1] >> np.uint64(1) == 0)          # 65 bits: 63 zero tail bits
    # element j of a row = bit j % 64 of word j // 64 (LSB first)
    bits = np.array([[(int(row[j // 64]) >> (j % 64)) & 1 for j in range(65)] for row in emb])
    packed = np.packbits(bits, axis=1, bitorder="little")
    assert packed.tobytes() == b"".join(r.tobytes()[:9] for r in emb)


def test_dirty_tail_bits_sets_unused_bits_only_when_asked() -> None:
    kw = _kw((3, 65, 0, 1, 1))
    clean = np.frombuffer(bit1_bytes(**kw), "<u8", count=6, offset=40).reshape(3, 2)
    dirty = np.frombuffer(bit1_bytes(dirty_tail_bits=True, **kw), "<u8", count=6, offset=40).reshape(3, 2)
    assert np.all(clean[:, 1] >> np.uint64(1) == 0)
    assert np.all(dirty[:, 1] >> np.uint64(63) == 1)
    assert np.array_equal(clean[:, 0], dirty[:, 0])


def test_writer_rejects_impossible_dimensions(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="d_model"):
        write_bit1(tmp_path / "x", vocab_size=1, d_model=-1, n_layers=0, n_heads=1, d_ff=1)
    assert main([str(tmp_path / "y"), "--d-model", str(2**32)]) == 2
    assert main([str(tmp_path / "z"), "--vocab-size", "3", "--n-layers", "1"]) == 0
    assert (tmp_path / "z").stat().st_size == bit1_size(vocab_size=3, d_model=64, n_layers=1,
                                                        n_heads=4, d_ff=256)


# ---------------------------------------------------------------- engine + view

@pytest.mark.parametrize("dims", SHAPES + [WORKED[0][0]])
def test_generated_file_parses_to_its_derived_size(dims) -> None:
    kw = _kw(dims)
    data = bit1_bytes(seed=5, **kw)
    result, mf = _open(data)
    assert result.error is None and mf.damage is None
    assert result.root.end == len(data) == result.root.child("len_file").value
    assert mf.format == "bit1" and mf.version == 1
    assert mf.metadata == {"bit1.version": 1, "bit1.max_seq_len": 256, "bit1.logit_scale_M": 65536,
                           **{f"bit1.{k}": v for k, v in kw.items()}}
    V, dm, nl, nh, dff = dims
    assert len(mf.tensors) == 3 + 15 * nl
    # the tensors tile the body exactly, in file order
    pos = 40
    for t in mf.tensors:
        assert t.offset == pos, t.name
        pos += t.nbytes
    assert pos == len(data)
    assert mf.tensor("embedding.weight_bits").shape == (dm, V)
    assert mf.tensor("int_out_bias").type == "I64"
    if nl:
        down = mf.tensor(f"blocks.{nl - 1}.ffn.down.weight_bits")
        assert (down.shape, down.type, down.nbytes) == ((dff, dm), "BIT1_PACKED", 8 * dm * ((dff + 63) // 64))
        assert mf.tensor("blocks.0.attn.alibi_slopes").shape == (nh,)
        assert mf.tensor("blocks.0.ffn.gate.int_threshold").shape == (dff,)


def test_sections_match_the_writer_and_the_official_parser(tmp_path: Path) -> None:
    kw = _kw((7, 65, 2, 3, 130))
    path = tmp_path / "m.bit1"
    write_bit1(path, seed=2, **kw)
    result, _ = _open(path.read_bytes())
    for sec in bit1_sections(**kw):
        node = find(result.root, sec.path)
        assert (node.start, node.end) == (sec.start, sec.end), sec.path
    from kaitai_oracle import compare, kaitai_records
    records = kaitai_records(REPO / "formats" / "bit1.ksy", path)
    assert compare(records, result.root) == []


def test_values_are_the_bytes_written() -> None:
    kw = _kw((7, 65, 2, 3, 130))
    data = bit1_bytes(seed=9, **kw)
    _, mf = _open(data)
    bias = mf.tensor("int_out_bias")
    assert bias.offset == len(data) - 56
    assert np.array_equal(bias.raw().view("<i8"), np.frombuffer(data[-56:], "<i8"))


def test_every_truncation_gives_an_error_node_at_the_section_cut() -> None:
    kw = _kw((2, 3, 1, 2, 5))
    data = bit1_bytes(**kw)
    sections = bit1_sections(**kw)
    header_fields = ["magic"] * 4 + [f for f in ("version", "vocab_size", "d_model", "n_layers",
                                                 "n_heads", "d_ff", "max_seq_len") for _ in range(4)]
    header_fields += ["logit_scale_m"] * 8
    for cut in range(len(data)):
        _, mf = _open(data[:cut])
        assert mf.damage is not None and mf.damage.error, cut
        sec = next(s for s in sections if s.start <= cut < s.end)
        want = f"header/{header_fields[cut]}" if sec.path == "header" else sec.path
        assert mf.damage.path == want, (cut, mf.damage)
        assert all(t.offset + t.nbytes <= cut for t in mf.tensors)


def test_trailing_bytes_are_left_unparsed_for_the_validator() -> None:
    data = bit1_bytes(**_kw((2, 8, 1, 1, 8)))
    result, mf = _open(data + b"\0" * 3)
    assert mf.damage is None and result.root.end == len(data)


# ---------------------------------------------------------------- statistics

@pytest.mark.parametrize("dims", [(7, 65, 2, 3, 130), (3, 127, 1, 5, 63), (10, 128, 2, 1, 192)])
@pytest.mark.parametrize("dirty", [False, True])
def test_stats_count_the_sign_bits_exactly(tmp_path: Path, monkeypatch, dims, dirty: bool) -> None:
    """BIT1 statistics come from counting set bits, not decoding: they equal numpy's
    statistics of the decoded ±1 values, and the row padding -- even when the writer
    leaves it dirty -- is never counted."""
    import ggscope
    from ggscope.stats.tensors import tensor_stats
    path = tmp_path / "m.bit1"
    write_bit1(path, seed=5, dirty_tail_bits=dirty, **_kw(dims))
    with ggscope.open(str(path)) as mf:
        for t in mf.tensors:
            if t.layout != "BIT1_PACKED":
                continue
            x = t.dequantize().astype(np.float64).reshape(-1)
            with monkeypatch.context() as m:
                m.setattr("ggscope.stats.decoded.decode_into", None)       # nothing may be decoded
                s = tensor_stats(t, chunk_elems=100, threads=2)
            assert (s["count"], s["min"], s["max"], s["zeros"]) == (x.size, x.min(), x.max(), 0), t.name
            assert s["mean"] == pytest.approx(x.mean(), abs=1e-12) and s["std"] == pytest.approx(x.std(), abs=1e-12)
            edges = np.asarray(s["histogram"]["edges"])
            want = np.histogram(x, bins=edges)[0]
            assert s["histogram"]["counts"] == want.tolist(), t.name
