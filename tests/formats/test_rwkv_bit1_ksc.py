"""formats/rwkv_cpp.ksy and formats/bit1.ksy, judged by the official Kaitai compiler.

The reference compiler (kaitai-struct-compiler 0.11, via ``kaitai_oracle``) must accept
both specs; the Python parser it generates must read every real rwkv.cpp file in
``../shared/fixtures/rwkv`` to exactly its last byte with the header words, tensor
count, per-type counts, names and shapes that MANIFEST.md and legacy-formats §6.6
state, and must read BIT1 files from ``bit1_writer`` to exactly their last
byte with every section where the writer put it and the sizes §8.3 works out.
Skips (with the reason) when node, the compiler or the shared fixtures are absent.
"""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from kaitai_oracle import compile_ksy, kaitai_records
from rwkv_manifest import arch_of, manifest_rows, not_quantized, required_names

from bit1_writer import bit1_sections, bit1_size, write_bit1

REPO = Path(__file__).resolve().parents[2]
RWKV_KSY = REPO / "formats" / "rwkv_cpp.ksy"
BIT1_KSY = REPO / "formats" / "bit1.ksy"
RWKV_DIR = REPO / ".." / "shared" / "fixtures" / "rwkv"
RWKV_FILES = sorted(p.name for p in RWKV_DIR.glob("tiny-rwkv-*.bin")) if RWKV_DIR.is_dir() else []

# legacy-formats.md §8.3 worked examples: (V, d_model, n_layers, n_heads, d_ff) -> bytes.
BIT1_WORKED = [((256, 64, 1, 4, 256), 17_720), ((7, 65, 2, 3, 130), 24_784),
               ((32_000, 512, 8, 8, 2048), 8_759_592)]
BIT1_MORE = [(1, 1, 0, 1, 1), (3, 127, 1, 5, 63), (10, 128, 2, 1, 192), (2, 200, 3, 7, 1)]
DIMS = ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff")


def _parse(ksy: Path, data: bytes):
    """Root object of the reference parser (debug build: ``_read`` runs explicitly)."""
    from kaitaistruct import KaitaiStream
    module = compile_ksy(ksy)
    cls = getattr(module, "".join(p.capitalize() for p in ksy.stem.split("_")))
    root = cls(KaitaiStream(io.BytesIO(data)))
    root._read()
    return root


@pytest.fixture(scope="module")
def rwkv_dir() -> Path:
    if not RWKV_DIR.is_dir():
        pytest.skip(f"shared rwkv fixtures not found at {RWKV_DIR.resolve()}")
    return RWKV_DIR


@pytest.mark.parametrize("name", RWKV_FILES)
def test_rwkv_fixture_parses_to_eof_as_manifest_states(rwkv_dir: Path, name: str) -> None:
    data = (rwkv_dir / name).read_bytes()
    root = _parse(RWKV_KSY, data)
    assert root._io.pos() == len(data)

    params = root.parameters
    names = [p.key for p in params]
    types = [p.data_type.name.upper() for p in params]
    shapes = {p.key: list(p.shape) for p in params}
    arch = arch_of(name)
    row = manifest_rows(rwkv_dir).get(name)
    if row is None:
        # The FP32 originals are listed in prose only: all parameters FP32, same
        # architecture (and so the same tensor set) as their siblings in the table.
        assert "-FP32" in name
        assert root.data_type.name == "fp32" and set(types) == {"FP32"}
        n_layer = root.n_layer
    else:
        assert len(data) == row.nbytes
        assert (root.version, root.n_embed, root.n_layer) == (row.version, row.n_embd, row.n_layer)
        assert root.data_type.value == row.file_type
        assert len(params) == row.n_tensors
        assert dict(Counter(types)) == row.type_counts
        n_layer = row.n_layer
    assert root.n_vocab == 256
    assert len(set(names)) == len(names)
    assert set(names) == required_names(arch, n_layer)
    assert shapes["emb.weight"] == [root.n_embed, root.n_vocab]
    assert shapes["head.weight"] == [root.n_embed, root.n_vocab]
    if arch == "6":
        assert shapes["blocks.0.att.time_maa_w2"] == [32, root.n_embed, 5]
    if arch in ("5.1", "5.2", "6"):
        assert len(shapes["blocks.0.att.time_decay"]) == 3
    if root.data_type.name not in ("fp32", "fp16"):
        kept = {p.key for p in params if p.data_type != root.data_type}
        assert kept == {p.key for p in params if not_quantized(p.key, len(p.shape))}


@pytest.mark.parametrize("dims,size", BIT1_WORKED + [(d, None) for d in BIT1_MORE])
def test_bit1_generated_file_parses_to_its_derived_size(tmp_path: Path, dims, size) -> None:
    kw = dict(zip(DIMS, dims))
    path = tmp_path / "model.bit1"
    written = write_bit1(path, max_seq_len=333, seed=7, **kw)
    if size is not None:
        assert written == size
    assert written == bit1_size(**kw) == path.stat().st_size
    data = path.read_bytes()
    root = _parse(BIT1_KSY, data)
    assert root._io.pos() == len(data) == root.len_file
    h = root.header
    assert (h.vocab_size, h.d_model, h.n_layers, h.n_heads, h.d_ff) == dims
    assert (h.version, h.max_seq_len, h.logit_scale_m) == (1, 333, 65536)
    assert len(root.layers) == kw["n_layers"]
    assert len(root.int_out_bias) == kw["vocab_size"]


@pytest.mark.parametrize("dims", [(7, 65, 2, 3, 130), (3, 127, 1, 5, 63)])
def test_bit1_sections_sit_where_the_writer_put_them(tmp_path: Path, dims) -> None:
    kw = dict(zip(DIMS, dims))
    path = tmp_path / "model.bit1"
    write_bit1(path, seed=1, **kw)
    records = {r.path: r for r in kaitai_records(BIT1_KSY, path)}
    for sec in bit1_sections(**kw):
        rec = records[sec.path]
        assert (rec.start, rec.end) == (sec.start, sec.end), sec.path


def test_bit1_truncated_file_is_rejected_by_the_reference_parser(tmp_path: Path) -> None:
    from kaitaistruct import KaitaiStructError
    path = tmp_path / "model.bit1"
    write_bit1(path, vocab_size=7, d_model=65, n_layers=2, n_heads=3, d_ff=130)
    data = path.read_bytes()
    for cut in (0, 39, 40, 1000, len(data) - 1):
        with pytest.raises((EOFError, KaitaiStructError)):
            _parse(BIT1_KSY, data[:cut])
