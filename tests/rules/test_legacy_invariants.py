"""What the loaders of the formats before GGUF refuse, as rules GG905-GG909 (and GG504).

Each case starts from a real file written by the real tool (../shared/fixtures) or by
the independent BIT1 writer, changes one thing a loader checks, and asserts the rule.
"""
from __future__ import annotations

import struct

import pytest

import ggscope
from ggscope.rules import Severity
from ggscope.validate.runner import validate
from bit1_writer import bit1_bytes

RWKV = "rwkv/tiny-rwkv-4v0-660K-FP16.bin"
GGMF = "llama-legacy/llama0L-ggmf-v1-f16.bin"
GGJT = "llama-legacy/llama-tiny-ggjt-v1-q4_0.bin"
GPT2 = "ggml-legacy/gpt2-tiny-f16.bin"
CHATGLM = "chatglm/chatglm2-tiny-f86777c-q4_0.bin"


def _errors(data: bytes, name: str) -> dict[str, str]:
    mf = ggscope.open_bytes(data, name)
    out = {}
    for f in validate(mf):
        assert f.code != "GG000", f
        out.setdefault(f.code, f.severity.value)
    return out


def _read(shared, rel):
    p = shared / rel
    if not p.is_file():
        pytest.skip(f"{rel} not in the shared fixtures")
    return p.read_bytes()


@pytest.mark.parametrize("rel", [RWKV, GGMF, GGJT, GPT2, CHATGLM])
def test_cut_at_a_record_boundary_misses_tensors(shared_fixtures, rel):
    data = _read(shared_fixtures, rel)
    mf = ggscope.open_bytes(data, "x.bin")
    last = mf.tensors[-1]
    cut = data[:last.offset + last.nbytes]           # the whole file: clean
    assert "GG905" not in _errors(cut, "x.bin")
    prev = mf.tensors[-3]
    cut = data[:prev.offset + prev.nbytes]           # ends exactly after a record, two short
    assert ggscope.open_bytes(cut, "x.bin").damage is None
    assert _errors(cut, "x.bin").get("GG905") == "error"


@pytest.mark.parametrize("rel", [RWKV, GGMF, GPT2, CHATGLM])
def test_appended_zero_bytes_are_an_error(shared_fixtures, rel):
    data = _read(shared_fixtures, rel) + b"\0" * 256
    found = _errors(data, "x.bin")
    assert "error" in found.values(), found


def test_rwkv_header_invariants(shared_fixtures):
    data = bytearray(_read(shared_fixtures, RWKV))
    bad_type = bytes(data[:20]) + struct.pack("<I", 17) + bytes(data[24:])
    assert _errors(bad_type, "x.bin").get("GG908") == "error"
    n_embed = struct.unpack_from("<I", data, 12)[0]
    bad_emb = bytes(data[:12]) + struct.pack("<I", n_embed + 1) + bytes(data[16:])
    assert _errors(bad_emb, "x.bin").get("GG908") == "error"


def test_rwkv_record_with_zero_or_four_dims(shared_fixtures):
    data = bytearray(_read(shared_fixtures, RWKV))
    first = 24                                       # the first record follows the 24-byte header
    for n_dims in (0, 4):
        d = bytearray(data)
        d[first:first + 4] = struct.pack("<I", n_dims)
        mf = ggscope.open_bytes(bytes(d), "x.bin")
        errors = [f for f in validate(mf) if f.severity is Severity.ERROR]
        assert errors, n_dims


def test_bit1_header_invariants():
    good = bit1_bytes(vocab_size=10, d_model=100, n_layers=1, n_heads=2, d_ff=70)
    assert "GG909" not in _errors(good, "x.bit1")
    v2 = good[:4] + struct.pack("<I", 2) + good[8:]
    assert _errors(v2, "x.bit1").get("GG909") == "error"
    m0 = good[:32] + struct.pack("<q", 0) + good[40:]
    assert _errors(m0, "x.bit1").get("GG909") == "error"
    short = good[:-9]
    assert _errors(short, "x.bit1").get("GG117") == "error"


def test_gguf_trailing_bytes_are_a_warning():
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    data = (repo / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf").read_bytes()
    assert "GG504" not in _errors(data, "x.gguf")
    assert _errors(data + b"\0" * 100, "x.gguf").get("GG504") == "warning"
