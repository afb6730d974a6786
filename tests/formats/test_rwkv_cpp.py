"""rwkv.cpp files through ggscope's engine and the rwkv.cpp view.

Oracles: MANIFEST.md of ``../shared/fixtures/rwkv`` (sizes, versions, header words,
tensor counts, per-type counts, architecture by file name), the names and shapes of
legacy-formats.md §6.6 and the quantizer rule MANIFEST states, all via
``rwkv_manifest``; ggml type names and historical layouts from §6.3/§6.4; the node
ranges of the official Kaitai compiler's parser (differential check, skipped without
node).  Truncated copies must give an error node at the field holding the cut.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from rwkv_manifest import arch_of, manifest_rows, not_quantized, required_names, type_counts

from ggscope.source.mapped import ByteSource
from ggscope.ksy import parse
from ggscope.model.views.rwkv_cpp import build

REPO = Path(__file__).resolve().parents[2]
RWKV_DIR = REPO / ".." / "shared" / "fixtures" / "rwkv"
RWKV_FILES = sorted(p.name for p in RWKV_DIR.glob("tiny-rwkv-*.bin")) if RWKV_DIR.is_dir() else []

# rwkv.cpp type names (MANIFEST) -> ggml type names (legacy-formats.md §6.3)
GGML_NAME = {"FP32": "F32", "FP16": "F16"}


@pytest.fixture(scope="module")
def rwkv_dir() -> Path:
    if not RWKV_DIR.is_dir():
        pytest.skip(f"shared rwkv fixtures not found at {RWKV_DIR.resolve()}")
    return RWKV_DIR


def _open(data: bytes, name: str = "<memory>"):
    source = ByteSource(data, name)
    result = parse("rwkv_cpp", source)
    return result, build(result.root, source, name)


@pytest.mark.parametrize("name", RWKV_FILES)
def test_fixture_parses_to_its_last_byte_as_the_manifest_states(rwkv_dir: Path, name: str) -> None:
    data = (rwkv_dir / name).read_bytes()
    result, mf = _open(data, name)
    assert result.error is None and mf.damage is None
    assert result.root.end == len(data)
    last = mf.tensors[-1]
    assert last.offset + last.nbytes == len(data)
    assert mf.format == "rwkv.cpp" and mf.endian == "little"

    md = mf.metadata
    arch = arch_of(name)
    assert md["rwkv_cpp.arch_version"] == arch == mf.extra["arch_version"]
    assert md["rwkv_cpp.n_vocab"] == 256
    row = manifest_rows(rwkv_dir).get(name)
    if row is None:                      # FP32 originals: described in prose only
        assert "-FP32" in name and md["rwkv_cpp.data_type"] == 0
        assert {t.type for t in mf.tensors} == {"F32"}
    else:
        assert (mf.version, md["rwkv_cpp.file_version"]) == (row.version, row.version)
        assert (md["rwkv_cpp.n_embed"], md["rwkv_cpp.n_layer"]) == (row.n_embd, row.n_layer)
        assert md["rwkv_cpp.data_type"] == row.file_type
        assert len(mf.tensors) == row.n_tensors
        want = {GGML_NAME.get(k, k): v for k, v in row.type_counts.items()}
        assert type_counts([t.type for t in mf.tensors]) == want

    names = [t.name for t in mf.tensors]
    assert set(names) == required_names(arch, md["rwkv_cpp.n_layer"]) and len(set(names)) == len(names)
    n_embed = md["rwkv_cpp.n_embed"]
    assert mf.tensor("emb.weight").shape == (n_embed, 256)
    assert mf.tensor("head.weight").shape == (n_embed, 256)
    if arch == "6":
        assert mf.tensor("blocks.0.att.time_maa_w2").shape == (32, n_embed, 5)
    if md["rwkv_cpp.data_type"] >= 2:
        file_type = {t.type_id for t in mf.tensors if t.type_id >= 2}
        assert len(file_type) == 1
        kept = {t.name for t in mf.tensors if t.type_id < 2}
        assert kept == {t.name for t in mf.tensors if not_quantized(t.name, len(t.shape))}


@pytest.mark.parametrize("name", [n for n in RWKV_FILES if "-v100-Q" in n])
def test_version_100_quantized_tensors_keep_their_historical_layout(rwkv_dir: Path, name: str) -> None:
    _, mf = _open((rwkv_dir / name).read_bytes(), name)
    quantized = [t for t in mf.tensors if t.type not in ("F32", "F16")]
    assert quantized
    for t in quantized:
        # legacy-formats.md §6.4: v100 Q4_0 is {f32 d; 16 B} = 20 B, Q4_1 {f32 d; f32 m; 16 B} = 24 B
        assert t.layout == f"{t.type}_RWKV100"
        assert t.nbytes == t.n_elements // 32 * {"Q4_0": 20, "Q4_1": 24}[t.type]


def test_version_101_quantized_tensors_use_todays_layouts(rwkv_dir: Path) -> None:
    name = "tiny-rwkv-5v1-730K-Q4_0.bin"
    _, mf = _open((rwkv_dir / name).read_bytes(), name)
    for t in mf.tensors:
        assert t.layout == t.type
        if t.type == "Q4_0":
            assert t.nbytes == t.n_elements // 32 * 18


def test_nodes_match_the_official_kaitai_parser(rwkv_dir: Path) -> None:
    from kaitai_oracle import compare, kaitai_records
    for name in ("tiny-rwkv-4v0-660K-v100-Q4_1.bin", "tiny-rwkv-6v0-3m-Q5_0.bin"):
        path = rwkv_dir / name
        result, _ = _open(path.read_bytes(), name)
        records = kaitai_records(REPO / "formats" / "rwkv_cpp.ksy", path)
        assert compare(records, result.root) == []


def _cut_points(root) -> list[tuple[int, str]]:
    """(offset, field path) pairs: a cut in the middle of fields spread over the file."""
    params = root.child("parameters").children
    picks = [root.child("magic"), root.child("n_layer"), root.child("data_type")]
    for i in (0, len(params) // 2, len(params) - 1):
        p = params[i]
        picks += [p.child(n) for n in ("num_dims", "len_key", "data_type", "shape", "key", "data")]
    return [(n.start + n.nbytes // 2, n.path) for n in picks if n.nbytes >= 2]


@pytest.mark.parametrize("name", RWKV_FILES)
def test_truncated_copies_stop_at_the_right_field(rwkv_dir: Path, name: str) -> None:
    data = (rwkv_dir / name).read_bytes()
    full, _ = _open(data, name)
    for cut, field in _cut_points(full.root):
        result, mf = _open(data[:cut], name)
        assert mf.damage is not None, (cut, field)
        assert mf.damage.path == field, (cut, field, mf.damage)
        assert mf.damage.error and mf.damage.end is None
        assert all(t.offset + t.nbytes <= cut for t in mf.tensors)
    _, empty = _open(b"", name)
    assert empty.damage is not None and empty.damage.path == "magic"
    assert empty.tensors == []


def test_unknown_data_type_stops_at_that_parameters_data() -> None:
    import struct
    head = struct.pack("<4s5I", b"fmgg", 101, 256, 8, 1, 0)
    rec = struct.pack("<4I", 1, 1, 99, 8) + b"x" + bytes(64)
    _, mf = _open(head + rec)
    assert mf.damage is not None and mf.damage.path == "parameters[0]/data"
    assert mf.tensors == []


def test_types_a_version_does_not_define_are_reported_not_guessed() -> None:
    import struct
    head = struct.pack("<4s5I", b"fmgg", 101, 256, 32, 1, 0)
    rec = struct.pack("<4I", 1, 1, 4, 32) + b"w" + bytes(24)        # Q4_1_O in a v101 file
    _, mf = _open(head + rec)
    assert mf.damage is None
    (t,) = mf.tensors
    assert (t.name, t.type_id, t.layout) == ("w", 4, "")
    assert "w" in mf.extra["type_errors"]
