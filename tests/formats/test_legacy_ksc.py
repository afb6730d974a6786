"""The official Kaitai compiler accepts the legacy specs and they walk every real file.

Why: ``formats/ggml_llama.ksy``, ``ggml_example.ksy`` and ``chatglm_cpp.ksy`` must be
real Kaitai Struct, not a dialect only ggscope's engine understands. Each spec is
compiled to Python by kaitai-struct-compiler 0.11 (via ``kaitai_oracle``), and the
generated parser, with the kaitaistruct runtime, reads every model file of
../shared/fixtures/{llama-legacy,ggml-legacy,chatglm}: it must stop exactly at the last
byte, with the header values, tensor count, names, shapes and types the MANIFEST files
state. Skips when node / the npm packages or the shared fixtures are missing.
"""
from __future__ import annotations

import struct
import sys
from collections import Counter
from io import BytesIO
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import legacy_manifests as manifests  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared" / "fixtures"
FORMATS = REPO / "formats"


def _shared(folder: str) -> Path:
    path = SHARED / folder
    if not (path / "MANIFEST.md").is_file():
        pytest.skip(f"shared fixtures not found at {path.resolve()}")
    return path


def _parser(spec_id: str):
    """The generated root class for formats/<spec_id>.ksy (skips without the compiler)."""
    kaitai_oracle = pytest.importorskip("kaitai_oracle")
    try:
        module = kaitai_oracle.compile_ksy(FORMATS / f"{spec_id}.ksy")
    except kaitai_oracle.KaitaiUnavailable as why:
        pytest.skip(str(why))
    return getattr(module, "".join(p.capitalize() for p in spec_id.split("_")))


def _parse(cls, data: bytes):
    from kaitaistruct import KaitaiStream
    io = KaitaiStream(BytesIO(data))
    obj = cls(io)
    obj._read()            # the oracle compiles in debug mode: reading is explicit
    return obj, io


def _name(enum_value) -> str:
    return enum_value.name.upper() if hasattr(enum_value, "name") else f"unknown({enum_value})"


def _check_tensors(exp: manifests.Expected, got: list[tuple[str, tuple[int, ...], str]]) -> None:
    assert len(got) == exp.n_tensors
    assert manifests.type_counts([t for _, _, t in got]) == exp.type_counts
    assert {n for n, _, _ in got} == set(exp.tensors)
    for name, shape, ttype in got:
        assert (shape, ttype) == exp.tensors[name], name


# ------------------------------------------------------------------------- ggml_llama

LLAMA_ERA_TYPE = {0: "type_2023_03", 1: "type_ggjt_v1", 2: "type_ggjt_v2", 3: "type_ggjt_v3"}


@pytest.mark.parametrize("exp", manifests.llama_legacy(SHARED / "llama-legacy")
                         if (SHARED / "llama-legacy" / "MANIFEST.md").is_file() else [],
                         ids=lambda e: e.file)
def test_ggml_llama_spec_walks_fixture(exp: manifests.Expected) -> None:
    folder = _shared("llama-legacy")
    cls = _parser("ggml_llama")
    data = (folder / exp.file).read_bytes()
    assert len(data) == exp.size
    obj, io = _parse(cls, data)
    assert io.pos() == len(data) and io.is_eof()
    h = exp.header
    assert _name(obj.magic).lower() == h["magic"]
    assert getattr(obj, "version", None) == h["version"]
    for key in ("n_vocab", "n_embd", "n_mult", "n_head", "n_layer", "n_rot"):
        assert getattr(obj.hparams, key) == h[key], key
    assert int(obj.hparams.ftype) == h["ftype"]
    assert len(obj.vocab) == exp.n_vocab_entries
    # MANIFEST: unknown piece -> " \u2047 ", control pieces <s>, </s> -> empty.
    assert [bytes(t.text) for t in obj.vocab[:3]] == [" \u2047 ".encode(), b"", b""]
    assert all(hasattr(t, "score") == (h["magic"] != "ggml") for t in obj.vocab[:3])
    if h["magic"] == "ggjt":       # data starts at 32-byte file offsets
        assert all(t._debug["data"]["start"] % 32 == 0 for t in obj.tensors)
    era_attr = LLAMA_ERA_TYPE[obj.era]
    _check_tensors(exp, [(t.name, tuple(t.ne), _name(getattr(t, era_attr))) for t in obj.tensors])


# ------------------------------------------------------------------------ ggml_example

