"""llama.cpp's pre-GGUF files (unversioned GGML, GGMF v1, GGJT v1) through ggscope.

Oracles: the real files of ../shared/fixtures/llama-legacy and what their MANIFEST
files state (header values, tensor counts, names, shapes, types; read by
``legacy_manifests``), the official Kaitai compiler's parse of the same spec
(``kaitai_oracle``), and legacy-formats.md for the historical block layouts. Also:
truncated copies give an error node at the field where the bytes end, never an
exception; ``detect_legacy.sniff`` tells the shared magics apart.
"""
from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import legacy_manifests as manifests  # noqa: E402

import ggscope  # noqa: E402
from ggscope.model.detect_legacy import hparams_style, sniff  # noqa: E402
from ggscope.ksy.node import find  # noqa: E402
from ggscope.source.mapped import ByteSource  # noqa: E402
from ggscope.ksy import parse  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / ".." / "shared" / "fixtures" / "llama-legacy"
EXPECTED = manifests.llama_legacy(FOLDER) if (FOLDER / "MANIFEST.md").is_file() else []
# legacy-formats.md §3.3: 2023-03 GGML/GGMF and GGJT v1 store Q4_0/Q4_1 in the
# pre-#1405 layouts (f32 scales, interleaved nibbles), never today's.
HISTORICAL = {"Q4_0": "Q4_0_QNT0", "Q4_1": "Q4_1_QNT0", "F16": "F16", "F32": "F32"}


def _file(name: str) -> Path:
    return manifests.fixture_file(FOLDER, name)


@pytest.mark.parametrize("exp", EXPECTED, ids=lambda e: e.file)
def test_fixture_parses_to_last_byte_as_manifest_states(exp: manifests.Expected) -> None:
    path = _file(exp.file)
    mf = ggscope.open(path)                # detect + engine + view
    assert find(mf.root, "tensors") is not None and mf.root.error is None
    assert mf.root.end == os.path.getsize(path) == exp.size
    h = exp.header
    assert mf.format == h["magic"] and mf.damage is None
    assert mf.version == (h["version"] or 0)
    assert mf.alignment == (32 if h["magic"] == "ggjt" else None)
    for key in ("n_vocab", "n_embd", "n_mult", "n_head", "n_layer", "n_rot", "ftype"):
        assert mf.metadata[f"{mf.format}.{key}"] == h[key], key
    tokens = mf.metadata["tokenizer.ggml.tokens"]
    assert len(tokens) == exp.n_vocab_entries
    # MANIFEST: unknown piece -> " \u2047 ", control pieces -> empty
    assert tokens[:3] == [" \u2047 ", "", ""]
    assert mf.extra["token_bytes"][0] == " \u2047 ".encode()
    assert ("tokenizer.ggml.scores" in mf.metadata) == (mf.format != "ggml")
    if mf.format != "ggml":
        assert len(mf.metadata["tokenizer.ggml.scores"]) == exp.n_vocab_entries

    assert len(mf.tensors) == exp.n_tensors
    assert manifests.type_counts([t.type for t in mf.tensors]) == exp.type_counts
    assert {t.name for t in mf.tensors} == set(exp.tensors)
    for t in mf.tensors:
        assert (t.shape, t.type) == exp.tensors[t.name], t.name
        assert t.layout == HISTORICAL[t.type], t.name
        if mf.format == "ggjt":
            assert t.offset % 32 == 0, t.name
    last = max((t.offset + t.nbytes for t in mf.tensors), default=None)
    assert last in (None, exp.size)


@pytest.mark.parametrize("name", ["llama-tiny-ggjt-v1-q4_0.bin", "llama0L-ggmf-v1-q4_0.bin",
                                  "llama0L-ggml-unversioned-f16.bin"])
def test_engine_tree_matches_official_kaitai_compiler(name: str) -> None:
    kaitai_oracle = pytest.importorskip("kaitai_oracle")
    path = _file(name)
    try:
        records = kaitai_oracle.kaitai_records(REPO / "formats" / "ggml_llama.ksy", path)
    except kaitai_oracle.KaitaiUnavailable as why:
        pytest.skip(str(why))
    root = parse("ggml_llama", ByteSource.open(path)).root
    assert kaitai_oracle.compare(records, root) == []


def test_q4_1_tensor_bytes_cover_whole_historical_blocks() -> None:
    mf = ggscope.open(_file("llama-tiny-ggjt-v1-q4_1.bin"))
    w1 = mf.tensor("layers.0.feed_forward.w1.weight")
    assert w1.shape == (128, 512) and w1.layout == "Q4_1_QNT0"
    assert w1.nbytes == 128 * 512 // 32 * 24            # 24-byte blocks (f32 d, f32 m)


# ---------------------------------------------------------------- truncated copies

# field of llama-tiny-ggjt-v1-q4_0.bin -> error path expected when the file ends inside it
TRUNCATIONS = [
    ("version", "version"),
    ("hparams/n_head", "hparams/n_head"),
    ("hparams/ftype", "hparams/ftype"),
    ("vocab[2]/score", "vocab"),               # the count check fails before the loop
    ("vocab[31]/len_text", "vocab[31]/len_text"),
    ("tensors[0]/n_dims", "tensors[0]/n_dims"),
    ("tensors[0]/ne", "tensors[0]/ne"),
    ("tensors[0]/name", "tensors[0]/name"),
    ("tensors[0]/padding", "tensors[0]/padding"),
    ("tensors[0]/data", "tensors[0]/data"),
    ("tensors[11]/data", "tensors[11]/data"),
]


@pytest.mark.parametrize("field,error_path", TRUNCATIONS, ids=[t[0] for t in TRUNCATIONS])
def test_truncated_copy_reports_error_at_the_field(field: str, error_path: str) -> None:
    data = _file("llama-tiny-ggjt-v1-q4_0.bin").read_bytes()
    cut, result = manifests.cut_inside("ggml_llama", data, field)
    assert result.error is not None and result.error.path == error_path
    assert result.error.end is None and result.error.start <= cut
    mf = ggscope.open_bytes(data[:cut], "truncated.bin")
    assert mf.damage is not None and mf.damage.path == error_path
    if error_path.startswith("tensors["):
        index = int(error_path[len("tensors["):error_path.index("]")])
        assert len(mf.tensors) == index           # every record before the damage is kept


@pytest.mark.parametrize("cut", [0, 1, 3, 4, 7, 35])
def test_tiny_prefixes_never_raise(cut: int) -> None:
    data = _file("llama0L-ggml-unversioned-q4_0.bin").read_bytes()[:cut]
    result = parse("ggml_llama", ByteSource(data))
    assert result.error is not None or cut == 0


# ---------------------------------------------------------------------- detection

def test_sniff_real_files() -> None:
    for exp in EXPECTED:
        path = _file(exp.file)
        assert sniff(path.read_bytes()[:64], os.path.getsize(path)) == "ggml_llama", exp.file
    head = _file("llama0L-ggml-unversioned-f16.bin").read_bytes()[:64]
    assert hparams_style(head) == "llama"


def test_sniff_rejects_rwkv_and_unknown_versions() -> None:
    for version in (100, 101, 0, 2):              # ggmf: only version 1 is llama.cpp's
        assert sniff(b"fmgg" + struct.pack("<I", version) + bytes(56), 1000) is None
    assert sniff(b"tjgg" + struct.pack("<I", 4) + bytes(56), 1000) is None
    assert sniff(b"tjgg" + struct.pack("<I", 3) + bytes(56), 1000) == "ggml_llama"
    assert sniff(b"", 0) is None and sniff(b"lmgg", 4) is None
