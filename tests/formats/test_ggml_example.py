"""Unversioned GGML files of ggml's example programs (gpt-2, gpt-j style) through ggscope.

Oracles: the gpt-2 files of ../shared/fixtures/ggml-legacy written by ggml's own
converters and quantizers of three eras, and their MANIFEST (header ftype, tensor
count, types, model description; read by ``legacy_manifests``); the official Kaitai
compiler's parse of the same spec (``kaitai_oracle``); legacy-formats.md §1.3 for the
layout of each quantization version. Also: truncated copies give an error node at the
field where the bytes end; ``detect_legacy`` tells gpt-2, gpt-j and llama.cpp headers apart.
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
FOLDER = REPO / ".." / "shared" / "fixtures" / "ggml-legacy"
EXPECTED = manifests.ggml_legacy(FOLDER) if (FOLDER / "MANIFEST.md").is_file() else []

# MANIFEST "Block layouts" table: (type, quantization version) -> the layout it names.
# qntvr 0: interleaved + f32 scales; qntvr 1: split halves, f32 scales in Q4_0/Q4_1/Q8_0;
# qntvr 2: today's layouts.
ERA_LAYOUT = {
    ("Q4_0", 0): "Q4_0_QNT0", ("Q4_1", 0): "Q4_1_QNT0", ("Q4_2", 0): "Q4_2", ("Q4_3", 0): "Q4_3",
    ("Q5_0", 0): "Q5_0_QNT0", ("Q5_1", 0): "Q5_1_QNT0", ("Q8_0", 0): "Q8_0_QNT0",
    ("Q4_0", 1): "Q4_0_QNT1", ("Q4_1", 1): "Q4_1_QNT1", ("Q5_0", 1): "Q5_0", ("Q5_1", 1): "Q5_1",
    ("Q8_0", 1): "Q8_0_QNT0",
    ("Q4_0", 2): "Q4_0", ("Q4_1", 2): "Q4_1", ("Q5_0", 2): "Q5_0", ("Q5_1", 2): "Q5_1",
    ("Q8_0", 2): "Q8_0",
}
# MANIFEST: bytes per 32 elements of each layout
LAYOUT_BYTES = {"Q4_0_QNT0": 20, "Q4_0_QNT1": 20, "Q4_0": 18, "Q4_1_QNT0": 24, "Q4_1_QNT1": 24,
                "Q4_1": 20, "Q5_0_QNT0": 22, "Q5_0": 22, "Q5_1_QNT0": 24, "Q5_1": 24,
                "Q8_0_QNT0": 36, "Q8_0": 34, "Q4_2": 20, "Q4_3": 24}


def _file(name: str) -> Path:
    return manifests.fixture_file(FOLDER, name)


@pytest.mark.parametrize("exp", EXPECTED, ids=lambda e: e.file)
def test_fixture_parses_to_last_byte_as_manifest_states(exp: manifests.Expected) -> None:
    path = _file(exp.file)
    mf = ggscope.open(path)
    assert mf.root.error is None and mf.damage is None
    assert mf.root.end == os.path.getsize(path) == exp.size
    assert mf.format == "ggml" and mf.version == 0 and mf.alignment is None
    for key, value in exp.header.items():
        assert mf.metadata[f"ggml.{key}"] == value, key
    qntvr = exp.header["ftype"] // 1000
    assert mf.metadata["ggml.qntvr"] == qntvr
    assert mf.metadata["ggml.file_type"] == exp.header["ftype"] % 1000
    assert mf.extra["hparams_style"] == "gpt-2"
    # MANIFEST: 256 byte tokens, token id = byte value
    assert mf.extra["token_bytes"] == [bytes([i]) for i in range(256)]
    assert mf.metadata["tokenizer.ggml.tokens"][65] == "A"
    assert "tokenizer.ggml.scores" not in mf.metadata

    assert len(mf.tensors) == exp.n_tensors
    assert manifests.type_counts([t.type for t in mf.tensors]) == exp.type_counts
    assert {t.name for t in mf.tensors} == set(exp.tensors)
    for t in mf.tensors:
        assert (t.shape, t.type) == exp.tensors[t.name], t.name
        if t.type in ("F32", "F16"):
            assert t.layout == t.type
        else:
            assert t.layout == ERA_LAYOUT[(t.type, qntvr)], t.name
            assert t.nbytes == t.n_elements // 32 * LAYOUT_BYTES[t.layout], t.name
    assert max(t.offset + t.nbytes for t in mf.tensors) == exp.size


@pytest.mark.parametrize("name", ["gpt2-tiny-2023-04-q4_2.bin", "gpt2-tiny-2023-05-26-qnt2-q8_0.bin"])
def test_engine_tree_matches_official_kaitai_compiler(name: str) -> None:
    kaitai_oracle = pytest.importorskip("kaitai_oracle")
    path = _file(name)
    try:
        records = kaitai_oracle.kaitai_records(REPO / "formats" / "ggml_example.ksy", path)
    except kaitai_oracle.KaitaiUnavailable as why:
        pytest.skip(str(why))
    root = parse("ggml_example", ByteSource.open(path)).root
    assert kaitai_oracle.compare(records, root) == []


def _gptj_file() -> bytes:
    """A gpt-j-style file laid out as examples/gpt-j/convert-h5-to-ggml.py writes it."""
    n_vocab, n_ctx, n_embd, n_head, n_layer, n_rot, ftype = 3, 16, 32, 2, 1, 8, 2002
    out = [struct.pack("<I", 0x67676D6C),
           struct.pack("<7i", n_vocab, n_ctx, n_embd, n_head, n_layer, n_rot, ftype),
           struct.pack("<i", n_vocab)]
    for tok in (b"a", b"bc", b"\xff"):
        out.append(struct.pack("<i", len(tok)) + tok)
    for name, ttype, ne, nbytes in ((b"transformer.wte.weight", 2, (32, 3), 3 * 18),
                                    (b"transformer.ln_f.bias", 0, (32,), 32 * 4)):
        out.append(struct.pack(f"<3i{len(ne)}i", len(ne), len(name), ttype, *ne) + name)
        out.append(bytes(nbytes))
    return b"".join(out)


def test_gptj_layout_is_recognised_and_read() -> None:
    data = _gptj_file()
    assert sniff(data[:64], len(data)) == "ggml_example"
    assert hparams_style(data[:64]) == "gpt-j"
    mf = ggscope.open_bytes(data, "gptj.bin")
    assert mf.damage is None and mf.root.end == len(data)
    assert mf.extra["hparams_style"] == "gpt-j"
    assert mf.metadata["ggml.n_rot"] == 8 and mf.metadata["ggml.qntvr"] == 2
    assert mf.metadata["tokenizer.ggml.tokens"] == ["a", "bc", "\ufffd"]
    assert mf.extra["token_bytes"] == [b"a", b"bc", b"\xff"]
    assert [(t.name, t.shape, t.type, t.layout) for t in mf.tensors] == [
        ("transformer.wte.weight", (32, 3), "Q4_0", "Q4_0"),
        ("transformer.ln_f.bias", (32,), "F32", "F32")]


# ---------------------------------------------------------------- truncated copies

TRUNCATIONS = [
    ("hparams/n_ctx", "hparams/n_ctx"),
    ("hparams/ftype", "hparams/ftype"),
    ("n_vocab_tokens", "n_vocab_tokens"),
    ("vocab[200]/text", "vocab"),               # the count check fails before the scan
    ("tensors[0]/ttype", "tensors[0]/ttype"),
    ("tensors[0]/name", "tensors[0]/name"),
    ("tensors[4]/data", "tensors[4]/data"),
    ("tensors[28]/data", "tensors[28]/data"),
]


@pytest.mark.parametrize("field,error_path", TRUNCATIONS, ids=[t[0] for t in TRUNCATIONS])
def test_truncated_copy_reports_error_at_the_field(field: str, error_path: str) -> None:
    data = _file("gpt2-tiny-2023-04-q4_2.bin").read_bytes()
    cut, result = manifests.cut_inside("ggml_example", data, field)
    assert result.error is not None and result.error.path == error_path
    mf = ggscope.open_bytes(data[:cut], "truncated.bin")   # never raises on damage
    assert mf.damage is not None
    if cut >= 36:      # shorter heads cannot show the repeated n_vocab (detect_legacy)
        assert mf.format == "ggml" and mf.damage.path == error_path
    if error_path.startswith("tensors["):
        assert len(mf.tensors) == int(error_path[len("tensors["):error_path.index("]")])


def test_unknown_type_code_stops_the_walk_at_that_record() -> None:
    data = bytearray(_file("gpt2-tiny-2023-05-26-qnt2-q4_0.bin").read_bytes())
    whole = parse("ggml_example", ByteSource(bytes(data))).root
    ttype = find(whole, "tensors[1]/ttype")
    data[ttype.start:ttype.end] = struct.pack("<I", 4)      # Q4_2 does not exist in qntvr 2
    mf = ggscope.open_bytes(bytes(data), "bad-type.bin")
    assert mf.damage is not None and mf.damage.path == "tensors[1]/data"
    assert [t.name for t in mf.tensors] == ["model/wte"]


# ---------------------------------------------------------------------- detection

def test_sniff_real_files_as_gpt2_style() -> None:
    for exp in EXPECTED:
        head = _file(exp.file).read_bytes()[:64]
        assert sniff(head, exp.size) == "ggml_example", exp.file
        assert hparams_style(head) == "gpt-2", exp.file


def test_sniff_llama_header_is_not_an_example_file() -> None:
    # legacy-formats.md §1.2: 7 header words (n_vocab 32000 ... ftype 2), then token 0
    head = struct.pack("<I7iI", 0x67676D6C, 32000, 4096, 256, 32, 32, 128, 2, 5) + b" \xe2\x81\x87 "
    assert hparams_style(head) == "llama" and sniff(head, 10**6) == "ggml_llama"
    # neither a repeated n_vocab nor a llama ftype: no known producer
    odd = struct.pack("<I8i", 0x67676D6C, 100, 1, 2, 3, 4, 5, 999, 7)
    assert sniff(odd, 1000) is None
