"""chatglm.cpp files (untagged v0, versions 1 and 2) through ggscope.

Oracles: the files of ../shared/fixtures/chatglm written by chatglm.cpp's own converter
code of three commits, and their MANIFEST (every header value in its "decoded header"
column, tensor counts and types, the tiny models' tensor names and PyTorch shapes, the
sentencepiece ids of special pieces and of "Hello world"; read by ``legacy_manifests``),
plus the official Kaitai compiler's parse of the same spec (``kaitai_oracle``).
Also: truncated copies give an error node at the field where the bytes end.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import legacy_manifests as manifests  # noqa: E402

import ggscope  # noqa: E402
from ggscope.model.detect_legacy import sniff  # noqa: E402
from ggscope.source.mapped import ByteSource  # noqa: E402
from ggscope.ksy import parse  # noqa: E402
from ggscope.model.views.chatglm_cpp import TokenizerError, sentencepiece_pieces, tiktoken_tokens  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / ".." / "shared" / "fixtures" / "chatglm"
EXPECTED = manifests.chatglm(FOLDER) if (FOLDER / "MANIFEST.md").is_file() else []
# MANIFEST check values: "Hello world" as ids of each tokenizer
HELLO_IDS = {"chatglm1": [10, 114, 12, 22, 22, 17, 10, 43, 17, 26, 22, 25],
             "chatglm2": [3, 107, 5, 15, 15, 10, 3, 36, 10, 19, 15, 18]}
GLM1_SPECIAL = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "<pad>", 4: "<n>", 5: "[MASK]", 6: "[gMASK]",
                7: "[sMASK]", 8: "<sop>", 9: "<eop>"}


def _file(name: str) -> Path:
    return manifests.fixture_file(FOLDER, name)


@pytest.mark.parametrize("exp", EXPECTED, ids=lambda e: e.file)
def test_fixture_parses_to_last_byte_as_manifest_states(exp: manifests.Expected) -> None:
    path = _file(exp.file)
    mf = ggscope.open(path)
    assert mf.root.error is None and mf.damage is None
    assert mf.root.end == os.path.getsize(path) == exp.size
    h = exp.header
    assert mf.format == "chatglm.cpp" and mf.alignment == 16
    assert mf.version == (h["version"] or 0)
    assert mf.metadata.get("chatglm_cpp.model_type") == h["model_type"]
    for key, value in h["config"].items():
        got = mf.metadata[f"chatglm_cpp.{key}"]
        assert got == (pytest.approx(value, rel=1e-6) if isinstance(value, float) else value), key
    blob = mf.metadata["chatglm_cpp.tokenizer"]
    assert len(blob) == h["tokenizer_bytes"]

    family = "chatglm1" if exp.file.startswith("chatglm1") else "chatglm2"
    tokens = mf.metadata["tokenizer.ggml.tokens"]
    assert len(tokens) == 200 == len(mf.metadata["tokenizer.ggml.scores"])
    assert "".join(tokens[i] for i in HELLO_IDS[family]) == "\u2581Hello\u2581world"
    special = GLM1_SPECIAL if family == "chatglm1" else {0: "<unk>", 1: "<s>", 2: "</s>"}
    assert {i: tokens[i] for i in special} == special

    assert len(mf.tensors) == exp.n_tensors
    assert manifests.type_counts([t.type for t in mf.tensors]) == exp.type_counts
    assert {t.name for t in mf.tensors} == set(exp.tensors)
    for t in mf.tensors:
        torch_shape, ttype = exp.tensors[t.name]
        assert (t.shape, t.type) == (tuple(reversed(torch_shape)), ttype), t.name
        assert t.layout == t.type                  # chatglm.cpp writes today's layouts
        assert t.offset % 16 == 0, t.name
    assert max(t.offset + t.nbytes for t in mf.tensors) == exp.size


def test_record_generations_are_recognised() -> None:
    by_file = {e.file: e for e in EXPECTED}
    if not by_file:
        pytest.skip("chatglm MANIFEST not found")
    expect = {"chatglm1-tiny-6c6f376-f16.bin": "v0", "chatglm1-tiny-7da5526-f16.bin": "V1",
              "chatglm2-tiny-7da5526-f16.bin": "V1_GQA", "chatglm2-tiny-f86777c-f16.bin": "V2"}
    for name, record in expect.items():
        mf = ggscope.open(_file(name))
        assert mf.extra["config_record"] == record, name
        assert mf.extra["tokenizer_kind"] == "sentencepiece"


@pytest.mark.parametrize("name", ["chatglm1-tiny-6c6f376-q4_0.bin", "chatglm2-tiny-7da5526-q4_0.bin",
                                  "chatglm3-tiny-f86777c-f16.bin"])
def test_engine_tree_matches_official_kaitai_compiler(name: str) -> None:
    kaitai_oracle = pytest.importorskip("kaitai_oracle")
    path = _file(name)
    try:
        records = kaitai_oracle.kaitai_records(REPO / "formats" / "chatglm_cpp.ksy", path)
    except kaitai_oracle.KaitaiUnavailable as why:
        pytest.skip(str(why))
    root = parse("chatglm_cpp", ByteSource.open(path)).root
    assert kaitai_oracle.compare(records, root) == []


def test_sniff() -> None:
    for exp in EXPECTED:
        assert sniff(_file(exp.file).read_bytes()[:64], exp.size) == "chatglm_cpp"


def test_tokenizer_decoders_reject_garbage() -> None:
    with pytest.raises(TokenizerError):
        sentencepiece_pieces(b"\x0a\xff\xff\xff\xff\x0f")       # length runs past the end
    with pytest.raises(TokenizerError):
        sentencepiece_pieces(b"")
    assert tiktoken_tokens(b"YQ== 0\nYmM= 1\n") == [b"a", b"bc"]
    with pytest.raises(TokenizerError):
        tiktoken_tokens(b"YQ== 0\n!!! 1\n")


# ---------------------------------------------------------------- truncated copies

TRUNCATIONS = [
    ("chatglm2-tiny-f86777c-q4_0.bin", "config/hidden_size"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "config/norm_eps"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "len_tokenizer"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tokenizer"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tensors[0]/name"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tensors[0]/shape"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tensors[0]/dtype"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tensors[0]/padding"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tensors[3]/data"),
    ("chatglm2-tiny-f86777c-q4_0.bin", "tensors[16]/data"),
    ("chatglm1-tiny-7da5526-q4_0.bin", "config/sep_token_id"),
    ("chatglm1-tiny-6c6f376-q4_0.bin", "config/dtype"),
    ("chatglm1-tiny-6c6f376-q4_0.bin", "tensors[0]/len_name"),
    ("chatglm1-tiny-6c6f376-q4_0.bin", "tensors[1]/name"),
    ("chatglm1-tiny-6c6f376-q4_0.bin", "tensors[26]/data"),
]


@pytest.mark.parametrize("name,field", TRUNCATIONS, ids=[f"{n[:22]}:{f}" for n, f in TRUNCATIONS])
def test_truncated_copy_reports_error_at_the_field(name: str, field: str) -> None:
    data = _file(name).read_bytes()
    cut, result = manifests.cut_inside("chatglm_cpp", data, field)
    assert result.error is not None and result.error.path == field
    mf = ggscope.open_bytes(data[:cut], "truncated.bin")
    assert mf.damage is not None and mf.damage.path == field
    if field.startswith("tensors["):
        assert len(mf.tensors) == int(field[len("tensors["):field.index("]")])


@pytest.mark.parametrize("cut", [4, 6, 10])
def test_header_cut_before_version_is_damage_not_exception(cut: int) -> None:
    # Fewer than 12 bytes cannot show model type and version: read as an untagged file.
    data = _file("chatglm2-tiny-f86777c-q4_0.bin").read_bytes()[:cut]
    mf = ggscope.open_bytes(data, "short.bin")
    assert mf.format == "chatglm.cpp" and mf.damage is not None
    assert mf.damage.path.startswith("config/")