@pytest.mark.parametrize("exp", manifests.ggml_legacy(SHARED / "ggml-legacy")
                         if (SHARED / "ggml-legacy" / "MANIFEST.md").is_file() else [],
                         ids=lambda e: e.file)
def test_ggml_example_spec_walks_fixture(exp: manifests.Expected) -> None:
    folder = _shared("ggml-legacy")
    cls = _parser("ggml_example")
    data = (folder / exp.file).read_bytes()
    assert len(data) == exp.size
    obj, io = _parse(cls, data)
    assert io.pos() == len(data) and io.is_eof()
    for key, value in exp.header.items():
        assert getattr(obj.hparams, key) == value, key
    assert obj.hparams.has_n_rot is False            # gpt-2 layout
    assert obj.qntvr == exp.header["ftype"] // 1000
    assert obj.n_vocab_tokens == len(obj.vocab) == exp.n_vocab_entries
    # MANIFEST: "256 byte tokens, token id = byte value"
    assert [bytes(t.text) for t in obj.vocab] == [bytes([i]) for i in range(256)]
    _check_tensors(exp, [(t.name, tuple(t.ne), _name(t.ggml_type)) for t in obj.tensors])


def _gptj_file() -> bytes:
    """A gpt-j-style header as examples/gpt-j/convert-h5-to-ggml.py writes it, 1 tensor."""
    n_vocab, n_ctx, n_embd, n_head, n_layer, n_rot, ftype = 3, 16, 32, 2, 1, 8, 1
    out = [struct.pack("<I", 0x67676D6C),
           struct.pack("<7i", n_vocab, n_ctx, n_embd, n_head, n_layer, n_rot, ftype),
           struct.pack("<i", n_vocab)]
    for tok in (b"a", b"bc", b"\xff"):
        out.append(struct.pack("<i", len(tok)) + tok)
    name = b"transformer.wte.weight"
    out.append(struct.pack("<3i", 2, len(name), 1) + struct.pack("<2i", n_embd, n_vocab) + name)
    out.append(bytes(2 * n_embd * n_vocab))
    return b"".join(out)


def test_ggml_example_spec_reads_gptj_layout() -> None:
    cls = _parser("ggml_example")
    data = _gptj_file()
    obj, io = _parse(cls, data)
    assert io.pos() == len(data)
    assert obj.hparams.has_n_rot and obj.hparams.n_rot == 8 and obj.hparams.ftype == 1
    assert [bytes(t.text) for t in obj.vocab] == [b"a", b"bc", b"\xff"]
    assert [(t.name, list(t.ne), _name(t.ggml_type)) for t in obj.tensors] == \
        [("transformer.wte.weight", [32, 3], "F16")]


# ------------------------------------------------------------------------- chatglm_cpp

@pytest.mark.parametrize("exp", manifests.chatglm(SHARED / "chatglm")
                         if (SHARED / "chatglm" / "MANIFEST.md").is_file() else [],
                         ids=lambda e: e.file)
def test_chatglm_spec_walks_fixture(exp: manifests.Expected) -> None:
    folder = _shared("chatglm")
    cls = _parser("chatglm_cpp")
    data = (folder / exp.file).read_bytes()
    assert len(data) == exp.size
    obj, io = _parse(cls, data)
    assert io.pos() == len(data) and io.is_eof()
    h = exp.header
    assert obj.is_tagged == (h["version"] is not None)
    if h["version"] is not None:
        assert int(obj.model_type) == h["model_type"] and obj.version == h["version"]
    for key, value in h["config"].items():
        got = getattr(obj.config, key)
        if isinstance(value, float):
            assert got == pytest.approx(value, rel=1e-6), key
        else:
            assert int(got) == value, key
    assert obj.len_tokenizer == len(obj.tokenizer) == h["tokenizer_bytes"]
    _check_tensors(exp, [(t.name, tuple(t.shape), _name(t.ggml_type)) for t in obj.tensors])


def test_chatglm_spec_pads_tensor_data_to_16() -> None:
    folder = _shared("chatglm")
    cls = _parser("chatglm_cpp")
    obj, _ = _parse(cls, (folder / "chatglm2-tiny-f86777c-q4_0.bin").read_bytes())
    offsets = [t._debug["data"]["start"] for t in obj.tensors]
    assert all(o % 16 == 0 for o in offsets)
    assert Counter(len(t.padding) < 16 for t in obj.tensors) == Counter({True: len(obj.tensors)})
